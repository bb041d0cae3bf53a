/* SPDX-License-Identifier: MIT */
/* Interrupt handlers that touch the engine, as a driver's do: the event
 * handler reads the log through the registers, and either handler may
 * clear the counters. Raised by a register access, the handler runs in
 * it; raised inside a pass, after the pass (it held the data path's lock
 * and a QP's: the clear would wait for them forever). Every event's
 * interrupt comes once, in the log's order. A handler that deadlocks
 * fails the test after 5 s instead of hanging it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"

static uint32_t reg(struct xr_engine *e, uint32_t off)
{
	uint32_t v = 0;

	assert_int_equal(xr_engine_reg_read(e, off, &v), XR_AXI_OKAY);
	return v;
}

/* Runs fn(arg) on a thread; false if it has not returned within 5 s
 * (a deadlock: the thread is left behind, stuck). */
static bool finishes(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	struct timespec until;

	assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	if (pthread_timedjoin_np(t, NULL, &until)) {
		pthread_detach(t);
		return false;
	}
	return true;
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
 * configured, a register error): the handler runs in that access and
 * reads the log through the registers. */
static void test_an_event_handler_reads_the_log_in_a_register_access(void **state)
{
	struct seen s = { .e = xr_engine_create() };

	(void)state;
	assert_non_null(s.e);
	xr_engine_set_event_irq(s.e, on_event, &s);
	assert_true(finishes(enable, s.e));
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
	bool got;
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
static void *bad_write(void *arg)
{
	struct traffic *t = arg;
	struct xr_sge s = { (uintptr_t)h_data(&t->p.a), 64, t->p.a.mr->lkey };
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&t->p.b);
	w.wr.rdma.rkey = t->p.b.mr->rkey ^ 0x100;   /* another key's index */
	if (xr_post_send(t->p.a.qp[0], &w, NULL) || !h_wait(&t->p, &t->p.a, &wc, 3000))
		return NULL;
	t->status = wc.status;
	t->got = true;
	return NULL;
}

static void *good_write(void *arg)
{
	struct traffic *t = arg;
	struct xr_sge s = { (uintptr_t)h_data(&t->p.a), 64, t->p.a.mr->lkey };
	struct xr_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&t->p.b);
	w.wr.rdma.rkey = t->p.b.mr->rkey;
	if (xr_req_notify_cq(t->p.a.cq, 0) || xr_post_send(t->p.a.qp[0], &w, NULL) ||
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
	assert_true(finishes(bad_write, t));
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
	assert_true(finishes(good_write, t));
	assert_true(t->got);
	assert_int_equal(t->status, XR_WC_SUCCESS);
	assert_int_equal(t->cq_calls, 1);
	assert_int_equal(t->cqn, xr_cq_num(t->p.a.cq));
	assert_int_equal(t->cq_clears_failed, 0);
	h_close(&t->p);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_event_handler_reads_the_log_in_a_register_access),
		cmocka_unit_test(test_an_event_handler_raised_in_a_pass_may_clear_the_counters),
		cmocka_unit_test(test_a_completion_handler_raised_in_a_pass_may_clear_the_counters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
