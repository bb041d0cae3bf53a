/* SPDX-License-Identifier: MIT */
/*
 * PFC (802.1Qbb) and 802.3x PAUSE in the engine (docs/pfc.md).
 *
 * Receive: a MAC control frame (EtherType 0x8808) pauses the priorities it
 * names for quanta x 512 bit times at PFC_LINK_MBPS (at most
 * PFC_MAX_PAUSE_US), a time of 0 resumes at once, a new frame restarts the
 * timer; PAUSE pauses every priority. A QP whose frames carry a paused
 * priority sends nothing (datapath.c asks xr_pfc_qp_hold and
 * xr_pfc_frame_paused), and its local ACK timer stands still meanwhile.
 *
 * Generate: each pass looks at the link's receive backlog: at or above
 * PFC_XOFF percent an XOFF for the enabled priorities, refreshed at half
 * its time while above PFC_XON, and an XON (time 0) at or below PFC_XON.
 *
 * Watchdog: a priority paused without a break for PFC_WD_MS is released
 * (a storm), and PFC for it is ignored until PFC_WD_RESTORE_MS pass
 * without a frame for it.
 *
 * Everything here runs inside a progress pass (one at a time); PFC_STATUS
 * reads the masks and pause ends with atomic loads.
 */
#include <string.h>

#include "../wire/bytes.h"
#include "engine.h"

#define ETHERTYPE_MAC_CTRL 0x8808
#define ETHERTYPE_VLAN 0x8100
#define MAC_CTRL_PAUSE 0x0001
#define MAC_CTRL_PFC 0x0101
#define ETH_HLEN 14
/* Opcode, class-enable vector, eight times. */
#define PFC_MIN_LEN (ETH_HLEN + 2 + 2 + 2 * XR_PFC_PRIOS)
#define PAUSE_MIN_LEN (ETH_HLEN + 2 + 2)
#define DEFAULT_MBPS 100000u
#define PAUSE_ALL 0xFFu

static const uint8_t mac_ctrl_group[6] = { 0x01, 0x80, 0xC2, 0x00, 0x00, 0x01 };

static uint32_t pfc_ctrl(const struct xr_engine *e)
{
	return xr_reg_get(e, XR_REG_PFC_CTRL);
}

static uint8_t load8(const uint8_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void store8(uint8_t *p, uint8_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* quanta x 512 bit times at the configured link speed, ns (at least 1). */
static uint64_t quanta_ns(const struct xr_engine *e, uint16_t quanta)
{
	uint64_t mbps = xr_reg_get(e, XR_REG_PFC_LINK_MBPS);
	uint64_t ns;

	if (!mbps)
		mbps = DEFAULT_MBPS;
	ns = ((uint64_t)quanta * 512u * 1000u + mbps - 1) / mbps;
	return ns ? ns : 1;
}

static uint16_t xoff_quanta(const struct xr_engine *e)
{
	uint16_t q = (uint16_t)xr_reg_get(e, XR_REG_PFC_QUANTA);
	return q ? q : 0xFFFF;
}

void xr_pfc_reset(struct xr_engine *e)
{
	memset(&e->pfc, 0, sizeof(e->pfc));
}

/* ---- transmit side: the peer's pauses ---- */

/* Closes the pause of priority i at end (its paused time is counted). */
static void resume_prio(struct xr_engine *e, unsigned i, uint64_t end)
{
	struct xr_pfc *s = &e->pfc;

	if (end > s->since[i])
		s->paused_ns[i] += end - s->since[i];
	__atomic_store_n(&s->until[i], 0, __ATOMIC_RELAXED);
	store8(&s->paused, (uint8_t)(s->paused & ~(1u << i)));
}

/* Pauses priority i for dur_ns from now, or restarts its timer. True when
 * it was not paused before. */
static bool pause_prio(struct xr_engine *e, unsigned i, uint64_t now, uint64_t dur_ns)
{
	struct xr_pfc *s = &e->pfc;
	uint64_t cap = (uint64_t)xr_reg_get(e, XR_REG_PFC_MAX_PAUSE_US) * 1000u;
	bool was = s->paused & (1u << i);

	if (cap && dur_ns > cap)
		dur_ns = cap;
	if (!was)
		s->since[i] = now;
	__atomic_store_n(&s->until[i], now + dur_ns, __ATOMIC_RELAXED);
	store8(&s->paused, (uint8_t)(s->paused | (1u << i)));
	return !was;
}

/* Pauses that ran out by now end when they ran out; priorities whose
 * PFC (or PAUSE) was switched off meanwhile end now. */
static void expire(struct xr_engine *e, uint64_t now, uint32_t ctrl)
{
	struct xr_pfc *s = &e->pfc;
	uint8_t allowed = (uint8_t)((ctrl >> 8) & 0xFF), ended = 0;
	uint64_t longest = 0;

	if (ctrl & XR_PFC_PAUSE_RX)
		allowed = PAUSE_ALL;
	for (unsigned i = 0; i < XR_PFC_PRIOS && s->paused; i++) {
		uint64_t until = s->until[i], end;
		if (!(s->paused & (1u << i)) || (until > now && (allowed & (1u << i))))
			continue;
		end = until <= now ? until : now;
		if (end - s->since[i] > longest)
			longest = end - s->since[i];
		resume_prio(e, i, end);
		ended |= (uint8_t)(1u << i);
	}
	if (ended)
		xr_evlog_add(e, XR_EV_PFC_RESUMED, 0, ended, (uint32_t)(longest / 1000));
}

/* The watchdog: a pause held PFC_WD_MS without a break is released, and
 * a stormed priority is restored after PFC_WD_RESTORE_MS without a frame. */
static void watchdog(struct xr_engine *e, uint64_t now)
{
	struct xr_pfc *s = &e->pfc;
	uint64_t wd = (uint64_t)xr_reg_get(e, XR_REG_PFC_WD_MS) * 1000000u;
	uint64_t restore = (uint64_t)xr_reg_get(e, XR_REG_PFC_WD_RESTORE_MS) * 1000000u;

	for (unsigned i = 0; i < XR_PFC_PRIOS; i++) {
		uint8_t bit = (uint8_t)(1u << i);
		if (wd && (s->paused & bit) && now - s->since[i] >= wd) {
			uint64_t held = now - s->since[i];
			resume_prio(e, i, now);
			store8(&s->stormed, (uint8_t)(s->stormed | bit));
			s->last_frame[i] = now;
			xr_count(e, XR_CNT_PFC_WD_TRIPS, 1);
			xr_evlog_add(e, XR_EV_PFC_STORM, 0, i, (uint32_t)(held / 1000000u));
		} else if ((s->stormed & bit) && now - s->last_frame[i] >= restore) {
			store8(&s->stormed, (uint8_t)(s->stormed & ~bit));
			xr_count(e, XR_CNT_PFC_WD_RESTORES, 1);
			xr_evlog_add(e, XR_EV_PFC_RESTORED, 0, i, 0);
		}
	}
}

/* PFC_PAUSED_US_PRIOn: closed pauses plus the running one, in microseconds. */
static void account(struct xr_engine *e, uint64_t now)
{
	struct xr_pfc *s = &e->pfc;

	for (unsigned i = 0; i < XR_PFC_PRIOS; i++) {
		uint64_t t = s->paused_ns[i];
		if ((s->paused & (1u << i)) && now > s->since[i])
			t += now - s->since[i];
		t /= 1000u;
		if (t > s->counted_us[i]) {
			xr_count(e, (enum xr_counter)(XR_CNT_PFC_PAUSED_US_PRIO0 + i), t - s->counted_us[i]);
			s->counted_us[i] = t;
		}
	}
}

/* Applies a pause time to the priorities in mask (PFC: each its own time;
 * PAUSE: one time for all). */
static void apply(struct xr_engine *e, uint8_t mask, const uint16_t times[XR_PFC_PRIOS], uint64_t now,
		  bool pause_frame)
{
	struct xr_pfc *s = &e->pfc;
	uint8_t started = 0, resumed = 0, ignored = 0;
	uint64_t longest = 0;
	uint16_t q_ev = 0;

	for (unsigned i = 0; i < XR_PFC_PRIOS; i++) {
		uint8_t bit = (uint8_t)(1u << i);
		if (!(mask & bit))
			continue;
		if (s->stormed & bit) {   /* the watchdog holds it released */
			s->last_frame[i] = now;
			ignored |= bit;
			continue;
		}
		if (times[i]) {
			if (pause_prio(e, i, now, quanta_ns(e, times[i])))
				started |= bit;
			if (times[i] > q_ev)
				q_ev = times[i];
		} else if (s->paused & bit) {
			if (now - s->since[i] > longest)
				longest = now - s->since[i];
			resume_prio(e, i, now);
			resumed |= bit;
		}
	}
	if (ignored)
		xr_count(e, XR_CNT_PFC_WD_IGNORED, 1);
	if (started)
		xr_evlog_add(e, XR_EV_PFC_PAUSED, 0, started, pause_frame ? 0xFFFFFFFFu : q_ev);
	if (resumed)
		xr_evlog_add(e, XR_EV_PFC_RESUMED, 0, resumed, (uint32_t)(longest / 1000));
}

bool xr_pfc_is_mac_control(const struct xr_frame *f)
{
	return f->len >= ETH_HLEN && get_be16(f->data + 12) == ETHERTYPE_MAC_CTRL;
}

void xr_pfc_rx(struct xr_engine *e, const struct xr_frame *f)
{
	const uint8_t *d = f->data;
	uint32_t ctrl = pfc_ctrl(e);
	uint16_t times[XR_PFC_PRIOS] = { 0 };
	uint8_t mac[6], mask;
	uint64_t now;

	xr_mac_from_regs(mac, xr_reg_get(e, XR_REG_MAC_LOW), xr_reg_get(e, XR_REG_MAC_HIGH));
	if (f->len < PAUSE_MIN_LEN || (memcmp(d, mac_ctrl_group, 6) && memcmp(d, mac, 6))) {
		xr_count(e, XR_CNT_DROP_MAC_CONTROL, 1);
		return;
	}
	switch (get_be16(d + ETH_HLEN)) {
	case MAC_CTRL_PFC:
		/* The class-enable vector's high byte is reserved: ignored. */
		mask = d[ETH_HLEN + 3] & (uint8_t)(ctrl >> 8);
		if (f->len < PFC_MIN_LEN || !mask) {
			xr_count(e, XR_CNT_DROP_MAC_CONTROL, 1);   /* short, or PFC off for what it names */
			return;
		}
		for (unsigned i = 0; i < XR_PFC_PRIOS; i++) {
			if (!(mask & (1u << i)))
				continue;
			times[i] = get_be16(d + ETH_HLEN + 4 + 2 * i);
			if (times[i])
				xr_count(e, (enum xr_counter)(XR_CNT_PFC_RX_PRIO0 + i), 1);
		}
		{
			bool any_pause = false, any_xon = false;
			for (unsigned i = 0; i < XR_PFC_PRIOS; i++)
				if (mask & (1u << i)) {
					any_pause |= times[i] != 0;
					any_xon |= times[i] == 0;
				}
			if (any_pause)
				xr_count(e, XR_CNT_PFC_PAUSE_RCVD, 1);
			if (any_xon)
				xr_count(e, XR_CNT_PFC_XON_RCVD, 1);
		}
		break;
	case MAC_CTRL_PAUSE:
		if (!(ctrl & XR_PFC_PAUSE_RX)) {
			xr_count(e, XR_CNT_DROP_MAC_CONTROL, 1);   /* 802.3x flow control off */
			return;
		}
		xr_count(e, XR_CNT_PAUSE_RCVD, 1);
		mask = PAUSE_ALL;
		for (unsigned i = 0; i < XR_PFC_PRIOS; i++)
			times[i] = get_be16(d + ETH_HLEN + 2);
		break;
	default:
		xr_count(e, XR_CNT_DROP_MAC_CONTROL, 1);   /* an opcode we do not know */
		return;
	}
	now = xr_engine_now(e);
	expire(e, now, ctrl);
	apply(e, mask, times, now, get_be16(d + ETH_HLEN) == MAC_CTRL_PAUSE);
	account(e, now);
}

/* ---- the priority of a QP's frames ---- */

uint8_t xr_pfc_qp_prio(const struct xr_engine *e, const struct xr_qp *qp)
{
	if (qp->ctx.vlan && !(pfc_ctrl(e) & XR_PFC_PRIO_DSCP))
		return qp->ctx.pcp & 7;
	return (uint8_t)(qp->ctx.traffic_class >> 5);   /* DSCP >> 3 */
}

bool xr_pfc_frame_paused(const struct xr_engine *e, const struct xr_frame *f)
{
	const uint8_t *d = f->data;
	unsigned off = ETH_HLEN;
	uint16_t type;
	uint8_t prio;

	if (f->len < ETH_HLEN + 2)
		return false;
	type = get_be16(d + 12);
	if (type == ETHERTYPE_VLAN && f->len >= ETH_HLEN + 6) {
		if (!(pfc_ctrl(e) & XR_PFC_PRIO_DSCP))
			return xr_pfc_paused(e, d[14] >> 5);
		type = get_be16(d + 16);
		off += 4;
	}
	if (type == XR_ETHERTYPE_IPV4)
		prio = d[off + 1] >> 5;
	else if (type == XR_ETHERTYPE_IPV6)
		prio = (uint8_t)(((d[off] & 0x0F) << 4 | d[off + 1] >> 4) >> 5);
	else
		return false;   /* MAC control, ARP: never held */
	return xr_pfc_paused(e, prio);
}

bool xr_pfc_qp_hold(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_req *r = &qp->req;

	if (e->pfc.paused && xr_pfc_paused(e, xr_pfc_qp_prio(e, qp))) {
		if (!qp->cc.pfc_held_ns)
			qp->cc.pfc_held_ns = now ? now : 1;
		return true;
	}
	if (qp->cc.pfc_held_ns) {
		/* The local ACK timer stood still while the QP could not send. */
		if (r->timer_due_ns && now > qp->cc.pfc_held_ns)
			r->timer_due_ns += now - qp->cc.pfc_held_ns;
		qp->cc.pfc_held_ns = 0;
	}
	return false;
}

/* ---- generating XOFF/XON from the receive backlog ---- */

static bool send_pfc(struct xr_engine *e, uint8_t mask, uint16_t quanta)
{
	struct xr_frame *f = xr_link_frame_alloc(e->link);
	uint8_t smac[6];

	if (!f)
		return false;
	xr_mac_from_regs(smac, xr_reg_get(e, XR_REG_MAC_LOW), xr_reg_get(e, XR_REG_MAC_HIGH));
	if (!(smac[0] | smac[1] | smac[2] | smac[3] | smac[4] | smac[5]))
		memcpy(smac, e->link->mac, 6);
	f->len = xr_build_pfc_frame(f->data, smac, mask, quanta);
	/* Straight to the link, ahead of the data frames waiting in txq. */
	if (xr_link_send(e->link, &f, 1) != 1) {
		xr_link_frame_free(e->link, f);
		return false;
	}
	xr_count(e, XR_CNT_TX_PKTS, 1);
	xr_count(e, XR_CNT_TX_BYTES, 60);
	if (quanta) {
		xr_count(e, XR_CNT_PFC_PAUSE_SENT, 1);
		for (unsigned i = 0; i < XR_PFC_PRIOS; i++)
			if (mask & (1u << i))
				xr_count(e, (enum xr_counter)(XR_CNT_PFC_TX_PRIO0 + i), 1);
	} else {
		xr_count(e, XR_CNT_PFC_XON_SENT, 1);
	}
	return true;
}

static void generate(struct xr_engine *e, uint64_t now, uint32_t ctrl)
{
	struct xr_pfc *s = &e->pfc;
	uint8_t enabled = (uint8_t)(ctrl & 0xFF), out = s->xoff_out;
	uint32_t queued, cap, pct, xoff = xr_reg_get(e, XR_REG_PFC_XOFF), xon = xr_reg_get(e, XR_REG_PFC_XON);
	uint16_t q = xoff_quanta(e);

	if (out & ~enabled) {
		/* Priorities switched off while an XOFF was out: let them go. */
		if (send_pfc(e, (uint8_t)(out & ~enabled), 0)) {
			store8(&s->xoff_out, (uint8_t)(out & enabled));
			xr_evlog_add(e, XR_EV_PFC_XON, 0, out & ~enabled, 0);
		}
		out = s->xoff_out;
	}
	if (!enabled || xr_link_rx_backlog(e->link, &queued, &cap) < 0 || !cap)
		return;
	pct = (uint32_t)((uint64_t)queued * 100u / cap);
	if (out && pct <= xon) {
		if (send_pfc(e, out, 0)) {
			store8(&s->xoff_out, 0);
			xr_evlog_add(e, XR_EV_PFC_XON, 0, out, pct);
		}
		return;
	}
	/* Above XOFF: XOFF; between the two with an XOFF out: refresh it
	 * before it runs out. */
	if ((pct >= xoff || out) &&
	    (out != enabled || now - s->xoff_ns >= quanta_ns(e, q) / 2) && send_pfc(e, enabled, q)) {
		if (out != enabled)
			xr_evlog_add(e, XR_EV_PFC_XOFF, 0, enabled, pct);
		store8(&s->xoff_out, enabled);
		s->xoff_ns = now;
	}
}

void xr_pfc_pass(struct xr_engine *e)
{
	struct xr_pfc *s = &e->pfc;
	uint32_t ctrl = pfc_ctrl(e);
	uint64_t now;

	if (!(ctrl & 0xFF) && !s->paused && !s->stormed && !s->xoff_out)
		return;
	now = xr_engine_now(e);
	expire(e, now, ctrl);
	watchdog(e, now);
	account(e, now);
	generate(e, now, ctrl);
}

uint64_t xr_pfc_next_due(const struct xr_engine *e)
{
	const struct xr_pfc *s = &e->pfc;
	uint64_t wd = (uint64_t)xr_reg_get(e, XR_REG_PFC_WD_MS) * 1000000u, due = UINT64_MAX;

	for (unsigned i = 0; i < XR_PFC_PRIOS; i++) {
		if (!(s->paused & (1u << i)))
			continue;
		if (s->until[i] < due)
			due = s->until[i];
		if (wd && s->since[i] + wd < due)
			due = s->since[i] + wd;
	}
	return due;
}

uint32_t xr_pfc_status(struct xr_engine *e)
{
	struct xr_pfc *s = &e->pfc;
	uint64_t now = xr_engine_now(e);
	uint32_t paused = 0;

	for (unsigned i = 0; i < XR_PFC_PRIOS; i++)
		if (__atomic_load_n(&s->until[i], __ATOMIC_RELAXED) > now && (load8(&s->paused) & (1u << i)))
			paused |= 1u << i;
	return paused | (uint32_t)load8(&s->xoff_out) << 8 | (uint32_t)load8(&s->stormed) << 16;
}
