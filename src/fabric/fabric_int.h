/* SPDX-License-Identifier: MIT */
/* The switch model's insides, shared by its files (fabric.c queues and
 * forwarding, fabric_frame.c frame facts, fabric_ecn.c, fabric_pfc.c,
 * fabric_stats.c). Single-threaded: only xr_fabric_step touches it. */
#ifndef XR_FABRIC_INT_H
#define XR_FABRIC_INT_H

#include <pcap/pcap.h>
#include <stdatomic.h>

#include "xroce/fabric.h"

#define MAC_TABLE_MAX 1024
#define QHIST_BUCKETS 4096     /* 1 KiB each: up to 4 MiB of queue */
#define ETHERTYPE_MAC_CTRL 0x8808
#define MAC_CTRL_PAUSE 0x0001
#define MAC_CTRL_PFC 0x0101
#define ETHERTYPE_QINQ 0x88A8

/* A frame held in the shared buffer. */
struct cell {
	struct cell *next;
	uint64_t enq_ns;
	uint16_t len;
	uint8_t in_port, prio;
	uint8_t data[XR_MAX_FRAME];
};

/* Where a frame's headers are (offsets from the frame start). */
struct frame_info {
	uint16_t ethertype;    /* after any VLAN tags */
	uint16_t l3_off;       /* 0 when not IPv4/IPv6 */
	uint8_t ip_version;    /* 4, 6 or 0 */
	bool vlan;
	uint8_t pcp;
	uint8_t tclass;        /* IPv4 TOS / IPv6 traffic class */
};

struct queue {
	struct cell *head, *tail;
	uint64_t bytes;
	double avg;            /* RED's averaged length */
	uint64_t idle_since;   /* when the queue last went empty */
};

struct port {
	struct xr_link *link;
	char name[32];
	struct xr_fabric_port_cfg cfg;
	struct queue q[XR_FABRIC_PRIOS];
	uint64_t qbytes;                     /* all priorities */
	uint64_t tx_free_ns;                 /* the transmitter is busy until */
	bool up;                             /* the link's state, read once per step */
	/* Honouring received pauses, per egress priority. */
	uint64_t pause_until[XR_FABRIC_PRIOS];
	uint64_t pause_from[XR_FABRIC_PRIOS];
	/* PFC generation, per ingress priority. */
	uint64_t in_bytes[XR_FABRIC_PRIOS];
	bool xoff[XR_FABRIC_PRIOS];
	uint64_t xoff_refresh_ns[XR_FABRIC_PRIOS];
	struct xr_fabric_port_stats st;
	uint64_t *qhist;                     /* QHIST_BUCKETS samples by queue length */
	double qsum;
	pcap_t *pcap_dead;
	pcap_dumper_t *pcap;
};

struct mac_entry {
	uint8_t mac[6];
	uint8_t port;
	bool is_static;
};

/* A host attached with xr_fabric_attach_host: the fabric's neighbour table. */
struct host_entry {
	xr_gid gid;
	uint8_t mac[6];
	bool used;
};

struct xr_fabric {
	struct xr_fabric_cfg cfg;
	uint8_t dscp_map[64];
	struct port *ports[XR_FABRIC_MAX_PORTS];
	unsigned nports;
	_Atomic uint64_t now, prev;          /* read by host links in other threads */
	uint64_t next_sample_ns;
	/* The shared buffer. */
	struct cell *cells, *free_cells;
	uint64_t buf_used;
	struct mac_entry macs[MAC_TABLE_MAX];
	unsigned nmacs;
	struct host_entry hosts[XR_FABRIC_MAX_PORTS];
	uint64_t rng;
};

/* fabric_frame.c */
bool xr_fab_frame_info(const uint8_t *d, uint16_t len, struct frame_info *fi);
uint8_t xr_fab_prio(const struct xr_fabric *fab, const struct frame_info *fi);
uint64_t xr_fab_ser_ns(uint64_t bytes, uint64_t rate_bps);
uint64_t xr_fab_rand(uint64_t *s);

/* fabric_ecn.c: marks c (already counted in q's length or not) as RED says. */
void xr_fab_ecn_enqueue(struct xr_fabric *fab, struct port *eg, struct queue *q, struct cell *c);

/* fabric_pfc.c */
/* A MAC control frame received on port in: honours it. Returns false if it
 * is malformed (the caller counts the drop). */
bool xr_fab_pfc_rx(struct xr_fabric *fab, struct port *in, const uint8_t *d, uint16_t len);
/* Lossless priority prio at port in: may a frame of len bytes come in? */
bool xr_fab_pfc_admit(const struct port *in, uint8_t prio, uint16_t len);
/* Ingress accounting changed for (in, prio): XOFF/XON as thresholds say. */
void xr_fab_pfc_update(struct xr_fabric *fab, struct port *in, uint8_t prio);
/* Refreshes XOFFs about to run out at the sender. */
void xr_fab_pfc_tick(struct xr_fabric *fab, struct port *p);
/* The earliest refresh due on p, or UINT64_MAX. */
uint64_t xr_fab_pfc_next(const struct port *p);
/* Egress priority prio of p is paused at now. */
bool xr_fab_paused(const struct port *p, uint8_t prio, uint64_t now);

/* fabric_stats.c */
void xr_fab_pcap(struct xr_fabric *fab, struct port *p, const uint8_t *d, uint16_t len, uint64_t t);
int xr_fab_stats_open(struct xr_fabric *fab, struct port *p);
void xr_fab_stats_close(struct port *p);
void xr_fab_sample(struct xr_fabric *fab, uint64_t now);
void xr_fab_qlen_changed(struct port *p);

/* fabric_host.c */
int xr_fab_host_resolve(struct xr_fabric *fab, const xr_gid *gid, uint8_t mac[6]);

#endif
