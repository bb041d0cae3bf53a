/* SPDX-License-Identifier: MIT */
/*
 * The host endpoint: what the host link and the UDP link's automatic path
 * share. One endpoint per local address; it registers the address in a
 * host-local rendezvous (an abstract UNIX socket, so per network
 * namespace, gone with the process) and keeps one connection per peer
 * process. A connection is a memfd mapping with two single-producer
 * single-consumer rings of frame slots, one per direction.
 *
 * Files: host_ep.c (rendezvous, handshake, the control thread that
 * accepts peers and notices those that exit), host_path.c (the data path:
 * routing, rings, wakeups), host.c (the xr_link of kind "host").
 */
#ifndef XR_LINK_HOST_H
#define XR_LINK_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "xroce/link.h"

#define HOST_MAGIC 0x78726f68u         /* "xroh" */
#define HOST_VERSION 1
#define HOST_SLOTS 128                 /* frame slots per direction */
#define HOST_MAX_CONNS 128
#define HOST_MAX_NEG 256               /* remembered non-local destinations */
#define HOST_NEG_NS 100000000ull       /* retry a non-local destination after 100 ms */
#define HOST_STALL_NS 50000000ull      /* a ring full this long: the peer is stalled, drop */
/* Past the last slot: any 16-bit length a peer writes stays inside the mapping. */
#define HOST_TAIL_PAD 65536u

/* One direction's indices, each on its own cache line (shared memory). */
struct host_ring_ctl {
	_Alignas(64) _Atomic uint32_t tail;   /* producer */
	_Alignas(64) _Atomic uint32_t head;   /* consumer: slots before it are free */
	_Alignas(64) _Atomic uint32_t armed;  /* consumer sleeps: producer writes its eventfd */
};

/* The start of the shared mapping; the slots follow at HOST_SLOTS_OFF. */
struct host_shm {
	uint32_t magic, version, slots, slot_size;
	uint64_t size;
	struct host_ring_ctl ring[2];   /* [0] connector to acceptor, [1] back */
};
#define HOST_SLOTS_OFF 4096u

struct host_conn {
	int sock;                    /* SOCK_SEQPACKET to the peer; EOF: it exited */
	int peer_efd;                /* the peer's eventfd, written when it armed */
	uint8_t *map;
	size_t size;
	struct host_ring_ctl *tx, *rx;
	struct xr_frame *tx_slot, *rx_slot;
	uint32_t slots, mask;
	uint32_t tx_tail;            /* ours; the shared copy is only published */
	uint32_t rx_taken;           /* slots handed to the caller */
	uint32_t rx_head;            /* slots given back (published as rx->head) */
	uint8_t *rx_done;            /* per slot: handed out and given back */
	xr_gid peer;
	_Atomic bool dead;           /* set by the control thread */
	uint64_t full_since;         /* the tx ring has been full since (0: not full) */
};

struct host_neg {
	xr_gid addr;
	uint64_t until;
};

struct host_ep {
	pthread_mutex_t lock;        /* the data path: connection table, rings, its counters */
	/* The control thread never blocks on `lock` (a data path may be
	 * waiting for its peer's control thread): it hands accepted
	 * connections over here, and counts here. */
	pthread_mutex_t pending_lock;
	struct host_conn *pending[HOST_MAX_CONNS];
	unsigned npending;
	struct xr_link_host_stats ctl_st;
	_Atomic unsigned reserved;   /* connections in the table or pending: at most HOST_MAX_CONNS */
	xr_gid addr;
	int listen_fd, efd, stop_efd, epfd;
	pthread_t thread;
	bool thread_started;
	struct host_conn *conn[HOST_MAX_CONNS];
	unsigned nconn, rr;          /* rr: where the next receive scan starts */
	struct host_conn *last;      /* the last destination's connection */
	struct host_neg neg[HOST_MAX_NEG];
	unsigned nneg;
	uid_t uid;
	uid_t extra_uid[8];          /* XROCE_HOST_UIDS: also allowed */
	unsigned nextra;
	struct xr_link_host_stats st;
};

/* Opens an endpoint for addr: EADDRINUSE when another device holds it. */
int host_ep_open(struct host_ep **out, const xr_gid *addr);
void host_ep_close(struct host_ep *h);

/* Copies frames into their peers' rings, in order. Frames whose
 * destination has no local device stop the burst (*not_local set), or
 * with drop_unknown are dropped and counted. A full ring stops it too.
 * Returns how many frames are done with: the caller frees them. */
unsigned host_ep_send(struct host_ep *h, struct xr_frame **f, unsigned n, bool drop_unknown, bool *not_local);
/* Whether a frame's destination is a local device (may connect to it). */
bool host_ep_is_local(struct host_ep *h, const struct xr_frame *f);
/* Up to n received frames, in the rings themselves (no copy). */
unsigned host_ep_recv(struct host_ep *h, struct xr_frame **f, unsigned n);
/* Gives a received frame back: false when f is not a ring slot. */
bool host_ep_release(struct host_ep *h, struct xr_frame *f);
/* Arms the wakeup and returns the eventfd to poll. */
int host_ep_wait_fd(struct host_ep *h);
void host_ep_stats(struct host_ep *h, struct xr_link_host_stats *out);

/* host_ep.c, for host_path.c: a connection to the device at addr
 * (NULL: none there, or refused); frees a dead, drained one. Lock held. */
struct host_conn *host_ep_connect(struct host_ep *h, const xr_gid *addr);
void host_conn_free(struct host_conn *c);

/* udp.c: the UDP link's automatic path (-ENOTSUP: l is not a UDP link). */
int udp_link_host_stats(struct xr_link *l, struct xr_link_host_stats *out);

/* The MAC a host or UDP link uses for an address: locally administered. */
static inline void host_mac_of(const xr_gid *g, uint8_t mac[6])
{
	mac[0] = 0x02;
	for (int i = 0; i < 5; i++)
		mac[1 + i] = g->raw[11 + i];
}

#endif
