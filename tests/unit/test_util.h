/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the unit suites. */
#ifndef XR_TEST_UTIL_H
#define XR_TEST_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Under ThreadSanitizer (make test-tsan: XR_TSAN) threads run many times
 * slower and memory is laid out by its runtime: the few tests that count
 * wakeups, time a lease or a linger, or count page faults are left out of
 * that build (each marked where it is listed). */
#define XR_TIMING_TEST __attribute__((unused))   /* not listed under XR_TSAN */

/* Runs fn(arg) on a thread; false if it has not returned within 5 s
 * (a deadlock: the thread is left behind, stuck). */
static inline bool h_finishes(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	struct timespec until;

	if (pthread_create(&t, NULL, fn, arg))
		return false;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	if (pthread_timedjoin_np(t, NULL, &until)) {
		pthread_detach(t);
		return false;
	}
	return true;
}

/* Hex string with optional spaces, '|' and newlines -> bytes; returns length. */
static inline size_t hex_to_bytes(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (; *hex; hex++) {
		int v;
		char c = *hex;
		if (c >= '0' && c <= '9') v = c - '0';
		else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
		else continue;
		if (hi < 0) {
			hi = v;
		} else {
			if (n < cap)
				out[n] = (uint8_t)(hi << 4 | v);
			n++;
			hi = -1;
		}
	}
	return n;
}

/* Page faults this process has taken (a first touch of memory). */
static inline long minor_faults(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/* xorshift64*: a seeded generator so failing runs are reproducible. */
static inline uint64_t test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

#endif
