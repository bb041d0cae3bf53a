/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: create/modify/query/destroy through the SRQ
 * window, posting into the SRQ's ring and ringing SRQ_DB. The engine
 * copies a WQE when a QP takes it, so slots before SRQ_CI are free again:
 * the driver reads SRQ_CI only when the ring looks full.
 */
#include "drv.h"

static uint32_t log2_at_least(uint32_t n)
{
	uint32_t l = 0;
	while ((1u << l) < n)
		l++;
	return l;
}

uint32_t xr_srq_num(const struct xr_srq *srq)
{
	return srq ? srq->srqn : 0;
}

struct xr_srq *xr_create_srq(struct xr_pd *pd, struct xr_srq_init_attr *attr)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_srq_ctx hw;
	struct xr_srq *srq;
	int rc = 0;

	if (!ctx || !attr || attr->attr.max_wr < 1 || attr->attr.max_wr > (1u << MAX_QUEUE_LOG) ||
	    attr->attr.max_sge > XR_RWQE_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->ctx = ctx;
	srq->pd = pd;
	srq->log = log2_at_least(attr->attr.max_wr < 2 ? 2 : attr->attr.max_wr);
	srq->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	srq->blocks_log = xr_rwqe_blocks_log(srq->max_sge);
	srq->ring = aligned_alloc(64, (size_t)XR_RWQE_SIZE << (srq->log + srq->blocks_log));
	if (!srq->ring) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&srq->lock, NULL);
	memset(&hw, 0, sizeof(hw));
	hw.base = (uintptr_t)srq->ring;
	hw.log_size = (uint8_t)srq->log;
	hw.wqe_blocks = srq->blocks_log;
	hw.pd = pd->pdn;
	/* srq_limit is not armed at create (ibv_create_srq(3)). */
	drv_lock(&ctx->lock);
	if (ctx->nfree_srqn)
		srq->srqn = ctx->free_srqn[--ctx->nfree_srqn];
	else if (ctx->next_srqn < XR_MAX_SRQ)
		srq->srqn = ctx->next_srqn++;
	rc = srq->srqn ? xr_regio_srq_commit(ctx->regs, srq->srqn, &hw, NULL) : -ENOSPC;
	drv_unlock(&ctx->lock);
	if (rc) {
		pthread_mutex_destroy(&srq->lock);
		free(srq->ring);
		free(srq);
		errno = rc == -ENOSPC ? ENOSPC : EINVAL;
		return NULL;
	}
	attr->attr.max_wr = 1u << srq->log;
	attr->attr.max_sge = srq->max_sge;
	attr->attr.srq_limit = 0;
	return srq;
}

int xr_modify_srq(struct xr_srq *srq, struct xr_srq_attr *attr, int mask)
{
	struct xr_srq_ctx hw;
	int rc;

	if (!srq || !attr || (mask & ~(XR_SRQ_MAX_WR | XR_SRQ_LIMIT)) || !mask)
		return EINVAL;
	if (mask & XR_SRQ_MAX_WR)
		return EINVAL;   /* no resize (IBV_DEVICE_SRQ_RESIZE not offered) */
	if (attr->srq_limit > (1u << srq->log))
		return EINVAL;
	memset(&hw, 0, sizeof(hw));
	hw.base = (uintptr_t)srq->ring;
	hw.log_size = (uint8_t)srq->log;
	hw.wqe_blocks = srq->blocks_log;
	hw.pd = srq->pd->pdn;
	hw.limit = (uint16_t)attr->srq_limit;
	drv_lock(&srq->ctx->lock);
	rc = xr_regio_srq_commit(srq->ctx->regs, srq->srqn, &hw, NULL) ? EINVAL : 0;
	drv_unlock(&srq->ctx->lock);
	return rc;
}

int xr_query_srq(struct xr_srq *srq, struct xr_srq_attr *attr)
{
	struct xr_srq_ctx hw;
	int rc;

	if (!srq || !attr)
		return EINVAL;
	drv_lock(&srq->ctx->lock);
	rc = xr_regio_srq_read(srq->ctx->regs, srq->srqn, &hw) ? EIO : 0;
	drv_unlock(&srq->ctx->lock);
	if (rc)
		return rc;
	attr->max_wr = 1u << srq->log;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = hw.limit;   /* 0 once the limit event fired */
	return 0;
}

int xr_destroy_srq(struct xr_srq *srq)
{
	struct xr_context *ctx;
	int rc;

	if (!srq)
		return EINVAL;
	ctx = srq->ctx;
	drv_lock(&ctx->lock);
	if (srq->nqps) {
		drv_unlock(&ctx->lock);
		return EBUSY;
	}
	rc = xr_regio_srq_destroy(ctx->regs, srq->srqn) ? EBUSY : 0;
	if (!rc)
		push_free(&ctx->free_srqn, &ctx->nfree_srqn, srq->srqn);
	drv_unlock(&ctx->lock);
	if (rc)
		return rc;
	pthread_mutex_destroy(&srq->lock);
	free(srq->ring);
	free(srq);
	return 0;
}

/* The engine's consumer index, read only when the ring looks full. */
static void refresh_ci(struct xr_srq *srq)
{
	struct xr_srq_ctx hw;

	drv_lock(&srq->ctx->lock);
	if (!xr_regio_srq_read(srq->ctx->regs, srq->srqn, &hw))
		srq->ci = hw.ci;
	drv_unlock(&srq->ctx->lock);
}

int xr_post_srq_recv(struct xr_srq *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	struct xr_recv_wr *first = wr;
	uint32_t size;
	int rc = 0, posted = 0;

	if (bad)
		*bad = NULL;
	if (!srq)
		return EINVAL;
	size = 1u << srq->log;
	drv_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		if ((uint16_t)(srq->pi - srq->ci) >= size)
			refresh_ci(srq);
		if ((uint16_t)(srq->pi - srq->ci) >= size) {
			rc = ENOMEM;
			break;
		}
		rc = xr_rwqe_fill(xr_rwqe_at(srq->ring, srq->pi, srq->log, srq->blocks_log), wr, srq->max_sge);
		if (rc)
			break;
		srq->pi++;
		posted++;
	}
	if (posted && !xr_ring_doorbell(srq->ctx->regs, XR_REG_SRQ_DB, srq->srqn << 16 | srq->pi)) {
		srq->pi = (uint16_t)(srq->pi - posted);
		rc = EIO;
		wr = first;
	}
	if (rc && bad)
		*bad = wr;
	drv_unlock(&srq->lock);
	return rc;
}
