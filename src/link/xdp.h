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

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "mcast_set.h"
#include "pool.h"
#include "xroce/link.h"

/* Newer than the build's kernel headers may be (Linux 6.6). */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

#define XDP_NEIGH_MAX 256
#define XDP_PENDING_MAX 512

/* The raw link's receive ring holds 1024 frames of up to 8 KiB (8 MiB);
 * the UMEM gives receive the same 8 MiB (2048 chunks of 4 KiB: 1024
 * frames of two chunks, or 2048 of one) and transmit as much. */
#define XL_CHUNK 4096u
#define XL_RX_CHUNKS 2048u
#define XL_TX_CHUNKS 2048u
#define XL_NCHUNKS (XL_RX_CHUNKS + XL_TX_CHUNKS)
#define XL_RX_BATCH 64u
#define XL_TX_BURST 32u
#define XL_KICK_TRIES 16
#define XL_QUEUE_WAIT_MS 1000   /* for a queue a socket closed a moment ago still holds */
#define XL_POOL_FRAMES 4096

/* The filter's counters, as xdp_filter.bpf.c numbers them. */
enum { XC_ROCE, XC_ARP, XC_ND, XC_PFC, XC_PASS, XC_NO_XSK, XC_MAX };

struct xdp_cfg {   /* xdp_filter.bpf.c's struct xr_xdp_cfg */
	uint8_t addr[16];
	uint32_t is_v4, active;
};

struct xdp_sock {
	void *area;                       /* the UMEM */
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	struct bpf_object *obj;           /* the filter, loaded */
	int link_fd;                      /* its attachment to the interface (a BPF link) */
	int cfg_fd, counts_fd, fd;
	int groups_fd;                    /* the filter's joined groups (xr_groups) */
	int mc_fd;                        /* a packet socket holding the groups' MACs on the interface */
	int owner_fd;                     /* holds @xroce-xdp/IFINDEX while the link lives */
	uint64_t tx_free[XL_TX_CHUNKS];      /* transmit chunks not in the kernel's hands */
	unsigned ntx_free;
	struct xr_frame *cur;             /* a multi-buffer frame being put together */
	size_t cur_len;
	bool in_frame;                    /* the next descriptor continues a frame */
	enum { XDP_KEEP, XDP_DROP_NO_FRAME, XDP_DROP_OVERSIZE } cur_drop;
};

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
	struct mcast_set groups;         /* joined (the mcast op); under rx_lock */
	struct xr_link_xdp_info info;    /* mode and counters (link.h) */
};

/* xdp.c: the socket of an XDP link, or NULL (bench/xdp_blaster.c drives
 * its rings bare, for a baseline on the same kernel path). */
struct xdp_sock *xdp_link_sock(struct xr_link *l);
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
/* xdp_neigh.c: the link's mcast op (join or leave a group). */
int xdp_mcast(struct xr_link *l, const xr_gid *group, bool join);

#endif
