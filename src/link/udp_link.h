/* SPDX-License-Identifier: MIT */
/* The UDP link's state, shared by its send and control side (udp.c) and
 * its receive path (udp_rx.c). */
#ifndef XR_LINK_UDP_LINK_H
#define XR_LINK_UDP_LINK_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "host.h"
#include "mcast_set.h"
#include "pool.h"
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
	bool groups_first;                /* this pass read the groups' sockets first */
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
	int wait_ep;                  /* an epoll set of the socket, group_ep and the host eventfd */
	int group_ep;                 /* an epoll set of the groups' sockets */
	int ifindex;                  /* the interface that holds the address (0: none found) */
	uint64_t tx_net, rx_net;
	struct rx_ring rx;
	/* Joined multicast groups, a socket each (udp_mcast): read by the
	 * receive pass under glock, when ngroups says there are any. */
	pthread_mutex_t glock;
	_Atomic unsigned ngroups;
	struct mcast_set groups;
	uint64_t rx_own_group;        /* our own group datagrams, come back: dropped */
};

/* udp_rx.c: up to n datagrams from the socket and the groups' sockets,
 * as frames (the host path's are udp.c's). */
int udp_socket_recv(struct udp_link *u, struct xr_frame **f, unsigned n);

#endif
