/* SPDX-License-Identifier: MIT */
/*
 * The host endpoint: what the host link and the UDP link's automatic path
 * share. One endpoint per local address; it registers the address in a
 * host-local rendezvous (an abstract UNIX socket, so per network
 * namespace, gone with the process) and keeps one connection per peer
 * process. A connection is two memfds, one written by each side (its
 * frame slots and the single-producer single-consumer index rings that
 * lend them to the peer and give the peer's back), each mapped read only
 * by the other side.
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
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xroce/link.h"

#define HOST_MAGIC 0x78726f68u         /* "xroh" */
/* 3: a memfd per side, slots passed by index; 4: a frame's data at
 * offset 40 (struct xr_frame), the slots' size unchanged. */
#define HOST_VERSION 4
/* A peer of another build reads the slots we write: a frame's layout is
 * part of the version (change both together). */
_Static_assert(offsetof(struct xr_frame, data) == 40, "a frame's layout changed: bump HOST_VERSION");
/* Frame slots per direction, owned by its sender. Slots are reused in
 * turn (but a ping-pong's few: slot_take), so this sets how long ago the
 * peer read a slot we write again:
 * 128 (550 KiB) left it in the reader's cache and every line of a frame
 * was a cross-core miss (0.79 of the mem link's bandwidth, 512: 0.91). */
#define HOST_SLOTS 512
#define HOST_SLOTS_WARM 32             /* slots a connection with a frame or two out keeps to (slot_take) */
#define HOST_MAX_CONNS 128
#define HOST_MAX_NEG 256               /* remembered non-local destinations */
#define HOST_NEG_NS 100000000ull       /* retry a non-local destination after 100 ms */
#define HOST_NEG_MAX_NS 10000000000ull /* ... or, after stalled handshakes, at most 10 s */
#define HOST_SLOW_CONNECT_NS 10000000ull /* an attempt this long stalled the data path (a peer that does not answer) */
#define HOST_STALL_NS 50000000ull      /* no free slot this long: the peer is stalled, drop */
/* Past the last slot: any 16-bit length a peer writes stays inside the mapping. */
#define HOST_TAIL_PAD 65536u

/* What one process of a connection writes, in a memfd of its own that
 * it seals against any further writable mapping: the peer maps it read
 * only, so nobody can touch our slots or our indices. As the mem pair:
 * our slots go to the peer by index through `sent` and come back through
 * the peer's `ret` once its engine is done with them, so a frame is built
 * in its slot and never copied. Each index on its own cache line. */
struct host_out {
	uint32_t magic, version, slots, slot_size;
	uint64_t size;
	_Alignas(64) _Atomic uint32_t tail;       /* entries in sent[] */
	_Alignas(64) _Atomic uint32_t ret_tail;   /* entries in ret[] */
	/* Bumped each time we arm before sleeping: the peer writes our
	 * eventfd once per new value (it cannot clear a flag of ours). */
	_Alignas(64) _Atomic uint32_t sleeps;
	/* The arming numbered this is withdrawn (our engine is driven by a
	 * caller that takes the frames itself): the peer writes our eventfd
	 * only for a `sleeps` value other than this one. In the line of
	 * `sleeps`, which the peer reads with it: the layout is version 3's,
	 * and a peer that ignores it only wakes us for nothing. */
	_Atomic uint32_t awake;
	_Alignas(64) _Atomic uint32_t sent[HOST_SLOTS];   /* our slots, for the peer */
	_Alignas(64) _Atomic uint32_t ret[HOST_SLOTS];    /* the peer's slots, given back */
};
/* The slots start on the page after the indices. */
#define HOST_SLOTS_OFF ((sizeof(struct host_out) + 4095u) & ~(size_t)4095u)
_Static_assert((HOST_SLOTS & (HOST_SLOTS - 1)) == 0, "index arithmetic masks");

/* The handshake message (SOCK_SEQPACKET; host_ep.c). */
struct host_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t reply;      /* 0: hello, 1: reply */
	uint32_t slots;
	int32_t status;      /* reply: 0 or -errno */
	uint8_t addr[16];    /* hello: the connecting device's address */
};

/* One process's memfd: its indices, its slots, the padding. */
static inline size_t host_out_size(void)
{
	return HOST_SLOTS_OFF + (size_t)HOST_SLOTS * sizeof(struct xr_frame) + HOST_TAIL_PAD;
}

/* Where one of our slots is; the peer's slots need only "held by us". */
enum host_tx_state { TX_FREE, TX_ENGINE, TX_PEER };

struct host_conn {
	int sock;                    /* SOCK_SEQPACKET to the peer; EOF: it exited */
	int peer_efd;                /* the peer's eventfd, written when it armed */
	uint8_t *out_map, *in_map;   /* host_out_size() each */
	struct host_out *out;        /* ours, read-write */
	const struct host_out *in;   /* the peer's, read only; it may change under us */
	struct xr_frame *tx_slot;    /* ours */
	struct xr_frame *rx_slot;    /* the peer's: mapped read only, never written */
	/* Private: what the peer writes is checked against these. */
	uint32_t tx_tail;            /* entries we put in out->sent (published) */
	uint32_t tx_ret_head;        /* entries of in->ret taken back */
	uint32_t rx_head;            /* entries of in->sent taken */
	uint32_t rx_ret_tail;        /* entries we put in out->ret (published) */
	uint32_t woken;              /* the peer's `sleeps` we last woke it for */
	uint8_t tx_state[HOST_SLOTS];   /* enum host_tx_state */
	uint32_t tx_free[HOST_SLOTS], ntx_free;
	unsigned tx_engine;          /* our slots the caller holds: freed only after */
	uint8_t rx_held[HOST_SLOTS]; /* the peer's slots the caller holds */
	unsigned nrx_held;
	xr_gid peer;
	_Atomic bool dead;           /* set by the control thread */
	uint64_t full_since;         /* no free slot since (0: there is one) */
};

struct host_neg {
	xr_gid addr;
	uint64_t until;
	uint64_t wait_ns;            /* the next wait: longer after each stalled attempt */
};

struct host_ep {
	pthread_mutex_t lock;        /* the data path: connection table, rings, its counters */
	/* The control thread never blocks on `lock` (a data path may be
	 * waiting for its peer's control thread): it hands accepted
	 * connections over here, and counts here. */
	pthread_mutex_t pending_lock;
	struct host_conn *pending[HOST_MAX_CONNS];
	_Atomic unsigned npending;   /* read unlocked: the data path skips the lock when 0 */
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

/* Sends frames to their peers, in order: a frame built in a slot of the
 * destination's connection (host_ep_alloc) goes as it is, any other is
 * copied into a free slot. Frames whose destination has no local device
 * stop the burst (*not_local set), or with drop_unknown are dropped and
 * counted. No free slot stops it too. Returns how many frames are done
 * with: of those, the ones that were slots are the endpoint's again and
 * set to NULL; the caller frees the others. */
unsigned host_ep_send(struct host_ep *h, struct xr_frame **f, unsigned n, bool drop_unknown, bool *not_local);
/* Whether a frame's destination is a local device (may connect to it). */
bool host_ep_is_local(struct host_ep *h, const struct xr_frame *f);
/* A slot of the last destination's connection to build a frame in, or
 * NULL (none yet, or the peer holds them all): use a frame of your own. */
struct xr_frame *host_ep_alloc(struct host_ep *h);
/* Up to n received frames, in the peers' slots themselves (no copy). */
unsigned host_ep_recv(struct host_ep *h, struct xr_frame **f, unsigned n);
/* Gives a slot back (received, or from host_ep_alloc): false when f is not one. */
bool host_ep_release(struct host_ep *h, struct xr_frame *f);
/* Arms the wakeup and returns the eventfd to poll. */
int host_ep_wait_fd(struct host_ep *h);
/* A thread that stands by while a caller drives: the eventfd drained,
 * any arming withdrawn (frames wake nobody until host_ep_arm). */
int host_ep_standby_fd(struct host_ep *h);
/* Arms the wakeup for the thread standing by on host_ep_standby_fd's fd
 * (1: a frame already waits: nothing will write the fd for it), or
 * withdraws the last arming (arm false; returns 0). */
int host_ep_arm(struct host_ep *h, bool arm);
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
