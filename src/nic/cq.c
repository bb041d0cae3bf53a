/* SPDX-License-Identifier: MIT */
/* The CQ table behind the CQ window: completion rings in host memory. */
#include <stddef.h>
#include <string.h>

#include "engine.h"

#define MAX_CQ_LOG_SIZE 20

static void shadow_load(struct xr_engine *e, const struct xr_cq_ctx *c)
{
	uint32_t off[XR_CQ_SHADOW_WORDS], val[XR_CQ_SHADOW_WORDS];
	int n = xr_cq_ctx_encode(c, off, val);

	for (int i = 0; i < n; i++)
		xr_reg_set(e, off[i], val[i]);
	/* Engine-owned fields are read-only in the window. */
	xr_reg_set(e, XR_REG_CQ_PI, c->pi);
	xr_reg_set(e, XR_REG_CQ_STATE, (c->valid ? 1u : 0) | (c->armed ? 2u : 0) |
		   (c->solicited_only ? 4u : 0) | (c->overflow ? 8u : 0));
}

static enum xr_cmd_status cq_cmd_locked(struct xr_engine *e, struct xr_cq *cq, uint32_t cqn, uint32_t cmd);

enum xr_cmd_status xr_cq_cmd(struct xr_engine *e, uint32_t cmd)
{
	uint32_t cqn = xr_reg_get(e, XR_REG_CQ_SEL);
	struct xr_cq *cq;
	struct xr_cq_ctx c;

	if (cmd == XR_CMD_CLEAR) {
		memset(&c, 0, sizeof(c));
		shadow_load(e, &c);
		return XR_CMD_ST_OK;
	}
	if (cmd < XR_CMD_COMMIT || cmd > XR_CMD_DESTROY)
		return XR_CMD_ST_BAD_CMD;
	if (cqn == 0 || cqn >= XR_MAX_CQ)
		return XR_CMD_ST_BAD_INDEX;
	cq = &e->cqs[cqn];
	pthread_mutex_lock(&cq->lock);
	enum xr_cmd_status st = cq_cmd_locked(e, cq, cqn, cmd);
	pthread_mutex_unlock(&cq->lock);
	return st;
}

static struct xr_hw_cqe *cqe_at(uint64_t base, uint8_t log_size, uint32_t idx)
{
	return (struct xr_hw_cqe *)(uintptr_t)(base + (uint64_t)(idx & ((1u << log_size) - 1)) * XR_CQE_SIZE);
}

/* A COMMIT of a CQ in use with another ring (ibv_resize_cq): the CQEs the
 * host has not consumed move to the new ring, each at its own index, and
 * every other slot of the new ring's window [ci, ci + size) is marked as
 * not yet written (its phase the opposite of what its index expects), so
 * the host's poll finds exactly those. Under the CQ's lock, as every CQE
 * is written: none lands in the old ring after this. False when they do
 * not fit (nothing changed). */
static bool move_cqes(struct xr_cq *cq, const struct xr_cq_ctx *to)
{
	uint32_t size = 1u << to->log_size, pi = cq->ctx.pi;

	if (pi - cq->ci > size)
		return false;
	for (uint32_t idx = cq->ci; idx != cq->ci + size; idx++) {
		struct xr_hw_cqe *d = cqe_at(to->base, to->log_size, idx);
		uint8_t phase = (uint8_t)(((idx >> to->log_size) & 1) ^ 1);
		if (idx - cq->ci < pi - cq->ci) {
			memcpy(d, cqe_at(cq->ctx.base, cq->ctx.log_size, idx), offsetof(struct xr_hw_cqe, phase));
		} else {
			phase ^= 1;
			d->drv_flags = 0;
		}
		__atomic_store_n(&d->phase, phase, __ATOMIC_RELEASE);
	}
	return true;
}

static enum xr_cmd_status cq_cmd_locked(struct xr_engine *e, struct xr_cq *cq, uint32_t cqn, uint32_t cmd)
{
	struct xr_cq_ctx c;

	switch (cmd) {
	case XR_CMD_COMMIT:
		xr_cq_ctx_decode(&c, xr_reg_shadow_get, e);
		if (!c.base || c.log_size < 1 || c.log_size > MAX_CQ_LOG_SIZE)
			return XR_CMD_ST_BAD_RANGE;
		/* A resize moves the CQEs into a ring of its own (in place, the
		 * moves would overwrite the ones still to move). */
		if (cq->in_use && c.base == cq->ctx.base && c.log_size != cq->ctx.log_size)
			return XR_CMD_ST_BAD_RANGE;
		if (cq->in_use && c.base != cq->ctx.base && !move_cqes(cq, &c))
			return XR_CMD_ST_BAD_RANGE;   /* more CQEs waiting than the new ring holds */
		c.pi = cq->in_use ? cq->ctx.pi : 0;
		c.valid = true;
		c.armed = cq->in_use && cq->ctx.armed;
		c.solicited_only = cq->in_use && cq->ctx.solicited_only;
		c.overflow = false;
		cq->ctx = c;
		/* Written only when it changes: the data path reads it before
		 * taking the lock (a CQ in use stays so through a resize). */
		if (!cq->in_use) {
			cq->ci = 0;
			cq->in_use = true;
		}
		shadow_load(e, &c);
		return XR_CMD_ST_OK;
	case XR_CMD_READ:
		if (!cq->in_use)
			return XR_CMD_ST_NO_ENTRY;
		shadow_load(e, &cq->ctx);
		return XR_CMD_ST_OK;
	default:
		if (!cq->in_use)
			return XR_CMD_ST_NO_ENTRY;
		if (xr_qp_any_on_cq(e, cqn))
			return XR_CMD_ST_BUSY;   /* a live QP still completes into it */
		memset(&cq->ctx, 0, sizeof(cq->ctx));
		cq->in_use = false;
		cq->ci = 0;
		return XR_CMD_ST_OK;
	}
}
