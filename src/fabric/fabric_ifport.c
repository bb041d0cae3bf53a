/* SPDX-License-Identifier: MIT */
/*
 * A switch port on a real interface (xroce-switch): an AF_PACKET socket,
 * promiscuous, taking every frame and sending whole frames. Unlike the raw
 * link (src/link/raw.c) it owns no address and answers nothing: it is a
 * wire. The kernel takes a received frame's 802.1Q tag off into auxdata;
 * it is put back so the switch sees the PCP as the wire carried it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../link/pool.h"
#include "../wire/bytes.h"
#include "fabric_int.h"

#define IFPORT_FRAMES 1024

struct ifport {
	struct xr_link link;
	int fd, ifindex;
	struct frame_pool pool;
	uint64_t rx_truncated;
};

static int ifport_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct ifport *p = l->priv;
	unsigned i;

	for (i = 0; i < n; i++) {
		if (send(p->fd, f[i]->data, f[i]->len, MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == ENOBUFS)
				break;   /* the caller keeps it and retries */
			l->stats.tx_drops++;   /* e.g. EMSGSIZE over the interface MTU */
		}
		pool_put(&p->pool, f[i]);
	}
	l->stats.tx_frames += i;
	return (int)i;
}

/* Puts the tag the kernel took off back in front of the EtherType. */
static void restore_vlan(struct xr_frame *f, const struct tpacket_auxdata *aux)
{
	if (!(aux->tp_status & TP_STATUS_VLAN_VALID) || f->len < 12 || f->len + XR_VLAN_HLEN > XR_MAX_FRAME)
		return;
	memmove(f->data + 12 + XR_VLAN_HLEN, f->data + 12, f->len - 12u);
#ifdef TP_STATUS_VLAN_TPID_VALID
	put_be16(f->data + 12, (aux->tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux->tp_vlan_tpid : XR_ETHERTYPE_VLAN);
#else
	put_be16(f->data + 12, XR_ETHERTYPE_VLAN);
#endif
	put_be16(f->data + 14, aux->tp_vlan_tci);
	f->len += XR_VLAN_HLEN;
}

static int ifport_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct ifport *p = l->priv;
	unsigned got = 0;

	while (got < n) {
		struct xr_frame *fr = pool_get(&p->pool);
		union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(struct tpacket_auxdata))]; } ctl;
		struct sockaddr_ll from;
		/* Room for a tag to be put back. */
		struct iovec iov = { fr ? fr->data : NULL, XR_MAX_FRAME - XR_VLAN_HLEN };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
		ssize_t len;

		if (!fr)
			break;
		len = recvmsg(p->fd, &m, MSG_DONTWAIT | MSG_TRUNC);
		if (len < 0) {
			pool_put(&p->pool, fr);
			if (errno == EAGAIN || errno == EINTR)
				break;
			return got ? (int)got : -errno;
		}
		if (from.sll_pkttype == PACKET_OUTGOING) {   /* our own sends, on kernels without IGNORE_OUTGOING */
			pool_put(&p->pool, fr);
			continue;
		}
		if ((size_t)len > iov.iov_len) {   /* larger than any RoCE frame: counted, not forwarded cut */
			p->rx_truncated++;
			l->stats.rx_drops++;
			pool_put(&p->pool, fr);
			continue;
		}
		fr->len = (uint16_t)len;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA)
				restore_vlan(fr, (const struct tpacket_auxdata *)CMSG_DATA(c));
		f[got++] = fr;
	}
	l->stats.rx_frames += got;
	return (int)got;
}

static int ifport_wait_fd(struct xr_link *l)
{
	return ((struct ifport *)l->priv)->fd;
}

static struct xr_frame *ifport_alloc(struct xr_link *l)
{
	return pool_get(&((struct ifport *)l->priv)->pool);
}

static void ifport_free(struct xr_link *l, struct xr_frame *f)
{
	pool_put(&((struct ifport *)l->priv)->pool, f);
}

static bool ifport_is_up(struct xr_link *l)
{
	struct ifport *p = l->priv;
	struct ifreq ifr = { 0 };

	if (!if_indextoname((unsigned)p->ifindex, ifr.ifr_name) || ioctl(p->fd, SIOCGIFFLAGS, &ifr) < 0)
		return false;
	return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
}

static void ifport_close(struct xr_link *l)
{
	struct ifport *p = l->priv;

	close(p->fd);   /* the promiscuous membership goes with the socket */
	pool_fini(&p->pool);
	free(p);
}

static const struct xr_link_ops ifport_ops = {
	ifport_send, ifport_recv, ifport_wait_fd, ifport_alloc, ifport_free, ifport_is_up, ifport_close, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL,
};

struct xr_link *xr_fabric_ifport(const char *ifname)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct packet_mreq mr = { .mr_type = PACKET_MR_PROMISC };
	struct ifreq ifr = { 0 };
	struct ifport *p;
	int one = 1, err;

	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->ifindex = (int)if_nametoindex(ifname);
	if (!p->ifindex) {
		free(p);
		errno = ENODEV;
		return NULL;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (p->fd < 0) {
		err = errno;
		free(p);
		errno = err;
		return NULL;
	}
	sll.sll_ifindex = p->ifindex;
	mr.mr_ifindex = p->ifindex;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 || ioctl(p->fd, SIOCGIFHWADDR, &ifr) < 0 ||
	    setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0 ||
	    setsockopt(p->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0 ||
	    pool_init(&p->pool, IFPORT_FRAMES)) {
		err = errno ? errno : ENOMEM;
		close(p->fd);
		free(p);
		errno = err;
		return NULL;
	}
	memcpy(p->link.mac, ifr.ifr_hwaddr.sa_data, 6);
	p->link.mtu = ioctl(p->fd, SIOCGIFMTU, &ifr) == 0 ? (uint32_t)ifr.ifr_mtu : 1500;
#ifdef PACKET_IGNORE_OUTGOING
	setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
#endif
	{
		int buf = 4 << 20;
		setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
		setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	}
	p->link.ops = &ifport_ops;
	p->link.kind = "ifport";
	p->link.priv = p;
	return &p->link;
}
