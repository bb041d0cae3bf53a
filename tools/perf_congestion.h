/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf congestion: the incast run (perf_congestion.c) and its command
 * line (perf_congestion_opts.c).
 */
#ifndef XR_TOOLS_PERF_CONGESTION_H
#define XR_TOOLS_PERF_CONGESTION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "xroce/fabric.h"

#define CG_MAX_SENDERS 16
#define CG_MAX_QPS 8          /* per sender */
#define CG_MAX_SETS 16        /* --set REG=VALUE */
#define CG_QHIST 4096         /* 1 KiB buckets of queue length: up to 4 MiB */

struct cg_set {
	uint32_t reg, value;
};

struct cg_cfg {
	unsigned senders, qps;
	uint64_t bottleneck_bps, edge_bps;
	uint32_t size, mtu, depth, queue;
	double duration_ms, interval_ms;
	bool ecn;
	uint32_t kmin, kmax;
	double pmax;
	bool dcqcn, pfc, send, mac_pause, per_qp, fabric_stats;
	uint32_t xoff;                /* --pfc: XOFF threshold per ingress priority */
	unsigned prio;                /* the data's priority (DSCP prio << 3) */
	int inject_prio;              /* -p: -1 none */
	double inject_ms, inject_at_ms;
	unsigned qp_timeout;
	uint64_t seed, step_ns;
	double wall_limit_s;
	const char *regs_prefix;      /* --regs-socket: serve each engine's registers */
	struct cg_set sets[CG_MAX_SETS];
	unsigned nsets;
	FILE *out;
};

/* Counters summed over the run's devices and ports. */
struct cg_totals {
	uint64_t drops, drop[XR_FABRIC_DROP_COUNT];
	uint64_t marks, wire, rexmit, timeouts, cnp_tx, cnp_rx, cuts, pacer;
	uint64_t pfc_sw, pfc_inj, host_pfc, host_refusals, eng_pause, eng_paused_us;
};

/* argv[0] is "congestion". Returns -1 to run, else the exit status (0
 * after --help, 2 on bad usage). */
int cg_parse(int argc, char **argv, struct cg_cfg *c);
/* The run: 0, or 1 when it could not be set up. */
int cg_run(const struct cg_cfg *c);
/* xroce-perf congestion ...: parse and run. */
int run_congestion(int argc, char **argv);

/* Helpers, exposed for their checks: the p99 of a 1 KiB-bucket histogram
 * of n samples (bytes, bucket top), and Jain's index of n values. */
uint64_t cg_qhist_p99(const uint64_t *h, uint64_t n);
double cg_jain(const double *x, unsigned n);

#endif
