/* SPDX-License-Identifier: MIT */
/*
 * The host driver's private half: the objects behind the handles of
 * include/xroce/verbs.h and the helpers its files share. The driver is
 * verbs on top of the register file, doorbells and host-memory rings only.
 * It validates what libibverbs' providers validate (modify_qp's state
 * machine and masks, WR shapes), keeps the rings, and translates CQEs into
 * work completions. Its files, by role: device.c (open/close/query, PD),
 * mr.c (MR, memory windows), cq.c (CQ, events fd, poll), qp.c
 * (create/modify/query/destroy), connect.c (RESET to RTS toward a peer
 * in one call, on top of modify), post.c (post_send/post_recv, binding
 * type-1 windows), async.c (asynchronous events).
 */
#ifndef XROCE_DRV_H
#define XROCE_DRV_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../nic/regmap_internal.h"
#include "xroce/regio.h"
#include "xroce/engine.h"
#include "xroce/verbs.h"

#define PAGE_SHIFT 12
#define PAGE_SIZE (1u << PAGE_SHIFT)
#define MAX_QUEUE_LOG 15

struct xr_context {
	struct xr_engine *engine;
	struct xr_regio *regs;
	struct xr_link *link;
	pthread_mutex_t lock;          /* register sequences and ID allocation */
	enum xr_progress_mode progress;
	xr_gid gid;
	uint32_t next_pd, next_cqn, next_mr, next_qpn, next_srqn;
	uint32_t *free_srqn, nfree_srqn;
	uint32_t *free_mr, nfree_mr, free_mr_head;   /* freed MR/MW indices, oldest at free_mr_head */
	uint32_t *free_qpn, nfree_qpn;
	struct xr_qp **qp_by_num;      /* CQEs name QPs by number */
	struct xr_cq **cq_by_num;      /* interrupts name CQs by number */
	uint32_t ev_next;              /* next event log sequence to look at */
	int async_efd;                 /* counts events an application is told of (semaphore) */
};

struct xr_pd {
	struct xr_context *ctx;
	uint32_t pdn;
};

struct xr_cq {
	struct xr_context *ctx;
	uint32_t cqn;
	struct xr_hw_cqe *ring;
	uint32_t log_size, ci;
	/* The ring and its log size in one word (rings are 64-byte aligned),
	 * for the poll that reads them without the lock; a resize swaps it. */
	uintptr_t view;
	/* Rings a resize left: a lock-free poll may still read one, so none is
	 * freed before destroy; a resize back to a size takes its old ring
	 * again (at most one ring per size is kept). */
	struct xr_old_ring {
		struct xr_old_ring *next;
		uint32_t log_size;
	} *old_rings;                  /* in the first bytes of each ring: never its phase */
	int efd;
	pthread_mutex_t lock;
	bool evented;                  /* armed for an event once: its callers block, not spin */
	/* linger.c, for the QPs sending into this CQ (here, not in a QP that
	 * may be destroyed while its last completion lingers); atomics:
	 * posts and polls race. */
	struct xr_linger {
		uint64_t answers_at_post;  /* xr_engine_answers_in at the last post_send */
		uint16_t skip, backoff;    /* hand-backs left without a linger, and the next such run */
	} linger;
};

struct xr_srq {
	struct xr_context *ctx;
	struct xr_pd *pd;
	uint32_t srqn;
	struct xr_hw_rwqe *ring;       /* slots of XR_RWQE_SIZE << blocks_log bytes: xr_rwqe_at */
	uint32_t log, max_sge, limit;
	uint8_t blocks_log;
	uint16_t pi, ci;               /* ci: WQEs the engine took, as last read */
	uint32_t nqps;                 /* QPs attached (destroy: EBUSY) */
	pthread_mutex_t lock;
};

struct xr_ah {
	struct xr_context *ctx;
	struct xr_hw_ud_av av;         /* copied into each UD WQE */
};

struct xr_qp {
	struct xr_context *ctx;
	struct xr_pd *pd;
	uint32_t qpn;
	struct xr_qp_init_attr init;
	struct xr_qp_ctx hw;           /* the context as last committed (ctx->lock) */
	uint8_t post_state;            /* hw.state for posts, atomic (hw_set) */
	uint8_t static_rate;           /* the AV's IBV_RATE_* as given */
	uint32_t rate_limit;           /* IBV_QP_RATE_LIMIT as given, kb/s */
	struct xr_hw_wqe *sq;          /* slots of XR_WQE_SIZE << sq_blocks_log bytes: xr_sq_wqe */
	struct xr_hw_rwqe *rq;
	uint32_t sq_log, rq_log;
	uint8_t sq_blocks_log, rq_blocks_log;   /* the slots' sizes, log2 of 256-byte blocks */
	uint16_t sq_pi, sq_ci, rq_pi, rq_ci;
	pthread_mutex_t sq_lock, rq_lock;
};

/* The send queue's slot idx (free-running). */
static inline struct xr_hw_wqe *xr_sq_wqe(const struct xr_qp *qp, uint32_t idx)
{
	return (struct xr_hw_wqe *)xr_ring_slot((uintptr_t)qp->sq, idx, qp->sq_log, qp->sq_blocks_log);
}

/* Receive WQE slot idx (free-running) of a ring of 2^log slots of
 * XR_RWQE_SIZE << blocks_log bytes. */
static inline struct xr_hw_rwqe *xr_rwqe_at(struct xr_hw_rwqe *ring, uint32_t idx, uint32_t log, uint8_t blocks_log)
{
	return (struct xr_hw_rwqe *)xr_ring_slot((uintptr_t)ring, idx, log, blocks_log);
}

/* The smallest receive WQE slot holding max_sge SGEs (ring.h). */
static inline uint8_t xr_rwqe_blocks_log(uint32_t max_sge)
{
	uint8_t log = 0;

	while (XR_RWQE_BODY(log) / sizeof(struct xr_sge) < max_sge)
		log++;
	return log;
}

/* The driver's locks hold the thread's interrupts, as a kernel driver's
 * spin_lock_irqsave: an event an access raises under one (a doorbell's
 * WQE_POSTED, a commit's QP_STATE, a refused command's) interrupts once
 * the thread has let go of all of them. A handler may then call the
 * driver, on the QP being posted to or modified too: it neither waits for
 * a lock its own thread holds, nor closes a cycle with a RESET on another
 * thread, which takes the queue locks under ctx->lock. */
static inline void drv_lock(pthread_mutex_t *m)
{
	xr_engine_irq_hold();
	pthread_mutex_lock(m);
}

static inline void drv_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
	xr_engine_irq_release();
}

/* linger.c: a post_send of thread mode notes what had come in by then;
 * a completion that emptied a send queue hands the engine back. */
void xr_linger_posted(struct xr_qp *qp);
void xr_linger_hand_back(struct xr_cq *cq);

/* cq.c: cq's completions of QP qpn not polled yet are of a ring gone
 * (a RESET, a destroy): polling them moves no QP's indexes. Under the
 * CQ's lock; a QP's two CQs are locked in one order (cqn). */
void xr_cq_mark_stale_locked(struct xr_cq *cq, uint32_t qpn);
void xr_cq_lock_pair(struct xr_cq *a, struct xr_cq *b);
void xr_cq_unlock_pair(struct xr_cq *a, struct xr_cq *b);

/* Writes receive WR wr into ring slot q (a QP's RQ or an SRQ): 0, or
 * EINVAL for more than max_sge SGEs or a total beyond 2^31 bytes (the
 * port's message size; issue 15, defect 12). post.c */
int xr_rwqe_fill(struct xr_hw_rwqe *q, const struct xr_recv_wr *wr, unsigned max_sge);
/* Rings a doorbell (a send or receive queue's, an SRQ's) for the WQEs
 * written before it: false when the device did not take it, and then none
 * of them is posted. Only a register path that answers can say so (the
 * in-process engine, a debug socket); an MMIO write is posted and
 * answers OKAY, and a bad send index is found when the ring is read. */
static inline bool xr_ring_doorbell(struct xr_regio *r, uint32_t addr, uint32_t val)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return xr_regio_write(r, addr, val) == XR_AXI_OKAY;
}

/* Keeps a freed MR handle or QPN for the next allocation. The list
 * doubles when its length reaches a power of two (it holds at least
 * 2^k > n then): a million frees cost a million stores, not a million
 * reallocations. */
static inline bool push_free(uint32_t **list, uint32_t *n, uint32_t v)
{
	if (!(*n & (*n - 1))) {
		uint32_t *l = realloc(*list, (*n ? 2 * (size_t)*n : 1) * sizeof(**list));
		if (!l)
			return false;
		*list = l;
	}
	(*list)[(*n)++] = v;
	return true;
}

/* An IBV_RATE_* value in Mb/s (0: none). */
uint32_t xr_static_rate_mbps(uint8_t rate);

#endif
