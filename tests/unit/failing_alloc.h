/* SPDX-License-Identifier: MIT */
/*
 * For tests linked with -Wl,--wrap=malloc -Wl,--wrap=calloc: an
 * allocation of exactly fail_next's size fails (ENOMEM) that many times;
 * every other passes through. The engine's sizes: qp_mem_sizes.c.
 */
#ifndef XR_TEST_FAILING_ALLOC_H
#define XR_TEST_FAILING_ALLOC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

size_t test_qp_page_bytes(void);
size_t test_qp_act_bytes(unsigned sq_log);
size_t test_qp_res_bytes(unsigned nres);
size_t test_resp_held_bytes(void);

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);

static size_t fail_bytes;     /* an allocation of exactly this size fails... */
static unsigned fail_left;    /* ...this many more times */

static inline bool must_fail(size_t bytes)
{
	if (!fail_left || bytes != fail_bytes)
		return false;
	fail_left--;
	return true;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	if (must_fail(n)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	if (must_fail(n * size)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

static inline void fail_next(size_t bytes, unsigned times)
{
	fail_bytes = bytes;
	fail_left = times;
}

#endif
