/* SPDX-License-Identifier: MIT */
/*
 * Send doorbells racing the pass. xr_doorbell stores a QP's sq_pi without
 * the QP's lock: a fence on each side of the busy flag's handshake must
 * leave no doorbell unseen (a WR that never starts: its completion never
 * comes), and a flush must complete every WR posted before it, once, even
 * while more are posted. Each WR's completion must come back once, in
 * order per QP. Both progress modes, and in both a second thread runs
 * passes: a poster runs a pass itself right after its own doorbells
 * (xr_engine_post_end), so without it the doorbells seldom meet a pass
 * serving their QP. A missing barrier shows only by chance: without the
 * doorbell's ordering test_one_at_a_time lost a doorbell in 6 of 6 runs
 * at one hour, in 1 of 8 at another, on the same machine (x86 orders the
 * pass's half by the busy list's lock anyway). And a doorbell that lands
 * after its QP's RESET must not survive it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "race_threads.h"
#include "rc_checks.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"

#define OPS 200000u   /* WRs per test; test_one_at_a_time runs three times as many */
#define MSG 64u
#define STALL_MS 5000u   /* no completion for this long: a WR was lost */
/* Posting stops after this long on a slow or crowded machine (four
 * threads spin in thread mode); what was posted must still complete. */
#define BUDGET_MS 15000u
#define MIN_WRS 2000u

/* One at a time, static: a failed check leaves the test by longjmp, and
 * the teardown stops what still runs for it. */
static struct traffic {
	struct pair p;
	struct passer s;
	struct failer f;
	bool open;
	unsigned nqp, window;
	uint64_t ops;   /* WRs to post */
	uint64_t posted, done, flushed;
	uint64_t next[8];   /* per QP: the wr_id its next completion must carry */
	bool err_seen[8];   /* per QP: a flush came; everything after must be one */
} X;

static void traffic_open(struct traffic *x, unsigned nqp, unsigned window, uint64_t ops)
{
	struct h_opts o = base_opts(XR_MTU_1024);

	memset(x, 0, sizeof(*x));
	x->nqp = nqp;
	x->window = window;
	x->ops = ops;
	for (unsigned q = 0; q < nqp; q++)
		x->next[q] = q;
	o.nqp = nqp;
	x->open = true;
	assert_int_equal(h_open(&x->p, &o), 0);
	passer_start(&x->s, &x->p);
}

/* No WR more than posted: nothing comes after the last. */
static void expect_no_more(struct traffic *x)
{
	struct xr_wc wc;
	uint64_t until = h_now_ms() + 50;

	while (h_now_ms() < until) {
		h_progress(&x->p);
		if (xr_poll_cq(x->p.a.cq, 1, &wc) != 0)
			fail_msg("a completion after the last WR: wr_id %llu", (unsigned long long)wc.wr_id);
	}
}

/* A signaled MSG-byte WRITE on a's QP q, from and to that QP's own slot. */
static void post_write(struct pair *p, unsigned q, uint64_t id)
{
	post_write_at(p, q, MSG * q, MSG, id);
}

/* Posts up to the window, round robin over the QPs: wr_id n on QP n % nqp. */
static void post_some(struct traffic *x)
{
	for (; x->posted < x->ops && x->posted - x->done < x->window; x->posted++)
		post_write(&x->p, (unsigned)(x->posted % x->nqp), x->posted);
}

/* Takes what completed; false: nothing for STALL_MS. */
static bool reap(struct traffic *x)
{
	uint64_t until = h_now_ms() + STALL_MS;
	struct xr_wc wc[16];
	int n;

	for (;;) {
		h_progress(&x->p);
		n = xr_poll_cq(x->p.a.cq, 16, wc);
		assert_true(n >= 0);
		if (n > 0)
			break;
		if (h_now_ms() >= until)
			return false;
	}
	for (int i = 0; i < n; i++) {
		unsigned q = (unsigned)(wc[i].wr_id % x->nqp);
		if (wc[i].wr_id != x->next[q])
			fail_msg("QP %u: completion of WR %llu, expected %llu", q, (unsigned long long)wc[i].wr_id,
				 (unsigned long long)x->next[q]);
		x->next[q] += x->nqp;
		if (wc[i].status == XR_WC_WR_FLUSH_ERR) {
			x->err_seen[q] = true;
			x->flushed++;
		} else if (wc[i].status != XR_WC_SUCCESS || x->err_seen[q]) {
			fail_msg("WR %llu: status %d (%s) after %s", (unsigned long long)wc[i].wr_id, wc[i].status,
				 xr_wc_status_str(wc[i].status), x->err_seen[q] ? "a flush" : "no flush");
		}
		x->done++;
	}
	return true;
}

/* Posts and reaps until ops WRs have completed or the time budget ran
 * out, then until every WR posted has completed. go (NULL: none) is set
 * once flush_at WRs have completed, or half the budget has gone. */
static void run_traffic(struct traffic *x, atomic_bool *go, uint64_t flush_at)
{
	uint64_t start = h_now_ms(), until = start + BUDGET_MS;

	for (;;) {
		uint64_t now = h_now_ms();
		bool posting = x->posted < x->ops && now < until;
		if (!posting && x->done == x->posted)
			break;
		if (posting)
			post_some(x);
		if (go && (x->done >= flush_at || now >= start + BUDGET_MS / 2))
			atomic_store(go, true);
		if (!reap(x)) {
			h_dump(&x->p);
			fail_msg("%llu of %llu posted WRs completed, then none for %u ms: a doorbell lost",
				 (unsigned long long)x->done, (unsigned long long)x->posted, STALL_MS);
		}
	}
	if (x->posted < MIN_WRS)
		fail_msg("only %llu WRs in %u ms", (unsigned long long)x->posted, BUDGET_MS);
}

static void stream(unsigned nqp, unsigned window, uint64_t ops)
{
	struct traffic *x = &X;

	traffic_open(x, nqp, window, ops);
	run_traffic(x, NULL, 0);
	assert_int_equal(x->flushed, 0);
	passer_stop(&x->s);
	expect_no_more(x);
	assert_int_equal(h_counter(&x->p.a, XR_CNT_SQ_WQES), x->posted);
}

/* One WR at a time: each doorbell rings while the QP's last completion is
 * being made, or just after. */
static void test_one_at_a_time(void **state)
{
	(void)state;
	stream(1, 1, 3 * OPS);
}

/* Eight in flight on one QP: doorbells ring while the pass serves the QP
 * or while it waits, parked, for its ACKs. */
static void test_window_of_eight(void **state)
{
	(void)state;
	stream(1, 8, OPS);
}

/* Four QPs of one engine, the busy list shared. */
static void test_four_qps(void **state)
{
	(void)state;
	stream(4, 16, OPS);
}

/* The host moves the QP to ERR while it keeps posting: every WR comes
 * back once, in order, those after the first flush all flushed. A flush
 * that read sq_pi twice (the ring's end, then the end to start over at)
 * would lose the WRs posted in between: no completion. */
static void test_posting_through_a_flush(void **state)
{
	struct traffic *x = &X;

	(void)state;
	traffic_open(x, 1, 64, OPS);
	failer_start(&x->f, x->p.a.qp[0]);
	run_traffic(x, &x->f.go, OPS / 8);   /* the flush meets a full window */
	assert_int_equal(failer_join(&x->f), 0);
	assert_true(x->flushed > 0);   /* the flush came while WRs were posted */
	passer_stop(&x->s);
	expect_no_more(x);
}

/* The doorbell of a post that raced its QP's reset, landing after the
 * RESET's commit (the host's own index is 0 again): back in RTS, the QP
 * must not run the old ring's WQEs, which nobody posted since (it did:
 * three WRITEs again, and the host's next post found its SQ full). */
static void test_a_doorbell_after_reset(void **state)
{
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };
	struct traffic *x = &X;
	struct pair *p = &x->p;
	struct xr_wc wc;
	uint64_t started;

	(void)state;
	memset(x, 0, sizeof(*x));
	x->open = true;
	assert_int_equal(h_open(p, &o), 0);
	for (uint64_t i = 0; i < 3; i++)
		post_write(p, 0, 100 + i);
	for (uint64_t i = 0; i < 3; i++)
		expect_wc(p, &p->a, 100 + i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "before the reset");
	assert_int_equal(xr_modify_qp(p->a.qp[0], &rst, XR_QP_STATE), 0);
	assert_int_equal(xr_modify_qp(p->b.qp[0], &rst, XR_QP_STATE), 0);
	assert_int_equal(xr_engine_reg_write(xr_context_engine(p->a.ctx), XR_REG_DB_SQ + 8 * xr_qp_num(p->a.qp[0]), 3),
			 XR_AXI_OKAY);
	assert_int_equal(h_connect(p->a.qp[0], p->b.qp[0], p->b.ctx, &o, 0x100, 0x200), 0);
	assert_int_equal(h_connect(p->b.qp[0], p->a.qp[0], p->a.ctx, &o, 0x200, 0x100), 0);
	started = h_counter(&p->a, XR_CNT_SQ_WQES);
	assert_int_equal(h_wait(p, &p->a, &wc, 200), 0);
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_WQES), started);
	post_write(p, 0, 999);
	expect_wc(p, &p->a, 999, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the first post after the reset");
	assert_int_equal(h_counter(&p->a, XR_CNT_SQ_WQES), started + 1);
}

/* What a failed check left running: the second thread's passes, the
 * thread failing the QP, the pair. */
static int teardown(void **state)
{
	(void)state;
	passer_stop(&X.s);
	failer_join(&X.f);
	if (X.open)
		h_close(&X.p);
	X.open = false;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_T(test_one_at_a_time, teardown),
		BOTH_T(test_window_of_eight, teardown),
		BOTH_T(test_four_qps, teardown),
		BOTH_T(test_posting_through_a_flush, teardown),
		BOTH_T(test_a_doorbell_after_reset, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
