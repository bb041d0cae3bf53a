/* SPDX-License-Identifier: MIT */
/*
 * The xroce register map: the single source for every register, counter
 * and event type. The engine's register file, the driver, xroce-regs and
 * docs/registers.md are all generated from these tables.
 *
 * The map keeps the FPGA seed's global block (CTRL 0x00 ... PEER_UDP_PORT
 * 0x20, QP window 0x40-0x7F, MR window 0x80-0xFF, counters 0x1000-0x1FFF)
 * and adds identification, status, an IPv6 address, a second QP window,
 * a CQ window, congestion-control and PFC parameters, an event-log window
 * and per-QP/per-CQ doorbells.
 *
 * All registers are 32 bits, accessed at 4-byte-aligned offsets. Results
 * follow AXI: OKAY, SLVERR (write to a read-only register, bad value,
 * refused command), DECERR (unmapped or misaligned address).
 */
#ifndef XROCE_REGMAP_H
#define XROCE_REGMAP_H

#include <stdint.h>
#include <stdio.h>

#include "xroce/wire.h"

#define XR_REG_ID_MAGIC   0x58524345u   /* "XRCE" */
/* 2.0: the congestion-control block (0x200-0x260) and counters were laid
 * out anew (issue 12); counters after srq_limit_reached moved.
 * 3.0: 2^20 QPs: the QP doorbells moved to 0x800000 (8 MiB of them), the
 * register space is XR_REG_SPACE; counter qp_mem_alloc_fail added after
 * srq_limit_reached (the parser's drop counters moved). 3.1: EVLOG_MASK.
 * 3.2: QP_SQ_LOG_SIZE.wqe_blocks (send WQE slots of 512 and 1024 bytes; 0
 * is the one 256-byte slot of before). 3.3: the same in QP_RQ_LOG_SIZE and
 * SRQ_LOG_SIZE for receive WQEs (an engine of 3.2 ignores those bits and
 * reads receive WQEs at a 256-byte stride). 3.4: the multicast group
 * window (MCG_*, 0x3B0-0x3CC), counters rcvd_mcast_pkts,
 * rx_drop_no_mcg, mcast_looped and mcast_loop_drop (the parser's drop
 * counters moved), command statuses
 * FULL and LINK, event mcg. */
#define XR_REGMAP_VERSION    0x00030004u   /* map version 3.4 */

/* Capacities of this engine model (also readable from CAP_* registers). */
#define XR_MAX_QP        (1u << 20)     /* QPNs 2 .. XR_MAX_QP-1 are usable (24 on the wire) */
#define XR_MAX_MR        (1u << 17)
#define XR_MAX_CQ        (1u << 17)
#define XR_MAX_SRQ       (1u << 12)     /* SRQNs 1 .. XR_MAX_SRQ-1 (0: none) */
#define XR_FIRST_QPN     2              /* 0 is invalid, 1 is GSI */
#define XR_EVLOG_ENTRIES 4096
#define XR_MAX_MCG       256            /* multicast groups */
#define XR_MCG_MAX_QP    32             /* QPs attached to one group */
#define XR_QPN_MCAST     0xFFFFFFu      /* DestQP of a multicast datagram */

enum xr_reg_access { XR_RW, XR_RO, XR_W1C, XR_WO };

/*
 * X(NAME, offset, access, reset value, "fields", "description")
 * fields: space-separated "name:bit" or "name:lo:width" (a register with
 * no fields is one 32-bit value).
 */
#define XR_REG_TABLE(X) \
	X(CTRL,            0x000, XR_RW, 0x00000001, "soft_reset:0 enable:1 loopback:2 retry7_forever:3", \
	  "Global control. soft_reset (1 at power-on) holds the engine in reset and clears all QP, MR, CQ, counter and event state when set; enable starts the data path (refused with SLVERR while the link is down or soft_reset is set); loopback turns transmitted frames back to the receive path; retry7_forever makes QP retry_cnt 7 retry without end, as rxe reads it (clear: seven retries, then RETRY_EXC_ERR, as the IBTA reserves 7 = infinite for rnr_retry only).") \
	X(MAC_LOW,         0x004, XR_RW, 0x00000000, "", "Local MAC address, bytes 2-5 (byte 5 in bits 7:0).") \
	X(MAC_HIGH,        0x008, XR_RW, 0x00000000, "mac_hi:0:16", "Local MAC address, bytes 0-1 (byte 0 in bits 15:8). Bits 31:16 must be 0.") \
	X(IP_ADDR,         0x00C, XR_RW, 0x00000000, "", "Local IPv4 address (a.b.c.d = 0xaabbccdd).") \
	X(UDP_PORT,        0x010, XR_RW, 0x000012B7, "port:0:16", "Local RoCE v2 UDP port (4791). Bits 31:16 must be 0.") \
	X(PEER_MAC_LOW,    0x014, XR_RW, 0x00000000, "", "Default peer MAC, bytes 2-5: used when a QP has no peer MAC of its own (static neighbour entry).") \
	X(PEER_MAC_HIGH,   0x018, XR_RW, 0x00000000, "mac_hi:0:16", "Default peer MAC, bytes 0-1.") \
	X(PEER_IP,         0x01C, XR_RW, 0x00000000, "", "Default peer IPv4 address.") \
	X(PEER_UDP_PORT,   0x020, XR_RW, 0x000012B7, "port:0:16", "Peer RoCE v2 UDP destination port (4791).") \
	X(ID,              0x024, XR_RO, XR_REG_ID_MAGIC, "", "Identification magic: 0x58524345 (\"XRCE\").") \
	X(VERSION,         0x028, XR_RO, XR_REGMAP_VERSION, "minor:0:16 major:16:16", "Register map version.") \
	X(STATUS,          0x02C, XR_RO, 0x00000100, "link_up:0 ready:1 enabled:2 not_ready:8:4", \
	  "Engine status. not_ready says why the engine is not running: 0 running, 1 in soft reset, 2 link down, 3 not enabled, 4 no local address configured.") \
	X(IPV6_ADDR_0,     0x030, XR_RW, 0x00000000, "", "Local IPv6 address, bytes 0-3 (big-endian word).") \
	X(IPV6_ADDR_1,     0x034, XR_RW, 0x00000000, "", "Local IPv6 address, bytes 4-7.") \
	X(IPV6_ADDR_2,     0x038, XR_RW, 0x00000000, "", "Local IPv6 address, bytes 8-11.") \
	X(IPV6_ADDR_3,     0x03C, XR_RW, 0x00000000, "", "Local IPv6 address, bytes 12-15.") \
	/* QP window: a shadow of one QP context, applied by QP_CMD. */ \
	X(QP_SEL,          0x040, XR_RW, 0x00000000, "qpn:0:24", "QPN that QP_CMD acts on.") \
	X(QP_CMD,          0x044, XR_WO, 0x00000000, "cmd:0:4", \
	  "QP command: 1 COMMIT (apply the shadow to QP_SEL atomically, creating it if needed), 2 READ (load QP_SEL into the shadow), 3 DESTROY, 4 CLEAR (zero the shadow). SLVERR when the QPN is out of range or the shadow holds an invalid context; QP_CMD_STATUS says why.") \
	X(QP_STATE,        0x048, XR_RW, 0x00000000, "state:0:4 type:4:4 path_mtu:8:4 ipv6:13", \
	  "QP state (0 RESET, 1 INIT, 2 RTR, 3 RTS, 4 SQD, 5 SQE, 6 ERR), transport type (0 RC, 1 UC, 3 UD), path MTU enum (1=256 ... 5=4096), IPv6 path.") \
	X(QP_DEST_QPN,     0x04C, XR_RW, 0x00000000, "qpn:0:24", "Remote QPN.") \
	X(QP_SQ_PSN,       0x050, XR_RW, 0x00000000, "psn:0:24", "Next send PSN.") \
	X(QP_RQ_PSN,       0x054, XR_RW, 0x00000000, "psn:0:24", "Expected receive PSN (ePSN).") \
	X(QP_MSN,          0x058, XR_RW, 0x00000000, "msn:0:24", "Responder message sequence number.") \
	X(QP_TIMERS,       0x05C, XR_RW, 0x00000000, "timeout:0:5 retry_cnt:8:3 rnr_retry:12:3 min_rnr_timer:16:5", \
	  "Local ACK timeout (4.096 us x 2^timeout, 0 = none), retry count, RNR retry (7 = infinite), minimum RNR NAK timer code.") \
	X(QP_RD_ATOMIC,    0x060, XR_RW, 0x00000000, "max_rd_atomic:0:8 max_dest_rd_atomic:8:8", "Outstanding READ/atomic limits as initiator and responder.") \
	X(QP_ACCESS,       0x064, XR_RW, 0x00000000, "access:0:4 pkey:16:16", "Access flags (bit 0 local write, 1 remote write, 2 remote read, 3 remote atomic) and P_Key.") \
	X(QP_FLOW,         0x068, XR_RW, 0x00000000, "flow_label:0:20", "IPv6 flow label (0: derived from the QPNs, as rxe).") \
	X(QP_PORTS,        0x06C, XR_RW, 0x12B70000, "src_port:0:16 dst_port:16:16", "UDP source port (0: rxe's rule from the QPNs) and destination port.") \
	X(QP_NET,          0x070, XR_RW, 0x00004000, "traffic_class:0:8 hop_limit:8:8 pcp:16:3 vlan:19 vid:20:12", "IP traffic class, hop limit/TTL, 802.1Q tagging.") \
	X(QP_SQ_CQN,       0x074, XR_RW, 0x00000000, "cqn:0:24", "CQ for send completions.") \
	X(QP_RQ_CQN,       0x078, XR_RW, 0x00000000, "cqn:0:24", "CQ for receive completions.") \
	X(QP_PD,           0x07C, XR_RW, 0x00000000, "pd:0:24", "Protection domain.") \
	/* MR window: a shadow of one MR entry, applied by MR_CMD. */ \
	X(MR_SEL,          0x080, XR_RW, 0x00000000, "index:0:24", "MR table index that MR_CMD acts on (the key's upper 24 bits).") \
	X(MR_CMD,          0x084, XR_WO, 0x00000000, "cmd:0:4", \
	  "MR command: 1 COMMIT (register an MR, or allocate an unbound memory window when MR_KIND.mw is set; the key variant changes, new keys appear in MR_LKEY/MR_RKEY), 2 READ, 3 INVALIDATE (deregister an MR: refused with BUSY while windows are bound to it; deallocate a window: unbinds it), 4 CLEAR (zero the shadow). SLVERR on a bad entry or index.") \
	X(MR_VA_LO,        0x088, XR_RW, 0x00000000, "", "Region start virtual address, bits 31:0.") \
	X(MR_VA_HI,        0x08C, XR_RW, 0x00000000, "", "Region start virtual address, bits 63:32.") \
	X(MR_LEN_LO,       0x090, XR_RW, 0x00000000, "", "Region length in bytes, bits 31:0.") \
	X(MR_LEN_HI,       0x094, XR_RW, 0x00000000, "", "Region length in bytes, bits 63:32.") \
	X(MR_ACCESS,       0x098, XR_RW, 0x00000000, "access:0:5 valid:8", "Access flags (bit 0 local write, 1 remote write, 2 remote read, 3 remote atomic, 4 MW bind: windows may be bound to the region); valid is set by the engine while the entry is registered. For a memory window: the window's access, set by the bind (read-only to the host).") \
	X(MR_PD,           0x09C, XR_RW, 0x00000000, "pd:0:24", "Protection domain.") \
	X(MR_LKEY,         0x0A0, XR_RO, 0x00000000, "variant:0:8 index:8:24", "Local key (assigned by COMMIT; read back with READ).") \
	X(MR_RKEY,         0x0A4, XR_RO, 0x00000000, "variant:0:8 index:8:24", "Remote key (assigned by COMMIT).") \
	X(MR_PAGE_SHIFT,   0x0A8, XR_RW, 0x0000000C, "shift:0:6", "Page size of the translation table, log2 (12 = 4 KiB).") \
	X(MR_MTT_LO,       0x0AC, XR_RW, 0x00000000, "", "Host address of the translation table (MTT), bits 31:0: an array of 64-bit host page addresses.") \
	X(MR_MTT_HI,       0x0B0, XR_RW, 0x00000000, "", "MTT host address, bits 63:32.") \
	X(MR_MTT_COUNT,    0x0B4, XR_RW, 0x00000000, "", "Number of MTT entries (pages covering VA .. VA+LEN).") \
	X(MR_KIND,         0x0B8, XR_RW, 0x00000000, "mw:0 mw_type:1:2", \
	  "Entry kind: mw clear for a memory region, set for a memory window (MW) of type mw_type (1 or 2), sharing the key space. A window is allocated unbound and bound by a BIND_MW work request (type 1 and 2); MR_VA/MR_LEN/MR_ACCESS then hold the window, MR_MW_BIND its region, and translation goes through that region's MTT. Windows are never valid as local keys.") \
	X(MR_MW_BIND,      0x0BC, XR_RO, 0x00000000, "parent:0:24 bound:31", "Window: the MR table index of the region it is bound to, and bound (set by a successful BIND_MW; cleared by LOCAL_INV or SEND_WITH_INV of a type-2 window, a zero-length bind of a type-1 window, or deallocation).") \
	X(MR_MW_QPN,       0x0C0, XR_RO, 0x00000000, "qpn:0:24", "Type-2 window: the QP that bound it, the only QP that may use it.") \
	X(MR_MW_COUNT,     0x0C4, XR_RO, 0x00000000, "count:0:24", "Region: windows bound to it (deregistration is refused while not 0).") \
	/* Identification of capacities and register errors. */ \
	X(CAP_QP,          0x100, XR_RO, XR_MAX_QP, "", "Number of QP table entries (QPNs 2 .. CAP_QP-1 usable).") \
	X(CAP_MR,          0x104, XR_RO, XR_MAX_MR, "", "Number of MR table entries.") \
	X(CAP_CQ,          0x108, XR_RO, XR_MAX_CQ, "", "Number of CQ table entries.") \
	X(REG_ERR_ADDR,    0x10C, XR_RO, 0x00000000, "", "Address of the last register access that failed.") \
	X(QP_CMD_STATUS,   0x110, XR_RO, 0x00000000, "reason:0:8", \
	  "Why the last QP/MR/CQ command failed (0 ok; the values are listed under Command status).") \
	X(CNT_CTRL,        0x114, XR_WO, 0x00000000, "clear:0", "Write clear=1 to zero every counter.") \
	/* Congestion control: ECN, the CNP notification point, DCQCN's reaction point (docs/congestion.md). */ \
	X(CC_CTRL,         0x200, XR_RW, 0x00063007, "ecn_enable:0 cnp_enable:1 dcqcn_enable:2 ect1:3 clamp_target:4 cnp_dscp:8:6 cnp_prio:16:3", \
	  "Congestion control. ecn_enable: RoCE frames leave ECN-capable (ECT(0), or ECT(1) with ect1) unless the QP's traffic class sets ECN bits itself; cnp_enable: a CE-marked packet for a connected QP is answered with a CNP (opcode 0x81) to the peer QP, at most one per CC_CNP_INTERVAL_US; dcqcn_enable: a received CNP cuts the QP's rate (DCQCN); clamp_target: every cut first sets the target rate to the current one (otherwise only after an increase stage); cnp_dscp/cnp_prio: the CNP's DSCP and 802.1Q priority (48 and 6, as ConnectX).") \
	X(CC_CNP_INTERVAL_US, 0x204, XR_RW, 0x00000032, "", "Notification point: minimum microseconds between two CNPs for one QP (50; 0: one per CE-marked packet). CE marks in between are counted (cnp_suppressed).") \
	X(DCQCN_G,         0x208, XR_RW, 0x00000100, "g:0:16", "DCQCN alpha gain g in 1/65536 (256 = 1/256): alpha = (1-g)alpha + g on a CNP, (1-g)alpha per DCQCN_ALPHA_US without one.") \
	X(DCQCN_ALPHA_US,  0x20C, XR_RW, 0x00000037, "", "DCQCN alpha decay period K, microseconds (55).") \
	X(DCQCN_TIMER_US,  0x210, XR_RW, 0x00000037, "", "DCQCN rate increase timer T, microseconds (55).") \
	X(DCQCN_BYTE_RESET,0x214, XR_RW, 0x00989680, "", "DCQCN rate increase byte counter B, bytes sent (10 MB).") \
	X(DCQCN_F,         0x218, XR_RW, 0x00000005, "f:0:8", "DCQCN fast recovery steps F: increase events below F average the rate toward the target; at F additive, beyond F in both counters hyper increase (5).") \
	X(DCQCN_RATE_AI,   0x21C, XR_RW, 0x00000028, "", "DCQCN additive increase R_AI, Mb/s (40).") \
	X(DCQCN_RATE_HAI,  0x220, XR_RW, 0x000000C8, "", "DCQCN hyper increase R_HAI, Mb/s (200).") \
	X(DCQCN_MIN_RATE,  0x224, XR_RW, 0x0000000A, "", "DCQCN minimum rate, Mb/s (10).") \
	X(DCQCN_MAX_RATE,  0x228, XR_RW, 0x000186A0, "", "Line rate, Mb/s (100000): a QP's rate on its first CNP and the ceiling of every increase; a QP back at it stops being paced.") \
	X(DCQCN_INIT_ALPHA,0x22C, XR_RW, 0x00000400, "alpha:0:11", "DCQCN alpha on a QP's first CNP, in 1/1024 (1024 = 1).") \
	X(CC_PACER_BURST,  0x230, XR_RW, 0x00004000, "", "Pacer bucket depth, bytes (16 KiB): what a paced QP may send at once after idling; at least two frames are always allowed.") \
	/* PFC (802.1Qbb) and 802.3x PAUSE on Ethernet links, with a watchdog (docs/congestion.md). */ \
	X(PFC_CTRL,        0x240, XR_RW, 0x00000000, "enable:0:8 rx_enable:8:8 pause_rx:16 prio_dscp:17", "PFC (docs/pfc.md): enable, one bit per priority, sends XOFF/XON for that priority from the link's receive backlog; rx_enable honours received PFC frames for that priority (QPs whose frames carry it stop sending); pause_rx honours 802.3x PAUSE (every priority). A QP's priority is its 802.1Q PCP when it has a VLAN tag, else DSCP >> 3 of its traffic class; prio_dscp: always DSCP >> 3.") \
	X(PFC_QUANTA,      0x244, XR_RW, 0x0000FFFF, "quanta:0:16", "Pause time sent in XOFF frames, 512-bit-time quanta at PFC_LINK_MBPS (0: 65535; refreshed at half of it while still above PFC_XON).") \
	X(PFC_XOFF,        0x248, XR_RW, 0x00000050, "percent:0:7", "Receive backlog, percent of the link's receive buffer, at or above which XOFF is sent (80).") \
	X(PFC_XON,         0x24C, XR_RW, 0x00000032, "percent:0:7", "Receive backlog, percent, at or below which XON (pause time 0) is sent (50).") \
	X(PFC_MAX_PAUSE_US,0x250, XR_RW, 0x00000000, "", "Longest pause honoured from one received frame, microseconds (0: as the frame says).") \
	X(PFC_LINK_MBPS,   0x254, XR_RW, 0x000186A0, "", "Link speed for pause quanta, Mb/s (100000: one quantum is 5.12 ns).") \
	X(PFC_WD_MS,       0x258, XR_RW, 0x00000064, "", "Watchdog: a priority paused this many milliseconds without a break is a storm: the pause is released and PFC frames for it are ignored for PFC_WD_RESTORE_MS (100; 0: off).") \
	X(PFC_WD_RESTORE_MS, 0x25C, XR_RW, 0x000000C8, "", "Watchdog restoration: PFC for a stormed priority is honoured again after this many milliseconds without a PFC frame for it (200).") \
	X(PFC_STATUS,      0x260, XR_RO, 0x00000000, "paused:0:8 xoff_sent:8:8 stormed:16:8", "Read live: priorities now paused by the peer (transmit), those for which an XOFF of ours is out (receive), and those the watchdog holds released (their PFC ignored).") \
	/* Event log window. */ \
	X(EVLOG_COUNT,     0x280, XR_RO, 0x00000000, "", "Events logged since reset (low 32 bits of the sequence).") \
	X(EVLOG_WRAP,      0x284, XR_RO, 0x00000000, "", "Times the ring wrapped (events lost to overwrite = EVLOG_COUNT - EVLOG_CAP when wrapped).") \
	X(EVLOG_CAP,       0x288, XR_RO, XR_EVLOG_ENTRIES, "", "Ring capacity in entries.") \
	X(EVLOG_SEL,       0x28C, XR_RW, 0x00000000, "", "Sequence number of the event to read into EVLOG_TS_LO..EVLOG_ARG1: writing it latches that event, so its fields read one by one belong together.") \
	X(EVLOG_TS_LO,     0x290, XR_RO, 0x00000000, "", "Selected event: timestamp in ns since engine creation, bits 31:0.") \
	X(EVLOG_TS_HI,     0x294, XR_RO, 0x00000000, "", "Selected event: timestamp bits 63:32.") \
	X(EVLOG_TYPE,      0x298, XR_RO, 0x00000000, "type:0:8 valid:31", "Selected event: type (see the event table); valid clear when the sequence number is not (or no longer) in the ring.") \
	X(EVLOG_QPN,       0x29C, XR_RO, 0x00000000, "qpn:0:24", "Selected event: QPN (0 for engine-wide events).") \
	X(EVLOG_ARG0,      0x2A0, XR_RO, 0x00000000, "", "Selected event: first argument.") \
	X(EVLOG_ARG1,      0x2A4, XR_RO, 0x00000000, "", "Selected event: second argument.") \
	X(EVLOG_MASK,      0x2A8, XR_RW, 0x00000100, "", \
	  "Event types not logged: bit t set drops events of type t (see the event table). Reset: wqe_posted (bit 8), one event per doorbell, which at millions of doorbells a second would overwrite the ring's errors within milliseconds; clear the bit to trace doorbells. The driver's asynchronous events (cq_error, sq_drained, srq_limit, qp_last_wqe) are read from the log: masking them loses them.") \
	/* QP window, second page: addressing and rings of the same shadow. */ \
	X(QP_PEER_GID_0,   0x300, XR_RW, 0x00000000, "", "Peer GID bytes 0-3 (IPv4 peers: ::ffff:a.b.c.d).") \
	X(QP_PEER_GID_1,   0x304, XR_RW, 0x00000000, "", "Peer GID bytes 4-7.") \
	X(QP_PEER_GID_2,   0x308, XR_RW, 0x00000000, "", "Peer GID bytes 8-11.") \
	X(QP_PEER_GID_3,   0x30C, XR_RW, 0x00000000, "", "Peer GID bytes 12-15.") \
	X(QP_PEER_MAC_LOW, 0x310, XR_RW, 0x00000000, "", "Peer MAC bytes 2-5 (0 with QP_PEER_MAC_HIGH: use PEER_MAC or neighbour resolution).") \
	X(QP_PEER_MAC_HIGH,0x314, XR_RW, 0x00000000, "mac_hi:0:16", "Peer MAC bytes 0-1.") \
	X(QP_SQ_BASE_LO,   0x318, XR_RW, 0x00000000, "", "Send queue ring host address, bits 31:0.") \
	X(QP_SQ_BASE_HI,   0x31C, XR_RW, 0x00000000, "", "Send queue ring host address, bits 63:32.") \
	X(QP_SQ_LOG_SIZE,  0x320, XR_RW, 0x00000000, "log_entries:0:5 wqe_blocks:8:2", "Send queue ring size, log2 of entries; wqe_blocks: a WQE slot's size, log2 of 256-byte blocks (0: 256 bytes, 1: 512, 2: 1024), whose body after the 64-byte header holds 12, 28 or 60 SGEs or 192, 448 or 960 bytes of inline data.") \
	X(QP_RQ_BASE_LO,   0x324, XR_RW, 0x00000000, "", "Receive queue ring host address, bits 31:0.") \
	X(QP_RQ_BASE_HI,   0x328, XR_RW, 0x00000000, "", "Receive queue ring host address, bits 63:32.") \
	X(QP_RQ_LOG_SIZE,  0x32C, XR_RW, 0x00000000, "log_entries:0:5 wqe_blocks:8:2", "Receive queue ring size, log2 of entries; wqe_blocks: a WQE slot's size, log2 of 256-byte blocks (0: 256 bytes, 1: 512, 2: 1024), whose body after the 16-byte header holds 15, 31 or 63 SGEs.") \
	X(QP_SQ_CI,        0x330, XR_RO, 0x00000000, "index:0:16", "Send queue consumer index (WQEs the engine has completed).") \
	X(QP_RQ_CI,        0x334, XR_RO, 0x00000000, "index:0:16", "Receive queue consumer index.") \
	X(QP_COMMIT_MASK,  0x338, XR_RW, 0xFFFFFFFF, "", \
	  "Which fields a COMMIT of an existing QP applies, as ibv_qp_attr_mask: bit 0 state, 3 access flags, 4 P_Key, 7 address vector (GID, MAC, ports, traffic class, hop limit, flow label, VLAN), 8 path MTU, 9 timeout, 10 retry count, 11 RNR retry, 12 RQ PSN, 13 max_rd_atomic, 15 min RNR timer, 16 SQ PSN, 17 max_dest_rd_atomic, 20 dest QPN; xroce: 24 rings, 25 CQs, 26 PD, 27 type, 28 MSN, 29 SRQ, 30 rate limit; 6 is the UD Q_Key (IBV_QP_QKEY). Fields left out keep the engine's values (PSNs advance while a driver edits the shadow). A new QP takes every field. Rings, CQs, PD and SRQ change only in RESET (BAD_STATE otherwise; the same values pass).") \
	/* CQ window. */ \
	X(CQ_SEL,          0x340, XR_RW, 0x00000000, "cqn:0:24", "CQN that CQ_CMD acts on.") \
	X(CQ_CMD,          0x344, XR_WO, 0x00000000, "cmd:0:4", "CQ command: 1 COMMIT (create, or resize: on a CQ in use with another ring the engine moves the CQEs not yet consumed into it, each at its index, and marks the rest of the new ring unwritten; BAD_RANGE if they do not fit), 2 READ, 3 DESTROY, 4 CLEAR.") \
	X(CQ_BASE_LO,      0x348, XR_RW, 0x00000000, "", "Completion ring host address, bits 31:0.") \
	X(CQ_BASE_HI,      0x34C, XR_RW, 0x00000000, "", "Completion ring host address, bits 63:32.") \
	X(CQ_LOG_SIZE,     0x350, XR_RW, 0x00000000, "log_entries:0:5", "Completion ring size, log2 of entries.") \
	X(CQ_PI,           0x354, XR_RO, 0x00000000, "index:0:32", "Producer index (CQEs written by the engine).") \
	X(CQ_STATE,        0x358, XR_RO, 0x00000000, "valid:0 armed:1 solicited_only:2 overflow:3", "CQ state as of READ.") \
	/* QP window, third page: UD and SRQ fields of the same shadow. */ \
	X(QP_QKEY,         0x35C, XR_RW, 0x00000000, "", \
	  "UD Q_Key: a received DETH Q_Key must equal it (else rx_drop_bad_qkey); sent instead of a WQE's Q_Key whose bit 31 is set (privileged Q_Key, IBTA C10-15). COMMIT mask bit 6.") \
	X(QP_SRQN,         0x360, XR_RW, 0x00000000, "srqn:0:12", \
	  "Shared receive queue the QP takes its receive WQEs from (0: its own receive queue). Taken when the QP is created; COMMIT mask bit 29 on a QP in RESET.") \
	X(QP_RATE_LIMIT,   0x364, XR_RW, 0x00000000, "mbps:0:24", \
	  "Static rate cap, Mb/s (0: none; ibv static_rate / rate_limit): the pacer never lets the QP send faster, whatever DCQCN allows. COMMIT mask bit 30.") \
	X(QP_CC_RATE,      0x368, XR_RO, 0x00000000, "mbps:0:24", "As of READ: the rate the pacer holds the QP to, Mb/s (0: not paced).") \
	X(QP_CC_TARGET,    0x36C, XR_RO, 0x00000000, "mbps:0:24", "As of READ: DCQCN's target rate, Mb/s (0: DCQCN idle on this QP).") \
	X(QP_CC_ALPHA,     0x370, XR_RO, 0x00000000, "alpha:0:11", "As of READ: DCQCN's alpha, 1/1024.") \
	X(QP_CE_RCVD,      0x374, XR_RO, 0x00000000, "count:0:32", "As of READ: CE-marked packets received on the QP.") \
	X(QP_CNP_SENT,     0x378, XR_RO, 0x00000000, "count:0:32", "As of READ: CNPs the QP sent (notification point).") \
	X(QP_CNP_RCVD,     0x37C, XR_RO, 0x00000000, "count:0:32", "As of READ: CNPs received for the QP (reaction point).") \
	/* SRQ window: a shadow of one shared receive queue, applied by SRQ_CMD. */ \
	X(SRQ_SEL,         0x380, XR_RW, 0x00000000, "srqn:0:12", "SRQN that SRQ_CMD acts on (1 .. CAP_SRQ-1).") \
	X(SRQ_CMD,         0x384, XR_WO, 0x00000000, "cmd:0:4", \
	  "SRQ command: 1 COMMIT (create from the shadow; on an existing SRQ only SRQ_LIMIT is applied), 2 READ, 3 DESTROY (refused with BUSY while QPs use it), 4 CLEAR.") \
	X(SRQ_BASE_LO,     0x388, XR_RW, 0x00000000, "", "Receive WQE ring host address, bits 31:0 (receive WQE format).") \
	X(SRQ_BASE_HI,     0x38C, XR_RW, 0x00000000, "", "Receive WQE ring host address, bits 63:32.") \
	X(SRQ_LOG_SIZE,    0x390, XR_RW, 0x00000000, "log_entries:0:5 wqe_blocks:8:2", "Ring size, log2 of entries (1..15); wqe_blocks as QP_RQ_LOG_SIZE's.") \
	X(SRQ_LIMIT,       0x394, XR_RW, 0x00000000, "limit:0:16", \
	  "Limit (0: disarmed). When taking a WQE leaves fewer than this posted, the engine logs an srq_limit event once and clears the limit (ibv_modify_srq IBV_SRQ_LIMIT).") \
	X(SRQ_PD,          0x398, XR_RW, 0x00000000, "pd:0:24", "Protection domain.") \
	X(SRQ_STATE,       0x39C, XR_RO, 0x00000000, "valid:0 qps:8:24", "SRQ state as of READ: valid, and the number of QPs attached.") \
	X(SRQ_CI,          0x3A0, XR_RO, 0x00000000, "index:0:16", \
	  "WQEs taken (free-running): the engine copies a WQE when it takes it, so every slot before this index may be reused.") \
	X(SRQ_DB,          0x3A4, XR_WO, 0x00000000, "pi:0:16 srqn:16:12", \
	  "SRQ doorbell: the new producer index of SRQ srqn (WQEs posted, mod 2^16). SLVERR for an SRQ that does not exist.") \
	X(CAP_SRQ,         0x3A8, XR_RO, XR_MAX_SRQ, "", "Number of SRQ table entries (SRQNs 1 .. CAP_SRQ-1 usable).") \
	/* Multicast group window (D8): UD QPs attached to group GIDs. */ \
	X(MCG_GID_0,       0x3B0, XR_RW, 0x00000000, "", "Multicast group GID, bytes 0-3 (byte 0 in bits 31:24); an IPv4 group as ::ffff:a.b.c.d.") \
	X(MCG_GID_1,       0x3B4, XR_RW, 0x00000000, "", "Multicast group GID, bytes 4-7.") \
	X(MCG_GID_2,       0x3B8, XR_RW, 0x00000000, "", "Multicast group GID, bytes 8-11.") \
	X(MCG_GID_3,       0x3BC, XR_RW, 0x00000000, "", "Multicast group GID, bytes 12-15.") \
	X(MCG_QPN,         0x3C0, XR_RW, 0x00000000, "qpn:0:24", "QP that MCG_CMD attaches or detaches.") \
	X(MCG_CMD,         0x3C4, XR_WO, 0x00000000, "cmd:0:2", \
	  "Multicast command: 1 ATTACH the UD QP MCG_QPN to the group MCG_GID (again: no change), 2 DETACH it. The first QP of a group has the link join it, the last one's detach has it leave. SLVERR, QP_CMD_STATUS saying why: a GID that is no group (IPv4 224.0.0.0/4, IPv6 ff00::/8; BAD_RANGE), a QP that does not exist (NO_ENTRY) or is not UD (BAD_TYPE), a full table (FULL: CAP_MCG), the link refusing the group (LINK), a DETACH of a QP not attached (NO_ENTRY). A datagram to DestQP 0xFFFFFF is handed to every QP attached to its destination group, each checked as a datagram to it alone (state, transport, P_Key, Q_Key); a QP attached cannot be destroyed (BUSY).") \
	X(MCG_STATUS,      0x3C8, XR_RO, 0x00000000, "groups:0:16 attached:16:16", "Groups in use, and attachments (QP, group) in all.") \
	X(CAP_MCG,         0x3CC, XR_RO, XR_MAX_MCG | XR_MCG_MAX_QP << 16, "groups:0:16 qps:16:16", "Multicast groups the table holds, and QPs per group.")

/*
 * Register arrays: one register per QP or CQ, each block aligned to its
 * size (the CQ doorbells 0x200000-0x2FFFFF, the QP doorbells
 * 0x800000-0xFFFFFF; checked below and in test_regs).
 * X(NAME, base, count, stride, access, "fields", "description")
 */
#define XR_REG_ARRAY_TABLE(X) \
	X(DB_CQ_CI, 0x200000, XR_MAX_CQ, 8, XR_WO, "ci:0:32", \
	  "Completion queue n consumer index at 0x200000 + 8n: CQEs the host has consumed (free-running). SLVERR, nothing changed, for an index behind the last one or past the CQEs written.") \
	X(DB_CQ_ARM, 0x200004, XR_MAX_CQ, 8, XR_WO, "arm:0 solicited:1", \
	  "Arm completion queue n at 0x200004 + 8n: signal the next completion (or the next solicited one).") \
	X(DB_SQ, 0x800000, XR_MAX_QP, 8, XR_WO, "pi:0:16", \
	  "Send queue doorbell of QP n at 0x800000 + 8n: the new producer index (WQEs posted, mod 2^16). A posted write: an index behind a WQE already started, or more than the ring holds past the oldest WQE not completed, fails the send queue when the engine reads it (counter sq_doorbell_refused).") \
	X(DB_RQ, 0x800004, XR_MAX_QP, 8, XR_WO, "pi:0:16", \
	  "Receive queue doorbell of QP n at 0x800004 + 8n: the new producer index. SLVERR, nothing changed, for a QP on an SRQ, an index behind a WQE already taken, or more than the ring holds past the oldest WQE not completed. Checked without a lock against the engine's indexes as the write lands: an index the check let pass that falls behind a WQE taken meanwhile reads as nothing posted past the WQEs taken, until a write that fits.")

/* The register space (a BAR's size): every array's last register lies
 * inside it. */
#define XR_REG_SPACE 0x1000000u
#define XR_X(name, base, count, stride, acc, fields, desc) \
	_Static_assert((uint64_t)(base) + ((uint64_t)(count) - 1) * (stride) + 4 <= XR_REG_SPACE, \
		       #name " ends beyond the register space");
XR_REG_ARRAY_TABLE(XR_X)
#undef XR_X

#define XR_COUNTER_BASE 0x1000
#define XR_COUNTER_END  0x2000

/*
 * Counters: 64 bits at XR_COUNTER_BASE + 8 * index (low word, then high
 * word at +4). Reading the low word latches the high word, so a low-then-
 * high read pair is consistent. Names follow rxe's hw_counters where the
 * meaning is the same. X(ENUM, "name", "description")
 */
#define XR_COUNTER_TABLE(X) \
	X(TX_PKTS,            "sent_pkts",              "Frames transmitted.") \
	X(TX_BYTES,           "sent_bytes",             "Bytes transmitted (whole frames).") \
	X(RX_PKTS,            "rcvd_pkts",              "Frames received and accepted by the parser.") \
	X(RX_BYTES,           "rcvd_bytes",             "Bytes received (whole frames, accepted ones).") \
	X(RDMA_SENDS,         "rdma_sends",             "SEND messages transmitted (first transmission).") \
	X(RDMA_RECVS,         "rdma_recvs",             "SEND messages received and completed.") \
	X(TX_ACK,             "ack_sent",               "ACK packets sent.") \
	X(TX_NAK_SEQ,         "nak_seq_sent",           "PSN sequence error NAKs sent.") \
	X(TX_NAK_INV_REQ,     "nak_inv_req_sent",       "Invalid request NAKs sent.") \
	X(TX_NAK_REM_ACCESS,  "nak_rem_access_sent",    "Remote access error NAKs sent.") \
	X(TX_NAK_REM_OP,      "nak_rem_op_sent",        "Remote operational error NAKs sent.") \
	X(TX_RNR_NAK,         "send_rnr_err",           "RNR NAKs sent (no receive WQE posted).") \
	X(RX_ACK,             "ack_rcvd",               "ACK packets received.") \
	X(RX_NAK_SEQ,         "rcvd_seq_err",           "PSN sequence error NAKs received.") \
	X(RX_NAK_INV_REQ,     "rcvd_inv_req_err",       "Invalid request NAKs received.") \
	X(RX_NAK_REM_ACCESS,  "rcvd_rem_access_err",    "Remote access error NAKs received.") \
	X(RX_NAK_REM_OP,      "rcvd_rem_op_err",        "Remote operational error NAKs received.") \
	X(RX_RNR_NAK,         "rcvd_rnr_err",           "RNR NAKs received.") \
	X(RETRANSMITS,        "completer_retry_err",    "Go-back-N retransmissions started.") \
	X(ACK_TIMEOUTS,       "ack_timeouts",           "Local ACK timer expiries.") \
	X(RETRY_EXCEEDED,     "retry_exceeded_err",     "QPs failed with retry count exhausted.") \
	X(RNR_RETRY_EXCEEDED, "retry_rnr_exceeded_err", "QPs failed with RNR retry count exhausted.") \
	X(DUP_REQUEST,        "duplicate_request",      "Duplicate requests received (PSN before ePSN).") \
	X(OUT_OF_SEQ,         "out_of_seq_request",     "Requests received with PSN after ePSN.") \
	X(RKEY_VIOLATION,     "rkey_violation",         "Requests refused: unknown, stale or invalid R_Key.") \
	X(BOUNDS_VIOLATION,   "bounds_violation",       "Requests refused: range outside the memory region.") \
	X(PERM_VIOLATION,     "perm_violation",         "Requests refused: access not permitted by the MR or QP.") \
	X(SQ_WQES,            "sq_wqes",                "Send WQEs taken from send queues.") \
	X(RQ_WQES,            "rq_wqes",                "Receive WQEs consumed.") \
	X(CQES,               "cqes",                   "Completions written.") \
	X(CQ_OVERFLOW,        "cq_overflow",            "Completions dropped because a CQ was full.") \
	X(CNP_SENT,           "cnp_sent",               "Congestion notification packets sent.") \
	X(CNP_RCVD,           "cnp_rcvd",               "Congestion notification packets received.") \
	X(ECN_MARKED,         "ecn_marked_pkts",        "Received packets with ECN CE set.") \
	X(CNP_SUPPRESSED,     "cnp_suppressed",         "CE-marked packets left without a CNP: one was sent for the QP less than CC_CNP_INTERVAL_US before.") \
	X(DROP_CNP,           "rx_drop_cnp",            "CNPs ignored: no connected QP of that number, or not from its peer.") \
	X(DCQCN_CUTS,         "dcqcn_rate_decreases",   "DCQCN rate decreases (one per CNP taken).") \
	X(DCQCN_INCREASES,    "dcqcn_rate_increases",   "DCQCN rate increase events (timer and byte counter).") \
	X(PACER_WAITS,        "pacer_waits",            "Times a QP had a packet ready and its pacer held it.") \
	X(PFC_PAUSE_SENT,     "pfc_pause_sent",         "PFC XOFF frames sent (all priorities).") \
	X(PFC_PAUSE_RCVD,     "pfc_pause_rcvd",         "PFC frames received naming a priority with a non-zero time.") \
	X(PFC_XON_SENT,       "pfc_xon_sent",           "PFC XON (zero-time) frames sent.") \
	X(PFC_XON_RCVD,       "pfc_xon_rcvd",           "PFC frames received resuming a priority (time 0).") \
	X(PAUSE_RCVD,         "pause_rcvd",             "802.3x PAUSE frames received.") \
	X(PFC_TX_PRIO0, "pfc_tx_prio0", "PFC XOFF frames sent for priority 0.") \
	X(PFC_TX_PRIO1, "pfc_tx_prio1", "PFC XOFF frames sent for priority 1.") \
	X(PFC_TX_PRIO2, "pfc_tx_prio2", "PFC XOFF frames sent for priority 2.") \
	X(PFC_TX_PRIO3, "pfc_tx_prio3", "PFC XOFF frames sent for priority 3.") \
	X(PFC_TX_PRIO4, "pfc_tx_prio4", "PFC XOFF frames sent for priority 4.") \
	X(PFC_TX_PRIO5, "pfc_tx_prio5", "PFC XOFF frames sent for priority 5.") \
	X(PFC_TX_PRIO6, "pfc_tx_prio6", "PFC XOFF frames sent for priority 6.") \
	X(PFC_TX_PRIO7, "pfc_tx_prio7", "PFC XOFF frames sent for priority 7.") \
	X(PFC_RX_PRIO0, "pfc_rx_prio0", "PFC frames received pausing priority 0.") \
	X(PFC_RX_PRIO1, "pfc_rx_prio1", "PFC frames received pausing priority 1.") \
	X(PFC_RX_PRIO2, "pfc_rx_prio2", "PFC frames received pausing priority 2.") \
	X(PFC_RX_PRIO3, "pfc_rx_prio3", "PFC frames received pausing priority 3.") \
	X(PFC_RX_PRIO4, "pfc_rx_prio4", "PFC frames received pausing priority 4.") \
	X(PFC_RX_PRIO5, "pfc_rx_prio5", "PFC frames received pausing priority 5.") \
	X(PFC_RX_PRIO6, "pfc_rx_prio6", "PFC frames received pausing priority 6.") \
	X(PFC_RX_PRIO7, "pfc_rx_prio7", "PFC frames received pausing priority 7.") \
	X(PFC_PAUSED_US_PRIO0, "pfc_paused_us_prio0", "Microseconds priority 0 stood paused (transmit).") \
	X(PFC_PAUSED_US_PRIO1, "pfc_paused_us_prio1", "Microseconds priority 1 stood paused.") \
	X(PFC_PAUSED_US_PRIO2, "pfc_paused_us_prio2", "Microseconds priority 2 stood paused.") \
	X(PFC_PAUSED_US_PRIO3, "pfc_paused_us_prio3", "Microseconds priority 3 stood paused.") \
	X(PFC_PAUSED_US_PRIO4, "pfc_paused_us_prio4", "Microseconds priority 4 stood paused.") \
	X(PFC_PAUSED_US_PRIO5, "pfc_paused_us_prio5", "Microseconds priority 5 stood paused.") \
	X(PFC_PAUSED_US_PRIO6, "pfc_paused_us_prio6", "Microseconds priority 6 stood paused.") \
	X(PFC_PAUSED_US_PRIO7, "pfc_paused_us_prio7", "Microseconds priority 7 stood paused.") \
	X(PFC_WD_TRIPS,       "pfc_watchdog_trips",     "PFC storms: a pause held longer than PFC_WD_MS, released by the watchdog.") \
	X(PFC_WD_RESTORES,    "pfc_watchdog_restores",  "Stormed priorities whose PFC is honoured again.") \
	X(PFC_WD_IGNORED,     "pfc_watchdog_ignored",   "PFC frames ignored for a priority the watchdog holds released.") \
	X(DROP_MAC_CONTROL,   "rx_drop_mac_control",    "MAC control frames (EtherType 0x8808) dropped: unknown opcode, too short, or flow control off.") \
	X(REG_SLVERR,         "reg_slverr",             "Register accesses answered SLVERR.") \
	X(REG_DECERR,         "reg_decerr",             "Register accesses answered DECERR.") \
	X(DROP_UNKNOWN_QPN,   "rx_drop_unknown_qpn",    "Dropped: destination QP does not exist.") \
	X(DROP_BAD_STATE,     "rx_drop_bad_state",      "Dropped: QP state does not accept the packet.") \
	X(DROP_BAD_TRANSPORT, "rx_drop_bad_transport",  "Dropped: opcode transport differs from the QP's type.") \
	X(DROP_NOT_FOR_US,    "rx_drop_not_for_us",     "Dropped: destination MAC or IP is not this engine's.") \
	X(DROP_BAD_SRC,       "rx_drop_bad_src",        "Dropped: source IP differs from the QP's peer.") \
	X(DROP_BAD_PKEY,      "rx_drop_bad_pkey",       "Dropped: P_Key mismatch.") \
	X(DROP_BAD_QKEY,      "rx_drop_bad_qkey",       "Dropped: UD Q_Key mismatch.") \
	X(DROP_DISABLED,      "rx_drop_disabled",       "Dropped: engine not enabled.") \
	X(DROP_RESP_UNEXPECTED, "rx_drop_unexpected_resp", "Dropped: ACK, NAK or response with nothing outstanding to answer, or of a kind the oldest WQE does not take.") \
	X(DROP_RESP_WINDOW,   "rx_drop_resp_out_of_window", "Dropped: ACK, NAK or response whose PSN lies beyond anything sent.") \
	X(DUP_RESPONSE,       "duplicate_response",     "Duplicate or stale responses ignored (PSN already acknowledged or not the one expected).") \
	X(DROP_DUP_NO_RES,    "rx_drop_dup_no_resource", "Duplicate READ/atomic dropped: no saved responder resource matches it.") \
	X(DROP_RESP_BUSY,     "rx_drop_resp_busy",      "Request dropped unexecuted (the requester retries it): the QP's response queue is full behind a link that does not take frames.") \
	X(RD_ATOMIC_EXCEEDED, "rd_atomic_res_exceeded", "READ/atomic requests refused with NAK invalid request: more outstanding than max_dest_rd_atomic.") \
	X(INV_REFUSED,        "inv_refused",            "SEND_WITH_INV or LOCAL_INV refused: the key names no invalidatable MR or MW.") \
	X(ICRC_ID_RECOVERED,  "rx_icrc_id_recovered",   "UDP link: frames accepted with the IPv4 ID recovered from the ICRC (only 16 of the 32 ICRC bits checked).") \
	X(DROP_ICRC_UNVERIFIABLE, "rx_drop_icrc_unverifiable", "UDP link, strict mode: dropped because the ICRC could not be checked in full (unknown non-zero IPv4 ID).") \
	X(DROP_NO_RWQE,       "rx_drop_no_rwqe",        "Dropped: UC or UD message that needed a receive WQE with none posted (these transports have no RNR NAK).") \
	X(DROP_UD_OVERSIZE,   "rx_drop_ud_oversize",    "Dropped: UD datagram longer than the receive buffer less its 40 GRH bytes (the WQE stays posted).") \
	X(DROP_UC_MSG,        "rx_drop_uc_msg",         "Dropped: UC packet of a message cut short (PSN gap, opcode out of sequence, a new FIRST/ONLY) or with no message open.") \
	X(DROP_UC_INVALID,    "rx_drop_uc_invalid",     "Dropped: UC message failing a length, access or R_Key check (UC never NAKs; the QP stays in RTS).") \
	X(UD_SEND_OVERSIZE,   "ud_send_oversize",       "UD sends longer than the MTU: nothing sent, PSN used, completed SUCCESS (C10-93.1.1, as rxe).") \
	X(SRQ_LIMIT_REACHED,  "srq_limit_reached",      "SRQ limit events raised.") \
	X(QP_MEM_FAIL,        "qp_mem_alloc_fail",      "Engine memory for QPs ran out: a QP_CMD COMMIT refused (BUSY, nothing changed), a requester waiting for its in-flight state, or a request dropped unexecuted for want of it or of READ/atomic resources (the requester sends it again).") \
	X(IRQ_LOST,           "irq_lost",               "Interrupts not delivered: raised inside a register access or a pass, with no memory left to hold them until its end (their events stay in the log).") \
	X(SQ_DOORBELL_REFUSED, "sq_doorbell_refused",   "Send doorbells refused when the engine read them: an index behind WQEs already started, or more WQEs than the ring holds past the oldest not completed. The send queue fails (local QP operation error: RC to ERR, UD/UC to SQE); the WQEs up to the last index the engine read that fitted are flushed, and none runs again.") \
	X(RX_MCAST,           "rcvd_mcast_pkts",        "Datagrams to a multicast group some QP is attached to (once each, however many QPs take it).") \
	X(DROP_NO_MCG,        "rx_drop_no_mcg",         "Dropped: datagram to DestQP 0xFFFFFF whose destination is no group a QP is attached to (or whose MAC is not the group's).") \
	X(MCAST_LOOPED,       "mcast_looped",           "Group datagrams this engine sent that it handed to its own QPs attached to the group, as an HCA loops them back (each also counted in rcvd_mcast_pkts).") \
	X(MCAST_LOOP_DROP,    "mcast_loop_drop",        "Group datagrams this engine sent that its own attached QPs did not get: no memory for the copy.")

/* After the table: one counter per parser rejection, named
 * "rx_drop_<reason>" and described by XR_PARSE_ERR_TABLE. */
enum xr_counter {
#define XR_X(e, name, desc) XR_CNT_##e,
	XR_COUNTER_TABLE(XR_X)
#undef XR_X
#define XR_X(name, desc) XR_CNT_PARSE_##name,
	XR_PARSE_ERR_TABLE(XR_X)
#undef XR_X
	XR_CNT_COUNT
};
_Static_assert(XR_COUNTER_BASE + 8 * XR_CNT_COUNT <= XR_COUNTER_END, "counters overflow their window");

static inline enum xr_counter xr_counter_of_parse_err(enum xr_parse_err e)
{
	return (enum xr_counter)(XR_CNT_PARSE_TRUNCATED_L2 + (e - XR_PARSE_TRUNCATED_L2));
}

/* Register offsets as constants: XR_REG_CTRL, XR_REG_QP_SEL, ... */
enum xr_reg {
#define XR_X(name, off, acc, rst, fields, desc) XR_REG_##name = (off),
	XR_REG_TABLE(XR_X)
#undef XR_X
};
enum xr_reg_array {
#define XR_X(name, base, count, stride, acc, fields, desc) XR_REG_##name = (base),
	XR_REG_ARRAY_TABLE(XR_X)
#undef XR_X
};

/* CTRL and STATUS bits. */
#define XR_CTRL_SOFT_RESET (1u << 0)
#define XR_CTRL_ENABLE     (1u << 1)
#define XR_CTRL_LOOPBACK   (1u << 2)
/* retry_cnt 7 retries forever, as rxe reads it (IBTA: seven retries). */
#define XR_CTRL_RETRY7_FOREVER (1u << 3)
/* CC_CTRL bits. */
#define XR_CC_ECN_ENABLE    (1u << 0)
#define XR_CC_CNP_ENABLE    (1u << 1)
#define XR_CC_DCQCN_ENABLE  (1u << 2)
#define XR_CC_ECT1          (1u << 3)
#define XR_CC_CLAMP_TARGET  (1u << 4)
/* PFC_CTRL bits (enable in 7:0, rx_enable in 15:8). */
#define XR_PFC_PAUSE_RX     (1u << 16)
#define XR_PFC_PRIO_DSCP    (1u << 17)
#define XR_STATUS_LINK_UP  (1u << 0)
#define XR_STATUS_READY    (1u << 1)
#define XR_STATUS_ENABLED  (1u << 2)
#define XR_STATUS_NOT_READY_SHIFT 8
enum xr_not_ready {
	XR_NOT_READY_NONE = 0,
	XR_NOT_READY_RESET = 1,
	XR_NOT_READY_LINK_DOWN = 2,
	XR_NOT_READY_DISABLED = 3,
	XR_NOT_READY_NO_ADDRESS = 4,
};

/* Table commands (QP_CMD, MR_CMD, CQ_CMD) and their failure reasons. */
enum xr_table_cmd { XR_CMD_COMMIT = 1, XR_CMD_READ = 2, XR_CMD_DESTROY = 3, XR_CMD_CLEAR = 4 };
#define XR_CMD_STATUS_TABLE(X) \
	X(OK,             "ok") \
	X(BAD_INDEX,      "index out of range or reserved") \
	X(BAD_STATE,      "invalid QP state") \
	X(BAD_MTU,        "invalid path MTU") \
	X(BAD_TYPE,       "invalid transport type") \
	X(NO_ENTRY,       "no such entry") \
	X(BAD_TRANSITION, "state transition not allowed") \
	X(BAD_RANGE,      "bad length, address or translation table") \
	X(BAD_CQ,         "CQ does not exist") \
	X(BAD_CMD,        "unknown command") \
	X(BAD_ACCESS,     "access flags not allowed (remote write/atomic need local write)") \
	X(BUSY,           "entry in use") \
	X(FULL,           "table full") \
	X(LINK,           "the link refused")
enum xr_cmd_status {
#define XR_X(name, desc) XR_CMD_ST_##name,
	XR_CMD_STATUS_TABLE(XR_X)
#undef XR_X
};

/* QP_COMMIT_MASK bits (ibv_qp_attr_mask values, then xroce's). */
enum xr_qp_mask {
	XR_QPM_STATE = 1u << 0, XR_QPM_ACCESS = 1u << 3, XR_QPM_PKEY = 1u << 4,
	XR_QPM_AV = 1u << 7, XR_QPM_PATH_MTU = 1u << 8, XR_QPM_TIMEOUT = 1u << 9,
	XR_QPM_RETRY_CNT = 1u << 10, XR_QPM_RNR_RETRY = 1u << 11, XR_QPM_RQ_PSN = 1u << 12,
	XR_QPM_MAX_RD_ATOMIC = 1u << 13, XR_QPM_MIN_RNR_TIMER = 1u << 15,
	XR_QPM_SQ_PSN = 1u << 16, XR_QPM_MAX_DEST_RD_ATOMIC = 1u << 17,
	XR_QPM_DEST_QPN = 1u << 20, XR_QPM_RINGS = 1u << 24, XR_QPM_CQS = 1u << 25,
	XR_QPM_PD = 1u << 26, XR_QPM_TYPE = 1u << 27, XR_QPM_MSN = 1u << 28,
	XR_QPM_QKEY = 1u << 6, XR_QPM_SRQ = 1u << 29, XR_QPM_RATE_LIMIT = 1u << 30,
	XR_QPM_ALL = 0xFFFFFFFFu,
};

/* QP states and transport types as held in QP_STATE. */
enum xr_qp_state {
	XR_QPS_RESET = 0, XR_QPS_INIT = 1, XR_QPS_RTR = 2, XR_QPS_RTS = 3,
	XR_QPS_SQD = 4, XR_QPS_SQE = 5, XR_QPS_ERR = 6,
};
enum xr_qp_type { XR_QPT_RC = 0, XR_QPT_UC = 1, XR_QPT_UD = 3 };

/* Access flags (same bits as ibv_access_flags). */
#define XR_ACCESS_LOCAL_WRITE   (1u << 0)
#define XR_ACCESS_REMOTE_WRITE  (1u << 1)
#define XR_ACCESS_REMOTE_READ   (1u << 2)
#define XR_ACCESS_REMOTE_ATOMIC (1u << 3)
#define XR_ACCESS_MW_BIND       (1u << 4)   /* windows may be bound to the region */
#define XR_ACCESS_ZERO_BASED    (1u << 5)   /* not supported: refused */
#define XR_MR_VALID             (1u << 8)
/* MR_KIND and MR_MW_BIND bits. */
#define XR_MR_KIND_MW           (1u << 0)
#define XR_MR_MW_BOUND          (1u << 31)

/* Event log types. X(ENUM, "name", "arg0", "arg1") */
#define XR_EVENT_TABLE(X) \
	X(NONE,          "none",           "",            "") \
	X(SOFT_RESET,    "soft_reset",     "",            "") \
	X(ENABLE,        "enable",         "enabled",     "") \
	X(LINK,          "link",           "up",          "") \
	X(QP_STATE,      "qp_state",       "old state",   "new state") \
	X(QP_DESTROY,    "qp_destroy",     "",            "") \
	X(MR_REG,        "mr_reg",         "rkey",        "access") \
	X(MR_INVALIDATE, "mr_invalidate",  "rkey",        "") \
	X(WQE_POSTED,    "wqe_posted",     "queue (0 SQ, 1 RQ)", "producer index") \
	X(WQE_COMPLETED, "wqe_completed",  "wc status",   "wr index") \
	X(NAK_SENT,      "nak_sent",       "syndrome",    "psn") \
	X(NAK_RCVD,      "nak_rcvd",       "syndrome",    "psn") \
	X(RETRANSMIT,    "retransmit",     "from psn",    "reason") \
	X(TIMEOUT,       "timeout",        "psn",         "retries left") \
	X(QP_ERROR,      "qp_error",       "wc status",   "psn") \
	X(REG_ERROR,     "reg_error",      "address",     "response (2 SLVERR, 3 DECERR)") \
	X(CMD_ERROR,     "cmd_error",      "register",    "status") \
	X(CQ_ERROR,      "cq_error",       "cqn",         "") \
	X(SQ_DRAINED,    "sq_drained",     "",            "") \
	X(MW_BIND,       "mw_bind",        "rkey",        "region index (0: unbound)") \
	X(SRQ_LIMIT,     "srq_limit",      "srqn",        "WQEs left posted") \
	X(QP_LAST_WQE,   "qp_last_wqe",    "srqn",        "") \
	X(DCQCN_START,   "dcqcn_start",    "rate Mb/s after the first cut", "alpha /1024") \
	X(DCQCN_DONE,    "dcqcn_line_rate", "rate Mb/s",  "") \
	X(PFC_PAUSED,    "pfc_paused",     "priority mask", "quanta (0xFFFFFFFF: 802.3x)") \
	X(PFC_RESUMED,   "pfc_resumed",    "priority mask", "microseconds paused") \
	X(PFC_XOFF,      "pfc_xoff_sent",  "priority mask", "receive backlog, percent") \
	X(PFC_XON,       "pfc_xon_sent",   "priority mask", "receive backlog, percent") \
	X(PFC_STORM,     "pfc_storm",      "priority",    "milliseconds paused") \
	X(PFC_RESTORED,  "pfc_restored",   "priority",    "") \
	X(MCG,           "mcg",            "1 attach, 0 detach", "group GID, bytes 12-15")

enum xr_event_type {
#define XR_X(e, name, a0, a1) XR_EV_##e,
	XR_EVENT_TABLE(XR_X)
#undef XR_X
	XR_EV_COUNT
};

/* ---- descriptions generated from the tables, for tools and docs ---- */

struct xr_reg_desc {
	const char *name;
	uint32_t offset;
	enum xr_reg_access access;
	uint32_t reset;
	const char *fields;
	const char *desc;
	uint32_t count, stride;   /* arrays: count > 1 */
};

/* Every register (arrays once each, then each counter's LO and HI). */
const struct xr_reg_desc *xr_reg_descs(size_t *count);
/* The register at an offset (array members map to their array), or NULL. */
const struct xr_reg_desc *xr_reg_by_offset(uint32_t offset);
/* By name, case-insensitive ("CTRL", "ctrl", "sent_pkts_lo"), or NULL. */
const struct xr_reg_desc *xr_reg_by_name(const char *name);
const char *xr_counter_name(enum xr_counter c);
const char *xr_counter_desc(enum xr_counter c);
const char *xr_event_name(enum xr_event_type t);
const char *xr_cmd_status_desc(enum xr_cmd_status s);
const char *xr_access_name(enum xr_reg_access a);
/* Writes the register reference (docs/registers.md) to f; 0 or -EIO. */
int xr_regmap_write_doc(FILE *f);

#endif
