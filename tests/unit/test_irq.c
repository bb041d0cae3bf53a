/* SPDX-License-Identifier: MIT */
/* Interrupt handlers that touch the engine, as a driver's do: the event
 * handler reads the log through the registers, and either handler may
 * clear the counters, write a register or run a pass. Raised inside a
 * register access or a pass, the handler runs once the thread has left
 * it (the access held the register lock and the window's state, the pass
 * the data path's lock and a QP's). Every event's interrupt comes once,
 * in the log's order, however many a pass raised. A handler that
 * deadlocks fails the test after 5 s instead of hanging it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "xroce/engine.h"
#include "xroce/regio.h"
#include "xroce/regmap.h"

static uint32_t reg(struct xr_engine *e, uint32_t off)
{
	uint32_t v = 0;

	assert_int_equal(xr_engine_reg_read(e, off, &v), XR_AXI_OKAY);
	return v;
}

struct seen {
	struct xr_engine *e;
	unsigned calls, clears_failed;
	uint32_t type[64], qpn[64];
	uint32_t read_type;      /* the newest event, read through the registers */
	bool clear;              /* the handler clears the counters */
};

static void on_event(void *ctx, uint32_t type, uint32_t qpn)
{
	struct seen *s = ctx;
	uint32_t n = 0, v = 0;

	if (s->calls < 64) {
		s->type[s->calls] = type;
		s->qpn[s->calls] = qpn;
	}
	s->calls++;
	/* What a driver's handler does first: which event, from the log. */
	if (xr_engine_reg_read(s->e, XR_REG_EVLOG_COUNT, &n) == XR_AXI_OKAY && n &&
	    xr_engine_reg_write(s->e, XR_REG_EVLOG_SEL, n - 1) == XR_AXI_OKAY &&
	    xr_engine_reg_read(s->e, XR_REG_EVLOG_TYPE, &v) == XR_AXI_OKAY)
		s->read_type = v;
	if (s->clear && xr_engine_reg_write(s->e, XR_REG_CNT_CTRL, 1) != XR_AXI_OKAY)
		s->clears_failed++;
}

static void *enable(void *arg)
{
	xr_engine_reg_write(arg, XR_REG_CTRL, XR_CTRL_ENABLE);
	return NULL;
}

/* An event raised by a register write (an enable refused: nothing is
 * configured, a register error): the handler reads the log through the
 * registers once the write is done. */
static void test_an_event_handler_reads_the_log_in_a_register_access(void **state)
{
	struct seen s = { .e = xr_engine_create() };

	(void)state;
	assert_non_null(s.e);
	xr_engine_set_event_irq(s.e, on_event, &s);
	assert_true(h_finishes(enable, s.e));
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.type[0], XR_EV_REG_ERROR);
	assert_int_equal(s.read_type, (1u << 31) | XR_EV_REG_ERROR);
	xr_engine_destroy(s.e);
}

struct traffic {
	struct pair p;
	struct seen ev;
	unsigned cq_calls, cq_clears_failed;
	uint32_t cqn;
	enum xr_wc_status status;
	bool got, bad_key, arm;
};

static void on_cq(void *ctx, uint32_t cqn)
{
	struct traffic *t = ctx;
	struct xr_engine *e = xr_context_engine(t->p.a.ctx);

	t->cq_calls++;
	t->cqn = cqn;
	if (xr_engine_reg_write(e, XR_REG_CNT_CTRL, 1) != XR_AXI_OKAY)
		t->cq_clears_failed++;
}

/* a WRITEs to b: first with a bad rkey (b's responder NAKs it in a pass,
 * its event handler clears b's counters), then, on a fresh pair, a good
 * one whose completion fires a's armed CQ (its handler clears a's). */
/* One WRITE from a to b, with the rkey given; t->bad_key, and whether
 * a's CQ is armed first (t->arm), set by the test. */
static void *write_one(void *arg)
{
	struct traffic *t = arg;
	struct xr_sge s = { (uintptr_t)h_data(&t->p.a), 64, t->p.a.mr->lkey };
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&t->p.b);
	w.wr.rdma.rkey = t->bad_key ? t->p.b.mr->rkey ^ 0x100 : t->p.b.mr->rkey;   /* ^: another key's index */
	if ((t->arm && xr_req_notify_cq(t->p.a.cq, 0)) || xr_post_send(t->p.a.qp[0], &w, NULL) ||
	    !h_wait(&t->p, &t->p.a, &wc, 3000))
		return NULL;
	t->status = wc.status;
	t->got = true;
	return NULL;
}

static const struct h_opts opts = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 16,
				    .timeout = 14, .retry_cnt = 7, .rnr_retry = 7 };

static void test_an_event_handler_raised_in_a_pass_may_clear_the_counters(void **state)
{
	struct traffic *t = calloc(1, sizeof(*t));   /* left to a stuck thread if it fails */
	uint32_t from;

	(void)state;
	assert_non_null(t);
	assert_int_equal(h_open(&t->p, &opts), 0);
	t->ev.e = xr_context_engine(t->p.b.ctx);
	t->ev.clear = true;
	from = reg(t->ev.e, XR_REG_EVLOG_COUNT);
	xr_engine_set_event_irq(t->ev.e, on_event, &t->ev);
	t->bad_key = true;
	assert_true(h_finishes(write_one, t));
	assert_true(t->got);
	assert_int_equal(t->status, XR_WC_REM_ACCESS_ERR);
	assert_true(t->ev.calls > 0);
	assert_int_equal(t->ev.clears_failed, 0);
	/* Once each, in the log's order. */
	xr_engine_set_event_irq(t->ev.e, NULL, NULL);
	assert_int_equal(t->ev.calls, reg(t->ev.e, XR_REG_EVLOG_COUNT) - from);
	for (unsigned i = 0; i < t->ev.calls && i < 64; i++) {
		assert_int_equal(xr_engine_reg_write(t->ev.e, XR_REG_EVLOG_SEL, from + i), XR_AXI_OKAY);
		assert_int_equal(reg(t->ev.e, XR_REG_EVLOG_TYPE), (1u << 31) | t->ev.type[i]);
		assert_int_equal(reg(t->ev.e, XR_REG_EVLOG_QPN), t->ev.qpn[i]);
	}
	h_close(&t->p);
	free(t);
}

static void test_a_completion_handler_raised_in_a_pass_may_clear_the_counters(void **state)
{
	struct traffic *t = calloc(1, sizeof(*t));

	(void)state;
	assert_non_null(t);
	assert_int_equal(h_open(&t->p, &opts), 0);
	xr_engine_set_irq(xr_context_engine(t->p.a.ctx), on_cq, t);
	t->arm = true;
	assert_true(h_finishes(write_one, t));
	assert_true(t->got);
	assert_int_equal(t->status, XR_WC_SUCCESS);
	assert_int_equal(t->cq_calls, 1);
	assert_int_equal(t->cqn, xr_cq_num(t->p.a.cq));
	assert_int_equal(t->cq_clears_failed, 0);
	h_close(&t->p);
	free(t);
}

static struct xr_engine *eng_of(struct end *e)
{
	return xr_context_engine(e->ctx);
}

/* The enable's events: the handler sees CTRL as the write left it, and
 * a write of its own (it turns the device off again) stands. */
struct ctrl_seen {
	struct xr_engine *e;
	unsigned n;
	uint32_t on[4], ctrl[4];
	bool turn_off;
};

static void on_enable(void *ctx, uint32_t type, uint32_t qpn)
{
	struct ctrl_seen *c = ctx;
	uint32_t n = reg(c->e, XR_REG_EVLOG_COUNT);

	(void)qpn;
	if (type != XR_EV_ENABLE || c->n == 4)
		return;
	assert_int_equal(xr_engine_reg_write(c->e, XR_REG_EVLOG_SEL, n - 1), XR_AXI_OKAY);
	c->on[c->n] = reg(c->e, XR_REG_EVLOG_ARG0);
	c->ctrl[c->n] = reg(c->e, XR_REG_CTRL);
	c->n++;
	if (c->on[c->n - 1] && c->turn_off) {
		c->turn_off = false;
		assert_int_equal(xr_engine_reg_write(c->e, XR_REG_CTRL, 0), XR_AXI_OKAY);
	}
}

static void test_an_enable_interrupts_after_the_write(void **state)
{
	struct pair p;
	struct ctrl_seen c = { .turn_off = true };

	(void)state;
	assert_int_equal(h_open(&p, &opts), 0);
	c.e = eng_of(&p.a);
	xr_engine_set_event_irq(c.e, on_enable, &c);
	assert_int_equal(xr_engine_reg_write(c.e, XR_REG_CTRL, 0), XR_AXI_OKAY);
	assert_int_equal(xr_engine_reg_write(c.e, XR_REG_CTRL, XR_CTRL_ENABLE), XR_AXI_OKAY);
	xr_engine_set_event_irq(c.e, NULL, NULL);
	assert_int_equal(c.n, 3);   /* off, on, and the handler's off */
	assert_int_equal(c.on[0], 0);
	assert_int_equal(c.ctrl[0] & XR_CTRL_ENABLE, 0);
	assert_int_equal(c.on[1], 1);
	assert_int_equal(c.ctrl[1] & XR_CTRL_ENABLE, XR_CTRL_ENABLE);
	assert_int_equal(c.on[2], 0);
	assert_int_equal(c.ctrl[2] & XR_CTRL_ENABLE, 0);
	assert_int_equal(reg(c.e, XR_REG_CTRL) & XR_CTRL_ENABLE, 0);
	h_close(&p);
}

/* A command that fails logs CMD_ERROR; a handler that asks what happened
 * (a command of its own) would run between the command and the read of
 * its status, and change it: a driver whose handlers do so holds its
 * interrupts across its command sequences. */
struct cmd_seen {
	struct xr_context *ctx;
	uint32_t qpn;
	unsigned reads;
};

static void on_cmd_error(void *ctx, uint32_t type, uint32_t qpn)
{
	struct cmd_seen *c = ctx;
	struct xr_qp_ctx q;

	(void)qpn;
	if (type == XR_EV_CMD_ERROR && !c->reads++)
		assert_int_equal(xr_regio_qp_read(xr_context_regs(c->ctx), c->qpn, &q), 0);
}

static void test_a_command_sequence_holds_its_interrupts(void **state)
{
	struct pair p;
	struct cmd_seen c;
	struct xr_qp_ctx q;
	uint32_t st = 0;
	int rc;

	(void)state;
	assert_int_equal(h_open(&p, &opts), 0);
	c = (struct cmd_seen){ p.a.ctx, xr_qp_num(p.a.qp[0]), 0 };
	assert_int_equal(xr_regio_qp_read(xr_context_regs(p.a.ctx), c.qpn, &q), 0);
	q.state = XR_QPS_INIT;   /* RTS to INIT: no such transition */
	xr_engine_set_event_irq(eng_of(&p.a), on_cmd_error, &c);
	xr_engine_irq_hold();
	rc = xr_regio_qp_commit(xr_context_regs(p.a.ctx), c.qpn, &q, &st);
	assert_int_equal(c.reads, 0);   /* held */
	xr_engine_irq_release();
	xr_engine_set_event_irq(eng_of(&p.a), NULL, NULL);
	assert_true(rc != 0);
	assert_int_equal(st, XR_CMD_ST_BAD_TRANSITION);
	assert_int_equal(c.reads, 1);
	h_close(&p);
}

/* Posts n unsignaled WRITEs from a to b (not sent: a's engine does not
 * run), then moves a's QP to ERR: a's next pass flushes them all. */
static void post_and_fail(struct pair *p, unsigned n)
{
	struct xr_sge sg = { (uintptr_t)h_data(&p->a), 8, p->a.mr->lkey };
	struct xr_qp_attr at = { .qp_state = XR_QPS_ERR };

	for (unsigned i = 0; i < n; i++) {
		struct xr_send_wr w = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b);
		w.wr.rdma.rkey = p->b.mr->rkey;
		assert_int_equal(xr_post_send(p->a.qp[0], &w, NULL), 0);
	}
	assert_int_equal(xr_modify_qp(p->a.qp[0], &at, XR_QP_STATE), 0);
}

static unsigned counted, nesting, deepest;

/* Reads a register, as a driver's handler does: the access's own release
 * must not deliver the next one inside this one. */
static void count_events(void *ctx, uint32_t type, uint32_t qpn)
{
	(void)type;
	(void)qpn;
	if (++nesting > deepest)
		deepest = nesting;
	counted++;
	(void)reg(ctx, XR_REG_EVLOG_COUNT);
	nesting--;
}

/* A flush of 6,000 WQEs logs an event each in one pass, more than the
 * log's ring holds (4,096): each interrupts once all the same, one
 * handler after the other (delivered from the handlers' own accesses,
 * they nested 6,000 deep). */
static void test_a_pass_of_thousands_of_events_interrupts_for_each(void **state)
{
	struct pair p;
	struct h_opts o = opts;
	uint32_t from, logged;

	(void)state;
	o.sq_depth = 8192;
	o.cq_depth = 16384;
	assert_int_equal(h_open(&p, &o), 0);
	post_and_fail(&p, 6000);
	from = reg(eng_of(&p.a), XR_REG_EVLOG_COUNT);
	counted = deepest = 0;
	xr_engine_set_event_irq(eng_of(&p.a), count_events, eng_of(&p.a));
	xr_engine_progress(eng_of(&p.a));
	xr_engine_set_event_irq(eng_of(&p.a), NULL, NULL);
	logged = reg(eng_of(&p.a), XR_REG_EVLOG_COUNT) - from;
	assert_true(logged > XR_EVLOG_ENTRIES);
	assert_int_equal(counted, logged);
	assert_int_equal(deepest, 1);
	h_close(&p);
}

/* A handler that takes the interrupt away (a driver going) while more
 * wait: the rest are not delivered, and nothing calls a NULL handler. */
static struct xr_engine *leaving;

static void leave(void *ctx, uint32_t type, uint32_t qpn)
{
	(void)ctx;
	(void)type;
	(void)qpn;
	counted++;
	xr_engine_set_event_irq(leaving, NULL, NULL);
}

static void test_a_handler_cleared_while_interrupts_wait(void **state)
{
	struct pair p;

	(void)state;
	assert_int_equal(h_open(&p, &opts), 0);
	post_and_fail(&p, 4);
	leaving = eng_of(&p.a);
	counted = 0;
	xr_engine_set_event_irq(leaving, leave, NULL);
	xr_engine_progress(leaving);   /* 4 flush completions and more: held */
	assert_int_equal(counted, 1);
	h_close(&p);
}

/* A handler that posts (its doorbell logs WQE_POSTED with no lock held)
 * while flush events wait: its event comes after them, as logged. */
struct order {
	struct pair *p;
	unsigned n;
	uint32_t type[16];
	bool posted;
};

static void post_from_handler(void *ctx, uint32_t type, uint32_t qpn)
{
	struct order *o = ctx;
	struct xr_sge sg = { (uintptr_t)h_data(&o->p->a), 8, o->p->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = 99, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE };

	(void)qpn;
	if (o->n < 16)
		o->type[o->n] = type;
	o->n++;
	if (!o->posted) {
		o->posted = true;
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&o->p->b);
		w.wr.rdma.rkey = o->p->b.mr->rkey;
		assert_int_equal(xr_post_send(o->p->a.qp[0], &w, NULL), 0);
	}
}

static void test_a_handlers_own_event_waits_its_turn(void **state)
{
	struct pair p;
	struct order o = { .p = &p };
	struct xr_engine *e;
	uint32_t from;

	(void)state;
	assert_int_equal(h_open(&p, &opts), 0);
	e = eng_of(&p.a);
	assert_int_equal(xr_engine_reg_write(e, XR_REG_EVLOG_MASK, 0), XR_AXI_OKAY);   /* WQE_POSTED too */
	post_and_fail(&p, 4);
	from = reg(e, XR_REG_EVLOG_COUNT);
	xr_engine_set_event_irq(e, post_from_handler, &o);
	xr_engine_progress(e);
	xr_engine_set_event_irq(e, NULL, NULL);
	assert_true(o.posted);
	assert_int_equal(o.n, reg(e, XR_REG_EVLOG_COUNT) - from);
	for (unsigned i = 0; i < o.n && i < 16; i++) {
		assert_int_equal(xr_engine_reg_write(e, XR_REG_EVLOG_SEL, from + i), XR_AXI_OKAY);
		assert_int_equal(reg(e, XR_REG_EVLOG_TYPE), (1u << 31) | o.type[i]);
	}
	h_close(&p);
}

/* A completion's handler sends a request and drives the engine until it
 * completes; the peer is silent, so the ACK timer must fire. The handler
 * runs at the end of an assisting poll, whose pass took the lease's clock
 * reading: the handler's own passes must read the clock anew, or time
 * stands still for them and the timer never fires. */
struct waiter {
	struct pair *p;
	bool fired, done;
	enum xr_wc_status status;
};

static void send_and_wait(void *ctx, uint32_t cqn)
{
	struct waiter *w = ctx;
	struct xr_sge sg = { (uintptr_t)h_data(&w->p->a), 8, w->p->a.mr->lkey };
	struct xr_send_wr wr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				 .send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;
	uint64_t t0 = h_now_ms();

	(void)cqn;
	if (w->fired)
		return;
	w->fired = true;
	wr.wr.rdma.remote_addr = (uintptr_t)h_data(&w->p->b);
	wr.wr.rdma.rkey = w->p->b.mr->rkey;
	if (xr_post_send(w->p->a.qp[0], &wr, NULL))
		return;
	while (!w->done && h_now_ms() - t0 < 2000) {
		xr_engine_progress(eng_of(&w->p->a));
		if (xr_poll_cq(w->p->a.cq, 1, &wc) == 1 && wc.wr_id == 2) {
			w->done = true;
			w->status = wc.status;
		}
	}
}

static void test_a_handlers_passes_see_the_clock_move(void **state)
{
	struct pair p;
	struct h_opts o = opts;
	struct waiter w = { .p = &p };
	struct xr_sge sg;
	struct xr_send_wr wr = { .wr_id = 1, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED };
	uint64_t t0;

	(void)state;
	o.timeout = 8;    /* ~1 ms */
	o.retry_cnt = 1;
	assert_int_equal(h_open(&p, &o), 0);
	sg = (struct xr_sge){ (uintptr_t)h_data(&p.a), 8, p.a.mr->lkey };
	wr.sg_list = &sg;
	wr.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
	wr.wr.rdma.rkey = p.b.mr->rkey;
	xr_engine_set_irq(eng_of(&p.a), send_and_wait, &w);
	assert_int_equal(xr_req_notify_cq(p.a.cq, 0), 0);
	assert_int_equal(xr_post_send(p.a.qp[0], &wr, NULL), 0);
	for (t0 = h_now_ms(); !w.fired && h_now_ms() - t0 < 2000;) {
		xr_engine_assist(eng_of(&p.a));   /* the lease's clock reading */
		xr_engine_progress(eng_of(&p.b));
	}
	xr_engine_set_irq(eng_of(&p.a), NULL, NULL);
	assert_true(w.fired);
	assert_true(w.done);
	assert_int_equal(w.status, XR_WC_RETRY_EXC_ERR);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_event_handler_reads_the_log_in_a_register_access),
		cmocka_unit_test(test_an_event_handler_raised_in_a_pass_may_clear_the_counters),
		cmocka_unit_test(test_a_completion_handler_raised_in_a_pass_may_clear_the_counters),
		cmocka_unit_test(test_an_enable_interrupts_after_the_write),
		cmocka_unit_test(test_a_command_sequence_holds_its_interrupts),
		cmocka_unit_test(test_a_pass_of_thousands_of_events_interrupts_for_each),
		cmocka_unit_test(test_a_handler_cleared_while_interrupts_wait),
		cmocka_unit_test(test_a_handlers_own_event_waits_its_turn),
		cmocka_unit_test(test_a_handlers_passes_see_the_clock_move),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
