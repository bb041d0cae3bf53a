/* SPDX-License-Identifier: MIT */
/*
 * Host-memory ring formats shared by the driver and the engine: send and
 * receive WQEs, and CQEs. Little-endian host layout (the engine models a
 * device DMA-ing host memory). Sizes are fixed and checked at compile time.
 *
 * Ownership: the host writes a WQE, then rings the doorbell with the new
 * producer index; the WQE is the engine's until its completion. The engine
 * writes a CQE, the phase byte last; a CQE is new when its phase equals
 * the pass bit the host expects (1 on the first pass, 0 on the second...).
 */
#ifndef XROCE_RING_H
#define XROCE_RING_H

#include <stdint.h>

/* A send WQE is a 64-byte header, then its SGEs, inline data or bind
 * fields. Its slot is one, two or four 256-byte blocks, chosen per QP
 * (QP_SQ_LOG_SIZE.wqe_blocks, log2 of the blocks), so a QP that asks for
 * more inline data or SGEs gets a larger slot, as hns' per-QP WQE shift. */
#define XR_WQE_SIZE        256       /* one block: the smallest slot */
#define XR_WQE_HDR_SIZE    64
#define XR_WQE_MAX_BLOCKS_LOG 2
#define XR_WQE_MAX_SIZE    (XR_WQE_SIZE << XR_WQE_MAX_BLOCKS_LOG)
#define XR_WQE_BODY(blocks_log) (((unsigned)XR_WQE_SIZE << (blocks_log)) - XR_WQE_HDR_SIZE)
#define XR_WQE_BLOCK_SGE   (XR_WQE_BODY(0) / 16)             /* 12 */
#define XR_WQE_MAX_SGE     (XR_WQE_BODY(XR_WQE_MAX_BLOCKS_LOG) / 16)   /* 60 */
#define XR_WQE_MAX_INLINE  XR_WQE_BODY(XR_WQE_MAX_BLOCKS_LOG)           /* 960 */
/* A receive WQE is a 16-byte header and its SGEs, in slots of one, two
 * or four 256-byte blocks too (QP_RQ_LOG_SIZE.wqe_blocks,
 * SRQ_LOG_SIZE.wqe_blocks). */
#define XR_RWQE_SIZE       256       /* one block: the smallest slot */
#define XR_RWQE_HDR_SIZE   16
#define XR_RWQE_MAX_SIZE   (XR_RWQE_SIZE << XR_WQE_MAX_BLOCKS_LOG)
#define XR_RWQE_BODY(blocks_log) (((unsigned)XR_RWQE_SIZE << (blocks_log)) - XR_RWQE_HDR_SIZE)
#define XR_RWQE_BLOCK_SGE  (XR_RWQE_BODY(0) / 16)                        /* 15 */
#define XR_RWQE_MAX_SGE    (XR_RWQE_BODY(XR_WQE_MAX_BLOCKS_LOG) / 16)   /* 63 */
#define XR_CQE_SIZE        64

/* Send WQE opcodes (values of ibv_wr_opcode). */
enum xr_wr_opcode {
	XR_WR_RDMA_WRITE = 0,
	XR_WR_RDMA_WRITE_WITH_IMM = 1,
	XR_WR_SEND = 2,
	XR_WR_SEND_WITH_IMM = 3,
	XR_WR_RDMA_READ = 4,
	XR_WR_ATOMIC_CMP_AND_SWP = 5,
	XR_WR_ATOMIC_FETCH_AND_ADD = 6,
	XR_WR_LOCAL_INV = 7,
	XR_WR_BIND_MW = 8,
	XR_WR_SEND_WITH_INV = 9,
};

/* Send flags (values of ibv_send_flags). */
enum xr_send_flags {
	XR_SEND_FENCE = 1 << 0,
	XR_SEND_SIGNALED = 1 << 1,
	XR_SEND_SOLICITED = 1 << 2,
	XR_SEND_INLINE = 1 << 3,
};

struct xr_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* A UD send WQE carries its address vector inline (as a NIC's datagram
 * segment): the driver copies it from the address handle at post time, so
 * the engine needs no AH table and an AH may be destroyed with sends
 * still queued. */
struct xr_hw_ud_av {
	uint8_t  dgid[16];        /* destination GID (IPv4: ::ffff:a.b.c.d) */
	uint8_t  dmac[6];         /* next-hop MAC (0: the PEER_MAC default) */
	uint16_t udp_sport;       /* 0: derived from the sending QPN */
	uint32_t remote_qpn;
	uint32_t remote_qkey;     /* bit 31 set: send the QP's own Q_Key (C10-15) */
	uint32_t flow_label;      /* IPv6 */
	uint8_t  traffic_class, hop_limit;
	uint8_t  rsvd[2];
};

struct xr_hw_wqe {
	uint64_t wr_id;
	uint8_t  opcode;          /* enum xr_wr_opcode */
	uint8_t  flags;           /* enum xr_send_flags */
	uint8_t  num_sge;         /* SGEs, or 0 with XR_SEND_INLINE */
	uint8_t  rsvd0;
	uint32_t length;          /* total message length (bytes) */
	uint32_t imm_data;        /* ImmDt as the wire value, or the R_Key to invalidate */
	uint32_t rkey;            /* remote key; BIND_MW: the window's new key */
	union {
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;     /* atomics: compare (CMP_SWP) or add (FETCH_ADD) */
			uint64_t swap;
			uint8_t  rsvd1[16];
		};
		struct xr_hw_ud_av ud;    /* UD QPs: the datagram's address (docs/ud-uc-srq.md) */
	};
	/* The body, as in a one-block slot; larger slots go on past it:
	 * reach them through xr_wqe_body, xr_wqe_sges and xr_wqe_inline. */
	union {
		struct xr_sge sge[XR_WQE_BLOCK_SGE];
		uint8_t inline_data[XR_WQE_BODY(0)];
		struct {              /* BIND_MW (num_sge 0, length 0) */
			uint64_t addr;        /* window start (a VA of the region) */
			uint64_t length;      /* window length; 0 unbinds a type-1 window */
			uint32_t mw_rkey;     /* the window's current key */
			uint32_t mr_lkey;     /* the region's key */
			uint32_t access;      /* XR_ACCESS_REMOTE_* of the window */
			uint32_t rsvd;
		} bind;
	};
};

struct xr_hw_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;          /* sum of the SGE lengths */
	struct xr_sge sge[XR_RWQE_BLOCK_SGE];   /* as in a one-block slot: xr_rwqe_sges */
};

/* Completion opcodes and status (values of ibv_wc_opcode, ibv_wc_status). */
enum xr_wc_opcode {
	XR_WC_SEND = 0, XR_WC_RDMA_WRITE = 1, XR_WC_RDMA_READ = 2, XR_WC_COMP_SWAP = 3,
	XR_WC_FETCH_ADD = 4, XR_WC_BIND_MW = 5, XR_WC_LOCAL_INV = 6,
	XR_WC_RECV = 128, XR_WC_RECV_RDMA_WITH_IMM = 129,
};

enum xr_wc_status {
	XR_WC_SUCCESS = 0, XR_WC_LOC_LEN_ERR = 1, XR_WC_LOC_QP_OP_ERR = 2, XR_WC_LOC_EEC_OP_ERR = 3,
	XR_WC_LOC_PROT_ERR = 4, XR_WC_WR_FLUSH_ERR = 5, XR_WC_MW_BIND_ERR = 6, XR_WC_BAD_RESP_ERR = 7,
	XR_WC_LOC_ACCESS_ERR = 8, XR_WC_REM_INV_REQ_ERR = 9, XR_WC_REM_ACCESS_ERR = 10,
	XR_WC_REM_OP_ERR = 11, XR_WC_RETRY_EXC_ERR = 12, XR_WC_RNR_RETRY_EXC_ERR = 13,
	XR_WC_LOC_RDD_VIOL_ERR = 14, XR_WC_REM_INV_RD_REQ_ERR = 15, XR_WC_REM_ABORT_ERR = 16,
	XR_WC_INV_EECN_ERR = 17, XR_WC_INV_EEC_STATE_ERR = 18, XR_WC_FATAL_ERR = 19,
	XR_WC_RESP_TIMEOUT_ERR = 20, XR_WC_GENERAL_ERR = 21,
};

/* wc_flags (values of ibv_wc_flags). */
enum xr_wc_flags {
	XR_WC_GRH = 1 << 0,
	XR_WC_WITH_IMM = 1 << 1,
	XR_WC_WITH_INV = 1 << 3,
};

struct xr_hw_cqe {
	uint64_t wr_id;
	uint32_t qp_num;
	uint32_t byte_len;
	uint32_t imm_data;        /* wire value (network order), or the invalidated R_Key */
	uint32_t src_qp;
	uint32_t vendor_err;
	uint16_t wc_flags;
	uint8_t  status;
	uint8_t  opcode;
	uint16_t wqe_index;       /* the send/receive queue slot completed (free-running) */
	uint8_t  rsvd[24];
	uint8_t  drv_flags;       /* the driver's own (XR_CQE_DRV_*): the engine never writes it */
	uint8_t  phase;           /* written last */
};

/* drv_flags: a completion of a QP since reset or destroyed (drv/cq.c). */
#define XR_CQE_DRV_STALE 1

/* The address of slot idx (free-running) of a ring at base of 2^log
 * slots of 256 << blocks_log bytes: send, receive and SRQ rings alike. */
static inline uintptr_t xr_ring_slot(uintptr_t base, uint32_t idx, uint32_t log, uint32_t blocks_log)
{
	return base + ((uintptr_t)(idx & ((1u << log) - 1)) << (blocks_log + 8));
}

/* The body of a WQE whose slot may be larger than the struct. */
static inline uint8_t *xr_wqe_body(struct xr_hw_wqe *w)
{
	return (uint8_t *)w + XR_WQE_HDR_SIZE;
}

static inline const uint8_t *xr_wqe_inline(const struct xr_hw_wqe *w)
{
	return (const uint8_t *)w + XR_WQE_HDR_SIZE;
}

static inline const struct xr_sge *xr_wqe_sges(const struct xr_hw_wqe *w)
{
	return (const struct xr_sge *)(const void *)xr_wqe_inline(w);
}

/* The SGEs of a receive WQE whose slot may be larger than the struct. */
static inline struct xr_sge *xr_rwqe_sges(struct xr_hw_rwqe *w)
{
	return (struct xr_sge *)(void *)((uint8_t *)w + XR_RWQE_HDR_SIZE);
}

static inline const struct xr_sge *xr_rwqe_sges_const(const struct xr_hw_rwqe *w)
{
	return (const struct xr_sge *)(const void *)((const uint8_t *)w + XR_RWQE_HDR_SIZE);
}

_Static_assert(sizeof(struct xr_hw_ud_av) == 40, "UD address vector size");
_Static_assert(__builtin_offsetof(struct xr_hw_rwqe, sge) == XR_RWQE_HDR_SIZE, "receive WQE header size");
_Static_assert(__builtin_offsetof(struct xr_hw_wqe, sge) == XR_WQE_HDR_SIZE, "send WQE header size");
_Static_assert(sizeof(struct xr_hw_wqe) == XR_WQE_SIZE, "send WQE size");
_Static_assert(sizeof(struct xr_hw_rwqe) == XR_RWQE_SIZE, "receive WQE size");
_Static_assert(sizeof(struct xr_hw_cqe) == XR_CQE_SIZE, "CQE size");

#endif
