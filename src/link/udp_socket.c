/* SPDX-License-Identifier: MIT */
/* The UDP link's sockets (udp_socket.h). */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
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

int udp_socket_open(const struct sockaddr_storage *local, uint16_t port)
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

struct ns_open {
	int netns;
	const struct sockaddr_storage *local;
	uint16_t port;
	int fd;
};

static void *open_in_ns(void *arg)
{
	struct ns_open *o = arg;

	o->fd = setns(o->netns, CLONE_NEWNET) ? -errno : udp_socket_open(o->local, o->port);
	return NULL;
}

/* The calling thread may live in another namespace than netns (a
 * program driving ends in two), where the address is missing or, worse,
 * another network's. A short-lived thread enters netns, so the caller's
 * stays as it is. */
int udp_socket_open_in(int netns, const struct sockaddr_storage *local, uint16_t port)
{
	struct stat ours, here_st;
	struct ns_open o = { netns, local, port, -EAGAIN };
	sigset_t all, old;
	pthread_t t;
	int here, made;

	if (netns < 0 || (here = udp_netns_here()) < 0)
		return udp_socket_open(local, port);
	if (fstat(here, &here_st) || fstat(netns, &ours) ||
	    (here_st.st_ino == ours.st_ino && here_st.st_dev == ours.st_dev)) {
		close(here);
		return udp_socket_open(local, port);
	}
	close(here);
	/* The thread takes no signal: a handler must not run in the other
	 * namespace. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	made = pthread_create(&t, NULL, open_in_ns, &o);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (made)
		return -EAGAIN;   /* the port falls back */
	pthread_join(t, NULL);
	return o.fd;
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

uint32_t udp_interface_mtu(const struct sockaddr_storage *a)
{
	struct ifaddrs *ifs, *i, *exact = NULL, *net = NULL;
	uint32_t mtu = 1500;

	if (getifaddrs(&ifs))
		return mtu;
	for (i = ifs; i && !exact; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != a->ss_family)
			continue;
		if (same_net(a->ss_family, i->ifa_addr, (const struct sockaddr *)a, NULL))
			exact = i;
		else if (!net && i->ifa_netmask &&
			 same_net(a->ss_family, i->ifa_addr, (const struct sockaddr *)a, i->ifa_netmask))
			net = i;
	}
	if (exact || net) {
		struct ifreq ifr;
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", (exact ? exact : net)->ifa_name);
		if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
			mtu = (uint32_t)ifr.ifr_mtu;
		if (fd >= 0)
			close(fd);
	}
	freeifaddrs(ifs);
	return mtu;
}
