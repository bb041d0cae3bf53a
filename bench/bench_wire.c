/* SPDX-License-Identifier: MIT */
/*
 * Wire-layer benchmark: ICRC throughput (fast path, portable reference, and
 * raw ISA-L CRC-32 over the same bytes, measured in the same run) for 64 B,
 * 1 KiB and 4 KiB packets, and build/parse cost per packet. The number that
 * matters is the ratio fast/raw: masking the variant fields must cost
 * almost nothing. Each figure is the best of several rounds (shared,
 * noisy machines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xroce/wire.h"

#define ROUNDS 7

static double now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;

typedef uint32_t (*crc_fn)(const uint8_t *, size_t);

static uint32_t raw_isal(const uint8_t *p, size_t n) { return xr_crc32(0, p, n); }

/* Best-of-ROUNDS bytes per second of fn over one packet of n bytes. */
static double crc_rate(crc_fn fn, const uint8_t *p, size_t n, size_t bytes_per_round)
{
	double best = 0;
	size_t iters = bytes_per_round / n + 1;

	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_sec(), dt;
		uint32_t acc = 0;
		for (size_t i = 0; i < iters; i++)
			acc ^= fn(p, n);
		dt = now_sec() - t0;
		sink = acc;
		if (dt > 0 && (double)(iters * n) / dt > best)
			best = (double)(iters * n) / dt;
	}
	return best;
}

int main(int argc, char **argv)
{
	static uint8_t payload[XR_MAX_MTU], frame[XR_MAX_FRAME];
	static const uint32_t sizes[] = { 64, 1024, 4096 };
	double ratio_4k = 0;
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	size_t budget = quick ? (8u << 20) : (256u << 20);

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1);

	printf("ICRC throughput (GB/s, best of %d), IPv4 RC SEND packets of N bytes on the wire\n", ROUNDS);
	printf("%8s %10s %10s %10s %12s\n", "bytes", "raw-isal", "icrc-fast", "icrc-ref", "fast/raw");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct xr_pkt b;
		size_t ip_len;
		double raw, raw2, fast, ref;
		/* Packet of `sizes[s]` bytes from the IP header through the ICRC. */
		uint32_t hdr = XR_IPV4_HLEN + XR_UDP_HLEN + XR_BTH_LEN + XR_ICRC_LEN;
		xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
		b.payload = payload;
		b.payload_len = sizes[s] > hdr ? sizes[s] - hdr : 0;
		if (xr_pkt_build(&b, frame, sizeof(frame)) < 0)
			return 1;
		ip_len = b.len - b.l3_off - XR_ICRC_LEN;
		raw = crc_rate(raw_isal, frame + b.l3_off, ip_len, budget);
		fast = crc_rate(xr_icrc, frame + b.l3_off, ip_len, budget);
		ref = crc_rate(xr_icrc_ref, frame + b.l3_off, ip_len, budget / 16);
		/* Raw again: the machine may have changed speed in between. */
		raw2 = crc_rate(raw_isal, frame + b.l3_off, ip_len, budget);
		if (raw2 > raw)
			raw = raw2;
		printf("%8u %10.2f %10.2f %10.3f %11.1f%%\n", sizes[s], raw / 1e9, fast / 1e9,
		       ref / 1e9, 100.0 * fast / raw);
		if (sizes[s] == 4096)
			ratio_4k = fast / raw;
	}

	/* Build and parse cost per packet. */
	{
		struct xr_pkt b, p;
		size_t iters = quick ? 20000 : 500000;
		double best_build = 1e9, best_parse = 1e9;
		for (int r = 0; r < ROUNDS; r++) {
			double t0 = now_sec(), t1;
			for (size_t i = 0; i < iters; i++) {
				xr_pkt_init(&b, XR_OP_RC_RDMA_WRITE_ONLY);
				b.payload = payload;
				b.payload_len = 1024;
				b.psn = (uint32_t)i & XR_PSN_MASK;
				sink ^= (uint32_t)xr_pkt_build(&b, frame, sizeof(frame));
			}
			t1 = now_sec();
			for (size_t i = 0; i < iters; i++)
				sink ^= (uint32_t)xr_pkt_parse(frame, b.len, 1024, 0, &p);
			if ((t1 - t0) / (double)iters < best_build)
				best_build = (t1 - t0) / (double)iters;
			if ((now_sec() - t1) / (double)iters < best_parse)
				best_parse = (now_sec() - t1) / (double)iters;
		}
		printf("\nRC_RDMA_WRITE_ONLY, 1 KiB payload: build %.0f ns/pkt, parse+ICRC check %.0f ns/pkt\n",
		       best_build * 1e9, best_parse * 1e9);
	}
	printf("\nratio icrc-fast / raw-isal at 4 KiB: %.3f (target >= 0.90) %s\n", ratio_4k,
	       ratio_4k >= 0.90 ? "PASS" : "BELOW TARGET");
	return 0;
}
