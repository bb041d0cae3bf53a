/* SPDX-License-Identifier: MIT */
/* Interrupt handlers that call the driver while the thread they interrupt
 * is inside it: a post (its doorbell logs WQE_POSTED) or a modify (its
 * commit logs QP_STATE). The driver holds the thread's interrupts while
 * it holds a lock of its own, as a kernel driver masks them under a spin
 * lock, so a handler runs once the call has let go: it may modify, reset,
 * query or destroy any QP, its own post's too, beside another thread's
 * RESET. A handler that deadlocks fails the test after 5 s instead of
 * hanging it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"

static const struct h_opts opts = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 16,
				    .timeout = 14, .retry_cnt = 7, .rnr_retry = 7 };

static struct xr_engine *eng_of(struct end *e)
{
	return xr_context_engine(e->ctx);
}

static enum xr_qp_state state_of(struct xr_qp *qp)
{
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;

	assert_int_equal(xr_query_qp(qp, &a, XR_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* Every event logged, WQE_POSTED and QP_STATE too. */
static void log_all(struct end *e)
{
	assert_int_equal(xr_engine_reg_write(eng_of(e), XR_REG_EVLOG_MASK, 0), XR_AXI_OKAY);
}

struct poster {
	struct pair *p;
	struct end *end;
	bool send;               /* a WRITE from a, else a receive on b */
	int post_rc;
};

static void *post_one(void *arg)
{
	struct poster *o = arg;
	struct xr_sge sg = { (uintptr_t)h_data(o->end), 8, o->end->mr->lkey };

	if (o->send) {
		struct xr_send_wr w = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&o->p->b);
		w.wr.rdma.rkey = o->p->b.mr->rkey;
		o->post_rc = xr_post_send(o->end->qp[0], &w, NULL);
	} else {
		struct xr_recv_wr r = { .wr_id = 8, .sg_list = &sg, .num_sge = 1 };
		o->post_rc = xr_post_recv(o->end->qp[0], &r, NULL);
	}
	return NULL;
}

/* A handler that moves the QP whose post raised its event to ERR or to
 * RESET: the post's queue lock must be let go first (a modify that took
 * the queue locks for any state hung here on ERR; a RESET, which takes
 * them, hung until the driver held its interrupts). */
struct mover {
	struct poster post;
	enum xr_qp_state to;
	int rc;
	unsigned calls;
};

static void move_from_handler(void *ctx, uint32_t type, uint32_t qpn)
{
	struct mover *m = ctx;
	struct xr_qp_attr a = { .qp_state = m->to };

	(void)qpn;
	if (type != XR_EV_WQE_POSTED || m->calls++)
		return;
	m->rc = xr_modify_qp(m->post.end->qp[0], &a, XR_QP_STATE);
}

static void test_a_handler_moves_the_qp_of_the_post_that_raised_it(void **state)
{
	static const enum xr_qp_state to[] = { XR_QPS_ERR, XR_QPS_RESET };

	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		for (int send = 1; send >= 0; send--) {
			struct pair p;
			struct mover m = { .post = { .p = &p, .end = send ? &p.a : &p.b, .send = send, .post_rc = -1 },
					   .to = to[k], .rc = -1 };
			struct xr_engine *e;

			assert_int_equal(h_open(&p, &opts), 0);
			e = eng_of(m.post.end);
			log_all(m.post.end);
			xr_engine_set_event_irq(e, move_from_handler, &m);
			assert_true(h_finishes(post_one, &m.post));
			xr_engine_set_event_irq(e, NULL, NULL);
			assert_int_equal(m.calls, 1);
			assert_int_equal(m.post.post_rc, 0);   /* posted before the handler ran */
			assert_int_equal(m.rc, 0);
			assert_int_equal(state_of(m.post.end->qp[0]), to[k]);
			if (to[k] == XR_QPS_RESET) {   /* and a post now is refused, not left in the ring */
				post_one(&m.post);
				assert_int_equal(m.post.post_rc, EINVAL);
			}
			h_close(&p);
		}
	}
}

/* A handler that destroys the QP whose post raised its event, with the
 * engine's thread running: the post reads the QP after its lock (to
 * stream, to end its lease), so the handler waits for the whole post. */
struct destroyer {
	struct poster post;
	unsigned calls;
	int rc;
};

static void destroy_from_handler(void *ctx, uint32_t type, uint32_t qpn)
{
	struct destroyer *d = ctx;

	(void)qpn;
	if (type != XR_EV_WQE_POSTED || d->calls++)
		return;
	d->rc = xr_destroy_qp(d->post.end->qp[0]);
	d->post.end->qp[0] = NULL;
}

static void test_a_handler_destroys_the_qp_of_the_post_that_raised_it(void **state)
{
	struct h_opts o = opts;

	(void)state;
	o.mode = XR_PROGRESS_THREAD;
	for (int send = 1; send >= 0; send--) {
		struct pair p;
		struct destroyer d = { .post = { .p = &p, .end = send ? &p.a : &p.b, .send = send, .post_rc = -1 },
				       .rc = -1 };
		struct xr_engine *e;

		assert_int_equal(h_open(&p, &o), 0);
		e = eng_of(d.post.end);
		log_all(d.post.end);
		xr_engine_set_event_irq(e, destroy_from_handler, &d);
		assert_true(h_finishes(post_one, &d.post));
		xr_engine_set_event_irq(e, NULL, NULL);
		assert_int_equal(d.calls, 1);
		assert_int_equal(d.post.post_rc, 0);
		assert_int_equal(d.rc, 0);
		h_close(&p);
	}
}

/* A handler that queries the QP a modify on its own thread is changing:
 * the commit logs QP_STATE while the modify holds the context's lock, and
 * the handler, run once the modify let go, sees the state committed. */
struct asker {
	struct xr_qp *qp;
	unsigned calls;
	int rc;
	enum xr_qp_state seen;
};

static void query_from_handler(void *ctx, uint32_t type, uint32_t qpn)
{
	struct asker *k = ctx;
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;

	if (type != XR_EV_QP_STATE || qpn != xr_qp_num(k->qp) || k->calls++)
		return;
	k->rc = xr_query_qp(k->qp, &a, XR_QP_STATE, &ia);
	k->seen = a.qp_state;
}

static void *fail_qp(void *arg)
{
	struct asker *k = arg;
	struct xr_qp_attr a = { .qp_state = XR_QPS_ERR };

	assert_int_equal(xr_modify_qp(k->qp, &a, XR_QP_STATE), 0);
	return NULL;
}

static void test_a_handler_queries_the_qp_its_modify_changes(void **state)
{
	struct pair p;
	struct asker k = { .rc = -1 };

	(void)state;
	assert_int_equal(h_open(&p, &opts), 0);
	k.qp = p.a.qp[0];
	log_all(&p.a);
	xr_engine_set_event_irq(eng_of(&p.a), query_from_handler, &k);
	assert_true(h_finishes(fail_qp, &k));
	xr_engine_set_event_irq(eng_of(&p.a), NULL, NULL);
	assert_int_equal(k.calls, 1);
	assert_int_equal(k.rc, 0);
	assert_int_equal(k.seen, XR_QPS_ERR);
	h_close(&p);
}

/* A handler inside a post queries its QP while another thread resets it.
 * The RESET takes the context's lock, then the queue locks; were the
 * handler run while the post still held its queue's, each thread would
 * wait for the other. The handler lets the resetting thread start and
 * gives it time to reach the queue lock before it asks. */
struct beside {
	struct poster post;
	unsigned calls;
	int query_rc, reset_rc;
	bool go;
};

static void ask_beside_a_reset(void *ctx, uint32_t type, uint32_t qpn)
{
	struct beside *b = ctx;
	struct timespec nap = { 0, 100 * 1000 * 1000 };
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;

	(void)qpn;
	if (type != XR_EV_WQE_POSTED || b->calls++)
		return;
	__atomic_store_n(&b->go, true, __ATOMIC_RELEASE);
	nanosleep(&nap, NULL);
	b->query_rc = xr_query_qp(b->post.end->qp[0], &a, XR_QP_STATE, &ia);
}

static void *reset_when_asked(void *arg)
{
	struct beside *b = arg;
	struct xr_qp_attr a = { .qp_state = XR_QPS_RESET };
	uint64_t t0 = h_now_ms();

	while (!__atomic_load_n(&b->go, __ATOMIC_ACQUIRE))
		if (h_now_ms() - t0 > 5000)
			return NULL;
	b->reset_rc = xr_modify_qp(b->post.end->qp[0], &a, XR_QP_STATE);
	return NULL;
}

static void test_a_handler_in_a_post_beside_a_reset(void **state)
{
	(void)state;
	for (int send = 1; send >= 0; send--) {
		struct pair p;
		struct beside *b = calloc(1, sizeof(*b));   /* left to stuck threads if it fails */
		struct timespec until;
		pthread_t resetter;

		assert_non_null(b);
		*b = (struct beside){ .post = { .p = &p, .end = send ? &p.a : &p.b, .send = send, .post_rc = -1 },
				      .query_rc = -1, .reset_rc = -1 };
		assert_int_equal(h_open(&p, &opts), 0);
		log_all(b->post.end);
		xr_engine_set_event_irq(eng_of(b->post.end), ask_beside_a_reset, b);
		assert_int_equal(pthread_create(&resetter, NULL, reset_when_asked, b), 0);
		assert_true(h_finishes(post_one, &b->post));
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		assert_int_equal(pthread_timedjoin_np(resetter, NULL, &until), 0);
		xr_engine_set_event_irq(eng_of(b->post.end), NULL, NULL);
		assert_int_equal(b->calls, 1);
		assert_int_equal(b->post.post_rc, 0);
		assert_int_equal(b->query_rc, 0);
		assert_int_equal(b->reset_rc, 0);
		assert_int_equal(state_of(b->post.end->qp[0]), XR_QPS_RESET);
		h_close(&p);
		free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_handler_moves_the_qp_of_the_post_that_raised_it),
		cmocka_unit_test(test_a_handler_destroys_the_qp_of_the_post_that_raised_it),
		cmocka_unit_test(test_a_handler_queries_the_qp_its_modify_changes),
		cmocka_unit_test(test_a_handler_in_a_post_beside_a_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
