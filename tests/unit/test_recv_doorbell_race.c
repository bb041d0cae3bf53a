/* SPDX-License-Identifier: MIT */
/*
 * Receive doorbells racing the pass. xr_doorbell stores a QP's rq_pi
 * without the QP's lock, checking it against the engine's indexes of
 * that moment: a receive the host posts into a slot its completions freed
 * must never be refused (the slot is freed before its CQE goes out), none
 * may go unseen (each SEND is posted after its receive: an RNR NAK means
 * the engine missed one), and each must complete once, in order, holding
 * its own SEND's bytes. Both progress modes, a second thread running
 * passes beside the poster (as test_doorbell_race does for the send
 * doorbell). And a receive posted as its QP fails must be flushed: the
 * doorbell stores the index, then reads the state (ERR: it queues the QP
 * to be flushed); the flush reads the index after the state went to ERR.
 * A hook between the doorbell's two steps fails the QP and flushes it
 * there (inline: no engine thread to flush it later), the one order that
 * needs the doorbell's own steps in order (the fences on both sides,
 * which hold that order on the machine, show only by chance:
 * test_receives_through_a_flush is their smoke test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "nic/test_hooks.h"
#include "race_threads.h"
#include "rc_checks.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"

#define OPS 40000u        /* messages per test */
#define MSG 64u
#define SWIN 16u          /* SENDs in flight */
#define STALL_MS 5000u    /* no completion for this long: a receive was lost */
#define BUDGET_MS 15000u  /* posting stops after this long; what was posted must still complete */
#define MIN_MSGS 1000u

/* One at a time, static: a failed check leaves by longjmp and the
 * teardown stops what still runs. */
static struct traffic {
	struct pair p;
	struct passer s;
	struct failer f;
	bool open;
	bool b_fails;                   /* b's QP is to fail: a's SENDs may too */
	unsigned rwin;                  /* receives posted ahead */
	uint64_t sent, sends_done;      /* a's SENDs */
	uint64_t posted, recvs_done;    /* b's receives */
	uint64_t flushed;
	bool err_seen;
} X;

static void traffic_open(struct traffic *x, unsigned rwin)
{
	struct h_opts o = base_opts(XR_MTU_1024);

	memset(x, 0, sizeof(*x));
	x->rwin = rwin;
	o.rq_depth = rwin;
	x->open = true;
	assert_int_equal(h_open(&x->p, &o), 0);
	passer_start(&x->s, &x->p);
}

/* SEND n from a's slot n % SWIN, its first 8 bytes n. */
static void post_sends(struct traffic *x, uint64_t until)
{
	for (; x->sent < until && x->sent - x->sends_done < SWIN; x->sent++) {
		uint64_t n = x->sent;
		uint8_t *src = h_data(&x->p.a) + MSG * (n % SWIN);
		struct xr_sge s = { (uintptr_t)src, MSG, x->p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = n, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_SEND,
					.send_flags = XR_SEND_SIGNALED };
		memcpy(src, &n, sizeof(n));
		assert_int_equal(xr_post_send(x->p.a.qp[0], &w, NULL), 0);
	}
}

/* Receive n into b's slot n % rwin; no post may be refused (a QP in ERR
 * takes receives too, to flush them). */
static void post_recv_n(struct traffic *x, uint64_t n)
{
	struct xr_sge s = { (uintptr_t)h_data(&x->p.b) + MSG * (n % x->rwin), MSG, x->p.b.mr->lkey };
	struct xr_recv_wr w = { .wr_id = n, .sg_list = &s, .num_sge = 1 };
	int rc = xr_post_recv(x->p.b.qp[0], &w, NULL);

	if (rc)
		fail_msg("receive %llu refused: %d", (unsigned long long)n, rc);
}

static void post_recvs(struct traffic *x, uint64_t until)
{
	for (; x->posted < until && x->posted - x->recvs_done < x->rwin; x->posted++)
		post_recv_n(x, x->posted);
}

/* b's completions: receive n, in order, holding SEND n's bytes; after the
 * first flush, only flushes. a's: SEND n in order, successful until b
 * fails (then anything but a success after a failure is allowed: the
 * SENDs are not what this tests). Returns how many came. */
static int reap(struct traffic *x)
{
	struct xr_wc wc[16];
	int n, got = 0;

	n = xr_poll_cq(x->p.b.cq, 16, wc);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++, got++) {
		uint64_t want = x->recvs_done, v;
		if (wc[i].wr_id != want)
			fail_msg("receive %llu completed, expected %llu", (unsigned long long)wc[i].wr_id,
				 (unsigned long long)want);
		if (wc[i].status == XR_WC_WR_FLUSH_ERR) {
			x->err_seen = true;
			x->flushed++;
		} else if (wc[i].status != XR_WC_SUCCESS || x->err_seen) {
			fail_msg("receive %llu: status %d (%s) after %s", (unsigned long long)want, wc[i].status,
				 xr_wc_status_str(wc[i].status), x->err_seen ? "a flush" : "no flush");
		} else {
			memcpy(&v, h_data(&x->p.b) + MSG * (want % x->rwin), sizeof(v));
			if (v != want)
				fail_msg("receive %llu holds SEND %llu", (unsigned long long)want, (unsigned long long)v);
		}
		x->recvs_done++;
	}
	n = xr_poll_cq(x->p.a.cq, 16, wc);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++, got++) {
		if (wc[i].wr_id != x->sends_done)
			fail_msg("SEND %llu completed, expected %llu", (unsigned long long)wc[i].wr_id,
				 (unsigned long long)x->sends_done);
		if (wc[i].status != XR_WC_SUCCESS && !x->err_seen && !x->b_fails)
			fail_msg("SEND %llu: status %d (%s)", (unsigned long long)wc[i].wr_id, wc[i].status,
				 xr_wc_status_str(wc[i].status));
		x->sends_done++;
	}
	return got;
}

/* Posts receives until ops or the budget, and a SEND for each receive
 * posted; then waits until every receive posted has completed (and,
 * unless b's QP failed, every SEND). go (NULL: none) is set once
 * flush_at receives have completed, or half the budget has gone; after
 * it the QP may fail under the posts. */
static void run_traffic(struct traffic *x, uint64_t ops, atomic_bool *go, uint64_t flush_at)
{
	uint64_t start = h_now_ms(), until = start + BUDGET_MS, quiet_since = start;

	for (;;) {
		uint64_t now = h_now_ms();
		if (!x->err_seen) {
			if (now < until)
				post_recvs(x, ops);
			post_sends(x, x->posted);
		}
		if (x->recvs_done == x->posted && (x->err_seen || x->sends_done == x->posted) &&
		    (x->posted == ops || now >= until || x->err_seen))
			break;
		if (go && (x->recvs_done >= flush_at || now >= start + BUDGET_MS / 2))
			atomic_store(go, true);
		h_progress(&x->p);
		if (reap(x))
			quiet_since = now;
		else if (now - quiet_since > STALL_MS) {
			h_dump(&x->p);
			fail_msg("%llu of %llu posted receives completed, then none for %u ms: a receive lost",
				 (unsigned long long)x->recvs_done, (unsigned long long)x->posted, STALL_MS);
		}
	}
	if (x->posted < MIN_MSGS)
		fail_msg("only %llu receives in %u ms", (unsigned long long)x->posted, BUDGET_MS);
}

static void stream(unsigned rwin)
{
	struct traffic *x = &X;

	traffic_open(x, rwin);
	run_traffic(x, OPS, NULL, 0);
	assert_int_equal(x->flushed, 0);
	passer_stop(&x->s);
	assert_int_equal(h_counter(&x->p.b, XR_CNT_REG_SLVERR), 0);   /* no receive doorbell refused */
	assert_int_equal(h_counter(&x->p.b, XR_CNT_TX_RNR_NAK), 0);   /* none unseen */
	assert_int_equal(h_counter(&x->p.b, XR_CNT_RQ_WQES), x->posted);
}

/* One receive posted at a time, after the last one's completion: each
 * SEND finds its receive posted (no RNR NAK), in both progress modes. */
static void test_one_receive_ahead(void **state)
{
	(void)state;
	stream(1);
}

/* Four ahead: doorbells ring while the engine takes the WQEs before them
 * and frees their slots (a CQE written before its slot was freed: a
 * receive refused). */
static void test_four_receives_ahead(void **state)
{
	(void)state;
	stream(4);
}

/* b's QP moved to ERR while receives are posted: each comes back once,
 * in order, those after the first flush all flushed. Then receives
 * posted to the failed QP: flushed too (the doorbell queues it). */
static void test_receives_through_a_flush(void **state)
{
	struct traffic *x = &X;
	uint64_t until;

	(void)state;
	traffic_open(x, 8);
	x->b_fails = true;
	failer_start(&x->f, x->p.b.qp[0]);
	run_traffic(x, OPS, &x->f.go, OPS / 8);
	assert_int_equal(failer_join(&x->f), 0);
	for (unsigned i = 0; i < 8; i++)
		post_recv_n(x, x->posted++);
	until = h_now_ms() + STALL_MS;
	while (x->recvs_done < x->posted && h_now_ms() < until) {
		h_progress(&x->p);
		reap(x);
	}
	assert_int_equal(x->recvs_done, x->posted);
	assert_true(x->flushed >= 8);
	passer_stop(&x->s);
}

/* In the receive doorbell, between its index and its look at the state:
 * b's QP fails and b's engine flushes it, right there. */
static void fail_b_midway(void *arg)
{
	struct pair *p = arg;
	struct xr_qp_attr err = { .qp_state = XR_QPS_ERR };

	assert_int_equal(xr_modify_qp(p->b.qp[0], &err, XR_QP_STATE), 0);
	for (unsigned i = 0; i < 4; i++)
		xr_engine_progress(xr_context_engine(p->b.ctx));
}

/* A receive posted while its QP fails, the failure and the flush landing
 * between the doorbell's store and its look at the state: flushed once.
 * With the look before the store, the flush in between read the index
 * without it and the look saw no ERR: never flushed. Inline: the passes
 * are the hook's and the wait's (an engine thread would flush it later
 * and hide the order). */
static void test_flushed_inside_the_doorbell(void **state)
{
	struct traffic *x = &X;
	struct xr_wc wc;

	(void)state;
	traffic_open(x, 4);
	passer_stop(&x->s);
	x->posted = 7;
	xr_rq_doorbell_hook_arg = &x->p;
	xr_rq_doorbell_hook = fail_b_midway;
	post_recv_n(x, 7);
	xr_rq_doorbell_hook = NULL;
	if (!h_wait(&x->p, &x->p.b, &wc, 2000))
		fail_msg("the receive posted as its QP failed was never flushed");
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, XR_WC_WR_FLUSH_ERR);
	assert_int_equal(h_wait(&x->p, &x->p.b, &wc, 50), 0);   /* once */
}

static int teardown(void **state)
{
	(void)state;
	xr_rq_doorbell_hook = NULL;   /* a failed check may have left it set */
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
		BOTH_T(test_one_receive_ahead, teardown),
		BOTH_T(test_four_receives_ahead, teardown),
		BOTH_T(test_receives_through_a_flush, teardown),
		cmocka_unit_test_setup_teardown(test_flushed_inside_the_doorbell, set_inline, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
