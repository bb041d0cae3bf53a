/* SPDX-License-Identifier: MIT */
/*
 * bench-links' latency row: 8-byte RDMA WRITEs bounced between the two
 * ends of fresh links (a thread per end, each spinning on its memory as
 * perftest's write_lat does), the first 1,000 round trips against the
 * steady ones. A link whose buffers are first touched by its traffic (on
 * this VM a page's first touch costs microseconds) shows it in the first
 * figure: perftest's default run is 1,000 iterations.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "../tests/unit/rc_harness.h"
#include "links_lat.h"

#define LAT_FIRST 1000
#define LAT_STEADY 10000   /* after the first: the steady figure's window */
#define LAT_SPIN_NS 2000000000ull   /* a round trip not back in 2 s: the run fails */

struct bouncer {
	struct end *me;
	struct xr_qp *qp;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	unsigned iters;
	bool first;          /* this end writes first */
	uint64_t *rtt_ns;    /* the first end's round trips */
	atomic_bool failed, done;
};

static uint8_t stamp_of(unsigned i)
{
	return (uint8_t)(i % 255 + 1);   /* never 0, consecutive ones differ */
}

/* Spins (driving its engine) until the peer's stamp lands. */
static bool wait_stamp(struct bouncer *b, uint8_t want)
{
	volatile uint8_t *flag = h_data(b->me);
	uint64_t t0 = h_now_ns();
	struct xr_wc wc[8];

	while (*flag != want) {
		int n = xr_poll_cq(b->me->cq, 8, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != XR_WC_SUCCESS)
				return false;
		if (atomic_load_explicit(&b->failed, memory_order_relaxed) || h_now_ns() - t0 > LAT_SPIN_NS)
			return false;
	}
	return true;
}

static bool post_stamp(struct bouncer *b, uint8_t stamp, unsigned i)
{
	uint8_t *src = h_data(b->me) + 64;
	struct xr_sge s = { (uintptr_t)src, 8, b->me->mr->lkey };
	struct xr_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED | XR_SEND_INLINE };

	src[0] = stamp;
	w.wr.rdma.remote_addr = b->peer_addr;
	w.wr.rdma.rkey = b->peer_rkey;
	return xr_post_send(b->qp, &w, NULL) == 0;
}

static void *bounce(void *arg)
{
	struct bouncer *b = arg;

	for (unsigned i = 0; i < b->iters; i++) {
		uint64_t t0 = h_now_ns();
		bool ok = b->first ? post_stamp(b, stamp_of(i), i) && wait_stamp(b, stamp_of(i))
				   : wait_stamp(b, stamp_of(i)) && post_stamp(b, stamp_of(i), i);
		if (!ok) {
			atomic_store(&b->failed, true);
			break;
		}
		if (b->rtt_ns)
			b->rtt_ns[i] = h_now_ns() - t0;
	}
	/* Inline, a post leaves at its end's next pass: the second end's last
	 * WRITE waits for its completion (the first end's last pass acked it). */
	if (!b->first && !atomic_load(&b->failed)) {
		struct xr_wc wc;
		uint64_t t0 = h_now_ns();
		bool last = false, bad = false;
		while (!last && !bad && h_now_ns() - t0 < LAT_SPIN_NS)
			if (xr_poll_cq(b->me->cq, 1, &wc) == 1) {
				bad = wc.status != XR_WC_SUCCESS;
				last = wc.wr_id == b->iters - 1u;
			}
		if (!last || bad)
			atomic_store(&b->failed, true);
	}
	atomic_store(&b->done, true);
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static double median_half_us(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / 2e3;
}

int links_latency(struct xr_link *la, struct xr_link *lb, const char *aa, const char *ab, double *first_us,
		  double *steady_us)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 4096, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .sq_depth = 64, .cq_depth = 256 };
	struct end a, b;
	unsigned iters = LAT_FIRST + LAT_STEADY * 2;
	uint64_t *rtt = calloc(iters, sizeof(*rtt));
	struct bouncer ba = { .me = &a, .iters = iters, .first = true, .rtt_ns = rtt };
	struct bouncer bb = { .me = &b, .iters = iters };
	pthread_t t;
	int rc = -1;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!rtt || h_end_open(&a, la, aa, &o) || h_end_open(&b, lb, ab, &o) ||
	    h_connect(a.qp[0], b.qp[0], b.ctx, &o, 1, 2) || h_connect(b.qp[0], a.qp[0], a.ctx, &o, 2, 1))
		goto out;
	memset(h_data(&a), 0, 64);
	memset(h_data(&b), 0, 64);
	ba.qp = a.qp[0];
	ba.peer_addr = (uintptr_t)h_data(&b);
	ba.peer_rkey = b.mr->rkey;
	bb.qp = b.qp[0];
	bb.peer_addr = (uintptr_t)h_data(&a);
	bb.peer_rkey = a.mr->rkey;
	if (pthread_create(&t, NULL, bounce, &bb))
		goto out;
	bounce(&ba);
	if (ba.failed)
		atomic_store(&bb.failed, true);
	/* The first end's engine runs on until the second is done: the ACK
	 * of its last WRITE may wait in a link's queue for another call. */
	for (uint64_t t0 = h_now_ns(); !atomic_load(&bb.done) && h_now_ns() - t0 < LAT_SPIN_NS;) {
		struct xr_wc wc;
		xr_poll_cq(a.cq, 1, &wc);
	}
	pthread_join(t, NULL);
	if (ba.failed || bb.failed)
		fprintf(stderr, "bench-links: latency: a round trip failed or stalled for 2 s\n");
	else {
		*first_us = median_half_us(rtt, LAT_FIRST);
		*steady_us = median_half_us(rtt + iters - LAT_STEADY, LAT_STEADY);
		rc = 0;
	}
out:
	h_end_close(&a);
	h_end_close(&b);
	free(rtt);
	return rc;
}
