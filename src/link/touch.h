/* SPDX-License-Identifier: MIT */
/*
 * A link's buffers paged in when it opens, not by its first traffic. On a
 * VM that pages in shadow tables, every page's first touch from user
 * space faults, even a page the kernel has populated (MAP_POPULATE, a
 * packet ring, a pinned umem): ~12 us for a write here, ~2 us for a read.
 * A ring or pool that traffic cycles through would pay it frame by frame
 * for its first thousand round trips (performance-log.md, 2026-12-06).
 */
#ifndef XR_LINK_TOUCH_H
#define XR_LINK_TOUCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A byte of each page: written (memory we own) or read (a ring the
 * kernel writes: reading leaves it as it is). */
static inline void xr_pages_touch(void *p, size_t bytes, bool write)
{
	volatile uint8_t *b = p;
	uint8_t sink = 0;

	for (size_t o = 0; p && o < bytes; o += 4096) {
		if (write)
			b[o] = 0;
		else
			sink ^= b[o];
	}
	(void)sink;
}

#endif
