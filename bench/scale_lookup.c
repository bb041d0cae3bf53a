/* SPDX-License-Identifier: MIT */
/* QP and key lookups as the receive path does them (xr_qp_lookup,
 * xr_mr_lookup), timed for bench-scale. */
#include <time.h>

#include "nic/engine.h"
#include "scale_lookup.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double scale_qp_lookup_ns(struct xr_engine *e, const uint32_t *qpn, unsigned n, unsigned rounds,
			  unsigned *found)
{
	unsigned hits = 0;
	double t0 = now_ns();

	for (unsigned r = 0; r < rounds; r++)
		for (unsigned i = 0; i < n; i++)
			hits += xr_qp_lookup(e, qpn[i]) != NULL;
	*found = hits / (rounds ? rounds : 1);
	return (now_ns() - t0) / ((double)n * rounds);
}

double scale_key_lookup_ns(struct xr_engine *e, const uint32_t *key, unsigned n, unsigned rounds,
			   unsigned *found)
{
	unsigned hits = 0;
	double t0 = now_ns();

	for (unsigned r = 0; r < rounds; r++)
		for (unsigned i = 0; i < n; i++)
			hits += xr_mr_lookup(e, key[i]) != NULL;
	*found = hits / (rounds ? rounds : 1);
	return (now_ns() - t0) / ((double)n * rounds);
}
