/* SPDX-License-Identifier: MIT */
/* Two xroce devices joined by an in-memory link, with connected RC QPs. */
#ifndef XR_TEST_RC_HARNESS_H
#define XR_TEST_RC_HARNESS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "xroce/verbs.h"

struct end {
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_qp **qp;
	unsigned nqp;
	uint8_t *buf;        /* with guard bytes around the registered part */
	size_t len;
	struct xr_mr *mr;
};

struct pair {
	struct xr_link *la, *lb;
	struct end a, b;
	enum xr_progress_mode mode;
	bool b_driven_elsewhere;   /* inline mode: another thread runs b's engine */
};

#define GUARD 64
#define GUARD_BYTE 0xE7

static inline uint64_t h_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t h_now_ms(void)
{
	return h_now_ns() / 1000000;
}

struct h_opts {
	enum xr_progress_mode mode;
	enum xr_mtu mtu;
	size_t buf_len;
	unsigned nqp;
	unsigned sq_depth, rq_depth, cq_depth;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t traffic_class;              /* the GRH's: ECN and DSCP */
	const struct xr_fault_cfg *fault;   /* on both directions, NULL for none */
	int access;                         /* MR and QP access; 0 = all */
	bool ipv6;
	bool retry7_forever;                /* retry_cnt 7 = infinite, as rxe */
	unsigned link_depth;                /* frames a mem link direction holds; 0: its default */
	bool gather;                        /* a gather link (XR_MEM_GATHER; no fault then) */
	uint32_t max_send_sge, max_inline;  /* 0: one-block WQE slots (12 SGEs, 192 bytes) */
	uint32_t max_recv_sge;              /* 0: one-block receive WQE slots (15 SGEs) */
};

/* RESET to RTS toward peer (on peer_ctx) with o's path and timers. */
static inline int h_connect(struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx,
			    const struct h_opts *o, uint32_t my_psn, uint32_t peer_psn)
{
	struct xr_connect_attr c;
	int access = o->access ? o->access : 0xF;

	xr_connect_attr_init(&c);
	c.dest_qp_num = xr_qp_num(peer);
	c.rq_psn = peer_psn;
	c.sq_psn = my_psn;
	xr_query_gid(peer_ctx, &c.dgid);
	c.path_mtu = o->mtu;
	c.access = (unsigned)access & 0xE;
	c.traffic_class = o->traffic_class;
	c.min_rnr_timer = o->min_rnr_timer;
	c.timeout = o->timeout;
	c.retry_cnt = o->retry_cnt;
	c.rnr_retry = o->rnr_retry;
	return xr_qp_connect(q, &c);
}

static inline int h_end_open(struct end *e, struct xr_link *l, const char *addr, const struct h_opts *o)
{
	struct xr_device_opts d = { .addr = addr, .progress = o->mode, .retry7_forever = o->retry7_forever };
	struct xr_qp_init_attr ia;
	int access = o->access ? o->access : 0xF;

	e->ctx = xr_open_device(l, &d);
	if (!e->ctx)
		return -1;
	e->pd = xr_alloc_pd(e->ctx);
	e->cq = xr_create_cq(e->ctx, (int)(o->cq_depth ? o->cq_depth : 4096));
	e->len = o->buf_len;
	e->buf = malloc(e->len + 2 * GUARD);
	if (!e->pd || !e->cq || !e->buf)
		return -1;
	memset(e->buf, GUARD_BYTE, e->len + 2 * GUARD);
	e->mr = xr_reg_mr(e->pd, e->buf + GUARD, e->len, access | XR_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		return -1;
	e->nqp = o->nqp ? o->nqp : 1;
	e->qp = calloc(e->nqp, sizeof(*e->qp));
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = e->cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = o->sq_depth ? o->sq_depth : 256;
	ia.cap.max_recv_wr = o->rq_depth ? o->rq_depth : 256;
	/* By default one-block WQE slots, as most programs' QPs get. */
	ia.cap.max_send_sge = o->max_send_sge ? o->max_send_sge : XR_WQE_BLOCK_SGE;
	ia.cap.max_recv_sge = o->max_recv_sge ? o->max_recv_sge : XR_RWQE_BLOCK_SGE;
	ia.cap.max_inline_data = o->max_inline ? o->max_inline : XR_WQE_BODY(0);
	for (unsigned i = 0; i < e->nqp; i++) {
		e->qp[i] = xr_create_qp(e->pd, &ia);
		if (!e->qp[i])
			return -1;
	}
	return 0;
}

static inline int h_open(struct pair *p, const struct h_opts *o)
{
	memset(p, 0, sizeof(*p));
	p->mode = o->mode;
	/* XROCE_TEST_GATHER runs a suite on gather links where it can (a
	 * fault wrapper refuses one). */
	if (xr_link_mem_pair_ex(&p->la, &p->lb, o->link_depth,
				o->gather || (getenv("XROCE_TEST_GATHER") && !o->fault) ? XR_MEM_GATHER : 0))
		return -1;
	if (o->fault) {
		struct xr_fault_cfg fa = *o->fault, fb = *o->fault;
		fb.seed = fa.seed * 31 + 7;
		p->la = xr_link_fault(p->la, &fa);
		p->lb = xr_link_fault(p->lb, &fb);
	}
	if (h_end_open(&p->a, p->la, o->ipv6 ? "fd00::1" : "10.0.0.1", o) ||
	    h_end_open(&p->b, p->lb, o->ipv6 ? "fd00::2" : "10.0.0.2", o))
		return -1;
	for (unsigned i = 0; i < p->a.nqp; i++) {
		uint32_t pa = (0xFFFF00u + i * 977) & 0xFFFFFF, pb = (0xABC00u + i * 13) & 0xFFFFFF;
		if (h_connect(p->a.qp[i], p->b.qp[i], p->b.ctx, o, pa, pb) ||
		    h_connect(p->b.qp[i], p->a.qp[i], p->a.ctx, o, pb, pa))
			return -1;
	}
	return 0;
}

static inline void h_end_close(struct end *e)
{
	for (unsigned i = 0; i < e->nqp; i++)
		if (e->qp && e->qp[i])
			xr_destroy_qp(e->qp[i]);
	free(e->qp);
	if (e->mr)
		xr_dereg_mr(e->mr);
	if (e->cq)
		xr_destroy_cq(e->cq);
	if (e->pd)
		xr_dealloc_pd(e->pd);
	if (e->ctx)
		xr_close_device(e->ctx);
	free(e->buf);
}

static inline void h_close(struct pair *p)
{
	h_end_close(&p->a);
	h_end_close(&p->b);
	xr_link_close(p->la);
	xr_link_close(p->lb);
}

/* A counter of e's engine, read through its register file. */
static inline uint64_t h_counter(const struct end *e, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(e->ctx), c, &v);
	return v;
}

/* e's first QP as a QP READ loads it (its congestion state with it); a
 * failed read gives state 0xFF, which no check accepts. */
static inline struct xr_qp_ctx h_qp_read(const struct end *e)
{
	struct xr_qp_ctx c;
	if (xr_regio_qp_read(xr_context_regs(e->ctx), xr_qp_num(e->qp[0]), &c)) {
		memset(&c, 0, sizeof(c));
		c.state = 0xFF;
	}
	return c;
}

/* Keeps both engines moving in inline mode (the thread does it otherwise). */
static inline void h_progress(struct pair *p)
{
	if (p->mode == XR_PROGRESS_INLINE) {
		xr_engine_progress(xr_context_engine(p->a.ctx));
		if (!p->b_driven_elsewhere)
			xr_engine_progress(xr_context_engine(p->b.ctx));
	}
}

/* Polls e's CQ until one completion arrives or timeout_ms passes: 1 or 0. */
static inline int h_wait(struct pair *p, struct end *e, struct xr_wc *wc, unsigned timeout_ms)
{
	uint64_t until = h_now_ms() + timeout_ms;

	do {
		h_progress(p);
		if (xr_poll_cq(e->cq, 1, wc) == 1)
			return 1;
	} while (h_now_ms() < until);
	return 0;
}

/* The guard bytes around a buffer are intact. */
static inline bool h_guards_ok(const struct end *e)
{
	for (size_t i = 0; i < GUARD; i++)
		if (e->buf[i] != GUARD_BYTE || e->buf[GUARD + e->len + i] != GUARD_BYTE)
			return false;
	return true;
}

/* Every non-zero counter of both ends and the last events: for failures. */
static inline void h_dump(struct pair *p)
{
	struct end *ends[2] = { &p->a, &p->b };

	for (int k = 0; k < 2; k++) {
		struct xr_regio *r = xr_context_regs(ends[k]->ctx);
		uint32_t count = 0;
		fprintf(stderr, "-- %s counters:", k ? "b" : "a");
		for (unsigned c = 0; c < XR_CNT_COUNT; c++) {
			uint64_t v = 0;
			xr_regio_read_counter(r, (enum xr_counter)c, &v);
			if (v)
				fprintf(stderr, " %s=%llu", xr_counter_name((enum xr_counter)c), (unsigned long long)v);
		}
		fprintf(stderr, "\n-- %s events:\n", k ? "b" : "a");
		xr_regio_read(r, XR_REG_EVLOG_COUNT, &count);
		for (uint32_t sq = count > 24 ? count - 24 : 0; sq < count; sq++) {
			uint32_t type, qpn, a0, a1;
			xr_regio_write(r, XR_REG_EVLOG_SEL, sq);
			xr_regio_read(r, XR_REG_EVLOG_TYPE, &type);
			xr_regio_read(r, XR_REG_EVLOG_QPN, &qpn);
			xr_regio_read(r, XR_REG_EVLOG_ARG0, &a0);
			xr_regio_read(r, XR_REG_EVLOG_ARG1, &a1);
			if (type >> 31 && (type & 0xFF) != XR_EV_WQE_POSTED)
				fprintf(stderr, "   %s qpn 0x%x 0x%x 0x%x\n", xr_event_name((enum xr_event_type)(type & 0xFF)), qpn, a0, a1);
		}
	}
}

static inline uint8_t *h_data(const struct end *e)
{
	return e->buf + GUARD;
}

/* Streams msg-byte RDMA WRITEs from a to b for the given seconds, keeping
 * depth in flight and signalling every signal_every-th; returns goodput in
 * bytes per second, or -1 on a completion error. Benchmarks share it. */
static inline double h_write_stream(struct pair *p, uint32_t msg, unsigned depth, unsigned signal_every,
				    double seconds)
{
	uint64_t posted = 0, done = 0, t0 = h_now_ns(), t;
	struct xr_wc wc[32];

	do {
		while (posted - done < depth) {
			struct xr_sge s = { (uintptr_t)h_data(&p->a) + (posted % 512) * msg, msg, p->a.mr->lkey };
			struct xr_send_wr w = { .wr_id = posted, .sg_list = &s, .num_sge = 1,
						.opcode = XR_WR_RDMA_WRITE,
						.send_flags = posted % signal_every == signal_every - 1 ? XR_SEND_SIGNALED : 0 };
			w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + (posted % 512) * msg;
			w.wr.rdma.rkey = p->b.mr->rkey;
			if (xr_post_send(p->a.qp[0], &w, NULL))
				break;
			posted++;
		}
		h_progress(p);
		int n = xr_poll_cq(p->a.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != XR_WC_SUCCESS) {
				fprintf(stderr, "write stream: completion error %s\n", xr_wc_status_str(wc[i].status));
				return -1;
			}
			done = wc[i].wr_id + 1;
		}
		t = h_now_ns();
	} while ((double)(t - t0) < seconds * 1e9);
	return (double)done * msg / ((double)(t - t0) / 1e9);
}

#endif
