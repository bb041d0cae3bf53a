/* SPDX-License-Identifier: MIT */
/* bench-links' latency row (links_lat.c). */
#ifndef XROCE_BENCH_LINKS_LAT_H
#define XROCE_BENCH_LINKS_LAT_H

struct xr_link;

/* 8-byte WRITEs bounced between fresh links la and lb (addresses aa, ab):
 * the median half round trip of the first 1,000 and of the steady ones,
 * in us. 0, or -1 if the setup or a round trip failed. */
int links_latency(struct xr_link *la, struct xr_link *lb, const char *aa, const char *ab, double *first_us,
		  double *steady_us);

#endif
