/* SPDX-License-Identifier: MIT */
/*
 * A host on the in-process fabric: the near end of a mem pair, wrapped as
 * the NIC's MAC. It paces frames at its line rate on the fabric's clock
 * (the engine itself sends as fast as the link takes them, which on a mem
 * pair is at once), honours the PFC/PAUSE frames the switch sends (or,
 * with ignore_pause, hands them to the engine, which honours them itself:
 * src/nic/pfc.c), and resolves peers through the
 * fabric's table of attached hosts (a mem pair would answer with the
 * switch port's MAC). A refused send is backpressure: the engine keeps the
 * frame and offers it again, so nothing is lost here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../wire/bytes.h"
#include "fabric_int.h"

struct host {
	struct xr_link link;
	struct xr_link *inner;
	struct xr_fabric *fab;
	uint64_t rate_bps;
	bool unpaced, ignore_pause;
	uint64_t tx_free_ns;
	uint64_t pause_until[XR_FABRIC_PRIOS];
	struct xr_fabric_host_stats st;
};

static const struct xr_link_ops host_ops;

int xr_fab_host_resolve(struct xr_fabric *fab, const xr_gid *gid, uint8_t mac[6])
{
	for (unsigned i = 0; i < XR_FABRIC_MAX_PORTS; i++)
		if (fab->hosts[i].used && !memcmp(&fab->hosts[i].gid, gid, sizeof(*gid))) {
			memcpy(mac, fab->hosts[i].mac, 6);
			return 0;
		}
	return -EHOSTUNREACH;
}

static int host_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct host *h = l->priv;
	uint64_t now = xr_fabric_now(h->fab);
	uint64_t prev = atomic_load_explicit(&h->fab->prev, memory_order_relaxed);
	unsigned i;

	for (i = 0; i < n; i++) {
		uint8_t prio = xr_fabric_frame_prio(h->fab, f[i]->data, f[i]->len);
		uint64_t start = 0;
		if (!h->ignore_pause && h->pause_until[prio] > now) {
			h->st.paused_refusals++;
			break;
		}
		if (!h->unpaced) {
			/* The MAC could have started any time since the last step. */
			start = h->tx_free_ns > prev ? h->tx_free_ns : prev;
			if (start > now) {
				h->st.rate_refusals++;
				break;
			}
		}
		if (xr_link_send(h->inner, &f[i], 1) != 1)
			break;
		if (!h->unpaced)
			h->tx_free_ns = start + xr_fab_ser_ns((uint64_t)f[i]->len + XR_FABRIC_WIRE_OVERHEAD, h->rate_bps);
	}
	h->st.tx_frames += i;
	l->stats.tx_frames += i;
	return (int)i;
}

/* A MAC control frame from the switch: pause or resume our priorities.
 * True when it is consumed here. */
static bool mac_control(struct host *h, const struct xr_frame *f)
{
	const uint8_t *d = f->data;
	uint64_t now = xr_fabric_now(h->fab);

	if (f->len < XR_ETH_HLEN + 4 || get_be16(d + 12) != ETHERTYPE_MAC_CTRL)
		return false;
	uint16_t op = get_be16(d + 14);
	if (op == MAC_CTRL_PAUSE) {
		uint64_t until = now + xr_fabric_quanta_ns(get_be16(d + 16), h->rate_bps);
		h->st.pause_rcvd++;
		for (int i = 0; i < XR_FABRIC_PRIOS && !h->ignore_pause; i++)
			h->pause_until[i] = until;
	} else if (op == MAC_CTRL_PFC && f->len >= XR_ETH_HLEN + 4 + 2 * XR_FABRIC_PRIOS) {
		h->st.pfc_rcvd++;
		for (int i = 0; i < XR_FABRIC_PRIOS && !h->ignore_pause; i++)
			if (d[17] & (1u << i))
				h->pause_until[i] = now + xr_fabric_quanta_ns(get_be16(d + 18 + 2 * i), h->rate_bps);
	}
	/* Consumed here, known opcode or not, unless the engine does PFC itself. */
	return !h->ignore_pause;
}

static int host_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct host *h = l->priv;
	int got = xr_link_recv(h->inner, f, n), keep = 0;

	for (int i = 0; i < got; i++) {
		if (mac_control(h, f[i]))
			xr_link_frame_free(h->inner, f[i]);
		else
			f[keep++] = f[i];
	}
	h->st.rx_frames += (uint64_t)(keep > 0 ? keep : 0);
	l->stats.rx_frames += (uint64_t)(keep > 0 ? keep : 0);
	return got < 0 ? got : keep;
}

static int host_wait_fd(struct xr_link *l)
{
	struct host *h = l->priv;
	return h->inner->ops->wait_fd(h->inner);
}

static struct xr_frame *host_alloc(struct xr_link *l)
{
	struct host *h = l->priv;
	return xr_link_frame_alloc(h->inner);
}

static void host_free(struct xr_link *l, struct xr_frame *f)
{
	struct host *h = l->priv;
	xr_link_frame_free(h->inner, f);
}

static bool host_is_up(struct xr_link *l)
{
	struct host *h = l->priv;
	return h->inner->ops->is_up(h->inner);
}

static void host_close(struct xr_link *l)
{
	struct host *h = l->priv;
	xr_link_close(h->inner);
	free(h);
}

static int host_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	struct host *h = l->priv;
	return xr_fab_host_resolve(h->fab, gid, mac);
}

/* The wire's receive queue: the inner mem link's. */
static int host_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	struct host *h = l->priv;
	return xr_link_rx_backlog(h->inner, queued, capacity);
}

static const struct xr_link_ops host_ops = {
	host_send, host_recv, host_wait_fd, host_alloc, host_free, host_is_up, host_close, host_resolve,
	host_rx_backlog, NULL, NULL, NULL, NULL, NULL,
};

int xr_fabric_attach_host(struct xr_fabric *fab, const struct xr_fabric_port_cfg *pcfg,
			  const struct xr_fabric_host_cfg *hcfg, struct xr_link **out)
{
	struct xr_fabric_host_cfg hc = hcfg ? *hcfg : (struct xr_fabric_host_cfg){ 0 };
	struct xr_link *near, *far;
	struct host *h;
	xr_gid gid;
	int port, err;
	static const uint8_t zero[6];

	if (!fab || !out || (hc.addr && xr_gid_parse(&gid, hc.addr)) || (hc.mac[0] & 1))
		return -EINVAL;
	if (fab->nports == XR_FABRIC_MAX_PORTS)
		return -ENOSPC;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	err = xr_link_mem_pair(&near, &far, hc.depth ? hc.depth : 256);
	if (err) {
		free(h);
		return err;
	}
	if (!memcmp(hc.mac, zero, 6)) {
		static const uint8_t base[6] = { 0x02, 0x00, 0x00, 0xFA, 0x00, 0x00 };
		memcpy(hc.mac, base, 6);
		hc.mac[5] = (uint8_t)fab->nports;
	}
	memcpy(near->mac, hc.mac, 6);
	memcpy(far->mac, hc.mac, 6);
	far->mac[3] = 0xFB;   /* the switch port's own MAC: PFC frames come from it */
	far->mac[4] ^= 0x80;
	port = xr_fabric_add_port(fab, far, pcfg);
	if (port < 0) {
		xr_link_close(near);
		xr_link_close(far);
		free(h);
		return port;
	}
	/* The switch knows where the host is before it speaks: nothing floods. */
	xr_fabric_add_mac(fab, hc.mac, (unsigned)port);
	if (hc.addr) {
		fab->hosts[port].gid = gid;
		memcpy(fab->hosts[port].mac, hc.mac, 6);
		fab->hosts[port].used = true;
	}
	h->inner = near;
	h->fab = fab;
	h->rate_bps = hc.rate_bps ? hc.rate_bps : fab->ports[port]->cfg.rate_bps;
	h->unpaced = hc.unpaced || !h->rate_bps;
	h->ignore_pause = hc.ignore_pause;
	h->link = *near;
	h->link.ops = &host_ops;
	h->link.kind = "fabric-host";
	h->link.priv = h;
	memset(&h->link.stats, 0, sizeof(h->link.stats));
	*out = &h->link;
	return port;
}

int xr_fabric_host_stats(struct xr_link *l, struct xr_fabric_host_stats *out)
{
	if (!l || !out || l->ops != &host_ops)
		return -EINVAL;
	*out = ((struct host *)l->priv)->st;
	return 0;
}
