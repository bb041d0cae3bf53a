/* SPDX-License-Identifier: MIT */
/* The UDP link's sockets (udp_socket.h). */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "udp_socket.h"
#include "xroce/wire.h"

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#define UDP_NO_CHECK6_RX 102
#endif

static int set_opt(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v));
}

#define RCVBUF_BYTES (32 << 20)
void udp_socket_rcvbuf(int fd)
{
	if (set_opt(fd, SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES))
		set_opt(fd, SOL_SOCKET, SO_RCVBUF, RCVBUF_BYTES);
}

/* Group frames leave from the interface that holds the address (not by
 * the routing table's choice, which may be another or none); only
 * multicast sends read it. */
static void multicast_if(int fd, const struct sockaddr_storage *local, int ifindex)
{
	if (local->ss_family == AF_INET) {
		struct ip_mreqn m = { .imr_address = ((const struct sockaddr_in *)local)->sin_addr,
				      .imr_ifindex = ifindex > 0 ? ifindex : 0 };
		setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof(m));
	} else if (ifindex > 0) {
		set_opt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, ifindex);
	}
}

int udp_socket_open(const struct sockaddr_storage *local, uint16_t port, int ifindex)
{
	struct sockaddr_storage sa = *local;
	int family = local->ss_family;
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		((struct sockaddr_in *)&sa)->sin_port = htons(port);
		set_opt(fd, SOL_SOCKET, SO_NO_CHECK, 1);
		set_opt(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		set_opt(fd, IPPROTO_IP, IP_PKTINFO, 1);
		set_opt(fd, IPPROTO_IP, IP_RECVTOS, 1);
	} else {
		((struct sockaddr_in6 *)&sa)->sin6_port = htons(port);
		set_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		set_opt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, 1);
		set_opt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
		set_opt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
		set_opt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		set_opt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
	}
	set_opt(fd, SOL_SOCKET, SO_SNDBUF, 4 << 20);
	multicast_if(fd, local, ifindex);
	udp_socket_rcvbuf(fd);
	if (bind(fd, (struct sockaddr *)&sa, len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int udp_netns_here(void)
{
	return open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
}

struct ns_call {
	int netns;
	int (*fn)(void *);
	void *arg;
	int rc;
};

static void *call_in_ns(void *arg)
{
	struct ns_call *c = arg;

	c->rc = setns(c->netns, CLONE_NEWNET) ? -errno : c->fn(c->arg);
	return NULL;
}

/* The calling thread may live in another namespace than netns (a
 * program driving ends in two), where the address is missing or, worse,
 * another network's. A short-lived thread enters netns, so the caller's
 * stays as it is. */
int udp_in_netns(int netns, int (*fn)(void *), void *arg)
{
	struct stat ours, here_st;
	struct ns_call c = { netns, fn, arg, -EAGAIN };
	sigset_t all, old;
	pthread_t t;
	int here, made;

	if (netns < 0 || (here = udp_netns_here()) < 0)
		return fn(arg);
	if (fstat(here, &here_st) || fstat(netns, &ours) ||
	    (here_st.st_ino == ours.st_ino && here_st.st_dev == ours.st_dev)) {
		close(here);
		return fn(arg);
	}
	close(here);
	/* The thread takes no signal: a handler must not run in the other
	 * namespace. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	made = pthread_create(&t, NULL, call_in_ns, &c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (made)
		return -EAGAIN;   /* the caller falls back */
	pthread_join(t, NULL);
	return c.rc;
}

struct sock_args {
	const struct sockaddr_storage *local;
	uint16_t port;
	int ifindex;
};

static int open_cb(void *arg)
{
	struct sock_args *a = arg;

	return udp_socket_open(a->local, a->port, a->ifindex);
}

int udp_socket_open_in(int netns, const struct sockaddr_storage *local, uint16_t port, int ifindex)
{
	struct sock_args a = { local, port, ifindex };

	return udp_in_netns(netns, open_cb, &a);
}

int udp_raw_open(const struct sockaddr_storage *bind_to)
{
	static struct sock_filter keep_roce[] = {
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),          /* X = IP header length */
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),           /* UDP destination port */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, XR_ROCE_UDP_PORT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0x40000),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog keep = { sizeof(keep_roce) / sizeof(keep_roce[0]), keep_roce };
	struct sockaddr_in sa = *(const struct sockaddr_in *)bind_to;
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP), err;

	if (fd < 0)
		return -errno;
	sa.sin_port = 0;
	udp_socket_rcvbuf(fd);
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &keep, sizeof(keep)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Whether a and b (of family fam) agree under mask. */
static bool same_net(int fam, const struct sockaddr *a, const struct sockaddr *b, const struct sockaddr *mask)
{
	const uint8_t *x, *y, *m;
	size_t n = fam == AF_INET ? 4 : 16;

	if (fam == AF_INET) {
		x = (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
		y = (const uint8_t *)&((const struct sockaddr_in *)b)->sin_addr;
		m = mask ? (const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr : NULL;
	} else {
		x = (const uint8_t *)&((const struct sockaddr_in6 *)a)->sin6_addr;
		y = (const uint8_t *)&((const struct sockaddr_in6 *)b)->sin6_addr;
		m = mask ? (const uint8_t *)&((const struct sockaddr_in6 *)mask)->sin6_addr : NULL;
	}
	for (size_t i = 0; i < n; i++)
		if ((x[i] ^ y[i]) & (m ? m[i] : 0xFF))
			return false;
	return true;
}

/* The interface that holds a, or else the one whose subnet holds it. */
static bool interface_of(const struct sockaddr_storage *a, char name[IF_NAMESIZE])
{
	struct ifaddrs *ifs, *i, *exact = NULL, *net = NULL;

	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !exact; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != a->ss_family)
			continue;
		if (same_net(a->ss_family, i->ifa_addr, (const struct sockaddr *)a, NULL))
			exact = i;
		else if (!net && i->ifa_netmask &&
			 same_net(a->ss_family, i->ifa_addr, (const struct sockaddr *)a, i->ifa_netmask))
			net = i;
	}
	if (exact || net)
		snprintf(name, IF_NAMESIZE, "%s", (exact ? exact : net)->ifa_name);
	freeifaddrs(ifs);
	return exact || net;
}

uint32_t udp_interface_mtu(const struct sockaddr_storage *a)
{
	char name[IF_NAMESIZE];
	uint32_t mtu = 1500;

	if (interface_of(a, name)) {
		struct ifreq ifr;
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
		if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
			mtu = (uint32_t)ifr.ifr_mtu;
		if (fd >= 0)
			close(fd);
	}
	return mtu;
}

int udp_interface_index(const struct sockaddr_storage *a)
{
	char name[IF_NAMESIZE];

	return interface_of(a, name) ? (int)if_nametoindex(name) : 0;
}

struct group_args {
	const struct sockaddr_storage *local;
	const xr_gid *group;
	int ifindex;
	bool raw;
};

/* Joins the group on the interface that holds the address: the kernel's
 * membership (an IGMP/MLD report, the interface's filter) is the
 * socket's, and goes when it closes. */
static int join(int fd, const struct group_args *a)
{
	if (a->local->ss_family == AF_INET) {
		struct ip_mreqn m = { .imr_address = ((const struct sockaddr_in *)a->local)->sin_addr,
				      .imr_ifindex = a->ifindex };
		memcpy(&m.imr_multiaddr, a->group->raw + 12, 4);
		return setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m));
	} else {
		struct ipv6_mreq m = { .ipv6mr_interface = (unsigned)a->ifindex };
		memcpy(&m.ipv6mr_multiaddr, a->group->raw, 16);
		return setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m));
	}
}

static int group_open(void *arg)
{
	const struct group_args *a = arg;
	struct sockaddr_storage sa;
	socklen_t len;
	int fd, err;

	memset(&sa, 0, sizeof(sa));
	if (a->local->ss_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&sa;
		s->sin_family = AF_INET;
		s->sin_port = htons(XR_ROCE_UDP_PORT);
		memcpy(&s->sin_addr, a->group->raw + 12, 4);
		len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&sa;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(XR_ROCE_UDP_PORT);
		s->sin6_scope_id = (uint32_t)a->ifindex;   /* needed by link-local groups (ff02::) */
		memcpy(&s->sin6_addr, a->group->raw, 16);
		len = sizeof(*s);
	}
	if (a->raw) {   /* raw_ip_id: the real IPv4 header, as the unicast path */
		fd = udp_raw_open(&sa);
		if (fd < 0)
			return fd;
		/* As below: else it gets the group from every interface
		 * where anything joined it (the kernel's default). */
		set_opt(fd, IPPROTO_IP, IP_MULTICAST_ALL, 0);
		goto joined;
	}
	fd = socket(a->local->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Other xroce devices of this host join the same group: each gets
	 * every datagram (the kernel copies multicast to all bound sockets).
	 * SO_REUSEADDR shares the port; not SO_REUSEPORT, whose groups the
	 * kernel may hand a datagram to one member of, another program's
	 * socket or this one, whatever each joined. */
	set_opt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	if (a->local->ss_family == AF_INET) {
		set_opt(fd, IPPROTO_IP, IP_PKTINFO, 1);
		set_opt(fd, IPPROTO_IP, IP_RECVTOS, 1);
		set_opt(fd, IPPROTO_IP, IP_MULTICAST_ALL, 0);   /* only what this socket joined */
	} else {
		set_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		set_opt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);   /* else checksum-0 datagrams are dropped */
		set_opt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		set_opt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
#ifdef IPV6_MULTICAST_ALL
		set_opt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0);
#endif
	}
	udp_socket_rcvbuf(fd);
	if (bind(fd, (struct sockaddr *)&sa, len) < 0)
		goto fail;
joined:
	if (join(fd, a))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

int udp_group_open(int netns, const struct sockaddr_storage *local, int ifindex, bool raw, const xr_gid *group)
{
	struct group_args a = { local, group, ifindex, raw };

	return udp_in_netns(netns, group_open, &a);
}
