/* SPDX-License-Identifier: MIT */
/*
 * Memory regions (registration with their page tables, deregistration)
 * and memory windows (allocation, deallocation; type-1 binds are posted,
 * see post.c).
 */
#include "drv.h"

/* ---- MR ---- */

/* A freed MR/MW index waits behind this many others before it is taken
 * again (fresh indices go first meanwhile): a peer still holding a key of
 * the region it held meets only a region registered much later, and then
 * only if the new key's random byte matches too (rxe's indices cycle the
 * same way). Bounds the table's touched slots to those live plus these. */
#define MR_QUARANTINE 1024

/* An index for a region or window, or 0 when the table is full. */
static uint32_t mr_index_take(struct xr_context *ctx)
{
	uint32_t waiting = ctx->nfree_mr - ctx->free_mr_head, h;

	if (!waiting || (waiting <= MR_QUARANTINE && ctx->next_mr < XR_MAX_MR))
		return ctx->next_mr < XR_MAX_MR ? ctx->next_mr++ : 0;
	h = ctx->free_mr[ctx->free_mr_head++];
	if (ctx->free_mr_head == ctx->nfree_mr) {
		ctx->free_mr_head = ctx->nfree_mr = 0;
	} else if (ctx->free_mr_head >= MR_QUARANTINE) {
		/* Compact: the queue never holds much more than the quarantine. */
		memmove(ctx->free_mr, ctx->free_mr + ctx->free_mr_head,
			(ctx->nfree_mr - ctx->free_mr_head) * sizeof(*ctx->free_mr));
		ctx->nfree_mr -= ctx->free_mr_head;
		ctx->free_mr_head = 0;
	}
	return h;
}

/* The engine's context for [addr, addr+length) with access on pd, and its
 * page table (*mtt, the caller's to free; NULL for an empty region).
 * 0 or an errno. */
static int mr_ctx_build(struct xr_pd *pd, void *addr, size_t length, int access, struct xr_mr_ctx *c,
			uint64_t **mtt)
{
	uintptr_t start = (uintptr_t)addr, first, last;
	size_t pages;

	if ((access & ~0x1F) || (length && !addr) || start + length < start)
		return EINVAL;
	if ((access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) && !(access & XR_ACCESS_LOCAL_WRITE))
		return EINVAL;   /* as ibv_reg_mr */
	/* The page table: this process's pages, one entry each. */
	first = start >> PAGE_SHIFT;
	last = length ? (start + length - 1) >> PAGE_SHIFT : first;
	pages = length ? last - first + 1 : 0;
	*mtt = NULL;
	if (pages) {
		*mtt = malloc(pages * sizeof(uint64_t));
		if (!*mtt)
			return ENOMEM;
		for (size_t i = 0; i < pages; i++)
			(*mtt)[i] = (uint64_t)((first + i) << PAGE_SHIFT);
	}
	memset(c, 0, sizeof(*c));
	c->va = start;
	c->len = length;
	c->access = (uint8_t)access;
	c->pd = pd->pdn;
	c->page_shift = PAGE_SHIFT;
	c->mtt = (uintptr_t)*mtt;
	c->mtt_count = (uint32_t)pages;
	return 0;
}

/* What the program sees of a region the engine took as c. */
static void mr_describe(struct xr_mr *mr, struct xr_pd *pd, void *addr, size_t length, int access,
			const struct xr_mr_ctx *c)
{
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->lkey = c->lkey;
	mr->rkey = c->rkey;
}

struct xr_mr *xr_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_mr *mr;
	struct xr_mr_ctx c;
	uint32_t st;
	int rc;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	rc = mr_ctx_build(pd, addr, length, access, &c, &mr->mtt);
	if (rc) {
		free(mr);
		errno = rc;
		return NULL;
	}

	drv_lock(&ctx->lock);
	mr->handle = mr_index_take(ctx);
	if (!mr->handle) {
		drv_unlock(&ctx->lock);
		free(mr->mtt);
		free(mr);
		errno = ENOSPC;
		return NULL;
	}
	rc = xr_regio_mr_commit(ctx->regs, mr->handle, &c, &st);
	if (rc)
		push_free(&ctx->free_mr, &ctx->nfree_mr, mr->handle);
	drv_unlock(&ctx->lock);
	if (rc) {
		free(mr->mtt);
		free(mr);
		errno = EINVAL;
		return NULL;
	}
	mr->context = ctx;
	mr_describe(mr, pd, addr, length, access, &c);
	return mr;
}

int xr_rereg_mr(struct xr_mr *mr, int flags, struct xr_pd *pd, void *addr, size_t length, int access)
{
	struct xr_context *ctx;
	struct xr_mr_ctx c;
	uint64_t *mtt;
	uint32_t st = 0;
	int rc;

	if (!mr || !flags || (flags & ~XR_REREG_ALL))
		return EINVAL;
	ctx = mr->context;
	if (!(flags & XR_REREG_PD))
		pd = mr->pd;
	if (!(flags & XR_REREG_TRANSLATION)) {
		addr = mr->addr;
		length = mr->length;
	}
	if (!(flags & XR_REREG_ACCESS))
		access = mr->access;
	if (!pd || pd->ctx != ctx)
		return EINVAL;
	rc = mr_ctx_build(pd, addr, length, access, &c, &mtt);
	if (rc)
		return rc;
	drv_lock(&ctx->lock);
	/* The same slot, committed again: the engine waits for packets still
	 * using the old context and gives the region a new key variant. */
	rc = xr_regio_mr_commit(ctx->regs, mr->handle, &c, &st);
	drv_unlock(&ctx->lock);
	if (rc) {
		free(mtt);
		return st == XR_CMD_ST_BUSY ? EBUSY : EINVAL;   /* windows bound: it stays as it was */
	}
	free(mr->mtt);
	mr->mtt = mtt;
	mr_describe(mr, pd, addr, length, access, &c);
	return 0;
}

int xr_dereg_mr(struct xr_mr *mr)
{
	struct xr_context *ctx;
	uint32_t st = 0;
	int rc;

	if (!mr)
		return EINVAL;
	ctx = mr->context;
	drv_lock(&ctx->lock);
	rc = xr_regio_mr_invalidate(ctx->regs, mr->handle);
	if (rc > 0 && !xr_regio_read(ctx->regs, XR_REG_QP_CMD_STATUS, &st) && st == XR_CMD_ST_BUSY) {
		/* Windows are bound to it: it stays registered (rxe_dereg_mr). */
		drv_unlock(&ctx->lock);
		return EBUSY;
	}
	push_free(&ctx->free_mr, &ctx->nfree_mr, mr->handle);
	drv_unlock(&ctx->lock);
	free(mr->mtt);
	free(mr);
	return 0;
}

/* ---- memory windows ---- */

struct xr_mw *xr_alloc_mw(struct xr_pd *pd, enum xr_mw_type type)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_mr_ctx c;
	struct xr_mw *mw;
	int rc;

	if (!ctx || (type != XR_MW_TYPE_1 && type != XR_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&c, 0, sizeof(c));
	c.mw = true;
	c.mw_type = (uint8_t)type;
	c.pd = pd->pdn;
	c.page_shift = PAGE_SHIFT;
	drv_lock(&ctx->lock);
	mw->handle = mr_index_take(ctx);
	if (!mw->handle) {
		drv_unlock(&ctx->lock);
		free(mw);
		errno = ENOSPC;
		return NULL;
	}
	rc = xr_regio_mr_commit(ctx->regs, mw->handle, &c, NULL);
	if (rc)
		push_free(&ctx->free_mr, &ctx->nfree_mr, mw->handle);
	drv_unlock(&ctx->lock);
	if (rc) {
		free(mw);
		errno = EINVAL;
		return NULL;
	}
	mw->context = ctx;
	mw->pd = pd;
	mw->type = type;
	mw->rkey = c.rkey;
	return mw;
}

int xr_dealloc_mw(struct xr_mw *mw)
{
	struct xr_context *ctx;

	if (!mw)
		return EINVAL;
	ctx = mw->context;
	drv_lock(&ctx->lock);
	/* The engine unbinds it (and the region's count of windows drops). */
	xr_regio_mr_invalidate(ctx->regs, mw->handle);
	push_free(&ctx->free_mr, &ctx->nfree_mr, mw->handle);
	drv_unlock(&ctx->lock);
	free(mw);
	return 0;
}
