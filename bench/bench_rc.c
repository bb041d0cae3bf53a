/* SPDX-License-Identifier: MIT */
/*
 * RC over the in-memory link: RDMA WRITE goodput for 64 KiB messages at
 * 4 KiB MTU, and the round trip of an 8-byte WRITE (request out, ACK back,
 * completion polled), in both progress modes, both engines in one process.
 * Printed next to the machine's own bound measured in the same run
 * (bench/bound.h: both ICRCs and the receiver's copy, on one core).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/unit/rc_harness.h"
#include "bound.h"

static double write_goodput(enum xr_progress_mode mode, double seconds)
{
	struct pair p;
	struct h_opts o = { .mode = mode, .mtu = XR_MTU_4096, .buf_len = 64u << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .sq_depth = 256, .cq_depth = 1024 };
	double bps;

	if (h_open(&p, &o))
		return -1;
	bps = h_write_stream(&p, 64 << 10, 64, 16, seconds);
	h_close(&p);
	return bps;
}

static double write_rtt_us(enum xr_progress_mode mode, unsigned iters)
{
	struct pair p;
	struct h_opts o = { .mode = mode, .mtu = XR_MTU_4096, .buf_len = 1 << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7 };
	double *lat = malloc(iters * sizeof(double)), med;
	struct xr_wc wc;

	if (!lat || h_open(&p, &o))
		return -1;
	for (unsigned i = 0; i < iters; i++) {
		struct xr_sge s = { (uintptr_t)h_data(&p.a), 8, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		double t0;
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
		w.wr.rdma.rkey = p.b.mr->rkey;
		t0 = now_s();
		xr_post_send(p.a.qp[0], &w, NULL);
		while (!h_wait(&p, &p.a, &wc, 1000))
			;
		lat[i] = (now_s() - t0) * 1e6;
	}
	qsort(lat, iters, sizeof(double), cmp_double);
	med = lat[iters / 2];
	free(lat);
	h_close(&p);
	return med;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	double secs = quick ? 0.2 : 2.0;
	double bound = bound_copy_crc_rate(64 << 10, 4096, secs);

	printf("machine bound, one core: both ICRCs + the receiver's copy of 64 KiB at 4 KiB packets: %.2f GB/s\n",
	       bound / 1e9);
	for (int m = 0; m < 2; m++) {
		enum xr_progress_mode mode = m ? XR_PROGRESS_THREAD : XR_PROGRESS_INLINE;
		double g = write_goodput(mode, secs);
		double rtt = write_rtt_us(mode, quick ? 200 : 20000);
		printf("%-7s RDMA WRITE 64 KiB @ 4 KiB MTU: %.2f GB/s (%.2f of the bound); 8-byte WRITE round trip: median %.2f us\n",
		       m ? "thread" : "inline", g / 1e9, g / bound, rtt);
		if (g < 0 || rtt < 0)
			return 1;
	}
	return 0;
}
