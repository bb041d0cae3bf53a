/* SPDX-License-Identifier: MIT */
/*
 * Doorbells a host could not have rung. A send queue's index that goes
 * back, or names more WQEs than the ring holds past the oldest not
 * completed, made the engine run the ring around: it started WQEs it had
 * finished, again (a WRITE's data sent twice, from a buffer its owner had
 * reused). The send doorbell takes no lock, so the engine checks the
 * index when it reads it: the send queue fails (RC: ERR), the refusal is
 * counted, what the doorbells before it posted is flushed, nothing runs
 * again. The receive and CQ doorbells answer SLVERR (the receive one
 * without a lock: an index it let pass that the engine finds behind a
 * WQE it took reads as nothing posted).
 * And the driver's own indexes: completions of a QP's life before a RESET
 * or a destroy, polled later, must free no slot of the new ring.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "nic/test_hooks.h"
#include "rc_checks.h"
#include "refusing_regio.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"

#define MSG 64u
#define SQ_DEPTH 8u

int test_store_rq_pi(struct xr_engine *e, uint32_t qpn, uint16_t pi);   /* qp_poke.c */
unsigned test_busy_qps(struct xr_engine *e);

static struct pair P;
static bool open_;

/* A signaled MSG-byte WRITE from a's slot i to b's slot i. */
static void post_write(struct pair *p, unsigned i, uint64_t id)
{
	post_write_at(p, 0, MSG * i, MSG, id);
}

static struct pair *open_pair(void)
{
	struct h_opts o = base_opts(XR_MTU_1024);

	o.sq_depth = SQ_DEPTH;
	o.rq_depth = SQ_DEPTH;
	assert_int_equal(h_open(&P, &o), 0);
	open_ = true;
	return &P;
}

static int teardown(void **state)
{
	(void)state;
	xr_qp_commit_hook = NULL;   /* a failed check may have left it set */
	refuse_no_more();
	if (open_)
		h_close(&P);
	open_ = false;
	return 0;
}

static enum xr_axi_resp ring_sq(struct pair *p, uint32_t pi)
{
	return xr_engine_reg_write(xr_context_engine(p->a.ctx), XR_REG_DB_SQ + 8 * xr_qp_num(p->a.qp[0]), pi);
}

/* A full ring of WRITEs, done; then a's buffer changes, as a program's
 * does once its WRs completed. */
static uint16_t run_a_ring(struct pair *p)
{
	uint16_t size = (uint16_t)(1u << h_qp_read(&p->a).sq_log_size);

	assert_true(size >= SQ_DEPTH);
	for (unsigned i = 0; i < size; i++) {
		memset(h_data(&p->a) + MSG * i, 0xA0 + (int)i, MSG);
		post_write(p, i, i);
		expect_wc(p, &p->a, i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the first ring");
	}
	memset(h_data(&p->a), 0x55, MSG * size);
	return size;
}

/* The failed queue holds nothing in flight: the engine's passes go idle.
 * Read as the raw index, the refused doorbell kept the QP's tail short
 * of its index for good, so the QP stayed on the busy list, holding its
 * active block, and an engine thread never slept again. */
static void expect_idle(struct pair *p)
{
	struct xr_engine *ea = xr_context_engine(p->a.ctx);
	struct xr_engine_qp_mem m;
	uint64_t until = h_now_ms() + 200;

	do {
		h_progress(p);
		xr_engine_qp_mem(ea, &m);
	} while (m.active && h_now_ms() < until);
	printf("a's engine: %llu QPs active after the refusal\n", (unsigned long long)m.active);
	assert_int_equal(m.active, 0);
}

/* Nothing ran again, nothing completed, the QP failed once. */
static void expect_refused(struct pair *p, uint16_t size, uint64_t wqes_before)
{
	struct xr_wc wc;
	uint64_t until = h_now_ms() + 200;

	while (h_now_ms() < until) {
		h_progress(p);
		if (xr_poll_cq(p->a.cq, 1, &wc) == 1)
			fail_msg("a completion for a doorbell refused: wr_id %llu status %d",
				 (unsigned long long)wc.wr_id, wc.status);
	}
	assert_int_equal(h_qp_read(&p->a).state, XR_QPS_ERR);
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 1);
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_WQES), wqes_before);
	for (unsigned i = 0; i < size; i++)
		for (unsigned k = 0; k < MSG; k++)
			if (h_data(&p->b)[MSG * i + k] != (uint8_t)(0xA0 + i))
				fail_msg("b's slot %u byte %u: 0x%02x, a WRITE ran again", i, k, h_data(&p->b)[MSG * i + k]);
	expect_idle(p);
}

/* The host's own next WR (its index is still the last good one) is
 * flushed: a WR posted is never lost. */
static void expect_next_flushed(struct pair *p)
{
	post_write(p, 0, 777);
	expect_wc(p, &p->a, 777, XR_WC_WR_FLUSH_ERR, XR_WC_RDMA_WRITE, "the next post");
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 1);
}

/* b posts a receive, a SENDs into it: both complete, the data lands. */
static void send_one(struct pair *p, uint64_t id)
{
	struct xr_sge rs = { (uintptr_t)h_data(&p->b), MSG, p->b.mr->lkey };
	struct xr_recv_wr rw = { .wr_id = id, .sg_list = &rs, .num_sge = 1 };
	struct xr_sge ss = { (uintptr_t)h_data(&p->a), MSG, p->a.mr->lkey };
	struct xr_send_wr sw = { .wr_id = id, .sg_list = &ss, .num_sge = 1, .opcode = XR_WR_SEND,
				 .send_flags = XR_SEND_SIGNALED };

	memset(h_data(&p->a), (int)(0x30 + id), MSG);
	assert_int_equal(xr_post_recv(p->b.qp[0], &rw, NULL), 0);
	assert_int_equal(xr_post_send(p->a.qp[0], &sw, NULL), 0);
	expect_wc(p, &p->a, id, XR_WC_SUCCESS, XR_WC_SEND, "the SEND");
	expect_wc(p, &p->b, id, XR_WC_SUCCESS, XR_WC_RECV, "its receive");
	assert_int_equal(h_data(&p->b)[MSG - 1], 0x30 + id);
}

/* One more than the ring holds: the engine ran slots 0.. again (nine
 * WRITEs of 0x55 over b's slots). */
static void test_beyond_the_ring(void **state)
{
	struct pair *p = open_pair();
	uint16_t size = run_a_ring(p);
	uint64_t wqes = h_counter(&p->a, XR_CNT_SQ_WQES);

	(void)state;
	assert_int_equal(ring_sq(p, (uint16_t)(2 * size + 1)), XR_AXI_OKAY);   /* a posted write */
	expect_refused(p, size, wqes);
	expect_next_flushed(p);
}

/* An index that goes back: the engine ran 65,535 WQEs, the ring round
 * and round. */
static void test_going_back(void **state)
{
	struct pair *p = open_pair();
	uint16_t size = run_a_ring(p);
	uint64_t wqes = h_counter(&p->a, XR_CNT_SQ_WQES);

	(void)state;
	assert_int_equal(ring_sq(p, (uint16_t)(size - 1)), XR_AXI_OKAY);
	expect_refused(p, size, wqes);
	expect_next_flushed(p);
}

/* WRs in flight when a bad doorbell lands (the engine read the good
 * doorbells before it and started them): each is flushed once, and
 * nothing else completes. A doorbell overwrites the last: WQEs the host
 * posted after the engine's last read are not known to it once a bad
 * index overwrote theirs. Inline mode only: the passes are the test's. */
static void test_in_flight_are_flushed(void **state)
{
	struct pair *p = open_pair();
	uint16_t size = run_a_ring(p);
	uint64_t wqes;
	struct xr_wc wc;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		post_write(p, size + i, 100 + i);   /* b's slots past the first ring */
	xr_engine_progress(xr_context_engine(p->a.ctx));   /* a sends; b has not answered */
	wqes = h_counter(&p->a, XR_CNT_SQ_WQES);
	assert_true(wqes >= size + 1u);
	/* Too far past the tail now, yet not once the flush has moved the
	 * tail past the three: it must stay refused (the flush completed
	 * old slots, the first WR twice, and the host's next post found its
	 * ring full). */
	assert_int_equal(ring_sq(p, (uint16_t)(2 * size + 1)), XR_AXI_OKAY);
	for (unsigned i = 0; i < 3; i++)
		expect_wc(p, &p->a, 100 + i, XR_WC_WR_FLUSH_ERR, XR_WC_RDMA_WRITE, "in flight at the bad doorbell");
	assert_int_equal(h_wait(p, &p->a, &wc, 200), 0);
	expect_refused(p, size, wqes);
	/* From the new tail (size + 3) the host posts size - 2 WRs in one
	 * call: its doorbell rings the refused value again, and fits now.
	 * Each WR is flushed (they were ignored: the value was refused). */
	{
		struct xr_sge sge = { (uintptr_t)h_data(&p->a), MSG, p->a.mr->lkey };
		struct xr_send_wr w[SQ_DEPTH];
		unsigned n = size - 2u;

		assert_true(n <= SQ_DEPTH);
		for (unsigned i = 0; i < n; i++) {
			w[i] = (struct xr_send_wr){ .wr_id = 500 + i, .sg_list = &sge, .num_sge = 1,
						    .opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED,
						    .next = i + 1 < n ? &w[i + 1] : NULL };
			w[i].wr.rdma.remote_addr = (uintptr_t)h_data(&p->b);
			w[i].wr.rdma.rkey = p->b.mr->rkey;
		}
		assert_int_equal(xr_post_send(p->a.qp[0], w, NULL), 0);
		for (unsigned i = 0; i < n; i++)
			expect_wc(p, &p->a, 500 + i, XR_WC_WR_FLUSH_ERR, XR_WC_RDMA_WRITE, "the refused value rung again");
	}
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 1);
	expect_next_flushed(p);
}

/* A full ring posted at once (the index at the oldest not completed plus
 * the ring's size) is a doorbell the host may ring: all of it runs. */
static void test_a_full_ring_fits(void **state)
{
	struct pair *p = open_pair();
	uint16_t size = run_a_ring(p);

	(void)state;
	for (unsigned i = 0; i < size; i++)
		post_write(p, size + i, 200 + i);   /* no pass between: one doorbell after another */
	for (unsigned i = 0; i < size; i++)
		expect_wc(p, &p->a, 200 + i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "a full ring");
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 0);
	assert_int_equal(h_qp_read(&p->a).state, XR_QPS_RTS);
}

/* A bad doorbell read while WRITEs are being sent again (go-back-N after
 * the ACK timer): nothing more leaves once the QP is in ERR. */
static void test_no_retransmission_after_a_refusal(void **state)
{
	struct pair *p = open_pair();
	uint16_t size = run_a_ring(p);
	struct xr_engine *ea = xr_context_engine(p->a.ctx);
	uint64_t sent;

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		post_write(p, size + i, 300 + i);
	xr_engine_progress(ea);   /* four WRITEs out; b never answers */
	sent = h_counter(&p->a, XR_CNT_TX_PKTS);
	usleep(60 * 1000);        /* the ACK timer (timeout 12: 16.8 ms) runs out */
	assert_int_equal(ring_sq(p, (uint16_t)(2 * size + 5)), XR_AXI_OKAY);
	xr_engine_progress(ea);
	/* At most the one packet sent before the index was read. */
	assert_true(h_counter(&p->a, XR_CNT_TX_PKTS) <= sent + 1);
	assert_int_equal(h_qp_read(&p->a).state, XR_QPS_ERR);
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 1);
}

/* The CQ's consumer index: one past what the engine wrote made the CQ
 * look full for good (the next completion lost, its QP failed). */
static void test_cq_doorbell(void **state)
{
	struct pair *p = open_pair();
	struct xr_engine *ea = xr_context_engine(p->a.ctx);
	uint32_t db = XR_REG_DB_CQ_CI + 8 * xr_cq_num(p->a.cq);
	uint64_t slverr = h_counter(&p->a, XR_CNT_REG_SLVERR);
	uint16_t size = run_a_ring(p);   /* size CQEs written and polled */

	(void)state;
	assert_int_equal(xr_engine_reg_write(ea, db, size + 1u), XR_AXI_SLVERR);   /* past them */
	assert_int_equal(xr_engine_reg_write(ea, db, size - 1u), XR_AXI_SLVERR);   /* back */
	assert_int_equal(xr_engine_reg_write(ea, db, size), XR_AXI_OKAY);
	assert_int_equal(h_counter(&p->a, XR_CNT_REG_SLVERR), slverr + 2);
	post_write(p, 0, 400);
	expect_wc(p, &p->a, 400, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "after the bad consumer indexes");
	assert_int_equal(h_counter(&p->a, XR_CNT_CQ_OVERFLOW), 0);
	assert_int_equal(h_qp_read(&p->a).state, XR_QPS_RTS);
}

/* Three WRs posted, flushed by an ERR, their completions left unpolled. */
static void flush_three_unpolled(struct pair *p)
{
	struct xr_qp_attr err = { .qp_state = XR_QPS_ERR };

	for (unsigned i = 0; i < 3; i++)
		post_write(p, i, 1 + i);
	assert_int_equal(xr_modify_qp(p->a.qp[0], &err, XR_QP_STATE), 0);
	xr_engine_progress(xr_context_engine(p->a.ctx));
}

/* a's QP back from RESET (or new): b's reset too, and the two connected
 * again with SQ_DEPTH rings. */
static void reconnect_after_a_reset(struct pair *p)
{
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };

	assert_int_equal(xr_modify_qp(p->b.qp[0], &rst, XR_QP_STATE), 0);
	o.sq_depth = o.rq_depth = SQ_DEPTH;
	assert_int_equal(h_connect(p->a.qp[0], p->b.qp[0], p->b.ctx, &o, 0x100, 0x200), 0);
	assert_int_equal(h_connect(p->b.qp[0], p->a.qp[0], p->a.ctx, &o, 0x200, 0x100), 0);
}

/* A whole ring of WRITEs posted at once (nothing may be in flight) runs,
 * each completing once. */
static void expect_a_whole_ring_runs(struct pair *p)
{
	uint16_t size = (uint16_t)(1u << h_qp_read(&p->a).sq_log_size);

	for (unsigned i = 0; i < size; i++)
		post_write(p, i, 20 + i);
	for (unsigned i = 0; i < size; i++)
		expect_wc(p, &p->a, 20 + i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the ring after the reset");
}

/* a's QP (new, or back from RESET) connected to b's, reset: three WRs
 * posted, then the old three polled: the ring must still count the new
 * three in flight, taking size - 3 more posts, and all of them run. */
static void expect_old_completions_free_nothing(struct pair *p, uint16_t size, uint32_t qpn)
{
	struct xr_sge sge = { (uintptr_t)h_data(&p->a), MSG, p->a.mr->lkey };
	struct xr_send_wr w = { .sg_list = &sge, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc[3];
	unsigned taken = 0;
	int rc = 0;

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b);
	w.wr.rdma.rkey = p->b.mr->rkey;
	reconnect_after_a_reset(p);
	for (unsigned i = 0; i < 3; i++)
		post_write(p, i, 11 + i);
	/* The old three (a's pass sends the new three; b is still). */
	assert_int_equal(xr_poll_cq(p->a.cq, 3, wc), 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 1 + i);
		assert_int_equal(wc[i].status, XR_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].qp_num, qpn);
	}
	while (taken < 2u * size) {
		w.wr_id = 100 + taken;
		if ((rc = xr_post_send(p->a.qp[0], &w, NULL)) != 0)
			break;
		taken++;
	}
	assert_int_equal(rc, ENOMEM);
	assert_int_equal(taken, size - 3u);
	for (unsigned i = 0; i < 3; i++)
		expect_wc(p, &p->a, 11 + i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the new life's first three");
	for (unsigned i = 0; i < taken; i++)
		expect_wc(p, &p->a, 100 + i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the rest of the ring");
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 0);
}

/* Completions of a QP's life before its RESET, polled after new posts:
 * the driver took their slot numbers for the new ring's, thought its WRs
 * in flight done, and took more posts than the ring holds (the engine
 * then refused the doorbell and failed the QP; before the engine's check,
 * the posts overwrote WQEs in flight). */
static void test_completions_from_before_a_reset(void **state)
{
	struct pair *p = open_pair();
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };

	(void)state;
	flush_three_unpolled(p);
	assert_int_equal(xr_modify_qp(p->a.qp[0], &rst, XR_QP_STATE), 0);
	expect_old_completions_free_nothing(p, (uint16_t)(1u << h_qp_read(&p->a).sq_log_size),
					    xr_qp_num(p->a.qp[0]));
}

/* A poller of another thread while the RESET commits: it must not move
 * the new ring's indexes by an old completion (it ran between the
 * driver's zeroing and its marking: the QP's first post after the reset
 * found its ring full, for good). The commit's hook lets it go and waits
 * for it a while: with the CQ held, it finishes only after the reset. */
static struct race_poller {
	struct xr_cq *cq;
	atomic_int go, done;
	int got;
	struct xr_wc wc[8];
} RP;

static void *race_poll(void *arg)
{
	(void)arg;
	while (!atomic_load(&RP.go))
		sched_yield();
	RP.got = xr_poll_cq(RP.cq, 8, RP.wc);
	atomic_store(&RP.done, 1);
	return NULL;
}

static void let_the_poller_go(void *arg)
{
	uint64_t until = h_now_ms() + 100;

	(void)arg;
	atomic_store(&RP.go, 1);
	while (!atomic_load(&RP.done) && h_now_ms() < until)
		sched_yield();
}

static void test_a_poller_during_the_reset(void **state)
{
	struct pair *p = open_pair();
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };
	pthread_t t;

	(void)state;
	flush_three_unpolled(p);
	memset(&RP, 0, sizeof(RP));
	RP.cq = p->a.cq;
	assert_int_equal(pthread_create(&t, NULL, race_poll, NULL), 0);
	xr_qp_commit_hook = let_the_poller_go;
	assert_int_equal(xr_modify_qp(p->a.qp[0], &rst, XR_QP_STATE), 0);
	xr_qp_commit_hook = NULL;
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(RP.got, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(RP.wc[i].wr_id, 1u + (unsigned)i);
	reconnect_after_a_reset(p);
	expect_a_whole_ring_runs(p);
}

/* A send doorbell the device refuses: the WRs were never the device's,
 * so the post fails (bad: the first) and takes none; it said 0, and
 * they never completed, not even flushed. A window bound twice among
 * them (bind, invalidate, bind) has its key of before the call back;
 * posted, the second bind names the key the first gave it (set after
 * the doorbell, every bind of the list named the old one, and failed). */
static void test_a_refused_send_doorbell_fails_the_post(void **state)
{
	struct pair *p = open_pair();
	struct xr_mr *mr = xr_reg_mr(p->a.pd, h_data(&p->a), 4096,
				     XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_MW_BIND);
	struct xr_mw *mw = xr_alloc_mw(p->a.pd, XR_MW_TYPE_2);
	struct xr_sge s = { (uintptr_t)h_data(&p->a), MSG, p->a.mr->lkey };
	struct xr_send_wr w[4] = { { .wr_id = 800, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				     .send_flags = XR_SEND_SIGNALED, .next = &w[1] },
				   { .wr_id = 801, .opcode = XR_WR_BIND_MW, .send_flags = XR_SEND_SIGNALED, .next = &w[2] },
				   { .wr_id = 802, .opcode = XR_WR_LOCAL_INV, .send_flags = XR_SEND_SIGNALED, .next = &w[3] },
				   { .wr_id = 803, .opcode = XR_WR_BIND_MW, .send_flags = XR_SEND_SIGNALED } };
	struct xr_send_wr *bad = NULL;
	uint32_t key;
	struct xr_wc wc;

	(void)state;
	assert_non_null(mr);
	assert_non_null(mw);
	key = mw->rkey;
	w[0].wr.rdma.remote_addr = (uintptr_t)h_data(&p->b);
	w[0].wr.rdma.rkey = p->b.mr->rkey;
	w[1].bind_mw.mw = mw;
	w[1].bind_mw.rkey = xr_inc_rkey(key);
	w[1].bind_mw.bind_info = (struct xr_mw_bind_info){ mr, (uintptr_t)h_data(&p->a), 4096, XR_ACCESS_REMOTE_READ };
	w[2].invalidate_rkey = xr_inc_rkey(key);
	w[3].bind_mw = w[1].bind_mw;
	w[3].bind_mw.rkey = xr_inc_rkey(xr_inc_rkey(key));
	refuse(&p->a, XR_REG_DB_SQ + 8 * xr_qp_num(p->a.qp[0]), ~0u, XR_AXI_SLVERR);
	assert_int_equal(xr_post_send(p->a.qp[0], w, &bad), EIO);
	refuse_no_more();
	assert_int_equal(RF.refused, 1);
	assert_ptr_equal(bad, &w[0]);
	assert_int_equal(mw->rkey, key);
	/* The ring is as before the call: the next post is the only one
	 * that runs, and nothing of the refused two completes. */
	send_one(p, 1);
	assert_int_equal(h_wait(p, &p->a, &wc, 50), 0);
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 0);
	assert_int_equal(xr_post_send(p->a.qp[0], w, &bad), 0);
	expect_wc(p, &p->a, 800, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the WRITE posted again");
	expect_wc(p, &p->a, 801, XR_WC_SUCCESS, XR_WC_BIND_MW, "the first bind posted again");
	expect_wc(p, &p->a, 802, XR_WC_SUCCESS, XR_WC_LOCAL_INV, "the invalidation");
	expect_wc(p, &p->a, 803, XR_WC_SUCCESS, XR_WC_BIND_MW, "the second bind, of the first's key");
	assert_int_equal(mw->rkey, xr_inc_rkey(xr_inc_rkey(key)));
	assert_int_equal(xr_dealloc_mw(mw), 0);
	assert_int_equal(xr_dereg_mr(mr), 0);
}

/* Posts that raced their QP's RESET: each read the state (RTS) before it
 * took its queue's lock, waited there while the RESET zeroed the ring, and
 * then wrote its WR into the new ring and said 0: a WR on a QP in RESET,
 * never completed, or run in the QP's next life. The commit's hook starts
 * them while the RESET holds the queues; they must be refused. */
static struct race_post {
	struct pair *p;
	atomic_int started;
	int send_rc, recv_rc, made;
	pthread_t t[2];
} RPO;

static void *racing_send(void *arg)
{
	struct xr_sge s = { (uintptr_t)h_data(&RPO.p->a), MSG, RPO.p->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = 66, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };

	(void)arg;
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&RPO.p->b);
	w.wr.rdma.rkey = RPO.p->b.mr->rkey;
	atomic_fetch_add(&RPO.started, 1);
	RPO.send_rc = xr_post_send(RPO.p->a.qp[0], &w, NULL);
	return NULL;
}

static void *racing_recv(void *arg)
{
	struct xr_sge s = { (uintptr_t)h_data(&RPO.p->a), MSG, RPO.p->a.mr->lkey };
	struct xr_recv_wr r = { .wr_id = 67, .sg_list = &s, .num_sge = 1 };

	(void)arg;
	atomic_fetch_add(&RPO.started, 1);
	RPO.recv_rc = xr_post_recv(RPO.p->a.qp[0], &r, NULL);
	return NULL;
}

/* Inside the engine's commit: no cmocka assert here (its jump would
 * leave the commit's locks held); the test checks `made` after. */
static void start_the_posts(void *arg)
{
	uint64_t until = h_now_ms() + 2000;

	(void)arg;
	RPO.made = !pthread_create(&RPO.t[0], NULL, racing_send, NULL);
	RPO.made += !pthread_create(&RPO.t[1], NULL, racing_recv, NULL);
	while (atomic_load(&RPO.started) < RPO.made && h_now_ms() < until)
		sched_yield();
	usleep(20000);   /* past their state checks, to the queues' locks */
}

static void test_posts_racing_a_reset_are_refused(void **state)
{
	struct pair *p = open_pair();
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };
	struct xr_wc wc;

	(void)state;
	send_one(p, 1);
	memset(&RPO, 0, sizeof(RPO));
	RPO.p = p;
	xr_qp_commit_hook = start_the_posts;
	assert_int_equal(xr_modify_qp(p->a.qp[0], &rst, XR_QP_STATE), 0);
	xr_qp_commit_hook = NULL;
	assert_int_equal(RPO.made, 2);
	assert_int_equal(pthread_join(RPO.t[0], NULL), 0);
	assert_int_equal(pthread_join(RPO.t[1], NULL), 0);
	assert_int_equal(RPO.send_rc, EINVAL);
	assert_int_equal(RPO.recv_rc, EINVAL);
	/* The QP's next life starts with empty rings: a whole ring of
	 * WRITEs is taken, each completes once, and nothing else. */
	reconnect_after_a_reset(p);
	expect_a_whole_ring_runs(p);
	assert_int_equal(h_wait(p, &p->a, &wc, 50), 0);
}

/* The same after a destroy: the number goes to the next QP created, and
 * the old QP's completions polled then moved the new QP's indexes. */
static void test_completions_of_a_destroyed_qp(void **state)
{
	struct pair *p = open_pair();
	uint16_t size = (uint16_t)(1u << h_qp_read(&p->a).sq_log_size);
	uint32_t qpn = xr_qp_num(p->a.qp[0]);
	struct xr_qp_init_attr ia;

	(void)state;
	flush_three_unpolled(p);
	assert_int_equal(xr_destroy_qp(p->a.qp[0]), 0);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = p->a.cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = SQ_DEPTH;
	ia.cap.max_send_sge = XR_WQE_BLOCK_SGE;
	ia.cap.max_recv_sge = XR_RWQE_BLOCK_SGE;
	p->a.qp[0] = xr_create_qp(p->a.pd, &ia);
	assert_non_null(p->a.qp[0]);
	assert_int_equal(xr_qp_num(p->a.qp[0]), qpn);   /* else this tests nothing */
	expect_old_completions_free_nothing(p, size, qpn);
}

/* The receive doorbell: SLVERR, nothing changes. */
static void test_receive_doorbell(void **state)
{
	struct pair *p = open_pair();
	struct xr_engine *eb = xr_context_engine(p->b.ctx);
	uint32_t db = XR_REG_DB_RQ + 8 * xr_qp_num(p->b.qp[0]);
	uint16_t size = (uint16_t)(1u << h_qp_read(&p->b).rq_log_size);
	uint64_t slverr = h_counter(&p->b, XR_CNT_REG_SLVERR);

	(void)state;
	assert_int_equal(xr_engine_reg_write(eb, db, size + 1u), XR_AXI_SLVERR);   /* beyond */
	assert_int_equal(xr_engine_reg_write(eb, db, 0xFFFF), XR_AXI_SLVERR);
	send_one(p, 1);   /* b's receive 1 taken */
	assert_int_equal(xr_engine_reg_write(eb, db, 0), XR_AXI_SLVERR);          /* behind it */
	assert_int_equal(xr_engine_reg_write(eb, db, size + 2u), XR_AXI_SLVERR);   /* beyond */
	assert_int_equal(xr_engine_reg_write(eb, db, size + 1u), XR_AXI_OKAY);     /* a full ring fits */
	assert_int_equal(xr_engine_reg_write(eb, db, 1), XR_AXI_OKAY);             /* what b posted */
	assert_int_equal(h_counter(&p->b, XR_CNT_REG_SLVERR), slverr + 4);
	send_one(p, 2);
}

/* A receive doorbell's check raced the engine: the index it let pass is
 * behind a WQE taken meanwhile (here stored directly, as the doorbell
 * does after its check). The engine reads it as nothing posted past the
 * WQEs taken: the SEND waits on RNR, nothing of the ring is taken again.
 * Read as it stood, it would have the engine take the slots up to it
 * around the ring (the SEND landing in a receive the host had posted,
 * then running on into slots never posted). The next doorbell that fits
 * delivers it. */
static void test_a_receive_index_behind_a_taken_wqe(void **state)
{
	struct pair *p = open_pair();
	struct xr_sge rs = { (uintptr_t)h_data(&p->b) + MSG, MSG, p->b.mr->lkey };
	struct xr_recv_wr rw = { .wr_id = 10, .sg_list = &rs, .num_sge = 1 };
	struct xr_sge ss = { (uintptr_t)h_data(&p->a), MSG, p->a.mr->lkey };
	struct xr_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = XR_WR_SEND,
				 .send_flags = XR_SEND_SIGNALED };
	uint64_t rnr = h_counter(&p->b, XR_CNT_TX_RNR_NAK), wqes;
	struct xr_wc wc;

	(void)state;
	send_one(p, 1);   /* b's receive 0 taken and done */
	assert_int_equal(xr_post_recv(p->b.qp[0], &rw, NULL), 0);   /* receive 10 in slot 1: index 2 */
	assert_int_equal(test_store_rq_pi(xr_context_engine(p->b.ctx), xr_qp_num(p->b.qp[0]), 0), 0);   /* behind slot 0 */
	wqes = h_counter(&p->b, XR_CNT_RQ_WQES);
	memset(h_data(&p->a), 0x52, MSG);
	assert_int_equal(xr_post_send(p->a.qp[0], &sw, NULL), 0);
	assert_int_equal(h_wait(p, &p->b, &wc, 100), 0);   /* nothing received */
	assert_true(h_counter(&p->b, XR_CNT_TX_RNR_NAK) > rnr);
	assert_int_equal(h_counter(&p->b, XR_CNT_RQ_WQES), wqes);
	assert_int_equal(xr_engine_reg_write(xr_context_engine(p->b.ctx), XR_REG_DB_RQ + 8 * xr_qp_num(p->b.qp[0]), 2),
			 XR_AXI_OKAY);
	expect_wc(p, &p->b, 10, XR_WC_SUCCESS, XR_WC_RECV, "the receive, once its index fits");
	expect_wc(p, &p->a, 2, XR_WC_SUCCESS, XR_WC_SEND, "the SEND, after RNR");
	assert_int_equal(h_data(&p->b)[2 * MSG - 1], 0x52);
	assert_int_equal(h_counter(&p->b, XR_CNT_RQ_WQES), wqes + 1);
	send_one(p, 3);   /* the ring goes on from there */
}

/* A QP in ERR whose receive ring has a size but no base (a host writing
 * the registers itself; the driver gives both), an index rung: the flush
 * has no ring to complete from, so there is no receive work. It counted
 * as work: the QP stayed on the busy list for good, served by every pass
 * (a progress thread spun). */
static void test_err_without_a_receive_ring_goes_idle(void **state)
{
	struct pair *p = open_pair();
	struct xr_engine *eb = xr_context_engine(p->b.ctx);
	struct xr_regio *regs = xr_context_regs(p->b.ctx);
	uint32_t qpn = xr_qp_num(p->b.qp[0]), st = 0;
	struct xr_qp_ctx c = h_qp_read(&p->b);

	(void)state;
	/* The rings change in RESET only: through RESET and INIT to ERR. */
	c.state = XR_QPS_RESET;
	assert_int_equal(xr_regio_write(regs, XR_REG_QP_COMMIT_MASK, XR_QPM_STATE), 0);
	assert_int_equal(xr_regio_qp_commit(regs, qpn, &c, &st), 0);
	c.state = XR_QPS_INIT;
	c.rq_base = 0;
	assert_int_equal(xr_regio_write(regs, XR_REG_QP_COMMIT_MASK, XR_QPM_STATE | XR_QPM_RINGS), 0);
	assert_int_equal(xr_regio_qp_commit(regs, qpn, &c, &st), 0);
	c.state = XR_QPS_ERR;
	assert_int_equal(xr_regio_write(regs, XR_REG_QP_COMMIT_MASK, XR_QPM_STATE), 0);
	assert_int_equal(xr_regio_qp_commit(regs, qpn, &c, &st), 0);
	assert_int_equal(xr_engine_reg_write(eb, XR_REG_DB_RQ + 8 * qpn, 1), XR_AXI_OKAY);
	for (unsigned i = 0; i < 8; i++)
		xr_engine_progress(eb);
	assert_int_equal(test_busy_qps(eb), 0);
}

/* A RESET whose commit failed left the engine's rings as they were but
 * zeroed the driver's indexes: b's next receive rang an index the engine
 * had taken already (refused, and the receive never seen), a's next post
 * an index going back (refused: its QP failed). The driver's indexes go
 * back to the engine's. */
static void test_a_reset_that_fails_keeps_the_rings(void **state)
{
	struct pair *p = open_pair();
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };

	(void)state;
	/* A whole ring each way, done: a's send indexes and b's receive
	 * ones equal and past zero, so the consumer indexes' return counts
	 * as much as the producers' (back at 0 they made the ring look full
	 * and every post ENOMEM). */
	for (unsigned i = 1; i <= SQ_DEPTH; i++)
		send_one(p, i);
	refuse(&p->a, XR_REG_QP_CMD, XR_CMD_COMMIT, -EIO);
	assert_int_not_equal(xr_modify_qp(p->a.qp[0], &rst, XR_QP_STATE), 0);
	refuse_no_more();
	refuse(&p->b, XR_REG_QP_CMD, XR_CMD_COMMIT, XR_AXI_SLVERR);
	assert_int_not_equal(xr_modify_qp(p->b.qp[0], &rst, XR_QP_STATE), 0);
	refuse_no_more();
	assert_int_equal(RF.refused, 1);
	assert_int_equal(h_qp_read(&p->a).state, XR_QPS_RTS);
	send_one(p, 100);
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_DOORBELL_REFUSED), 0);
	assert_int_equal(h_counter(&p->b, XR_CNT_REG_SLVERR), 0);
}

/* A receive doorbell the device refuses: the receive WRs were never the
 * device's, so the post fails (bad: the first of them) and takes none;
 * it reported success, and the driver's index ran ahead of the engine's
 * for good. */
static void test_a_refused_receive_doorbell_fails_the_post(void **state)
{
	struct pair *p = open_pair();
	struct xr_sge rs = { (uintptr_t)h_data(&p->b), MSG, p->b.mr->lkey };
	struct xr_recv_wr rw[2] = { { .wr_id = 900, .sg_list = &rs, .num_sge = 1, .next = &rw[1] },
				    { .wr_id = 901, .sg_list = &rs, .num_sge = 1 } };
	struct xr_recv_wr *bad = NULL;
	struct xr_wc wc;

	(void)state;
	send_one(p, 1);
	refuse(&p->b, XR_REG_DB_RQ + 8 * xr_qp_num(p->b.qp[0]), ~0u, XR_AXI_SLVERR);
	assert_int_equal(xr_post_recv(p->b.qp[0], rw, &bad), EIO);
	refuse_no_more();
	assert_int_equal(RF.refused, 1);
	assert_ptr_equal(bad, &rw[0]);
	/* The next receive is the one a SEND lands in, and nothing of the
	 * refused two completes. */
	send_one(p, 2);
	assert_int_equal(h_wait(p, &p->b, &wc, 50), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_T(test_beyond_the_ring, teardown),
		BOTH_T(test_going_back, teardown),
		cmocka_unit_test_setup_teardown(test_in_flight_are_flushed, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_a_full_ring_fits, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_no_retransmission_after_a_refusal, set_inline, teardown),
		BOTH_T(test_cq_doorbell, teardown),
		cmocka_unit_test_setup_teardown(test_a_receive_index_behind_a_taken_wqe, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_err_without_a_receive_ring_goes_idle, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_completions_from_before_a_reset, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_completions_of_a_destroyed_qp, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_a_poller_during_the_reset, set_inline, teardown),
		cmocka_unit_test_setup_teardown(test_posts_racing_a_reset_are_refused, set_inline, teardown),
		BOTH_T(test_receive_doorbell, teardown),
		BOTH_T(test_a_reset_that_fails_keeps_the_rings, teardown),
		BOTH_T(test_a_refused_receive_doorbell_fails_the_post, teardown),
		BOTH_T(test_a_refused_send_doorbell_fails_the_post, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
