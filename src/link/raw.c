/* SPDX-License-Identifier: MIT */
/*
 * The raw Ethernet link (AF_PACKET): whole frames on an interface, as the
 * FPGA's MAC sees them. The link owns an IP address the kernel does not
 * have: it answers ARP requests (IPv4) and neighbour solicitations (IPv6)
 * for it, resolves peers the same way into a small neighbour table (or
 * takes static entries), tags frames 802.1Q when asked (never MAC
 * control frames), sends PFC frames, counts those received and hands MAC
 * control frames (PFC, PAUSE) to the engine, which honours them
 * (docs/pfc.md). Everything else that arrives is ignored.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/sock_diag.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../wire/hdr.h"
#include "mcast_set.h"
#include "pool.h"
#include "touch.h"
#include "xroce/link.h"

#define POOL_FRAMES 4096
#define BURST 32
#define NEIGH_MAX 256
#define PENDING_MAX 512
#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_PFC 0x8808
#define PFC_OPCODE 0x0101
#define RESOLVE_TRIES 10
#define RESOLVE_WAIT_MS 100
/* The receive ring: a slot holds the kernel's header and the largest
 * frame the interface's MTU lets in (RoCE frames are at most XR_MAX_FRAME);
 * RING_BYTES of them in 1 MiB blocks. It is the NIC's receive buffer: a
 * scheduler that holds the engine back for a few milliseconds must not
 * cost frames (with 1500-byte frames: 16384 slots, 256 messages of 64 KiB).
 * A kernel that refuses it gets smaller rings, down to RING_BYTES_MIN. */
#define RING_BYTES (32u << 20)
#define RING_BYTES_MIN (2u << 20)
#define RING_BLOCK_SIZE (1u << 20)

struct neigh {
	xr_gid gid;
	uint8_t mac[6];
	bool used;
};

struct raw_link {
	struct xr_link link;
	int fd, ifindex;
	char ifname[IF_NAMESIZE];
	xr_gid addr;
	uint16_t vid;
	uint8_t pcp;
	struct frame_pool pool;
	pthread_mutex_t lock;          /* the socket's receive side, the tables */
	struct neigh neigh[NEIGH_MAX];
	struct xr_frame *pending[PENDING_MAX];   /* RoCE frames read while resolving */
	unsigned npending;
	uint8_t *ring;                 /* the kernel's receive ring (TPACKET_V2), or NULL */
	unsigned ring_head;            /* the next slot to look at */
	unsigned ring_frames, ring_frame_size;
	uint64_t pfc_rcvd, pending_drops;
	uint64_t ring_drops;           /* frames the kernel found no free slot for */
	struct mcast_set groups;       /* joined: their frames are ours too */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void learn(struct raw_link *r, const xr_gid *gid, const uint8_t mac[6])
{
	struct neigh *free_slot = NULL;

	for (int i = 0; i < NEIGH_MAX; i++) {
		if (r->neigh[i].used && !memcmp(&r->neigh[i].gid, gid, sizeof(*gid))) {
			memcpy(r->neigh[i].mac, mac, 6);
			return;
		}
		if (!r->neigh[i].used && !free_slot)
			free_slot = &r->neigh[i];
	}
	if (!free_slot)
		free_slot = &r->neigh[(gid->raw[15] + gid->raw[14]) % NEIGH_MAX];   /* full: replace one */
	free_slot->gid = *gid;
	memcpy(free_slot->mac, mac, 6);
	free_slot->used = true;
}

static bool lookup(struct raw_link *r, const xr_gid *gid, uint8_t mac[6])
{
	for (int i = 0; i < NEIGH_MAX; i++)
		if (r->neigh[i].used && !memcmp(&r->neigh[i].gid, gid, sizeof(*gid))) {
			memcpy(mac, r->neigh[i].mac, 6);
			return true;
		}
	return false;
}

/* Sends one frame built here (ARP, NA, PFC), tagged when configured. */
static int send_raw(struct raw_link *r, uint8_t *frame, size_t len)
{
	uint8_t buf[128 + XR_VLAN_HLEN];

	if (r->vid && len <= 128) {
		memcpy(buf, frame, 12);
		put_be16(buf + 12, XR_ETHERTYPE_VLAN);
		put_be16(buf + 14, vlan_tci(r->pcp, false, r->vid));
		memcpy(buf + 16, frame + 12, len - 12);
		frame = buf;
		len += XR_VLAN_HLEN;
	}
	return send(r->fd, frame, len, MSG_DONTWAIT) == (ssize_t)len ? 0 : -errno;
}

/* ---- ARP (RFC 826) ---- */

static void arp_send(struct raw_link *r, uint16_t op, const uint8_t tha[6], uint32_t tpa, const uint8_t dmac[6])
{
	uint8_t f[60] = { 0 }, *a = f + XR_ETH_HLEN;

	memcpy(f, dmac, 6);
	memcpy(f + 6, r->link.mac, 6);
	put_be16(f + 12, ETHERTYPE_ARP);
	put_be16(a, 1);                /* Ethernet */
	put_be16(a + 2, XR_ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	put_be16(a + 6, op);
	memcpy(a + 8, r->link.mac, 6);
	memcpy(a + 14, r->addr.raw + 12, 4);
	memcpy(a + 18, tha, 6);
	put_be32(a + 24, tpa);
	send_raw(r, f, sizeof(f));
}

static void arp_input(struct raw_link *r, const uint8_t *a, size_t len)
{
	xr_gid sender;
	uint16_t op;

	if (len < 28 || get_be16(a) != 1 || get_be16(a + 2) != XR_ETHERTYPE_IPV4 || a[4] != 6 || a[5] != 4)
		return;
	op = get_be16(a + 6);
	xr_gid_from_ipv4(&sender, get_be32(a + 14));
	if (memcmp(a + 24, r->addr.raw + 12, 4))
		return;   /* not about us */
	learn(r, &sender, a + 8);
	if (op == 1)
		arp_send(r, 2, a + 8, get_be32(a + 14), a + 8);
}

/* ---- IPv6 neighbour discovery (RFC 4861) ---- */

/* An NS (type 135) or NA (136) about target, with our link-layer address. */
static void nd_send(struct raw_link *r, uint8_t type, const uint8_t *target, const uint8_t *dst_ip,
		    const uint8_t dmac[6], bool solicited)
{
	uint8_t f[XR_ETH_HLEN + XR_IPV6_HLEN + 32] = { 0 }, *ip = f + XR_ETH_HLEN, *icmp = ip + XR_IPV6_HLEN;

	memcpy(f, dmac, 6);
	memcpy(f + 6, r->link.mac, 6);
	put_be16(f + 12, XR_ETHERTYPE_IPV6);
	ip6_set_vtf(ip, 0, 0);
	put_be16(ip + IP6_OFF_PAYLEN, 32);
	ip[IP6_OFF_NEXTHDR] = 58;
	ip[IP6_OFF_HOPLIM] = 255;
	memcpy(ip + IP6_OFF_SRC, r->addr.raw, 16);
	memcpy(ip + IP6_OFF_DST, dst_ip, 16);
	icmp[0] = type;
	if (type == 136)
		icmp[4] = (uint8_t)(0x20 | (solicited ? 0x40 : 0));   /* override, solicited */
	memcpy(icmp + 8, target, 16);
	icmp[24] = type == 135 ? 1 : 2;   /* source / target link-layer address option */
	icmp[25] = 1;
	memcpy(icmp + 26, r->link.mac, 6);
	put_be16(icmp + 2, xr_icmp6_csum(ip + IP6_OFF_SRC, ip + IP6_OFF_DST, icmp, 32));
	send_raw(r, f, sizeof(f));
}

static void nd_input(struct raw_link *r, const uint8_t *ip, size_t len)
{
	const uint8_t *icmp = ip + XR_IPV6_HLEN, *opt;
	size_t ilen;
	xr_gid who;

	if (len < XR_IPV6_HLEN + 24 || ip[IP6_OFF_NEXTHDR] != 58 || ip[IP6_OFF_HOPLIM] != 255)
		return;
	ilen = len - XR_IPV6_HLEN;
	if (get_be16(ip + IP6_OFF_PAYLEN) < ilen)
		ilen = get_be16(ip + IP6_OFF_PAYLEN);
	if (ilen < 24 || (icmp[0] != 135 && icmp[0] != 136))
		return;
	if (xr_icmp6_csum(ip + IP6_OFF_SRC, ip + IP6_OFF_DST, icmp, ilen) != 0 &&
	    xr_icmp6_csum(ip + IP6_OFF_SRC, ip + IP6_OFF_DST, icmp, ilen) != 0xFFFF) {
		/* A valid message sums to zero with its checksum in place. */
		uint8_t tmp[256];
		if (ilen > sizeof(tmp))
			return;
		memcpy(tmp, icmp, ilen);
		put_be16(tmp + 2, 0);
		if (xr_icmp6_csum(ip + IP6_OFF_SRC, ip + IP6_OFF_DST, tmp, ilen) != get_be16(icmp + 2))
			return;
	}
	opt = ilen >= 32 && icmp[25] == 1 ? icmp + 26 : NULL;
	if (icmp[0] == 135) {
		if (memcmp(icmp + 8, r->addr.raw, 16))
			return;
		memcpy(who.raw, ip + IP6_OFF_SRC, 16);
		if (opt)
			learn(r, &who, opt);
		if (opt)
			nd_send(r, 136, r->addr.raw, ip + IP6_OFF_SRC, opt, true);
	} else if (opt) {
		memcpy(who.raw, icmp + 8, 16);
		learn(r, &who, opt);
	}
}

/* ---- receive ---- */

/* Looks at one received frame: answers ARP/ND, counts PFC, drops other
 * VLANs and traffic not for our MAC. True for a frame the engine should
 * see; an in-band VLAN tag is then taken out (*len shrinks). */
static bool rx_classify(struct raw_link *r, uint8_t *d, size_t *len, bool tagged, uint16_t vlan)
{
	uint16_t type;

	if (*len < XR_ETH_HLEN)
		return false;
	type = get_be16(d + ETH_OFF_TYPE);
	if (type == XR_ETHERTYPE_VLAN && *len >= XR_ETH_HLEN + XR_VLAN_HLEN) {
		/* A tag left in the frame: take it out, the engine wants it plain. */
		tagged = true;
		vlan = get_be16(d + 14) & 0xFFF;
		memmove(d + 12, d + 16, *len - 16);
		*len -= XR_VLAN_HLEN;
		type = get_be16(d + ETH_OFF_TYPE);
	}
	if (type == ETHERTYPE_PFC) {
		/* MAC control (PFC, PAUSE; never tagged): counted, and to the
		 * engine when addressed to the MAC control group or to us (the
		 * engine honours or drops it, counted, docs/pfc.md). */
		static const uint8_t mac_ctrl_dst[6] = { 0x01, 0x80, 0xC2, 0x00, 0x00, 0x01 };
		if (*len >= XR_ETH_HLEN + 4 && get_be16(d + XR_ETH_HLEN) == PFC_OPCODE)
			r->pfc_rcvd++;
		return !memcmp(d, mac_ctrl_dst, 6) || !memcmp(d, r->link.mac, 6);
	}
	if ((r->vid && (!tagged || vlan != r->vid)) || (!r->vid && tagged && vlan))
		return false;   /* another VLAN */
	if (type == ETHERTYPE_ARP) {
		arp_input(r, d + XR_ETH_HLEN, *len - XR_ETH_HLEN);
	} else if (type == XR_ETHERTYPE_IPV6 && *len > XR_ETH_HLEN + XR_IPV6_HLEN &&
		   d[XR_ETH_HLEN + IP6_OFF_NEXTHDR] == 58) {
		nd_input(r, d + XR_ETH_HLEN, *len - XR_ETH_HLEN);
	} else if ((type == XR_ETHERTYPE_IPV4 || type == XR_ETHERTYPE_IPV6) &&
		   (!memcmp(d, r->link.mac, 6) || mcast_set_match(&r->groups, d, *len, r->link.mac))) {
		return true;   /* for us: the engine's parser decides the rest */
	}
	return false;
}

/* A frame for the engine: to out while there is room, else kept pending
 * (frames read while resolving a neighbour), else dropped and counted. */
static void rx_deliver(struct raw_link *r, struct xr_frame *fr, struct xr_frame **out, unsigned *delivered,
		       unsigned max)
{
	if (*delivered < max)
		out[(*delivered)++] = fr;
	else if (r->npending < PENDING_MAX)
		r->pending[r->npending++] = fr;
	else {
		r->pending_drops++;
		r->link.stats.rx_drops++;
		pool_put(&r->pool, fr);
	}
}

/* The kernel flags a frame TP_STATUS_LOSING when it dropped some since
 * its counters were last read: read them (which resets them) and count. */
static void count_ring_drops(struct raw_link *r)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 && st.tp_drops) {
		r->ring_drops += st.tp_drops;
		r->link.stats.rx_drops += st.tp_drops;
	}
}

/* With the kernel's receive ring: no system call per frame or per poll;
 * the kernel writes frames into shared memory and we hand slots back. */
static unsigned rx_ring_step(struct raw_link *r, struct xr_frame **out, unsigned max)
{
	unsigned delivered = 0;

	{
		/* A full ring (the slot behind the head is ours too) may have
		 * dropped frames, and no later frame may come to say so. */
		const struct tpacket2_hdr *last = (const void *)(r->ring + (size_t)((r->ring_head + r->ring_frames - 1) %
										    r->ring_frames) * r->ring_frame_size);
		if (__atomic_load_n(&last->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)
			count_ring_drops(r);
	}
	for (unsigned seen = 0; seen < r->ring_frames && (delivered < max || !max); seen++) {
		struct tpacket2_hdr *h = (struct tpacket2_hdr *)(r->ring + (size_t)r->ring_head * r->ring_frame_size);
		uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
		if (!(status & TP_STATUS_USER))
			break;
		if (status & TP_STATUS_LOSING)
			count_ring_drops(r);
		{
			uint8_t *d = (uint8_t *)h + h->tp_mac;
			/* A frame longer than any RoCE frame (or than the ring's
			 * slot) goes up cut short, as the recvmmsg path does: its
			 * IP length then disagrees and the parser counts it
			 * (rx_drop_bad_ip_len) instead of it vanishing here. */
			size_t len = h->tp_snaplen < XR_MAX_FRAME ? h->tp_snaplen : XR_MAX_FRAME;
			bool tagged = h->tp_status & TP_STATUS_VLAN_VALID;
			if (rx_classify(r, d, &len, tagged, h->tp_vlan_tci & 0xFFF)) {
				struct xr_frame *fr = pool_get(&r->pool);
				if (fr) {
					memcpy(fr->data, d, len);
					fr->len = (uint16_t)len;
					rx_deliver(r, fr, out, &delivered, max);
				} else {
					r->pending_drops++;   /* the engine holds every frame: as a full queue */
					r->link.stats.rx_drops++;
				}
			}
		}
		__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		r->ring_head = (r->ring_head + 1) % r->ring_frames;
	}
	return delivered;
}

/* Without the ring: a recvmmsg burst into frames from the pool. */
static unsigned rx_mmsg_step(struct raw_link *r, struct xr_frame **out, unsigned max)
{
	struct mmsghdr msg[BURST];
	struct iovec iov[BURST];
	char ctl[BURST][CMSG_SPACE(sizeof(struct tpacket_auxdata))];
	struct xr_frame *f[BURST];
	unsigned have, delivered = 0;
	int got;

	have = pool_get_n(&r->pool, f, BURST);
	for (unsigned i = 0; i < have; i++) {
		iov[i].iov_base = f[i]->data;
		iov[i].iov_len = sizeof(f[i]->data);
		memset(&msg[i], 0, sizeof(msg[i]));
		msg[i].msg_hdr.msg_iov = &iov[i];
		msg[i].msg_hdr.msg_iovlen = 1;
		msg[i].msg_hdr.msg_control = ctl[i];
		msg[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
	}
	got = have ? recvmmsg(r->fd, msg, have, MSG_DONTWAIT, NULL) : 0;
	if (got < 0)
		got = 0;
	for (int i = 0; i < got; i++) {
		struct xr_frame *fr = f[i];
		uint16_t vlan = 0;
		bool tagged = false;
		size_t len = msg[i].msg_len;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg[i].msg_hdr); c; c = CMSG_NXTHDR(&msg[i].msg_hdr, c)) {
			if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA) {
				struct tpacket_auxdata aux;
				memcpy(&aux, CMSG_DATA(c), sizeof(aux));
				if (aux.tp_status & TP_STATUS_VLAN_VALID) {
					tagged = true;
					vlan = aux.tp_vlan_tci & 0xFFF;
				}
			}
		}
		if (rx_classify(r, fr->data, &len, tagged, vlan)) {
			fr->len = (uint16_t)len;
			rx_deliver(r, fr, out, &delivered, max);
		} else {
			pool_put(&r->pool, fr);
		}
	}
	if ((unsigned)got < have)
		pool_put_n(&r->pool, f + got, have - (unsigned)got);
	return delivered;
}

/* Asks the kernel for a receive ring; without one (an old kernel, no
 * memory for it) the link reads with recvmmsg instead. */
static unsigned ring_slot_size(uint32_t mtu)
{
	/* header, room for a VLAN tag the kernel may put back, the frame */
	size_t need = TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 + (mtu + 18u < XR_MAX_FRAME ? mtu + 18u : XR_MAX_FRAME);
	unsigned slot = 2048;

	while (slot < need)
		slot *= 2;
	return slot;
}

static void ring_open(struct raw_link *r)
{
	int version = TPACKET_V2;
	unsigned slot = ring_slot_size(r->link.mtu);
	void *m;

	if (getenv("XROCE_RAW_NO_RING") ||   /* to measure and test the other path */
	    setsockopt(r->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)))
		return;
	for (unsigned bytes = RING_BYTES; bytes >= RING_BYTES_MIN; bytes /= 2) {
		struct tpacket_req req = { .tp_block_size = RING_BLOCK_SIZE, .tp_block_nr = bytes / RING_BLOCK_SIZE,
					   .tp_frame_size = slot, .tp_frame_nr = bytes / slot };
		if (setsockopt(r->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)))
			continue;
		m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (m == MAP_FAILED) {
			struct tpacket_req none = { 0 };
			setsockopt(r->fd, SOL_PACKET, PACKET_RX_RING, &none, sizeof(none));
			continue;
		}
		/* Paged in now, not frame by frame in the first traffic: a
		 * ping-pong's first thousand round trips took 16 us, not 12. */
		xr_pages_touch(m, bytes, false);
		r->ring = m;
		r->ring_head = 0;
		r->ring_frames = req.tp_frame_nr;
		r->ring_frame_size = slot;
		return;
	}
}

/* Reads what the socket has; RoCE frames go to out (or pending). */
static unsigned rx_step(struct raw_link *r, struct xr_frame **out, unsigned max)
{
	return r->ring ? rx_ring_step(r, out, max) : rx_mmsg_step(r, out, max);
}

static int raw_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct raw_link *r = l->priv;
	unsigned got = 0;

	pthread_mutex_lock(&r->lock);
	while (got < n && r->npending) {
		f[got++] = r->pending[0];
		memmove(r->pending, r->pending + 1, --r->npending * sizeof(r->pending[0]));
	}
	if (got < n)
		got += rx_step(r, f + got, n - got);
	pthread_mutex_unlock(&r->lock);
	l->stats.rx_frames += got;
	return (int)got;
}

static int raw_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct raw_link *r = l->priv;
	struct mmsghdr msg[BURST];
	struct iovec iov[BURST];
	unsigned k = n < BURST ? n : BURST;
	uint32_t tagged = 0;   /* frames tagged here, untagged again if they stay the caller's */
	int sent;

	_Static_assert(BURST <= 32, "the tagged mask holds a burst");
	for (unsigned i = 0; i < k; i++) {
		struct xr_frame *fr = f[i];
		uint16_t type = get_be16(fr->data + ETH_OFF_TYPE);
		/* PFC and PAUSE frames (the engine's XOFF/XON) are never tagged. */
		if (r->vid && type != XR_ETHERTYPE_VLAN && type != ETHERTYPE_PFC) {
			memmove(fr->data + 16, fr->data + 12, fr->len - 12u);
			put_be16(fr->data + 12, XR_ETHERTYPE_VLAN);
			put_be16(fr->data + 14, vlan_tci(r->pcp, false, r->vid));
			fr->len += XR_VLAN_HLEN;
			tagged |= 1u << i;
		}
		iov[i].iov_base = fr->data;
		iov[i].iov_len = fr->len;
		memset(&msg[i], 0, sizeof(msg[i]));
		msg[i].msg_hdr.msg_iov = &iov[i];
		msg[i].msg_hdr.msg_iovlen = 1;
	}
	sent = sendmmsg(r->fd, msg, k, MSG_DONTWAIT);
	if (sent < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR) {
			/* Untag what stays the caller's: it is sent again later. */
			for (unsigned i = 0; i < k; i++) {
				if (!(tagged & (1u << i)))
					continue;
				memmove(f[i]->data + 12, f[i]->data + 16, f[i]->len - 16u);
				f[i]->len -= XR_VLAN_HLEN;
			}
			return 0;
		}
		sent = 1;   /* this frame cannot go: dropped, counted */
		l->stats.tx_drops++;
	}
	for (unsigned i = (unsigned)sent; i < k; i++) {
		if (!(tagged & (1u << i)))
			continue;
		memmove(f[i]->data + 12, f[i]->data + 16, f[i]->len - 16u);
		f[i]->len -= XR_VLAN_HLEN;
	}
	pool_put_n(&r->pool, f, (unsigned)sent);
	l->stats.tx_frames += (uint64_t)sent;
	return sent;
}

static int raw_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	struct raw_link *r = l->priv;
	static const uint8_t bcast[6] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF }, zero[6] = { 0 };

	for (int attempt = 0; attempt < RESOLVE_TRIES; attempt++) {
		uint64_t until;
		pthread_mutex_lock(&r->lock);
		if (lookup(r, gid, mac)) {
			pthread_mutex_unlock(&r->lock);
			return 0;
		}
		if (xr_gid_is_ipv4(gid)) {
			arp_send(r, 1, zero, xr_gid_to_ipv4(gid), bcast);
		} else {
			/* To the solicited-node multicast group of the target. */
			uint8_t dst[16] = { 0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF };
			uint8_t dmac[6] = { 0x33, 0x33, 0xFF };
			memcpy(dst + 13, gid->raw + 13, 3);
			memcpy(dmac + 3, gid->raw + 13, 3);
			nd_send(r, 135, gid->raw, dst, dmac, false);
		}
		pthread_mutex_unlock(&r->lock);
		until = now_ms() + RESOLVE_WAIT_MS;
		while (now_ms() < until) {
			struct pollfd p = { r->fd, POLLIN, 0 };
			poll(&p, 1, 10);
			pthread_mutex_lock(&r->lock);
			rx_step(r, NULL, 0);   /* RoCE frames go to pending for the engine */
			if (lookup(r, gid, mac)) {
				pthread_mutex_unlock(&r->lock);
				return 0;
			}
			pthread_mutex_unlock(&r->lock);
		}
	}
	return -EHOSTUNREACH;
}

static int raw_wait_fd(struct xr_link *l)
{
	return ((struct raw_link *)l->priv)->fd;
}

static struct xr_frame *raw_alloc(struct xr_link *l)
{
	return pool_get(&((struct raw_link *)l->priv)->pool);
}

static void raw_free(struct xr_link *l, struct xr_frame *f)
{
	pool_put(&((struct raw_link *)l->priv)->pool, f);
}

static bool raw_is_up(struct xr_link *l)
{
	struct raw_link *r = l->priv;
	struct ifreq ifr;

	/* Asked through the link's own socket: the answer is from its namespace. */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", r->ifname);
	return ioctl(r->fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
}

static void raw_close(struct xr_link *l)
{
	struct raw_link *r = l->priv;

	for (unsigned i = 0; i < r->npending; i++)
		pool_put(&r->pool, r->pending[i]);
	if (r->ring)
		munmap(r->ring, (size_t)r->ring_frames * r->ring_frame_size);
	close(r->fd);
	pool_fini(&r->pool);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Frames the kernel holds for us: with the receive ring, the slots it has
 * filled and we have not read (they run contiguously from ring_head, so a
 * binary search finds the end); without it, the socket's receive memory
 * against its buffer (SO_MEMINFO; SIOCINQ on a packet socket tells only
 * the next frame's length). */
static int raw_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	struct raw_link *r = l->priv;

	if (r->ring) {
		unsigned lo = 0, hi = r->ring_frames;   /* slots [head, head+lo) are ours */
		pthread_mutex_lock(&r->lock);
		while (lo < hi) {
			unsigned mid = (lo + hi + 1) / 2, slot = (r->ring_head + mid - 1) % r->ring_frames;
			const struct tpacket2_hdr *h = (const void *)(r->ring + (size_t)slot * r->ring_frame_size);
			if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)
				lo = mid;
			else
				hi = mid - 1;
		}
		*queued = lo + r->npending;   /* frames read while resolving wait too */
		pthread_mutex_unlock(&r->lock);
		*capacity = r->ring_frames;
		return 0;
	}
#ifdef SO_MEMINFO
	{
		uint32_t mi[SK_MEMINFO_VARS];
		socklen_t sl = sizeof(mi);
		if (getsockopt(r->fd, SOL_SOCKET, SO_MEMINFO, mi, &sl) < 0)
			return -errno;
		*queued = mi[SK_MEMINFO_RMEM_ALLOC];
		*capacity = mi[SK_MEMINFO_RCVBUF];
		return 0;
	}
#else
	return -EOPNOTSUPP;
#endif
}

/* A group's MAC joins the socket's memberships (the link asks for all
 * multicast at open too, but a driver may refuse that). */
static int raw_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	struct raw_link *r = l->priv;
	int i, err = 0;

	pthread_mutex_lock(&r->lock);
	i = join ? mcast_set_can_add(&r->groups, group) : mcast_set_find(&r->groups, group);
	if (i >= 0) {
		err = mcast_packet_membership(r->fd, r->ifindex, group, join);
		if (join && !err)
			mcast_set_add(&r->groups, group, -1);
		else if (!join)
			mcast_set_del(&r->groups, (unsigned)i);   /* left, whatever the kernel said */
	}
	pthread_mutex_unlock(&r->lock);
	return i < 0 ? i : err;
}

static const struct xr_link_ops raw_ops = {
	raw_send, raw_recv, raw_wait_fd, raw_alloc, raw_free, raw_is_up, raw_close, raw_resolve, raw_rx_backlog, NULL,
	NULL, NULL, NULL, raw_mcast,
};

struct xr_link *xr_link_raw(const char *ifname, const char *addr, uint16_t vid, uint8_t pcp)
{
	struct raw_link *r;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct packet_mreq mr = { .mr_type = PACKET_MR_ALLMULTI };
	struct ifreq ifr;
	int one = 1, err;

	if (!ifname || !addr || vid > 4094 || pcp > 7 || strlen(ifname) >= IF_NAMESIZE) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	if (xr_gid_parse(&r->addr, addr)) {
		free(r);
		errno = EINVAL;
		return NULL;
	}
	snprintf(r->ifname, sizeof(r->ifname), "%s", ifname);
	r->ifindex = (int)if_nametoindex(ifname);
	if (!r->ifindex) {
		free(r);
		errno = ENODEV;
		return NULL;
	}
	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (r->fd < 0) {
		err = errno;
		free(r);
		errno = err;   /* EPERM without CAP_NET_RAW */
		return NULL;
	}
	sll.sll_ifindex = r->ifindex;
	mr.mr_ifindex = r->ifindex;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (bind(r->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 || ioctl(r->fd, SIOCGIFHWADDR, &ifr) < 0) {
		err = errno;
		close(r->fd);
		free(r);
		errno = err;
		return NULL;
	}
	memcpy(r->link.mac, ifr.ifr_hwaddr.sa_data, 6);
	r->link.mtu = ioctl(r->fd, SIOCGIFMTU, &ifr) == 0 ? (uint32_t)ifr.ifr_mtu : 1500;
	setsockopt(r->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one));
	setsockopt(r->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr));
#ifdef PACKET_IGNORE_OUTGOING
	setsockopt(r->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
#endif
	{
		int buf = 4 << 20;
		setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
		setsockopt(r->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	}
	ring_open(r);
	if (pool_init(&r->pool, POOL_FRAMES)) {
		close(r->fd);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->vid = vid;
	r->pcp = pcp;
	r->link.ops = &raw_ops;
	r->link.kind = "raw";
	r->link.priv = r;
	return &r->link;
}

int xr_link_raw_add_neigh(struct xr_link *l, const xr_gid *gid, const uint8_t mac[6])
{
	struct raw_link *r;

	if (!l || l->ops != &raw_ops || !gid || !mac)
		return -EINVAL;
	r = l->priv;
	pthread_mutex_lock(&r->lock);
	learn(r, gid, mac);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int xr_link_raw_send_pfc(struct xr_link *l, uint8_t prio_mask, uint16_t quanta)
{
	uint8_t f[XR_MAC_CTRL_FRAME];
	struct raw_link *r;
	int rc;

	if (!l || l->ops != &raw_ops)
		return -EINVAL;
	r = l->priv;
	xr_build_pfc_frame(f, l->mac, prio_mask, quanta);
	pthread_mutex_lock(&r->lock);
	rc = send(r->fd, f, sizeof(f), MSG_DONTWAIT) == (ssize_t)sizeof(f) ? 0 : -errno;   /* PFC is never tagged */
	pthread_mutex_unlock(&r->lock);
	return rc;
}

uint64_t xr_link_raw_pfc_rcvd(struct xr_link *l)
{
	return (l && l->ops == &raw_ops) ? ((struct raw_link *)l->priv)->pfc_rcvd : 0;
}
