/* SPDX-License-Identifier: MIT */
/* The AF_XDP blaster (xdp_blaster.c): frames per second that the sink of lb
 * counted while la's socket sent copies of frame in bursts of batch, for
 * seconds; -1 and errno on failure. la and lb are open XDP links, idle. */
#ifndef XR_BENCH_XDP_BLASTER_H
#define XR_BENCH_XDP_BLASTER_H

#include <stddef.h>
#include <stdint.h>

#include "xroce/link.h"

double xdp_blaster(struct xr_link *la, struct xr_link *lb, const uint8_t *frame, size_t len, double seconds,
		   unsigned batch);

#endif
