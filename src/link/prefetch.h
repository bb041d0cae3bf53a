/* SPDX-License-Identifier: MIT */
/*
 * Taking a frame's lines for writing ahead of time. A frame freed by the
 * other end's core has its lines in that core's cache: the first stores
 * into it wait for ownership, and the first read-back of what was just
 * written (a checksum, the ICRC) stalls behind them. PREFETCHW asks for
 * ownership early; GCC's __builtin_prefetch(p, 1) emits a plain read
 * prefetch for generic x86-64, which brings a shared copy and leaves the
 * wait in place. PREFETCHW needs CPUID 0x80000001 ECX bit 8 (PRFCHW).
 */
#ifndef XR_LINK_PREFETCH_H
#define XR_LINK_PREFETCH_H

#include <stdatomic.h>
#include <stdbool.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

static inline bool xr_cpu_has_prefetchw(void)
{
#if defined(__x86_64__)
	static _Atomic int known = -1;   /* -1: not asked yet */
	int v = atomic_load_explicit(&known, memory_order_relaxed);

	if (v < 0) {
		unsigned a, b, c, d;
		v = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
		atomic_store_explicit(&known, v, memory_order_relaxed);
	}
	return v;
#else
	return false;
#endif
}

/* The n cache lines from p on. */
static inline void xr_prefetch_for_write(const void *p, unsigned n)
{
	const char *c = p;

#if defined(__x86_64__)
	if (xr_cpu_has_prefetchw()) {
		for (unsigned i = 0; i < n; i++)
			__asm__ volatile("prefetchw %0" : : "m"(c[64 * i]));
		return;
	}
#endif
	for (unsigned i = 0; i < n; i++)
		__builtin_prefetch(c + 64 * i, 1);
}

#endif
