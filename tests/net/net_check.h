/* SPDX-License-Identifier: MIT */
/* The checks of the namespace link tests: "ok"/"FAIL" lines a script
 * reads, failures counted in `fails`, and a monotonic clock. */
#ifndef XR_TEST_NET_CHECK_H
#define XR_TEST_NET_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

static int fails;

/* cond is evaluated once. */
#define CHECK(cond, ...)                                   \
	do {                                               \
		bool ok_ = (cond);                         \
		printf(ok_ ? "ok   " : "FAIL ");           \
		fails += !ok_;                             \
		printf(__VA_ARGS__);                       \
		printf("\n");                              \
		fflush(stdout);                            \
	} while (0)

static inline double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

#endif
