/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: the SRQ table behind the SRQ window, its
 * doorbell, and taking a receive WQE for whichever attached QP needs one
 * first (F3). A taken WQE is copied into the QP (it belongs to that QP
 * until its message ends), so the ring slot is free at once and the
 * driver reuses slots up to SRQ_CI. The limit (F1) is armed through
 * COMMIT and fires once: the engine logs srq_limit and disarms it.
 */
#include <string.h>

#include "engine.h"

static void shadow_load(struct xr_engine *e, const struct xr_srq_ctx *c)
{
	uint32_t off[XR_SRQ_SHADOW_WORDS], val[XR_SRQ_SHADOW_WORDS];
	int n = xr_srq_ctx_encode(c, off, val);

	for (int i = 0; i < n; i++)
		xr_reg_set(e, off[i], val[i]);
	xr_reg_set(e, XR_REG_SRQ_STATE, (c->valid ? 1u : 0u) | c->nqps << 8);
	xr_reg_set(e, XR_REG_SRQ_CI, c->ci);
}

static struct xr_srq *srq_at(struct xr_engine *e, uint32_t srqn)
{
	return (srqn && srqn < XR_MAX_SRQ) ? &e->srqs[srqn] : NULL;
}

static enum xr_cmd_status srq_commit(struct xr_engine *e, struct xr_srq *srq)
{
	struct xr_srq_ctx c;
	enum xr_cmd_status st = XR_CMD_ST_OK;

	xr_srq_ctx_decode(&c, xr_reg_shadow_get, e);
	pthread_mutex_lock(&srq->lock);
	if (srq->in_use) {
		/* modify: only the limit (a resize is not supported) */
		if (c.limit > (1u << srq->ctx.log_size))
			st = XR_CMD_ST_BAD_RANGE;
		else
			srq->ctx.limit = c.limit;
	} else if (c.log_size < 1 || c.log_size > 15 || !c.base || c.limit > (1u << c.log_size) ||
		   c.wqe_blocks > XR_WQE_MAX_BLOCKS_LOG) {
		st = XR_CMD_ST_BAD_RANGE;
	} else {
		srq->ctx = c;
		srq->ctx.valid = true;
		srq->ctx.nqps = 0;
		srq->ctx.ci = 0;
		srq->pi = srq->head = 0;
		__atomic_store_n(&srq->in_use, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&srq->lock);
	return st;
}

enum xr_cmd_status xr_srq_cmd(struct xr_engine *e, uint32_t cmd)
{
	struct xr_srq *srq = srq_at(e, xr_reg_get(e, XR_REG_SRQ_SEL));
	enum xr_cmd_status st = XR_CMD_ST_OK;
	struct xr_srq_ctx c;

	if (cmd == XR_CMD_CLEAR) {
		memset(&c, 0, sizeof(c));
		shadow_load(e, &c);
		return XR_CMD_ST_OK;
	}
	if (cmd < XR_CMD_COMMIT || cmd > XR_CMD_DESTROY)
		return XR_CMD_ST_BAD_CMD;
	if (!srq)
		return XR_CMD_ST_BAD_INDEX;
	if (cmd == XR_CMD_COMMIT)
		return srq_commit(e, srq);
	pthread_mutex_lock(&srq->lock);
	if (!srq->in_use) {
		st = XR_CMD_ST_NO_ENTRY;
	} else if (cmd == XR_CMD_READ) {
		c = srq->ctx;
		c.ci = srq->head;
		pthread_mutex_unlock(&srq->lock);
		shadow_load(e, &c);
		return XR_CMD_ST_OK;
	} else if (srq->ctx.nqps) {
		st = XR_CMD_ST_BUSY;   /* ibv_destroy_srq fails while QPs use it */
	} else {
		__atomic_store_n(&srq->in_use, false, __ATOMIC_RELEASE);
		memset(&srq->ctx, 0, sizeof(srq->ctx));
		srq->pi = srq->head = 0;
	}
	pthread_mutex_unlock(&srq->lock);
	return st;
}

enum xr_axi_resp xr_srq_doorbell(struct xr_engine *e, uint32_t val)
{
	struct xr_srq *srq = srq_at(e, val >> 16);
	enum xr_axi_resp r = XR_AXI_OKAY;

	if (!srq)
		return XR_AXI_SLVERR;
	pthread_mutex_lock(&srq->lock);
	/* More posted than the ring holds would make the engine read slots
	 * the host is still writing: refused. */
	if (!srq->in_use || (uint16_t)((uint16_t)val - srq->head) > (1u << srq->ctx.log_size))
		r = XR_AXI_SLVERR;
	else
		srq->pi = (uint16_t)val;
	pthread_mutex_unlock(&srq->lock);
	return r;
}

bool xr_srq_attach(struct xr_engine *e, uint32_t srqn)
{
	struct xr_srq *srq = srq_at(e, srqn);
	bool ok = false;

	if (!srq)
		return false;
	pthread_mutex_lock(&srq->lock);
	if (srq->in_use) {
		srq->ctx.nqps++;
		ok = true;
	}
	pthread_mutex_unlock(&srq->lock);
	return ok;
}

void xr_srq_detach(struct xr_engine *e, uint32_t srqn)
{
	struct xr_srq *srq = srq_at(e, srqn);

	if (!srq)
		return;
	pthread_mutex_lock(&srq->lock);
	if (srq->in_use && srq->ctx.nqps)
		srq->ctx.nqps--;
	pthread_mutex_unlock(&srq->lock);
}

void xr_srq_table_reset(struct xr_engine *e)
{
	for (uint32_t i = 0; i < XR_MAX_SRQ; i++) {
		pthread_mutex_lock(&e->srqs[i].lock);
		e->srqs[i].in_use = false;
		memset(&e->srqs[i].ctx, 0, sizeof(e->srqs[i].ctx));
		e->srqs[i].pi = e->srqs[i].head = 0;
		pthread_mutex_unlock(&e->srqs[i].lock);
	}
}

enum xr_srq_take xr_srq_take(struct xr_engine *e, struct xr_qp *qp, uint32_t min_len,
			     struct xr_hw_rwqe *out, uint16_t *index)
{
	struct xr_srq *srq = srq_at(e, qp->ctx.srqn);
	enum xr_srq_take got = XR_SRQ_EMPTY;
	uint32_t limit_left = 0;
	bool fire = false;

	if (!srq)
		return XR_SRQ_EMPTY;
	pthread_mutex_lock(&srq->lock);
	if (srq->in_use && srq->head != srq->pi) {
		const struct xr_hw_rwqe *w = (const struct xr_hw_rwqe *)xr_ring_slot(
			(uintptr_t)srq->ctx.base, srq->head, srq->ctx.log_size, srq->ctx.wqe_blocks);
		if (w->length < min_len) {
			got = XR_SRQ_TOO_SMALL;
		} else {
			xr_rwqe_copy(out, w, srq->ctx.wqe_blocks);
			*index = srq->head++;
			srq->ctx.ci = srq->head;
			got = XR_SRQ_TAKEN;
			limit_left = (uint16_t)(srq->pi - srq->head);
			if (srq->ctx.limit && limit_left < srq->ctx.limit) {
				srq->ctx.limit = 0;   /* fires once, then disarmed (F1) */
				fire = true;
			}
		}
	}
	pthread_mutex_unlock(&srq->lock);
	if (fire) {
		xr_count(e, XR_CNT_SRQ_LIMIT_REACHED, 1);
		xr_evlog_add(e, XR_EV_SRQ_LIMIT, qp->qpn, qp->ctx.srqn, limit_left);
	}
	return got;
}
