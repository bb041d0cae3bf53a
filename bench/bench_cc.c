/* SPDX-License-Identifier: MIT */
/*
 * Congestion control (issue 12): an incast on the in-process fabric
 * (simulated clock, 10 Gb/s ports, RED ECN at the bottleneck) with and
 * without DCQCN, printing bottleneck utilisation, goodput, Jain's
 * fairness, queue length and drops side by side; and the pacer's accuracy
 * (achieved / configured rate), on the fabric from 100 Mb/s to 9 Gb/s of a
 * 10 Gb/s port, and on the real clock over the mem link (progress
 * threads) as fractions of the unpaced rate measured in the same run.
 * --quick: a short smoke run (the suite runs it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/unit/incast_harness.h"
#include "bound.h"

static void incast_row(unsigned nsend, bool dcqcn, bool quick)
{
	struct incast s;
	struct incast_cfg c = base;

	c.nsend = nsend;
	c.dcqcn = dcqcn;
	if (quick) {
		c.warmup_ns = 5000000;
		c.window_ns = 10000000;
		c.nwin = 1;
	}
	incast_open(&s, &c);
	incast_run(&s);
	printf("RESULT incast %u->1 %-8s util %.3f goodput %.3f fairness %.4f (min/window %.4f) qmean %6.0f B qp99 %7llu B "
	       "drops %6llu (after warm-up %llu) retx %llu\n",
	       nsend, dcqcn ? "DCQCN" : "none", s.util, s.goodput, s.fairness, s.fairness_min, s.qmean,
	       (unsigned long long)s.qp99, (unsigned long long)s.drops, (unsigned long long)(s.drops - s.drops_first),
	       (unsigned long long)s.rexmit);
	incast_free(&s);
}

/* Real clock: one QP on a mem pair, thread progress, capped at cap Mb/s
 * (0: uncapped). Wire Mb/s: payload plus headers (58 B a 4 KiB packet, a
 * RETH on each message's first) plus 24 B of Ethernet overhead. */
static double real_rate_mbps(uint32_t cap, double seconds)
{
	struct pair p;
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_4096, .buf_len = 32u << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .sq_depth = 256, .cq_depth = 1024 };
	double Bps;

	if (h_open(&p, &o))
		return -1;
	if (cap) {
		struct xr_qp_attr a = { .rate_limit = cap * 1000 };
		if (xr_modify_qp(p.a.qp[0], &a, XR_QP_RATE_LIMIT)) {
			h_close(&p);
			return -1;
		}
	}
	Bps = h_write_stream(&p, 64 << 10, 16, 4, seconds);
	h_close(&p);
	return Bps * 8 / 1e6 * (4096.0 + 58 + 1 + 24) / 4096;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	static const uint32_t fab_caps[] = { 100, 1000, 5000, 9000 };
	static const double fractions[] = { 0.1, 0.5, 0.9 };

	printf("== incast through the switch model: 10 Gb/s ports, RED Kmin %u KiB Kmax %u KiB Pmax %.1f, %u KiB queue ==\n",
	       base.kmin / 1024, base.kmax / 1024, base.pmax, base.queue_limit / 1024);
	for (unsigned n = 2; n <= 8; n += 6) {
		incast_row(n, true, quick);
		incast_row(n, false, quick);
	}
	printf("\n== pacer accuracy on the fabric (10 Gb/s port; a second QP capped at 100 Mb/s beside it) ==\n");
	for (unsigned i = 0; i < (quick ? 1u : sizeof(fab_caps) / sizeof(fab_caps[0])); i++) {
		double r[2];
		pacer_run(fab_caps[i], 100, r);
		printf("RESULT pacer fabric cap %5u Mb/s achieved %8.1f Mb/s ratio %.4f (target 1 +- 0.02)\n", fab_caps[i],
		       r[0], r[0] / fab_caps[i]);
	}
	double secs = quick ? 0.2 : 1.0, line = real_rate_mbps(0, secs);
	printf("\n== pacer accuracy on the real clock: mem link, progress threads; unpaced %.0f Mb/s in this run ==\n",
	       line);
	for (unsigned i = 0; i < (quick ? 1u : sizeof(fractions) / sizeof(fractions[0])) && line > 0; i++) {
		uint32_t cap = (uint32_t)(line * fractions[i]);
		double got = real_rate_mbps(cap, secs);
		printf("RESULT pacer real cap %6u Mb/s (%.0f %% of unpaced) achieved %8.1f Mb/s ratio %.4f\n", cap,
		       fractions[i] * 100, got, got / cap);
	}
	for (unsigned i = 0; i < (quick ? 0u : 2u); i++) {
		uint32_t cap = i ? 1000 : 100;
		double got = real_rate_mbps(cap, secs);
		printf("RESULT pacer real cap %6u Mb/s achieved %8.1f Mb/s ratio %.4f\n", cap, got, got / cap);
	}
	return 0;
}
