/* SPDX-License-Identifier: MIT */
/*
 * The RC transport end to end over the in-memory link, in both progress
 * modes: every operation across sizes and MTUs with byte verification,
 * refusals with the right NAK and status on both sides, the QP state
 * machine, and the registers' counters for each. Errors, retries, events
 * and scale are in test_rc_errors.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <unistd.h>

#include "rc_checks.h"

/* e binds a type-2 memory window over the first 4 KiB of its buffer on its
 * QP 0 and returns it (and its region in *mr_out): the key a program hands
 * its peer for SEND_WITH_INV, since ordinary regions cannot be invalidated
 * (rxe_invalidate_mr). */
static struct xr_mw *bind_type2(struct pair *p, struct end *e, struct xr_mr **mr_out)
{
	struct xr_mr *mr = xr_reg_mr(e->pd, h_data(e), 4096,
				     XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_MW_BIND);
	struct xr_mw *mw = xr_alloc_mw(e->pd, XR_MW_TYPE_2);
	struct xr_send_wr w = { .wr_id = 77, .opcode = XR_WR_BIND_MW, .send_flags = XR_SEND_SIGNALED };

	assert_non_null(mr);
	assert_non_null(mw);
	w.bind_mw.mw = mw;
	w.bind_mw.rkey = xr_inc_rkey(mw->rkey);
	w.bind_mw.bind_info = (struct xr_mw_bind_info){ mr, (uintptr_t)h_data(e), 4096, XR_ACCESS_REMOTE_READ };
	assert_int_equal(xr_post_send(e->qp[0], &w, NULL), 0);
	expect_wc(p, e, 77, XR_WC_SUCCESS, XR_WC_BIND_MW, "bind a type-2 window");
	assert_int_equal(mw->rkey, w.bind_mw.rkey);
	*mr_out = mr;
	return mw;
}

/* ---- every operation x sizes x MTUs ---- */

static void run_op_matrix(enum xr_wr_opcode op)
{
	static const enum xr_mtu mtus[] = { XR_MTU_256, XR_MTU_1024, XR_MTU_4096 };
	char what[128];

	for (size_t m = 0; m < 3; m++) {
		struct pair p;
		struct h_opts o = base_opts(mtus[m]);
		uint32_t mtu = 128u << mtus[m];
		const uint32_t sizes[] = { 0, 1, 3, mtu - 1, mtu, mtu + 1, 3 * mtu + 5, 1u << 20 };
		assert_int_equal(h_open(&p, &o), 0);
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			uint32_t len = sizes[k];
			struct xr_sge ss[3], rs[3];
			struct xr_send_wr w = { .wr_id = 100 + k, .opcode = op, .send_flags = XR_SEND_SIGNALED };
			struct xr_recv_wr r = { .wr_id = 200 + k };
			const size_t src = 4096 + 7, dst = (1u << 20) + 4096 + 3;
			struct end *from = &p.a, *to = &p.b;
			bool recv = op == XR_WR_SEND || op == XR_WR_SEND_WITH_IMM || op == XR_WR_SEND_WITH_INV ||
				    op == XR_WR_RDMA_WRITE_WITH_IMM;
			struct xr_mr *inv_mr = NULL;
			struct xr_mw *inv_mw = NULL;

			snprintf(what, sizeof(what), "opcode %d len %u mtu %u mode %d", op, len, mtu, MODE);
			if (op == XR_WR_RDMA_READ) {   /* data flows from b to a */
				fill(h_data(&p.b) + src, len, len + 1);
				memset(h_data(&p.a) + dst, 0, len);
				w.num_sge = split_sges(&p.a, dst, len, ss);
				w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + src;
			} else {
				fill(h_data(&p.a) + src, len, len + 1);
				memset(h_data(&p.b) + dst, 0, len);
				w.num_sge = split_sges(&p.a, src, len, ss);
				w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + dst;
			}
			w.sg_list = ss;
			w.wr.rdma.rkey = p.b.mr->rkey;
			w.imm_data = 0xA1B2C3D4u + (uint32_t)k;
			if (op == XR_WR_SEND_WITH_INV) {
				/* b hands a a type-2 window's key; a invalidates it. */
				inv_mw = bind_type2(&p, &p.b, &inv_mr);
				w.invalidate_rkey = inv_mw->rkey;
			}
			if (recv) {
				r.num_sge = split_sges(&p.b, dst, len ? len : 1, rs);
				r.sg_list = rs;
				assert_int_equal(xr_post_recv(p.b.qp[0], &r, NULL), 0);
			}
			assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
			expect_wc(&p, &p.a, w.wr_id, XR_WC_SUCCESS,
				  op == XR_WR_RDMA_READ ? XR_WC_RDMA_READ :
				  (op == XR_WR_RDMA_WRITE || op == XR_WR_RDMA_WRITE_WITH_IMM) ? XR_WC_RDMA_WRITE : XR_WC_SEND,
				  what);
			if (recv) {
				struct xr_wc wc;
				if (!h_wait(&p, &p.b, &wc, 5000))
					fail_msg("%s: no receive completion", what);
				assert_int_equal(wc.status, XR_WC_SUCCESS);
				assert_int_equal(wc.wr_id, r.wr_id);
				assert_int_equal(wc.byte_len, len);
				assert_int_equal(wc.qp_num, xr_qp_num(p.b.qp[0]));
				if (op == XR_WR_RDMA_WRITE_WITH_IMM) {
					assert_int_equal(wc.opcode, XR_WC_RECV_RDMA_WITH_IMM);
					assert_true(wc.wc_flags & XR_WC_WITH_IMM);
					assert_int_equal(wc.imm_data, w.imm_data);
				} else {
					assert_int_equal(wc.opcode, XR_WC_RECV);
				}
				if (op == XR_WR_SEND_WITH_IMM) {
					assert_true(wc.wc_flags & XR_WC_WITH_IMM);
					assert_int_equal(wc.imm_data, w.imm_data);
				}
				if (op == XR_WR_SEND_WITH_INV) {
					assert_true(wc.wc_flags & XR_WC_WITH_INV);
					assert_int_equal(wc.imm_data, inv_mw->rkey);
				}
			}
			(void)from;
			(void)to;
			if (op == XR_WR_RDMA_READ)
				assert_memory_equal(h_data(&p.a) + dst, h_data(&p.b) + src, len);
			else
				assert_memory_equal(h_data(&p.b) + dst, h_data(&p.a) + src, len);
			if (inv_mw) {
				/* The invalidated key is refused from now on. */
				struct xr_sge s1 = { (uintptr_t)h_data(&p.a), 8, p.a.mr->lkey };
				struct xr_send_wr rd = { .wr_id = 9, .sg_list = &s1, .num_sge = 1,
							 .opcode = XR_WR_RDMA_READ, .send_flags = XR_SEND_SIGNALED };
				rd.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
				rd.wr.rdma.rkey = inv_mw->rkey;
				/* Invalidated: the window no longer holds its region. */
				assert_int_equal(xr_dereg_mr(inv_mr), 0);
				if (k + 1 == sizeof(sizes) / sizeof(sizes[0])) {
					assert_int_equal(xr_post_send(p.a.qp[0], &rd, NULL), 0);
					expect_wc(&p, &p.a, 9, XR_WC_REM_ACCESS_ERR, XR_WC_RDMA_READ, what);
				}
				xr_dealloc_mw(inv_mw);
			}
		}
		assert_true(h_guards_ok(&p.a));
		assert_true(h_guards_ok(&p.b));
		h_close(&p);
	}
}

static void test_send(void **s) { (void)s; run_op_matrix(XR_WR_SEND); }
static void test_send_imm(void **s) { (void)s; run_op_matrix(XR_WR_SEND_WITH_IMM); }
static void test_send_inv(void **s) { (void)s; run_op_matrix(XR_WR_SEND_WITH_INV); }
static void test_write(void **s) { (void)s; run_op_matrix(XR_WR_RDMA_WRITE); }
static void test_write_imm(void **s) { (void)s; run_op_matrix(XR_WR_RDMA_WRITE_WITH_IMM); }
static void test_read(void **s) { (void)s; run_op_matrix(XR_WR_RDMA_READ); }

/* C6: a type-2 window grants access only to the QP that bound it. b binds
 * one on its QP 0; a READ through it arrives on b's QP 1 (same PD) and is
 * refused (REM_ACCESS_ERR), the same READ on QP 0 succeeds. */
static void test_type2_window_serves_only_its_qp(void **state)
{
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_mr *mr;
	struct xr_mw *mw;
	struct xr_sge s;
	struct xr_send_wr rd = { .num_sge = 1, .opcode = XR_WR_RDMA_READ, .send_flags = XR_SEND_SIGNALED };

	(void)state;
	o.nqp = 2;
	assert_int_equal(h_open(&p, &o), 0);
	mw = bind_type2(&p, &p.b, &mr);
	fill(h_data(&p.b), 64, 7);
	memset(h_data(&p.a) + 8192, 0, 64);
	s = (struct xr_sge){ (uintptr_t)h_data(&p.a) + 8192, 64, p.a.mr->lkey };
	rd.sg_list = &s;
	rd.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
	rd.wr.rdma.rkey = mw->rkey;
	rd.wr_id = 1;
	assert_int_equal(xr_post_send(p.a.qp[1], &rd, NULL), 0);
	expect_wc(&p, &p.a, 1, XR_WC_REM_ACCESS_ERR, XR_WC_RDMA_READ, "window bound on another QP");
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(h_data(&p.a)[8192 + i], 0);
	rd.wr_id = 2;
	assert_int_equal(xr_post_send(p.a.qp[0], &rd, NULL), 0);
	expect_wc(&p, &p.a, 2, XR_WC_SUCCESS, XR_WC_RDMA_READ, "window on the QP that bound it");
	assert_memory_equal(h_data(&p.a) + 8192, h_data(&p.b), 64);
	assert_int_equal(xr_dealloc_mw(mw), 0);
	assert_int_equal(xr_dereg_mr(mr), 0);
	h_close(&p);
}

static void test_atomics(void **state)
{
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_1024);
	uint64_t *target, *result;
	struct xr_sge s;
	struct xr_send_wr w = { .num_sge = 1, .send_flags = XR_SEND_SIGNALED };

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	target = (uint64_t *)(void *)(h_data(&p.b) + 4096);
	result = (uint64_t *)(void *)(h_data(&p.a) + 8192);
	*target = 100;
	s = (struct xr_sge){ (uintptr_t)result, 8, p.a.mr->lkey };
	w.sg_list = &s;
	w.wr.atomic.remote_addr = (uintptr_t)target;
	w.wr.atomic.rkey = p.b.mr->rkey;
	/* fetch-and-add */
	w.opcode = XR_WR_ATOMIC_FETCH_AND_ADD;
	w.wr.atomic.compare_add = 5;
	w.wr_id = 1;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	expect_wc(&p, &p.a, 1, XR_WC_SUCCESS, XR_WC_FETCH_ADD, "fetch_add");
	assert_int_equal(*result, 100);
	assert_int_equal(*target, 105);
	/* compare-and-swap: a miss leaves memory alone, a hit swaps */
	w.opcode = XR_WR_ATOMIC_CMP_AND_SWP;
	w.wr.atomic.compare_add = 7;
	w.wr.atomic.swap = 999;
	w.wr_id = 2;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	expect_wc(&p, &p.a, 2, XR_WC_SUCCESS, XR_WC_COMP_SWAP, "cmp_swap miss");
	assert_int_equal(*result, 105);
	assert_int_equal(*target, 105);
	w.wr.atomic.compare_add = 105;
	w.wr_id = 3;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	expect_wc(&p, &p.a, 3, XR_WC_SUCCESS, XR_WC_COMP_SWAP, "cmp_swap hit");
	assert_int_equal(*result, 105);
	assert_int_equal(*target, 999);
	/* misaligned: refused by post_send, nothing sent (A38; the
	 * responder's NAK for a peer's misaligned atomic: a37 scripts) */
	w.wr.atomic.remote_addr = (uintptr_t)target + 4;
	w.wr_id = 4;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), EINVAL);
	h_progress(&p);
	{
		struct xr_wc wc;
		assert_int_equal(xr_poll_cq(p.a.cq, 1, &wc), 0);
	}
	assert_int_equal(cnt(&p.b, XR_CNT_TX_NAK_INV_REQ), 0);
	assert_int_equal(*target, 999);
	assert_true(h_guards_ok(&p.a) && h_guards_ok(&p.b));
	h_close(&p);
}

/* A QP asking for one send and one receive WR (ibv_rc_pingpong does) gets
 * rings that work: the engine reads log size 0 as "no queue", so the
 * driver's smallest ring is two entries, and says so in the caps. */
static void test_one_entry_queues(void **state)
{
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_qp_attr qa;
	struct xr_qp_init_attr init;

	(void)state;
	o.sq_depth = 1;
	o.rq_depth = 1;
	assert_int_equal(h_open(&p, &o), 0);
	assert_int_equal(xr_query_qp(p.a.qp[0], &qa, XR_QP_CAP, &init), 0);
	assert_true(init.cap.max_send_wr >= 1 && init.cap.max_recv_wr >= 1);
	for (uint64_t i = 1; i <= 5; i++) {
		struct xr_sge rs = { (uintptr_t)h_data(&p.b), 64, p.b.mr->lkey };
		struct xr_recv_wr r = { .wr_id = 100 + i, .sg_list = &rs, .num_sge = 1 };
		struct xr_sge ss = { (uintptr_t)h_data(&p.a), 64, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = i, .sg_list = &ss, .num_sge = 1, .opcode = XR_WR_SEND,
					.send_flags = XR_SEND_SIGNALED };
		h_data(&p.a)[0] = (uint8_t)i;
		assert_int_equal(xr_post_recv(p.b.qp[0], &r, NULL), 0);
		assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
		expect_wc(&p, &p.a, i, XR_WC_SUCCESS, XR_WC_SEND, "send on a one-entry SQ");
		expect_wc(&p, &p.b, 100 + i, XR_WC_SUCCESS, XR_WC_RECV, "receive on a one-entry RQ");
		assert_int_equal(h_data(&p.b)[0], i);
	}
	h_close(&p);
}

/* Inline data, unsignaled WQEs, LOCAL_INV, many WQEs in flight. */
static void test_inline_unsignaled_local_inv(void **state)
{
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_256);
	struct xr_sge s = { 0, 100, 0 };
	struct xr_send_wr w = { .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE };
	struct xr_mr *extra;
	uint8_t msg[100];
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	fill(msg, sizeof(msg), 5);
	s.addr = (uintptr_t)msg;   /* not registered: inline needs no key */
	w.send_flags = XR_SEND_INLINE;
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + 64;
	w.wr.rdma.rkey = p.b.mr->rkey;
	for (int i = 0; i < 99; i++) {
		w.wr_id = (uint64_t)i;
		assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	}
	w.send_flags = XR_SEND_INLINE | XR_SEND_SIGNALED;
	w.wr_id = 99;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	memset(msg, 0, sizeof(msg));   /* the caller's buffer is free at once */
	expect_wc(&p, &p.a, 99, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "inline");
	fill(msg, sizeof(msg), 5);
	assert_memory_equal(h_data(&p.b) + 64, msg, 100);
	assert_int_equal(xr_poll_cq(p.a.cq, 1, &wc), 0);   /* unsignaled: no CQEs */
	/* LOCAL_INV of a type-2 window b bound: b's own LOCAL_INV frees it,
	 * and a's later use of its key fails (REM_ACCESS_ERR). LOCAL_INV of
	 * an ordinary region would fail (c10 script). */
	{
		struct xr_mw *mw = bind_type2(&p, &p.b, &extra);
		struct xr_send_wr li = { .wr_id = 50, .opcode = XR_WR_LOCAL_INV, .send_flags = XR_SEND_SIGNALED,
					 .invalidate_rkey = mw->rkey };
		struct xr_sge s1 = { (uintptr_t)h_data(&p.a) + 65536, 16, p.a.mr->lkey };
		struct xr_send_wr rd = { .wr_id = 51, .sg_list = &s1, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
					 .send_flags = XR_SEND_SIGNALED };
		/* Bound: the region cannot go while the window holds it. */
		assert_int_equal(xr_dereg_mr(extra), EBUSY);
		rd.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
		rd.wr.rdma.rkey = mw->rkey;
		assert_int_equal(xr_post_send(p.a.qp[0], &rd, NULL), 0);
		expect_wc(&p, &p.a, 51, XR_WC_SUCCESS, XR_WC_RDMA_READ, "read through the window");
		assert_int_equal(xr_post_send(p.b.qp[0], &li, NULL), 0);
		expect_wc(&p, &p.b, 50, XR_WC_SUCCESS, XR_WC_LOCAL_INV, "local_inv");
		rd.wr_id = 52;
		assert_int_equal(xr_post_send(p.a.qp[0], &rd, NULL), 0);
		expect_wc(&p, &p.a, 52, XR_WC_REM_ACCESS_ERR, XR_WC_RDMA_READ, "read through an invalidated window");
		assert_int_equal(xr_dereg_mr(extra), 0);
		assert_int_equal(xr_dealloc_mw(mw), 0);
	}
	h_close(&p);
}

/* ---- refusals ---- */

struct refusal {
	const char *what;
	enum xr_wr_opcode op;
	int mr_access;            /* access of the target MR (0: all) */
	int qp_access;            /* responder QP access (0: all) */
	int key;                  /* 0 good, 1 garbage, 2 stale, 3 out of bounds */
	enum xr_wc_status want;
	enum xr_counter counter;
	uint8_t nak;              /* counter of the NAK the responder sent */
};

static void test_refusals(void **state)
{
	static const struct refusal cases[] = {
		{ "bad rkey write", XR_WR_RDMA_WRITE, 0, 0, 1, XR_WC_REM_ACCESS_ERR, XR_CNT_RKEY_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "stale rkey read", XR_WR_RDMA_READ, 0, 0, 2, XR_WC_REM_ACCESS_ERR, XR_CNT_RKEY_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "out of bounds write", XR_WR_RDMA_WRITE, 0, 0, 3, XR_WC_REM_ACCESS_ERR, XR_CNT_BOUNDS_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "out of bounds read", XR_WR_RDMA_READ, 0, 0, 3, XR_WC_REM_ACCESS_ERR, XR_CNT_BOUNDS_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "MR lacks remote write", XR_WR_RDMA_WRITE, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ, 0, 0,
		  XR_WC_REM_ACCESS_ERR, XR_CNT_PERM_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "MR lacks remote read", XR_WR_RDMA_READ, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0, 0,
		  XR_WC_REM_ACCESS_ERR, XR_CNT_PERM_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "MR lacks remote atomic", XR_WR_ATOMIC_FETCH_AND_ADD, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0, 0,
		  XR_WC_REM_ACCESS_ERR, XR_CNT_PERM_VIOLATION, XR_CNT_TX_NAK_REM_ACCESS },
		{ "QP lacks remote read", XR_WR_RDMA_READ, 0, XR_ACCESS_REMOTE_WRITE, 0,
		  XR_WC_REM_INV_REQ_ERR, XR_CNT_PERM_VIOLATION, XR_CNT_TX_NAK_INV_REQ },
		{ "QP lacks remote write", XR_WR_RDMA_WRITE, 0, XR_ACCESS_REMOTE_READ, 0,
		  XR_WC_REM_INV_REQ_ERR, XR_CNT_PERM_VIOLATION, XR_CNT_TX_NAK_INV_REQ },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct refusal *c = &cases[i];
		struct pair p;
		struct h_opts o = base_opts(XR_MTU_1024);
		struct xr_mr *target;
		struct xr_sge s;
		struct xr_send_wr w = { .wr_id = 1, .num_sge = 1, .opcode = c->op, .send_flags = XR_SEND_SIGNALED };
		struct xr_send_wr w2 = w;
		uint8_t before[8192];
		struct xr_qp_attr a;

		assert_int_equal(h_open(&p, &o), 0);
		if (c->qp_access) {
			memset(&a, 0, sizeof(a));
			a.qp_access_flags = (unsigned)c->qp_access;
			assert_int_equal(xr_modify_qp(p.b.qp[0], &a, XR_QP_ACCESS_FLAGS), 0);
		}
		target = xr_reg_mr(p.b.pd, h_data(&p.b) + 8192, 8192,
				   c->mr_access ? c->mr_access : 0xF);
		assert_non_null(target);
		fill(h_data(&p.b) + 8192, 8192, 3);
		memcpy(before, h_data(&p.b) + 8192, 8192);
		s = (struct xr_sge){ (uintptr_t)h_data(&p.a), c->op >= XR_WR_ATOMIC_CMP_AND_SWP ? 8 : 4096, p.a.mr->lkey };
		w.sg_list = &s;
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + 8192;
		w.wr.rdma.rkey = target->rkey;
		if (c->op >= XR_WR_ATOMIC_CMP_AND_SWP) {
			w.wr.atomic.remote_addr = (uintptr_t)h_data(&p.b) + 8192;
			w.wr.atomic.rkey = target->rkey;
		}
		if (c->key == 1)
			w.wr.rdma.rkey = 0x777777u;
		if (c->key == 2) {
			uint32_t stale = target->rkey;
			xr_dereg_mr(target);
			target = xr_reg_mr(p.b.pd, h_data(&p.b) + 8192, 8192, 0xF);   /* same index, new variant */
			assert_non_null(target);
			assert_int_not_equal(target->rkey, stale);
			w.wr.rdma.rkey = stale;
		}
		if (c->key == 3)
			w.wr.rdma.remote_addr += 8192 - 100;   /* 4096 bytes from 100 before the end */
		assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
		/* A second WQE behind it is flushed. */
		w2.wr_id = 2;
		w2.sg_list = &s;
		w2.opcode = XR_WR_RDMA_WRITE;
		w2.wr.rdma = w.wr.rdma;
		assert_int_equal(xr_post_send(p.a.qp[0], &w2, NULL), 0);
		expect_wc(&p, &p.a, 1, c->want, 0, c->what);
		expect_wc(&p, &p.a, 2, XR_WC_WR_FLUSH_ERR, 0, c->what);
		if (cnt(&p.b, c->counter) != 1)
			fail_msg("%s: counter %s = %llu", c->what, xr_counter_name(c->counter),
				 (unsigned long long)cnt(&p.b, c->counter));
		assert_int_equal(cnt(&p.b, c->nak), 1);
		/* Memory behind the refusal is untouched, and so are the guards. */
		assert_memory_equal(h_data(&p.b) + 8192, before, 8192);
		assert_true(h_guards_ok(&p.a) && h_guards_ok(&p.b));
		/* Both QPs end in ERR: the requester from the NAK, the responder from the fatal error. */
		assert_int_equal(xr_query_qp(p.a.qp[0], &a, 0, NULL), 0);
		assert_int_equal(a.qp_state, XR_QPS_ERR);
		assert_int_equal(xr_query_qp(p.b.qp[0], &a, 0, NULL), 0);
		assert_int_equal(a.qp_state, XR_QPS_ERR);
		xr_dereg_mr(target);
		h_close(&p);
	}
}

/* Raw packets at a responder: opcode sequence errors and a QP not ready. */
static void test_opcode_sequence_and_state(void **state)
{
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_256);
	struct xr_qp_attr a;
	struct xr_pkt pk;
	struct xr_frame *f;
	uint8_t payload[256] = { 0 };
	xr_gid ga, gb;

	(void)state;
	o.mode = XR_PROGRESS_INLINE;   /* the test drives the engines */
	assert_int_equal(h_open(&p, &o), 0);
	assert_int_equal(xr_query_qp(p.b.qp[0], &a, 0, NULL), 0);
	xr_query_gid(p.a.ctx, &ga);
	xr_query_gid(p.b.ctx, &gb);
	/* A WRITE_MIDDLE with no FIRST before it, at the expected PSN. */
	xr_pkt_init(&pk, XR_OP_RC_RDMA_WRITE_MIDDLE);
	memcpy(pk.smac, p.la->mac, 6);
	xr_link_resolve(p.la, &gb, pk.dmac);
	pk.sgid = ga;
	pk.dgid = gb;
	pk.dqpn = xr_qp_num(p.b.qp[0]);
	pk.psn = a.rq_psn;
	pk.payload = payload;
	pk.payload_len = 256;
	f = xr_link_frame_alloc(p.la);
	f->len = (uint16_t)xr_pkt_build(&pk, f->data, sizeof(f->data));
	assert_int_equal(xr_link_send(p.la, &f, 1), 1);
	for (int i = 0; i < 10; i++)
		h_progress(&p);
	assert_int_equal(cnt(&p.b, XR_CNT_TX_NAK_INV_REQ), 1);
	assert_int_equal(cnt(&p.a, XR_CNT_RX_NAK_INV_REQ), 0);   /* no WQE was waiting for it */
	assert_int_equal(xr_query_qp(p.b.qp[0], &a, 0, NULL), 0);
	assert_int_equal(a.qp_state, XR_QPS_ERR);
	/* A packet for a QP that is not ready (reset to RESET, then INIT) is dropped and counted. */
	a.qp_state = XR_QPS_RESET;
	assert_int_equal(xr_modify_qp(p.b.qp[0], &a, XR_QP_STATE), 0);
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = 0xE;
	assert_int_equal(xr_modify_qp(p.b.qp[0], &a, XR_QP_STATE | XR_QP_PORT | XR_QP_PKEY_INDEX | XR_QP_ACCESS_FLAGS), 0);
	pk.opcode = XR_OP_RC_SEND_ONLY;
	f = xr_link_frame_alloc(p.la);
	f->len = (uint16_t)xr_pkt_build(&pk, f->data, sizeof(f->data));
	assert_int_equal(xr_link_send(p.la, &f, 1), 1);
	for (int i = 0; i < 10; i++)
		h_progress(&p);
	assert_int_equal(cnt(&p.b, XR_CNT_DROP_BAD_STATE), 1);
	/* Corrupted frames are counted by reason. */
	f = xr_link_frame_alloc(p.la);
	f->len = (uint16_t)xr_pkt_build(&pk, f->data, sizeof(f->data));
	f->data[f->len - 10] ^= 0x40;
	assert_int_equal(xr_link_send(p.la, &f, 1), 1);
	for (int i = 0; i < 10; i++)
		h_progress(&p);
	assert_int_equal(cnt(&p.b, XR_CNT_PARSE_BAD_ICRC), 1);
	h_close(&p);
}

static void test_modify_qp_rules(void **state)
{
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_qp_init_attr ia = { .send_cq = NULL };
	struct xr_qp *q;
	struct xr_qp_attr a;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	ia.send_cq = ia.recv_cq = p.a.cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	q = xr_create_qp(p.a.pd, &ia);
	assert_non_null(q);
	memset(&a, 0, sizeof(a));
	/* RESET -> RTR: not a transition */
	a.qp_state = XR_QPS_RTR;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), EINVAL);
	/* RESET -> INIT without its required attributes */
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PORT), EINVAL);
	/* with an attribute the transition does not take */
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PORT | XR_QP_PKEY_INDEX |
					     XR_QP_ACCESS_FLAGS | XR_QP_SQ_PSN), EINVAL);
	/* bad port */
	a.port_num = 2;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PORT | XR_QP_PKEY_INDEX | XR_QP_ACCESS_FLAGS), EINVAL);
	a.port_num = 1;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PORT | XR_QP_PKEY_INDEX | XR_QP_ACCESS_FLAGS), 0);
	/* RESET -> ERR is not allowed, INIT -> ERR is */
	/* INIT -> RTR: MTU out of range, missing GRH, alternate path */
	a.qp_state = XR_QPS_RTR;
	a.path_mtu = 6;
	a.ah_attr.is_global = 1;
	xr_query_gid(p.b.ctx, &a.ah_attr.grh.dgid);
	int rtr = XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
		  XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER;
	assert_int_equal(xr_modify_qp(q, &a, rtr), EINVAL);
	/* G3: no larger than the port's active MTU, what the link carries:
	 * a 1500-byte link takes 1024-byte packets, not 2048 */
	{
		uint32_t link_mtu = p.la->mtu;
		p.la->mtu = 1500;
		assert_int_equal(xr_active_mtu(p.a.ctx), XR_MTU_1024);
		/* 1024 + IPv6 40 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + ICRC 4:
		 * a WRITE_ONLY_WITH_IMM of 1024 bytes needs a 1108-byte IP MTU */
		p.la->mtu = 1107;
		assert_int_equal(xr_active_mtu(p.a.ctx), XR_MTU_512);
		p.la->mtu = 1108;
		assert_int_equal(xr_active_mtu(p.a.ctx), XR_MTU_1024);
		p.la->mtu = 1500;
		a.path_mtu = XR_MTU_2048;
		assert_int_equal(xr_modify_qp(q, &a, rtr), EINVAL);
		p.la->mtu = link_mtu;
	}
	a.path_mtu = XR_MTU_1024;
	a.ah_attr.is_global = 0;
	assert_int_equal(xr_modify_qp(q, &a, rtr), EINVAL);
	a.ah_attr.is_global = 1;
	assert_int_equal(xr_modify_qp(q, &a, rtr | XR_QP_ALT_PATH), EINVAL);
	a.max_dest_rd_atomic = 200;
	assert_int_equal(xr_modify_qp(q, &a, rtr), EINVAL);
	a.max_dest_rd_atomic = 4;
	assert_int_equal(xr_modify_qp(q, &a, rtr & ~XR_QP_RQ_PSN), EINVAL);
	assert_int_equal(xr_modify_qp(q, &a, rtr), 0);
	/* posting before RTS is refused */
	{
		struct xr_sge s = { (uintptr_t)h_data(&p.a), 8, p.a.mr->lkey };
		struct xr_send_wr w = { .sg_list = &s, .num_sge = 1, .opcode = XR_WR_SEND }, *bad = NULL;
		assert_int_equal(xr_post_send(q, &w, &bad), EINVAL);
		assert_ptr_equal(bad, &w);
	}
	/* RTR -> RTS needs its five attributes; retry_cnt above 7 is refused */
	a.qp_state = XR_QPS_RTS;
	a.retry_cnt = 8;
	int rts = XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY | XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC;
	assert_int_equal(xr_modify_qp(q, &a, rts), EINVAL);
	a.retry_cnt = 7;
	a.timeout = 32;   /* G3: the timeout exponent is five bits */
	assert_int_equal(xr_modify_qp(q, &a, rts), EINVAL);
	a.timeout = 0;
	assert_int_equal(xr_modify_qp(q, &a, rts & ~XR_QP_TIMEOUT), EINVAL);
	assert_int_equal(xr_modify_qp(q, &a, rts), 0);
	/* CUR_STATE must match */
	a.cur_qp_state = XR_QPS_INIT;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_CUR_STATE), EINVAL);
	/* SQD and back; ERR; RESET; ERR from RESET refused */
	a.qp_state = XR_QPS_SQD;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	/* SQD -> SQD takes PORT, not CUR_STATE (the kernel's qp_state_table) */
	a.cur_qp_state = XR_QPS_SQD;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_CUR_STATE), EINVAL);
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PORT), 0);
	a.qp_state = XR_QPS_RTS;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	a.qp_state = XR_QPS_ERR;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	a.qp_state = XR_QPS_RESET;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), 0);
	a.qp_state = XR_QPS_ERR;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE), EINVAL);
	assert_int_equal(xr_destroy_qp(q), 0);
	/* bad create attributes */
	ia.cap.max_send_sge = 99;
	assert_null(xr_create_qp(p.a.pd, &ia));
	assert_int_equal(errno, EINVAL);
	/* bad MR registrations */
	assert_null(xr_reg_mr(p.a.pd, h_data(&p.a), 100, XR_ACCESS_REMOTE_WRITE));
	assert_null(xr_reg_mr(p.a.pd, h_data(&p.a), 100, 0x100));
	h_close(&p);
}

/* ---- link wrappers ---- */

/* The same seed makes the same faults: a failing run replays exactly. */
static void test_fault_wrapper_is_reproducible(void **state)
{
	struct xr_fault_stats st[2];
	uint8_t seen[2][600];

	(void)state;
	memset(seen, 0, sizeof(seen));
	for (int run = 0; run < 2; run++) {
		struct xr_link *a, *b, *fa;
		struct xr_fault_cfg c = { .seed = 1234, .drop = 0.1, .duplicate = 0.1, .reorder = 0.1, .corrupt = 0.1 };
		int got = 0;
		assert_int_equal(xr_link_mem_pair(&a, &b, 0), 0);
		fa = xr_link_fault(a, &c);
		assert_non_null(fa);
		for (int i = 0; i < 500; i++) {
			struct xr_frame *f = xr_link_frame_alloc(fa);
			f->len = 64;
			memset(f->data, i & 0xFF, 64);
			assert_int_equal(xr_link_send(fa, &f, 1), 1);
		}
		for (;;) {
			struct xr_frame *f[32];
			int n = xr_link_recv(b, f, 32);
			if (n <= 0)
				break;
			for (int k = 0; k < n; k++) {
				if (got < 600)
					seen[run][got] = f[k]->data[0] ^ f[k]->data[63];
				got++;
				xr_link_frame_free(b, f[k]);
			}
		}
		xr_link_fault_stats(fa, &st[run]);
		assert_true(st[run].dropped > 20 && st[run].duplicated > 20 && st[run].corrupted > 20);
		xr_link_close(fa);
		xr_link_close(b);
	}
	assert_memory_equal(&st[0], &st[1], sizeof(st[0]));
	assert_memory_equal(seen[0], seen[1], sizeof(seen[0]));
	{
		struct xr_link *a, *b;
		struct xr_fault_cfg bad = { .drop = 1.5 };
		assert_int_equal(xr_link_mem_pair(&a, &b, 0), 0);
		assert_null(xr_link_fault(a, &bad));
		xr_link_close(a);
		xr_link_close(b);
	}
}

/* WRITEs in tally[0], ACKs in tally[1]. */
static void count_op(const struct xr_pkt *pk, void *arg)
{
	unsigned *tally = arg;

	tally[0] += (pk->op->flags & XR_OPF_WRITE) != 0;
	tally[1] += (pk->op->flags & XR_OPF_ACK) != 0;
}

/* The pcap tap records every frame both ways, as valid RoCE v2. */
static void test_pcap_tap(void **state)
{
	char path[64];
	struct pair p;
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_sge s;
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	unsigned frames, tally[2] = { 0, 0 };

	(void)state;
	/* It counts frames: an engine thread kept off its core past a 17 ms
	 * ACK timeout (a loaded CI under ASan) would rightly send the WRITE
	 * again (it did once: 10 WRITE frames). A second's timeout. */
	o.timeout = 18;
	snprintf(path, sizeof(path), "/tmp/xroce-tap-%d.pcap", (int)getpid());
	memset(&p, 0, sizeof(p));
	p.mode = MODE;
	assert_int_equal(xr_link_mem_pair(&p.la, &p.lb, 0), 0);
	p.la = xr_link_pcap_tap(p.la, path);
	assert_non_null(p.la);
	assert_int_equal(h_end_open(&p.a, p.la, "10.0.0.1", &o), 0);
	assert_int_equal(h_end_open(&p.b, p.lb, "10.0.0.2", &o), 0);
	assert_int_equal(h_connect(p.a.qp[0], p.b.qp[0], p.b.ctx, &o, 1, 2), 0);
	assert_int_equal(h_connect(p.b.qp[0], p.a.qp[0], p.a.ctx, &o, 2, 1), 0);
	s = (struct xr_sge){ (uintptr_t)h_data(&p.a), 5000, p.a.mr->lkey };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
	w.wr.rdma.rkey = p.b.mr->rkey;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	expect_wc(&p, &p.a, 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "tapped write");
	h_close(&p);   /* closes the tap: the file is complete */
	frames = h_tapped_frames(path, count_op, tally);
	assert_int_equal(tally[0], 5);   /* WRITEs: 5000 bytes at MTU 1024, FIRST, 3 MIDDLE, LAST */
	assert_int_equal(tally[1], 1);   /* ACKs */
	assert_int_equal(frames, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_send), BOTH(test_send_imm), BOTH(test_send_inv), BOTH(test_write),
		BOTH(test_write_imm), BOTH(test_read), BOTH(test_atomics), BOTH(test_type2_window_serves_only_its_qp),
		BOTH(test_inline_unsignaled_local_inv), BOTH(test_refusals),
		cmocka_unit_test(test_opcode_sequence_and_state), BOTH(test_modify_qp_rules), BOTH(test_one_entry_queues),
		cmocka_unit_test(test_fault_wrapper_is_reproducible), BOTH(test_pcap_tap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
