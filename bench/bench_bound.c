/* SPDX-License-Identifier: MIT */
/*
 * Prints the machine's own bounds (bench/bound.h) for what xroce-perf
 * measures, for bench/perf.sh to set beside xroce-perf's figures.
 *
 * usage: bench-bound [--quick] [--size BYTES] [--mtu BYTES]
 * prints copy_crc_GBps, memlink_stream_GBps, memlink_gather_GBps, cacheline_half_rtt_us,
 * memlink_half_rtt_us, spsc_64B_Mpps and wakeup_us
 * (key=value),
 * each with a comment line above it.
 */
#include <stdbool.h>
#include <stdio.h>

#include "bound.h"

int main(int argc, char **argv)
{
	bool quick = false;
	size_t size = 65536, mtu = 4096;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (i + 1 < argc && (!strcmp(argv[i], "--size") || !strcmp(argv[i], "--mtu"))) {
			char *end;
			unsigned long v = strtoul(argv[i + 1], &end, 0);
			if (*end || v == 0 || v > (16u << 20)) {
				fprintf(stderr, "bench-bound: %s wants 1..16777216\n", argv[i]);
				return 2;
			}
			*(!strcmp(argv[i], "--size") ? &size : &mtu) = v;
			i++;
		} else {
			fprintf(stderr, "usage: bench-bound [--quick] [--size BYTES] [--mtu BYTES]\n");
			return 2;
		}
	}
	double rate = bound_copy_crc_rate(size, mtu, quick ? 0.2 : 2.0);
	double stream = bound_memlink_stream_rate(size, mtu, quick ? 0.2 : 2.0, false);
	double gather = bound_memlink_stream_rate(size, mtu, quick ? 0.2 : 2.0, true);
	double half = bound_cacheline_half_rtt_us(quick ? 2000 : 200000);
	double link = bound_memlink_half_rtt_us(quick ? 20000 : 100000);
	double spsc = bound_spsc_msg_rate(quick ? 0.05 : 1.0);
	bool rt = false;
	double wake = bound_wakeup_us(quick ? 50 : 1000, &rt);
	if (rate <= 0 || stream <= 0 || gather <= 0 || half <= 0 || link <= 0 || spsc <= 0 || wake <= 0) {
		fprintf(stderr, "bench-bound: out of memory or threads\n");
		return 1;
	}
	printf("# one core, per %zu-byte message at %zu-byte packets: ICRC at both ends + the receiver's copy\n",
	       size, mtu);
	printf("copy_crc_GBps=%.3f\n", rate / 1e9);
	printf("# two cores, the in-memory link alone: the sender's copy into the frame + ICRC, the receiver's ICRC + copy out\n");
	printf("memlink_stream_GBps=%.3f\n", stream / 1e9);
	printf("# the same with the payload read where it lies (a gather send: no copy into the frame)\n");
	printf("memlink_gather_GBps=%.3f\n", gather / 1e9);
	printf("# two threads on two cores bouncing one cache line: median half round trip\n");
	printf("cacheline_half_rtt_us=%.3f\n", half);
	printf("# the in-memory link alone: an 8-byte WRITE's frame (82 bytes) back and forth between the cores: median half round trip\n");
	printf("memlink_half_rtt_us=%.3f\n", link);
	printf("# one core to the other through an SPSC ring of 64-byte messages (copied in and out)\n");
	printf("spsc_64B_Mpps=%.2f\n", spsc / 1e6);
	printf("# a thread asleep on an eventfd woken from the other core, where a program spins: median (%s)\n",
	       rt ? "real-time priority, as the library's engine thread" : "normal priority: no right to real-time here");
	printf("wakeup_us=%.2f\n", wake);
	return 0;
}
