/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's shared definitions: the configuration the command line
 * builds, one side's resources and state, perftest's exchange pattern per
 * test, and the functions each part of the tool offers the others
 * (perf_opts.c, perf_res.c, perf_report.c, perf_bw.c, perf_lat.c,
 * perf_pingpong.c, xroce-perf.c).
 */
#ifndef XR_TOOLS_PERF_H
#define XR_TOOLS_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perf_oob.h"
#include "xroce/verbs.h"

extern const char *prog;

#define MAX_QPS 64
#define CQ_MOD 100
#define MAX_POST_LIST 1024   /* -l: WRs in one post call */
#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define PEER_WAIT_MS 120000  /* a silent peer must not hang us */
#define PEER_CHECK_US 100     /* how often the passive end looks for the peer's "done" */
#define LINGER_MS 5000        /* after the run, answering a peer that still retransmits */
#define PP_EXIT_UNACKED 3     /* exit status: all done but the last send unacknowledged */

enum verb { V_WRITE, V_READ, V_SEND, V_ATOMIC };

struct cfg {
	enum verb verb;
	bool lat, pingpong, all, bidir, gbits, infinite, json, verify, counters;
	uint64_t size, iters;
	unsigned duration, qps, tx_depth, rx_depth, inline_size, qp_timeout;
	unsigned post_list, cq_mod;  /* -l: WRs per post call (one doorbell); -Q: a completion every N */
	bool retry7_forever;
	int mtu;                  /* bytes requested with -m, 0 = from the link */
	int port, gid_index;
	const char *server, *device, *json_file, *pcap;
	uint64_t pcap_frames;
	struct xr_link_spec link;
	struct xr_fault_cfg fault;  /* --fault-*: wrap the link when a rate is set */
	enum xr_progress_mode progress;
	bool mem;
	bool no_gather;             /* --no-gather: mem link without gather frames */
	enum xr_qp_type conn;     /* -c RC|UC|UD */
	bool use_srq;             /* --use_srq: the receivers share one SRQ */
	bool mcg;                 /* -g: the receivers' QPs join a multicast group */
	const char *mgid;         /* -M: the group (NULL: the default) */
};

int perf_mgid(const char *text, xr_gid *g);

/* perftest's Q_Key for UD QPs (DEF_QKEY) and the GRH room a UD receive
 * buffer needs in front of the payload. */
#define PERF_UD_QKEY 0x11111111u
#define PERF_UD_GRH 40u

struct side {
	const struct cfg *c;
	bool server;
	struct oob oob;
	struct xr_link *link;
	struct xr_link *base_link;  /* under any tap or fault wrapper: its path counters */
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_qp *qp[MAX_QPS];
	struct xr_srq *srq;        /* --use_srq */
	bool mcg_attached;         /* -g: the QPs joined mgid (detached before they go) */
	xr_gid mgid;
	struct xr_ah *ah[MAX_QPS]; /* UD: the peer QP's address */
	uint32_t grh;              /* UD: 40 bytes before each received payload */
	struct xr_mr *mr;
	uint8_t *buf;
	size_t buf_len, slot;      /* slot: bytes per message slot */
	unsigned slots;
	struct perf_dest my[MAX_QPS], rem[MAX_QPS];
	int mtu;                   /* enum */
	int rc;
	uint64_t verify_errors, verified;
	/* Latency tests: completions of the other kind (a receive while the
	 * send's ACK is late) kept for the wait that wants them. */
	struct xr_wc early[4];
	unsigned early_n;
	FILE *out;                 /* results: the client's stdout; the mem server's is quiet */
	FILE *quiet_out;
};

/* What perftest 6.06 exchanges around each test's run (observed through a
 * TCP proxy between two ib_*_bw/lat instances on Linux rxe). Before every
 * run: the keys, the keys again after RTR/RTS, one more handshake (and for
 * latency tests one at the very start). */
struct proto {
	bool pre_run_hs;     /* a handshake right before the run */
	bool post_run_hs;    /* a handshake right after it */
	bool reports;        /* BW reports exchanged */
	bool close_hs;       /* the closing handshake */
	bool done_msg;       /* the server then sends "done\0" */
};

struct lat_result {
	double min, max, typical, avg, stdev, p99, p999;
};

/* perf_opts.c: the command line. */
int parse_args(int argc, char **argv, struct cfg *c, const char **link_kind);

/* perf_res.c: helpers, resources, connection and perftest's prologue. */
double now_us(void);
uint8_t pattern(uint64_t seq, size_t i);
void pump(struct side *s);
void pump_until_peer(struct side *s, unsigned ms);
int mtu_enum_of(int bytes);
int open_side(struct side *s);
int connect_qp(struct side *s, unsigned q);
int check_wc(struct side *s, const struct xr_wc *wc);
/* A receive of len payload bytes at buf for QP q (or the SRQ), with the
 * GRH room UD needs: the payload lands at buf + s->grh. */
int post_recv_buf(struct side *s, unsigned q, uint8_t *buf, uint32_t len, uint64_t id);
/* Where a send WR on QP q goes: UD's address (after the RDMA fields, which
 * share the WR's union). */
void set_dest(struct side *s, unsigned q, struct xr_send_wr *w);
/* UD: a message is one packet, so at most the MTU (perftest changes a
 * larger size to it, and says so once). */
uint64_t ud_size(struct side *s, uint64_t size);
void close_side(struct side *s);
struct proto proto_of(const struct cfg *c);
int prologue(struct side *s);

/* perf_report.c: headers, result lines, JSON, verification and counters. */
extern FILE *json_out;
void print_header(struct side *s);
struct lat_result lat_stats(double *t, uint64_t n);
void json_bw(const struct cfg *c, const struct bw_report *r);
void json_lat(const struct lat_result *r, uint64_t size, uint64_t iters);
void print_bw_line(FILE *o, const struct bw_report *r);
double bw_unit(const struct cfg *c, double bytes_per_us);
void report_verify(struct side *s);
void print_counters(struct side *s);
void print_link_paths(struct side *s);

/* perf_bw.c, perf_lat.c, perf_pingpong.c: the runs. */
int run_bw(struct side *s);
int run_lat(struct side *s);
int run_pingpong(struct side *s);
void pp_linger(struct side *s);

#endif
