/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: create/destroy, polling CQEs into work completions,
 * arming, the per-CQ event fd and waiting on it, status strings.
 */
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "drv.h"

/* ---- CQ ---- */

/* The log2 of the ring that holds cqe entries (at least 2). */
static uint32_t ring_log(int cqe)
{
	uint32_t log = 1;

	while ((1u << log) < (uint32_t)cqe)
		log++;
	return log;
}

struct xr_cq *xr_create_cq(struct xr_context *ctx, int cqe)
{
	struct xr_cq *cq;
	struct xr_cq_ctx c;
	uint32_t log;
	int rc;

	if (!ctx || cqe < 1 || cqe > XR_CQ_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	log = ring_log(cqe);
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ring = aligned_alloc(64, (size_t)XR_CQE_SIZE << log);
	cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!cq->ring || cq->efd < 0) {
		free(cq->ring);
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	memset(cq->ring, 0, (size_t)XR_CQE_SIZE << log);
	cq->ctx = ctx;
	cq->log_size = log;
	cq->view = (uintptr_t)cq->ring | log;
	pthread_mutex_init(&cq->lock, NULL);
	memset(&c, 0, sizeof(c));
	c.base = (uintptr_t)cq->ring;
	c.log_size = (uint8_t)log;
	drv_lock(&ctx->lock);
	cq->cqn = ctx->next_cqn++;
	rc = cq->cqn < XR_MAX_CQ ? xr_regio_cq_commit(ctx->regs, cq->cqn, &c, NULL) : -ENOSPC;
	if (!rc)
		__atomic_store_n(&ctx->cq_by_num[cq->cqn], cq, __ATOMIC_RELEASE);
	drv_unlock(&ctx->lock);
	if (rc) {
		close(cq->efd);
		free(cq->ring);
		free(cq);
		errno = rc == -ENOSPC ? ENOSPC : EINVAL;
		return NULL;
	}
	return cq;
}

int xr_destroy_cq(struct xr_cq *cq)
{
	struct xr_context *ctx;
	uint32_t st;
	int rc;

	if (!cq)
		return EINVAL;
	ctx = cq->ctx;
	drv_lock(&ctx->lock);
	rc = xr_regio_cq_destroy(ctx->regs, cq->cqn);
	/* The device has no such CQ (a soft reset emptied its tables): the
	 * host's part goes all the same. */
	if (rc > 0 && !xr_regio_read(ctx->regs, XR_REG_QP_CMD_STATUS, &st) && st == XR_CMD_ST_NO_ENTRY)
		rc = 0;
	if (!rc)
		__atomic_store_n(&ctx->cq_by_num[cq->cqn], NULL, __ATOMIC_RELEASE);
	drv_unlock(&ctx->lock);
	if (rc)
		return EBUSY;   /* a QP still uses it */
	close(cq->efd);
	free(cq->ring);
	while (cq->old_rings) {
		struct xr_old_ring *o = cq->old_rings;
		cq->old_rings = o->next;
		free(o);
	}
	pthread_mutex_destroy(&cq->lock);
	free(cq);
	return 0;
}

int xr_cq_size(const struct xr_cq *cq)
{
	return 1 << cq->log_size;
}

/* The ring a resize to log takes: one kept from before of that size (the
 * engine marks every slot of it, so no clearing), or a new one. */
static struct xr_hw_cqe *ring_for(struct xr_cq *cq, uint32_t log)
{
	struct xr_hw_cqe *ring;

	for (struct xr_old_ring **o = &cq->old_rings; *o; o = &(*o)->next)
		if ((*o)->log_size == log) {
			ring = (struct xr_hw_cqe *)(void *)*o;
			*o = (*o)->next;
			return ring;
		}
	ring = aligned_alloc(64, (size_t)XR_CQE_SIZE << log);
	if (ring)
		memset(ring, 0, (size_t)XR_CQE_SIZE << log);
	return ring;
}

static void keep_ring(struct xr_cq *cq, struct xr_hw_cqe *ring, uint32_t log)
{
	struct xr_old_ring *o = (struct xr_old_ring *)(void *)ring;

	o->log_size = log;
	o->next = cq->old_rings;
	cq->old_rings = o;
}

/* The engine moves the waiting CQEs (its COMMIT of a CQ in use with a new
 * ring, under its CQ lock): it alone knows which it wrote last. Here, the
 * host's side: no poll runs meanwhile (the CQ's lock), and the old ring
 * stays allocated for a poll that read the view before the swap. The same
 * size again changes nothing (as mlx5). */
int xr_resize_cq(struct xr_cq *cq, int cqe)
{
	struct xr_context *ctx;
	struct xr_hw_cqe *ring;
	struct xr_cq_ctx c;
	uint32_t log, st = 0;
	int rc = 0;

	if (!cq || cqe < 1 || cqe > XR_CQ_MAX_CQE)
		return EINVAL;
	log = ring_log(cqe);
	ctx = cq->ctx;
	drv_lock(&ctx->lock);   /* the CQ window; before the CQ's lock, as modify_qp */
	drv_lock(&cq->lock);
	if (log == cq->log_size)
		goto out;
	ring = ring_for(cq, log);
	if (!ring) {
		rc = ENOMEM;
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.base = (uintptr_t)ring;
	c.log_size = (uint8_t)log;
	rc = xr_regio_cq_commit(ctx->regs, cq->cqn, &c, &st);
	if (rc) {
		keep_ring(cq, ring, log);
		rc = rc > 0 && st == XR_CMD_ST_BAD_RANGE ? EINVAL : EIO;
		goto out;
	}
	keep_ring(cq, cq->ring, cq->log_size);
	cq->ring = ring;
	cq->log_size = log;
	__atomic_store_n(&cq->view, (uintptr_t)ring | log, __ATOMIC_RELEASE);
out:
	drv_unlock(&cq->lock);
	drv_unlock(&ctx->lock);
	return rc;
}

static int take_cqes(struct xr_cq *cq, int n, struct xr_wc *wc, bool *sq_drained);

/* A QP's completions stay in its CQs across a RESET or its destroy, for
 * the program to poll (rxe's way; mlx5 drops them). But the slot a stale
 * one names is of the old ring: the host's indexes start over at 0, and a
 * stale completion polled after new posts moved sq_ci past WQEs still in
 * flight, so the next posts overwrote them (or the engine refused the
 * doorbell). Those written so far are marked here; the engine writes no
 * more of the QP's old life once the commit returned. The caller holds
 * the CQ's lock from before it zeroes the host's indexes to after this:
 * a poller between the two would move them by an old slot. */
void xr_cq_mark_stale_locked(struct xr_cq *cq, uint32_t qpn)
{
	uint32_t mask = (1u << cq->log_size) - 1;

	for (uint32_t i = cq->ci; i - cq->ci <= mask; i++) {
		struct xr_hw_cqe *c = &cq->ring[i & mask];
		if (__atomic_load_n(&c->phase, __ATOMIC_ACQUIRE) != (((i >> cq->log_size) & 1) ^ 1))
			break;
		if (c->qp_num == qpn)
			c->drv_flags |= XR_CQE_DRV_STALE;
	}
}

void xr_cq_lock_pair(struct xr_cq *a, struct xr_cq *b)
{
	if (a == b) {
		drv_lock(&a->lock);
		return;
	}
	if (a->cqn > b->cqn) {   /* one order for every pair */
		struct xr_cq *t = a;
		a = b;
		b = t;
	}
	drv_lock(&a->lock);
	drv_lock(&b->lock);
}

void xr_cq_unlock_pair(struct xr_cq *a, struct xr_cq *b)
{
	drv_unlock(&a->lock);
	if (b != a)
		drv_unlock(&b->lock);
}

/* With the engine's thread running, a caller polling an empty CQ lends
 * its core for a pass and holds a lease (the thread stands by meanwhile: on
 * a small machine it would take the core the caller spins on), and one
 * whose completions emptied the send queue of the last send completion's
 * QP hands the engine back to the thread, since it may now stop calling
 * (spin on memory for the peer's answer; linger.c). Unsignaled WRs keep
 * a queue from looking empty: the lease then just runs out (500 us; up
 * to 4 ms for a caller that kept polling or posting). */
int xr_poll_cq(struct xr_cq *cq, int n, struct xr_wc *wc)
{
	struct xr_context *ctx = cq->ctx;
	bool drained = false;
	int got;

	if (n < 0)
		return -EINVAL;
	if (ctx->progress == XR_PROGRESS_INLINE) {
		xr_engine_poll(ctx->engine);
		return take_cqes(cq, n, wc, &drained);
	}
	got = take_cqes(cq, n, wc, &drained);
	if (!got && n && xr_engine_assist(ctx->engine) > 0)
		got = take_cqes(cq, n, wc, &drained);
	if (drained)
		xr_linger_hand_back(cq);
	return got;
}

static int take_cqes(struct xr_cq *cq, int n, struct xr_wc *wc, bool *sq_drained)
{
	struct xr_context *ctx = cq->ctx;
	uintptr_t view = __atomic_load_n(&cq->view, __ATOMIC_ACQUIRE);
	const struct xr_hw_cqe *peek = (const struct xr_hw_cqe *)(view & ~(uintptr_t)63);
	uint32_t log = (uint32_t)(view & 63), mask;
	int got = 0;
	uint32_t ci = __atomic_load_n(&cq->ci, __ATOMIC_RELAXED);

	/* An empty poll (most of a spinning program's) takes no lock: the
	 * next CQE's phase says it is not there yet. */
	if (__atomic_load_n(&peek[ci & ((1u << log) - 1)].phase, __ATOMIC_ACQUIRE) != (((ci >> log) & 1) ^ 1))
		return 0;
	drv_lock(&cq->lock);
	mask = (1u << cq->log_size) - 1;   /* a resize may have run meanwhile */
	while (got < n) {
		struct xr_hw_cqe *c = &cq->ring[cq->ci & mask];
		uint8_t want = ((cq->ci >> cq->log_size) & 1) ^ 1;
		struct xr_qp *qp;
		if (__atomic_load_n(&c->phase, __ATOMIC_ACQUIRE) != want)
			break;
		wc[got].wr_id = c->wr_id;
		wc[got].status = (enum xr_wc_status)c->status;
		wc[got].opcode = (enum xr_wc_opcode)c->opcode;
		wc[got].vendor_err = c->vendor_err;
		wc[got].byte_len = c->byte_len;
		wc[got].imm_data = c->imm_data;
		wc[got].qp_num = c->qp_num;
		wc[got].src_qp = c->src_qp;
		wc[got].wc_flags = c->wc_flags;
		/* Free the ring slots the completion covers (completions are in order). */
		qp = c->qp_num < XR_MAX_QP ? __atomic_load_n(&ctx->qp_by_num[c->qp_num], __ATOMIC_ACQUIRE) : NULL;
		if (c->drv_flags & XR_CQE_DRV_STALE) {
			c->drv_flags = 0;   /* the slot's next completion is a new one */
			qp = NULL;
		}
		if (qp) {
			if (c->opcode & XR_WC_RECV)
				__atomic_store_n(&qp->rq_ci, (uint16_t)(c->wqe_index + 1), __ATOMIC_RELEASE);
			else {
				__atomic_store_n(&qp->sq_ci, (uint16_t)(c->wqe_index + 1), __ATOMIC_RELEASE);
				*sq_drained = qp->sq_ci == __atomic_load_n(&qp->sq_pi, __ATOMIC_RELAXED);
			}
		}
		__atomic_store_n(&cq->ci, cq->ci + 1, __ATOMIC_RELAXED);
		got++;
	}
	if (got)
		xr_regio_write(ctx->regs, XR_REG_DB_CQ_CI + 8 * cq->cqn, cq->ci);
	drv_unlock(&cq->lock);
	return got;
}

int xr_req_notify_cq(struct xr_cq *cq, int solicited_only)
{
	/* The caller is about to wait for the event: the thread must deliver
	 * it; and completions of this CQ are not waited on by spinning. */
	__atomic_store_n(&cq->evented, true, __ATOMIC_RELAXED);
	if (cq->ctx->progress == XR_PROGRESS_THREAD)
		xr_engine_assist_end(cq->ctx->engine);
	return xr_regio_write(cq->ctx->regs, XR_REG_DB_CQ_ARM + 8 * cq->cqn, solicited_only ? 2 : 1) ? EIO : 0;
}

int xr_cq_event_fd(struct xr_cq *cq)
{
	return cq->efd;
}

uint32_t xr_cq_num(const struct xr_cq *cq)
{
	return cq->cqn;
}

int xr_get_cq_event(struct xr_cq *cq, int timeout_ms)
{
	struct pollfd p = { cq->efd, POLLIN, 0 };
	uint64_t v;
	int waited = 0;

	if (cq->ctx->progress == XR_PROGRESS_THREAD)
		xr_engine_assist_end(cq->ctx->engine);   /* about to block: the thread delivers */
	for (;;) {
		int slice = cq->ctx->progress == XR_PROGRESS_INLINE ? 1 : timeout_ms;
		if (cq->ctx->progress == XR_PROGRESS_INLINE)
			xr_engine_progress(cq->ctx->engine);   /* nobody else moves the engine */
		if (poll(&p, 1, slice) > 0 && read(cq->efd, &v, sizeof(v)) == sizeof(v))
			return 0;
		waited += slice < 0 ? 0 : slice;
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return ETIMEDOUT;
	}
}

const char *xr_wc_status_str(enum xr_wc_status s)
{
	static const char *const names[] = {
		"success", "local length error", "local QP operation error", "local EE context operation error",
		"local protection error", "Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error", "transport retry counter exceeded",
		"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
		"operation aborted", "invalid EE context number", "invalid EE context state",
		"fatal error", "response timeout error", "general error",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}
