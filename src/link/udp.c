/* SPDX-License-Identifier: MIT */
/*
 * The UDP link: RoCE v2 over a kernel UDP socket on port 4791 (see
 * xr_link_udp in link.h for the contract, the source-port rule and the
 * IPv4 ID trade-off). Frames cross as UDP payloads, in batches
 * (sendmmsg/recvmmsg); received datagrams are placed in frames behind
 * rebuilt Ethernet/IP/UDP headers, so no payload byte is copied. The
 * receive batch stays armed between calls (struct rx_ring) and empty reads
 * back off for a few calls, so an engine polling for ACKs does not pay a
 * system call and 32 frames' bookkeeping on every pass (udp_rx.c).
 * Multicast groups (the mcast op): a socket per joined group, bound to
 * group:4791 and read into the same ring; group frames leave with the
 * frame's TTL through the interface that holds the address (udp_socket.c).
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../wire/hdr.h"
#include "udp_link.h"
#include "udp_socket.h"

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
	fd = udp_socket_open_in(u->netns, &u->local, sport, u->ifindex);
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

static bool to_group(const struct udp_link *u, const struct xr_frame *fr, size_t l3)
{
	return u->family == AF_INET ? (fr->data[l3 + IP4_OFF_DST] & 0xF0) == 0xE0 : fr->data[l3 + IP6_OFF_DST] == 0xFF;
}

union ttl_ctl {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

/* A group frame leaves with its own TTL (hop limit): a socket's multicast
 * TTL is 1 unless told, and the frame says how far the group reaches.
 * TTL 0, which a socket cannot send, keeps the socket's 1. */
static void group_ttl(const struct udp_link *u, const struct xr_frame *fr, size_t l3, struct msghdr *m,
		      union ttl_ctl *ctl)
{
	int ttl = u->family == AF_INET ? fr->data[l3 + IP4_OFF_TTL] : fr->data[l3 + IP6_OFF_HOPLIM];
	struct cmsghdr *c;

	if (!ttl)
		return;
	m->msg_control = ctl->buf;
	m->msg_controllen = sizeof(ctl->buf);
	c = CMSG_FIRSTHDR(m);
	c->cmsg_level = u->family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
	c->cmsg_type = u->family == AF_INET ? IP_TTL : IPV6_HOPLIMIT;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &ttl, sizeof(ttl));
}

static int udp_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct udp_link *u = l->priv;
	struct mmsghdr msg[BURST];
	struct iovec iov[BURST];
	struct sockaddr_in6 dst[BURST];   /* holds a sockaddr_in too */
	union ttl_ctl ctl[BURST];
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
			if (to_group(u, fr, l3))
				group_ttl(u, fr, l3, &msg[k].msg_hdr, &ctl[k]);
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

static int udp_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct udp_link *u = l->priv;
	unsigned got = 0;
	int net;

	if (u->host)   /* addressed to our MAC by the sender's host path; read only */
		got = host_ep_recv(u->host, f, n);
	net = got < n ? udp_socket_recv(u, f + got, n - got) : 0;
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
	if (u->host)
		host_ep_wait_fd(u->host);   /* arms the host path's wakeup */
	return u->wait_ep;
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

	if (u->host)
		host_ep_close(u->host);
	for (unsigned i = 0; i < u->groups.n; i++)
		close(u->groups.g[i].fd);   /* leaves the group */
	if (u->wait_ep >= 0)
		close(u->wait_ep);
	if (u->group_ep >= 0)
		close(u->group_ep);
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
	pthread_mutex_destroy(&u->glock);
	free(u);
}

/* A group of the link's family joins (a socket of its own, in the wait
 * set) or leaves (the socket closed: what it had queued goes with it).
 * -EEXIST for a group joined, -ENOENT for one not, -ENOSPC past
 * XR_LINK_MCAST_MAX, -EINVAL for an address that is no group or of the
 * other family. */
static int udp_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	struct udp_link *u = l->priv;
	struct epoll_event ev = { .events = EPOLLIN };
	int i, fd;

	if (xr_gid_is_ipv4(group) != (u->family == AF_INET))
		return -EINVAL;
	pthread_mutex_lock(&u->glock);
	i = join ? mcast_set_can_add(&u->groups, group) : mcast_set_find(&u->groups, group);
	if (i >= 0 && join) {
		fd = udp_group_open(u->netns, &u->local, u->ifindex, u->raw_fd >= 0, group);
		ev.data.fd = fd;
		if (fd >= 0 && epoll_ctl(u->group_ep, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			fd = -errno;
		}
		if (fd >= 0)
			mcast_set_add(&u->groups, group, fd);
		i = fd < 0 ? fd : 0;
	} else if (i >= 0) {
		epoll_ctl(u->group_ep, EPOLL_CTL_DEL, u->groups.g[i].fd, NULL);
		close(u->groups.g[i].fd);
		mcast_set_del(&u->groups, (unsigned)i);
		i = 0;
	}
	atomic_store_explicit(&u->ngroups, u->groups.n, memory_order_release);
	pthread_mutex_unlock(&u->glock);
	return i;
}

static const struct xr_link_ops udp_ops = {
	udp_send, udp_recv, udp_wait_fd, udp_alloc, udp_free, udp_is_up, udp_close, NULL, NULL, NULL,
	udp_standby_fd, udp_arm, NULL, udp_mcast,
};

/* raw_ip_id: a raw IPPROTO_UDP socket bound to the local address sees
 * every UDP datagram to it with its IPv4 header; a filter keeps those to
 * port 4791. The UDP socket keeps the port (no ICMP port unreachable, and
 * it sends) but a filter drops its copy of each datagram. 0 or -errno. */
static int open_raw(struct udp_link *u)
{
	static struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog drop = { 1, drop_all };
	int fd = udp_raw_open(&u->local), err;

	if (fd < 0)
		return fd;
	if (setsockopt(u->fd, SOL_SOCKET, SO_ATTACH_FILTER, &drop, sizeof(drop))) {
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
	ev.data.fd = u->host->efd;
	if (epoll_ctl(u->wait_ep, EPOLL_CTL_ADD, u->host->efd, &ev)) {
		host_ep_close(u->host);
		u->host = NULL;
	}
	return 0;
}

/* What the engine sleeps on: the socket, the groups' set and later the
 * host path's eventfd (one set whatever joins later, so a thread asleep
 * when a group joins wakes for its frames). The receive pass asks the
 * groups' set which sockets have datagrams: one system call however many
 * groups are joined. 0 or -errno. */
static int open_wait_set(struct udp_link *u)
{
	struct epoll_event ev = { .events = EPOLLIN };

	u->wait_ep = epoll_create1(EPOLL_CLOEXEC);
	u->group_ep = epoll_create1(EPOLL_CLOEXEC);
	if (u->wait_ep < 0 || u->group_ep < 0)
		return -errno;
	ev.data.fd = u->raw_fd >= 0 ? u->raw_fd : u->fd;
	if (epoll_ctl(u->wait_ep, EPOLL_CTL_ADD, ev.data.fd, &ev))
		return -errno;
	ev.data.fd = u->group_ep;
	return epoll_ctl(u->wait_ep, EPOLL_CTL_ADD, u->group_ep, &ev) ? -errno : 0;
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
	u->ifindex = udp_interface_index(&u->local);
	fd = udp_socket_open(&u->local, XR_ROCE_UDP_PORT, u->ifindex);
	if (fd < 0) {
		free(u);
		errno = -fd;
		return NULL;
	}
	u->fd = fd;
	u->raw_fd = u->wait_ep = u->group_ep = -1;
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
	pthread_mutex_init(&u->glock, NULL);
	u->netns = udp_netns_here();
	u->link.ops = &udp_ops;
	u->link.kind = "udp";
	u->link.priv = u;
	u->link.mtu = udp_interface_mtu(&u->local);
	/* No L2 on a socket: a locally administered MAC made from the address. */
	u->link.mac[0] = 0x02;
	memcpy(u->link.mac + 1, gid.raw + 11, 5);
	if ((fd = open_wait_set(u)) < 0) {
		u->link.ops->close(&u->link);
		errno = -fd;
		return NULL;
	}
	if ((!opts || !opts->no_host_path) && open_host_path(u, &gid)) {
		u->link.ops->close(&u->link);
		errno = EEXIST;
		return NULL;
	}
	return &u->link;
}
