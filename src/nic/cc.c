/* SPDX-License-Identifier: MIT */
/*
 * Congestion control (docs/congestion.md): ECN-capable transmission, the
 * notification point (a CE-marked packet is answered with a CNP to the
 * peer QP, at most one per CC_CNP_INTERVAL_US), DCQCN's reaction point
 * (the paper's algorithm: a cut per CNP, alpha decay on a timer, fast
 * recovery / additive / hyper increase on a timer and a byte counter),
 * and the per-QP pacer that holds the requester to the rate DCQCN or the
 * QP's static cap allows. Everything runs on the engine's clock, from the
 * progress pass: a paced QP waits on the busy list, it never spins.
 */
#include <string.h>

#include "engine.h"
#include "recv.h"

#define ALPHA_SHIFT 20
#define ALPHA_ONE (1u << ALPHA_SHIFT)
#define ECN_MASK 3u
#define ECN_ECT0 2u
#define ECN_ECT1 1u
/* Bytes a frame costs on the wire beyond its length: FCS, preamble, IFG. */
#define WIRE_OVERHEAD 24u
/* The pacer always lets two of the largest frames through at once. */
#define PACER_MIN_BURST (2u * 4200u)

static uint32_t cc_ctrl(const struct xr_engine *e)
{
	return xr_reg_get(e, XR_REG_CC_CTRL);
}

static uint64_t reg_us_ns(const struct xr_engine *e, uint32_t reg)
{
	return (uint64_t)xr_reg_get(e, reg) * 1000u;
}

static uint64_t reg_kbps(const struct xr_engine *e, uint32_t reg)
{
	return (uint64_t)xr_reg_get(e, reg) * 1000u;
}

static uint64_t max_kbps(const struct xr_engine *e)
{
	uint64_t m = reg_kbps(e, XR_REG_DCQCN_MAX_RATE);
	return m ? m : 100000000u;   /* 0: 100 Gb/s */
}

static uint32_t gain(const struct xr_engine *e)
{
	/* DCQCN_G is in 1/65536; alpha in 1/2^20. */
	return (xr_reg_get(e, XR_REG_DCQCN_G) & 0xFFFF) << (ALPHA_SHIFT - 16);
}

uint8_t xr_cc_tclass(const struct xr_engine *e, uint8_t tclass)
{
	uint32_t ctrl = cc_ctrl(e);

	if (!(ctrl & XR_CC_ECN_ENABLE) || (tclass & ECN_MASK))
		return tclass;   /* the QP chose its ECN bits itself */
	return (uint8_t)(tclass | ((ctrl & XR_CC_ECT1) ? ECN_ECT1 : ECN_ECT0));
}

/* ---- notification point ---- */

void xr_cc_ce(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_cc *cc = &qp->cc;
	uint64_t interval = reg_us_ns(e, XR_REG_CC_CNP_INTERVAL_US);

	cc->ce_rcvd++;
	/* A UD packet's sender is per packet, not the QP's: no CNP (as the
	 * connection-tracking NPs, which answer connected QPs only). */
	if (!(cc_ctrl(e) & XR_CC_CNP_ENABLE) || qp->ctx.type == XR_QPT_UD)
		return;
	if (cc->cnp_owed || (cc->cnp_last_ns && now - cc->cnp_last_ns < interval)) {
		xr_count(e, XR_CNT_CNP_SUPPRESSED, 1);
		return;
	}
	cc->cnp_owed = true;
}

/* The priority a CNP of qp leaves with, as xr_pfc_qp_prio reads frames:
 * the CNP's PCP when the QP is tagged, else the CNP's DSCP >> 3. */
static uint8_t cnp_prio(const struct xr_engine *e, const struct xr_qp *qp, uint32_t ctrl)
{
	if (qp->ctx.vlan && !(xr_reg_get(e, XR_REG_PFC_CTRL) & XR_PFC_PRIO_DSCP))
		return (uint8_t)((ctrl >> 16) & 7);
	return (uint8_t)(((ctrl >> 8) & 0x3F) >> 3);
}

bool xr_cc_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx, uint64_t now)
{
	struct xr_cc *cc = &qp->cc;
	uint32_t ctrl;
	struct xr_frame *f;
	struct xr_pkt p;

	if (!cc->cnp_owed)
		return true;
	ctrl = cc_ctrl(e);
	if (e->pfc.paused && xr_pfc_paused(e, cnp_prio(e, qp, ctrl)))
		return true;   /* the CNP's priority is paused: it waits, the QP is served */
	f = xr_tx_begin_prio(e, tx, qp, &p, cnp_prio(e, qp, ctrl));
	if (!f)
		return false;
	/* Byte 1 of the BTH is 0, P_Key 0xFFFF, BECN set, PSN 0, DestQP the
	 * peer's QP: the layout of ConnectX's CNPs (rocev2-wire.md). */
	p.opcode = XR_OP_CNP;
	p.becn = true;
	p.psn = 0;
	p.pkey = 0xFFFF;
	p.traffic_class = xr_cc_tclass(e, (uint8_t)(((ctrl >> 8) & 0x3F) << 2));
	p.pcp = (uint8_t)((ctrl >> 16) & 7);
	if (xr_pkt_build_hdrs(&p, f->data, sizeof(f->data)) < 0) {
		xr_link_frame_free(e->link, f);
		cc->cnp_owed = false;
		return true;
	}
	xr_tx_commit(e, tx, f, &p);
	cc->cnp_owed = false;
	cc->cnp_last_ns = now ? now : 1;
	cc->cnp_sent++;
	xr_count(e, XR_CNT_CNP_SENT, 1);
	return true;
}

/* ---- reaction point: DCQCN ---- */

/* alpha (1 - g)^n in 1/2^20, by squaring: exact to the fixed point
 * however long the QP was quiet. */
static uint32_t alpha_decayed(uint32_t alpha, uint32_t g, uint64_t n)
{
	uint64_t f = ALPHA_ONE - g, r = ALPHA_ONE;

	while (n && r) {
		if (n & 1)
			r = (r * f) >> ALPHA_SHIFT;
		f = (f * f) >> ALPHA_SHIFT;
		n >>= 1;
	}
	return (uint32_t)(((uint64_t)alpha * r) >> ALPHA_SHIFT);
}

/* The rate qp is held to, kb/s (0: unpaced). */
static uint64_t pace_kbps(const struct xr_qp *qp)
{
	uint64_t r = qp->cc.rp_active ? qp->cc.rc_kbps : 0;
	uint64_t cap = (uint64_t)qp->ctx.rate_limit * 1000u;

	if (cap && (!r || cap < r))
		r = cap;
	return r;
}

/* The rate changed from old (kb/s, 0: unpaced): a wait for the next send
 * computed at the old rate is rescaled to the new one, so a QP cut hard
 * does not sit out a long wait after its rate came back. */
static void pace_rescale(struct xr_qp *qp, uint64_t old, uint64_t now)
{
	uint64_t r = pace_kbps(qp);

	if (!old || !r || r == old || qp->cc.pace_ns <= now)
		return;
	qp->cc.pace_ns = now + (uint64_t)((double)(qp->cc.pace_ns - now) * (double)old / (double)r);
}

/* Alpha decays once per DCQCN_ALPHA_US that passed without a CNP. */
static void alpha_decay(struct xr_engine *e, struct xr_cc *cc, uint64_t now)
{
	uint64_t k = reg_us_ns(e, XR_REG_DCQCN_ALPHA_US), n;
	uint32_t g = gain(e);

	if (!k || now <= cc->alpha_ns)
		return;
	n = (now - cc->alpha_ns) / k;
	cc->alpha_ns += n * k;
	cc->alpha = alpha_decayed(cc->alpha, g, n);
}

static void rate_cut(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_cc *cc = &qp->cc;
	uint64_t rmin = reg_kbps(e, XR_REG_DCQCN_MIN_RATE), old = pace_kbps(qp);
	uint64_t cap = (uint64_t)qp->ctx.rate_limit * 1000u, start = max_kbps(e);
	uint32_t g = gain(e);
	bool first = !cc->rp_active;

	if (rmin < 1000)
		rmin = 1000;   /* 1 Mb/s: a rate of 0 would never send again */
	if (first) {
		/* From the rate the QP may send at: a capped QP's first cut
		 * must slow it down. */
		if (cap && cap < start)
			start = cap;
		cc->rp_active = true;
		cc->rc_kbps = cc->rt_kbps = start;
		cc->alpha = (xr_reg_get(e, XR_REG_DCQCN_INIT_ALPHA) & 0x7FF) << (ALPHA_SHIFT - 10);
		if (cc->alpha > ALPHA_ONE)
			cc->alpha = ALPHA_ONE;
		cc->alpha_ns = now;
	} else {
		alpha_decay(e, cc, now);
		/* A cut right after a cut keeps the old target (the rate was
		 * never raised toward it); after an increase the target is the
		 * rate the cut leaves. */
		if ((cc_ctrl(e) & XR_CC_CLAMP_TARGET) || cc->t_stage || cc->bc_stage)
			cc->rt_kbps = cc->rc_kbps;
	}
	/* RC <- RC (1 - alpha/2), then alpha <- (1 - g) alpha + g. */
	cc->rc_kbps -= (cc->rc_kbps * cc->alpha) >> (ALPHA_SHIFT + 1);
	if (cc->rc_kbps < rmin)
		cc->rc_kbps = rmin;
	cc->alpha = cc->alpha - (uint32_t)(((uint64_t)cc->alpha * g) >> ALPHA_SHIFT) + g;
	if (cc->alpha > ALPHA_ONE)
		cc->alpha = ALPHA_ONE;
	cc->alpha_ns = now;
	cc->t_stage = cc->bc_stage = 0;
	cc->bytes = 0;
	cc->inc_due_ns = now + reg_us_ns(e, XR_REG_DCQCN_TIMER_US);
	xr_count(e, XR_CNT_DCQCN_CUTS, 1);
	pace_rescale(qp, old, now);
	if (first)
		xr_evlog_add(e, XR_EV_DCQCN_START, qp->qpn, (uint32_t)(cc->rc_kbps / 1000),
			     cc->alpha >> (ALPHA_SHIFT - 10));
}

/* One increase event (its stage counter already bumped). */
static void rate_increase(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_cc *cc = &qp->cc;
	uint32_t f = xr_reg_get(e, XR_REG_DCQCN_F) & 0xFF;
	uint64_t rmax = max_kbps(e), old = pace_kbps(qp);

	if (cc->t_stage >= f && cc->bc_stage >= f) {
		uint32_t i = (cc->t_stage < cc->bc_stage ? cc->t_stage : cc->bc_stage) - f + 1;
		cc->rt_kbps += i * reg_kbps(e, XR_REG_DCQCN_RATE_HAI);   /* hyper increase */
	} else if (cc->t_stage >= f || cc->bc_stage >= f) {
		cc->rt_kbps += reg_kbps(e, XR_REG_DCQCN_RATE_AI);        /* additive increase */
	}                                                                /* else fast recovery */
	if (cc->rt_kbps > rmax)
		cc->rt_kbps = rmax;
	cc->rc_kbps = (cc->rt_kbps + cc->rc_kbps + 1) / 2;
	xr_count(e, XR_CNT_DCQCN_INCREASES, 1);
	if (cc->rt_kbps == rmax && cc->rc_kbps + rmax / 1024 >= rmax) {
		/* Back at line rate: DCQCN lets go of the QP until the next CNP. */
		cc->rp_active = false;
		cc->rc_kbps = cc->rt_kbps = 0;
		xr_evlog_add(e, XR_EV_DCQCN_DONE, qp->qpn, (uint32_t)(rmax / 1000), 0);
	}
	pace_rescale(qp, old, now);
}

void xr_cc_cnp_rx(struct xr_engine *e, const struct xr_pkt *p, uint64_t now)
{
	struct xr_qp *qp = xr_qp_lookup(e, p->dqpn);
	bool ok;

	if (!xr_recv_addressed_to_us(e, p, true)) {
		xr_count(e, XR_CNT_DROP_NOT_FOR_US, 1);
		return;
	}
	if (!qp) {
		xr_count(e, XR_CNT_DROP_CNP, 1);
		return;
	}
	pthread_mutex_lock(&qp->lock);
	/* Only the peer of a connected QP that sends may slow it down. */
	ok = qp->in_use && (qp->ctx.type == XR_QPT_RC || qp->ctx.type == XR_QPT_UC) &&
	     (qp->ctx.state == XR_QPS_RTS || qp->ctx.state == XR_QPS_SQD) &&
	     !memcmp(p->sgid.raw, qp->ctx.peer_gid.raw, 16);
	if (!ok) {
		pthread_mutex_unlock(&qp->lock);
		xr_count(e, XR_CNT_DROP_CNP, 1);
		return;
	}
	qp->cc.cnp_rcvd++;
	if (cc_ctrl(e) & XR_CC_DCQCN_ENABLE) {
		rate_cut(e, qp, now);
		xr_qp_mark_busy(e, qp);   /* its increase timer runs from the pass */
	}
	pthread_mutex_unlock(&qp->lock);
}

void xr_cc_timers(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_cc *cc = &qp->cc;

	if (!cc->rp_active)
		return;
	if (!(cc_ctrl(e) & XR_CC_DCQCN_ENABLE)) {
		/* DCQCN turned off: the QPs it slowed go back to line rate. */
		cc->rp_active = false;
		cc->rc_kbps = cc->rt_kbps = 0;
		return;
	}
	if (now < cc->inc_due_ns)
		return;
	cc->t_stage++;
	/* Late (a slow pass): one step, and the period counts from now. */
	cc->inc_due_ns = now + reg_us_ns(e, XR_REG_DCQCN_TIMER_US);
	rate_increase(e, qp, now);
}

/* ---- the pacer ---- */

bool xr_cc_paced(const struct xr_qp *qp)
{
	return pace_kbps(qp) != 0;
}

bool xr_cc_may_send(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_cc *cc = &qp->cc;

	if (!pace_kbps(qp) || cc->pace_ns <= now)
		return true;
	if (!cc->held) {
		cc->held = true;
		xr_count(e, XR_CNT_PACER_WAITS, 1);
	}
	return false;
}

void xr_cc_sent(struct xr_engine *e, struct xr_qp *qp, uint64_t now, uint32_t frame_len)
{
	struct xr_cc *cc = &qp->cc;
	uint64_t r = pace_kbps(qp), wire = (uint64_t)frame_len + WIRE_OVERHEAD;

	if (r) {
		uint64_t burst = xr_reg_get(e, XR_REG_CC_PACER_BURST);
		uint64_t burst_ns, start = cc->pace_ns;
		if (burst < PACER_MIN_BURST)
			burst = PACER_MIN_BURST;
		burst_ns = burst * 8000000u / r;
		/* Credit left unused while idle is capped at the bucket's depth. */
		if (now > burst_ns && start < now - burst_ns)
			start = now - burst_ns;
		cc->pace_ns = start + wire * 8000000u / r;
		cc->held = false;
	}
	if (cc->rp_active) {
		uint64_t b = xr_reg_get(e, XR_REG_DCQCN_BYTE_RESET);
		cc->bytes += wire;
		if (b && cc->bytes >= b) {
			cc->bytes -= b;
			cc->bc_stage++;
			rate_increase(e, qp, now);
		}
	}
}

bool xr_cc_has_work(const struct xr_qp *qp)
{
	return qp->cc.rp_active || qp->cc.cnp_owed;
}

uint64_t xr_cc_next_due(const struct xr_qp *qp, uint64_t now)
{
	uint64_t due = UINT64_MAX;

	if (qp->cc.rp_active && qp->cc.inc_due_ns > now)
		due = qp->cc.inc_due_ns;
	/* Only a QP its pacer holds waits for its send time; one waiting for
	 * an ACK (or with nothing to send) is woken by the ACK or a doorbell. */
	if (qp->cc.held && qp->cc.pace_ns > now && qp->cc.pace_ns < due)
		due = qp->cc.pace_ns;
	return due;
}

void xr_cc_reset(struct xr_qp *qp)
{
	memset(&qp->cc, 0, sizeof(qp->cc));
}

void xr_cc_read(struct xr_engine *e, const struct xr_qp *qp, struct xr_qp_ctx *c)
{
	struct xr_cc now = qp->cc;

	alpha_decay(e, &now, xr_engine_now(e));   /* alpha as of this READ */
	c->cc_rate = (uint32_t)(pace_kbps(qp) / 1000);
	c->cc_target = qp->cc.rp_active ? (uint32_t)(qp->cc.rt_kbps / 1000) : 0;
	c->cc_alpha = qp->cc.rp_active ? now.alpha >> (ALPHA_SHIFT - 10) : 0;
	c->ce_rcvd = qp->cc.ce_rcvd;
	c->cnp_sent = qp->cc.cnp_sent;
	c->cnp_rcvd = qp->cc.cnp_rcvd;
}
