/* SPDX-License-Identifier: MIT */
/*
 * The machine's own bounds for what xroce-perf measures, taken in the same
 * run so that a shared, noisy machine compares like with like:
 *
 *   copy+crc  one core doing the unavoidable per-byte work of an RDMA WRITE
 *             of SIZE bytes at MTU-sized packets: the sender's ICRC, the
 *             receiver's ICRC and the receiver's copy into memory.
 *   pingpong  two threads on two cores bouncing one cache line: the half
 *             round trip that any busy-polling exchange between two cores
 *             pays at least.
 *
 * usage: bench-bound [--quick] [--size BYTES] [--mtu BYTES]
 * prints "copy_crc_GBps=<x>" and "cacheline_half_rtt_us=<y>" (key=value,
 * for bench/perf.sh), each with a human line above it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <isa-l/crc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Per message: for each packet, CRC the source, copy it, CRC the copy.
 * Sources and destinations rotate through 16 messages' worth of memory,
 * as xroce-perf's buffers do (16 slots). */
static double copy_crc_rate(size_t size, size_t mtu, double seconds)
{
	const size_t span = 16 * size;
	uint8_t *src = malloc(span), *dst = malloc(span);
	volatile uint32_t sink = 0;
	uint64_t bytes = 0;
	size_t off = 0;
	double t0, t;

	if (!src || !dst) {
		free(src);
		free(dst);
		return -1;
	}
	for (size_t i = 0; i < span; i++)
		src[i] = (uint8_t)(i * 31);
	memset(dst, 0, span);
	t0 = now_s();
	do {
		for (int rep = 0; rep < 16; rep++) {
			if (off + size > span)
				off = 0;
			for (size_t p = 0; p < size; p += mtu) {
				size_t n = size - p < mtu ? size - p : mtu;
				sink ^= crc32_gzip_refl(0, src + off + p, n);
				memcpy(dst + off + p, src + off + p, n);
				sink ^= crc32_gzip_refl(0, dst + off + p, n);
			}
			off += size;
			bytes += size;
		}
		t = now_s();
	} while (t - t0 < seconds);
	free(src);
	free(dst);
	return (double)bytes / (t - t0);
}

/* One cache line, two threads: the initiator writes an odd number, the
 * echoer answers with the next even one. */
struct pp {
	_Alignas(64) _Atomic uint64_t line;
	unsigned iters;
	int cpu;
};

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);   /* best effort: an unpinned run still measures */
}

static void *echoer(void *arg)
{
	struct pp *p = arg;
	pin(p->cpu);
	for (uint64_t v = 1; v < 2ull * p->iters; v += 2) {
		while (atomic_load_explicit(&p->line, memory_order_acquire) != v)
			;
		atomic_store_explicit(&p->line, v + 1, memory_order_release);
	}
	return NULL;
}

static double cacheline_half_rtt_us(unsigned iters)
{
	struct pp p = { .iters = iters, .cpu = 1 };
	double *lat = malloc(iters * sizeof(double)), med;
	pthread_t t;

	if (!lat)
		return -1;
	atomic_store(&p.line, 0);
	if (pthread_create(&t, NULL, echoer, &p)) {
		free(lat);
		return -1;
	}
	pin(0);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t v = 2ull * i + 1;
		double t0 = now_s();
		atomic_store_explicit(&p.line, v, memory_order_release);
		while (atomic_load_explicit(&p.line, memory_order_acquire) != v + 1)
			;
		lat[i] = (now_s() - t0) * 1e6 / 2;
	}
	pthread_join(t, NULL);
	qsort(lat, iters, sizeof(double), cmp_double);
	med = lat[iters / 2];
	free(lat);
	return med;
}

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
	double rate = copy_crc_rate(size, mtu, quick ? 0.2 : 2.0);
	double half = cacheline_half_rtt_us(quick ? 2000 : 200000);
	if (rate <= 0 || half <= 0) {
		fprintf(stderr, "bench-bound: out of memory or threads\n");
		return 1;
	}
	printf("# one core, per %zu-byte message at %zu-byte packets: ICRC at both ends + the receiver's copy\n",
	       size, mtu);
	printf("copy_crc_GBps=%.3f\n", rate / 1e9);
	printf("# two threads on two cores bouncing one cache line: median half round trip\n");
	printf("cacheline_half_rtt_us=%.3f\n", half);
	return 0;
}
