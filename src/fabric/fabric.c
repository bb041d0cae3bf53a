/* SPDX-License-Identifier: MIT */
/*
 * The switch: ports, forwarding (MAC learning plus static entries, flood
 * unknown), the shared buffer, per (egress port, priority) queues and the
 * transmitters. Frames are copied into the switch's own buffer cells on
 * the way in (the port's frame goes straight back to its link) and into
 * a frame of the egress link on the way out: a link's frames belong to
 * its pool, so they cannot cross to another port.
 *
 * Time: every step takes now_ns. A frame arriving in a step arrives at
 * that time; a transmitter starts a frame at max(free, arrival, pause end)
 * if that is not after now, so the line rate holds exactly however
 * coarsely the clock advances.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../wire/bytes.h"
#include "fabric_int.h"

#define RX_BURST 32
#define DEFAULT_BUFFER (4u << 20)
#define DEFAULT_CELLS 4096
#define DEFAULT_QUEUE (256u << 10)
#define MAX_CELLS (1u << 20)

static const char *const drop_names[] = {
#define XR_X(name, id, desc) id,
	XR_FABRIC_DROP_TABLE(XR_X)
#undef XR_X
};
static const char *const drop_descs[] = {
#define XR_X(name, id, desc) desc,
	XR_FABRIC_DROP_TABLE(XR_X)
#undef XR_X
};
_Static_assert(sizeof(drop_names) / sizeof(drop_names[0]) == XR_FABRIC_DROP_COUNT, "drop table");

const char *xr_fabric_drop_name(enum xr_fabric_drop d)
{
	return (unsigned)d < XR_FABRIC_DROP_COUNT ? drop_names[d] : "?";
}

const char *xr_fabric_drop_desc(enum xr_fabric_drop d)
{
	return (unsigned)d < XR_FABRIC_DROP_COUNT ? drop_descs[d] : "?";
}

struct xr_fabric *xr_fabric_new(const struct xr_fabric_cfg *cfg)
{
	struct xr_fabric *fab;
	struct xr_fabric_cfg c = cfg ? *cfg : (struct xr_fabric_cfg){ 0 };

	if (c.prio_src > XR_FABRIC_PRIO_DSCP || c.default_prio >= XR_FABRIC_PRIOS || c.buffer_frames > MAX_CELLS) {
		errno = EINVAL;
		return NULL;
	}
	if (c.dscp_map)
		for (int i = 0; i < 64; i++)
			if (c.dscp_map[i] >= XR_FABRIC_PRIOS) {
				errno = EINVAL;
				return NULL;
			}
	fab = calloc(1, sizeof(*fab));
	if (!fab) {
		errno = ENOMEM;
		return NULL;
	}
	c.buffer_bytes = c.buffer_bytes ? c.buffer_bytes : DEFAULT_BUFFER;
	c.buffer_frames = c.buffer_frames ? c.buffer_frames : DEFAULT_CELLS;
	c.sample_ns = c.sample_ns ? c.sample_ns : 1000;
	for (int i = 0; i < 64; i++)
		fab->dscp_map[i] = c.dscp_map ? c.dscp_map[i] : (uint8_t)(i >> 3);
	c.dscp_map = NULL;
	fab->cfg = c;
	fab->rng = c.seed ? c.seed : 0x5EED;
	fab->cells = malloc((size_t)c.buffer_frames * sizeof(struct cell));
	if (!fab->cells) {
		free(fab);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < c.buffer_frames; i++) {
		fab->cells[i].next = fab->free_cells;
		fab->free_cells = &fab->cells[i];
	}
	return fab;
}

void xr_fabric_free(struct xr_fabric *fab)
{
	if (!fab)
		return;
	for (unsigned i = 0; i < fab->nports; i++) {
		struct port *p = fab->ports[i];
		xr_fab_stats_close(p);
		xr_link_close(p->link);
		free(p);
	}
	free(fab->cells);
	free(fab);
}

int xr_fabric_add_port(struct xr_fabric *fab, struct xr_link *link, const struct xr_fabric_port_cfg *cfg)
{
	struct xr_fabric_port_cfg c = cfg ? *cfg : (struct xr_fabric_port_cfg){ 0 };
	struct port *p;
	int err;

	/* A gather link's frames hold no payload for the switch to copy. */
	if (!fab || !link || link->gather)
		return -EINVAL;
	if (c.ecn.enable && (c.ecn.kmax < c.ecn.kmin || !(c.ecn.pmax >= 0 && c.ecn.pmax <= 1) ||
			     !(c.ecn.avg_weight >= 0 && c.ecn.avg_weight <= 1)))
		return -EINVAL;
	if (c.pfc.prio_mask && (c.pfc.xon > c.pfc.xoff || !c.pfc.xoff))
		return -EINVAL;
	if (fab->nports == XR_FABRIC_MAX_PORTS)
		return -ENOSPC;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	c.queue_limit = c.queue_limit ? c.queue_limit : DEFAULT_QUEUE;
	snprintf(p->name, sizeof(p->name), "%s", c.name ? c.name : "");
	if (!c.name)
		snprintf(p->name, sizeof(p->name), "p%u", fab->nports);
	c.name = NULL;
	p->cfg = c;
	p->link = link;
	err = xr_fab_stats_open(fab, p);
	if (err) {
		free(p);
		return err;
	}
	p->cfg.pcap = NULL;
	fab->ports[fab->nports] = p;
	return (int)fab->nports++;
}

static bool mac_is_multicast(const uint8_t *m)
{
	return m[0] & 1;
}

static struct mac_entry *mac_find(struct xr_fabric *fab, const uint8_t mac[6])
{
	for (unsigned i = 0; i < fab->nmacs; i++)
		if (!memcmp(fab->macs[i].mac, mac, 6))
			return &fab->macs[i];
	return NULL;
}

int xr_fabric_add_mac(struct xr_fabric *fab, const uint8_t mac[6], unsigned port)
{
	struct mac_entry *e;

	if (!fab || !mac || port >= fab->nports || mac_is_multicast(mac))
		return -EINVAL;
	e = mac_find(fab, mac);
	if (!e) {
		if (fab->nmacs == MAC_TABLE_MAX)
			return -ENOSPC;
		e = &fab->macs[fab->nmacs++];
		memcpy(e->mac, mac, 6);
	}
	e->port = (uint8_t)port;
	e->is_static = true;
	return 0;
}

static void learn(struct xr_fabric *fab, const uint8_t mac[6], unsigned port)
{
	struct mac_entry *e;

	if (fab->cfg.no_learning)
		return;
	e = mac_find(fab, mac);
	if (e) {
		if (!e->is_static)
			e->port = (uint8_t)port;   /* a station that moved */
		return;
	}
	if (fab->nmacs == MAC_TABLE_MAX)
		return;   /* full: that station's frames are flooded */
	e = &fab->macs[fab->nmacs++];
	memcpy(e->mac, mac, 6);
	e->port = (uint8_t)port;
	e->is_static = false;
}

static void cell_free(struct xr_fabric *fab, struct cell *c)
{
	fab->buf_used -= c->len;
	c->next = fab->free_cells;
	fab->free_cells = c;
}

/* Queues a copy of d for egress port eg, or counts why not. */
static void enqueue(struct xr_fabric *fab, struct port *in, unsigned in_idx, struct port *eg,
		    const uint8_t *d, uint16_t len, uint8_t prio)
{
	bool lossless = in->cfg.pfc.prio_mask & (1u << prio);
	struct queue *q = &eg->q[prio];
	struct cell *c;

	if (!eg->up) {
		eg->st.drops[XR_FABRIC_DROP_EGRESS_DOWN]++;
		return;
	}
	/* Lossless traffic is bounded at its ingress (XOFF + headroom), so
	 * the egress limit would only turn PFC's promise into drops. */
	if (lossless && !xr_fab_pfc_admit(in, prio, len)) {
		in->st.drops[XR_FABRIC_DROP_HEADROOM]++;
		return;
	}
	if (!lossless && q->bytes + len > eg->cfg.queue_limit) {
		eg->st.drops[XR_FABRIC_DROP_QUEUE_FULL]++;
		return;
	}
	if (fab->buf_used + len > fab->cfg.buffer_bytes || !fab->free_cells) {
		in->st.drops[XR_FABRIC_DROP_BUFFER_FULL]++;
		return;
	}
	c = fab->free_cells;
	fab->free_cells = c->next;
	c->next = NULL;
	c->len = len;
	c->in_port = (uint8_t)in_idx;
	c->prio = prio;
	c->enq_ns = atomic_load_explicit(&fab->now, memory_order_relaxed);
	memcpy(c->data, d, len);
	fab->buf_used += len;
	xr_fab_ecn_enqueue(fab, eg, q, c);
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->bytes += len;
	eg->qbytes += len;
	xr_fab_qlen_changed(eg);
	in->in_bytes[prio] += len;
	xr_fab_pfc_update(fab, in, prio);
}

/* One frame received on port in_idx: consume MAC control, forward the rest. */
static void ingress(struct xr_fabric *fab, unsigned in_idx, const uint8_t *d, uint16_t len)
{
	struct port *in = fab->ports[in_idx];
	struct frame_info fi;
	struct mac_entry *e;
	uint8_t prio;

	in->st.rx_frames++;
	in->st.rx_bytes += len;
	if (!xr_fab_frame_info(d, len, &fi)) {
		in->st.drops[XR_FABRIC_DROP_RUNT]++;
		return;
	}
	if (mac_is_multicast(d + 6) || !(d[6] | d[7] | d[8] | d[9] | d[10] | d[11])) {
		in->st.drops[XR_FABRIC_DROP_BAD_SRC_MAC]++;
		return;
	}
	if (!fi.vlan && fi.ethertype == ETHERTYPE_MAC_CTRL) {
		if (!xr_fab_pfc_rx(fab, in, d, len))
			in->st.drops[XR_FABRIC_DROP_BAD_MAC_CTRL]++;
		return;
	}
	if (d[0] == 0x01 && d[1] == 0x80 && d[2] == 0xC2 && d[3] == 0 && d[4] == 0 && (d[5] & 0xF0) == 0) {
		in->st.drops[XR_FABRIC_DROP_LINK_LOCAL]++;
		return;
	}
	learn(fab, d + 6, in_idx);
	prio = xr_fab_prio(fab, &fi);
	e = mac_is_multicast(d) ? NULL : mac_find(fab, d);
	if (e) {
		if (e->port == in_idx)
			in->st.drops[XR_FABRIC_DROP_HAIRPIN]++;
		else
			enqueue(fab, in, in_idx, fab->ports[e->port], d, len, prio);
		return;
	}
	in->st.flooded++;
	for (unsigned i = 0; i < fab->nports; i++)
		if (i != in_idx)
			enqueue(fab, in, in_idx, fab->ports[i], d, len, prio);
}

static void rx_port(struct xr_fabric *fab, unsigned idx, int *moved)
{
	struct port *p = fab->ports[idx];
	struct xr_frame *f[RX_BURST];
	int n;

	do {
		n = xr_link_recv(p->link, f, RX_BURST);
		for (int i = 0; i < n; i++) {
			uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);
			uint16_t len = f[i]->len <= XR_MAX_FRAME ? f[i]->len : XR_MAX_FRAME;
			xr_fab_pcap(fab, p, f[i]->data, len, now);
			ingress(fab, idx, f[i]->data, len);
			xr_link_frame_free(p->link, f[i]);
		}
		if (n > 0)
			*moved += n;
	} while (n == RX_BURST);
}

/* When the head of prio's queue may start, or UINT64_MAX if paused past now. */
static uint64_t start_time(const struct port *p, uint8_t prio, uint64_t now)
{
	const struct cell *c = p->q[prio].head;
	uint64_t t;

	if (!c || xr_fab_paused(p, prio, now))
		return UINT64_MAX;
	t = p->tx_free_ns > c->enq_ns ? p->tx_free_ns : c->enq_ns;
	return t > p->pause_until[prio] ? t : p->pause_until[prio];
}

/* The head of (p, prio) left at time t. */
static void dequeue(struct xr_fabric *fab, struct port *p, uint8_t prio, uint64_t t)
{
	struct queue *q = &p->q[prio];
	struct cell *c = q->head;
	struct port *in = fab->ports[c->in_port];

	q->head = c->next;
	if (!q->head) {
		q->tail = NULL;
		q->idle_since = t;
	}
	q->bytes -= c->len;
	p->qbytes -= c->len;
	in->in_bytes[prio] -= c->len;
	cell_free(fab, c);
	xr_fab_pfc_update(fab, in, prio);
}

/* Sends from p's queues in strict priority while the transmitter allows. */
static void tx_port(struct xr_fabric *fab, struct port *p, int *moved)
{
	uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);

	for (;;) {
		int best = -1;
		uint64_t start = UINT64_MAX;

		for (int i = XR_FABRIC_PRIOS - 1; i >= 0; i--) {
			uint64_t t = start_time(p, (uint8_t)i, now);
			if (t <= now) {
				best = i;
				start = t;
				break;
			}
		}
		if (best < 0)
			return;
		struct cell *c = p->q[best].head;
		struct xr_frame *f = xr_link_frame_alloc(p->link);
		if (f) {
			f->len = c->len;
			memcpy(f->data, c->data, c->len);
			if (xr_link_send(p->link, &f, 1) != 1) {
				xr_link_frame_free(p->link, f);
				f = NULL;
			}
		}
		if (!f) {
			/* The far side is not taking frames: keep this one for the next
			 * step, and do not let the time lost now be caught up later
			 * faster than the line rate. */
			p->st.tx_stalls++;
			p->tx_free_ns = now;
			return;
		}
		xr_fab_pcap(fab, p, c->data, c->len, start);
		p->tx_free_ns = start + xr_fab_ser_ns((uint64_t)c->len + XR_FABRIC_WIRE_OVERHEAD, p->cfg.rate_bps);
		p->st.tx_frames++;
		p->st.tx_bytes += c->len;
		p->st.tx_wire_bytes += (uint64_t)c->len + XR_FABRIC_WIRE_OVERHEAD;
		dequeue(fab, p, (uint8_t)best, start);
		(*moved)++;
	}
}

int xr_fabric_step(struct xr_fabric *fab, uint64_t now_ns)
{
	uint64_t last;
	int moved = 0;

	if (!fab)
		return -EINVAL;
	last = atomic_load_explicit(&fab->now, memory_order_relaxed);
	if (now_ns < last)
		now_ns = last;
	atomic_store_explicit(&fab->prev, last, memory_order_relaxed);
	atomic_store_explicit(&fab->now, now_ns, memory_order_release);
	/* Once per step: an interface port asks the kernel. */
	for (unsigned i = 0; i < fab->nports; i++)
		fab->ports[i]->up = fab->ports[i]->link->ops->is_up(fab->ports[i]->link);
	for (unsigned i = 0; i < fab->nports; i++)
		rx_port(fab, i, &moved);
	for (unsigned i = 0; i < fab->nports; i++) {
		tx_port(fab, fab->ports[i], &moved);
		xr_fab_pfc_tick(fab, fab->ports[i]);
	}
	xr_fab_sample(fab, now_ns);
	return moved;
}

uint64_t xr_fabric_now(const struct xr_fabric *fab)
{
	return atomic_load_explicit(&((struct xr_fabric *)fab)->now, memory_order_acquire);
}

uint64_t xr_fabric_clock(void *fab)
{
	return xr_fabric_now(fab);
}

uint64_t xr_fabric_next_event(const struct xr_fabric *fab)
{
	uint64_t now = xr_fabric_now(fab), t = UINT64_MAX;

	for (unsigned i = 0; i < fab->nports; i++) {
		const struct port *p = fab->ports[i];
		uint64_t r = xr_fab_pfc_next(p);
		if (r < t)
			t = r;
		for (uint8_t k = 0; k < XR_FABRIC_PRIOS; k++) {
			if (!p->q[k].head)
				continue;
			uint64_t s = xr_fab_paused(p, k, now) ? p->pause_until[k] : start_time(p, k, now);
			if (s < t)
				t = s;
		}
	}
	return t;
}

unsigned xr_fabric_nports(const struct xr_fabric *fab)
{
	return fab ? fab->nports : 0;
}

const char *xr_fabric_port_name(const struct xr_fabric *fab, unsigned port)
{
	return fab && port < fab->nports ? fab->ports[port]->name : NULL;
}

uint64_t xr_fabric_queue_bytes(const struct xr_fabric *fab, unsigned port, int prio)
{
	if (!fab || port >= fab->nports || prio >= XR_FABRIC_PRIOS)
		return 0;
	return prio < 0 ? fab->ports[port]->qbytes : fab->ports[port]->q[prio].bytes;
}
