/* SPDX-License-Identifier: MIT */
/* bench-scale's view into the engine's tables (scale_lookup.c includes the
 * engine's own header, which bench_scale.c, a verbs program, cannot). */
#ifndef XR_BENCH_SCALE_LOOKUP_H
#define XR_BENCH_SCALE_LOOKUP_H

#include <stdint.h>

struct xr_engine;

/* Nanoseconds per lookup of each of n QPNs (or keys), rounds times over
 * (the best of five runs); *found: how many of the n named something. */
double scale_qp_lookup_ns(struct xr_engine *e, const uint32_t *qpn, unsigned n, unsigned rounds,
			  unsigned *found);
double scale_key_lookup_ns(struct xr_engine *e, const uint32_t *key, unsigned n, unsigned rounds,
			   unsigned *found);

/* An engine holding only the n QPNs qpn[] (in RESET) and n regions (MR
 * indexes 1..n; their keys into keys[]): the 1k side of the comparison,
 * timed alternately with the big engine so both see the same machine.
 * NULL on failure. One at a time. */
struct xr_engine *scale_ref_engine(const uint32_t *qpn, unsigned n, uint32_t *keys);
void scale_ref_engine_free(struct xr_engine *e);

#endif
