/* SPDX-License-Identifier: MIT */
/*
 * Register access: how a driver or tool reaches an engine's register file.
 * A backend is a struct of function pointers; backends exist for an
 * in-process engine, for memory-mapped I/O on any mappable file (a UIO or
 * VFIO BAR of a real FPGA, or a memfd in tests), and for an engine that
 * serves its registers on a UNIX socket (debug attach, like JTAG-to-AXI).
 *
 * read/write return an AXI response (XR_AXI_OKAY, _SLVERR, _DECERR) or a
 * negative errno when the transport itself failed.
 */
#ifndef XROCE_REGIO_H
#define XROCE_REGIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xroce/regmap.h"
#include "xroce/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

enum xr_axi_resp { XR_AXI_OKAY = 0, XR_AXI_EXOKAY = 1, XR_AXI_SLVERR = 2, XR_AXI_DECERR = 3 };
const char *xr_axi_resp_name(int resp);

struct xr_regio_ops {
	int (*read)(void *ctx, uint32_t addr, uint32_t *val);
	int (*write)(void *ctx, uint32_t addr, uint32_t val);
	void (*close)(void *ctx);
};

struct xr_regio {
	const struct xr_regio_ops *ops;
	void *ctx;
};

static inline int xr_regio_read(struct xr_regio *r, uint32_t addr, uint32_t *val)
{
	return r->ops->read(r->ctx, addr, val);
}
static inline int xr_regio_write(struct xr_regio *r, uint32_t addr, uint32_t val)
{
	return r->ops->write(r->ctx, addr, val);
}
/* Closes the backend and frees r (NULL is fine). */
void xr_regio_close(struct xr_regio *r);

struct xr_engine;
/* The in-process engine's register file. NULL and errno on failure. */
struct xr_regio *xr_regio_engine(struct xr_engine *e);
/*
 * Volatile 32-bit accesses on [offset, offset+size) of a mappable file:
 * /dev/uioN, a VFIO/sysfs BAR "resource0", or any regular file or memfd.
 * Errors: ENOENT/EACCES from open, EINVAL for a bad size, mmap's errors.
 */
struct xr_regio *xr_regio_mmio(const char *path, uint64_t offset, size_t size);
/* The same on an already-mapped region (not unmapped on close). */
struct xr_regio *xr_regio_mmio_mem(volatile void *base, size_t size);
/* A client of an engine's debug socket (xr_engine_serve_debug). */
struct xr_regio *xr_regio_socket(const char *path);

/* ---- typed helpers used by the driver and tools ---- */

/* Reads a 64-bit counter: low word first (latches the high word). */
int xr_regio_read_counter(struct xr_regio *r, enum xr_counter c, uint64_t *val);
/* Event seq of the log (EVLOG_SEL, then its fields): 0, -ENOENT when it is
 * not (or no longer) in the ring, or the access's error. */
struct xr_event_record {
	uint64_t ts;
	uint32_t type, qpn, arg0, arg1;
};
int xr_regio_read_event(struct xr_regio *r, uint32_t seq, struct xr_event_record *ev);

/* A QP context as the QP window holds it. */
struct xr_qp_ctx {
	uint8_t  state, type, path_mtu;   /* enums of regmap.h; path_mtu 1..5 */
	bool     ipv6;
	uint32_t dest_qpn, sq_psn, rq_psn, msn;
	uint8_t  timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t  max_rd_atomic, max_dest_rd_atomic;
	uint8_t  access;
	uint16_t pkey;
	uint32_t flow_label;
	uint16_t src_port, dst_port;
	uint8_t  traffic_class, hop_limit, pcp;
	bool     vlan;
	uint16_t vid;
	uint32_t sq_cqn, rq_cqn, pd;
	xr_gid   peer_gid;
	uint8_t  peer_mac[6];
	uint64_t sq_base, rq_base;
	uint8_t  sq_log_size, rq_log_size;
	uint8_t  sq_wqe_blocks;           /* send WQE slot: XR_WQE_SIZE << this (ring.h) */
	uint8_t  rq_wqe_blocks;           /* receive WQE slot: XR_RWQE_SIZE << this */
	uint16_t sq_ci, rq_ci;            /* read-only: engine progress */
	uint32_t qkey;                    /* UD Q_Key */
	uint32_t srqn;                    /* 0: the QP's own receive queue */
	uint32_t rate_limit;              /* static rate cap, Mb/s (0: none) */
	/* Read-only, as of READ: congestion control (QP_CC_*). */
	uint32_t cc_rate, cc_target, cc_alpha;
	uint32_t ce_rcvd, cnp_sent, cnp_rcvd;
};

struct xr_mr_ctx {
	uint64_t va, len;
	uint8_t  access;
	bool     valid;                   /* read-only: set while registered */
	uint32_t pd;
	uint32_t lkey, rkey;              /* assigned by COMMIT */
	uint8_t  page_shift;
	uint64_t mtt;                     /* host address of uint64_t[mtt_count] */
	uint32_t mtt_count;
	/* Memory windows share the table and the key space (MR_KIND). */
	bool     mw;                      /* a window, not a region */
	uint8_t  mw_type;                 /* 1 or 2 */
	bool     bound;                   /* read-only: window bound (va/len/access are its own) */
	uint32_t parent;                  /* read-only: MR index of the region it is bound to */
	uint32_t mw_qpn;                  /* read-only: type 2, the QP it is bound to */
	uint32_t mw_count;                /* read-only: region, windows bound to it */
};

struct xr_cq_ctx {
	uint64_t base;
	uint8_t  log_size;
	uint32_t pi;                      /* read-only */
	bool     valid, armed, solicited_only, overflow;
};

/*
 * Shadow + commit: write every shadow register of the window, then the
 * command register last, so the engine applies the whole entry at once.
 * Return 0, a positive AXI response on refusal (the reason is in
 * QP_CMD_STATUS; *status receives it when non-NULL), or -errno.
 */
int xr_regio_qp_commit(struct xr_regio *r, uint32_t qpn, const struct xr_qp_ctx *c, uint32_t *status);
int xr_regio_qp_read(struct xr_regio *r, uint32_t qpn, struct xr_qp_ctx *c);
int xr_regio_qp_destroy(struct xr_regio *r, uint32_t qpn);
int xr_regio_mr_commit(struct xr_regio *r, uint32_t index, struct xr_mr_ctx *c, uint32_t *status);
int xr_regio_mr_read(struct xr_regio *r, uint32_t index, struct xr_mr_ctx *c);
int xr_regio_mr_invalidate(struct xr_regio *r, uint32_t index);
/* A shared receive queue (SRQ window). */
struct xr_srq_ctx {
	uint64_t base;                    /* ring of struct xr_hw_rwqe */
	uint8_t  log_size;
	uint8_t  wqe_blocks;              /* WQE slot: XR_RWQE_SIZE << this (ring.h) */
	uint16_t limit;                   /* 0: disarmed */
	uint32_t pd;
	bool     valid;                   /* read-only */
	uint32_t nqps;                    /* read-only: QPs attached */
	uint16_t ci;                      /* read-only: WQEs taken */
};

int xr_regio_cq_commit(struct xr_regio *r, uint32_t cqn, const struct xr_cq_ctx *c, uint32_t *status);
int xr_regio_cq_read(struct xr_regio *r, uint32_t cqn, struct xr_cq_ctx *c);
int xr_regio_cq_destroy(struct xr_regio *r, uint32_t cqn);
int xr_regio_srq_commit(struct xr_regio *r, uint32_t srqn, const struct xr_srq_ctx *c, uint32_t *status);
int xr_regio_srq_read(struct xr_regio *r, uint32_t srqn, struct xr_srq_ctx *c);
int xr_regio_srq_destroy(struct xr_regio *r, uint32_t srqn);
/* MCG_CMD cmd (1 attach, 2 detach) for QP qpn and group gid; on SLVERR
 * *status is QP_CMD_STATUS's reason. */
int xr_regio_mcg(struct xr_regio *r, uint32_t cmd, const xr_gid *gid, uint32_t qpn, uint32_t *status);

/* The shadow words of a context and back: shared by driver and engine. */
#define XR_QP_SHADOW_WORDS 40
/* (offset, value) pairs in write order; returns the count, or -EINVAL when
 * a field does not fit its register field. */
int xr_qp_ctx_encode(const struct xr_qp_ctx *c, uint32_t off[], uint32_t val[]);
/* Decodes from a register reader (the engine's shadow or a backend). */
void xr_qp_ctx_decode(struct xr_qp_ctx *c, uint32_t (*get)(void *arg, uint32_t off), void *arg);
#define XR_MR_SHADOW_WORDS 16
int xr_mr_ctx_encode(const struct xr_mr_ctx *c, uint32_t off[], uint32_t val[]);
void xr_mr_ctx_decode(struct xr_mr_ctx *c, uint32_t (*get)(void *arg, uint32_t off), void *arg);
#define XR_CQ_SHADOW_WORDS 8
int xr_cq_ctx_encode(const struct xr_cq_ctx *c, uint32_t off[], uint32_t val[]);
void xr_cq_ctx_decode(struct xr_cq_ctx *c, uint32_t (*get)(void *arg, uint32_t off), void *arg);
#define XR_SRQ_SHADOW_WORDS 8
int xr_srq_ctx_encode(const struct xr_srq_ctx *c, uint32_t off[], uint32_t val[]);
void xr_srq_ctx_decode(struct xr_srq_ctx *c, uint32_t (*get)(void *arg, uint32_t off), void *arg);

#ifdef __cplusplus
}
#endif
#endif
