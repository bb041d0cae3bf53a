/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf: perftest's tests on xroce (write/read/send/atomic, bandwidth
 * and latency), with perftest's flags, output tables and out-of-band TCP
 * exchange, so it can face ib_write_bw and friends; an ibv_rc_pingpong
 * compatible mode; and --verify, which checks every payload end to end.
 *
 *   xroce-perf TEST [options] [server-address]
 *   xroce-perf pingpong [options] [server-address]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "perf_oob.h"
#include "xroce/verbs.h"

static const char *prog = "xroce-perf";

#define MAX_QPS 64
#define CQ_MOD 100
#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define PEER_WAIT_MS 120000  /* a silent peer must not hang us */
#define LINGER_MS 5000        /* after the run, answering a peer that still retransmits */

enum verb { V_WRITE, V_READ, V_SEND, V_ATOMIC };
static const char *const verb_title[] = { "RDMA_Write", "RDMA_Read", "Send", "Atomic FETCH_AND_ADD" };

struct cfg {
	enum verb verb;
	bool lat, pingpong, all, bidir, gbits, infinite, json, verify, counters;
	uint64_t size, iters;
	unsigned duration, qps, tx_depth, rx_depth, inline_size, qp_timeout;
	bool retry7_forever;
	int mtu;                  /* bytes requested with -m, 0 = from the link */
	int port, gid_index;
	const char *server, *device, *json_file, *pcap;
	uint64_t pcap_frames;
	struct xr_link_spec link;
	enum xr_progress_mode progress;
	bool mem;
};

struct side {
	const struct cfg *c;
	bool server;
	struct oob oob;
	struct xr_link *link;
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_qp *qp[MAX_QPS];
	struct xr_mr *mr;
	uint8_t *buf;
	size_t buf_len, slot;      /* slot: bytes per message slot */
	unsigned slots;
	struct perf_dest my[MAX_QPS], rem[MAX_QPS];
	int mtu;                   /* enum */
	int rc;
	uint64_t verify_errors, verified;
	FILE *out;                 /* results: the client's stdout; the mem server's is quiet */
	FILE *quiet_out;
};

static void print_counters(struct side *s);

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 167 + i * 31 + (i >> 9) + 1);
}

/* A message that says which slot it came from, so a receiver can check it
 * whatever order several QPs deliver in: the slot number, then a pattern. */
static void fill_message(uint8_t *p, uint64_t size, uint64_t slot)
{
	for (uint64_t i = 0; i < size; i++)
		p[i] = pattern(size >= 8 ? slot + 1000 : 1000, i);
	if (size >= 8)
		memcpy(p, &slot, 8);
}

static bool check_message(const uint8_t *p, uint64_t size)
{
	uint64_t slot = 0;

	if (size >= 8)
		memcpy(&slot, p, 8);
	for (uint64_t i = size >= 8 ? 8 : 0; i < size; i++)
		if (p[i] != pattern(size >= 8 ? slot + 1000 : 1000, i))
			return false;
	return true;
}

/* The engine moves only when someone runs it (inline progress). */
static void pump(struct side *s)
{
	if (s->c->progress == XR_PROGRESS_INLINE)
		xr_engine_progress(xr_context_engine(s->ctx));
}

static void pump_hook(void *arg)
{
	pump(arg);
}

/* Waits (up to ms) for the OOB socket to turn readable, or to end, while
 * keeping the engine going. */
static void pump_until_peer(struct side *s, unsigned ms)
{
	double end = now_us() + ms * 1e3;

	while (now_us() < end) {
		struct pollfd p = { s->oob.fd, POLLIN, 0 };
		if (poll(&p, 1, 0) > 0)
			return;
		pump(s);
		if (s->c->progress == XR_PROGRESS_THREAD)
			poll(&p, 1, 10);
	}
}

static int mtu_enum_of(int bytes)
{
	switch (bytes) {
	case 256: return 1;
	case 512: return 2;
	case 1024: return 3;
	case 2048: return 4;
	case 4096: return 5;
	default: return 0;
	}
}

/* As rxe: the largest IB MTU that fits the link's MTU minus RoCE's overhead. */
static int mtu_from_link(uint32_t link_mtu)
{
	int e = 5;
	while (e > 1 && (128u << e) > link_mtu - 80)
		e--;
	return e;
}

/* ---- setup ---- */

static int open_side(struct side *s)
{
	const struct cfg *c = s->c;
	struct xr_device_opts d = { .addr = c->link.addr, .progress = c->progress,
				    .retry7_forever = c->retry7_forever };
	struct xr_qp_init_attr ia;
	uint64_t max_size = c->all ? (1u << 23) : c->size;

	s->ctx = xr_open_device(s->link, &d);
	if (!s->ctx) {
		fprintf(stderr, "%s: cannot open the device on %s: %s\n", prog, c->link.addr, strerror(errno));
		return -1;
	}
	/* A peer resolves our address (ARP) while we wait on the exchange. */
	if (c->progress == XR_PROGRESS_INLINE) {
		s->oob.idle = pump_hook;
		s->oob.idle_arg = s;
	}
	s->pd = xr_alloc_pd(s->ctx);
	s->cq = xr_create_cq(s->ctx, 8192);
	s->slot = max_size < 64 ? 64 : (size_t)max_size;
	s->slots = s->slot >= (1u << 20) ? 2 : 16;
	s->buf_len = s->slot * s->slots * 2 + 4096;
	s->buf = aligned_alloc(4096, (s->buf_len + 4095) & ~(size_t)4095);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	memset(s->buf, 0, s->buf_len);
	/* READ sources hold a known pattern: the reader checks it. */
	for (unsigned k = 0; k < s->slots; k++)
		for (size_t i = 0; i < s->slot; i++)
			s->buf[k * s->slot + i] = pattern(k, i);
	s->mr = xr_reg_mr(s->pd, s->buf, s->buf_len, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
							XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC);
	if (!s->mr) {
		fprintf(stderr, "%s: cannot register %zu bytes: %s\n", prog, s->buf_len, strerror(errno));
		return -1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = s->cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = c->tx_depth < 2 ? 2 : c->tx_depth;
	ia.cap.max_recv_wr = c->rx_depth;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = c->inline_size;
	for (unsigned q = 0; q < c->qps; q++) {
		s->qp[q] = xr_create_qp(s->pd, &ia);
		if (!s->qp[q]) {
			fprintf(stderr, "%s: cannot create QP %u: %s\n", prog, q, strerror(errno));
			return -1;
		}
		s->my[q].qpn = xr_qp_num(s->qp[q]);
		s->my[q].psn = (uint32_t)lrand48() & 0xFFFFFF;
		s->my[q].rkey = s->mr->rkey;
		s->my[q].vaddr = (uintptr_t)s->buf;
		s->my[q].out_reads = XR_MAX_RD_ATOMIC;
		xr_query_gid(s->ctx, &s->my[q].gid);
	}
	s->mtu = c->mtu ? mtu_enum_of(c->mtu) : mtu_from_link(s->link->mtu);
	return 0;
}

static int connect_qp(struct side *s, unsigned q)
{
	const struct cfg *c = s->c;
	struct xr_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
	if (xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = XR_QPS_RTR;
	a.path_mtu = (enum xr_mtu)s->mtu;
	a.dest_qp_num = s->rem[q].qpn;
	a.rq_psn = s->rem[q].psn;
	a.max_dest_rd_atomic = (uint8_t)(s->my[q].out_reads > XR_MAX_RD_ATOMIC ? XR_MAX_RD_ATOMIC : s->my[q].out_reads);
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 0xFF;
	a.ah_attr.grh.dgid = s->rem[q].gid;
	if (xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
					 XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER)) {
		fprintf(stderr, "%s: cannot move QP to RTR (peer unreachable?)\n", prog);
		return -1;
	}
	a.qp_state = XR_QPS_RTS;
	a.timeout = (uint8_t)c->qp_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = s->my[q].psn;
	a.max_rd_atomic = (uint8_t)(s->rem[q].out_reads > XR_MAX_RD_ATOMIC ? XR_MAX_RD_ATOMIC : s->rem[q].out_reads);
	return xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
					 XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC);
}

static void print_dest(FILE *o, const char *side, const struct perf_dest *d, enum verb v)
{
	fprintf(o, " %s address: LID %#04x QPN %#06x PSN %#06x", side, d->lid, d->qpn, d->psn);
	if (v == V_READ)
		fprintf(o, " OUT %#04x", d->out_reads);
	if (v != V_SEND)
		fprintf(o, " RKey %#08x VAddr %#016" PRIx64, d->rkey, d->vaddr);
	fprintf(o, "\n GID: ");
	for (int i = 0; i < 16; i++)
		fprintf(o, "%02d%s", d->gid.raw[i], i < 15 ? ":" : "\n");
}

static void print_header(struct side *s)
{
	const struct cfg *c = s->c;
	FILE *o = s->out;

	fprintf(o, RESULT_LINE);
	fprintf(o, "                    %s %s Test\n", verb_title[c->verb], c->lat ? "Latency" : "BW");
	fprintf(o, " Dual-port       : OFF\t\tDevice         : %s\n", c->device);
	fprintf(o, " Number of qps   : %u\t\tTransport type : IB\n", c->qps);
	fprintf(o, " Connection type : RC\t\tUsing SRQ      : OFF\n");
	fprintf(o, " PCIe relax order: OFF\n");
	if (!c->lat || c->verb != V_WRITE)
		fprintf(o, " TX depth        : %u\n", c->tx_depth);
	if (c->verb == V_READ || c->verb == V_ATOMIC)
		fprintf(o, " Outstand reads  : %u\n", s->rem[0].out_reads);
	if (c->verb == V_SEND)
		fprintf(o, " RX depth        : %u\n", c->rx_depth);
	if (!c->lat && !c->pingpong)
		fprintf(o, " CQ Moderation   : %d\n", CQ_MOD);
	fprintf(o, " Mtu             : %u[B]\n", 128u << s->mtu);
	fprintf(o, " Link type       : Ethernet (xroce %s link)\n", c->mem ? "mem" : c->link.kind);
	fprintf(o, " GID index       : %d\n", c->gid_index);
	if (c->verb == V_WRITE || c->verb == V_SEND)
		fprintf(o, " Max inline data : %u[B]\n", c->inline_size);
	fprintf(o, " rdma_cm QPs\t : OFF\n");
	fprintf(o, " Data ex. method : Ethernet\n");
	if (c->verify)
		fprintf(o, " Data validation : ON (xroce --verify)\n");
	fprintf(o, RESULT_LINE);
	for (unsigned q = 0; q < c->qps; q++)
		print_dest(o, "local", &s->my[q], c->verb);
	for (unsigned q = 0; q < c->qps; q++)
		print_dest(o, "remote", &s->rem[q], c->verb);
	fprintf(o, RESULT_LINE);
}

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

static struct proto proto_of(const struct cfg *c)
{
	if (!c->lat)
		return c->verb == V_SEND ? (struct proto){ true, false, false, true, true }
					 : (struct proto){ false, true, true, true, false };
	switch (c->verb) {
	case V_WRITE: return (struct proto){ false, false, false, false, false };
	case V_SEND: return (struct proto){ false, false, false, true, true };
	default: return (struct proto){ false, false, false, true, false };
	}
}

/* perftest's sequence up to the test itself. */
static int prologue(struct side *s)
{
	const struct cfg *c = s->c;

	if (oob_perftest_preamble(&s->oob, &s->mtu))
		return -1;
	if (c->lat && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))
		return -1;
	for (unsigned q = 0; q < c->qps; q++)
		if (oob_handshake(&s->oob, &s->my[q], &s->rem[q]))
			return -1;
	for (unsigned q = 0; q < c->qps; q++)
		if (connect_qp(s, q))
			return -1;
	for (unsigned q = 0; q < c->qps; q++)
		if (oob_handshake(&s->oob, &s->my[q], &s->rem[q]))
			return -1;
	/* One more after RTR, so neither side sends before the other can receive. */
	return oob_handshake(&s->oob, &s->my[0], &s->rem[0]);
}

/* ---- results ---- */

struct lat_result {
	double min, max, typical, avg, stdev, p99, p999;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static struct lat_result lat_stats(double *t, uint64_t n)
{
	struct lat_result r = { 0 };
	double sum = 0, sq = 0;

	if (!n)
		return r;
	qsort(t, n, sizeof(double), cmp_double);
	for (uint64_t i = 0; i < n; i++)
		sum += t[i];
	r.avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++)
		sq += (t[i] - r.avg) * (t[i] - r.avg);
	r.stdev = sqrt(sq / (double)n);
	r.min = t[0];
	r.max = t[n - 1];
	r.typical = t[n / 2];
	r.p99 = t[(uint64_t)((double)(n - 1) * 0.99)];
	r.p999 = t[(uint64_t)((double)(n - 1) * 0.999)];
	return r;
}

static FILE *json_out;
static bool json_first = true;

static void json_bw(const struct cfg *c, const struct bw_report *r)
{
	if (!json_out)
		return;
	fprintf(json_out, "%s\n    {\"MsgSize\": %" PRIu64 ", \"n_iterations\": %" PRIu64 ", \"BW_peak\": %.6f, "
		"\"BW_average\": %.6f, \"MsgRate\": %.6f, \"unit\": \"%s\"}", json_first ? "" : ",", r->size, r->iters,
		r->bw_peak, r->bw_avg, r->msg_rate, c->gbits ? "Gb/sec" : "MiB/sec");
	json_first = false;
}

static void json_lat(const struct lat_result *r, uint64_t size, uint64_t iters)
{
	if (!json_out)
		return;
	fprintf(json_out, "%s\n    {\"MsgSize\": %" PRIu64 ", \"n_iterations\": %" PRIu64 ", \"t_min\": %.3f, \"t_max\": %.3f, "
		"\"t_typical\": %.3f, \"t_avg\": %.3f, \"t_stdev\": %.3f, \"percentile_99\": %.3f, "
		"\"percentile_99_9\": %.3f, \"unit\": \"usec\"}", json_first ? "" : ",", size, iters, r->min, r->max,
		r->typical, r->avg, r->stdev, r->p99, r->p999);
	json_first = false;
}

static void print_bw_line(FILE *o, const struct bw_report *r)
{
	fprintf(o, " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t     %-7.6f\n", r->size, r->iters,
		r->bw_peak, r->bw_avg, r->msg_rate);
}

/* ---- bandwidth ---- */

static double bw_unit(const struct cfg *c, double bytes_per_us)
{
	return c->gbits ? bytes_per_us * 8 / 1e3 : bytes_per_us * 1e6 / (1 << 20);
}

static int check_wc(struct side *s, const struct xr_wc *wc)
{
	if (wc->status != XR_WC_SUCCESS) {
		fprintf(stderr, "%s: completion with error: %s (wr_id %" PRIu64 ", QP %#x)\n", prog,
			xr_wc_status_str(wc->status), wc->wr_id, wc->qp_num);
		s->rc = -1;
		return -1;
	}
	return 0;
}

/* Posts READs/WRITEs/SENDs/atomics as fast as each QP's depth allows.
 * wr_id = (QP << 48) | that QP's sequence; completions are in order per QP,
 * so a signaled one completes everything before it on its QP. */
static int run_bw_sender(struct side *s, uint64_t size, struct bw_report *rep)
{
	const struct cfg *c = s->c;
	uint64_t iters = c->iters, posted = 0, done = 0, window_done = 0;
	uint64_t qposted[MAX_QPS] = { 0 }, qdone[MAX_QPS] = { 0 };
	double t0, t_end, window_t0, peak = 0, next_interval;
	struct xr_wc wc[64];
	uint8_t *local = s->buf + s->slot * s->slots;   /* second half: sources and landing areas */
	bool timed = c->duration || c->infinite;
	unsigned signal_every = c->tx_depth < CQ_MOD ? c->tx_depth : CQ_MOD;

	if (c->verb == V_WRITE || c->verb == V_SEND)
		for (unsigned k = 0; k < s->slots; k++)
			fill_message(local + k * s->slot, size, k);
	t0 = window_t0 = now_us();
	next_interval = t0 + 1e6;
	for (;;) {
		double t = now_us();
		bool stop_posting = timed ? (c->duration && t - t0 >= c->duration * 1e6) : posted >= iters;
		for (unsigned q = 0; q < c->qps && !stop_posting; q++) {
			while ((timed || posted < iters) && qposted[q] - qdone[q] < c->tx_depth) {
				uint64_t seq = qposted[q];
				unsigned k = (unsigned)(posted % s->slots);
				struct xr_sge sg = { (uintptr_t)local + k * s->slot, (uint32_t)size, s->mr->lkey };
				struct xr_send_wr w = { .wr_id = (uint64_t)q << 48 | seq, .sg_list = &sg, .num_sge = 1 };
				bool last = !timed && posted + 1 >= iters;
				/* Near the end every WR is signaled, so each QP's tail completes. */
				bool tail = !timed && posted + (uint64_t)c->qps * c->tx_depth >= iters;
				if (seq % signal_every == signal_every - 1 || tail || timed)
					w.send_flags = XR_SEND_SIGNALED;
				switch (c->verb) {
				case V_WRITE: w.opcode = XR_WR_RDMA_WRITE; break;
				case V_READ: w.opcode = XR_WR_RDMA_READ; break;
				case V_SEND: w.opcode = XR_WR_SEND; break;
				case V_ATOMIC: w.opcode = XR_WR_ATOMIC_FETCH_AND_ADD; break;
				}
				if (c->verb == V_ATOMIC) {
					sg.length = 8;
					w.wr.atomic.remote_addr = s->rem[q].vaddr + 8 * q;
					w.wr.atomic.rkey = s->rem[q].rkey;
					w.wr.atomic.compare_add = 1;
				} else {
					/* perftest peers expose one message's worth of buffer: their start.
					 * --verify (an xroce peer) spreads messages over its slots. */
					w.wr.rdma.remote_addr = s->rem[q].vaddr + (c->verify ? k * s->slot : 0);
					w.wr.rdma.rkey = s->rem[q].rkey;
					if (c->verb != V_READ && size <= c->inline_size)
						w.send_flags |= XR_SEND_INLINE;
				}
				if (xr_post_send(s->qp[q], &w, NULL))
					break;
				qposted[q]++;
				posted++;
				if (last)
					break;
			}
		}
		pump(s);
		{
			int n = xr_poll_cq(s->cq, 64, wc);
			for (int i = 0; i < n; i++) {
				unsigned q = (unsigned)(wc[i].wr_id >> 48);
				uint64_t seq = wc[i].wr_id & ((1ull << 48) - 1);
				if (check_wc(s, &wc[i]))
					return -1;
				if ((wc[i].opcode & XR_WC_RECV) || q >= c->qps || seq < qdone[q])
					continue;
				/* READs land in slots holding the peer's fixed pattern (a reused
				 * slot receives the same bytes): check what each one brought. */
				done += seq + 1 - qdone[q];
				qdone[q] = seq + 1;
				if (c->verify && c->verb == V_READ) {
					for (unsigned k = 0; k < s->slots && k < done; k++)
						for (uint64_t b = 0; b < size; b++)
							if (local[k * s->slot + b] != pattern(k, b)) {
								s->verify_errors++;
								break;
							}
					s->verified = done;
				}
			}
		}
		t = now_us();
		if (done - window_done >= (uint64_t)CQ_MOD * 4 || (done == posted && done > window_done && t - window_t0 > 1000)) {
			double r = (double)(done - window_done) * (double)size / (t - window_t0);
			if (r > peak)
				peak = r;
			window_done = done;
			window_t0 = t;
		}
		if (timed && t >= next_interval && (c->duration > 1 || c->infinite)) {
			struct bw_report iv = { size, done, bw_unit(c, peak), bw_unit(c, (double)done * size / (t - t0)),
						(double)done / (t - t0) };
			print_bw_line(s->out, &iv);
			fflush(s->out);
			next_interval += 1e6;
		}
		if ((timed ? stop_posting : posted >= iters) && done >= posted)
			break;
	}
	t_end = now_us();
	rep->size = size;
	rep->iters = done;
	rep->bw_avg = bw_unit(c, (double)done * (double)size / (t_end - t0));
	rep->bw_peak = bw_unit(c, peak > 0 ? peak : (double)done * size / (t_end - t0));
	if (rep->bw_peak < rep->bw_avg)
		rep->bw_peak = rep->bw_avg;
	rep->msg_rate = (double)done / (t_end - t0);
	return 0;
}

/* The receiving end of send_bw: posts receives, counts and checks them,
 * until the peer reaches the next exchange. */
/* The receiving end of send_bw measures what it received, from the first
 * message to the last, as perftest's server does. */
static int run_bw_receiver(struct side *s, uint64_t size, struct bw_report *rep)
{
	uint64_t posted = 0, got = 0;
	struct xr_wc wc[64];
	uint8_t *rx = s->buf;
	double t_first = 0, t_last = 0;

	for (;;) {
		while (posted - got < s->c->rx_depth) {
			unsigned k = (unsigned)(posted % s->slots);
			struct xr_sge sg = { (uintptr_t)rx + k * s->slot, (uint32_t)(size ? size : 1), s->mr->lkey };
			struct xr_recv_wr r = { .wr_id = posted, .sg_list = &sg, .num_sge = 1 };
			if (xr_post_recv(s->qp[posted % s->c->qps], &r, NULL))
				break;
			posted++;
		}
		pump(s);
		{
			int n = xr_poll_cq(s->cq, 64, wc);
			for (int i = 0; i < n; i++) {
				if (check_wc(s, &wc[i]))
					return -1;
				if (!(wc[i].opcode & XR_WC_RECV))
					continue;
				if (s->c->verify) {
					unsigned k = (unsigned)(wc[i].wr_id % s->slots);
					if (wc[i].byte_len != size || !check_message(rx + k * s->slot, size))
						s->verify_errors++;
					s->verified++;
				}
				if (!got++)
					t_first = now_us();
				t_last = now_us();
			}
		}
		{
			struct pollfd p = { s->oob.fd, POLLIN, 0 };
			if (poll(&p, 1, 0) > 0 && (s->c->qps > 1 || !s->c->verify || got >= s->c->iters || s->c->duration))
				break;
		}
	}
	rep->iters = got;
	if (got > 1 && t_last > t_first) {
		double us = t_last - t_first;
		rep->bw_avg = rep->bw_peak = bw_unit(s->c, (double)(got - 1) * (double)size / us);
		rep->msg_rate = (double)(got - 1) / us;
	}
	return 0;
}

/* After a WRITE run: read every written slot back and compare. */
static int verify_writes(struct side *s, uint64_t size)
{
	uint8_t *back = s->buf + s->slot * s->slots;   /* the source patterns live here too */
	unsigned slots = s->slots;
	struct xr_wc wc;

	for (unsigned k = 0; k < slots; k++) {
		uint8_t *landing = s->buf + k * s->slot;   /* our own READ-source half is free to reuse now */
		struct xr_sge sg = { (uintptr_t)landing, (uint32_t)size, s->mr->lkey };
		struct xr_send_wr w = { .wr_id = 1u << 30, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
					.send_flags = XR_SEND_SIGNALED };
		double until = now_us() + 5e6;
		int n = 0;
		if (!size)
			break;
		w.wr.rdma.remote_addr = s->rem[0].vaddr + k * s->slot;
		w.wr.rdma.rkey = s->rem[0].rkey;
		if (xr_post_send(s->qp[0], &w, NULL))
			return -1;
		while (!n && now_us() < until) {
			pump(s);
			n = xr_poll_cq(s->cq, 1, &wc);
			if (n && wc.wr_id != (1u << 30))
				n = 0;   /* a late completion of the run */
		}
		if (!n || check_wc(s, &wc))
			return -1;
		if (memcmp(landing, back + k * s->slot, size))
			s->verify_errors++;
		s->verified++;
	}
	/* Our READ sources were overwritten: restore them for the next size. */
	for (unsigned k = 0; k < slots; k++)
		for (size_t i = 0; i < s->slot; i++)
			s->buf[k * s->slot + i] = pattern(k, i);
	return 0;
}

/* The sum of the peer's fetch-add targets (one word per QP at its buffer's start). */
static int remote_counter_sum(struct side *s, uint64_t *sum);

/* After FETCH_ADD +1 runs: the peer's counters grew by the operations done. */
static int verify_atomics(struct side *s, uint64_t ops, uint64_t before)
{
	uint64_t total = 0;

	if (remote_counter_sum(s, &total))
		return -1;
	s->verified += ops;
	if (total - before != ops) {
		fprintf(stderr, "%s: the peer's counters grew by %" PRIu64 " after %" PRIu64 " fetch-adds\n", prog,
			total - before, ops);
		s->verify_errors++;
	}
	return 0;
}

static int remote_counter_sum(struct side *s, uint64_t *sum)
{
	uint64_t total = 0;
	struct xr_wc wc;

	for (unsigned q = 0; q < s->c->qps; q++) {
		uint8_t *landing = s->buf + 8 * q;
		struct xr_sge sg = { (uintptr_t)landing, 8, s->mr->lkey };
		struct xr_send_wr w = { .wr_id = 1u << 30, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
					.send_flags = XR_SEND_SIGNALED };
		double until = now_us() + 5e6;
		int n = 0;
		uint64_t v;
		w.wr.rdma.remote_addr = s->rem[q].vaddr + 8 * q;
		w.wr.rdma.rkey = s->rem[q].rkey;
		if (xr_post_send(s->qp[q], &w, NULL))
			return -1;
		while (!n && now_us() < until) {
			pump(s);
			n = xr_poll_cq(s->cq, 1, &wc);
			if (n && wc.wr_id != (1u << 30))
				n = 0;
		}
		if (!n || check_wc(s, &wc))
			return -1;
		memcpy(&v, landing, 8);
		total += v;
	}
	for (unsigned k = 0; k < s->slots; k++)   /* restore our READ sources */
		for (size_t i = 0; i < s->slot; i++)
			s->buf[k * s->slot + i] = pattern(k, i);
	*sum = total;
	return 0;
}

static void report_verify(struct side *s)
{
	if (!s->c->verify || (!s->verified && !s->verify_errors))
		return;   /* the passive end of a test checks nothing itself */
	fprintf(s->out, " Data verification: %" PRIu64 " messages checked, %" PRIu64 " errors%s\n", s->verified,
		s->verify_errors, s->verify_errors ? "  <-- FAILED" : "");
	if (s->verify_errors)
		s->rc = -1;
}

static int run_bw(struct side *s)
{
	const struct cfg *c = s->c;
	struct proto pr = proto_of(c);
	bool sender = !s->server || c->bidir;
	bool receiver = c->verb == V_SEND && (s->server || c->bidir);

	fprintf(s->out, RESULT_LINE);
	fprintf(s->out, c->gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
				 : " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n");
	for (uint64_t size = c->all ? 2 : c->size; size <= (c->all ? (1u << 23) : c->size); size *= 2) {
		struct bw_report mine = { size, 0, 0, 0, 0 }, theirs;
		if (c->verb == V_ATOMIC)
			size = mine.size = 8;
		if (pr.pre_run_hs && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))
			return -1;
		if (sender && receiver) {
			fprintf(stderr, "%s: bidirectional send_bw is not supported; use write/read\n", prog);
			return -1;
		}
		if (sender) {
			uint64_t before = 0;
			if (c->verify && c->verb == V_ATOMIC && !c->bidir && remote_counter_sum(s, &before))
				return -1;
			if (run_bw_sender(s, size, &mine))
				return -1;
			if (c->verify && c->verb == V_WRITE && !c->bidir && verify_writes(s, size))
				return -1;
			if (c->verify && c->verb == V_ATOMIC && !c->bidir && verify_atomics(s, mine.iters, before))
				return -1;
		} else if (receiver) {
			if (run_bw_receiver(s, size, &mine))
				return -1;
		}
		/* The passive end keeps its engine answering until the peer is done. */
		if (!sender || c->bidir || receiver)
			pump_until_peer(s, PEER_WAIT_MS);
		if (pr.post_run_hs && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))
			return -1;
		if (pr.reports) {
			if (oob_bw_reports(&s->oob, &mine, &theirs))
				return -1;
		} else {
			theirs = mine;   /* each end prints its own figures (perftest's send_bw) */
		}
		if (c->bidir) {
			theirs.bw_avg += mine.bw_avg;
			theirs.bw_peak += mine.bw_peak;
			theirs.msg_rate += mine.msg_rate;
		}
		{
			/* The server prints what the client measured, as perftest does
			 * (where the reports are exchanged). */
			struct bw_report *r = (s->server && pr.reports) || c->bidir ? &theirs : &mine;
			print_bw_line(s->out, r);
			if (!s->quiet_out)   /* in one process only the client reports */
				json_bw(c, r);
		}
		if (c->verb == V_ATOMIC || !c->all)
			break;
	}
	fprintf(s->out, RESULT_LINE);
	report_verify(s);
	return s->rc;
}

/* ---- latency ---- */

static int wait_one(struct side *s, struct xr_wc *wc, bool recv)
{
	double until = now_us() + 10e6;
	while (now_us() < until) {
		int n;
		pump(s);
		n = xr_poll_cq(s->cq, 1, wc);
		if (n == 1) {
			if (check_wc(s, wc))
				return -1;
			if (!!(wc->opcode & XR_WC_RECV) == recv)
				return 0;
		}
	}
	fprintf(stderr, "%s: no completion in 10 s\n", prog);
	return -1;
}

/* The message of iteration i, as the peer filled it (its last byte is the stamp). */
static void verify_lat_rx(struct side *s, const uint8_t *rx, uint64_t size, uint64_t i)
{
	if (!s->c->verify || !size)
		return;
	for (uint64_t b = 0; b + 1 < size; b++)
		if (rx[b] != pattern(i, b)) {
			s->verify_errors++;
			break;
		}
	s->verified++;
}

/* send_lat: waits for the peer's message, checks it, posts its buffer again. */
static int lat_recv_one(struct side *s, const uint8_t *rx, uint64_t size, uint64_t i, struct xr_recv_wr *r)
{
	struct xr_wc wc;

	if (wait_one(s, &wc, true))
		return -1;
	if (wc.byte_len != size)
		s->verify_errors += s->c->verify;
	verify_lat_rx(s, rx, size, i);
	xr_post_recv(s->qp[0], r, NULL);
	return 0;
}

static int run_lat(struct side *s)
{
	const struct cfg *c = s->c;
	uint64_t size = c->size, iters = c->iters;
	double *t = calloc(iters, sizeof(double));
	uint8_t *rx = s->buf, *tx = s->buf + s->slot * s->slots;
	volatile uint8_t *flag = rx + (size ? size - 1 : 0);
	struct xr_wc wc;
	int rc = 0;
	bool active = !s->server || c->verb == V_WRITE || c->verb == V_SEND;

	if (!t)
		return -1;
	if (proto_of(c).pre_run_hs && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))
		return -1;
	if (c->verb == V_SEND)
		for (unsigned i = 0; i < 2 && i < c->rx_depth; i++) {
			struct xr_sge sg = { (uintptr_t)rx, (uint32_t)(size ? size : 1), s->mr->lkey };
			struct xr_recv_wr r = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };
			xr_post_recv(s->qp[0], &r, NULL);
		}
	if (c->verb == V_ATOMIC && !s->server)
		memset(rx, 0, 8);
	if (active) {
		for (uint64_t i = 0; i < iters && !rc; i++) {
			double t0 = now_us();
			struct xr_sge sg = { (uintptr_t)tx, (uint32_t)size, s->mr->lkey };
			struct xr_send_wr w = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .send_flags = XR_SEND_SIGNALED };
			uint8_t stamp = (uint8_t)(i + 1);   /* perftest's (char)++scnt: consecutive stamps differ */
			/* perftest's write_lat: the server writes first (it skips its
			 * first poll); send_lat: the client sends first. */
			bool my_turn = c->verb == V_WRITE ? s->server : !s->server;
			for (uint64_t b = 0; b < size; b++)
				tx[b] = pattern(i, b);
			if (size)
				tx[size - 1] = stamp;
			w.wr.rdma.remote_addr = s->rem[0].vaddr;
			w.wr.rdma.rkey = s->rem[0].rkey;
			if (size <= c->inline_size && c->verb != V_READ && c->verb != V_ATOMIC)
				w.send_flags |= XR_SEND_INLINE;
			switch (c->verb) {
			case V_WRITE:
				/* Ping-pong through memory: each side waits for the other's
				 * stamp, and checks the message before the next can land. */
				if (!my_turn) {
					while (*flag != stamp && size)
						pump(s);
					verify_lat_rx(s, rx, size, i);
				}
				w.opcode = XR_WR_RDMA_WRITE;
				if (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false))
					rc = -1;
				if (my_turn && !rc) {
					while (*flag != stamp && size)
						pump(s);
					verify_lat_rx(s, rx, size, i);
				}
				t[i] = (now_us() - t0) / 2;
				break;
			case V_SEND: {
				struct xr_sge r2 = { (uintptr_t)rx, (uint32_t)(size ? size : 1), s->mr->lkey };
				struct xr_recv_wr r = { .wr_id = i, .sg_list = &r2, .num_sge = 1 };
				/* Each message is checked before its buffer is posted again. */
				if (!my_turn && lat_recv_one(s, rx, size, i, &r))
					rc = -1;
				w.opcode = XR_WR_SEND;
				if (!rc && (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false)))
					rc = -1;
				if (my_turn && !rc && lat_recv_one(s, rx, size, i, &r))
					rc = -1;
				t[i] = (now_us() - t0) / 2;
				break;
			}
			case V_READ:
				w.opcode = XR_WR_RDMA_READ;
				sg.addr = (uintptr_t)rx;
				if (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false))
					rc = -1;
				if (c->verify && !rc) {
					for (uint64_t b = 0; b < size; b++)
						if (rx[b] != pattern(0, b)) {
							s->verify_errors++;
							break;
						}
					s->verified++;
				}
				t[i] = now_us() - t0;
				break;
			case V_ATOMIC:
				w.opcode = XR_WR_ATOMIC_FETCH_AND_ADD;
				sg.addr = (uintptr_t)rx;
				sg.length = 8;
				w.wr.atomic.remote_addr = s->rem[0].vaddr;
				w.wr.atomic.rkey = s->rem[0].rkey;
				w.wr.atomic.compare_add = 1;
				if (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false))
					rc = -1;
				if (c->verify && !rc) {
					/* Each fetch-add sees the previous one's result plus one. */
					static uint64_t first;
					uint64_t orig;
					memcpy(&orig, rx, 8);
					if (i == 0)
						first = orig;
					if (orig != first + i)
						s->verify_errors++;
					s->verified++;
				}
				t[i] = now_us() - t0;
				break;
			}
		}
	}
	if (!s->server || c->verb == V_WRITE || c->verb == V_SEND) {
		if (!s->server) {
			struct lat_result r = lat_stats(t, iters);
			fprintf(s->out, RESULT_LINE);
			fprintf(s->out, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
					"t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
			fprintf(s->out, " %-7" PRIu64 " %-10" PRIu64 "    %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
				c->verb == V_ATOMIC ? 8 : size, iters, r.min, r.max, r.typical, r.avg, r.stdev, r.p99, r.p999);
			fprintf(s->out, RESULT_LINE);
			if (!s->quiet_out)
				json_lat(&r, c->verb == V_ATOMIC ? 8 : size, iters);
		}
	}
	if (s->server && !active)
		pump_until_peer(s, PEER_WAIT_MS);
	report_verify(s);
	free(t);
	return rc ? rc : s->rc;
}

/* ---- ibv_rc_pingpong-compatible mode ---- */

/* rc_pingpong sends from the buffer it receives into, so each side echoes
 * what it got. We do the same through two slots: receives land in slot 0,
 * sends leave from slot 1, copied from slot 0 when the send is posted.
 * With --verify slot 0 is poisoned before it can receive again, and every
 * message must equal the one we sent last (the peer's echo): a lost,
 * stale or corrupted message shows. The server's first message is the
 * client's own, so it has nothing to be compared with. */
#define PP_POISON 0xa5
#define PP_FINAL_ACK_MS 3000  /* the last send's ACK, from a peer that may have left */
#define PP_QUIET_MS 1000      /* linger ends after this long without a frame from the peer */
#define PP_EXIT_UNACKED 3     /* exit status: all done but the last send unacknowledged */

static int pp_post_recv(struct side *s, uint64_t size)
{
	struct xr_sge sg = { (uintptr_t)s->buf, (uint32_t)size, s->mr->lkey };
	struct xr_recv_wr r = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };
	return xr_post_recv(s->qp[0], &r, NULL);
}

static int pp_post_send(struct side *s, uint64_t size)
{
	struct xr_sge sg = { (uintptr_t)s->buf + s->slot, (uint32_t)size, s->mr->lkey };
	struct xr_send_wr w = { .wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_SEND,
				.send_flags = XR_SEND_SIGNALED };
	return xr_post_send(s->qp[0], &w, NULL);
}

/* Echo what slot 0 holds (after the first client send). */
static int pp_echo(struct side *s, uint64_t size)
{
	memcpy(s->buf + s->slot, s->buf, size);
	if (s->c->verify)
		memset(s->buf, PP_POISON, size);
	return pp_post_send(s, size);
}

static void pp_check(struct side *s, const struct xr_wc *wc, uint64_t size, uint64_t rcnt)
{
	if (!s->c->verify || (s->server && rcnt == 1))
		return;
	s->verified++;
	if (wc->byte_len != size || memcmp(s->buf, s->buf + s->slot, size)) {
		if (!s->verify_errors)
			fprintf(stderr, "%s: message %" PRIu64 " is not the echo of the one sent before it\n", prog, rcnt);
		s->verify_errors++;
	}
}

/* rc_pingpong closes its TCP connection before the first message, so
 * there is no hang-up to wait for: answer the peer's retransmissions
 * (our last ACK may have been lost) until it has been quiet a while. */
static void pp_linger(struct side *s)
{
	uint64_t seen = 0, now_seen = 0;
	double t0 = now_us(), quiet_since = t0;

	xr_regio_read_counter(xr_context_regs(s->ctx), XR_CNT_RX_PKTS, &seen);
	while (now_us() - t0 < LINGER_MS * 1e3 && now_us() - quiet_since < PP_QUIET_MS * 1e3) {
		pump(s);
		xr_regio_read_counter(xr_context_regs(s->ctx), XR_CNT_RX_PKTS, &now_seen);
		if (now_seen != seen) {
			seen = now_seen;
			quiet_since = now_us();
		}
		if (s->c->progress == XR_PROGRESS_THREAD)
			usleep(1000);
	}
}

static int pp_connect(struct side *s)
{
	char done[5] = "done", g[64];

	/* rc_pingpong: the client writes first; the server answers after RTR/RTS. */
	if (s->server ? oob_pingpong_read(&s->oob, &s->rem[0]) || connect_qp(s, 0) ||
				oob_pingpong_write(&s->oob, &s->my[0])
		      : oob_pingpong_write(&s->oob, &s->my[0]) || oob_pingpong_read(&s->oob, &s->rem[0]) ||
				connect_qp(s, 0)) {
		fprintf(stderr, "%s: pingpong exchange failed\n", prog);
		return -1;
	}
	if (s->server ? read(s->oob.fd, done, sizeof(done)) != (ssize_t)sizeof(done)
		      : write(s->oob.fd, done, sizeof(done)) != (ssize_t)sizeof(done)) {
		fprintf(stderr, "%s: pingpong 'done' exchange failed\n", prog);
		return -1;
	}
	fprintf(s->out, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", s->my[0].lid, s->my[0].qpn,
		s->my[0].psn, xr_gid_format(&s->my[0].gid, g, sizeof(g)));
	fprintf(s->out, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", s->rem[0].lid,
		s->rem[0].qpn, s->rem[0].psn, xr_gid_format(&s->rem[0].gid, g, sizeof(g)));
	return 0;
}

static int run_pingpong(struct side *s)
{
	const struct cfg *c = s->c;
	uint64_t size = c->size, iters = c->iters, rcnt = 0, scnt = 0, sdone = 0;
	bool echo_due = false;
	struct xr_wc wc[16];
	double t0, t_end, last_post = 0;

	if (pp_connect(s))
		return -1;
	for (unsigned i = 0; i < c->rx_depth; i++)
		if (pp_post_recv(s, size)) {
			fprintf(stderr, "%s: cannot post %u receives\n", prog, c->rx_depth);
			return -1;
		}
	t0 = t_end = now_us();
	if (!s->server) {
		/* A pattern, with each 4 KiB page's first byte zero: what an
		 * ibv_rc_pingpong server with -c checks for at its end. */
		for (uint64_t i = 0; i < size; i++)
			s->buf[s->slot + i] = i % 4096 ? pattern(7, i) : 0;
		if (pp_post_send(s, size)) {
			fprintf(stderr, "%s: cannot post the first send\n", prog);
			return -1;
		}
		scnt++;
		last_post = now_us();
	}
	/* As rc_pingpong: the next send waits for both the peer's message and
	 * our previous send's completion (its slot is about to be reused). */
	while (rcnt < iters || scnt < iters || sdone < scnt) {
		int n;
		pump(s);
		n = xr_poll_cq(s->cq, 16, wc);
		if (n > 0)
			t_end = now_us();   /* the figures end at the last completion */
		for (int i = 0; i < n; i++) {
			if (check_wc(s, &wc[i]))
				return -1;
			if (!(wc[i].opcode & XR_WC_RECV)) {
				sdone++;
				continue;
			}
			rcnt++;
			pp_check(s, &wc[i], size, rcnt);
			if (pp_post_recv(s, size)) {
				fprintf(stderr, "%s: cannot repost a receive\n", prog);
				return -1;
			}
			echo_due = scnt < iters;
		}
		if (echo_due && sdone == scnt) {
			if (pp_echo(s, size)) {
				fprintf(stderr, "%s: send queue full\n", prog);
				return -1;
			}
			echo_due = false;
			scnt++;
			last_post = now_us();
		}
		/* rc_pingpong leaves once its last send completed and its last
		 * message arrived, without a closing word: if the ACK for our last
		 * message is lost, nobody is left to repeat it. A client knows its
		 * message arrived (the server's last one answers it); a server has
		 * only the client's own report. */
		if (rcnt == iters && scnt == iters && sdone + 1 == scnt && now_us() - last_post > PP_FINAL_ACK_MS * 1e3) {
			fprintf(stderr, "%s: the peer did not acknowledge our last message within %d ms and has left; %s\n",
				prog, PP_FINAL_ACK_MS, s->server ? "only its exit status tells whether the message arrived"
								 : "its answer to that message proves it arrived");
			break;
		}
		if (now_us() - t0 > 60e6) {
			fprintf(stderr, "%s: pingpong stalled at %" PRIu64 "/%" PRIu64 "\n", prog, rcnt, scnt);
			return -1;
		}
	}
	{
		double usec = t_end - t0;
		uint64_t bytes = size * iters * 2;
		fprintf(s->out, "%" PRIu64 " bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
			(double)bytes * 8 / usec);
		fprintf(s->out, "%" PRIu64 " iters in %.2f seconds = %.2f usec/iter\n", iters, usec / 1e6, usec / (double)iters);
	}
	report_verify(s);
	if (s->rc)
		return s->rc;
	return sdone < scnt && s->server ? PP_EXIT_UNACKED : 0;
}

/* ---- one side, start to end ---- */

static void print_counters(struct side *s);
static void print_counters(struct side *s)
{
	fprintf(s->out, " Engine counters (%s, read through the register file):\n", s->server ? "server" : "client");
	for (unsigned i = 0; i < XR_CNT_COUNT; i++) {
		uint64_t v = 0;
		xr_regio_read_counter(xr_context_regs(s->ctx), (enum xr_counter)i, &v);
		if (v)
			fprintf(s->out, "   %-26s %" PRIu64 "\n", xr_counter_name((enum xr_counter)i), v);
	}
}

static void close_side(struct side *s)
{
	for (unsigned q = 0; q < MAX_QPS; q++)
		if (s->qp[q])
			xr_destroy_qp(s->qp[q]);
	if (s->mr)
		xr_dereg_mr(s->mr);
	if (s->cq)
		xr_destroy_cq(s->cq);
	if (s->pd)
		xr_dealloc_pd(s->pd);
	if (s->ctx)
		xr_close_device(s->ctx);
	free(s->buf);
}

static int run_side(struct side *s)
{
	const struct cfg *c = s->c;
	int rc;

	if (open_side(s))
		return -1;
	if (c->pingpong) {
		rc = run_pingpong(s);
		if (!rc)
			pp_linger(s);
	} else {
		rc = prologue(s);
		if (!rc && !(s->server && c->mem))
			print_header(s);
		if (!rc)
			rc = c->lat ? run_lat(s) : run_bw(s);
		/* perftest's closing, while still answering the peer. */
		if (!rc && proto_of(c).close_hs) {
			if (s->server)
				pump_until_peer(s, PEER_WAIT_MS);
			rc = oob_handshake(&s->oob, &s->my[0], &s->rem[0]);
		}
		if (!rc && proto_of(c).done_msg) {
			char done[5] = "done";
			rc = s->server ? oob_send_raw(&s->oob, done, sizeof(done)) : oob_recv_raw(&s->oob, done, sizeof(done));
		}
		if (!rc && !proto_of(c).close_hs && s->server && c->verb == V_WRITE) {
			/* write_lat ends without a word: let the last WRITE's ACK leave. */
			for (int i = 0; i < 1000; i++)
				pump(s);
		}
	}
	if (c->counters && s->ctx && !(s->server && c->mem))
		print_counters(s);
	close_side(s);
	return rc == PP_EXIT_UNACKED ? rc : rc ? -1 : 0;
}

static void *server_thread(void *arg)
{
	struct side *s = arg;
	s->rc = run_side(s);
	if (s->rc)
		oob_close(&s->oob);   /* the client sees the end instead of waiting */
	return NULL;
}

/* ---- command line ---- */

static void usage(FILE *o)
{
	fprintf(o,
"Usage: xroce-perf TEST [options] [server-address]\n"
"       xroce-perf pingpong [options] [server-address]   (ibv_rc_pingpong compatible)\n"
"TEST: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat\n"
"Without a server address this is the server; with one, the client (as perftest).\n"
"With --link mem both ends run in this process and no address is needed.\n"
"\n"
"perftest options (same meanings and defaults):\n"
"  -s, --size=SIZE          message size (bw 65536, lat 2)\n"
"  -n, --iters=N            iterations (bw 5000, lat 1000)\n"
"  -D, --duration=SEC       run for SEC seconds (bw), a line per second\n"
"  -a, --all                sizes 2 .. 2^23\n"
"  -q, --qp=N               number of QPs (bw)\n"
"  -m, --mtu=MTU            path MTU 256..4096 (default: from the link)\n"
"  -t, --tx-depth=N         send queue depth (bw 128, lat 1)\n"
"  -r, --rx-depth=N         receive queue depth (512)\n"
"  -p, --port=PORT          TCP port of the exchange (18515)\n"
"  -d, --ib-dev=NAME        device name (shown; xroce has one device per link)\n"
"  -x, --gid-index=N        GID index (shown; the link's address is the GID)\n"
"  -I, --inline_size=N      largest inline message (write/send)\n"
"  -u, --qp-timeout=N       local ACK timeout exponent (14)\n"
"  -b, --bidirectional      both ends send (write/read/atomic bw)\n"
"  -F, --CPU-freq           accepted (xroce does not read CPU frequency)\n"
"      --report_gbits       bandwidth in Gb/sec\n"
"      --run_infinitely     run until interrupted, a line per second\n"
"      --out_json           JSON results to perftest_out.json (--out_json_file=FILE)\n"
"xroce options:\n"
"      --link=mem|udp|raw   the link (default udp; mem: both ends here)\n"
"      --bind=ADDR          local IPv4 or IPv6 address (udp, raw)\n"
"      --ifname=IF          interface (raw)   --vlan=VID --pcp=P (raw)\n"
"      --strict-icrc        udp: drop frames whose ICRC matched only with an IPv4 ID\n"
"                           recovered from it (16 of 32 bits checked)\n"
"      --raw-ip-id          udp, IPv4: read the real IPv4 ID (raw socket, CAP_NET_RAW)\n"
"      --retry7-forever     retry_cnt 7 (what perftest asks for) retries without end,\n"
"                           as rxe reads it (default: seven retries, as the IBTA)\n"
"      --verify             check every payload end to end\n"
"      --counters           print the engine's counters after the run\n"
"      --pcap=FILE          record the first --pcap-frames (100) frames of the link\n"
"      --progress=inline|thread   who runs the engine (default inline)\n"
"  -h, --help\n"
"Exit status: 0 done, 1 failed, 2 bad usage, 3 pingpong done but the peer never\n"
"acknowledged the last message (ibv_rc_pingpong exits without a closing word).\n");
}

static bool parse_test(struct cfg *c, const char *t)
{
	static const struct { const char *name; enum verb v; bool lat; } tests[] = {
		{ "write_bw", V_WRITE, false }, { "read_bw", V_READ, false }, { "send_bw", V_SEND, false },
		{ "atomic_bw", V_ATOMIC, false }, { "write_lat", V_WRITE, true }, { "read_lat", V_READ, true },
		{ "send_lat", V_SEND, true }, { "atomic_lat", V_ATOMIC, true },
	};
	if (!strcmp(t, "pingpong")) {
		c->pingpong = true;
		c->verb = V_SEND;
		return true;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(t, tests[i].name)) {
			c->verb = tests[i].v;
			c->lat = tests[i].lat;
			return true;
		}
	return false;
}

enum { O_GBITS = 256, O_INF, O_JSON, O_JSONF, O_LINK, O_BIND, O_IFNAME, O_VLAN, O_PCP, O_VERIFY, O_COUNTERS,
       O_PCAP, O_PCAPN, O_PROGRESS, O_STRICT_ICRC, O_RAW_IP_ID, O_RETRY7 };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, 0, 's' }, { "iters", required_argument, 0, 'n' },
		{ "duration", required_argument, 0, 'D' }, { "all", no_argument, 0, 'a' },
		{ "qp", required_argument, 0, 'q' }, { "mtu", required_argument, 0, 'm' },
		{ "tx-depth", required_argument, 0, 't' }, { "rx-depth", required_argument, 0, 'r' },
		{ "port", required_argument, 0, 'p' }, { "ib-dev", required_argument, 0, 'd' },
		{ "gid-index", required_argument, 0, 'x' }, { "inline_size", required_argument, 0, 'I' },
		{ "qp-timeout", required_argument, 0, 'u' }, { "bidirectional", no_argument, 0, 'b' },
		{ "CPU-freq", no_argument, 0, 'F' }, { "help", no_argument, 0, 'h' },
		{ "report_gbits", no_argument, 0, O_GBITS }, { "run_infinitely", no_argument, 0, O_INF },
		{ "out_json", no_argument, 0, O_JSON }, { "out_json_file", required_argument, 0, O_JSONF },
		{ "link", required_argument, 0, O_LINK }, { "bind", required_argument, 0, O_BIND },
		{ "ifname", required_argument, 0, O_IFNAME }, { "vlan", required_argument, 0, O_VLAN },
		{ "pcp", required_argument, 0, O_PCP }, { "verify", no_argument, 0, O_VERIFY },
		{ "counters", no_argument, 0, O_COUNTERS }, { "pcap", required_argument, 0, O_PCAP },
		{ "pcap-frames", required_argument, 0, O_PCAPN }, { "progress", required_argument, 0, O_PROGRESS },
		{ "strict-icrc", no_argument, 0, O_STRICT_ICRC }, { "raw-ip-id", no_argument, 0, O_RAW_IP_ID },
		{ "retry7-forever", no_argument, 0, O_RETRY7 },
		{ 0, 0, 0, 0 },
	};
	struct cfg c = { .qps = 1, .rx_depth = 512, .port = PERFTEST_PORT, .device = "xroce0", .gid_index = 0,
			 .qp_timeout = 14, .progress = XR_PROGRESS_INLINE, .pcap_frames = 100 };
	const char *link_kind = "udp";
	bool size_set = false, iters_set = false, tx_set = false, inline_set = false;
	uint64_t v;
	int ch, rc;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!parse_test(&c, argv[1])) {
		fprintf(stderr, "%s: unknown test '%s'\n", prog, argv[1]);
		usage(stderr);
		return 2;
	}
	optind = 2;
#define NUM(opt, max, dst) do { if (!cli_u64(prog, opt, optarg, (max), &v)) return 2; (dst) = v; } while (0)
	while ((ch = getopt_long(argc, argv, "s:n:D:aq:m:t:r:p:d:x:I:u:bFh", opts, NULL)) != -1) {
		switch (ch) {
		case 's': NUM("size", 1u << 30, c.size); size_set = true; break;
		case 'n': NUM("iters", UINT32_MAX, c.iters); iters_set = true; break;
		case 'D': NUM("duration", 86400, c.duration); break;
		case 'a': c.all = true; break;
		case 'q': NUM("qp", MAX_QPS, c.qps); if (!c.qps) { fprintf(stderr, "%s: -q must be 1..%d\n", prog, MAX_QPS); return 2; } break;
		case 'm': NUM("mtu", 4096, c.mtu); if (!mtu_enum_of(c.mtu)) { fprintf(stderr, "%s: -m must be 256, 512, 1024, 2048 or 4096\n", prog); return 2; } break;
		case 't': NUM("tx-depth", 1u << 15, c.tx_depth); tx_set = true; break;
		case 'r': NUM("rx-depth", 1u << 15, c.rx_depth); break;
		case 'p': NUM("port", 65535, c.port); break;
		case 'd': c.device = optarg; break;
		case 'x': NUM("gid-index", 255, c.gid_index); break;
		case 'I': NUM("inline_size", XR_WQE_MAX_INLINE, c.inline_size); inline_set = true; break;
		case 'u': NUM("qp-timeout", 31, c.qp_timeout); break;
		case 'b': c.bidir = true; break;
		case 'F': break;
		case 'h': usage(stdout); return 0;
		case O_GBITS: c.gbits = true; break;
		case O_INF: c.infinite = true; break;
		case O_JSON: c.json = true; break;
		case O_JSONF: c.json = true; c.json_file = optarg; break;
		case O_LINK: link_kind = optarg; break;
		case O_BIND: c.link.addr = optarg; break;
		case O_IFNAME: c.link.ifname = optarg; break;
		case O_VLAN: NUM("vlan", 4094, c.link.vid); break;
		case O_PCP: NUM("pcp", 7, c.link.pcp); break;
		case O_VERIFY: c.verify = true; break;
		case O_COUNTERS: c.counters = true; break;
		case O_PCAP: c.pcap = optarg; break;
		case O_PCAPN: NUM("pcap-frames", UINT32_MAX, c.pcap_frames); break;
		case O_STRICT_ICRC: c.link.strict_icrc = true; break;
		case O_RAW_IP_ID: c.link.udp_raw_ip_id = true; break;
		case O_RETRY7: c.retry7_forever = true; break;
		case O_PROGRESS:
			if (!strcmp(optarg, "inline")) c.progress = XR_PROGRESS_INLINE;
			else if (!strcmp(optarg, "thread")) c.progress = XR_PROGRESS_THREAD;
			else { fprintf(stderr, "%s: --progress is inline or thread\n", prog); return 2; }
			break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		c.server = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return 2;
	}
	c.mem = !strcmp(link_kind, "mem");
	c.link.kind = link_kind;
	if (!size_set)
		c.size = c.pingpong ? 4096 : c.lat ? 2 : 65536;
	if (!iters_set)
		c.iters = c.lat || c.pingpong ? 1000 : 5000;
	if (!tx_set)
		c.tx_depth = c.lat ? 1 : 128;
	if (!inline_set)
		c.inline_size = c.lat && (c.verb == V_WRITE || c.verb == V_SEND) ? XR_WQE_MAX_INLINE : 0;
	if (c.pingpong && !size_set)
		c.size = 4096;
	if (c.pingpong && c.rx_depth == 512)
		c.rx_depth = 500;
	if (c.verb == V_ATOMIC)
		c.size = 8;
	if (c.lat && (c.all || c.bidir || c.qps > 1 || c.duration)) {
		fprintf(stderr, "%s: -a, -b, -q and -D are bandwidth options in xroce-perf\n", prog);
		return 2;
	}
	if (c.verb == V_SEND && c.size == 0 && c.lat) {
		fprintf(stderr, "%s: send_lat needs -s >= 1\n", prog);
		return 2;
	}
	if (c.json) {
		/* As perftest: the JSON report goes to a file, the tables to stdout. */
		if (!c.json_file)
			c.json_file = "perftest_out.json";
		json_out = fopen(c.json_file, "w");
		if (!json_out) {
			fprintf(stderr, "%s: %s: %s\n", prog, c.json_file, strerror(errno));
			return 2;
		}
		fprintf(json_out, "{\n  \"test\": \"%s\",\n  \"link\": \"%s\",\n  \"mtu_requested\": %d,\n  \"results\": [",
			argv[1], link_kind, c.mtu);
	}
	srand48(time(NULL) ^ getpid());

	if (c.mem) {
		struct xr_link *la, *lb;
		struct side srv = { .c = &c, .server = true }, cli = { .c = &c };
		struct cfg cs = c, cc = c;
		pthread_t t;
		if (c.server) {
			fprintf(stderr, "%s: --link mem runs both ends here: no server address\n", prog);
			return 2;
		}
		if (xr_link_mem_pair(&la, &lb, 0))
			return 1;
		if (c.pcap) {
			la = xr_link_pcap_tap_n(la, c.pcap, c.pcap_frames);
			if (!la) {
				fprintf(stderr, "%s: cannot write %s\n", prog, c.pcap);
				return 1;
			}
		}
		cs.link.addr = "10.0.0.1";
		cc.link.addr = "10.0.0.2";
		srv.c = &cs;
		cli.c = &cc;
		srv.link = lb;
		cli.link = la;
		srv.out = fopen("/dev/null", "w");
		srv.quiet_out = srv.out;
		cli.out = stdout;
		if (oob_pair(&srv.oob, &cli.oob))
			return 1;
		pthread_create(&t, NULL, server_thread, &srv);
		rc = run_side(&cli);
		oob_close(&cli.oob);
		pthread_join(t, NULL);
		if (c.verify && srv.verified) {
			/* The receiving end checked what arrived: its findings count too. */
			srv.out = stdout;
			printf(" Receiver's data verification: %" PRIu64 " messages checked, %" PRIu64 " errors%s\n",
			       srv.verified, srv.verify_errors, srv.verify_errors ? "  <-- FAILED" : "");
			if (srv.verify_errors)
				srv.rc = -1;
		}
		oob_close(&srv.oob);
		fclose(srv.quiet_out);
		xr_link_close(la);
		xr_link_close(lb);
		rc = rc || srv.rc;
	} else {
		struct side s = { .c = &c, .server = !c.server, .out = stdout };
		char msg[256];
		int err;
		if (!c.link.addr) {
			fprintf(stderr, "%s: --bind ADDR is needed for the %s link\n", prog, link_kind);
			return 2;
		}
		s.link = xr_link_open(&c.link, msg, sizeof(msg));
		if (!s.link) {
			fprintf(stderr, "%s: %s\n", prog, msg);
			return 1;
		}
		if (c.pcap)
			s.link = xr_link_pcap_tap_n(s.link, c.pcap, c.pcap_frames);
		if (s.server)
			printf("\n************************************\n* Waiting for client to connect... *\n"
			       "************************************\n");
		fflush(stdout);
		err = oob_open(&s.oob, c.server, c.port, !s.server, 10000);
		if (err) {
			fprintf(stderr, "%s: TCP %s port %d: %s\n", prog, s.server ? "listen on" : "connect to", c.port,
				strerror(-err));
			xr_link_close(s.link);
			return 1;
		}
		rc = run_side(&s);
		oob_close(&s.oob);
		xr_link_close(s.link);
	}
	if (json_out) {
		fprintf(json_out, "\n  ],\n  \"status\": \"%s\"\n}\n", rc ? "failed" : "ok");
		fclose(json_out);
	}
	return rc == PP_EXIT_UNACKED ? PP_EXIT_UNACKED : rc ? 1 : 0;
}
