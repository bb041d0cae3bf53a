/* SPDX-License-Identifier: MIT */
/*
 * The MR table behind the MR window. A key is (index << 8) | variant; the
 * variant changes on every registration, so a key from an earlier
 * registration of the same index no longer matches. Lookup is O(1).
 * Regions are translated through a page table in host memory (the MTT).
 */
#include <string.h>

#include "engine.h"

#define MIN_PAGE_SHIFT 12
#define MAX_PAGE_SHIFT 30

static uint32_t shadow_get(void *arg, uint32_t off)
{
	return xr_reg_get(arg, off);
}

static void shadow_load(struct xr_engine *e, const struct xr_mr_ctx *c)
{
	uint32_t off[XR_MR_SHADOW_WORDS], val[XR_MR_SHADOW_WORDS];
	int n = xr_mr_ctx_encode(c, off, val);

	for (int i = 0; i < n; i++)
		xr_reg_set(e, off[i], val[i]);
	xr_reg_set(e, XR_REG_MR_ACCESS, xr_reg_get(e, XR_REG_MR_ACCESS) | (c->valid ? XR_MR_VALID : 0));
	xr_reg_set(e, XR_REG_MR_LKEY, c->lkey);
	xr_reg_set(e, XR_REG_MR_RKEY, c->rkey);
}

/* Pages of 2^shift bytes that cover [va, va + len). */
static uint64_t pages_spanned(uint64_t va, uint64_t len, unsigned shift)
{
	uint64_t first = va >> shift, last = (va + len - 1) >> shift;
	return len ? last - first + 1 : 0;
}

static enum xr_cmd_status validate(const struct xr_mr_ctx *c)
{
	if (c->page_shift < MIN_PAGE_SHIFT || c->page_shift > MAX_PAGE_SHIFT)
		return XR_CMD_ST_BAD_RANGE;
	if (c->va + c->len < c->va)
		return XR_CMD_ST_BAD_RANGE;          /* wraps the address space */
	if (c->len && (!c->mtt || c->mtt_count != pages_spanned(c->va, c->len, c->page_shift)))
		return XR_CMD_ST_BAD_RANGE;
	if ((c->access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) &&
	    !(c->access & XR_ACCESS_LOCAL_WRITE))
		return XR_CMD_ST_BAD_ACCESS;
	return XR_CMD_ST_OK;
}

struct xr_mr *xr_mr_lookup(struct xr_engine *e, uint32_t key)
{
	uint32_t index = key >> 8;
	struct xr_mr *mr;

	if (index == 0 || index >= XR_MAX_MR)
		return NULL;
	mr = &e->mrs[index];
	if (!__atomic_load_n(&mr->in_use, __ATOMIC_ACQUIRE) || (mr->ctx.rkey & 0xFF) != (key & 0xFF))
		return NULL;
	return mr;
}

enum xr_cmd_status xr_mr_cmd(struct xr_engine *e, uint32_t cmd)
{
	uint32_t index = xr_reg_get(e, XR_REG_MR_SEL);
	struct xr_mr *mr;
	struct xr_mr_ctx c;
	enum xr_cmd_status st;

	if (cmd == XR_CMD_CLEAR) {
		memset(&c, 0, sizeof(c));
		c.page_shift = MIN_PAGE_SHIFT;
		shadow_load(e, &c);
		return XR_CMD_ST_OK;
	}
	if (cmd < XR_CMD_COMMIT || cmd > XR_CMD_DESTROY)
		return XR_CMD_ST_BAD_CMD;
	if (index == 0 || index >= XR_MAX_MR)
		return XR_CMD_ST_BAD_INDEX;
	mr = &e->mrs[index];

	switch (cmd) {
	case XR_CMD_COMMIT:
		xr_mr_ctx_decode(&c, shadow_get, e);
		st = validate(&c);
		if (st != XR_CMD_ST_OK)
			return st;
		/* A fresh variant on every registration; stale keys stop matching. */
		e->mr_variant[index]++;
		c.lkey = c.rkey = index << 8 | e->mr_variant[index];
		c.valid = true;
		__atomic_store_n(&mr->in_use, false, __ATOMIC_RELEASE);
		mr->ctx = c;
		__atomic_store_n(&mr->in_use, true, __ATOMIC_RELEASE);
		shadow_load(e, &c);
		xr_evlog_add(e, XR_EV_MR_REG, 0, c.rkey, c.access);
		return XR_CMD_ST_OK;
	case XR_CMD_READ:
		if (!mr->in_use)
			return XR_CMD_ST_NO_ENTRY;
		shadow_load(e, &mr->ctx);
		return XR_CMD_ST_OK;
	default: /* INVALIDATE */
		if (!mr->in_use)
			return XR_CMD_ST_NO_ENTRY;
		__atomic_store_n(&mr->in_use, false, __ATOMIC_RELEASE);
		mr->ctx.valid = false;
		xr_evlog_add(e, XR_EV_MR_INVALIDATE, 0, mr->ctx.rkey, 0);
		return XR_CMD_ST_OK;
	}
}
