/* SPDX-License-Identifier: MIT */
/*
 * xr_qp_connect (src/drv/connect.c): RC and UC QPs connected by it alone
 * carry data over the in-memory link, the attributes it commits are the
 * ones asked for, and a bad argument is a -errno that leaves the QP as it
 * was, never a crash or a half-connected QP. And a query beside a modify.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "rc_harness.h"

/* Two devices on the mem link; their QP 0s (connected by the harness)
 * are not used: each test makes its own. */
static void open_pair(struct pair *p)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7 };

	assert_int_equal(h_open(p, &o), 0);
}

static struct xr_qp *new_qp(struct end *e, enum xr_qp_type type)
{
	struct xr_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = type };
	struct xr_qp *q;

	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	q = xr_create_qp(e->pd, &ia);
	assert_non_null(q);
	return q;
}

/* q toward peer (on peer_end), from the defaults. */
static struct xr_connect_attr attr_to(struct end *peer_end, struct xr_qp *peer, uint32_t my_psn, uint32_t peer_psn)
{
	struct xr_connect_attr c;

	xr_connect_attr_init(&c);
	c.dest_qp_num = xr_qp_num(peer);
	c.rq_psn = peer_psn;
	c.sq_psn = my_psn;
	xr_query_gid(peer_end->ctx, &c.dgid);
	return c;
}

static enum xr_qp_state state_of(struct xr_qp *q)
{
	struct xr_qp_attr a;

	assert_int_equal(xr_query_qp(q, &a, XR_QP_STATE, NULL), 0);
	return a.qp_state;
}

/* One signalled WR on q; its completion (on e's CQ) must be a success. */
static void post_and_wait(struct pair *p, struct end *e, struct xr_qp *q, struct xr_send_wr *w)
{
	struct xr_wc wc;

	assert_int_equal(xr_post_send(q, w, NULL), 0);
	assert_int_equal(h_wait(p, e, &wc, 5000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, w->wr_id);
}

static void test_defaults(void **state)
{
	struct xr_connect_attr c;

	(void)state;
	memset(&c, 0xA5, sizeof(c));
	xr_connect_attr_init(&c);
	assert_int_equal(c.dest_qp_num, 0);
	assert_int_equal(c.rq_psn, 0);
	assert_int_equal(c.sq_psn, 0);
	assert_int_equal(c.path_mtu, XR_MTU_1024);
	assert_int_equal(c.access, XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(c.hop_limit, 64);
	assert_int_equal(c.traffic_class, 0);
	assert_int_equal(c.max_rd_atomic, XR_MAX_RD_ATOMIC);
	assert_int_equal(c.max_dest_rd_atomic, XR_MAX_RD_ATOMIC);
	assert_int_equal(c.min_rnr_timer, 12);
	assert_int_equal(c.timeout, 14);
	assert_int_equal(c.retry_cnt, 7);
	assert_int_equal(c.rnr_retry, 7);
}

/* RC: a WRITE, a SEND and a READ across 4 KiB MTU frames, and what
 * the QP holds after the connect is what was asked for. */
static void test_rc_moves_data(void **state)
{
	struct pair p;
	struct xr_qp *qa, *qb;
	struct xr_connect_attr ca, cb;
	struct xr_qp_attr got;
	const uint32_t len = 40000;   /* ten 4 KiB packets */
	uint8_t *da, *db;

	(void)state;
	open_pair(&p);
	qa = new_qp(&p.a, XR_QPT_RC);
	qb = new_qp(&p.b, XR_QPT_RC);
	ca = attr_to(&p.b, qb, 0xFFFFF0, 0x123);   /* a's PSNs wrap */
	cb = attr_to(&p.a, qa, 0x123, 0xFFFFF0);
	ca.path_mtu = cb.path_mtu = XR_MTU_4096;
	ca.timeout = 10;
	ca.retry_cnt = 5;
	ca.min_rnr_timer = 3;
	ca.max_rd_atomic = 4;
	ca.traffic_class = 0x68;
	assert_int_equal(xr_qp_connect(qa, &ca), 0);
	assert_int_equal(xr_qp_connect(qb, &cb), 0);

	assert_int_equal(xr_query_qp(qa, &got, 0, NULL), 0);
	assert_int_equal(got.qp_state, XR_QPS_RTS);
	assert_int_equal(got.path_mtu, XR_MTU_4096);
	assert_int_equal(got.dest_qp_num, xr_qp_num(qb));
	assert_int_equal(got.sq_psn, 0xFFFFF0);
	assert_int_equal(got.rq_psn, 0x123);
	assert_int_equal(got.timeout, 10);
	assert_int_equal(got.retry_cnt, 5);
	assert_int_equal(got.min_rnr_timer, 3);
	assert_int_equal(got.max_rd_atomic, 4);
	assert_int_equal(got.max_dest_rd_atomic, XR_MAX_RD_ATOMIC);
	assert_int_equal(got.ah_attr.grh.traffic_class, 0x68);
	assert_int_equal(got.ah_attr.grh.hop_limit, 64);
	assert_int_equal(got.qp_access_flags, ca.access);

	da = h_data(&p.a);
	db = h_data(&p.b);
	for (uint32_t i = 0; i < len; i++)
		da[i] = (uint8_t)(i * 7 + 1);
	{
		/* WRITE a[0..len) -> b[0..len) */
		struct xr_sge s = { (uintptr_t)da, len, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)db;
		w.wr.rdma.rkey = p.b.mr->rkey;
		post_and_wait(&p, &p.a, qa, &w);
		assert_memory_equal(da, db, len);
	}
	{
		/* SEND b[0..len) -> a[len..2len), a receive posted first */
		struct xr_sge rs = { (uintptr_t)da + len, len, p.a.mr->lkey };
		struct xr_recv_wr r = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
		struct xr_sge s = { (uintptr_t)db, len, p.b.mr->lkey };
		struct xr_send_wr w = { .wr_id = 3, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_SEND,
					.send_flags = XR_SEND_SIGNALED };
		struct xr_wc wc;
		assert_int_equal(xr_post_recv(qa, &r, NULL), 0);
		post_and_wait(&p, &p.b, qb, &w);
		assert_int_equal(h_wait(&p, &p.a, &wc, 5000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 2);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(da + len, db, len);
	}
	{
		/* READ b[0..len) -> a[2len..3len) */
		struct xr_sge s = { (uintptr_t)da + 2 * len, len, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = 4, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)db;
		w.wr.rdma.rkey = p.b.mr->rkey;
		post_and_wait(&p, &p.a, qa, &w);
		assert_memory_equal(da + 2 * len, db, len);
	}
	assert_true(h_guards_ok(&p.a) && h_guards_ok(&p.b));
	xr_destroy_qp(qa);
	xr_destroy_qp(qb);
	h_close(&p);
}

/* UC: the same call with UC's masks (no READ resources or timers). */
static void test_uc_moves_data(void **state)
{
	struct pair p;
	struct xr_qp *qa, *qb;
	struct xr_connect_attr ca, cb;
	const uint32_t len = 3000;
	uint8_t *da, *db;

	(void)state;
	open_pair(&p);
	qa = new_qp(&p.a, XR_QPT_UC);
	qb = new_qp(&p.b, XR_QPT_UC);
	ca = attr_to(&p.b, qb, 50, 60);
	cb = attr_to(&p.a, qa, 60, 50);
	ca.access = cb.access = XR_ACCESS_REMOTE_WRITE;
	assert_int_equal(xr_qp_connect(qa, &ca), 0);
	assert_int_equal(xr_qp_connect(qb, &cb), 0);
	assert_int_equal(state_of(qa), XR_QPS_RTS);
	assert_int_equal(state_of(qb), XR_QPS_RTS);

	da = h_data(&p.a);
	db = h_data(&p.b);
	for (uint32_t i = 0; i < len; i++)
		da[i] = (uint8_t)(i ^ 0x5A);
	{
		struct xr_sge rs = { (uintptr_t)db, len, p.b.mr->lkey };
		struct xr_recv_wr r = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 };
		struct xr_sge s = { (uintptr_t)da, len, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = 8, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_SEND,
					.send_flags = XR_SEND_SIGNALED };
		struct xr_wc wc;
		assert_int_equal(xr_post_recv(qb, &r, NULL), 0);
		post_and_wait(&p, &p.a, qa, &w);
		assert_int_equal(h_wait(&p, &p.b, &wc, 5000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(da, db, len);
	}
	xr_destroy_qp(qa);
	xr_destroy_qp(qb);
	h_close(&p);
}

/* Each bad value alone: -EINVAL, and the QP is still in RESET (the checks
 * come before INIT), so the good attributes then connect it. */
static void test_bad_arguments(void **state)
{
	struct pair p;
	struct xr_qp *q, *peer, *ud;
	struct xr_connect_attr good, c;
	struct xr_qp_attr a;

	(void)state;
	open_pair(&p);
	q = new_qp(&p.a, XR_QPT_RC);
	peer = new_qp(&p.b, XR_QPT_RC);
	good = attr_to(&p.b, peer, 1, 2);

	assert_int_equal(xr_qp_connect(NULL, &good), -EINVAL);
	assert_int_equal(xr_qp_connect(q, NULL), -EINVAL);
	memset(&c, 0, sizeof(c));   /* not from xr_connect_attr_init: path_mtu 0 */
	assert_int_equal(xr_qp_connect(q, &c), -EINVAL);

#define BAD(field, value)                                          \
	do {                                                       \
		c = good;                                          \
		c.field = value;                                   \
		assert_int_equal(xr_qp_connect(q, &c), -EINVAL);   \
		assert_int_equal(state_of(q), XR_QPS_RESET);       \
	} while (0)
	BAD(path_mtu, (enum xr_mtu)0);
	BAD(path_mtu, (enum xr_mtu)6);      /* 8192 */
	BAD(path_mtu, (enum xr_mtu)-1);
	BAD(dest_qp_num, 1u << 24);
	BAD(access, XR_ACCESS_MW_BIND);
	BAD(timeout, 32);
	BAD(min_rnr_timer, 32);
	BAD(retry_cnt, 8);
	BAD(rnr_retry, 8);
	BAD(max_rd_atomic, XR_MAX_RD_ATOMIC + 1);
	BAD(max_dest_rd_atomic, 255);
#undef BAD

	/* UD has no peer to connect to */
	ud = new_qp(&p.a, XR_QPT_UD);
	assert_int_equal(xr_qp_connect(ud, &good), -EINVAL);
	assert_int_equal(state_of(ud), XR_QPS_RESET);

	/* Connected once; a second call finds it in RTS and changes nothing. */
	assert_int_equal(xr_qp_connect(q, &good), 0);
	assert_int_equal(state_of(q), XR_QPS_RTS);
	c = good;
	c.dest_qp_num = 0x77;
	assert_int_equal(xr_qp_connect(q, &c), -EINVAL);
	assert_int_equal(xr_query_qp(q, &a, 0, NULL), 0);
	assert_int_equal(a.qp_state, XR_QPS_RTS);
	assert_int_equal(a.dest_qp_num, xr_qp_num(peer));

	/* Nor from INIT: back to RESET first, then it connects again. */
	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_RESET;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS), 0);
	assert_int_equal(xr_qp_connect(q, &good), -EINVAL);
	assert_int_equal(state_of(q), XR_QPS_INIT);
	a.qp_state = XR_QPS_RESET;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	assert_int_equal(xr_qp_connect(q, &good), 0);
	assert_int_equal(state_of(q), XR_QPS_RTS);

	xr_destroy_qp(ud);
	xr_destroy_qp(q);
	xr_destroy_qp(peer);
	h_close(&p);
}

/* A path MTU above the port's active MTU is refused before anything is
 * committed: the QP stays in RESET and can be connected again (it was
 * left in INIT, refused only at RTR). */
static void test_mtu_above_link_leaves_reset(void **state)
{
	struct pair p;
	struct xr_qp *q, *peer;
	struct xr_connect_attr c;
	uint32_t link_mtu;

	(void)state;
	open_pair(&p);
	q = new_qp(&p.a, XR_QPT_RC);
	peer = new_qp(&p.b, XR_QPT_RC);
	c = attr_to(&p.b, peer, 1, 2);
	link_mtu = p.la->mtu;
	p.la->mtu = 1500;   /* active MTU 1024 */
	c.path_mtu = XR_MTU_2048;
	assert_int_equal(xr_qp_connect(q, &c), -EINVAL);
	assert_int_equal(state_of(q), XR_QPS_RESET);
	c.path_mtu = XR_MTU_1024;
	assert_int_equal(xr_qp_connect(q, &c), 0);
	assert_int_equal(state_of(q), XR_QPS_RTS);
	p.la->mtu = link_mtu;
	xr_destroy_qp(q);
	xr_destroy_qp(peer);
	h_close(&p);
}

/* Each entry into SQD raises its SQ_DRAINED, also SQD -> RTS -> SQD with
 * no pass in between (inline mode): the second was lost, and a program
 * waiting for it with no timeout hung. */
static void test_sqd_again_drains_again(void **state)
{
	struct pair p;
	struct xr_qp *q, *peer;
	struct xr_connect_attr c;
	struct xr_qp_attr a;
	struct xr_async_event ev;

	(void)state;
	open_pair(&p);
	q = new_qp(&p.a, XR_QPT_RC);
	peer = new_qp(&p.b, XR_QPT_RC);
	c = attr_to(&p.b, peer, 1, 2);
	assert_int_equal(xr_qp_connect(q, &c), 0);
	memset(&a, 0, sizeof(a));
	for (int round = 0; round < 2; round++) {
		a.qp_state = XR_QPS_SQD;
		assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
		assert_int_equal(xr_get_async_event(p.a.ctx, &ev, 1000), 0);
		assert_int_equal(ev.type, XR_EVENT_SQ_DRAINED);
		a.qp_state = XR_QPS_RTS;
		assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	}
	xr_destroy_qp(q);
	xr_destroy_qp(peer);
	h_close(&p);
}

/* xr_query_qp beside xr_modify_qp on another thread: the query reads
 * the rate a modify stores, so it reads it under the same lock (it read
 * rate_limit and static_rate after letting go: a data race, seen by
 * ThreadSanitizer in make test-tsan). Each answer is one of the two. */
struct rate_flipper {
	struct xr_qp *q;
	atomic_uint done;
	unsigned failed;
};

static void *flip_rates(void *arg)
{
	struct rate_flipper *f = arg;

	for (unsigned i = 0; i < 400; i++) {
		struct xr_qp_attr a = { .rate_limit = i & 1 ? 2000000 : 1000000 };
		f->failed += xr_modify_qp(f->q, &a, XR_QP_RATE_LIMIT) != 0;
		atomic_fetch_add(&f->done, 1);
	}
	return NULL;
}

static void test_query_beside_a_modify(void **state)
{
	struct pair p;
	struct rate_flipper f = { 0 };
	pthread_t t;

	(void)state;
	open_pair(&p);
	f.q = p.a.qp[0];
	atomic_init(&f.done, 0);
	assert_int_equal(pthread_create(&t, NULL, flip_rates, &f), 0);
	for (unsigned i = 0; i < 100000 && atomic_load(&f.done) < 400; i++) {
		struct xr_qp_attr a;
		assert_int_equal(xr_query_qp(f.q, &a, XR_QP_RATE_LIMIT, NULL), 0);
		assert_true(a.rate_limit == 0 || a.rate_limit == 1000000 || a.rate_limit == 2000000);
		assert_int_equal(a.qp_state, XR_QPS_RTS);
	}
	pthread_join(t, NULL);
	assert_int_equal(f.failed, 0);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_rc_moves_data),
		cmocka_unit_test(test_uc_moves_data),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_mtu_above_link_leaves_reset),
		cmocka_unit_test(test_sqd_again_drains_again),
		cmocka_unit_test(test_query_beside_a_modify),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
