/* SPDX-License-Identifier: MIT */
/*
 * The multicast groups a link joined (its mcast op): a small fixed table,
 * as a NIC's group filter. The UDP link keeps a socket per group in it;
 * the raw and XDP links match received frames against it.
 */
#ifndef XR_LINK_MCAST_SET_H
#define XR_LINK_MCAST_SET_H

#include <errno.h>
#include <linux/if_packet.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "../wire/hdr.h"
#include "xroce/regmap.h"
#include "xroce/wire.h"

/* Groups one link may join at once: the engine's table (XR_MAX_MCG in
 * regmap.h), so a device's max_mcast_grp holds on every link. Each costs
 * the UDP link a socket; the raw and XDP links look through the table for
 * multicast frames only. A join past it is -ENOSPC. */
#define XR_LINK_MCAST_MAX 256
_Static_assert(XR_LINK_MCAST_MAX >= XR_MAX_MCG, "every group the engine's table holds can be joined");

struct mcast_group {
	xr_gid gid;
	uint8_t mac[6];
	int fd;            /* UDP link: the group's socket; else unused */
};

struct mcast_set {
	unsigned n;
	struct mcast_group g[XR_LINK_MCAST_MAX];
};

static inline int mcast_set_find(const struct mcast_set *s, const xr_gid *gid)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!memcmp(s->g[i].gid.raw, gid->raw, 16))
			return (int)i;
	return -ENOENT;
}

/* Whether a join may go ahead: 0, -EINVAL (not a group), -EEXIST (joined:
 * the engine joins once per group), -ENOSPC (the table is full). */
static inline int mcast_set_can_add(const struct mcast_set *s, const xr_gid *gid)
{
	if (!xr_gid_is_mcast(gid))
		return -EINVAL;
	if (mcast_set_find(s, gid) >= 0)
		return -EEXIST;
	return s->n < XR_LINK_MCAST_MAX ? 0 : -ENOSPC;
}

/* After mcast_set_can_add said 0: the new entry. */
static inline struct mcast_group *mcast_set_add(struct mcast_set *s, const xr_gid *gid, int fd)
{
	struct mcast_group *g = &s->g[s->n++];

	g->gid = *gid;
	xr_gid_mcast_mac(gid, g->mac);
	g->fd = fd;
	return g;
}

/* Removes entry i (the last one takes its place). */
static inline void mcast_set_del(struct mcast_set *s, unsigned i)
{
	s->g[i] = s->g[--s->n];
}

/* The group's MAC joins (or leaves) packet socket fd's memberships on
 * ifindex, so an interface whose filter drops multicast it was not asked
 * for passes it; the kernel counts them per socket (two groups of one MAC
 * each hold it) and drops them with the socket. 0 or -errno. */
static inline int mcast_packet_membership(int fd, int ifindex, const xr_gid *group, bool join)
{
	struct packet_mreq mr = { .mr_ifindex = ifindex, .mr_type = PACKET_MR_MULTICAST, .mr_alen = 6 };

	if (fd < 0)
		return -ENOTSOCK;
	xr_gid_mcast_mac(group, mr.mr_address);
	return setsockopt(fd, SOL_PACKET, join ? PACKET_ADD_MEMBERSHIP : PACKET_DROP_MEMBERSHIP, &mr, sizeof(mr)) ? -errno : 0;
}

/* Whether a received Ethernet frame (untagged) is sent to a joined group:
 * its destination IP is one, and its destination MAC that group's (a MAC
 * alone is shared by 32 IPv4 groups). Frames from src_mac (the link's
 * own, come back) are not. */
static inline bool mcast_set_match(const struct mcast_set *s, const uint8_t *d, size_t len, const uint8_t src_mac[6])
{
	xr_gid dst;
	uint16_t type;
	int i;

	if (!s->n || !(d[0] & 1) || len < XR_ETH_HLEN || !memcmp(d + ETH_OFF_SMAC, src_mac, 6))
		return false;
	type = get_be16(d + ETH_OFF_TYPE);
	if (type == XR_ETHERTYPE_IPV4 && len >= XR_ETH_HLEN + XR_IPV4_HLEN)
		xr_gid_from_ipv4(&dst, get_be32(d + XR_ETH_HLEN + IP4_OFF_DST));
	else if (type == XR_ETHERTYPE_IPV6 && len >= XR_ETH_HLEN + XR_IPV6_HLEN)
		memcpy(dst.raw, d + XR_ETH_HLEN + IP6_OFF_DST, 16);
	else
		return false;
	i = mcast_set_find(s, &dst);
	return i >= 0 && !memcmp(d, s->g[i].mac, 6);
}

#endif
