/* SPDX-License-Identifier: MIT */
/*
 * Send doorbells racing the pass. xr_doorbell stores a QP's sq_pi without
 * the QP's lock: a fence on each side of the busy flag's handshake must
 * leave no doorbell unseen (a WR that never starts: its completion never
 * comes), and a flush must complete every WR posted before it, once, even
 * while more are posted. Each WR's completion must come back once, in
 * order per QP. Both progress modes; in inline mode a second thread runs
 * passes too, so the poster's doorbells meet passes of another thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "rc_checks.h"

#define OPS 200000u
#define MSG 64u
#define STALL_MS 5000u   /* no completion for this long: a WR was lost */

struct passer {
	struct pair *p;
	atomic_bool stop;
};

/* Inline mode: passes of a thread other than the poster's. */
static void *run_passes(void *arg)
{
	struct passer *s = arg;

	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		xr_engine_progress(xr_context_engine(s->p->a.ctx));
		xr_engine_progress(xr_context_engine(s->p->b.ctx));
	}
	return NULL;
}

struct traffic {
	struct pair p;
	struct passer s;
	pthread_t t;
	unsigned nqp, window;
	uint64_t posted, done, flushed;
	uint64_t next[8];   /* per QP: the wr_id its next completion must carry */
	bool err_seen[8];   /* per QP: a flush came; everything after must be one */
};

static void traffic_open(struct traffic *x, unsigned nqp, unsigned window)
{
	struct h_opts o = { .mode = MODE, .mtu = XR_MTU_1024, .buf_len = 1 << 16, .nqp = nqp,
			    .timeout = 14, .retry_cnt = 7, .rnr_retry = 7 };

	memset(x, 0, sizeof(*x));
	x->nqp = nqp;
	x->window = window;
	for (unsigned q = 0; q < nqp; q++)
		x->next[q] = q;
	assert_int_equal(h_open(&x->p, &o), 0);
	x->s.p = &x->p;
	if (MODE == XR_PROGRESS_INLINE)
		assert_int_equal(pthread_create(&x->t, NULL, run_passes, &x->s), 0);
}

static void traffic_close(struct traffic *x)
{
	if (MODE == XR_PROGRESS_INLINE) {
		atomic_store(&x->s.stop, true);
		pthread_join(x->t, NULL);
	}
	h_close(&x->p);
}

/* Posts up to the window, round robin over the QPs: wr_id n on QP n % nqp. */
static void post_some(struct traffic *x)
{
	while (x->posted < OPS && x->posted - x->done < x->window) {
		unsigned q = (unsigned)(x->posted % x->nqp);
		struct xr_sge sge = { (uintptr_t)h_data(&x->p.a) + MSG * q, MSG, x->p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = x->posted, .sg_list = &sge, .num_sge = 1,
					.opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&x->p.b) + MSG * q;
		w.wr.rdma.rkey = x->p.b.mr->rkey;
		assert_int_equal(xr_post_send(x->p.a.qp[q], &w, NULL), 0);
		x->posted++;
	}
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

static void stream(unsigned nqp, unsigned window)
{
	struct traffic x;
	uint64_t until;

	traffic_open(&x, nqp, window);
	until = h_now_ms() + 60000;
	while (x.done < OPS && h_now_ms() < until) {
		post_some(&x);
		if (!reap(&x)) {
			h_dump(&x.p);
			fail_msg("%llu of %llu posted WRs completed, then none for %u ms: a doorbell lost",
				 (unsigned long long)x.done, (unsigned long long)x.posted, STALL_MS);
		}
	}
	assert_int_equal(x.done, OPS);
	assert_int_equal(x.flushed, 0);
	assert_int_equal(h_counter(&x.p.a, XR_CNT_PARSE_BAD_ICRC), 0);
	traffic_close(&x);
}

/* One WR at a time: each doorbell rings while the QP's last completion is
 * being made, or just after. */
static void test_one_at_a_time(void **state)
{
	(void)state;
	stream(1, 1);
}

/* Eight in flight on one QP: doorbells ring while the QP is on the busy
 * list for its ACKs, the case where the doorbell skips the list. */
static void test_window_of_eight(void **state)
{
	(void)state;
	stream(1, 8);
}

/* Four QPs of one engine, the busy list shared. */
static void test_four_qps(void **state)
{
	(void)state;
	stream(4, 16);
}

struct failer {
	struct xr_qp *qp;
	atomic_bool go;
	int rc;
};

static void *fail_qp(void *arg)
{
	struct failer *f = arg;
	struct xr_qp_attr err = { .qp_state = XR_QPS_ERR };
	uint64_t until = h_now_ms() + 60000;

	while (!atomic_load(&f->go) && h_now_ms() < until)
		;
	f->rc = xr_modify_qp(f->qp, &err, XR_QP_STATE);
	return NULL;
}

/* The host moves the QP to ERR while it keeps posting: every WR comes
 * back once, in order, those after the first flush all flushed. A flush
 * that read sq_pi twice (the ring's end, then the end to start over at)
 * would lose the WRs posted in between: no completion. */
static void test_posting_through_a_flush(void **state)
{
	struct traffic x;
	struct failer f = { 0 };
	pthread_t t;
	uint64_t until;

	(void)state;
	traffic_open(&x, 1, 64);
	f.qp = x.p.a.qp[0];
	assert_int_equal(pthread_create(&t, NULL, fail_qp, &f), 0);
	until = h_now_ms() + 60000;
	while (x.done < OPS && h_now_ms() < until) {
		post_some(&x);
		if (x.done >= OPS / 8)
			atomic_store(&f.go, true);   /* the flush meets a full window */
		if (!reap(&x)) {
			atomic_store(&f.go, true);
			pthread_join(t, NULL);
			h_dump(&x.p);
			fail_msg("%llu of %llu posted WRs completed, then none for %u ms", (unsigned long long)x.done,
				 (unsigned long long)x.posted, STALL_MS);
		}
	}
	atomic_store(&f.go, true);
	pthread_join(t, NULL);
	assert_int_equal(f.rc, 0);
	assert_int_equal(x.done, OPS);
	assert_true(x.flushed > 0);   /* the flush came while WRs were posted */
	traffic_close(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_one_at_a_time),
		BOTH(test_window_of_eight),
		BOTH(test_four_qps),
		BOTH(test_posting_through_a_flush),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
