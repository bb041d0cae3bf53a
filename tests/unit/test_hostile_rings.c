/* SPDX-License-Identifier: MIT */
/*
 * A buggy or hostile host against the engine's rings: WQEs rewritten
 * after their doorbell (a WQE is the engine's until it completes, but
 * nothing stops a program from scribbling it). Found by review, each
 * case failed before its fix:
 *  - a WQE the engine reads again to resend it (go-back-N) was taken as
 *    read, unchecked: rewritten with the inline flag and a long length,
 *    the resend copied its payload from engine memory past the copy of
 *    the WQE (out of the heap block; onto the wire); rewritten with
 *    num_sge 255, the SGE walk read past it. Now a WQE read again must
 *    be the one started (opcode, flags, packets, bounds): otherwise it
 *    fails with LOC_QP_OP_ERR and the send queue with it, and the
 *    engine's other QPs are unharmed;
 *  - a commit that moved a live requester's SQ PSN (registers written
 *    by hand) left its next WQE waiting for good: now refused.
 * Inline progress only: the passes are the test's, so a's engine runs
 * while b's does not (the peer stays silent until the ACK timer fires).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rc_checks.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"
#include "xroce/ring.h"

#define MTU_BYTES 4096u

static struct pair P;
static bool open_;

static struct pair *open_pair(unsigned nqp)
{
	struct h_opts o = base_opts(XR_MTU_4096);

	o.mode = XR_PROGRESS_INLINE;
	o.nqp = nqp;
	o.sq_depth = o.rq_depth = 8;
	o.timeout = 8;   /* about 1 ms: the resend comes soon */
	assert_int_equal(h_open(&P, &o), 0);
	open_ = true;
	return &P;
}

static int teardown(void **state)
{
	(void)state;
	if (open_)
		h_close(&P);
	open_ = false;
	return 0;
}

/* Slot idx of e's QP q's send ring, as the host wrote it. */
static struct xr_hw_wqe *wqe_at(struct end *e, unsigned q, uint16_t idx)
{
	struct xr_qp_ctx c;

	assert_int_equal(xr_regio_qp_read(xr_context_regs(e->ctx), xr_qp_num(e->qp[q]), &c), 0);
	assert_true(c.sq_base && c.sq_log_size);
	return (struct xr_hw_wqe *)(uintptr_t)(c.sq_base + ((uint64_t)(idx & ((1u << c.sq_log_size) - 1)) <<
							     (c.sq_wqe_blocks + 8)));
}

static void post_write(struct pair *p, unsigned q, size_t off, uint32_t len, uint64_t id)
{
	fill(h_data(&p->a) + off, len, id);
	post_write_at(p, q, off, len, id);
}

/* Runs a's engine alone until counter c of a reaches n (bounded). */
static void run_a_until(struct pair *p, enum xr_counter c, uint64_t n)
{
	struct xr_engine *ea = xr_context_engine(p->a.ctx);
	uint64_t until = h_now_ms() + 3000;

	while (h_counter(&p->a, c) < n && h_now_ms() < until)
		xr_engine_progress(ea);
	assert_true(h_counter(&p->a, c) >= n);
}

/* a's engine alone until its ACK timer has sent it back (or the resend
 * failed the QP): bounded. */
static void run_a_resend(struct pair *p)
{
	struct xr_engine *ea = xr_context_engine(p->a.ctx);
	uint64_t until = h_now_ms() + 3000;

	while (h_counter(&p->a, XR_CNT_ACK_TIMEOUTS) == 0 && h_now_ms() < until) {
		xr_engine_progress(ea);
		usleep(100);
	}
	assert_true(h_counter(&p->a, XR_CNT_ACK_TIMEOUTS) > 0);
	for (int i = 0; i < 8; i++)   /* the resend's own packets */
		xr_engine_progress(ea);
}

/* The QP's other WRs and another QP of the same engine still work. */
static void expect_engine_fine(struct pair *p, unsigned q)
{
	post_write(p, q, 64u << 10, 5000, 900 + q);
	expect_wc(p, &p->a, 900 + q, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "a WRITE on another QP");
	assert_memory_equal(h_data(&p->a) + (64u << 10), h_data(&p->b) + (64u << 10), 5000);
	assert_true(h_guards_ok(&p->a));
	assert_true(h_guards_ok(&p->b));
}

/* The WQE being resent is rewritten: inline, its length as before (three
 * packets). The resend copied 4 KiB from past the WQE's 192 inline bytes. */
static void test_resent_wqe_made_inline(void **state)
{
	struct pair *p = open_pair(2);
	struct xr_hw_wqe *w;

	(void)state;
	post_write(p, 0, 0, 3 * MTU_BYTES, 1);
	run_a_until(p, XR_CNT_TX_PKTS, 3);
	w = wqe_at(&p->a, 0, 0);
	assert_int_equal(w->wr_id, 1);
	w->flags |= XR_SEND_INLINE;
	w->num_sge = 0;
	run_a_resend(p);
	expect_wc(p, &p->a, 1, XR_WC_LOC_QP_OP_ERR, XR_WC_RDMA_WRITE, "the rewritten WRITE");
	assert_int_equal(h_qp_read(&p->a).state, XR_QPS_ERR);
	expect_engine_fine(p, 1);
}

/* The same with num_sge 255 and the twelve SGEs of the slot emptied: the
 * SGE walk went on past the WQE's copy looking for the bytes. */
static void test_resent_wqe_with_255_sges(void **state)
{
	struct pair *p = open_pair(2);
	struct xr_hw_wqe *w;

	(void)state;
	post_write(p, 0, 0, 2 * MTU_BYTES, 1);
	run_a_until(p, XR_CNT_TX_PKTS, 2);
	w = wqe_at(&p->a, 0, 0);
	w->num_sge = 255;
	for (unsigned i = 0; i < XR_WQE_BLOCK_SGE; i++)
		w->sge[i].length = 0;
	run_a_resend(p);
	expect_wc(p, &p->a, 1, XR_WC_LOC_QP_OP_ERR, XR_WC_RDMA_WRITE, "the rewritten WRITE");
	expect_engine_fine(p, 1);
}

/* The second WQE in flight, restarted behind the first after the
 * rewind: made longer (more packets than its PSNs) and inline. The
 * first is flushed, the second fails with its own status. */
static void test_restarted_wqe_rewritten(void **state)
{
	struct pair *p = open_pair(2);
	struct xr_hw_wqe *w;

	(void)state;
	post_write(p, 0, 0, MTU_BYTES, 1);
	post_write(p, 0, 2 * MTU_BYTES, 2 * MTU_BYTES, 2);
	run_a_until(p, XR_CNT_TX_PKTS, 3);
	w = wqe_at(&p->a, 0, 1);
	assert_int_equal(w->wr_id, 2);
	w->flags |= XR_SEND_INLINE;
	w->length = 16 * MTU_BYTES;
	run_a_resend(p);
	expect_wc(p, &p->a, 1, XR_WC_WR_FLUSH_ERR, XR_WC_RDMA_WRITE, "the first WRITE");
	expect_wc(p, &p->a, 2, XR_WC_LOC_QP_OP_ERR, XR_WC_RDMA_WRITE, "the rewritten WRITE");
	expect_engine_fine(p, 1);
}

/* An honest resend (the WQE untouched) still goes through: the check
 * refuses only a WQE that changed. */
static void test_untouched_resend_completes(void **state)
{
	struct pair *p = open_pair(1);

	(void)state;
	post_write(p, 0, 0, MTU_BYTES, 1);
	post_write(p, 0, 2 * MTU_BYTES, 2 * MTU_BYTES, 2);
	run_a_until(p, XR_CNT_TX_PKTS, 3);
	run_a_resend(p);
	expect_wc(p, &p->a, 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the first WRITE");
	expect_wc(p, &p->a, 2, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the second WRITE");
	assert_memory_equal(h_data(&p->a), h_data(&p->b), 4 * MTU_BYTES);
	expect_engine_fine(p, 0);
}

/* A commit that moves a live requester's SQ PSN (the verbs set it once,
 * RTR->RTS; registers written by hand can do it any time): the next WQE
 * got the new PSNs while the window still counted from the old, and
 * waited for good, no timer running, nothing reported. Now refused
 * (BAD_STATE), the QP as it was; the same value still passes. */
static void test_sq_psn_moved_in_rts_is_refused(void **state)
{
	struct pair *p = open_pair(1);
	struct xr_regio *r = xr_context_regs(p->a.ctx);
	struct xr_qp_ctx c;
	uint32_t st = 0;

	(void)state;
	post_write(p, 0, 0, 100, 1);
	expect_wc(p, &p->a, 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the first WRITE");
	c = h_qp_read(&p->a);
	assert_int_equal(c.state, XR_QPS_RTS);
	assert_int_equal(xr_regio_write(r, XR_REG_QP_COMMIT_MASK, XR_QPM_SQ_PSN), 0);
	assert_int_equal(xr_regio_qp_commit(r, xr_qp_num(p->a.qp[0]), &c, &st), 0);   /* the same: fine */
	c.sq_psn = (c.sq_psn + 5000) & XR_PSN_MASK;
	assert_int_equal(xr_regio_write(r, XR_REG_QP_COMMIT_MASK, XR_QPM_SQ_PSN), 0);
	assert_int_not_equal(xr_regio_qp_commit(r, xr_qp_num(p->a.qp[0]), &c, &st), 0);
	assert_int_equal(st, XR_CMD_ST_BAD_STATE);
	assert_int_equal(h_qp_read(&p->a).sq_psn, (c.sq_psn - 5000) & XR_PSN_MASK);
	post_write(p, 0, 4096, 100, 2);   /* before: no completion, ever */
	expect_wc(p, &p->a, 2, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the WRITE after the refused commit");
	assert_memory_equal(h_data(&p->a) + 4096, h_data(&p->b) + 4096, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_resent_wqe_made_inline, teardown),
		cmocka_unit_test_teardown(test_resent_wqe_with_255_sges, teardown),
		cmocka_unit_test_teardown(test_restarted_wqe_rewritten, teardown),
		cmocka_unit_test_teardown(test_untouched_resend_completes, teardown),
		cmocka_unit_test_teardown(test_sq_psn_moved_in_rts_is_refused, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
