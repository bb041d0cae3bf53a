/* SPDX-License-Identifier: MIT */
/*
 * PFC in the switch, both ways.
 *  - Received (egress side): an 802.1Qbb frame pauses the named priorities
 *    of the port's transmitter for quanta at the port's speed, a time of 0
 *    resumes at once; an 802.3x PAUSE pauses every priority. A new frame
 *    restarts the timer. Frames already on the wire finish.
 *  - Generated (ingress side): bytes held in the buffer per ingress (port,
 *    priority); at XOFF an 802.1Qbb frame goes out of that port toward the
 *    sender, refreshed at half its time while still over XON, and a zero
 *    time (XON) once at or below XON. Lossless frames beyond XOFF +
 *    headroom are dropped (counted): the headroom is for what was already
 *    on the wire when the XOFF left.
 *  - Injected: xr_fabric_send_pfc sends a frame a caller asks for (a tool
 *    showing a sender's reaction), out of the port like a generated one.
 * MAC control frames bypass the queues (they are never queued behind the
 * congestion they signal) and are not counted as forwarded traffic.
 */
#include <errno.h>
#include <string.h>

#include "../wire/bytes.h"
#include "fabric_int.h"

static uint64_t pause_ns(const struct port *p, uint16_t quanta)
{
	return xr_fabric_quanta_ns(quanta, p->cfg.rate_bps);
}

bool xr_fab_paused(const struct port *p, uint8_t prio, uint64_t now)
{
	return p->pause_until[prio] > now;
}

/* Pauses (or resumes, quanta 0) egress priority prio of p from now. The
 * paused time is counted as it ends or is cut short. */
static void pause_prio(struct port *p, uint8_t prio, uint16_t quanta, uint64_t now)
{
	if (p->pause_until[prio] > now) {   /* still paused: count up to now */
		p->st.paused_ns[prio] += now - p->pause_from[prio];
	} else if (p->pause_until[prio] > p->pause_from[prio]) {   /* ran out: count it whole */
		p->st.paused_ns[prio] += p->pause_until[prio] - p->pause_from[prio];
	}
	p->pause_from[prio] = now;
	p->pause_until[prio] = quanta ? now + pause_ns(p, quanta) : now;
}

bool xr_fab_pfc_rx(struct xr_fabric *fab, struct port *in, const uint8_t *d, uint16_t len)
{
	uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);
	uint16_t op;

	if (len < XR_ETH_HLEN + 4)
		return false;
	op = get_be16(d + XR_ETH_HLEN);
	if (op == MAC_CTRL_PAUSE) {
		uint16_t q = get_be16(d + XR_ETH_HLEN + 2);
		in->st.pause_rcvd++;
		if (!in->cfg.ignore_pause)
			for (uint8_t i = 0; i < XR_FABRIC_PRIOS; i++)
				pause_prio(in, i, q, now);
		return true;
	}
	if (op != MAC_CTRL_PFC || len < XR_ETH_HLEN + 4 + 2 * XR_FABRIC_PRIOS)
		return false;
	uint8_t mask = d[XR_ETH_HLEN + 3];   /* the vector's high byte is reserved */
	for (uint8_t i = 0; i < XR_FABRIC_PRIOS; i++) {
		if (!(mask & (1u << i)))
			continue;
		uint16_t q = get_be16(d + XR_ETH_HLEN + 4 + 2 * i);
		if (q)
			in->st.pfc_rcvd[i]++;
		if (!in->cfg.ignore_pause)
			pause_prio(in, i, q, now);
	}
	return true;
}

bool xr_fab_pfc_admit(const struct port *in, uint8_t prio, uint16_t len)
{
	const struct xr_fabric_pfc_cfg *c = &in->cfg.pfc;
	return in->in_bytes[prio] + len <= (uint64_t)c->xoff + c->headroom;
}

static uint16_t xoff_quanta(const struct port *p)
{
	return p->cfg.pfc.pause_ns ? xr_fabric_ns_quanta(p->cfg.pfc.pause_ns, p->cfg.rate_bps) : 0xFFFF;
}

/* Puts one PFC frame on p's link at once (MAC control frames skip the
 * queue). 0, or -ENOBUFS (counted as a stall). */
static int pfc_out(struct xr_fabric *fab, struct port *p, uint8_t mask, uint16_t quanta)
{
	struct xr_frame *f = xr_link_frame_alloc(p->link);
	uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);

	if (!f) {
		p->st.tx_stalls++;
		return -ENOBUFS;
	}
	f->len = xr_build_pfc_frame(f->data, p->link->mac, mask, quanta);
	xr_fab_pcap(fab, p, f->data, f->len, now);
	if (xr_link_send(p->link, &f, 1) != 1) {
		xr_link_frame_free(p->link, f);
		p->st.tx_stalls++;
		return -ENOBUFS;
	}
	return 0;
}

static void send_pfc(struct xr_fabric *fab, struct port *p, uint8_t prio, uint16_t quanta)
{
	if (pfc_out(fab, p, (uint8_t)(1u << prio), quanta))
		return;
	if (quanta)
		p->st.pfc_sent[prio]++;
	else
		p->st.pfc_xon_sent[prio]++;
}

int xr_fabric_send_pfc(struct xr_fabric *fab, unsigned port, uint8_t mask, uint16_t quanta)
{
	struct port *p;
	int rc;

	if (!fab || port >= fab->nports || !mask)
		return -EINVAL;
	p = fab->ports[port];
	rc = pfc_out(fab, p, mask, quanta);
	if (rc)
		return rc;
	for (uint8_t i = 0; i < XR_FABRIC_PRIOS; i++)
		if (mask & (1u << i))
			(quanta ? p->st.pfc_injected : p->st.pfc_xon_injected)[i]++;
	return 0;
}

static void send_xoff(struct xr_fabric *fab, struct port *p, uint8_t prio)
{
	uint16_t q = xoff_quanta(p);
	uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);

	send_pfc(fab, p, prio, q);
	p->xoff[prio] = true;
	p->xoff_refresh_ns[prio] = now + xr_fabric_quanta_ns(q, p->cfg.rate_bps) / 2;
}

void xr_fab_pfc_update(struct xr_fabric *fab, struct port *in, uint8_t prio)
{
	const struct xr_fabric_pfc_cfg *c = &in->cfg.pfc;

	if (!(c->prio_mask & (1u << prio)))
		return;
	if (!in->xoff[prio] && in->in_bytes[prio] >= c->xoff) {
		send_xoff(fab, in, prio);
	} else if (in->xoff[prio] && in->in_bytes[prio] <= c->xon) {
		send_pfc(fab, in, prio, 0);
		in->xoff[prio] = false;
	}
}

void xr_fab_pfc_tick(struct xr_fabric *fab, struct port *p)
{
	uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);

	for (uint8_t i = 0; i < XR_FABRIC_PRIOS; i++)
		if (p->xoff[i] && now >= p->xoff_refresh_ns[i])
			send_xoff(fab, p, i);
}

uint64_t xr_fab_pfc_next(const struct port *p)
{
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < XR_FABRIC_PRIOS; i++)
		if (p->xoff[i] && p->xoff_refresh_ns[i] < t)
			t = p->xoff_refresh_ns[i];
	return t;
}
