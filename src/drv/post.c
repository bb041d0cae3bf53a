/* SPDX-License-Identifier: MIT */
/*
 * Posting: send WRs built into send-queue WQEs (including the binds of
 * memory windows) and receive WRs, each rung on the queue's doorbell.
 */
#include "drv.h"

/* post_send's flags: a bind of xr_bind_mw (type 1); every WR or none. */
enum { POST_INTERNAL = 1, POST_WHOLE = 2 };
static int post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad, unsigned flags);

/* ---- posting ---- */

/* A BIND_MW WQE: the engine checks the region and the window (C10-72..75). */
static int build_bind(struct xr_qp *qp, const struct xr_send_wr *w, struct xr_hw_wqe *q, bool internal)
{
	const struct xr_mw *mw = w->bind_mw.mw;
	const struct xr_mw_bind_info *b = &w->bind_mw.bind_info;

	/* Type-1 windows are bound through xr_bind_mw only; the new key keeps
	 * the window's index (only its key byte changes). */
	if (!mw || mw->context != qp->ctx || (mw->type == XR_MW_TYPE_1 && !internal) ||
	    (w->bind_mw.rkey >> 8) != (mw->rkey >> 8) || (b->mr && b->mr->context != qp->ctx) ||
	    (!b->mr && b->length))
		return EINVAL;
	memset(q, 0, sizeof(*q));
	q->wr_id = w->wr_id;
	q->opcode = XR_WR_BIND_MW;
	q->flags = (uint8_t)((w->send_flags & (XR_SEND_FENCE | XR_SEND_SIGNALED)) |
			     (qp->init.sq_sig_all ? XR_SEND_SIGNALED : 0));
	q->rkey = w->bind_mw.rkey;
	q->bind.addr = b->addr;
	q->bind.length = b->length;
	q->bind.mw_rkey = mw->rkey;
	q->bind.mr_lkey = b->mr ? b->mr->lkey : 0;
	q->bind.access = b->mw_access_flags;
	return 0;
}

/* The WR opcodes a QP type takes (B30, E7): UC no READ, atomics or
 * SEND_WITH_INV; UD SEND and SEND_WITH_IMM only. */
static bool opcode_ok(enum xr_qp_type type, enum xr_wr_opcode op)
{
	switch (op) {
	case XR_WR_SEND: case XR_WR_SEND_WITH_IMM:
		return true;
	case XR_WR_RDMA_WRITE: case XR_WR_RDMA_WRITE_WITH_IMM: case XR_WR_LOCAL_INV: case XR_WR_BIND_MW:
		return type != XR_QPT_UD;
	default:
		return type == XR_QPT_RC;
	}
}

static int build_wqe(struct xr_qp *qp, const struct xr_send_wr *w, struct xr_hw_wqe *q, bool internal)
{
	uint32_t len = 0, max_sge;

	if (!opcode_ok(qp->init.qp_type, w->opcode))
		return EINVAL;
	if (qp->init.qp_type == XR_QPT_UD && (!w->wr.ud.ah || w->wr.ud.ah->ctx != qp->ctx ||
					      w->wr.ud.remote_qpn > XR_QPN_MASK))
		return EINVAL;
	if (w->opcode == XR_WR_BIND_MW)
		return build_bind(qp, w, q, internal);
	/* An inline WR's buffers are copied now, never kept in the WQE: one
	 * is always taken, so ibv_wr_set_inline_data (one buffer naming the
	 * batch's bytes, wr_api.c) posts on a QP with max_send_sge 0 too. */
	max_sge = qp->init.cap.max_send_sge;
	if ((w->send_flags & XR_SEND_INLINE) && !max_sge)
		max_sge = 1;
	if (w->num_sge < 0 || (unsigned)w->num_sge > max_sge || (w->num_sge && !w->sg_list))
		return EINVAL;
	switch (w->opcode) {
	case XR_WR_RDMA_WRITE: case XR_WR_RDMA_WRITE_WITH_IMM: case XR_WR_SEND: case XR_WR_SEND_WITH_IMM:
	case XR_WR_SEND_WITH_INV: case XR_WR_RDMA_READ: case XR_WR_ATOMIC_CMP_AND_SWP:
	case XR_WR_ATOMIC_FETCH_AND_ADD: case XR_WR_LOCAL_INV:
		break;
	default:
		return EINVAL;
	}
	for (int i = 0; i < w->num_sge; i++) {
		if (len + w->sg_list[i].length < len)
			return EINVAL;
		len += w->sg_list[i].length;
	}
	if ((w->opcode == XR_WR_ATOMIC_CMP_AND_SWP || w->opcode == XR_WR_ATOMIC_FETCH_AND_ADD) &&
	    (len != 8 || w->num_sge != 1 || (w->send_flags & XR_SEND_INLINE) ||
	     (w->wr.atomic.remote_addr & 7)))
		return EINVAL;   /* A38: 8 bytes, 8-byte aligned (rxe validate_send_wr) */
	if ((w->send_flags & XR_SEND_INLINE) &&
	    (len > qp->init.cap.max_inline_data || w->opcode == XR_WR_RDMA_READ))
		return EINVAL;
	if (len > (1u << 31))
		return EINVAL;   /* the port's maximum message size */

	memset(q, 0, offsetof(struct xr_hw_wqe, sge));
	q->wr_id = w->wr_id;
	q->opcode = (uint8_t)w->opcode;
	q->flags = (uint8_t)(w->send_flags | (qp->init.sq_sig_all ? XR_SEND_SIGNALED : 0));
	q->length = len;
	q->imm_data = (w->opcode == XR_WR_SEND_WITH_INV || w->opcode == XR_WR_LOCAL_INV) ?
		      w->invalidate_rkey : w->imm_data;
	if (w->opcode == XR_WR_ATOMIC_CMP_AND_SWP || w->opcode == XR_WR_ATOMIC_FETCH_AND_ADD) {
		q->remote_addr = w->wr.atomic.remote_addr;
		q->rkey = w->wr.atomic.rkey;
		q->compare_add = w->wr.atomic.compare_add;
		q->swap = w->wr.atomic.swap;
	} else if (qp->init.qp_type == XR_QPT_UD) {
		/* The address travels in the WQE (docs/ud-uc-srq.md). */
		q->ud = w->wr.ud.ah->av;
		q->ud.remote_qpn = w->wr.ud.remote_qpn;
		q->ud.remote_qkey = w->wr.ud.remote_qkey;
	} else {
		q->remote_addr = w->wr.rdma.remote_addr;
		q->rkey = w->wr.rdma.rkey;
	}
	if (w->send_flags & XR_SEND_INLINE) {
		uint32_t off = 0;
		/* The data is copied now: the buffers are the caller's again on return. */
		for (int i = 0; i < w->num_sge; i++) {
			if (!w->sg_list[i].length)
				continue;   /* its address may be anything, NULL too */
			memcpy(xr_wqe_body(q) + off, (const void *)(uintptr_t)w->sg_list[i].addr, w->sg_list[i].length);
			off += w->sg_list[i].length;
		}
		q->num_sge = 0;
	} else {
		q->num_sge = (uint8_t)w->num_sge;
		if (w->num_sge)
			memcpy(xr_wqe_body(q), w->sg_list, (size_t)w->num_sge * sizeof(struct xr_sge));
	}
	return 0;
}

/* With the engine's thread running, the work leaves from the caller's
 * thread (a pass right after the doorbell) instead of waking the thread:
 * on a small machine the wakeup costs more than the pass. A caller posting
 * while earlier WRs are outstanding streams and holds the engine (a
 * lease); WRs not yet polled count, signaled or not. */
static int post_send_api(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad, unsigned flags)
{
	struct xr_engine *e = qp->ctx->progress == XR_PROGRESS_THREAD ? qp->ctx->engine : NULL;
	int rc;

	if (!e)
		return post_send(qp, wr, bad, flags);
	/* The QP is read after post_send let go of its lock: a handler its
	 * doorbell raised, which may destroy the QP, waits for the end. */
	xr_engine_irq_hold();
	xr_linger_posted(qp);
	xr_engine_post_begin(e);
	rc = post_send(qp, wr, bad, flags);
	if ((uint16_t)(qp->sq_pi - __atomic_load_n(&qp->sq_ci, __ATOMIC_ACQUIRE)) > 1)
		xr_engine_post_stream(e);
	xr_engine_post_end(e);
	xr_engine_irq_release();
	return rc;
}

int xr_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad)
{
	return post_send_api(qp, wr, bad, 0);
}

int xr_post_send_whole(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad)
{
	return post_send_api(qp, wr, bad, POST_WHOLE);
}

/* The posted WRs from first were refused: each type-2 bind's window gets
 * back the key its WQE found, newest first (a list may bind one window
 * twice). Quadratic, on this error path only. */
static void unbind_keys(struct xr_qp *qp, struct xr_send_wr *first, int posted)
{
	for (int i = posted - 1; i >= 0; i--) {
		const struct xr_hw_wqe *q = xr_sq_wqe(qp, (uint16_t)(qp->sq_pi - posted + i));
		struct xr_send_wr *w = first;

		for (int k = 0; k < i; k++)
			w = w->next;
		if (w->opcode == XR_WR_BIND_MW)
			w->bind_mw.mw->rkey = q->bind.mw_rkey;
	}
}

static int post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad, unsigned flags)
{
	bool internal = flags & POST_INTERNAL;
	uint32_t size = 1u << qp->sq_log;
	struct xr_send_wr *first = wr;
	int rc = 0, posted = 0;
	bool binds = false;
	uint8_t st;

	if (bad)
		*bad = NULL;
	drv_lock(&qp->sq_lock);
	/* Under the queue's lock, as a RESET changes the state and zeroes
	 * the ring (xr_modify_qp): a post that raced it is refused, not left
	 * in the new ring for the QP's next life. */
	st = __atomic_load_n(&qp->post_state, __ATOMIC_ACQUIRE);
	if (st != XR_QPS_RTS && st != XR_QPS_SQD && st != XR_QPS_ERR) {
		drv_unlock(&qp->sq_lock);
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	for (; wr; wr = wr->next) {
		uint16_t ci = __atomic_load_n(&qp->sq_ci, __ATOMIC_ACQUIRE);
		if ((uint16_t)(qp->sq_pi - ci) >= size) {
			rc = ENOMEM;
			break;
		}
		rc = build_wqe(qp, wr, xr_sq_wqe(qp, qp->sq_pi), internal);
		if (rc)
			break;
		/* A type-2 bind: the window's key is the new one from now on,
		 * so it can be invalidated and bound again, by the next WR of
		 * this list too (undone by the caller on an error completion,
		 * as for type 1). Before the doorbell: its completion may be
		 * polled at once. */
		if (wr->opcode == XR_WR_BIND_MW && !internal) {
			wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
			binds = true;
		}
		__atomic_store_n(&qp->sq_pi, (uint16_t)(qp->sq_pi + 1), __ATOMIC_RELAXED);   /* read by pollers (cq.c) */
		posted++;
	}
	/* Not rung, the WQEs are not the engine's: taken back, none posted. */
	if (rc && (flags & POST_WHOLE) && posted) {
		if (binds)
			unbind_keys(qp, first, posted);
		__atomic_store_n(&qp->sq_pi, (uint16_t)(qp->sq_pi - posted), __ATOMIC_RELAXED);
		posted = 0;
	}
	if (posted && !xr_ring_doorbell(qp->ctx->regs, XR_REG_DB_SQ + 8 * qp->qpn, qp->sq_pi)) {
		if (binds)
			unbind_keys(qp, first, posted);
		__atomic_store_n(&qp->sq_pi, (uint16_t)(qp->sq_pi - posted), __ATOMIC_RELAXED);
		rc = EIO;
		wr = first;
	}
	if (rc && bad)
		*bad = wr;
	drv_unlock(&qp->sq_lock);
	return rc;
}

int xr_post_recv(struct xr_qp *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	uint32_t size = 1u << qp->rq_log;
	struct xr_recv_wr *first = wr;
	int rc = 0, posted = 0;

	if (bad)
		*bad = NULL;
	drv_lock(&qp->rq_lock);
	/* F3: a QP on an SRQ has no receive queue of its own. The state
	 * under the lock, as in post_send. */
	if (__atomic_load_n(&qp->post_state, __ATOMIC_ACQUIRE) == XR_QPS_RESET || qp->init.srq) {
		drv_unlock(&qp->rq_lock);
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	for (; wr; wr = wr->next) {
		uint16_t ci = __atomic_load_n(&qp->rq_ci, __ATOMIC_ACQUIRE);
		if ((uint16_t)(qp->rq_pi - ci) >= size) {
			rc = ENOMEM;
			break;
		}
		rc = xr_rwqe_fill(xr_rwqe_at(qp->rq, qp->rq_pi, qp->rq_log, qp->rq_blocks_log), wr,
				  qp->init.cap.max_recv_sge);
		if (rc)
			break;
		qp->rq_pi++;
		posted++;
	}
	if (posted && !xr_ring_doorbell(qp->ctx->regs, XR_REG_DB_RQ + 8 * qp->qpn, qp->rq_pi)) {
		qp->rq_pi = (uint16_t)(qp->rq_pi - posted);
		rc = EIO;
		wr = first;
	}
	if (rc && bad)
		*bad = wr;
	drv_unlock(&qp->rq_lock);
	return rc;
}

int xr_rwqe_fill(struct xr_hw_rwqe *q, const struct xr_recv_wr *wr, unsigned max_sge)
{
	uint32_t len = 0;

	if (wr->num_sge < 0 || (unsigned)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++) {
		if (len + wr->sg_list[i].length < len || len + wr->sg_list[i].length > (1u << 31))
			return EINVAL;   /* the total must fit 32 bits and 2^31 */
		len += wr->sg_list[i].length;
	}
	q->wr_id = wr->wr_id;
	q->num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(xr_rwqe_sges(q), wr->sg_list, (size_t)wr->num_sge * sizeof(struct xr_sge));
	q->length = len;
	return 0;
}

/* ---- memory windows: type-1 binds ---- */

int xr_bind_mw(struct xr_qp *qp, struct xr_mw *mw, struct xr_mw_bind *bind)
{
	struct xr_send_wr w;
	const struct xr_mw_bind_info *b;
	int rc;

	if (!qp || !mw || !bind || mw->type != XR_MW_TYPE_1)
		return EINVAL;
	b = &bind->bind_info;
	/* As the rxe provider: no region means no range; no zero-based windows. */
	if ((!b->mr && (b->addr || b->length)) || (b->mw_access_flags & XR_ACCESS_ZERO_BASED))
		return EINVAL;
	memset(&w, 0, sizeof(w));
	w.wr_id = bind->wr_id;
	w.opcode = XR_WR_BIND_MW;
	w.send_flags = bind->send_flags;
	w.bind_mw.mw = mw;
	w.bind_mw.rkey = xr_inc_rkey(mw->rkey);
	w.bind_mw.bind_info = *b;
	rc = post_send(qp, &w, NULL, POST_INTERNAL);
	if (!rc)
		mw->rkey = w.bind_mw.rkey;   /* undone by the caller on an error completion */
	return rc;
}
