/* SPDX-License-Identifier: MIT */
/*
 * The engine's internal state: the register file's storage, the QP, MR and
 * CQ tables, counters and the event log. Every other engine file includes
 * this; nothing outside src/nic does.
 */
#ifndef XR_NIC_ENGINE_H
#define XR_NIC_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "regmap_internal.h"
#include "xroce/engine.h"

#define XR_PLAIN_REG_WORDS (0x400 / 4)

struct xr_qp {
	pthread_mutex_t lock;        /* held by the data path per packet and by commit */
	uint32_t qpn;
	bool in_use;
	struct xr_qp_ctx ctx;        /* the committed context, PSNs kept current by the engine */
	uint16_t sq_pi, rq_pi;       /* doorbell values: WQEs posted by the host */
};

struct xr_mr {
	bool in_use;                 /* registered (keys valid) */
	struct xr_mr_ctx ctx;
};

struct xr_cq {
	bool in_use;
	struct xr_cq_ctx ctx;
	uint32_t ci;                 /* consumer index from the doorbell */
};

struct xr_evlog_entry {
	uint64_t ts_ns;
	uint32_t qpn, arg0, arg1;
	uint8_t type;
};

struct xr_engine {
	/* One register access at a time, as a single AXI-Lite master. */
	pthread_mutex_t reg_lock;
	/* Held shared by the data path, exclusively by soft reset and destroy. */
	pthread_rwlock_t dp_lock;
	uint32_t regs[XR_PLAIN_REG_WORDS];     /* plain registers and shadow windows */
	uint32_t writable_mask[XR_PLAIN_REG_WORDS];
	uint32_t latch_hi, latch_index;        /* counter high-word latch */
	bool latch_valid;
	atomic_bool link_up;

	_Atomic uint64_t counters[XR_CNT_COUNT];

	struct xr_qp **qps;                    /* XR_MAX_QP slots, allocated on first use */
	struct xr_mr *mrs;                     /* XR_MAX_MR entries */
	uint8_t *mr_variant;                   /* last key variant per MR index */
	struct xr_cq *cqs;                     /* XR_MAX_CQ entries */

	pthread_mutex_t evlog_lock;
	struct xr_evlog_entry evlog[XR_EVLOG_ENTRIES];
	uint64_t evlog_seq;                    /* events ever logged */
	uint64_t t0_ns;

	struct {
		pthread_t thread;
		int listen_fd, stop_pipe[2];
		bool running;
		char path[108];
	} debug;
};

static inline void xr_count(struct xr_engine *e, enum xr_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&e->counters[c], n, memory_order_relaxed);
}

static inline uint32_t xr_reg_get(const struct xr_engine *e, uint32_t off)
{
	return __atomic_load_n(&e->regs[off / 4], __ATOMIC_RELAXED);
}

static inline void xr_reg_set(struct xr_engine *e, uint32_t off, uint32_t v)
{
	__atomic_store_n(&e->regs[off / 4], v, __ATOMIC_RELAXED);
}

uint64_t xr_now_ns(void);
void xr_engine_soft_reset(struct xr_engine *e);
void xr_evlog_read(struct xr_engine *e, uint64_t seq, struct xr_evlog_entry *out, bool *valid);
uint64_t xr_evlog_count(struct xr_engine *e);
void xr_evlog_add(struct xr_engine *e, enum xr_event_type t, uint32_t qpn, uint32_t a0, uint32_t a1);

/* Table commands (qp.c, mr.c, cq.c): return an enum xr_cmd_status. */
enum xr_cmd_status xr_qp_cmd(struct xr_engine *e, uint32_t cmd);
enum xr_cmd_status xr_mr_cmd(struct xr_engine *e, uint32_t cmd);
enum xr_cmd_status xr_cq_cmd(struct xr_engine *e, uint32_t cmd);
void xr_tables_reset(struct xr_engine *e);
void xr_tables_free(struct xr_engine *e);

/* The QP with this number if it exists (in_use), else NULL. Lock-free. */
struct xr_qp *xr_qp_lookup(struct xr_engine *e, uint32_t qpn);
/* A consistent copy of a QP's context, as the data path sees it: 0 or -ENOENT. */
int xr_qp_snapshot(struct xr_engine *e, uint32_t qpn, struct xr_qp_ctx *out);
/* The MR a key names if registered and the variant matches, else NULL. */
struct xr_mr *xr_mr_lookup(struct xr_engine *e, uint32_t key);

/* Doorbells (regfile.c routes them here). */
enum xr_axi_resp xr_doorbell(struct xr_engine *e, uint32_t addr, uint32_t val);

#endif
