/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP link's private state, shared by its socket and ring code
 * (xdp.c) and its neighbour code (xdp_neigh.c: ARP, neighbour discovery,
 * what a received frame is).
 */
#ifndef XR_LINK_XDP_H
#define XR_LINK_XDP_H

#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "xroce/link.h"

#define XDP_NEIGH_MAX 256
#define XDP_PENDING_MAX 512

struct xdp_neigh {
	xr_gid gid;
	uint8_t mac[6];
	bool used;
};

struct xdp_link {
	struct xr_link link;
	char ifname[IF_NAMESIZE];
	int ifindex;
	xr_gid addr;
	struct xdp_sock *sock;           /* the socket, UMEM and rings (xdp.c) */
	struct frame_pool pool;
	pthread_mutex_t rx_lock;         /* the rx and fill rings, the tables, pending */
	pthread_mutex_t tx_lock;         /* the tx and completion rings */
	struct xdp_neigh neigh[XDP_NEIGH_MAX];
	struct xr_frame *pending[XDP_PENDING_MAX];   /* RoCE frames read while resolving */
	unsigned npending;
	struct xr_link_xdp_info info;    /* mode and counters (link.h) */
};

/* xdp.c: sends one frame built by the link (ARP, NA); 0 or -errno. */
int xdp_tx_ctrl(struct xdp_link *x, const uint8_t *frame, size_t len);
/* xdp.c: reads what the rx ring holds; RoCE frames to out, then pending. */
unsigned xdp_rx_step(struct xdp_link *x, struct xr_frame **out, unsigned max);
/* xdp.c: the socket's fd (poll it for POLLIN). */
int xdp_sock_fd(struct xdp_link *x);

/* xdp_neigh.c: true when a received frame is for the engine; answers and
 * learns from ARP and ND, counts PFC and every frame it keeps back. */
bool xdp_rx_classify(struct xdp_link *x, const uint8_t *d, size_t len);
/* xdp_neigh.c: the MAC for gid, asking the network; 0 or -EHOSTUNREACH. */
int xdp_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6]);
/* xdp_neigh.c: a static entry. */
void xdp_learn(struct xdp_link *x, const xr_gid *gid, const uint8_t mac[6]);

#endif
