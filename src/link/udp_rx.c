/* SPDX-License-Identifier: MIT */
/*
 * The UDP link's receive path (udp.c has the rest): datagrams read in
 * batches into an armed ring of frames, their Ethernet/IP/UDP headers
 * rebuilt in front and the ICRC checked (the IPv4 ID recovered, see
 * link.h); the joined groups' sockets read into the same ring.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "../wire/hdr.h"
#include "udp_link.h"

/* Ethernet/IP/UDP in front of a received datagram, as it was on the wire
 * (the IPv4 ID is taken to be 0 until recover_ip_id: see link.h). */
static void rebuild_headers(struct udp_link *u, struct xr_frame *f, size_t payload,
			    const void *src, const uint8_t *dst_addr, uint8_t tos)
{
	uint8_t *ip = f->data + XR_ETH_HLEN, *udp;

	memcpy(f->data + ETH_OFF_DMAC, u->link.mac, 6);
	memset(f->data + ETH_OFF_SMAC, 0, 6);
	if (u->family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)src;
		put_be16(f->data + ETH_OFF_TYPE, XR_ETHERTYPE_IPV4);
		ip[IP4_OFF_VER_IHL] = 0x45;
		ip[IP4_OFF_TOS] = tos;
		put_be16(ip + IP4_OFF_TOTLEN, (uint16_t)(XR_IPV4_HLEN + XR_UDP_HLEN + payload));
		put_be16(ip + IP4_OFF_ID, 0);
		put_be16(ip + IP4_OFF_FRAG, IP4_FLAG_DF);
		ip[IP4_OFF_TTL] = 64;
		ip[IP4_OFF_PROTO] = IP_PROTO_UDP;
		memcpy(ip + IP4_OFF_SRC, &s->sin_addr, 4);
		memcpy(ip + IP4_OFF_DST, dst_addr, 4);
		put_be16(ip + IP4_OFF_CSUM, 0);
		put_be16(ip + IP4_OFF_CSUM, xr_ipv4_csum(ip));
		udp = ip + XR_IPV4_HLEN;
		put_be16(udp + UDP_OFF_SPORT, ntohs(s->sin_port));
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)src;
		put_be16(f->data + ETH_OFF_TYPE, XR_ETHERTYPE_IPV6);
		ip6_set_vtf(ip, tos, 0);
		put_be16(ip + IP6_OFF_PAYLEN, (uint16_t)(XR_UDP_HLEN + payload));
		ip[IP6_OFF_NEXTHDR] = IP_PROTO_UDP;
		ip[IP6_OFF_HOPLIM] = 64;
		memcpy(ip + IP6_OFF_SRC, &s->sin6_addr, 16);
		memcpy(ip + IP6_OFF_DST, dst_addr, 16);
		udp = ip + XR_IPV6_HLEN;
		put_be16(udp + UDP_OFF_SPORT, ntohs(s->sin6_port));
	}
	put_be16(udp + UDP_OFF_DPORT, XR_ROCE_UDP_PORT);
	put_be16(udp + UDP_OFF_LEN, (uint16_t)(XR_UDP_HLEN + payload));
	put_be16(udp + UDP_OFF_CSUM, 0);
	f->len = (uint16_t)(u->hdr + payload);
}

/* The IPv4 ID is not visible through a socket but is covered by the ICRC.
 * ID 0 (Linux DF sockets, so xroce) is tried first and checks all 32 bits;
 * rxe sends non-zero IDs.
 * When it does not match, the ID is read back out of the ICRC: that checks
 * only 16 bits (a corruption whose CRC error equals an ID change passes),
 * so the frame is flagged and counted (XR_FRAME_ICRC_ID_RECOVERED), or, in
 * strict mode, handed over as unverifiable for the engine to drop. A packet
 * no ID explains is left as it is, and the engine counts its ICRC error.
 * One CRC pass per packet: the recovery reuses it, and a frame that matched
 * is marked XR_FRAME_ICRC_VERIFIED so the engine's parse skips its own. */
static void recover_ip_id(struct udp_link *u, struct xr_frame *f)
{
	uint8_t *ip = f->data + XR_ETH_HLEN;
	size_t len = (size_t)f->len - XR_ETH_HLEN;
	uint32_t wire, icrc;
	uint16_t id;

	if (u->family != AF_INET || len < XR_IPV4_HLEN + XR_UDP_HLEN + XR_BTH_LEN + XR_ICRC_LEN)
		return;
	wire = get_le32(ip + len - XR_ICRC_LEN);
	icrc = xr_icrc(ip, len - XR_ICRC_LEN);
	if (__builtin_expect(icrc == wire, 1)) {
		f->rx_flags |= XR_FRAME_ICRC_VERIFIED;   /* ID 0: a full check */
		return;
	}
	if (xr_icrc_recover_ipv4_id_from(ip, len - XR_ICRC_LEN, icrc, wire, &id))
		return;
	u->ids_recovered++;
	if (u->strict_icrc) {
		f->rx_flags |= XR_FRAME_ICRC_UNVERIFIABLE;
		return;
	}
	put_be16(ip + IP4_OFF_ID, id);
	put_be16(ip + IP4_OFF_CSUM, 0);
	put_be16(ip + IP4_OFF_CSUM, xr_ipv4_csum(ip));
	f->rx_flags |= XR_FRAME_ICRC_ID_RECOVERED | XR_FRAME_ICRC_VERIFIED;
}

/* Slot i of the ring takes frame fr: for the socket, the datagram lands
 * behind room for the headers rebuild_headers writes, with its source and
 * control data beside; for the raw socket (raw_ip_id), behind the Ethernet
 * header, the IPv4 header and all. */
static void rx_arm(struct udp_link *u, unsigned i, struct xr_frame *fr)
{
	struct rx_ring *r = &u->rx;
	size_t off = u->raw_fd >= 0 ? XR_ETH_HLEN : u->hdr;

	r->f[i] = fr;
	r->iov[i].iov_base = fr->data + off;
	r->iov[i].iov_len = sizeof(fr->data) - off;
	memset(&r->msg[i], 0, sizeof(r->msg[i]));
	r->msg[i].msg_hdr.msg_iov = &r->iov[i];
	r->msg[i].msg_hdr.msg_iovlen = 1;
	if (u->raw_fd < 0) {
		r->msg[i].msg_hdr.msg_name = &r->src[i];
		r->msg[i].msg_hdr.msg_namelen = sizeof(r->src[i]);
		r->msg[i].msg_hdr.msg_control = r->ctl[i];
		r->msg[i].msg_hdr.msg_controllen = sizeof(r->ctl[i]);
	}
}

/* After got slots were handed out: fresh frames for them, or, when the
 * pool runs short, the armed frames that are left moved down. */
static void rx_refill(struct udp_link *u, unsigned got)
{
	struct rx_ring *r = &u->rx;
	struct xr_frame *fresh[BURST];
	unsigned keep = r->armed - got, k = pool_get_n(&u->pool, fresh, got + (BURST - r->armed));

	if (k < got) {
		for (unsigned j = 0; j < keep; j++)
			rx_arm(u, k + j, r->f[got + j]);
	}
	for (unsigned j = 0; j < k && j < got; j++)
		rx_arm(u, j, fresh[j]);
	for (unsigned j = got; j < k; j++)   /* the ring was short: filled up again */
		rx_arm(u, keep + j, fresh[j]);
	r->armed = keep + k;
}

/* Ethernet header for a datagram read from the raw socket (raw_ip_id): it
 * arrives with its real IPv4 header (ID included), so the engine checks
 * all 32 ICRC bits. The UDP checksum (outside the ICRC) is cleared as the
 * socket path does: a raw socket gets it unchecked, and locally sent
 * datagrams (loopback, veth) carry it unfinished. */
static void raw_frame(struct udp_link *u, struct xr_frame *f, unsigned len)
{
	memcpy(f->data + ETH_OFF_DMAC, u->link.mac, 6);
	memset(f->data + ETH_OFF_SMAC, 0, 6);
	put_be16(f->data + ETH_OFF_TYPE, XR_ETHERTYPE_IPV4);
	f->len = (uint16_t)(XR_ETH_HLEN + len);
	if (len >= XR_IPV4_HLEN + XR_UDP_HLEN && f->data[XR_ETH_HLEN + IP4_OFF_VER_IHL] == 0x45)
		put_be16(f->data + XR_ETH_HLEN + XR_IPV4_HLEN + UDP_OFF_CSUM, 0);
}

/* A socket datagram's headers, from its source address and control data;
 * a group's (group not NULL) to that group. */
static void socket_frame(struct udp_link *u, struct xr_frame *f, struct msghdr *m, unsigned len,
			 const struct mcast_group *group)
{
	uint8_t dst[16] = { 0 }, tos = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
			memcpy(dst, &((struct in_pktinfo *)CMSG_DATA(c))->ipi_addr, 4);
		else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			tos = *(uint8_t *)CMSG_DATA(c);
		else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO)
			memcpy(dst, &((struct in6_pktinfo *)CMSG_DATA(c))->ipi6_addr, 16);
		else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)
			tos = (uint8_t)*(int *)CMSG_DATA(c);
	}
	if (group)
		memcpy(dst, u->family == AF_INET ? group->gid.raw + 12 : group->gid.raw, u->family == AF_INET ? 4 : 16);
	rebuild_headers(u, f, len, m->msg_name, dst, tos);
	recover_ip_id(u, f);
}

/* A group datagram we sent, come back (the kernel loops multicast to every
 * member of the host, us too): from our address, and from 4791 or an rxe
 * source port, which only our sockets can hold on it. A NIC does not
 * receive its own frames from the medium. */
static bool from_self(const struct udp_link *u, const struct xr_frame *f)
{
	const uint8_t *ip = f->data + XR_ETH_HLEN, *src;
	size_t l4 = XR_ETH_HLEN + (u->family == AF_INET ? (size_t)(ip[IP4_OFF_VER_IHL] & 0xF) * 4 : XR_IPV6_HLEN);
	uint16_t sport;

	if (f->len < l4 + XR_UDP_HLEN)
		return false;
	if (u->family == AF_INET)
		src = (const uint8_t *)&((const struct sockaddr_in *)&u->local)->sin_addr;
	else
		src = (const uint8_t *)&((const struct sockaddr_in6 *)&u->local)->sin6_addr;
	if (memcmp(ip + (u->family == AF_INET ? IP4_OFF_SRC : IP6_OFF_SRC), src, u->family == AF_INET ? 4 : 16))
		return false;
	sport = get_be16(f->data + l4 + UDP_OFF_SPORT);
	return sport == XR_ROCE_UDP_PORT || sport >= RXE_SPORT_BASE;
}

static const struct mcast_group *group_of_fd(const struct udp_link *u, int fd)
{
	for (unsigned i = 0; i < u->groups.n; i++)
		if (u->groups.g[i].fd == fd)
			return &u->groups.g[i];
	return NULL;
}

/* The sockets of groups with datagrams waiting, into the ring's slots from
 * *used on (want at most): frames to f from *out on, to the group's MAC;
 * our own dropped. */
static void groups_recv(struct udp_link *u, struct xr_frame **f, unsigned *used, unsigned *out, unsigned want)
{
	struct rx_ring *r = &u->rx;
	struct epoll_event ev[BURST];
	int ready;

	pthread_mutex_lock(&u->glock);
	ready = epoll_wait(u->group_ep, ev, BURST, 0);
	for (int e = 0; e < ready && *used < want; e++) {
		const struct mcast_group *grp = group_of_fd(u, ev[e].data.fd);
		int got = grp ? recvmmsg(grp->fd, r->msg + *used, want - *used, MSG_DONTWAIT, NULL) : 0;
		for (int i = 0; i < got; i++) {
			unsigned slot = (*used)++;
			struct xr_frame *fr = r->f[slot];
			fr->next = NULL;
			fr->rx_flags = 0;
			if (u->raw_fd >= 0)
				raw_frame(u, fr, r->msg[slot].msg_len);
			else
				socket_frame(u, fr, &r->msg[slot].msg_hdr, r->msg[slot].msg_len, grp);
			if (from_self(u, fr)) {
				u->rx_own_group++;
				pool_put(&u->pool, fr);   /* the slot is refilled as a used one */
				continue;
			}
			memcpy(fr->data + ETH_OFF_DMAC, grp->mac, 6);
			f[(*out)++] = fr;
		}
	}
	pthread_mutex_unlock(&u->glock);
}

/* Empty reads back off: after one, the next RX_SKIP_MAX passes at most
 * (doubling from 1 while the socket stays empty) do not ask the kernel.
 * A pass that skips costs nothing; one that asks an empty socket costs a
 * system call, which an engine spinning for ACKs would otherwise make on
 * every pass. Data resets it, and so does the engine going to sleep on the
 * link's descriptor (udp_wait_fd): the pass after a wakeup always reads. */
#define RX_SKIP_MAX 4
/* ... and 64 while every frame so far came by the host path: there the
 * socket is for a network peer that may never come, and a caller passing
 * in a tight loop (polling its CQ, lingering for an answer) paid a system
 * call in every fifth pass for it, a third of its time in
 * `ib_write_lat`. A first datagram waits 64 passes more at most (a few
 * microseconds), or wakes a sleeping thread through the socket. */
#define RX_SKIP_MAX_LOCAL 64

int udp_socket_recv(struct udp_link *u, struct xr_frame **f, unsigned n)
{
	struct rx_ring *r = &u->rx;
	unsigned want, used, out, max = u->host && !u->rx_net ? RX_SKIP_MAX_LOCAL : RX_SKIP_MAX;
	bool groups;
	int got;

	if (r->skip) {
		r->skip--;
		return 0;
	}
	if (r->armed < BURST)
		rx_refill(u, 0);
	want = n < r->armed ? n : r->armed;
	used = out = 0;
	/* With groups joined, every other pass reads them first: a unicast
	 * stream that fills each batch must not leave them unread. */
	groups = atomic_load_explicit(&u->ngroups, memory_order_acquire) != 0;
	r->groups_first = groups && !r->groups_first;
	if (r->groups_first)
		groups_recv(u, f, &used, &out, want);
	got = used < want ? recvmmsg(u->raw_fd >= 0 ? u->raw_fd : u->fd, r->msg + used, want - used, MSG_DONTWAIT, NULL) : 0;
	for (unsigned i = used; got > 0 && i < used + (unsigned)got; i++) {
		f[out] = r->f[i];
		f[out]->next = NULL;
		f[out]->rx_flags = 0;
		if (u->raw_fd >= 0)
			raw_frame(u, f[out], r->msg[i].msg_len);
		else
			socket_frame(u, f[out], &r->msg[i].msg_hdr, r->msg[i].msg_len, NULL);
		out++;
	}
	used += got > 0 ? (unsigned)got : 0;
	if (groups && !r->groups_first && used < want)
		groups_recv(u, f, &used, &out, want);
	if (!used) {
		r->skip = r->backoff;
		r->backoff = r->backoff ? (r->backoff * 2 > max ? max : r->backoff * 2) : 1;
		return 0;
	}
	r->backoff = 0;
	rx_refill(u, used);
	return (int)out;
}
