/* SPDX-License-Identifier: MIT */
/* The AF_XDP blaster (xdp_blaster.c): frames per second that the sink of lb
 * counted while la's socket sent copies of frame in bursts of batch, for
 * seconds, from a sender and a sink thread or (one_thread) one thread
 * doing both; -1 and errno on failure. la and lb are open XDP links, idle. */
#ifndef XR_BENCH_XDP_BLASTER_H
#define XR_BENCH_XDP_BLASTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xroce/link.h"

double xdp_blaster(struct xr_link *la, struct xr_link *lb, const uint8_t *frame, size_t len, double seconds,
		   unsigned batch, bool one_thread);

#endif
