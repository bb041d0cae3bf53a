/* SPDX-License-Identifier: MIT */
/*
 * Links: how frames leave and enter an engine, as a struct of function
 * pointers filled by each backend (in-memory pair, fault injection, pcap
 * tap; UDP and raw Ethernet later). Frames are whole Ethernet frames.
 *
 * Buffers: xr_link_frame_alloc gives a frame to fill and send; send_burst
 * takes ownership of what it accepts; recv_burst hands frames to the
 * caller, who returns them with xr_link_frame_free. No allocation per
 * packet: frames come from a pool made when the link is created.
 */
#ifndef XROCE_LINK_H
#define XROCE_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "xroce/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xr_frame {
	struct xr_frame *next;      /* pool and queue linkage */
	uint64_t due_ns;            /* fault injection: hold until */
	uint16_t len;
	uint16_t rx_flags;          /* enum xr_frame_rx_flag, set by the link on receive */
	/* A gather frame (a link with gather set, below): the gather_len
	 * payload bytes that belong at data[gather_off] are at gather, in
	 * the sender's memory, and the rest of the frame is in data[]. */
	uint8_t gather_state;       /* enum xr_gather_state, read and written atomically */
	uint16_t gather_off;
	uint32_t gather_len;
	uint32_t gather_seq;        /* the sending end's, to tell a frame reused */
	const uint8_t *gather;
	/* Right after the fields (40 bytes), in their line: on the mem and
	 * host links every line of a frame crosses the cores with it. A
	 * 64-byte WRITE (138 bytes) takes three lines so, an 8-byte one or
	 * an ACK two, where a line-aligned data[] took four and three
	 * (performance.md: the 64-byte rate gained most in the machine's
	 * slow regime). At 48 bytes an 8-byte WRITE spilled 2 bytes into a
	 * third line, and its latency lost 4 %. */
	uint8_t data[XR_MAX_FRAME] __attribute__((aligned(8)));
} __attribute__((aligned(64)));

/* The lines of a frame's fields and a small packet's bytes (the first
 * lines a link's receiver asks for, its sender takes for writing). */
#define XR_FRAME_SMALL_LINES 3

/*
 * Gather frames: a send that reads the payload where it lies, in the
 * sender's registered memory, instead of copying it into the frame (the
 * in-memory link between two engines of one process, made with
 * XR_MEM_GATHER). The receiver claims the payload (xr_frame_claim) and
 * reads it until it frees the frame. Before the sender's memory may go
 * (an error or flush completion, a region deregistered, a QP destroyed,
 * the engine closed) the sender settles its link (xr_link_settle): the
 * payload of every gather frame not claimed yet is copied into the frame,
 * and a claimed one's reader is waited for.
 */
enum xr_gather_state {
	XR_GATHER_NONE,             /* every byte in data[] */
	XR_GATHER_OUT,              /* sent by reference, not claimed */
	XR_GATHER_READING,          /* claimed by the receiver */
	XR_GATHER_DONE,             /* freed by the receiver */
	XR_GATHER_SETTLING,         /* the sender is copying the payload in */
	XR_GATHER_COPIED,           /* now every byte in data[] */
};

/* The receiver: the payload's address, valid until the frame is freed,
 * for a gather frame; NULL for one whose bytes are all in data[]. */
const uint8_t *xr_frame_claim(struct xr_frame *f);
/* The sender, on a link with gather set: f's payload (len bytes that
 * belong at data[off]) is at src. */
void xr_frame_set_gather(struct xr_frame *f, uint16_t off, const uint8_t *src, uint32_t len);
/* The sender, for a gather frame it has not sent: its payload copied in. */
void xr_frame_flatten(struct xr_frame *f);

/* What a link tells the engine about a frame it received. */
enum xr_frame_rx_flag {
	/* The ICRC matched only after the IPv4 ID was recovered from it: 16 of
	 * its 32 bits were checked (UDP link; counted as rx_icrc_id_recovered). */
	XR_FRAME_ICRC_ID_RECOVERED = 1u << 0,
	/* Strict mode: the ICRC could not be checked in full; the engine drops
	 * the frame (rx_drop_icrc_unverifiable). */
	XR_FRAME_ICRC_UNVERIFIABLE = 1u << 1,
	/* The link checked the ICRC and it matched (UDP link: it computes it
	 * anyway, for the IPv4 ID); the engine does not compute it again. */
	XR_FRAME_ICRC_VERIFIED = 1u << 2,
};

struct xr_link_stats {
	uint64_t tx_frames, rx_frames, tx_drops, rx_drops;
	/* Gather frames (below): sent by reference, and of those the ones
	 * whose payload a settle copied in before their receiver read it. */
	uint64_t tx_gather, gather_settled;
};

struct xr_link;

struct xr_link_ops {
	/* Sends up to n frames; returns how many were taken (the rest stay
	 * the caller's: retry later) or -errno. */
	int (*send_burst)(struct xr_link *l, struct xr_frame **f, unsigned n);
	/* Receives up to n frames; returns the count (0 if none) or -errno. */
	int (*recv_burst)(struct xr_link *l, struct xr_frame **f, unsigned n);
	/* An fd that polls readable when frames may be waiting, or -1. Call
	 * it each time before sleeping (it may arm a wakeup), then receive
	 * once more, then poll. */
	int (*wait_fd)(struct xr_link *l);
	struct xr_frame *(*frame_alloc)(struct xr_link *l);
	void (*frame_free)(struct xr_link *l, struct xr_frame *f);
	bool (*is_up)(struct xr_link *l);
	void (*close)(struct xr_link *l);
	/* Neighbour resolution: the MAC that reaches gid; 0 or -errno
	 * (-EHOSTUNREACH). Links without L2 (UDP) may leave it NULL. */
	int (*resolve)(struct xr_link *l, const xr_gid *gid, uint8_t mac[6]);
	/* Receive backlog: what waits for recv_burst and what the link can
	 * hold, in one unit of the link's choosing (frames, bytes); 0 or
	 * -errno. NULL: unknown (the engine then never generates PFC). */
	int (*rx_backlog)(struct xr_link *l, uint32_t *queued, uint32_t *capacity);
	/* Whether frames send_burst took are still in the link, to leave only
	 * on a later send or receive call (a delay it models, a ring the
	 * kernel did not take): the engine then keeps calling while it sleeps.
	 * NULL: never. */
	bool (*tx_held)(struct xr_link *l);
	/* Optional (NULL: none), together: the engine's thread standing by
	 * while a caller drives polls standby_fd's fd, which frames leave
	 * unreadable (any arming withdrawn; -1: not now); arm(l, true) then
	 * has frames make it readable (returns 1 when one already waits,
	 * -1: not now), arm(l, false) withdraws the last arming. */
	int (*standby_fd)(struct xr_link *l);
	int (*arm)(struct xr_link *l, bool arm);
	/* Optional (NULL: the link never carries gather frames): see
	 * xr_link_settle. */
	void (*settle)(struct xr_link *l);
	/* Optional (NULL: the link hands its peer every frame whatever its
	 * address, as the mem link): from now on receive (join) or stop
	 * receiving (!join) frames sent to multicast group (xr_gid_is_mcast);
	 * a received group frame carries the group's MAC (xr_gid_mcast_mac)
	 * as its destination. The engine joins when a group's first QP
	 * attaches and leaves when its last detaches, under its pass lock
	 * (no send or receive call at the same time; its thread may sleep
	 * on the link's fds meanwhile). 0 or -errno; -EEXIST (joined
	 * already) counts as joined. A link that cannot carry groups gives
	 * -EOPNOTSUPP, and the attach fails. */
	int (*mcast)(struct xr_link *l, const xr_gid *group, bool join);
};

struct xr_link {
	const struct xr_link_ops *ops;
	const char *kind;          /* "mem", "fault", "pcap", ... */
	uint32_t mtu;              /* IP MTU of the medium (bytes) */
	uint8_t mac[6];            /* this end's MAC */
	bool gather;               /* carries gather frames (xr_frame_set_gather) */
	struct xr_link_stats stats;
	void *priv;
};

static inline int xr_link_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	return l->ops->send_burst(l, f, n);
}
static inline int xr_link_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	return l->ops->recv_burst(l, f, n);
}
static inline struct xr_frame *xr_link_frame_alloc(struct xr_link *l)
{
	return l->ops->frame_alloc(l);
}
static inline void xr_link_frame_free(struct xr_link *l, struct xr_frame *f)
{
	l->ops->frame_free(l, f);
}
static inline bool xr_link_tx_held(struct xr_link *l)
{
	return l->ops->tx_held && l->ops->tx_held(l);
}
void xr_link_close(struct xr_link *l);
/* Joins or leaves a multicast group (see mcast): 0 on a link without
 * groups, which carries every frame anyway. */
static inline int xr_link_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	return l->ops->mcast ? l->ops->mcast(l, group, join) : 0;
}
/* After it no gather frame this end sent reads the sender's memory any
 * more (their payloads copied in, or their readers done). */
static inline void xr_link_settle(struct xr_link *l)
{
	if (l->ops->settle)
		l->ops->settle(l);
}
/* The MAC for a peer: the link's resolution, or all zeros without one. */
int xr_link_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6]);
/* The link's receive backlog (see rx_backlog): 0, or -EOPNOTSUPP for a
 * link that cannot tell, or the link's -errno. */
int xr_link_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity);

/*
 * Two connected in-memory links (a and b), for two engines in one process.
 * Each direction queues up to `depth` frames (0: 1024). An end has one
 * user at a time (an engine, or one thread): the ends take no locks, and
 * each may be driven from its own thread. 0 or -errno.
 */
int xr_link_mem_pair(struct xr_link **a, struct xr_link **b, unsigned depth);
/* The same with flags: XR_MEM_GATHER lets the engines send payloads by
 * reference (gather frames, above). Only for ends used as they are: a
 * wrapper (fault, pcap) would see frames without their payload. */
#define XR_MEM_GATHER 1u
int xr_link_mem_pair_ex(struct xr_link **a, struct xr_link **b, unsigned depth, unsigned flags);

/* Fault injection on any link: rates are probabilities per frame sent. */
struct xr_fault_cfg {
	uint64_t seed;
	double drop, duplicate, reorder, corrupt, delay;
	uint32_t delay_us;         /* how long a delayed frame is held */
};
/* Wraps inner (taking ownership). NULL and errno on failure. */
struct xr_link *xr_link_fault(struct xr_link *inner, const struct xr_fault_cfg *cfg);
/* Frames the fault wrapper dropped, duplicated, reordered, corrupted, delayed. */
struct xr_fault_stats { uint64_t dropped, duplicated, reordered, corrupted, delayed; };
void xr_link_fault_stats(struct xr_link *fault, struct xr_fault_stats *out);

/* Records every frame sent and received on inner to a pcap file. */
struct xr_link *xr_link_pcap_tap(struct xr_link *inner, const char *path);
/* The same, recording only the first max_frames frames (0: all). */
struct xr_link *xr_link_pcap_tap_n(struct xr_link *inner, const char *path, uint64_t max_frames);

/*
 * UDP link: a kernel UDP socket bound to addr (IPv4 or IPv6) port 4791.
 * Frames to an address held by an xroce device in another process of this
 * host go through shared memory instead (the host link's path, registered
 * under addr too; see xr_link_host), unless no_host_path is set;
 * xr_link_host_stats counts which way frames went.
 * The engine still builds whole frames; the link sends their UDP payload
 * to the destination's port 4791 from rxe's source port (a socket per
 * source port, made on first use; the 4791 socket when that port is
 * taken), with DF set and UDP checksum 0. On receive it rebuilds the IP
 * and UDP headers around each datagram so the engine's parser runs
 * unchanged; an ICRC the link checked (below) is marked
 * XR_FRAME_ICRC_VERIFIED and not computed again. Needs no root.
 *
 * The IPv4 ID trade-off: the ICRC covers the IPv4 ID, which a socket can
 * neither set nor see. Linux sends DF datagrams from unconnected sockets
 * with ID 0 (so xroce over this link does), so the rebuilt header says 0
 * and the link tries that first: a match is a full 32-bit check. Peers
 * using other IDs (rxe: __ip_select_ident, non-zero) would fail it, so on
 * a mismatch the link solves for the 16-bit ID
 * that makes the ICRC match. That checks only 16 of the 32 bits: a
 * corruption (or a chosen bit flip) whose CRC error equals an ID change is
 * accepted. Such frames carry XR_FRAME_ICRC_ID_RECOVERED and the engine
 * counts them (rx_icrc_id_recovered); a frame no ID explains is an ICRC
 * error (rx_drop_bad_icrc). Options (xr_link_udp_ex):
 *  - strict_icrc: frames that match only with a recovered ID are handed
 *    over with XR_FRAME_ICRC_UNVERIFIABLE and dropped by the engine
 *    (rx_drop_icrc_unverifiable): full checks only, but peers that send
 *    non-zero IDs cannot talk to this link.
 *  - raw_ip_id (IPv4; CAP_NET_RAW): receive through a raw IPPROTO_UDP
 *    socket bound to addr, which delivers each datagram with its real IPv4
 *    header, so every ICRC is checked in full whatever the peer's IDs; the
 *    UDP socket stays bound (it sends, and keeps the port) with a filter
 *    dropping its copies. Costs a filter run per UDP datagram to addr.
 * IPv6 has no ID: its ICRC is always checked in full.
 * Errors: EINVAL (bad address), EADDRNOTAVAIL (not this host's),
 * EADDRINUSE (4791 taken), EPERM (raw_ip_id without CAP_NET_RAW), or the
 * socket calls' errno.
 */
struct xr_link *xr_link_udp(const char *addr);
struct xr_link_udp_opts {
	bool strict_icrc;      /* refuse frames whose ICRC matched only with a recovered ID */
	bool raw_ip_id;        /* IPv4: read the real IPv4 ID via a raw socket (CAP_NET_RAW) */
	bool no_host_path;     /* never use the host link for local peers */
};
/* xr_link_udp with options (opts NULL: the defaults, as xr_link_udp). */
struct xr_link *xr_link_udp_ex(const char *addr, const struct xr_link_udp_opts *opts);

/*
 * Raw Ethernet link on an interface (AF_PACKET): whole frames as the
 * FPGA's MAC sees them, optionally tagged 802.1Q (vid 1..4094, pcp 0..7;
 * vid 0: untagged). The link owns addr on an interface with no kernel IP:
 * it answers ARP (IPv4) or neighbour solicitations (IPv6) for it and
 * resolves peers the same way (xr_link_resolve), or from static entries.
 * Errors: ENODEV (no interface), EPERM (needs CAP_NET_RAW), EINVAL.
 */
struct xr_link *xr_link_raw(const char *ifname, const char *addr, uint16_t vid, uint8_t pcp);
/*
 * AF_XDP link on an interface (libxdp): the raw link's frames, ARP and ND
 * through an XDP socket on one queue. A small XDP filter sends the socket
 * only RoCE v2 (UDP 4791) to addr, ARP and ND about addr, and PFC frames;
 * the kernel keeps everything else. Native XDP where the driver has it,
 * else generic; zero-copy where offered, else copy mode; frames larger
 * than a UMEM chunk as multi-buffer. The bound mode is printed on stderr
 * at open (unless quiet) and in xr_link_xdp_info. Untagged only.
 * Errors: ENODEV (no interface), EPERM (needs CAP_NET_ADMIN, CAP_BPF and
 * CAP_NET_RAW), EAFNOSUPPORT (no AF_XDP in the kernel, or built without
 * libxdp), EOPNOTSUPP (the interface takes no XDP program in that mode),
 * EBUSY (another live xroce link or another XDP program holds the
 * interface), EINVAL. The filter is attached through a BPF link: it goes
 * when the link closes or its process dies.
 */
enum xr_xdp_mode { XR_XDP_AUTO, XR_XDP_NATIVE, XR_XDP_GENERIC };
struct xr_link_xdp_opts {
	uint32_t queue;            /* the interface queue (0) */
	enum xr_xdp_mode mode;     /* AUTO: native, falling back to generic */
	bool no_zerocopy;          /* copy mode even where zero-copy is offered */
	bool quiet;                /* say nothing on stderr */
};
struct xr_link *xr_link_xdp(const char *ifname, const char *addr, const struct xr_link_xdp_opts *opts);
struct xr_link_xdp_info {
	const char *attach;        /* "native" or "generic" XDP */
	bool zerocopy, multibuffer, need_wakeup;
	uint32_t queue;
	/* the filter, in the kernel: frames sent to the socket by kind; passed to the kernel */
	uint64_t filt_roce, filt_arp, filt_nd, filt_pfc, filt_pass, filt_no_xsk;
	/* the link's drops, one reason each */
	uint64_t rx_drop_oversize, rx_drop_no_frame, rx_drop_pending_full, rx_drop_not_ours;
	uint64_t tx_drop_bad_len, tx_drop_oversize, tx_kick_errors;
	/* the kernel's socket counters (XDP_STATISTICS) */
	uint64_t k_rx_dropped, k_rx_invalid, k_tx_invalid, k_rx_ring_full, k_fill_empty, k_tx_ring_empty;
	uint64_t arp_replies, nd_replies, pfc_rcvd;
	/* the link's frames now: free in its pool (of pool_frames), read
	 * while resolving a neighbour and not yet given to the engine */
	uint32_t pool_free, pool_frames, pending;
};
/* 0, or -ENOTSUP when l is not an XDP link. */
int xr_link_xdp_info(struct xr_link *l, struct xr_link_xdp_info *out);
/* A static neighbour entry, as xr_link_raw_add_neigh; 0 or -EINVAL. */
int xr_link_xdp_add_neigh(struct xr_link *xdp, const xr_gid *gid, const uint8_t mac[6]);
/*
 * Host link: devices in different processes of one host, through shared
 * memory. The device registers addr (any IPv4/IPv6 address; the kernel
 * need not hold it) in a host-local rendezvous: the abstract UNIX socket
 * "@xroce-host/ADDR", so per network namespace and gone when the process
 * exits. On the first frame to an address the link connects to its
 * rendezvous; each process then writes a memfd of its own (its frame
 * slots, and lock-free single-producer single-consumer rings of slot
 * indices) that the other maps read only: a frame is built in a slot and
 * lent to the peer, never copied. They wake each other through eventfds
 * only when the receiver armed its wakeup before sleeping. Frames stay
 * whole RoCE v2 frames
 * (ICRC and all); no process maps another's registered memory.
 * Only processes of the same effective user may connect (SO_PEERCRED);
 * XROCE_HOST_UIDS="uid,uid" admits others. A peer that exits is noticed
 * (its socket closes): frames to it are dropped and counted, and its QPs
 * time out as on a network. Frames to an address with no device behind it
 * are dropped and counted (tx_drop_no_peer).
 * Errors: EINVAL (bad address), EADDRINUSE (a device holds addr already).
 */
struct xr_link *xr_link_host(const char *addr);

/* What the host path did: the host link, or the UDP link's automatic path. */
struct xr_link_host_stats {
	uint64_t tx_host, rx_host;       /* frames through shared memory */
	uint64_t tx_net, rx_net;         /* UDP link: frames through the kernel's network */
	uint64_t sport_fallbacks;        /* UDP link: tries to take a source port that failed (its packets
					  * went from 4791 until the next try, a second later) */
	uint64_t tx_drop_no_peer;        /* host link: no device at the destination */
	uint64_t tx_drop_peer_gone;      /* the peer exited with frames still for it */
	uint64_t tx_drop_stalled;        /* the peer's ring stayed full (a stopped process) */
	uint64_t tx_drop_not_ip;         /* a frame without an IPv4/IPv6 destination */
	uint64_t rx_drop_bad_len;        /* a slot with an impossible length */
	uint64_t rx_drop_bad_index;      /* a slot index a peer sent or gave back that cannot be */
	uint64_t peers_connected, peers_accepted, peers_gone;
	uint64_t refused_uid;            /* a connecting process of another user */
	uint64_t refused_hello;          /* a malformed handshake or mapping */
	uint64_t refused_full;           /* too many peers */
	bool host_path;                  /* UDP link: the automatic path is on */
};
/* 0, or -ENOTSUP when l is neither a host link nor a UDP link. */
int xr_link_host_stats(struct xr_link *l, struct xr_link_host_stats *out);

/* Link selection, as every tool offers it. */
struct xr_link_spec {
	const char *kind;      /* "udp", "raw", "xdp" or "host" ("mem" is a pair: xr_link_mem_pair) */
	const char *addr;      /* local IPv4/IPv6 address */
	const char *ifname;    /* raw, xdp: the interface */
	uint16_t vid;          /* raw: 802.1Q VLAN (0: untagged) */
	uint8_t pcp;           /* raw: 802.1Q priority */
	bool strict_icrc;      /* udp: see xr_link_udp_opts */
	bool udp_raw_ip_id;    /* udp: see xr_link_udp_opts */
	bool udp_no_host_path; /* udp: see xr_link_udp_opts */
};
/* Opens a link; on failure NULL, errno set and a sentence for the user in
 * msg (missing interface, address in use or not local, privileges...). */
struct xr_link *xr_link_open(const struct xr_link_spec *spec, char *msg, size_t msglen);

/* A static neighbour entry (as the seed's PEER_MAC registers). */
int xr_link_raw_add_neigh(struct xr_link *raw, const xr_gid *gid, const uint8_t mac[6]);
/* Sends one 802.1Qbb PFC frame: pause priorities in prio_mask for quanta. */
int xr_link_raw_send_pfc(struct xr_link *raw, uint8_t prio_mask, uint16_t quanta);
/* PFC frames received, per priority with a non-zero time. */
uint64_t xr_link_raw_pfc_rcvd(struct xr_link *raw);

#ifdef __cplusplus
}
#endif
#endif
