/* SPDX-License-Identifier: MIT */
/*
 * The fabric: an output-queued, shared-buffer Ethernet switch model that
 * joins ports. A port is an xr_link end (the far end of a mem pair whose
 * near end an engine uses, or an interface through AF_PACKET in the
 * xroce-switch tool). Nothing runs by itself: the caller drives it with
 * xr_fabric_step(now_ns), so tests advance a simulated clock exactly.
 *
 * Per egress port: a line rate (a frame starts only when the transmitter
 * is free), eight priority queues served in strict priority with a byte
 * limit each (tail drop), RED-style ECN marking of ECT frames, and
 * honouring of PFC/PAUSE frames the port receives. Per ingress port and
 * priority: buffer accounting that sends 802.1Qbb XOFF/XON toward the
 * sender. Counters and queue-length statistics per port; a pcap per port.
 * docs/fabric.md describes the model.
 */
#ifndef XROCE_FABRIC_H
#define XROCE_FABRIC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "xroce/link.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_FABRIC_MAX_PORTS 64
#define XR_FABRIC_PRIOS 8
/* Bytes a frame costs on the wire beyond f->len: FCS 4, preamble+SFD 8, IFG 12. */
#define XR_FABRIC_WIRE_OVERHEAD 24

/* Every drop has a reason and a counter (per port: ingress reasons count
 * on the port the frame came in on, egress reasons on the port it was
 * queued for). */
#define XR_FABRIC_DROP_TABLE(X) \
	X(RUNT,          "runt",            "frame shorter than an Ethernet header (ingress)") \
	X(BAD_SRC_MAC,   "bad_src_mac",     "multicast or zero source MAC (ingress)") \
	X(LINK_LOCAL,    "link_local",      "802.1D reserved group 01:80:C2:00:00:0x other than MAC control: not forwarded (ingress)") \
	X(BAD_MAC_CTRL,  "bad_mac_control", "MAC control frame with an unknown opcode or too short (ingress)") \
	X(HAIRPIN,       "hairpin",         "destination learned on the ingress port itself (ingress)") \
	X(BUFFER_FULL,   "buffer_full",     "shared buffer exhausted (ingress)") \
	X(HEADROOM,      "pfc_headroom",    "lossless priority over XOFF + headroom at its ingress port (ingress)") \
	X(QUEUE_FULL,    "queue_full",      "egress queue over its byte limit: tail drop (egress)") \
	X(EGRESS_DOWN,   "egress_down",     "egress link down (egress)")

#define XR_X(name, id, desc) XR_FABRIC_DROP_##name,
enum xr_fabric_drop { XR_FABRIC_DROP_TABLE(XR_X) XR_FABRIC_DROP_COUNT };
#undef XR_X
const char *xr_fabric_drop_name(enum xr_fabric_drop d);
const char *xr_fabric_drop_desc(enum xr_fabric_drop d);

enum xr_fabric_prio_src {
	XR_FABRIC_PRIO_PCP = 0,    /* 802.1Q PCP; untagged frames get default_prio */
	XR_FABRIC_PRIO_DSCP = 1,   /* IP DSCP through dscp_map (default DSCP >> 3); non-IP: default_prio */
};

/* RED-style marking of ECT(0)/ECT(1) frames on the egress queue at enqueue:
 * p = 0 for q <= kmin, pmax*(q-kmin)/(kmax-kmin) up to kmax, 1 above. */
struct xr_fabric_ecn_cfg {
	bool enable;
	uint32_t kmin, kmax;       /* bytes of the (port, priority) queue */
	double pmax;               /* probability at kmax, 0..1 */
	double avg_weight;         /* 0: instantaneous queue; else EWMA weight (0,1] per arrival */
};

/* PFC generation (ingress) for the priorities in prio_mask. */
struct xr_fabric_pfc_cfg {
	uint8_t prio_mask;         /* lossless priorities; 0: PFC off on this port */
	uint32_t xoff, xon;        /* ingress (port, priority) bytes: send XOFF at >= xoff, XON at <= xon */
	uint32_t headroom;         /* bytes still accepted above xoff (in flight when XOFF left); then dropped */
	uint32_t pause_ns;         /* pause asked for in XOFF, turned into quanta at the port's speed
				      (0: 65535 quanta); refreshed at half of it while still above xon */
};

struct xr_fabric_port_cfg {
	const char *name;          /* for counters (copied; NULL: "pN") */
	uint64_t rate_bps;         /* line rate; 0: unlimited (quanta then at 100 Gb/s) */
	uint32_t queue_limit;      /* bytes per (port, priority) egress queue; 0: 256 KiB */
	struct xr_fabric_ecn_cfg ecn;
	struct xr_fabric_pfc_cfg pfc;
	bool ignore_pause;         /* do not honour PFC/PAUSE frames received (they are still counted) */
	const char *pcap;          /* record every frame in and out of the port (NULL: none) */
};

struct xr_fabric_cfg {
	uint64_t buffer_bytes;     /* shared buffer (0: 4 MiB) */
	unsigned buffer_frames;    /* frame cells in the buffer (0: 4096) */
	enum xr_fabric_prio_src prio_src;
	uint8_t default_prio;
	const uint8_t *dscp_map;   /* 64 entries, DSCP -> priority (NULL: DSCP >> 3) */
	bool no_learning;          /* forward by static entries only (unknown: flood) */
	uint64_t seed;             /* ECN marking draws */
	uint64_t sample_ns;        /* queue-length sampling period (0: 1 us) */
	int64_t pcap_offset_ns;    /* added to the clock for pcap timestamps */
};

struct xr_fabric_port_stats {
	uint64_t rx_frames, rx_bytes;        /* received from the port's link */
	uint64_t tx_frames, tx_bytes;        /* sent on it (frame bytes) */
	uint64_t tx_wire_bytes;              /* tx_bytes + XR_FABRIC_WIRE_OVERHEAD per frame */
	uint64_t flooded;                    /* frames flooded in from this port */
	uint64_t drops[XR_FABRIC_DROP_COUNT];
	uint64_t ecn_marked;                 /* ECT frames set to CE here (egress) */
	uint64_t ecn_not_ect;                /* Not-ECT frames that would have been marked: passed unchanged */
	uint64_t ecn_already_ce;             /* CE frames that arrived marked */
	uint64_t pfc_sent[XR_FABRIC_PRIOS];  /* XOFF frames sent out of this port (toward its sender), per priority */
	uint64_t pfc_xon_sent[XR_FABRIC_PRIOS]; /* XON (zero-time) frames sent */
	uint64_t pfc_rcvd[XR_FABRIC_PRIOS];  /* PFC frames received naming the priority with a non-zero time */
	uint64_t pfc_injected[XR_FABRIC_PRIOS];     /* XOFF frames sent by xr_fabric_send_pfc, per priority */
	uint64_t pfc_xon_injected[XR_FABRIC_PRIOS]; /* XON frames sent by it */
	uint64_t pause_rcvd;                 /* 802.3x PAUSE frames received */
	uint64_t paused_ns[XR_FABRIC_PRIOS]; /* time the egress priority stood paused */
	uint64_t tx_stalls;                  /* the port's link refused a frame (kept, retried) */
	/* Egress queue length (all priorities), bytes. */
	uint64_t qlen, qlen_max;
	double qlen_mean;
	uint64_t qlen_p99;                   /* from samples every sample_ns, 1 KiB resolution */
	uint64_t samples;
};

struct xr_fabric;

/* A fabric with no ports. NULL and errno (EINVAL, ENOMEM). */
struct xr_fabric *xr_fabric_new(const struct xr_fabric_cfg *cfg);
/* Closes every port's link, writes the pcaps, frees everything. */
void xr_fabric_free(struct xr_fabric *fab);

/* Joins link (the switch takes ownership) as a new port. Returns the port
 * index or -errno (-EINVAL bad config, -ENOSPC too many ports, -EIO pcap). */
int xr_fabric_add_port(struct xr_fabric *fab, struct xr_link *link, const struct xr_fabric_port_cfg *cfg);
/* A static forwarding entry (learning never overrides it). 0 or -errno. */
int xr_fabric_add_mac(struct xr_fabric *fab, const uint8_t mac[6], unsigned port);

/*
 * Advances the switch to now_ns (never backwards: an earlier time counts as
 * now_ns == the last one): takes what every port received, forwards and
 * queues it, sends what the transmitters may send by now, and PFC frames
 * that are due. Returns frames moved (received + sent), or -errno.
 */
int xr_fabric_step(struct xr_fabric *fab, uint64_t now_ns);
/* The clock as the last step saw it. */
uint64_t xr_fabric_now(const struct xr_fabric *fab);
/* The earliest time something is due without new input (a queued frame's
 * start, a pause ending, a PFC refresh), or UINT64_MAX. */
uint64_t xr_fabric_next_event(const struct xr_fabric *fab);
/* For xr_engine_set_clock: returns xr_fabric_now(ctx). */
uint64_t xr_fabric_clock(void *fab);

unsigned xr_fabric_nports(const struct xr_fabric *fab);
const char *xr_fabric_port_name(const struct xr_fabric *fab, unsigned port);
int xr_fabric_port_stats(const struct xr_fabric *fab, unsigned port, struct xr_fabric_port_stats *out);
/* Bytes held for (egress port, priority), and all priorities (prio < 0). */
uint64_t xr_fabric_queue_bytes(const struct xr_fabric *fab, unsigned port, int prio);
/*
 * Injects one 802.1Qbb frame out of port (toward the host or link on it)
 * at once, bypassing the queues, as the switch's own XOFF/XON: priorities
 * in mask paused for quanta (0: resumed). For tests and tools that show a
 * sender's reaction to PFC; counted in pfc_injected / pfc_xon_injected,
 * not in the switch's generated pfc_sent. 0, -EINVAL (no such port or an
 * empty mask), -ENOBUFS (the port's link had no frame or refused it;
 * counted in tx_stalls).
 */
int xr_fabric_send_pfc(struct xr_fabric *fab, unsigned port, uint8_t mask, uint16_t quanta);
/* Every non-zero counter of every port, one line per port. */
void xr_fabric_print_stats(const struct xr_fabric *fab, FILE *out);

/* ---- frame facts the switch and the host model share ---- */

/* The frame's priority under fab's configuration. */
uint8_t xr_fabric_frame_prio(const struct xr_fabric *fab, const uint8_t *d, uint16_t len);
/* PFC and PAUSE frames: xr_build_pfc_frame, xr_build_pause_frame (wire.h). */
/* A pause of quanta at rate_bps (0: 100 Gb/s), in ns; and the inverse, rounded up, capped at 65535. */
uint64_t xr_fabric_quanta_ns(uint16_t quanta, uint64_t rate_bps);
uint16_t xr_fabric_ns_quanta(uint64_t ns, uint64_t rate_bps);
/* RED's marking probability for queue q under cfg. */
double xr_fabric_ecn_prob(const struct xr_fabric_ecn_cfg *cfg, double q);

/* ---- hosts on the in-process fabric ---- */

/*
 * A host's NIC MAC on a port: frames leave at rate_bps on the fabric's
 * clock (0: the port's rate; unpaced: as fast as the engine sends), and
 * PFC/PAUSE frames the switch sends are honoured (the engine does not do
 * this itself yet) unless ignore_pause, which also hands MAC control frames
 * on to the engine (for PFC in the engine). The host's neighbour table is the
 * fabric's: resolve answers with the MAC of whichever host holds the GID.
 */
struct xr_fabric_host_cfg {
	uint8_t mac[6];            /* all zero: 02:00:00:fa:00:<port> */
	const char *addr;          /* the engine's address (IPv4/IPv6), for resolve */
	uint64_t rate_bps;
	bool unpaced;
	bool ignore_pause;
	unsigned depth;            /* frames the wire holds each way (0: 256) */
};
struct xr_fabric_host_stats {
	uint64_t tx_frames, rx_frames;
	uint64_t pfc_rcvd, pause_rcvd;      /* MAC control frames consumed */
	uint64_t paused_refusals;           /* sends refused because the priority is paused */
	uint64_t rate_refusals;             /* sends refused because the MAC is still busy */
};
/*
 * Makes a mem pair, joins its far end as a port with pcfg, and gives the
 * near end, wrapped as the host's MAC, in *host (the caller closes it with
 * xr_link_close after the device using it). Returns the port or -errno.
 */
int xr_fabric_attach_host(struct xr_fabric *fab, const struct xr_fabric_port_cfg *pcfg,
			  const struct xr_fabric_host_cfg *hcfg, struct xr_link **host);
int xr_fabric_host_stats(struct xr_link *host, struct xr_fabric_host_stats *out);

/* ---- real interfaces (xroce-switch) ---- */

/* A port on an interface: AF_PACKET, promiscuous, every frame (VLAN tags
 * restored). NULL and errno (ENODEV, EPERM, EINVAL). */
struct xr_link *xr_fabric_ifport(const char *ifname);

#ifdef __cplusplus
}
#endif
#endif
