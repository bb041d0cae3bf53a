/* SPDX-License-Identifier: MIT */
/*
 * The XDP link's neighbours: it owns an address the kernel does not have,
 * so it answers ARP requests (RFC 826) and neighbour solicitations (RFC
 * 4861) for it and resolves peers the same way, as the raw link does, and
 * decides which received frames the engine sees. The filter in the kernel
 * already chose the frames; this checks them again byte by byte, since
 * the filter only looked at a few fields.
 */
#ifdef XROCE_HAVE_XDP
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <bpf/bpf.h>

#include "../wire/hdr.h"
#include "xdp.h"

#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_PFC 0x8808
#define PFC_OPCODE 0x0101
#define ICMP6_NS 135
#define ICMP6_NA 136
#define RESOLVE_TRIES 10
#define RESOLVE_WAIT_MS 100

static const uint8_t bcast[6] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void xdp_learn(struct xdp_link *x, const xr_gid *gid, const uint8_t mac[6])
{
	struct xdp_neigh *slot = NULL;

	for (int i = 0; i < XDP_NEIGH_MAX; i++) {
		struct xdp_neigh *n = &x->neigh[i];
		if (n->used && !memcmp(&n->gid, gid, sizeof(*gid))) {
			memcpy(n->mac, mac, 6);
			return;
		}
		if (!n->used && !slot)
			slot = n;
	}
	if (!slot)   /* full: one entry gives way, chosen by the address */
		slot = &x->neigh[(gid->raw[15] + gid->raw[14]) % XDP_NEIGH_MAX];
	slot->gid = *gid;
	memcpy(slot->mac, mac, 6);
	slot->used = true;
}

static bool lookup(struct xdp_link *x, const xr_gid *gid, uint8_t mac[6])
{
	for (int i = 0; i < XDP_NEIGH_MAX; i++)
		if (x->neigh[i].used && !memcmp(&x->neigh[i].gid, gid, sizeof(*gid))) {
			memcpy(mac, x->neigh[i].mac, 6);
			return true;
		}
	return false;
}

/* ---- ARP ---- */

static void arp_send(struct xdp_link *x, uint16_t op, const uint8_t tha[6], const uint8_t tpa[4],
		     const uint8_t dmac[6])
{
	uint8_t f[60] = { 0 }, *a = f + XR_ETH_HLEN;

	memcpy(f + ETH_OFF_DMAC, dmac, 6);
	memcpy(f + ETH_OFF_SMAC, x->link.mac, 6);
	put_be16(f + ETH_OFF_TYPE, ETHERTYPE_ARP);
	put_be16(a, 1);                      /* hardware: Ethernet */
	put_be16(a + 2, XR_ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	put_be16(a + 6, op);
	memcpy(a + 8, x->link.mac, 6);       /* sender: us */
	memcpy(a + 14, x->addr.raw + 12, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	if (xdp_tx_ctrl(x, f, sizeof(f)) == 0 && op == 2)
		x->info.arp_replies++;
}

static void arp_input(struct xdp_link *x, const uint8_t *a, size_t len)
{
	xr_gid sender;

	if (len < 28 || get_be16(a) != 1 || get_be16(a + 2) != XR_ETHERTYPE_IPV4 || a[4] != 6 || a[5] != 4 ||
	    memcmp(a + 24, x->addr.raw + 12, 4))
		return;
	xr_gid_from_ipv4(&sender, get_be32(a + 14));
	xdp_learn(x, &sender, a + 8);
	if (get_be16(a + 6) == 1)
		arp_send(x, 2, a + 8, a + 14, a + 8);
}

/* ---- neighbour discovery ---- */

/* An NS or NA about target, carrying our link-layer address. */
static void nd_send(struct xdp_link *x, uint8_t type, const uint8_t *target, const uint8_t *dst_ip,
		    const uint8_t dmac[6])
{
	uint8_t f[XR_ETH_HLEN + XR_IPV6_HLEN + 32] = { 0 }, *ip = f + XR_ETH_HLEN, *icmp = ip + XR_IPV6_HLEN;

	memcpy(f + ETH_OFF_DMAC, dmac, 6);
	memcpy(f + ETH_OFF_SMAC, x->link.mac, 6);
	put_be16(f + ETH_OFF_TYPE, XR_ETHERTYPE_IPV6);
	ip6_set_vtf(ip, 0, 0);
	put_be16(ip + IP6_OFF_PAYLEN, 32);
	ip[IP6_OFF_NEXTHDR] = 58;
	ip[IP6_OFF_HOPLIM] = 255;            /* RFC 4861 7.1: only on-link senders */
	memcpy(ip + IP6_OFF_SRC, x->addr.raw, 16);
	memcpy(ip + IP6_OFF_DST, dst_ip, 16);
	icmp[0] = type;
	if (type == ICMP6_NA)
		icmp[4] = 0x60;              /* solicited, override */
	memcpy(icmp + 8, target, 16);
	icmp[24] = type == ICMP6_NS ? 1 : 2; /* source / target link-layer address */
	icmp[25] = 1;
	memcpy(icmp + 26, x->link.mac, 6);
	put_be16(icmp + 2, xr_icmp6_csum(ip + IP6_OFF_SRC, ip + IP6_OFF_DST, icmp, 32));
	if (xdp_tx_ctrl(x, f, sizeof(f)) == 0 && type == ICMP6_NA)
		x->info.nd_replies++;
}

static void nd_input(struct xdp_link *x, const uint8_t *ip, size_t len)
{
	const uint8_t *icmp = ip + XR_IPV6_HLEN, *lladdr;
	size_t ilen;
	xr_gid who;

	if (len < XR_IPV6_HLEN + 24 || ip[IP6_OFF_NEXTHDR] != 58 || ip[IP6_OFF_HOPLIM] != 255)
		return;
	ilen = len - XR_IPV6_HLEN;
	if (get_be16(ip + IP6_OFF_PAYLEN) < ilen)
		ilen = get_be16(ip + IP6_OFF_PAYLEN);
	if (ilen < 24 || (icmp[0] != ICMP6_NS && icmp[0] != ICMP6_NA) ||
	    xr_icmp6_csum(ip + IP6_OFF_SRC, ip + IP6_OFF_DST, icmp, ilen) != 0)
		return;
	/* The link-layer address option, when it is the first one. */
	lladdr = ilen >= 32 && icmp[25] == 1 ? icmp + 26 : NULL;
	if (!lladdr)
		return;
	if (icmp[0] == ICMP6_NS) {
		if (memcmp(icmp + 8, x->addr.raw, 16))
			return;
		memcpy(who.raw, ip + IP6_OFF_SRC, 16);
		xdp_learn(x, &who, lladdr);
		nd_send(x, ICMP6_NA, x->addr.raw, ip + IP6_OFF_SRC, lladdr);
	} else {
		memcpy(who.raw, icmp + 8, 16);
		xdp_learn(x, &who, lladdr);
	}
}

/* ---- what a frame is ---- */

bool xdp_rx_classify(struct xdp_link *x, const uint8_t *d, size_t len)
{
	uint16_t type;

	if (len < XR_ETH_HLEN) {
		x->info.rx_drop_not_ours++;
		return false;
	}
	type = get_be16(d + ETH_OFF_TYPE);
	if (type == ETHERTYPE_ARP) {
		arp_input(x, d + XR_ETH_HLEN, len - XR_ETH_HLEN);
	} else if (type == ETHERTYPE_PFC) {
		/* MAC control (PFC, PAUSE): counted, and to the engine when
		 * addressed to the MAC control group or to us (docs/pfc.md). */
		static const uint8_t mac_ctrl_dst[6] = { 0x01, 0x80, 0xC2, 0x00, 0x00, 0x01 };
		if (len >= XR_ETH_HLEN + 4 && get_be16(d + XR_ETH_HLEN) == PFC_OPCODE)
			x->info.pfc_rcvd++;
		if (!memcmp(d, mac_ctrl_dst, 6) || !memcmp(d, x->link.mac, 6))
			return true;
	} else if (type == XR_ETHERTYPE_IPV6 && len > XR_ETH_HLEN + XR_IPV6_HLEN &&
		   d[XR_ETH_HLEN + IP6_OFF_NEXTHDR] == 58) {
		nd_input(x, d + XR_ETH_HLEN, len - XR_ETH_HLEN);
	} else if ((type == XR_ETHERTYPE_IPV4 || type == XR_ETHERTYPE_IPV6) &&
		   (!memcmp(d, x->link.mac, 6) || mcast_set_match(&x->groups, d, len, x->link.mac))) {
		return true;   /* for us: the engine's parser decides the rest */
	} else {
		/* Our address behind another MAC (a flooding bridge), or a type the
		 * filter should not have sent. */
		x->info.rx_drop_not_ours++;
	}
	return false;
}

/* ---- resolution ---- */

static void solicit(struct xdp_link *x, const xr_gid *gid)
{
	static const uint8_t zero[6] = { 0 };

	if (xr_gid_is_ipv4(gid)) {
		arp_send(x, 1, zero, gid->raw + 12, bcast);
	} else {
		/* To the target's solicited-node multicast group. */
		uint8_t dst[16] = { 0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF };
		uint8_t dmac[6] = { 0x33, 0x33, 0xFF };
		memcpy(dst + 13, gid->raw + 13, 3);
		memcpy(dmac + 3, gid->raw + 13, 3);
		nd_send(x, ICMP6_NS, gid->raw, dst, dmac);
	}
}

int xdp_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	struct xdp_link *x = l->priv;

	for (int attempt = 0; attempt < RESOLVE_TRIES; attempt++) {
		uint64_t until = now_ms() + RESOLVE_WAIT_MS;
		bool found;

		pthread_mutex_lock(&x->rx_lock);
		found = lookup(x, gid, mac);
		if (!found)
			solicit(x, gid);
		pthread_mutex_unlock(&x->rx_lock);
		if (found)
			return 0;
		while (now_ms() < until) {
			struct pollfd p = { xdp_sock_fd(x), POLLIN, 0 };
			poll(&p, 1, 10);
			pthread_mutex_lock(&x->rx_lock);
			xdp_rx_step(x, NULL, 0);   /* RoCE frames wait in pending for the engine */
			found = lookup(x, gid, mac);
			pthread_mutex_unlock(&x->rx_lock);
			if (found)
				return 0;
		}
	}
	return -EHOSTUNREACH;
}
/* ---- multicast groups ---- */

/* A joined group is in the filter's map (its RoCE frames come to the
 * socket), in the link's table (the MAC check above) and in the
 * interface's multicast list through mc_fd's membership, so a NIC's
 * filter passes it; the kernel counts that per socket (two groups of one
 * MAC each hold it), and it goes with the socket however the link ends. */
int xdp_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	struct xdp_link *x = l->priv;
	struct xdp_sock *s = x->sock;
	uint8_t one = 1;
	int i, err = 0;

	if (xr_gid_is_ipv4(group) != xr_gid_is_ipv4(&x->addr))
		return -EINVAL;   /* the filter looks at the link's family only */
	pthread_mutex_lock(&x->rx_lock);
	i = join ? mcast_set_can_add(&x->groups, group) : mcast_set_find(&x->groups, group);
	if (i >= 0 && join) {
		err = mcast_packet_membership(s->mc_fd, x->ifindex, group, true);
		if (!err && bpf_map_update_elem(s->groups_fd, group->raw, &one, BPF_ANY)) {
			err = -errno;
			mcast_packet_membership(s->mc_fd, x->ifindex, group, false);
		}
		if (!err)
			mcast_set_add(&x->groups, group, -1);
	} else if (i >= 0) {
		bpf_map_delete_elem(s->groups_fd, group->raw);
		mcast_packet_membership(s->mc_fd, x->ifindex, group, false);
		mcast_set_del(&x->groups, (unsigned)i);
	}
	pthread_mutex_unlock(&x->rx_lock);
	return i < 0 ? i : err;
}

#endif
