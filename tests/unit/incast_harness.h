/* SPDX-License-Identifier: MIT */
/*
 * Incast through the switch model with real engines, and a paced QP pair:
 * N senders stream RDMA WRITEs into one receiver behind a bottleneck port
 * that marks ECN (RED); one thread steps the fabric's simulated clock and
 * every engine (deterministic). Used by tests/unit/test_dcqcn.c and
 * bench/bench_cc.c.
 */
#ifndef XR_TEST_INCAST_HARNESS_H
#define XR_TEST_INCAST_HARNESS_H

#include "fabric_harness.h"
#include "rc_harness.h"

#define MAX_SEND DEV_MAX_QP
#define MAX_WIN 64
#define QHIST 4096   /* queue-length histogram: 1 KiB buckets up to 4 MiB */


struct incast_cfg {
	unsigned nsend;
	uint64_t rate_bps;          /* every port */
	bool dcqcn;                 /* senders react to CNPs */
	uint32_t kmin, kmax;
	double pmax;
	uint32_t queue_limit;
	uint32_t msg;               /* WRITE size */
	unsigned depth;             /* WRITEs outstanding per sender */
	uint64_t warmup_ns, window_ns;   /* measured: nwin windows after warmup */
	unsigned nwin;
	uint32_t timer_us, ai_mbps, hai_mbps;   /* DCQCN increase steps */
	uint64_t seed;
};

struct incast {
	struct incast_cfg cfg;
	struct net n;
	struct dev d[MAX_SEND + 1];
	unsigned ndev;
	uint64_t dt;
	/* Results. */
	uint64_t win_bytes[MAX_WIN][MAX_SEND];
	unsigned nwin;
	uint64_t bytes[MAX_SEND];
	uint64_t drops_first, drops, rexmit, cnp_sent, cnp_rcvd, cuts, marks;
	double util, goodput, fairness, fairness_min, qmean;
	uint64_t qp99, qmax;
};


static inline void reg_write(struct dev *d, uint32_t off, uint32_t v)
{
	assert_int_equal(xr_regio_write(xr_context_regs(d->ctx), off, v), 0);
}

static inline void dev_open(struct incast *s, const struct xr_fabric_port_cfg *pc, size_t len, unsigned nqp)
{
	const struct dev_opts o = { .len = len, .nqp = nqp, .cq_depth = 1024, .sq_depth = 64, .rq_depth = 4,
				    .retry7_forever = true };

	dev_open_on(s->n.fab, pc, &o, &s->d[s->ndev++]);
}

static inline void incast_open(struct incast *s, const struct incast_cfg *cfg_in)
{
	const struct incast_cfg *cfg = cfg_in;
	struct xr_fabric_cfg fc = { .seed = cfg->seed, .sample_ns = 1000 };
	struct xr_fabric_port_cfg edge = { .rate_bps = cfg->rate_bps };
	struct xr_fabric_port_cfg bottleneck = {
		.rate_bps = cfg->rate_bps, .queue_limit = cfg->queue_limit,
		.ecn = { .enable = true, .kmin = cfg->kmin, .kmax = cfg->kmax, .pmax = cfg->pmax },
	};
	const struct h_opts o = { .mtu = XR_MTU_4096, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1, .retry7_forever = true };

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->n.fab = xr_fabric_new(&fc);
	assert_non_null(s->n.fab);
	/* A 4 KiB frame takes 3.3 us at 10 Gb/s: steps well below that. */
	s->dt = 400;
	dev_open(s, &bottleneck, cfg->msg, cfg->nsend);
	for (unsigned k = 0; k < cfg->nsend; k++)
		dev_open(s, &edge, cfg->msg, 1);
	for (unsigned k = 0; k < cfg->nsend; k++) {
		struct dev *snd = &s->d[1 + k];
		assert_int_equal(h_connect(s->d[0].qp[k], snd->qp[0], snd->ctx, &o, 1000 + k, 0xFFFF00 + k), 0);
		assert_int_equal(h_connect(snd->qp[0], s->d[0].qp[k], s->d[0].ctx, &o, 0xFFFF00 + k, 1000 + k), 0);
		/* The senders' line rate is the port's; DCQCN on or off. */
		uint32_t ctrl = 0;
		xr_regio_read(xr_context_regs(snd->ctx), XR_REG_CC_CTRL, &ctrl);
		reg_write(snd, XR_REG_CC_CTRL, cfg->dcqcn ? ctrl | XR_CC_DCQCN_ENABLE : ctrl & ~XR_CC_DCQCN_ENABLE);
		reg_write(snd, XR_REG_DCQCN_MAX_RATE, (uint32_t)(cfg->rate_bps / 1000000));
		/* Increase steps for a 10 Gb/s fabric: the defaults (the paper's
		 * 55 us / 40 Mb/s) are for 40-100 Gb/s; eight flows each adding
		 * 40 Mb/s every 55 us would outgrow a 10 Gb/s port's share within
		 * a millisecond (NVIDIA's defaults, 300 us / 5 Mb/s, recover slower). */
		reg_write(snd, XR_REG_DCQCN_TIMER_US, cfg->timer_us);
		reg_write(snd, XR_REG_DCQCN_RATE_AI, cfg->ai_mbps);
		reg_write(snd, XR_REG_DCQCN_RATE_HAI, cfg->hai_mbps);
	}
}

static inline void incast_free(struct incast *s)
{
	for (unsigned i = 0; i < s->ndev; i++)
		dev_close(&s->d[i]);
	xr_fabric_free(s->n.fab);
}

static inline void post_write(struct incast *s, unsigned k)
{
	struct dev *snd = &s->d[1 + k], *r = &s->d[0];
	struct xr_sge sg = { (uintptr_t)snd->buf, s->cfg.msg, snd->mr->lkey };
	struct xr_send_wr w = { .wr_id = k, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };

	w.wr.rdma.remote_addr = (uintptr_t)r->buf;
	w.wr.rdma.rkey = r->mr->rkey;
	assert_int_equal(xr_post_send(snd->qp[0], &w, NULL), 0);
}

static inline uint64_t drops_total(struct incast *s)
{
	uint64_t t = 0;
	for (unsigned p = 0; p < xr_fabric_nports(s->n.fab); p++) {
		struct xr_fabric_port_stats st = pstats(&s->n, p);
		for (int d = 0; d < XR_FABRIC_DROP_COUNT; d++)
			t += st.drops[d];
	}
	return t;
}

static inline double jain(const uint64_t *x, unsigned n)
{
	double sum = 0, sq = 0;
	for (unsigned i = 0; i < n; i++) {
		sum += (double)x[i];
		sq += (double)x[i] * (double)x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 0;
}

static inline void step(struct incast *s)
{
	s->n.now += s->dt;
	assert_true(xr_fabric_step(s->n.fab, s->n.now) >= 0);
	for (unsigned i = 0; i < s->ndev; i++)
		xr_engine_progress(xr_context_engine(s->d[i].ctx));
}

/* Streams for warmup + nwin windows; everything measured after warmup. */
static inline void incast_run(struct incast *s)
{
	const struct incast_cfg *c = &s->cfg;
	uint64_t start, next_win;
	struct xr_wc wc[32];
	struct xr_fabric_port_stats bn0;
	uint64_t total[MAX_SEND] = { 0 };

	for (unsigned k = 0; k < c->nsend; k++)
		for (unsigned i = 0; i < c->depth; i++)
			post_write(s, k);
	start = s->n.now;
	next_win = start + c->warmup_ns;
	int win = -1;   /* warm-up */
	/* Queue length after the warm-up, sampled every step, in 1 KiB buckets. */
	uint32_t *hist = calloc(QHIST, sizeof(*hist));
	uint64_t qsum = 0, nq = 0;
	assert_non_null(hist);
	s->qmax = 0;
	while (win < (int)c->nwin) {
		step(s);
		if (win >= 0) {
			uint64_t q = xr_fabric_queue_bytes(s->n.fab, 0, -1);
			hist[q / 1024 < QHIST ? q / 1024 : QHIST - 1]++;
			qsum += q;
			nq++;
			if (q > s->qmax)
				s->qmax = q;
		}
		for (unsigned k = 0; k < c->nsend; k++) {
			int got = xr_poll_cq(s->d[1 + k].cq, 32, wc);
			for (int i = 0; i < got; i++) {
				assert_int_equal(wc[i].status, XR_WC_SUCCESS);
				if (win >= 0) {
					s->win_bytes[win][k] += c->msg;
					s->bytes[k] += c->msg;
				}
				post_write(s, k);
			}
		}
		if (s->n.now >= next_win) {
			if (win < 0) {
				s->drops_first = drops_total(s);
				bn0 = pstats(&s->n, 0);
				start = s->n.now;
			}
			win++;
			next_win += c->window_ns;
		}
	}
	s->nwin = c->nwin;
	s->drops = drops_total(s);
	struct xr_fabric_port_stats bn = pstats(&s->n, 0);
	double secs = (double)(s->n.now - start) / 1e9, goodput = 0;
	s->util = (double)(bn.tx_wire_bytes - bn0.tx_wire_bytes) * 8 / ((double)c->rate_bps * secs);
	for (unsigned k = 0; k < c->nsend; k++)
		goodput += (double)s->bytes[k] * 8;
	s->goodput = goodput / ((double)c->rate_bps * secs);
	s->qmean = nq ? (double)qsum / (double)nq : 0;
	s->qp99 = 0;
	for (uint64_t i = 0, seen = 0; i < QHIST; i++) {
		seen += hist[i];
		if (seen * 100 >= nq * 99) {
			s->qp99 = (i + 1) * 1024 < s->qmax ? (i + 1) * 1024 : s->qmax;
			break;
		}
	}
	free(hist);
	s->marks = bn.ecn_marked;
	s->cnp_sent = dev_counter(&s->d[0], XR_CNT_CNP_SENT);
	for (unsigned k = 0; k < c->nsend; k++) {
		s->rexmit += dev_counter(&s->d[1 + k], XR_CNT_RETRANSMITS);
		s->cnp_rcvd += dev_counter(&s->d[1 + k], XR_CNT_CNP_RCVD);
		s->cuts += dev_counter(&s->d[1 + k], XR_CNT_DCQCN_CUTS);
	}
	s->fairness_min = 1;
	for (unsigned w = 0; w < s->nwin; w++) {
		double j = jain(s->win_bytes[w], c->nsend);
		if (j < s->fairness_min)
			s->fairness_min = j;
		for (unsigned k = 0; k < c->nsend; k++)
			total[k] += s->win_bytes[w][k];
	}
	s->fairness = jain(total, c->nsend);
	printf("%u->1 %s, %.2f s after %.0f ms: link util %.3f, goodput %.3f of line rate, fairness %.4f (min over %u windows of %.0f ms %.4f), "
	       "queue (after warm-up) mean %.0f p99 %llu max %llu B (Kmin %u), drops %llu (warm-up: %llu), retransmissions %llu, ECN marks %llu, "
	       "CNPs %llu sent %llu rcvd, rate cuts %llu\n",
	       c->nsend, c->dcqcn ? "DCQCN" : "no DCQCN", secs, c->warmup_ns / 1e6, s->util, s->goodput, s->fairness,
	       s->nwin, c->window_ns / 1e6, s->fairness_min, s->qmean, (unsigned long long)s->qp99,
	       (unsigned long long)s->qmax, c->kmin, (unsigned long long)s->drops, (unsigned long long)s->drops_first,
	       (unsigned long long)s->rexmit, (unsigned long long)s->marks, (unsigned long long)s->cnp_sent,
	       (unsigned long long)s->cnp_rcvd, (unsigned long long)s->cuts);
	for (unsigned k = 0; k < c->nsend; k++) {
		struct xr_qp_ctx qc;
		assert_int_equal(xr_regio_qp_read(xr_context_regs(s->d[1 + k].ctx), xr_qp_num(s->d[1 + k].qp[0]), &qc), 0);
		printf("  sender %u: %.3f Gb/s; DCQCN rate %u target %u Mb/s, alpha %u/1024, %u CNPs\n", k,
		       (double)s->bytes[k] * 8 / ((double)(s->n.now - start)), qc.cc_rate, qc.cc_target, qc.cc_alpha,
		       qc.cnp_rcvd);
	}
}

static const struct incast_cfg base = {
	.rate_bps = 10 * GBPS, .dcqcn = true,
	.kmin = 20 * 1024, .kmax = 200 * 1024, .pmax = 0.5,
	.queue_limit = 1024 * 1024, .msg = 65536, .depth = 4,
	.timer_us = 100, .ai_mbps = 10, .hai_mbps = 50,
	.warmup_ns = 50000000, .window_ns = 100000000, .nwin = 10, .seed = 12,
};

/* ---- the pacer alone: a static rate cap per QP ---- */

/* One sender with two QPs to one receiver, no ECN: QP 0 capped at cap_mbps
 * (ibv rate_limit), QP 1 uncapped or capped at cap2_mbps. Returns each
 * QP's wire rate over the measured span, Mb/s. */
static inline void pacer_run(uint32_t cap_mbps, uint32_t cap2_mbps, double out[2])
{
	struct incast s;
	struct incast_cfg c = base;
	struct xr_fabric_cfg fc = { .seed = 1 };
	struct xr_fabric_port_cfg pc = { .rate_bps = 10 * GBPS, .queue_limit = 1024 * 1024 };
	const struct h_opts o = { .mtu = XR_MTU_4096, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1 };
	const uint32_t caps[2] = { cap_mbps, cap2_mbps };
	struct xr_wc wc[32];
	uint64_t bytes[2] = { 0 }, start = 0;

	memset(&s, 0, sizeof(s));
	c.nsend = 2;
	c.msg = 16384;   /* whole messages are counted: 1 % of 100 Mb/s over the window */
	s.cfg = c;
	s.n.fab = xr_fabric_new(&fc);
	assert_non_null(s.n.fab);
	s.dt = 400;
	dev_open(&s, &pc, c.msg, 2);
	dev_open(&s, &pc, c.msg, 2);
	for (unsigned k = 0; k < 2; k++) {
		struct xr_qp_attr a = { .rate_limit = caps[k] * 1000 };
		assert_int_equal(h_connect(s.d[0].qp[k], s.d[1].qp[k], s.d[1].ctx, &o, 10 + k, 20 + k), 0);
		assert_int_equal(h_connect(s.d[1].qp[k], s.d[0].qp[k], s.d[0].ctx, &o, 20 + k, 10 + k), 0);
		assert_int_equal(xr_modify_qp(s.d[1].qp[k], &a, XR_QP_RATE_LIMIT), 0);
		struct xr_qp_attr q;
		struct xr_qp_init_attr qi;
		assert_int_equal(xr_query_qp(s.d[1].qp[k], &q, XR_QP_RATE_LIMIT, &qi), 0);
		assert_int_equal(q.rate_limit, caps[k] * 1000);
	}
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < c.depth; i++) {
			struct xr_sge sg = { (uintptr_t)s.d[1].buf, c.msg, s.d[1].mr->lkey };
			struct xr_send_wr w = { .wr_id = k, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
						.send_flags = XR_SEND_SIGNALED };
			w.wr.rdma.remote_addr = (uintptr_t)s.d[0].buf;
			w.wr.rdma.rkey = s.d[0].mr->rkey;
			assert_int_equal(xr_post_send(s.d[1].qp[k], &w, NULL), 0);
		}
	/* 10 ms to settle, then 200 ms measured from completions. */
	for (uint64_t t = 0; t < 210000000; t += s.dt) {
		if (t >= 10000000 && !start)
			start = s.n.now;
		step(&s);
		int got = xr_poll_cq(s.d[1].cq, 32, wc);
		for (int i = 0; i < got; i++) {
			unsigned k = (unsigned)wc[i].wr_id;
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			if (start)
				bytes[k] += c.msg;
			struct xr_sge sg = { (uintptr_t)s.d[1].buf, c.msg, s.d[1].mr->lkey };
			struct xr_send_wr w = { .wr_id = k, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
						.send_flags = XR_SEND_SIGNALED };
			w.wr.rdma.remote_addr = (uintptr_t)s.d[0].buf;
			w.wr.rdma.rkey = s.d[0].mr->rkey;
			assert_int_equal(xr_post_send(s.d[1].qp[k], &w, NULL), 0);
		}
	}
	/* Goodput to wire rate: a 4096-byte payload travels in a frame of
	 * 4096 + 62 header bytes + 24 on the wire. */
	for (unsigned k = 0; k < 2; k++)
		out[k] = (double)bytes[k] * (4096.0 + 62 + XR_FABRIC_WIRE_OVERHEAD) / 4096 * 8 / ((double)(s.n.now - start) / 1e3);
	printf("pacer: QP capped at %u Mb/s sent %.1f Mb/s on the wire (%.4f); the other (%s%u) %.1f Mb/s\n", cap_mbps,
	       out[0], out[0] / cap_mbps, cap2_mbps ? "capped at " : "uncapped", cap2_mbps, out[1]);
	c.nsend = 0;
	s.cfg = c;
	incast_free(&s);
}


#endif
