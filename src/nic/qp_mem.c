/* SPDX-License-Identifier: MIT */
/*
 * What a QP holds beyond its table slot: the active block (the WQE copy,
 * the receive WQE being filled, the response queue, send metadata per SQ
 * slot), taken when work starts and given back, kept for reuse, when the
 * QP is idle again; and the READ/atomic resources, allocated at the first
 * READ or atomic it serves. An idle QP is its slot alone (docs/scale.md).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "qp_mem.h"
#include "resp.h"

/* ---- the active block: what only a QP with work in flight holds ---- */

uint32_t xr_qp_sq_slots(const struct xr_qp_ctx *c)
{
	return c->sq_log_size ? 1u << c->sq_log_size : 0;
}

size_t xr_qp_act_size(uint32_t slots)
{
	return sizeof(struct xr_qp_act) + (size_t)slots * sizeof(struct xr_swqe_meta);
}

/* Nothing in the block is in use: no WQE started and not completed, no
 * receive WQE held, nothing owed, no request held (the metadata is all
 * zero then: completing a WQE clears its slot). A READ/atomic at the head
 * that got its PSNs but waits for max_rd_atomic keeps them: not at rest. */
bool xr_qp_act_at_rest(const struct xr_qp *qp)
{
	const struct xr_req *r = &qp->req;
	const struct xr_resp *rs = &qp->resp;

	if (r->cur_active || r->tail != r->head || r->head != r->started_end ||
	    rs->have_rwqe || rs->q_len || rs->held_len)
		return false;
	return !qp->act->meta_slots || !xr_sq_meta(qp, r->head)->started;
}

struct xr_qp_act *xr_qp_act_alloc(struct xr_engine *e, uint32_t slots)
{
	struct xr_qp_act *a = malloc(xr_qp_act_size(slots));

	if (!a) {
		xr_count(e, XR_CNT_QP_MEM_FAIL, 1);
		return NULL;
	}
	/* The WQE copies and the queue are written before they are read. */
	a->held = NULL;
	a->gather_f = NULL;
	a->gather_seq = 0;
	a->proto.qp = NULL;   /* no template yet */
	a->meta_slots = slots;
	memset(a->meta, 0, slots * sizeof(a->meta[0]));
	atomic_fetch_add(&e->qp_mem.act, 1);
	atomic_fetch_add(&e->qp_mem.act_bytes, xr_qp_act_size(slots));
	return a;
}

void xr_qp_act_release(struct xr_engine *e, struct xr_qp_act *a)
{
	if (!a)
		return;
	if (a->held) {
		atomic_fetch_sub(&e->qp_mem.act_bytes, XR_RESP_HELD * sizeof(*a->held));
		free(a->held);
	}
	atomic_fetch_sub(&e->qp_mem.act_bytes, xr_qp_act_size(a->meta_slots));
	atomic_fetch_sub(&e->qp_mem.act, 1);
	free(a);
}

/* Blocks kept for reuse, at most this many bytes: a ping-pong takes one
 * and gives it back per message on each side, and a block given back at
 * rest has its metadata zero already (no malloc, no memset). The spare
 * lists belong to the data path (xr_qp_act_get and _put run in passes). */
#define ACT_SPARE_BYTES (1u << 20)

bool xr_qp_act_get(struct xr_engine *e, struct xr_qp *qp)
{
	uint8_t log = qp->ctx.sq_log_size & 15;
	struct xr_qp_act *a;

	if (qp->act)
		return true;
	a = e->qp_mem.spare[log];
	if (a && a->meta_slots == xr_qp_sq_slots(&qp->ctx)) {
		e->qp_mem.spare[log] = a->next_spare;
		atomic_fetch_sub(&e->qp_mem.spare_bytes, xr_qp_act_size(a->meta_slots));
		atomic_fetch_add(&e->qp_mem.act, 1);
		atomic_fetch_add(&e->qp_mem.act_bytes, xr_qp_act_size(a->meta_slots));
		a->gather_f = NULL;   /* another QP's frames are no concern of this one */
	} else {
		a = xr_qp_act_alloc(e, xr_qp_sq_slots(&qp->ctx));
	}
	qp->act = a;
	return a != NULL;
}

void xr_qp_act_put(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_qp_act *a = qp->act;
	uint8_t log = qp->ctx.sq_log_size & 15;

	if (!a || !xr_qp_act_at_rest(qp))
		return;
	qp->act = NULL;
	if (a->held || a->meta_slots != xr_qp_sq_slots(&qp->ctx) ||
	    atomic_load(&e->qp_mem.spare_bytes) + xr_qp_act_size(a->meta_slots) > ACT_SPARE_BYTES) {
		xr_qp_act_release(e, a);
		return;
	}
	atomic_fetch_sub(&e->qp_mem.act, 1);
	atomic_fetch_sub(&e->qp_mem.act_bytes, xr_qp_act_size(a->meta_slots));
	atomic_fetch_add(&e->qp_mem.spare_bytes, xr_qp_act_size(a->meta_slots));
	a->next_spare = e->qp_mem.spare[log];
	e->qp_mem.spare[log] = a;
}

/* ---- READ/atomic resources: allocated at the first READ or atomic ---- */

bool xr_qp_res_get(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;

	if (rs->res || !rs->nres)
		return true;
	rs->res = calloc(rs->nres, sizeof(*rs->res));
	if (!rs->res) {
		xr_count(e, XR_CNT_QP_MEM_FAIL, 1);
		return false;
	}
	rs->res_cap = rs->nres;
	atomic_fetch_add(&e->qp_mem.res_bytes, rs->res_cap * sizeof(*rs->res));
	return true;
}

void xr_qp_res_free(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;

	if (rs->res)
		atomic_fetch_sub(&e->qp_mem.res_bytes, rs->res_cap * sizeof(*rs->res));
	free(rs->res);
	rs->res = NULL;
	rs->res_cap = 0;
}
