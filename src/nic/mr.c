/* SPDX-License-Identifier: MIT */
/*
 * The MR table behind the MR window. A key is (index << 8) | variant; the
 * variant changes on every registration, so a key from an earlier
 * registration of the same index no longer matches. Lookup is O(1).
 * Regions are translated through a page table in host memory (the MTT).
 *
 * Memory windows (MWs) are entries of the same table and share the key
 * space, as rxe's do: allocated unbound by a COMMIT with MR_KIND.mw set,
 * bound by a BIND_MW work request (xr_mw_bind, run by the requester in
 * order), which gives the window a new key byte, its own va/len/access and
 * its region (the parent, through whose MTT it is translated); a type-2
 * window is also tied to the QP that bound it. Only bound type-2 windows
 * can be invalidated, by LOCAL_INV or a peer's SEND_WITH_INV; regions
 * registered by the host never can (rxe_invalidate_mr: fast-register MRs
 * only, and there is no fast-register here).
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "engine.h"

#define MIN_PAGE_SHIFT 12
#define MAX_PAGE_SHIFT 30

static void shadow_load(struct xr_engine *e, const struct xr_mr_ctx *c)
{
	uint32_t off[XR_MR_SHADOW_WORDS], val[XR_MR_SHADOW_WORDS];
	int n = xr_mr_ctx_encode(c, off, val);

	for (int i = 0; i < n; i++)
		xr_reg_set(e, off[i], val[i]);
	xr_reg_set(e, XR_REG_MR_ACCESS, xr_reg_get(e, XR_REG_MR_ACCESS) | (c->valid ? XR_MR_VALID : 0));
	xr_reg_set(e, XR_REG_MR_LKEY, c->lkey);
	xr_reg_set(e, XR_REG_MR_RKEY, c->rkey);
	/* The engine-owned window state (read-only registers). */
	xr_reg_set(e, XR_REG_MR_MW_BIND, (c->parent & 0xFFFFFF) | (c->bound ? XR_MR_MW_BOUND : 0));
	xr_reg_set(e, XR_REG_MR_MW_QPN, c->mw_qpn & 0xFFFFFF);
	xr_reg_set(e, XR_REG_MR_MW_COUNT, __atomic_load_n(&c->mw_count, __ATOMIC_RELAXED));
}

/* Pages of 2^shift bytes that cover [va, va + len). */
static uint64_t pages_spanned(uint64_t va, uint64_t len, unsigned shift)
{
	uint64_t first = va >> shift, last = (va + len - 1) >> shift;
	return len ? last - first + 1 : 0;
}

static enum xr_cmd_status validate(const struct xr_mr_ctx *c)
{
	if (c->mw)
		return c->mw_type == 1 || c->mw_type == 2 ? XR_CMD_ST_OK : XR_CMD_ST_BAD_TYPE;
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

/* A random key variant, never the previous one (0 is never used): keys
 * cannot be walked. Stale keys are kept from meeting a new region by the
 * driver, which reuses a freed index only after many others (drv/mr.c). */
static uint8_t next_variant(uint8_t prev)
{
	uint8_t v = 0;

	while (v == 0 || v == prev)
		if (getrandom(&v, 1, 0) != 1)
			v = (uint8_t)(prev * 167u + 13u);   /* no entropy: still changes */
	return v;
}

/* Unbinds a window: it grants nothing until bound again. */
static void mw_unbind(struct xr_engine *e, struct xr_mr *w)
{
	uint32_t parent = w->ctx.bound ? w->ctx.parent : 0;

	w->ctx.bound = false;
	w->ctx.va = w->ctx.len = 0;
	w->ctx.access = 0;
	w->ctx.parent = 0;
	w->ctx.mw_qpn = 0;
	if (parent)
		__atomic_fetch_sub(&e->mrs[parent].ctx.mw_count, 1, __ATOMIC_RELAXED);
}

int xr_mr_invalidate_key(struct xr_engine *e, uint32_t key, uint32_t pd, bool remote, uint32_t qpn)
{
	struct xr_mr *w = xr_mr_lookup(e, key);

	/* Unknown key, or a stale key byte: nothing to invalidate. */
	if (!w)
		return -EINVAL;
	/* A region the host registered is not a fast-register MR: neither a
	 * peer nor LOCAL_INV may invalidate it (rxe_invalidate_mr). */
	if (!w->ctx.mw)
		return -EINVAL;
	/* Type-1 windows cannot be invalidated (o10-37.2.26); a type-2 window
	 * must be bound (rxe_check_invalidate_mw). */
	if (w->ctx.mw_type != 2 || !w->ctx.bound)
		return -EINVAL;
	/* Protection: only a QP of the window's PD, and for a peer's
	 * SEND_WITH_INV only the QP the type-2B window is associated with.
	 * rxe checks neither (transport-rules C9); a peer on another
	 * connection must not be able to revoke this one's window. */
	if (w->ctx.pd != pd || (remote && w->ctx.mw_qpn != qpn))
		return -EINVAL;
	mw_unbind(e, w);
	xr_evlog_add(e, XR_EV_MR_INVALIDATE, qpn, key, remote ? 2 : 1);
	return 0;
}

int xr_mw_bind(struct xr_engine *e, uint32_t pd, uint32_t qpn, const struct xr_hw_wqe *wqe)
{
	const uint32_t win_access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
				    XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
	uint32_t access = wqe->bind.access;
	uint64_t addr = wqe->bind.addr, len = wqe->bind.length;
	struct xr_mr *w = xr_mr_lookup(e, wqe->bind.mw_rkey), *mr = NULL;
	uint32_t index, parent = 0;

	/* The window, named by its current key (rxe_bind_mw). */
	if (!w || !w->ctx.mw)
		return -EINVAL;
	/* Zero-based windows are not supported (o10-36.2.2 for type 1);
	 * nor are unknown access bits. */
	if (access & ~win_access)
		return -EINVAL;
	/* The QP, the window and the region share one PD (C10-72). */
	if (w->ctx.pd != pd)
		return -EINVAL;
	if (w->ctx.mw_type == 2) {
		/* A type-2 window is bound only while free (o10-37.2.30), and
		 * never with no region or length 0 (o10-37.2.40). */
		if (w->ctx.bound || !len)
			return -EINVAL;
	}
	if (len) {
		mr = xr_mr_lookup(e, wqe->bind.mr_lkey);
		if (!mr || mr->ctx.mw || mr->ctx.lkey != wqe->bind.mr_lkey || mr->ctx.pd != pd)
			return -EINVAL;
		/* C10-73: the region allows windows. */
		if (!(mr->ctx.access & XR_ACCESS_MW_BIND))
			return -EINVAL;
		/* C10-74: a writable window needs a locally writable region. */
		if ((access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->ctx.access & XR_ACCESS_LOCAL_WRITE))
			return -EINVAL;
		/* C10-75: the window lies inside the region. */
		if (addr < mr->ctx.va || len > mr->ctx.len || addr - mr->ctx.va > mr->ctx.len - len)
			return -EINVAL;
		parent = (uint32_t)(mr - e->mrs);
	}
	/* Bind: the key byte comes from the WR (ibv_inc_rkey's), the index
	 * stays; the old key stops resolving at once (rxe_do_bind_mw). */
	index = (uint32_t)(w - e->mrs);
	mw_unbind(e, w);
	e->mr_variant[index] = (uint8_t)wqe->rkey;
	w->ctx.lkey = w->ctx.rkey = index << 8 | (wqe->rkey & 0xFF);
	if (parent) {
		__atomic_fetch_add(&mr->ctx.mw_count, 1, __ATOMIC_RELAXED);
		w->ctx.va = addr;
		w->ctx.len = len;
		w->ctx.access = (uint8_t)access;
		w->ctx.parent = parent;
		w->ctx.mw_qpn = w->ctx.mw_type == 2 ? qpn : 0;
		w->ctx.bound = true;
	}
	xr_evlog_add(e, XR_EV_MW_BIND, qpn, w->ctx.rkey, parent);
	return 0;
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
	bool was_registered;

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
		xr_mr_ctx_decode(&c, xr_reg_shadow_get, e);
		st = validate(&c);
		if (st != XR_CMD_ST_OK)
			return st;
		/* A region with windows bound is not rewritten under them. */
		if (mr->in_use && !mr->ctx.mw && __atomic_load_n(&mr->ctx.mw_count, __ATOMIC_ACQUIRE))
			return XR_CMD_ST_BUSY;
		/* Engine-owned state starts afresh; a window starts unbound. */
		c.bound = false;
		c.parent = c.mw_qpn = c.mw_count = 0;
		if (c.mw) {
			c.va = c.len = c.mtt = 0;
			c.access = 0;
			c.mtt_count = 0;
		}
		/* A new variant on every registration: stale keys stop matching. */
		e->mr_variant[index] = next_variant(e->mr_variant[index]);
		c.lkey = c.rkey = index << 8 | e->mr_variant[index];
		c.valid = true;
		was_registered = mr->in_use || mr->ctx.valid;
		__atomic_store_n(&mr->in_use, false, __ATOMIC_RELEASE);
		/* A packet that passed the old key's check may still be copying
		 * through the old context: let it finish before rewriting it.
		 * The old region's memory may go after: no gather frame reads it. */
		if (was_registered)
			xr_dp_quiesce_settle(e);
		else
			xr_dp_quiesce(e);
		if (mr->ctx.mw)
			mw_unbind(e, mr);
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
		if (!mr->in_use) {
			/* Already invalidated by the data path: still wait for it. */
			xr_dp_quiesce_settle(e);
			return XR_CMD_ST_NO_ENTRY;
		}
		/* A region stays while windows are bound to it (IBA
		 * 10.6.7.2.6; rxe_dereg_mr): deallocate them first. */
		if (!mr->ctx.mw && __atomic_load_n(&mr->ctx.mw_count, __ATOMIC_ACQUIRE))
			return XR_CMD_ST_BUSY;
		__atomic_store_n(&mr->in_use, false, __ATOMIC_RELEASE);
		/* The command completes only when no packet can still be
		 * copying into the region: after it the host may free it. */
		xr_dp_quiesce_settle(e);
		if (!mr->ctx.mw && __atomic_load_n(&mr->ctx.mw_count, __ATOMIC_ACQUIRE)) {
			/* A bind that was already running took it: keep it. */
			__atomic_store_n(&mr->in_use, true, __ATOMIC_RELEASE);
			return XR_CMD_ST_BUSY;
		}
		mr->ctx.valid = false;
		if (mr->ctx.mw)
			mw_unbind(e, mr);   /* deallocation unbinds (rxe_mw_cleanup) */
		xr_evlog_add(e, XR_EV_MR_INVALIDATE, 0, mr->ctx.rkey, 0);
		return XR_CMD_ST_OK;
	}
}
