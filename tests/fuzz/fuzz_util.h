/* SPDX-License-Identifier: MIT */
/* What the fuzz targets share: reading the fuzzer's bytes, the engine's
 * clock, and guarded regions whose bytes follow a known pattern. */
#ifndef XR_FUZZ_UTIL_H
#define XR_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/verbs.h"

#define check(c, ...) do { if (!(c)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)

#define GUARD     64
#define GUARD_VAL 0xA5

/* The fuzzer's bytes, read in order; zeros once they run out. */
struct in {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t rd(struct in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		v = v << 8 | (in->n ? *in->p : 0);
		if (in->n)
			in->p++, in->n--;
	}
	return v;
}

/* The engines' clock (xr_engine_set_clock with ctx = &now): the input moves it. */
static inline uint64_t fuzz_clock(void *ctx)
{
	return *(const uint64_t *)ctx;
}

static inline uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 13 + 5);
}

/* A registered region with GUARD bytes of GUARD_VAL on each side. */
struct region {
	uint8_t *alloc, *mem;
	size_t len;
	struct xr_mr *mr;
};

static inline void region_open(struct region *g, struct xr_pd *pd, size_t len, int access)
{
	g->len = len;
	g->alloc = malloc(len + 2 * GUARD);
	check(g->alloc, "out of memory");
	g->mem = g->alloc + GUARD;
	memset(g->alloc, GUARD_VAL, len + 2 * GUARD);
	for (size_t i = 0; i < len; i++)
		g->mem[i] = pattern(i);
	g->mr = xr_reg_mr(pd, g->mem, len, access);
	check(g->mr, "reg_mr failed");
}

#endif
