/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf congestion (the seed's roce_stress -m congestion): an N-to-1
 * incast through the switch model, in this process. N sender engines and
 * one receiver, each a device on a port of an in-process fabric; the
 * receiver's port is the bottleneck (its rate, a tail-drop queue, RED ECN
 * marking). Every sender streams RDMA WRITEs (or SENDs) on Q QPs. One
 * thread steps the fabric's clock and every engine, whose timers read that
 * clock: the run is in simulated fabric time and deterministic.
 *
 * Per interval: goodput and DCQCN rate of every QP (the rate read through
 * the register window: a QP READ command, then QP_CC_RATE/TARGET/ALPHA),
 * the bottleneck queue (mean, p99, max), drops, retransmissions, ECN marks,
 * CNPs and PFC frames. At the end: totals, Jain's fairness over the QPs and
 * the bottleneck's utilisation. -p PRIO -d MS injects PFC XOFF frames toward
 * the senders (xr_fabric_send_pfc) to show their reaction.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perf.h"
#include "perf_congestion.h"
#include "xroce/engine.h"
#include "xroce/fabric.h"
#include "xroce/regio.h"

/* ---- the run's resources ---- */

struct cg_dev {
	struct xr_link *link;
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	uint8_t *buf;
	size_t len;
	struct xr_mr *mr;
	int port;
	bool serving;
};

struct cg_flow {
	unsigned sender, q;
	struct xr_qp *sqp, *rqp;      /* on the sender, on the receiver */
	unsigned outstanding;
	uint64_t bytes, bytes_iv;     /* completed (ACKed) payload: run, interval */
	uint64_t posted;
	bool dead;                    /* a completion with an error status */
};

struct cg_run {
	const struct cg_cfg *c;
	struct xr_fabric *fab;
	struct cg_dev recv, send[CG_MAX_SENDERS];
	struct cg_flow flow[CG_MAX_SENDERS * CG_MAX_QPS];
	unsigned nflows;
	uint64_t now;
	/* Bottleneck queue samples of this interval (1 KiB buckets). */
	uint64_t qhist[CG_QHIST];
	uint64_t qsum, qn, qmax;
	/* PFC injection. */
	uint64_t inj_start, inj_end, inj_next;
	bool inj_on, inj_done;
	unsigned inj_frames, inj_errors;
	unsigned qp_errors;
	/* Totals at the previous report, for deltas. */
	struct cg_totals prev;
	double jain_min;
	unsigned intervals;
	uint64_t drops_late;          /* after the first interval (the start-up) */
	double iv_good_min;           /* the lowest interval goodput, Gb/s */
};

static uint64_t counter(struct cg_dev *d, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(d->ctx), c, &v);
	return v;
}

static uint64_t senders_counter(struct cg_run *r, enum xr_counter c)
{
	uint64_t t = 0;
	for (unsigned i = 0; i < r->c->senders; i++)
		t += counter(&r->send[i], c);
	return t;
}

static int reg_write(struct cg_dev *d, uint32_t reg, uint32_t v)
{
	int rc = xr_regio_write(xr_context_regs(d->ctx), reg, v);
	if (rc)
		fprintf(stderr, "%s: register 0x%04x <- 0x%08x: %s\n", prog, reg, v, xr_axi_resp_name(rc));
	return rc ? -EIO : 0;
}

/* --regs-socket PREFIX: the engine's registers on PREFIX-NAME, for
 * xroce-regs --attach PREFIX-NAME watch --cc while the run goes on. */
static int dev_serve(struct cg_run *r, struct cg_dev *d, const char *name)
{
	char path[108];
	int rc;

	if (!r->c->regs_prefix)
		return 0;
	if ((size_t)snprintf(path, sizeof(path), "%s-%s", r->c->regs_prefix, name) >= sizeof(path)) {
		fprintf(stderr, "%s: --regs-socket %s: path too long\n", prog, r->c->regs_prefix);
		return -ENAMETOOLONG;
	}
	rc = xr_engine_serve_debug(xr_context_engine(d->ctx), path);
	if (rc) {
		fprintf(stderr, "%s: serving registers on %s: %s\n", prog, path, strerror(-rc));
		return rc;
	}
	d->serving = true;
	fprintf(r->c->out, "# registers of %s on %s (xroce-regs --attach %s watch --cc)\n", name, path, path);
	return 0;
}

static int dev_open(struct cg_run *r, struct cg_dev *d, const struct xr_fabric_port_cfg *pc, uint64_t host_bps,
		    bool ignore_pause, const char *addr, size_t len, unsigned cqe)
{
	struct xr_fabric_host_cfg hc = { .addr = addr, .rate_bps = host_bps, .ignore_pause = ignore_pause };
	struct xr_device_opts o = { .addr = addr, .progress = XR_PROGRESS_INLINE };

	d->port = xr_fabric_attach_host(r->fab, pc, &hc, &d->link);
	if (d->port < 0) {
		fprintf(stderr, "%s: fabric port for %s: %s\n", prog, addr, strerror(-d->port));
		d->link = NULL;
		return d->port;
	}
	d->ctx = xr_open_device(d->link, &o);
	if (!d->ctx) {
		fprintf(stderr, "%s: device %s: %s\n", prog, addr, strerror(errno));
		return -errno;
	}
	/* The engine's timers run on the fabric's clock. */
	xr_engine_set_clock(xr_context_engine(d->ctx), xr_fabric_clock, r->fab);
	d->pd = xr_alloc_pd(d->ctx);
	d->cq = d->pd ? xr_create_cq(d->ctx, (int)cqe) : NULL;
	d->len = len;
	d->buf = calloc(1, len);
	d->mr = d->buf && d->pd ? xr_reg_mr(d->pd, d->buf, len, 0xF) : NULL;
	if (!d->cq || !d->mr) {
		fprintf(stderr, "%s: device %s: resources: %s\n", prog, addr, strerror(errno ? errno : ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

static void dev_close(struct cg_dev *d)
{
	if (d->mr)
		xr_dereg_mr(d->mr);
	if (d->cq)
		xr_destroy_cq(d->cq);
	if (d->pd)
		xr_dealloc_pd(d->pd);
	if (d->serving)
		xr_engine_stop_debug(xr_context_engine(d->ctx));
	if (d->ctx)
		xr_close_device(d->ctx);
	if (d->link)
		xr_link_close(d->link);
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

static struct xr_qp *qp_new(struct cg_dev *d, unsigned depth)
{
	struct xr_qp_init_attr ia = { 0 };

	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return xr_create_qp(d->pd, &ia);
}

/* INIT, RTR, RTS toward peer (on peer_ctx). */
static int qp_connect(const struct cg_cfg *c, struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx,
		      uint32_t my_psn, uint32_t peer_psn)
{
	struct xr_connect_attr a;

	xr_connect_attr_init(&a);
	a.dest_qp_num = xr_qp_num(peer);
	a.rq_psn = peer_psn;
	a.sq_psn = my_psn;
	xr_query_gid(peer_ctx, &a.dgid);
	a.path_mtu = (enum xr_mtu)mtu_enum_of((int)c->mtu);
	a.access = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ;
	a.min_rnr_timer = 1;
	/* DSCP = prio << 3, the switch's default map back to the priority; the
	 * engine adds ECT(0) itself (CC_CTRL ecn_enable). */
	a.traffic_class = (uint8_t)((c->prio << 3) << 2);
	a.timeout = (uint8_t)c->qp_timeout;
	return xr_qp_connect(q, &a);
}

/* Congestion-control registers of one engine, as the options say. */
static int cc_setup(struct cg_run *r, struct cg_dev *d, bool sender)
{
	const struct cg_cfg *c = r->c;
	struct xr_regio *rg = xr_context_regs(d->ctx);
	uint32_t ctrl, pfc;
	int rc;

	if (xr_regio_read(rg, XR_REG_CC_CTRL, &ctrl) || xr_regio_read(rg, XR_REG_PFC_CTRL, &pfc))
		return -EIO;
	if (!c->ecn)
		ctrl &= ~XR_CC_ECN_ENABLE;
	if (sender && !c->dcqcn)
		ctrl &= ~XR_CC_DCQCN_ENABLE;
	rc = reg_write(d, XR_REG_CC_CTRL, ctrl);
	/* DCQCN's ceiling and the pause quanta's speed: the port's rate. */
	if (!rc)
		rc = reg_write(d, XR_REG_DCQCN_MAX_RATE, (uint32_t)((sender ? c->edge_bps : c->bottleneck_bps) / 1000000));
	if (!rc)
		rc = reg_write(d, XR_REG_PFC_LINK_MBPS, (uint32_t)((sender ? c->edge_bps : c->bottleneck_bps) / 1000000));
	if (!rc && sender && (c->inject_prio >= 0 || c->pfc))
		rc = reg_write(d, XR_REG_PFC_CTRL, pfc | (1u << (8 + (c->inject_prio >= 0 ? c->inject_prio : (int)c->prio))));
	for (unsigned i = 0; !rc && i < c->nsets; i++)
		rc = reg_write(d, c->sets[i].reg, c->sets[i].value);
	return rc;
}

static int run_open(struct cg_run *r)
{
	const struct cg_cfg *c = r->c;
	struct xr_fabric_cfg fc = { .seed = c->seed, .prio_src = XR_FABRIC_PRIO_DSCP };
	struct xr_fabric_port_cfg bp = { .name = "recv", .rate_bps = c->bottleneck_bps, .queue_limit = c->queue };
	struct xr_fabric_port_cfg ep = { .rate_bps = c->edge_bps };
	unsigned depth = c->depth * 2 + 8;
	char addr[32], name[16];
	int rc;

	r->fab = xr_fabric_new(&fc);
	if (!r->fab) {
		fprintf(stderr, "%s: fabric: %s\n", prog, strerror(errno));
		return -errno;
	}
	if (c->ecn) {
		bp.ecn.enable = true;
		bp.ecn.kmin = c->kmin;
		bp.ecn.kmax = c->kmax;
		bp.ecn.pmax = c->pmax;
	}
	if (c->pfc) {
		ep.pfc.prio_mask = (uint8_t)(1u << c->prio);
		ep.pfc.xoff = c->xoff;
		ep.pfc.xon = c->xoff / 2;
		ep.pfc.headroom = c->xoff * 2;
	}
	rc = dev_open(r, &r->recv, &bp, c->bottleneck_bps, false, "10.0.0.1",
		      (size_t)c->senders * c->qps * c->size, (unsigned)(c->senders * c->qps * depth));
	if (!rc)
		rc = dev_serve(r, &r->recv, "recv");
	for (unsigned i = 0; !rc && i < c->senders; i++) {
		snprintf(addr, sizeof(addr), "10.0.1.%u", i + 1);
		snprintf(name, sizeof(name), "s%u", i);
		ep.name = name;
		rc = dev_open(r, &r->send[i], &ep, c->edge_bps, !c->mac_pause, addr, c->size, c->qps * depth);
		if (!rc)
			rc = dev_serve(r, &r->send[i], name);
		for (uint32_t k = 0; !rc && k < c->size; k++)
			r->send[i].buf[k] = (uint8_t)(i * 73 + k * 7 + (k >> 8));
	}
	if (rc)
		return rc;
	rc = cc_setup(r, &r->recv, false);
	for (unsigned i = 0; !rc && i < c->senders; i++)
		rc = cc_setup(r, &r->send[i], true);
	for (unsigned i = 0; !rc && i < c->senders; i++)
		for (unsigned q = 0; !rc && q < c->qps; q++) {
			struct cg_flow *f = &r->flow[r->nflows];
			f->sender = i;
			f->q = q;
			f->sqp = qp_new(&r->send[i], depth);
			f->rqp = qp_new(&r->recv, depth);
			if (!f->sqp || !f->rqp) {
				fprintf(stderr, "%s: QP %u of sender %u: %s\n", prog, q, i, strerror(errno));
				return -ENOMEM;
			}
			r->nflows++;
			rc = qp_connect(c, f->sqp, f->rqp, r->recv.ctx, 0x100 + r->nflows, 0x900000 + r->nflows);
			if (!rc)
				rc = qp_connect(c, f->rqp, f->sqp, r->send[i].ctx, 0x900000 + r->nflows, 0x100 + r->nflows);
			if (rc)
				fprintf(stderr, "%s: connecting QP %u of sender %u: %s\n", prog, q, i, strerror(rc < 0 ? -rc : rc));
		}
	return rc;
}

static void run_close(struct cg_run *r)
{
	for (unsigned i = 0; i < r->nflows; i++) {
		if (r->flow[i].sqp)
			xr_destroy_qp(r->flow[i].sqp);
		if (r->flow[i].rqp)
			xr_destroy_qp(r->flow[i].rqp);
	}
	for (unsigned i = 0; i < r->c->senders; i++)
		dev_close(&r->send[i]);
	dev_close(&r->recv);
	xr_fabric_free(r->fab);
}

/* ---- traffic ---- */

static uint8_t *slot_of(struct cg_run *r, unsigned flow)
{
	return r->recv.buf + (size_t)flow * r->c->size;
}

static int post_recv(struct cg_run *r, unsigned fi)
{
	struct xr_sge sg = { (uintptr_t)slot_of(r, fi), r->c->size, r->recv.mr->lkey };
	struct xr_recv_wr w = { .wr_id = fi, .sg_list = &sg, .num_sge = 1 };
	return xr_post_recv(r->flow[fi].rqp, &w, NULL);
}

static void post_sends(struct cg_run *r, unsigned fi)
{
	struct cg_flow *f = &r->flow[fi];
	struct cg_dev *d = &r->send[f->sender];

	while (!f->dead && f->outstanding < r->c->depth) {
		struct xr_sge sg = { (uintptr_t)d->buf, r->c->size, d->mr->lkey };
		struct xr_send_wr w = { .wr_id = fi, .sg_list = &sg, .num_sge = 1, .send_flags = XR_SEND_SIGNALED,
					.opcode = r->c->send ? XR_WR_SEND : XR_WR_RDMA_WRITE };
		w.wr.rdma.remote_addr = (uintptr_t)slot_of(r, fi);
		w.wr.rdma.rkey = r->recv.mr->rkey;
		if (xr_post_send(f->sqp, &w, NULL))
			return;   /* the ring is full: the next completion makes room */
		f->outstanding++;
		f->posted++;
	}
}

static void flow_failed(struct cg_run *r, struct cg_flow *f, const struct xr_wc *wc)
{
	if (f->dead)
		return;   /* the rest of its queue flushed */
	fprintf(r->c->out, "# %.3f ms: sender %u QP %u (0x%06x): %s, the QP stops\n", r->now / 1e6, f->sender, f->q,
		wc->qp_num, xr_wc_status_str(wc->status));
	f->dead = true;
	r->qp_errors++;
}

static void poll_all(struct cg_run *r)
{
	struct xr_wc wc[64];
	int got;

	for (unsigned i = 0; i < r->c->senders; i++) {
		/* Bounded: each poll takes what is there, at most the CQ's size. */
		for (unsigned rounds = 0; rounds < 64 && (got = xr_poll_cq(r->send[i].cq, 64, wc)) > 0; rounds++)
			for (int k = 0; k < got; k++) {
				if (wc[k].wr_id >= r->nflows)
					continue;
				struct cg_flow *f = &r->flow[wc[k].wr_id];
				if (f->outstanding)
					f->outstanding--;
				if (wc[k].status != XR_WC_SUCCESS) {
					flow_failed(r, f, &wc[k]);
					continue;
				}
				f->bytes += r->c->size;
				f->bytes_iv += r->c->size;
			}
	}
	for (unsigned rounds = 0; rounds < 64 && (got = xr_poll_cq(r->recv.cq, 64, wc)) > 0; rounds++)
		for (int k = 0; k < got; k++)
			if (wc[k].status == XR_WC_SUCCESS && wc[k].wr_id < r->nflows && (wc[k].opcode & XR_WC_RECV))
				post_recv(r, (unsigned)wc[k].wr_id);
	for (unsigned i = 0; i < r->nflows; i++)
		post_sends(r, i);
}

/* PFC XOFF toward every sender from inj_start to inj_end, refreshed at half
 * the pause time, then XON. */
static void inject_tick(struct cg_run *r)
{
	const struct cg_cfg *c = r->c;
	uint16_t quanta;

	if (c->inject_prio < 0 || r->inj_done || r->now < r->inj_start || r->now < r->inj_next)
		return;
	if (r->now >= r->inj_end) {
		quanta = 0;
		r->inj_done = true;
	} else {
		quanta = xr_fabric_ns_quanta(r->inj_end - r->now, c->edge_bps);
		uint64_t ns = xr_fabric_quanta_ns(quanta, c->edge_bps);
		r->inj_next = ns < r->inj_end - r->now ? r->now + ns / 2 : r->inj_end;
		if (!r->inj_on)
			fprintf(c->out, "# %.3f ms: PFC XOFF for priority %d toward the senders for %.3f ms\n", r->now / 1e6,
				c->inject_prio, (r->inj_end - r->now) / 1e6);
		r->inj_on = true;
	}
	for (unsigned i = 0; i < c->senders; i++) {
		if (xr_fabric_send_pfc(r->fab, (unsigned)r->send[i].port, (uint8_t)(1u << c->inject_prio), quanta))
			r->inj_errors++;
		else
			r->inj_frames++;
	}
	if (!quanta)
		fprintf(c->out, "# %.3f ms: PFC XON for priority %d\n", r->now / 1e6, c->inject_prio);
}

static void sample_queue(struct cg_run *r)
{
	uint64_t q = xr_fabric_queue_bytes(r->fab, (unsigned)r->recv.port, -1);
	uint64_t b = q / 1024;

	r->qhist[b < CG_QHIST ? b : CG_QHIST - 1]++;
	r->qsum += q;
	r->qn++;
	if (q > r->qmax)
		r->qmax = q;
}

uint64_t cg_qhist_p99(const uint64_t *h, uint64_t n)
{
	uint64_t want = n - n / 100, seen = 0;

	for (unsigned b = 0; n && b < CG_QHIST; b++) {
		seen += h[b];
		if (seen >= want)
			return (uint64_t)(b + 1) * 1024;
	}
	return 0;
}

double cg_jain(const double *x, unsigned n)
{
	double s = 0, s2 = 0;

	for (unsigned i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return n && s2 > 0 ? s * s / (n * s2) : 1.0;
}

static void totals(struct cg_run *r, struct cg_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned p = 0; p < xr_fabric_nports(r->fab); p++) {
		struct xr_fabric_port_stats st;
		if (xr_fabric_port_stats(r->fab, p, &st))
			continue;
		for (int d = 0; d < XR_FABRIC_DROP_COUNT; d++) {
			t->drops += st.drops[d];
			t->drop[d] += st.drops[d];
		}
		for (int i = 0; i < XR_FABRIC_PRIOS; i++) {
			t->pfc_sw += st.pfc_sent[i] + st.pfc_xon_sent[i];
			t->pfc_inj += st.pfc_injected[i] + st.pfc_xon_injected[i];
		}
		if (p == (unsigned)r->recv.port) {
			t->marks = st.ecn_marked;
			t->wire = st.tx_wire_bytes;
		}
	}
	t->rexmit = senders_counter(r, XR_CNT_RETRANSMITS);
	t->timeouts = senders_counter(r, XR_CNT_ACK_TIMEOUTS);
	t->cnp_tx = counter(&r->recv, XR_CNT_CNP_SENT);
	t->cnp_rx = senders_counter(r, XR_CNT_CNP_RCVD);
	t->cuts = senders_counter(r, XR_CNT_DCQCN_CUTS);
	t->pacer = senders_counter(r, XR_CNT_PACER_WAITS);
	t->eng_pause = senders_counter(r, XR_CNT_PFC_PAUSE_RCVD) + senders_counter(r, XR_CNT_PFC_XON_RCVD);
	for (int i = 0; i < 8; i++)
		t->eng_paused_us += senders_counter(r, (enum xr_counter)(XR_CNT_PFC_PAUSED_US_PRIO0 + i));
	for (unsigned i = 0; i < r->c->senders; i++) {
		struct xr_fabric_host_stats hs;
		if (xr_fabric_host_stats(r->send[i].link, &hs))
			continue;
		t->host_pfc += hs.pfc_rcvd + hs.pause_rcvd;
		t->host_refusals += hs.paused_refusals;
	}
}

/* One interval's report: the aggregate line, then one line per QP. */
static void report(struct cg_run *r, double iv_ns)
{
	const struct cg_cfg *c = r->c;
	struct cg_totals t;
	double good[CG_MAX_SENDERS * CG_MAX_QPS], sum = 0;
	FILE *o = c->out;

	totals(r, &t);
	for (unsigned i = 0; i < r->nflows; i++) {
		good[i] = r->flow[i].bytes_iv * 8.0 / iv_ns;   /* Gb/s */
		sum += good[i];
	}
	double jain = cg_jain(good, r->nflows);
	uint64_t p99 = cg_qhist_p99(r->qhist, r->qn);
	if (p99 > r->qmax)
		p99 = r->qmax;   /* the bucket's top, not above what was seen */
	if (r->intervals++) {   /* the first interval is the start-up */
		if (jain < r->jain_min)
			r->jain_min = jain;
		r->drops_late += t.drops - r->prev.drops;
	}
	if (r->intervals == 1 || sum < r->iv_good_min)
		r->iv_good_min = sum;
	fprintf(o, "%8.3f %8.3f %5.2f %7.1f %5" PRIu64 " %5" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64
		   " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %5.3f\n",
		r->now / 1e6, sum, (t.wire - r->prev.wire) * 8.0 / iv_ns / (c->bottleneck_bps / 1e9),
		r->qn ? r->qsum / (double)r->qn / 1024 : 0, p99 / 1024, r->qmax / 1024,
		t.drops - r->prev.drops, t.rexmit - r->prev.rexmit, t.marks - r->prev.marks, t.cnp_tx - r->prev.cnp_tx,
		t.cnp_rx - r->prev.cnp_rx, (t.pfc_sw + t.pfc_inj) - (r->prev.pfc_sw + r->prev.pfc_inj), jain);
	for (unsigned i = 0; c->per_qp && i < r->nflows; i++) {
		struct cg_flow *f = &r->flow[i];
		struct xr_qp_ctx q, rq;
		uint32_t qpn = xr_qp_num(f->sqp);
		memset(&q, 0, sizeof(q));
		memset(&rq, 0, sizeof(rq));
		/* A QP READ command loads the QP into the window; the CC fields
		 * follow: the reaction point's on the sender, the notification
		 * point's (CE received, CNPs sent) on the receiver's peer QP. */
		int rc = xr_regio_qp_read(xr_context_regs(r->send[f->sender].ctx), qpn, &q);
		if (!rc)
			rc = xr_regio_qp_read(xr_context_regs(r->recv.ctx), xr_qp_num(f->rqp), &rq);
		fprintf(o, "         qp s%u.%u 0x%06x %8.3f Gb/s", f->sender, f->q, qpn, good[i]);
		if (rc)
			fprintf(o, "  (QP READ: %s)", rc > 0 ? xr_axi_resp_name(rc) : strerror(-rc));
		else if (q.cc_rate)
			fprintf(o, "  rate %6u Mb/s  target %6u  alpha %4u/1024", q.cc_rate, q.cc_target, q.cc_alpha);
		else
			fprintf(o, "  rate   line (unpaced)                   ");
		if (!rc)
			fprintf(o, "  ce %u cnp_tx %u cnp_rx %u", rq.ce_rcvd, rq.cnp_sent, q.cnp_rcvd);
		fprintf(o, "%s\n", f->dead ? "  ERROR" : "");
	}
	for (unsigned i = 0; i < r->nflows; i++)
		r->flow[i].bytes_iv = 0;
	r->prev = t;
	memset(r->qhist, 0, sizeof(r->qhist));
	r->qsum = r->qn = r->qmax = 0;
	fflush(o);
}

static void summary(struct cg_run *r, double wall_s)
{
	const struct cg_cfg *c = r->c;
	struct cg_totals t;
	struct xr_fabric_port_stats bs;
	double good[CG_MAX_SENDERS * CG_MAX_QPS], sum = 0, dur = (double)r->now;
	FILE *o = c->out;

	totals(r, &t);
	xr_fabric_port_stats(r->fab, (unsigned)r->recv.port, &bs);
	for (unsigned i = 0; i < r->nflows; i++) {
		good[i] = r->flow[i].bytes * 8.0 / dur;
		sum += good[i];
	}
	double jain = cg_jain(good, r->nflows), util = t.wire * 8.0 / dur / (c->bottleneck_bps / 1e9);
	fprintf(o, "--- %.3f ms of fabric time in %.2f s of wall time ---\n", dur / 1e6, wall_s);
	fprintf(o, "goodput %.3f Gb/s (%.2f of the bottleneck), bottleneck utilisation %.3f (wire bytes out)\n", sum,
		sum / (c->bottleneck_bps / 1e9), util);
	fprintf(o, "per QP (Gb/s):");
	for (unsigned i = 0; i < r->nflows; i++)
		fprintf(o, " %.3f", good[i]);
	fprintf(o, "\nJain's fairness over %u QPs: %.4f (whole run), worst interval %.4f\n", r->nflows, jain,
		r->intervals > 1 ? r->jain_min : jain);
	fprintf(o, "drops %" PRIu64 " (%" PRIu64 " after the first interval)", t.drops, r->drops_late);
	for (int d = 0; d < XR_FABRIC_DROP_COUNT; d++)
		if (t.drop[d])
			fprintf(o, " (%s %" PRIu64 ")", xr_fabric_drop_name((enum xr_fabric_drop)d), t.drop[d]);
	fprintf(o, ", retransmissions %" PRIu64 ", ACK timeouts %" PRIu64 ", QP errors %u\n", t.rexmit, t.timeouts,
		r->qp_errors);
	fprintf(o, "ECN marks %" PRIu64 ", CNPs sent %" PRIu64 " received %" PRIu64 ", DCQCN rate decreases %" PRIu64
		   ", pacer waits %" PRIu64 "\n", t.marks, t.cnp_tx, t.cnp_rx, t.cuts, t.pacer);
	fprintf(o, "bottleneck queue: mean %.1f KB, p99 %" PRIu64 " KB, max %" PRIu64 " KB (limit %u KB)\n",
		bs.qlen_mean / 1024, bs.qlen_p99 / 1024, bs.qlen_max / 1024, c->queue / 1024);
	fprintf(o, "PFC: switch sent %" PRIu64 ", injected %" PRIu64 " (%u refused); senders' MACs took %" PRIu64
		   " (held %" PRIu64 " sends), engines took %" PRIu64 ", paused %" PRIu64 " us\n",
		t.pfc_sw, t.pfc_inj, r->inj_errors, t.host_pfc, t.host_refusals, t.eng_pause, t.eng_paused_us);
	/* One line for scripts. */
	fprintf(o, "RESULT goodput_gbps=%.3f util=%.4f jain=%.4f jain_min=%.4f good_min_gbps=%.3f drops=%" PRIu64
		   " drops_late=%" PRIu64 " rexmit=%" PRIu64
		   " timeouts=%" PRIu64 " qp_errors=%u marks=%" PRIu64 " cnp_sent=%" PRIu64 " cnp_rcvd=%" PRIu64
		   " cuts=%" PRIu64 " q_mean_kb=%.1f q_p99_kb=%" PRIu64 " q_max_kb=%" PRIu64 " pfc_switch=%" PRIu64
		   " pfc_injected=%" PRIu64 " host_pfc=%" PRIu64 " host_held=%" PRIu64 " engine_pfc=%" PRIu64
		   " engine_paused_us=%" PRIu64 "\n",
		sum, util, jain, r->intervals > 1 ? r->jain_min : jain, r->iv_good_min, t.drops, r->drops_late, t.rexmit, t.timeouts, r->qp_errors,
		t.marks, t.cnp_tx, t.cnp_rx, t.cuts, bs.qlen_mean / 1024, bs.qlen_p99 / 1024, bs.qlen_max / 1024,
		t.pfc_sw, t.pfc_inj, t.host_pfc, t.host_refusals, t.eng_pause, t.eng_paused_us);
	if (c->fabric_stats)
		xr_fabric_print_stats(r->fab, o);
}

static void header(const struct cg_cfg *c)
{
	FILE *o = c->out;

	fprintf(o, "# xroce-perf congestion: %u sender%s x %u QP%s -> 1 receiver, %s of %u B, MTU %u, %u in flight per QP\n",
		c->senders, c->senders > 1 ? "s" : "", c->qps, c->qps > 1 ? "s" : "", c->send ? "SENDs" : "RDMA WRITEs",
		c->size, c->mtu, c->depth);
	fprintf(o, "# bottleneck %.3g Gb/s (queue %u KB", c->bottleneck_bps / 1e9, c->queue / 1024);
	if (c->ecn)
		fprintf(o, ", ECN %u..%u KB pmax %.2f", c->kmin / 1024, c->kmax / 1024, c->pmax);
	else
		fprintf(o, ", no ECN");
	fprintf(o, "), edges %.3g Gb/s; DCQCN %s; PFC %s%s; priority %u\n", c->edge_bps / 1e9, c->dcqcn ? "on" : "off",
		c->pfc ? "on (switch XOFF toward the senders, honoured by their " : "off",
		c->pfc ? (c->mac_pause ? "MAC models)" : "engines)") : "", c->prio);
	if (c->inject_prio >= 0)
		fprintf(o, "# PFC injection: priority %d for %.3f ms from %.3f ms, honoured by the senders' %s\n",
			c->inject_prio, c->inject_ms, c->inject_at_ms, c->mac_pause ? "MAC models" : "engines");
	fprintf(o, "# time is fabric time: a simulated clock stepped by %" PRIu64 " ns from one thread with every engine"
		   " (deterministic, seed %" PRIu64 "), not wall time\n", c->step_ns, c->seed);
	fprintf(o, "%8s %8s %5s %7s %5s %5s %6s %6s %6s %6s %6s %6s %5s\n", "ms", "Gb/s", "util", "q_mean", "q_p99",
		"q_max", "drops", "rexmit", "marks", "cnp_tx", "cnp_rx", "pfc", "jain");
	fprintf(o, "%8s %8s %5s %7s %5s %5s\n", "(fabric)", "goodput", "", "KB", "KB", "KB");
}

int cg_run(const struct cg_cfg *c)
{
	struct cg_run *r = calloc(1, sizeof(*r));
	uint64_t end, iv, next_report, steps;
	double wall0 = now_us();
	int rc;

	if (!r) {
		fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		return 1;
	}
	r->c = c;
	r->jain_min = 1.0;
	rc = run_open(r);
	if (rc) {
		run_close(r);
		free(r);
		return 1;
	}
	end = (uint64_t)(c->duration_ms * 1e6);
	iv = (uint64_t)(c->interval_ms * 1e6);
	r->inj_start = (uint64_t)(c->inject_at_ms * 1e6);
	r->inj_end = r->inj_start + (uint64_t)(c->inject_ms * 1e6);
	header(c);
	if (c->send)
		for (unsigned i = 0; i < r->nflows; i++)
			for (unsigned k = 0; k < c->depth * 2 + 4; k++)
				post_recv(r, i);
	for (unsigned i = 0; i < r->nflows; i++)
		post_sends(r, i);
	next_report = iv;
	/* Bounded: the fabric time to simulate fixes the number of steps;
	 * the wall-time limit stops a run the machine cannot carry. */
	steps = end / c->step_ns + 1;
	for (uint64_t s = 0; s < steps; s++) {
		r->now += c->step_ns;
		rc = xr_fabric_step(r->fab, r->now);
		if (rc < 0) {
			fprintf(stderr, "%s: fabric step: %s\n", prog, strerror(-rc));
			break;
		}
		xr_engine_progress(xr_context_engine(r->recv.ctx));
		for (unsigned i = 0; i < c->senders; i++)
			xr_engine_progress(xr_context_engine(r->send[i].ctx));
		poll_all(r);
		sample_queue(r);
		if (r->now >= next_report) {
			report(r, (double)iv);
			next_report += iv;
		}
		inject_tick(r);   /* after the report: a row covers the time before its stamp */
		if ((s & 4095) == 0 && c->wall_limit_s && now_us() - wall0 > c->wall_limit_s * 1e6) {
			fprintf(stderr, "%s: stopped after %.0f s of wall time (--wall-limit) at %.3f ms of fabric time\n",
				prog, c->wall_limit_s, r->now / 1e6);
			break;
		}
		rc = 0;
	}
	summary(r, (now_us() - wall0) / 1e6);
	run_close(r);
	free(r);
	return rc < 0 ? 1 : 0;
}
