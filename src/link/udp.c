/* SPDX-License-Identifier: MIT */
/*
 * The UDP link: RoCE v2 over a kernel UDP socket on port 4791 (see
 * xr_link_udp in link.h for the contract, the source-port rule and the
 * IPv4 ID trade-off). Frames cross as UDP payloads, in batches
 * (sendmmsg/recvmmsg); received datagrams are placed in frames behind
 * rebuilt Ethernet/IP/UDP headers, so no payload byte is copied. The
 * receive batch stays armed between calls (struct rx_ring) and empty reads
 * back off for a few calls, so an engine polling for ACKs does not pay a
 * system call and 32 frames' bookkeeping on every pass.
 *
 * No UDP GSO or GRO: RoCE v2 datagrams carry UDP checksum 0, and Linux
 * offers neither to them. A GSO send on a socket with checksums off fails
 * with EINVAL (tried on this project's 6.18 kernel), and UDP GRO leaves
 * checksum-0 datagrams alone ("for symmetry with GSO"). GSO would also
 * clash with the ICRC, which covers each segment's IPv4 ID, set by
 * whoever segments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../wire/hdr.h"
#include "host.h"
#include "pool.h"
#include "udp_socket.h"
#include "xroce/link.h"

#define POOL_FRAMES 4096
#define BURST 32
#define RXE_SPORT_BASE 0xC000u
#define RXE_SPORTS 0x4000u

/* The receive side's armed batch: BURST pool frames with their message
 * headers, made once and re-armed only where a datagram landed, so a
 * recvmmsg that finds nothing costs the system call alone (no frames taken
 * from the pool and put back, no headers rebuilt). Used by one engine pass
 * at a time, as the link's recv is. */
struct rx_ring {
	struct xr_frame *f[BURST];
	struct mmsghdr msg[BURST];
	struct iovec iov[BURST];
	struct sockaddr_in6 src[BURST];   /* holds a sockaddr_in too */
	char ctl[BURST][128];             /* PKTINFO and TOS/TCLASS: 64 bytes at most (IPv6) */
	unsigned armed;                   /* slots 0..armed-1 hold a frame */
	unsigned skip, backoff;           /* empty reads: passes left to skip, the next skip */
};

struct udp_link {
	struct xr_link link;
	int fd, family;
	struct sockaddr_storage local;
	size_t hdr;                   /* Ethernet + IP + UDP bytes rebuilt on receive */
	struct frame_pool pool;
	pthread_mutex_t lock;
	int *sport_fd;                /* one socket per rxe source port: SPORT_UNTRIED, SPORT_FAILED or the fd */
	uint64_t sport_retry_ns;      /* when ports that could not be had are tried again */
	int netns;                    /* the network namespace it was opened in (-1: unknown) */
	int raw_fd;                   /* IPv4 raw_ip_id: receives with the real IP header; else -1 */
	bool strict_icrc;
	uint64_t sport_fallbacks, ids_recovered;
	struct host_ep *host;         /* local xroce peers: through shared memory; NULL: off */
	int wait_ep;                  /* with host: an epoll set of the socket and the host eventfd */
	uint64_t tx_net, rx_net;
	struct rx_ring rx;
};

#define SPORT_UNTRIED (-1)
#define SPORT_FAILED (-2)
/* A port that could not be had is tried again this much later, not per
 * packet: the cause may pass (descriptors or threads exhausted for a
 * moment, a program that held the port gone). */
#define SPORT_RETRY_NS 1000000000ull

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The socket that sends from sport; the 4791 one while sport cannot be had. */
static int socket_for(struct udp_link *u, uint16_t sport)
{
	int *slot, fd;

	if (sport == XR_ROCE_UDP_PORT || sport < RXE_SPORT_BASE)
		return u->fd;
	slot = &u->sport_fd[sport - RXE_SPORT_BASE];
	if (*slot >= 0)
		return *slot;
	if (*slot == SPORT_FAILED && mono_ns() < u->sport_retry_ns)
		return u->fd;
	fd = udp_socket_open_in(u->netns, &u->local, sport);
	if (fd < 0) {
		u->sport_fallbacks++;
		*slot = SPORT_FAILED;
		u->sport_retry_ns = mono_ns() + SPORT_RETRY_NS;
		return u->fd;
	}
	*slot = fd;
	return fd;
}

static size_t l3_offset(const struct xr_frame *f)
{
	return get_be16(f->data + ETH_OFF_TYPE) == XR_ETHERTYPE_VLAN ? XR_ETH_HLEN + XR_VLAN_HLEN : XR_ETH_HLEN;
}

/* The kernel sends from 4791 when the rxe port is taken: the ICRC covers
 * the source port, so patch both. The ICRC is updated for the two bytes,
 * not recomputed: no second pass over every packet. */
static void patch_sport(struct xr_frame *f, size_t l4, uint16_t sport)
{
	size_t l3 = l3_offset(f), len = f->len - l3 - XR_ICRC_LEN;
	uint8_t *port = f->data + l4 + UDP_OFF_SPORT, was[2] = { port[0], port[1] };
	uint32_t icrc = get_le32(f->data + f->len - XR_ICRC_LEN);

	put_be16(port, sport);
	put_le32(f->data + f->len - XR_ICRC_LEN, xr_icrc_update(icrc, len, l4 + UDP_OFF_SPORT - l3, was, port, 2));
}

/* The destination of frame fr as a socket address: prev (the burst's
 * previous frame's) when it is the same, as it is for a stream to one
 * peer; else written to slot. */
static void *dst_of(const struct udp_link *u, const struct xr_frame *fr, size_t l3, size_t l4,
		    struct sockaddr_in6 *slot, void *prev)
{
	uint16_t port = htons(get_be16(fr->data + l4 + UDP_OFF_DPORT));

	if (u->family == AF_INET) {
		struct sockaddr_in *p = prev, *d = (struct sockaddr_in *)slot;
		if (p && p->sin_port == port && !memcmp(&p->sin_addr, fr->data + l3 + IP4_OFF_DST, 4))
			return p;
		memset(d, 0, sizeof(*d));
		d->sin_family = AF_INET;
		memcpy(&d->sin_addr, fr->data + l3 + IP4_OFF_DST, 4);
		d->sin_port = port;
	} else {
		struct sockaddr_in6 *p = prev;
		if (p && p->sin6_port == port && !memcmp(&p->sin6_addr, fr->data + l3 + IP6_OFF_DST, 16))
			return p;
		memset(slot, 0, sizeof(*slot));
		slot->sin6_family = AF_INET6;
		memcpy(&slot->sin6_addr, fr->data + l3 + IP6_OFF_DST, 16);
		slot->sin6_port = port;
	}
	return slot;
}

static int udp_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct udp_link *u = l->priv;
	struct mmsghdr msg[BURST];
	struct iovec iov[BURST];
	struct sockaddr_in6 dst[BURST];   /* holds a sockaddr_in too */
	unsigned done = 0;

	pthread_mutex_lock(&u->lock);
	while (done < n) {
		unsigned k = 0;
		int fd = -1, sent;
		if (u->host) {
			/* Frames to local xroce devices go through shared memory. */
			bool not_local;
			unsigned h = host_ep_send(u->host, f + done, n - done, false, &not_local);
			pool_put_n(&u->pool, f + done, h);
			done += h;
			if (done == n || !not_local)
				break;   /* all sent, or a local peer's ring is full */
		}
		/* A batch: consecutive frames that leave through the same socket. */
		while (done + k < n && k < BURST) {
			struct xr_frame *fr = f[done + k];
			size_t l3 = l3_offset(fr), l4 = l3 + (u->family == AF_INET ? XR_IPV4_HLEN : XR_IPV6_HLEN);
			uint16_t sport = get_be16(fr->data + l4 + UDP_OFF_SPORT);
			int sfd;
			if (k && u->host && host_ep_is_local(u->host, fr))
				break;
			sfd = socket_for(u, sport);
			if (fd >= 0 && sfd != fd)
				break;
			fd = sfd;
			if (sfd == u->fd && sport != XR_ROCE_UDP_PORT)
				patch_sport(fr, l4, XR_ROCE_UDP_PORT);
			iov[k].iov_base = fr->data + l4 + XR_UDP_HLEN;
			iov[k].iov_len = fr->len - l4 - XR_UDP_HLEN;
			memset(&msg[k], 0, sizeof(msg[k]));
			msg[k].msg_hdr.msg_name = dst_of(u, fr, l3, l4, &dst[k], k ? msg[k - 1].msg_hdr.msg_name : NULL);
			msg[k].msg_hdr.msg_namelen = u->family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
			msg[k].msg_hdr.msg_iov = &iov[k];
			msg[k].msg_hdr.msg_iovlen = 1;
			k++;
		}
		sent = sendmmsg(fd, msg, k, MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR)
				break;   /* full: the caller keeps the rest */
			sent = 1;    /* this frame cannot go (unreachable, too big): drop it, counted */
			l->stats.tx_drops++;
		}
		pool_put_n(&u->pool, f + done, (unsigned)sent);
		done += (unsigned)sent;
		u->tx_net += (unsigned)sent;
		if ((unsigned)sent < k)
			break;
	}
	pthread_mutex_unlock(&u->lock);
	l->stats.tx_frames += done;
	return (int)done;
}

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

/* A socket datagram's headers, from its source address and control data. */
static void socket_frame(struct udp_link *u, struct xr_frame *f, struct msghdr *m, unsigned len)
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
	rebuild_headers(u, f, len, m->msg_name, dst, tos);
	recover_ip_id(u, f);
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

static int socket_recv(struct udp_link *u, struct xr_frame **f, unsigned n)
{
	struct rx_ring *r = &u->rx;
	unsigned want, max = u->host && !u->rx_net ? RX_SKIP_MAX_LOCAL : RX_SKIP_MAX;
	int got;

	if (r->skip) {
		r->skip--;
		return 0;
	}
	if (r->armed < BURST)
		rx_refill(u, 0);
	want = n < r->armed ? n : r->armed;
	got = want ? recvmmsg(u->raw_fd >= 0 ? u->raw_fd : u->fd, r->msg, want, MSG_DONTWAIT, NULL) : 0;
	if (got <= 0) {
		r->skip = r->backoff;
		r->backoff = r->backoff ? (r->backoff * 2 > max ? max : r->backoff * 2) : 1;
		return 0;
	}
	r->backoff = 0;
	for (int i = 0; i < got; i++) {
		f[i] = r->f[i];
		f[i]->next = NULL;
		f[i]->rx_flags = 0;
		if (u->raw_fd >= 0)
			raw_frame(u, f[i], r->msg[i].msg_len);
		else
			socket_frame(u, f[i], &r->msg[i].msg_hdr, r->msg[i].msg_len);
	}
	rx_refill(u, (unsigned)got);
	return got;
}

static int udp_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct udp_link *u = l->priv;
	unsigned got = 0;
	int net;

	if (u->host)   /* addressed to our MAC by the sender's host path; read only */
		got = host_ep_recv(u->host, f, n);
	net = got < n ? socket_recv(u, f + got, n - got) : 0;
	u->rx_net += (uint64_t)net;
	got += (unsigned)net;
	l->stats.rx_frames += got;
	return (int)got;
}

static int udp_wait_fd(struct xr_link *l)
{
	struct udp_link *u = l->priv;

	u->rx.skip = 0;   /* the pass after a wakeup reads the socket */
	u->rx.backoff = 0;
	if (u->host) {
		host_ep_wait_fd(u->host);   /* arms the host path's wakeup */
		return u->wait_ep;
	}
	return u->raw_fd >= 0 ? u->raw_fd : u->fd;
}

/* Only while every frame so far came by the host path: a standing-by
 * thread polls the socket too, and datagrams arriving while a caller
 * drives would wake it for nothing. */
static int udp_standby_fd(struct xr_link *l)
{
	struct udp_link *u = l->priv;

	if (!u->host || u->rx_net)
		return -1;
	u->rx.skip = 0;   /* a pass after a wakeup reads the socket */
	u->rx.backoff = 0;
	host_ep_standby_fd(u->host);
	return u->wait_ep;
}

static int udp_arm(struct xr_link *l, bool arm)
{
	struct udp_link *u = l->priv;

	if (!u->host)
		return -1;
	if (!arm)
		return host_ep_arm(u->host, false);
	return u->rx_net ? -1 : host_ep_arm(u->host, true);
}

static struct xr_frame *udp_alloc(struct xr_link *l)
{
	return pool_get(&((struct udp_link *)l->priv)->pool);
}

static void udp_free(struct xr_link *l, struct xr_frame *f)
{
	struct udp_link *u = l->priv;

	if (u->host && f && (f < u->pool.frames || f >= u->pool.frames + POOL_FRAMES))
		host_ep_release(u->host, f);
	else
		pool_put(&u->pool, f);
}

static bool udp_is_up(struct xr_link *l)
{
	(void)l;
	return true;
}

static void udp_close(struct xr_link *l)
{
	struct udp_link *u = l->priv;

	if (u->host) {
		host_ep_close(u->host);
		close(u->wait_ep);
	}
	for (unsigned i = 0; u->sport_fd && i < RXE_SPORTS; i++)
		if (u->sport_fd[i] >= 0)
			close(u->sport_fd[i]);
	free(u->sport_fd);
	if (u->raw_fd >= 0)
		close(u->raw_fd);
	if (u->netns >= 0)
		close(u->netns);
	close(u->fd);
	pool_fini(&u->pool);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

static const struct xr_link_ops udp_ops = {
	udp_send, udp_recv, udp_wait_fd, udp_alloc, udp_free, udp_is_up, udp_close, NULL, NULL, NULL,
	udp_standby_fd, udp_arm, NULL, NULL,
};

/* raw_ip_id: a raw IPPROTO_UDP socket bound to the local address sees
 * every UDP datagram to it with its IPv4 header; a filter keeps those to
 * port 4791. The UDP socket keeps the port (no ICMP port unreachable, and
 * it sends) but a filter drops its copy of each datagram. 0 or -errno. */
static int open_raw(struct udp_link *u)
{
	static struct sock_filter keep_roce[] = {
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),          /* X = IP header length */
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),           /* UDP destination port */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, XR_ROCE_UDP_PORT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0x40000),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	static struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog keep = { sizeof(keep_roce) / sizeof(keep_roce[0]), keep_roce };
	struct sock_fprog drop = { 1, drop_all };
	struct sockaddr_in sa = *(struct sockaddr_in *)&u->local;
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP), err;

	if (fd < 0)
		return -errno;
	sa.sin_port = 0;
	udp_socket_rcvbuf(fd);
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &keep, sizeof(keep)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(u->fd, SOL_SOCKET, SO_ATTACH_FILTER, &drop, sizeof(drop))) {
		err = -errno;
		close(fd);
		return err;
	}
	u->raw_fd = fd;
	return 0;
}

/* Local xroce devices through shared memory (the host link's endpoint),
 * unless asked not to. -EEXIST when another device of this host (a host
 * link) holds the address: local peers would reach that one, not us.
 * Other failures leave the UDP link without the path. */
static int open_host_path(struct udp_link *u, const xr_gid *gid)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int err = host_ep_open(&u->host, gid);

	if (err)
		return err == -EADDRINUSE ? -EEXIST : 0;
	u->wait_ep = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = u->raw_fd >= 0 ? u->raw_fd : u->fd;
	if (u->wait_ep < 0 || epoll_ctl(u->wait_ep, EPOLL_CTL_ADD, ev.data.fd, &ev)) {
		if (u->wait_ep >= 0)
			close(u->wait_ep);
		host_ep_close(u->host);
		u->host = NULL;
		return 0;
	}
	ev.data.fd = u->host->efd;
	epoll_ctl(u->wait_ep, EPOLL_CTL_ADD, u->host->efd, &ev);
	return 0;
}

int udp_link_host_stats(struct xr_link *l, struct xr_link_host_stats *out)
{
	struct udp_link *u;

	if (l->ops != &udp_ops)
		return -ENOTSUP;
	u = l->priv;
	memset(out, 0, sizeof(*out));
	if (u->host)
		host_ep_stats(u->host, out);
	pthread_mutex_lock(&u->lock);
	out->tx_net = u->tx_net;
	out->sport_fallbacks = u->sport_fallbacks;
	pthread_mutex_unlock(&u->lock);
	out->rx_net = u->rx_net;
	out->host_path = u->host != NULL;
	return 0;
}

struct xr_link *xr_link_udp(const char *addr)
{
	return xr_link_udp_ex(addr, NULL);
}

struct xr_link *xr_link_udp_ex(const char *addr, const struct xr_link_udp_opts *opts)
{
	struct udp_link *u;
	xr_gid gid;
	int fd;

	if (!addr || xr_gid_parse(&gid, addr)) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
	if (xr_gid_is_ipv4(&gid)) {
		struct sockaddr_in *s = (struct sockaddr_in *)&u->local;
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, gid.raw + 12, 4);
		u->family = AF_INET;
		u->hdr = XR_ETH_HLEN + XR_IPV4_HLEN + XR_UDP_HLEN;
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&u->local;
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, gid.raw, 16);
		u->family = AF_INET6;
		u->hdr = XR_ETH_HLEN + XR_IPV6_HLEN + XR_UDP_HLEN;
	}
	fd = udp_socket_open(&u->local, XR_ROCE_UDP_PORT);
	if (fd < 0) {
		free(u);
		errno = -fd;
		return NULL;
	}
	u->fd = fd;
	u->raw_fd = -1;
	u->strict_icrc = opts && opts->strict_icrc;
	if (opts && opts->raw_ip_id && u->family == AF_INET && (fd = open_raw(u)) < 0) {
		close(u->fd);
		free(u);
		errno = -fd;
		return NULL;
	}
	u->sport_fd = malloc(RXE_SPORTS * sizeof(int));
	if (!u->sport_fd || pool_init(&u->pool, POOL_FRAMES)) {
		if (u->raw_fd >= 0)
			close(u->raw_fd);
		close(u->fd);
		free(u->sport_fd);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < RXE_SPORTS; i++)
		u->sport_fd[i] = SPORT_UNTRIED;
	pthread_mutex_init(&u->lock, NULL);
	u->netns = udp_netns_here();
	u->link.ops = &udp_ops;
	u->link.kind = "udp";
	u->link.priv = u;
	u->link.mtu = udp_interface_mtu(&u->local);
	/* No L2 on a socket: a locally administered MAC made from the address. */
	u->link.mac[0] = 0x02;
	memcpy(u->link.mac + 1, gid.raw + 11, 5);
	if ((!opts || !opts->no_host_path) && open_host_path(u, &gid)) {
		u->link.ops->close(&u->link);
		errno = EEXIST;
		return NULL;
	}
	return &u->link;
}
