/* SPDX-License-Identifier: MIT */
/*
 * xroce verbs: a libibverbs-shaped API over the xroce engine. The driver
 * behind it (src/drv) reaches the engine only through the register file,
 * doorbells and host-memory rings. Names, attribute masks, transition
 * rules, opcodes and completion status codes follow libibverbs; functions
 * return 0 or a positive errno (as ibv_post_send/ibv_modify_qp do), and
 * constructors return NULL with errno set.
 */
#ifndef XROCE_VERBS_H
#define XROCE_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xroce/engine.h"
#include "xroce/link.h"
#include "xroce/ring.h"
#include "xroce/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xr_context;
struct xr_pd;
struct xr_cq;
struct xr_qp;
struct xr_srq;
struct xr_ah;
struct xr_recv_wr;

enum xr_progress_mode {
	XR_PROGRESS_THREAD = 0,   /* the engine runs in a thread of its own */
	XR_PROGRESS_INLINE = 1,   /* the engine runs inside xr_poll_cq (one core, lowest latency) */
};

struct xr_device_opts {
	const char *addr;             /* local IPv4 or IPv6 address (required) */
	enum xr_progress_mode progress;
	/* retry_cnt 7 retries forever, as rxe reads it; default: the IBTA's
	 * seven retries, so a dead peer is detected (CTRL.retry7_forever). */
	bool retry7_forever;
};

/* Opens a device (an engine and its driver) on a link. The link stays the
 * caller's; close it after xr_close_device. Errors: EINVAL, ENOMEM, EBUSY. */
struct xr_context *xr_open_device(struct xr_link *link, const struct xr_device_opts *opts);
int xr_close_device(struct xr_context *ctx);
/* The local GID (IPv4-mapped or IPv6). */
void xr_query_gid(struct xr_context *ctx, xr_gid *gid);
/* The register access the driver uses (for counters, tools). */
struct xr_regio *xr_context_regs(struct xr_context *ctx);
struct xr_engine *xr_context_engine(struct xr_context *ctx);

struct xr_pd *xr_alloc_pd(struct xr_context *ctx);
int xr_dealloc_pd(struct xr_pd *pd);

/* Access flags are XR_ACCESS_LOCAL_WRITE, _REMOTE_WRITE, _REMOTE_READ,
 * _REMOTE_ATOMIC and _MW_BIND (regmap.h), with ibv_access_flags' values. */

struct xr_mr {
	struct xr_context *context;
	struct xr_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey, rkey;
	uint32_t handle;              /* MR table index */
	uint64_t *mtt;                /* the page table the engine translates with */
	int access;
};

/* Registers [addr, addr+length). Errors: EINVAL (bad flags or range), ENOMEM, ENOSPC. */
struct xr_mr *xr_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access);
/* 0; EBUSY while memory windows are bound to the region (IBA 10.6.7.2.6,
 * as rxe; the region stays registered: deallocate the windows first). */
int xr_dereg_mr(struct xr_mr *mr);
/* ibv_rereg_mr: what flags name changes (the range, the PD, the access);
 * the region keeps its slot and gets new keys (the old ones are dead).
 * 0; EINVAL (bad flags or arguments: nothing changed), EBUSY (memory
 * windows are bound to it: nothing changed), ENOMEM. */
enum xr_rereg_flags { XR_REREG_TRANSLATION = 1, XR_REREG_PD = 2, XR_REREG_ACCESS = 4, XR_REREG_ALL = 7 };
int xr_rereg_mr(struct xr_mr *mr, int flags, struct xr_pd *pd, void *addr, size_t length, int access);

/* Memory windows (ibv_alloc_mw, ibv_bind_mw, IBV_WR_BIND_MW), as rxe has
 * them. A window shares the key space with regions; it grants remote
 * access to part of a region registered with XR_ACCESS_MW_BIND once bound.
 * Type 1: bound with xr_bind_mw (any QP of the PD may then use it; it can
 * be re-bound, length 0 unbinds it; it cannot be invalidated). Type 2
 * (2B): bound by an XR_WR_BIND_MW work request while free; only the QP
 * that bound it may use it; LOCAL_INV or the peer's SEND_WITH_INV (on that
 * QP) frees it. Zero-based windows are not supported. */
enum xr_mw_type { XR_MW_TYPE_1 = 1, XR_MW_TYPE_2 = 2 };

struct xr_mw {
	struct xr_context *context;
	struct xr_pd *pd;
	uint32_t rkey;                /* type 1: updated by xr_bind_mw */
	uint32_t handle;              /* MR table index */
	enum xr_mw_type type;
};

struct xr_mw_bind_info {
	struct xr_mr *mr;             /* NULL with length 0: unbind (type 1) */
	uint64_t addr;                /* window start (a VA inside mr) */
	uint64_t length;
	unsigned int mw_access_flags; /* XR_ACCESS_REMOTE_WRITE/_READ/_ATOMIC */
};

struct xr_mw_bind {
	uint64_t wr_id;
	unsigned int send_flags;      /* XR_SEND_SIGNALED, XR_SEND_FENCE */
	struct xr_mw_bind_info bind_info;
};

/* Errors: EINVAL (bad PD or type), ENOSPC, ENOMEM. */
struct xr_mw *xr_alloc_mw(struct xr_pd *pd, enum xr_mw_type type);
/* Unbinds and frees the window (a bound region may then be deregistered). */
int xr_dealloc_mw(struct xr_mw *mw);
/* Type 1: posts a BIND_MW WR on qp with the key byte incremented and sets
 * mw->rkey to the new key (as libibverbs: if the completion is an error,
 * the caller undoes it). The bind completes as XR_WC_BIND_MW; a refused
 * bind completes MW_BIND_ERR and moves the QP to ERR. 0 or EINVAL/ENOMEM,
 * or EIO (as xr_post_send: the doorbell refused; the key unchanged). */
int xr_bind_mw(struct xr_qp *qp, struct xr_mw *mw, struct xr_mw_bind *bind);

/* ibv_inc_rkey: the same index, the next key byte. */
static inline uint32_t xr_inc_rkey(uint32_t rkey)
{
	return (rkey & 0xFFFFFF00u) | ((rkey + 1) & 0xFFu);
}

struct xr_wc {
	uint64_t wr_id;
	enum xr_wc_status status;
	enum xr_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;            /* network order, or the invalidated R_Key */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
};

#define XR_CQ_MAX_CQE (1 << 20)   /* entries a CQ may hold */
struct xr_cq *xr_create_cq(struct xr_context *ctx, int cqe);
int xr_destroy_cq(struct xr_cq *cq);
/* A new ring of at least cqe entries; the completions not yet polled move
 * into it (the engine's, in order). 0, EINVAL (cqe out of 1..XR_CQ_MAX_CQE, or
 * fewer than the completions waiting), ENOMEM, or EIO. */
int xr_resize_cq(struct xr_cq *cq, int cqe);
/* The entries the CQ holds (a power of two, at least the cqe asked for). */
int xr_cq_size(const struct xr_cq *cq);
/* Up to n completions; returns how many (0: none), or -errno. */
int xr_poll_cq(struct xr_cq *cq, int n, struct xr_wc *wc);
/* Event mode: arm, then wait on the fd (readable when the CQ fired). */
int xr_req_notify_cq(struct xr_cq *cq, int solicited_only);
int xr_cq_event_fd(struct xr_cq *cq);
/* The CQ's number (asynchronous events name CQs by it). */
uint32_t xr_cq_num(const struct xr_cq *cq);
/* Blocks until the CQ fires (or timeout_ms, -1 forever); 0, or ETIMEDOUT. */
int xr_get_cq_event(struct xr_cq *cq, int timeout_ms);
const char *xr_wc_status_str(enum xr_wc_status status);

/* Asynchronous events (ibv_get_async_event), read from the engine's
 * event log: a CQ that overran (its QP went to ERR), an SQ drained in SQD,
 * an SRQ below its limit (ibv's value 15), a QP on an SRQ in ERR that will
 * take no more WQEs from it (16). */
enum xr_async_event_type {
	XR_EVENT_CQ_ERR = 0, XR_EVENT_SQ_DRAINED = 6,
	XR_EVENT_SRQ_LIMIT_REACHED = 15, XR_EVENT_QP_LAST_WQE_REACHED = 16,
};
struct xr_async_event {
	enum xr_async_event_type type;
	uint32_t cqn;                 /* CQ_ERR: the CQ's number */
	uint32_t qp_num;              /* the QP concerned (SRQ_LIMIT: the QP that took the WQE) */
	uint32_t srq_num;             /* SRQ_LIMIT, QP_LAST_WQE: the SRQ's number */
};
/* The next event not yet returned: 0, ETIMEDOUT after timeout_ms (0: do
 * not wait; -1: forever), or EIO. */
int xr_get_async_event(struct xr_context *ctx, struct xr_async_event *ev, int timeout_ms);
/* An fd that polls readable while events are waiting (a semaphore count
 * of them; xr_get_async_event takes one per event it returns). */
int xr_async_event_fd(struct xr_context *ctx);

struct xr_qp_cap {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
};

struct xr_qp_init_attr {
	struct xr_cq *send_cq, *recv_cq;
	struct xr_qp_cap cap;
	enum xr_qp_type qp_type;
	int sq_sig_all;
	struct xr_srq *srq;           /* receive WQEs from this SRQ (NULL: the QP's own) */
};

/* QP states are enum xr_qp_state (XR_QPS_RESET ... XR_QPS_ERR, regmap.h),
 * with ibv_qp_state's values; the QP types are XR_QPT_RC, XR_QPT_UC and
 * XR_QPT_UD (docs/ud-uc-srq.md). UC QPs post SEND/WRITE(+IMM) only (READ
 * and atomics: EINVAL), UD QPs SEND and SEND_WITH_IMM with an address
 * handle in wr.ud; a UD receive buffer starts with 40 GRH bytes. */

enum xr_mtu { XR_MTU_256 = 1, XR_MTU_512 = 2, XR_MTU_1024 = 3, XR_MTU_2048 = 4, XR_MTU_4096 = 5 };
/* The port's active MTU: the largest path MTU whose packets the link
 * carries (its IP MTU less IPv6, UDP, BTH, RETH, ImmDt and ICRC). A QP's path MTU
 * may not exceed it (modify_qp: EINVAL). */
enum xr_mtu xr_active_mtu(struct xr_context *ctx);

struct xr_global_route {
	xr_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index, hop_limit, traffic_class;
};

struct xr_ah_attr {
	struct xr_global_route grh;
	uint16_t dlid;
	uint8_t sl, src_path_bits, static_rate, is_global, port_num;
};

struct xr_qp_attr {
	enum xr_qp_state qp_state, cur_qp_state;
	enum xr_mtu path_mtu;
	uint32_t qkey, rq_psn, sq_psn, dest_qp_num;
	unsigned int qp_access_flags;
	struct xr_qp_cap cap;
	struct xr_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout,
		retry_cnt, rnr_retry;
	/* kb/s, as ibv_qp_attr.rate_limit (0: none); the engine paces in whole
	 * Mb/s, rounded up, at the lower of this and ah_attr.static_rate (an
	 * IBV_RATE_* value, 0: none), each kept until changed. */
	uint32_t rate_limit;
};

/* ibv_qp_attr_mask */
enum xr_qp_attr_mask {
	XR_QP_STATE = 1 << 0, XR_QP_CUR_STATE = 1 << 1, XR_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	XR_QP_ACCESS_FLAGS = 1 << 3, XR_QP_PKEY_INDEX = 1 << 4, XR_QP_PORT = 1 << 5,
	XR_QP_QKEY = 1 << 6, XR_QP_AV = 1 << 7, XR_QP_PATH_MTU = 1 << 8, XR_QP_TIMEOUT = 1 << 9,
	XR_QP_RETRY_CNT = 1 << 10, XR_QP_RNR_RETRY = 1 << 11, XR_QP_RQ_PSN = 1 << 12,
	XR_QP_MAX_QP_RD_ATOMIC = 1 << 13, XR_QP_ALT_PATH = 1 << 14, XR_QP_MIN_RNR_TIMER = 1 << 15,
	XR_QP_SQ_PSN = 1 << 16, XR_QP_MAX_DEST_RD_ATOMIC = 1 << 17, XR_QP_PATH_MIG_STATE = 1 << 18,
	XR_QP_CAP = 1 << 19, XR_QP_DEST_QPN = 1 << 20,
	XR_QP_RATE_LIMIT = 1 << 25,   /* rate_limit: the QP's pacer cap (QP_RATE_LIMIT) */
};

#define XR_MAX_RD_ATOMIC 16

/* Address handles (ibv_create_ah) for UD sends: a GID-based RoCE v2
 * address (is_global with grh.dgid required), its next-hop MAC resolved
 * now (EHOSTUNREACH otherwise); a flow label gives the UDP source port
 * (as rdma_flow_label_to_udp_sport), else it follows the sending QPN.
 * Errors: EINVAL, ENOMEM, EHOSTUNREACH. A UD WQE carries a copy of the
 * address, so an AH may be destroyed while sends using it are queued. */
struct xr_ah *xr_create_ah(struct xr_pd *pd, const struct xr_ah_attr *attr);
int xr_destroy_ah(struct xr_ah *ah);

/* Shared receive queues (ibv_create_srq and friends). srq_limit is
 * ignored at create (ibv_create_srq(3); rxe arms it, F1 ⚠); arm it with
 * xr_modify_srq(XR_SRQ_LIMIT): when a QP takes a WQE that leaves fewer
 * posted, XR_EVENT_SRQ_LIMIT_REACHED comes once and the limit is 0 again.
 * Resizing (XR_SRQ_MAX_WR) is not supported: EINVAL. */
struct xr_srq_attr {
	uint32_t max_wr, max_sge, srq_limit;
};
struct xr_srq_init_attr {
	struct xr_srq_attr attr;
};
enum xr_srq_attr_mask { XR_SRQ_MAX_WR = 1 << 0, XR_SRQ_LIMIT = 1 << 1 };
/* Errors: EINVAL (bad sizes), ENOMEM, ENOSPC. attr->attr gets the sizes made. */
struct xr_srq *xr_create_srq(struct xr_pd *pd, struct xr_srq_init_attr *attr);
/* 0, or EINVAL (limit above max_wr, a resize, a bad mask). */
int xr_modify_srq(struct xr_srq *srq, struct xr_srq_attr *attr, int mask);
int xr_query_srq(struct xr_srq *srq, struct xr_srq_attr *attr);
/* 0, or EBUSY while QPs use it. */
int xr_destroy_srq(struct xr_srq *srq);
uint32_t xr_srq_num(const struct xr_srq *srq);
/* As xr_post_recv: 0, EINVAL, ENOMEM (full), EIO (doorbell refused). */
int xr_post_srq_recv(struct xr_srq *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad);

/* Errors: EINVAL (bad type, sizes or an SRQ of another device), ENOMEM, ENOSPC. */
struct xr_qp *xr_create_qp(struct xr_pd *pd, struct xr_qp_init_attr *attr);
/* Errors as ibv_modify_qp: EINVAL for a transition, mask or value the
 * state machine does not allow (nothing changes). */
int xr_modify_qp(struct xr_qp *qp, struct xr_qp_attr *attr, int mask);
int xr_query_qp(struct xr_qp *qp, struct xr_qp_attr *attr, int mask, struct xr_qp_init_attr *init);
/* EBUSY while the QP is attached to a multicast group (nothing changes). */
int xr_destroy_qp(struct xr_qp *qp);
/* Multicast groups (ibv_attach_mcast): a UD QP receives the datagrams
 * sent to group gid (an IPv4 group as ::ffff:a.b.c.d, or IPv6 ff00::/8)
 * at QPN 0xFFFFFF, each checked as its own (state, P_Key, Q_Key); a UD
 * send to such a GID goes to the group (AH: the group's MAC, no
 * resolution; EHOSTUNREACH for a group of the other IP family than the
 * device's address). Attaching twice is no change. Errors: EINVAL (not UD, not
 * a group, a detach of a QP not attached), ENOMEM (CAP_MCG: groups or
 * QPs per group), EADDRNOTAVAIL (the link could not join). */
int xr_attach_mcast(struct xr_qp *qp, const xr_gid *gid);
int xr_detach_mcast(struct xr_qp *qp, const xr_gid *gid);
uint32_t xr_qp_num(const struct xr_qp *qp);

/* What xr_qp_connect needs: the peer's half (its QPN, first PSN and GID,
 * exchanged out of band) and the path's. Fill it with
 * xr_connect_attr_init, then set the peer's half and what differs. Zero is
 * a real value in several fields (timeout 0 waits forever, retry_cnt 0
 * never retries), so the defaults come from the init call, not from a
 * zeroed struct; a zeroed one is refused (path_mtu 0). */
struct xr_connect_attr {
	uint32_t dest_qp_num;         /* the peer's QPN */
	uint32_t rq_psn;              /* the first PSN the peer sends (its sq_psn), mod 2^24 */
	uint32_t sq_psn;              /* the first PSN this QP sends, mod 2^24 */
	xr_gid dgid;                  /* the peer's GID; its MAC is resolved at RTR */
	enum xr_mtu path_mtu;         /* XR_MTU_256 ... XR_MTU_4096; default 1024 */
	unsigned int access;          /* XR_ACCESS_REMOTE_*; default WRITE | READ | ATOMIC */
	uint8_t hop_limit;            /* default 64 */
	uint8_t traffic_class;        /* the GRH's (DSCP << 2; the engine sets ECN); default 0 */
	/* RC only (UC has no READ/atomic resources, ACKs or timers): */
	uint8_t max_rd_atomic;        /* READs/atomics this QP has in flight; default 16 */
	uint8_t max_dest_rd_atomic;   /* ... the peer may have at this QP; default 16 */
	uint8_t min_rnr_timer;        /* the RNR NAK's code (12: 0.64 ms); default 12 */
	uint8_t timeout;              /* ACK timeout 4.096 us << n, 0: none; default 14 (67 ms) */
	uint8_t retry_cnt, rnr_retry; /* 0..7 (rnr_retry 7: forever); default 7 each */
};

/* The defaults above, the peer's half zero. */
void xr_connect_attr_init(struct xr_connect_attr *attr);

/* Brings a connected QP (RC or UC) from RESET through INIT and RTR to RTS
 * toward the peer attr describes, with the attributes and masks each of
 * those transitions takes for the QP's type (port 1, P_Key index 0, a
 * GRH). 0, or -errno (negative, unlike xr_modify_qp's): -EINVAL for a NULL
 * argument, a QP not in RESET or of type UD, or a value out of range
 * (path_mtu outside 256..4096, a QPN above 24 bits, access bits beyond
 * the four, timeout or min_rnr_timer above 31, retries above 7, more than
 * XR_MAX_RD_ATOMIC READs), all checked before the QP changes;
 * -EHOSTUNREACH when the peer's GID does not resolve (the QP is then in
 * INIT; modify it to RESET to start over). */
int xr_qp_connect(struct xr_qp *qp, const struct xr_connect_attr *attr);

struct xr_send_wr {
	uint64_t wr_id;
	struct xr_send_wr *next;
	struct xr_sge *sg_list;
	int num_sge;
	enum xr_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_data;            /* network order (as ibv) */
	uint32_t invalidate_rkey;
	union {
		struct { uint64_t remote_addr; uint32_t rkey; } rdma;
		struct { uint64_t remote_addr; uint64_t compare_add; uint64_t swap; uint32_t rkey; } atomic;
		/* UD: where to (a remote_qkey with bit 31 set sends the QP's own
		 * Q_Key, IBTA C10-15). */
		struct { struct xr_ah *ah; uint32_t remote_qpn; uint32_t remote_qkey; } ud;
	} wr;
	/* XR_WR_BIND_MW (type-2 windows; xr_bind_mw posts type 1's): rkey is
	 * the window's new key (same index, a new key byte: xr_inc_rkey). */
	struct {
		struct xr_mw *mw;
		uint32_t rkey;
		struct xr_mw_bind_info bind_info;
	} bind_mw;
};

struct xr_recv_wr {
	uint64_t wr_id;
	struct xr_recv_wr *next;
	struct xr_sge *sg_list;
	int num_sge;
};

/* 0, or EINVAL (bad WR or QP state; xr_post_recv on a QP with an SRQ),
 * ENOMEM (queue full); *bad names the WR, and the WRs before it were
 * posted. Or EIO: the device refused the doorbell (its register path
 * answered an error); *bad is the call's first WR, and none was posted.
 * An atomic WR must be 8 bytes at an 8-byte aligned remote address; a
 * receive WR's SGEs must total at most 2^31 bytes. */
int xr_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad);
/* As xr_post_send, but every WR of the list is posted or none is (the
 * ibv_wr_* API's batches): on any error, *bad names the WR refused and the
 * queue is as before the call. */
int xr_post_send_whole(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad);
int xr_post_recv(struct xr_qp *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad);

#ifdef __cplusplus
}
#endif
#endif
