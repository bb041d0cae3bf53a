/* SPDX-License-Identifier: MIT */
/*
 * Completions: CQEs written into host CQ rings (phase byte last), the
 * completion interrupt for armed CQs, and flushing a QP in ERR.
 */
#include <string.h>

#include "engine.h"

/* The CQ overran: the CQE is lost. Never silently: the CQ error event
 * goes to the event log (the driver reports it as IBV_EVENT_CQ_ERR) and
 * the QP whose completion was lost goes to ERR (as rxe). */
static void cq_overrun(struct xr_engine *e, struct xr_qp *qp, uint32_t cqn)
{
	xr_count(e, XR_CNT_CQ_OVERFLOW, 1);
	xr_evlog_add(e, XR_EV_CQ_ERROR, qp->qpn, cqn, 0);
	xr_qp_to_error(e, qp, XR_WC_GENERAL_ERR);
}

bool xr_complete(struct xr_engine *e, struct xr_qp *qp, uint32_t cqn, const struct xr_wc_info *wc,
		 bool solicited)
{
	struct xr_cq *cq = cqn < XR_MAX_CQ ? &e->cqs[cqn] : NULL;
	struct xr_hw_cqe *cqe;
	uint32_t size, pi;
	bool fire = false;

	if (!cq || !cq->in_use) {
		cq_overrun(e, qp, cqn);
		return false;
	}
	/* A send that did not succeed hands its buffers back before its
	 * packets were all read: no gather frame may read them after this. A
	 * successful one was acknowledged, and its peer read every packet
	 * before it acknowledged (frames arrive in order; a gather frame is
	 * never a retransmission: req.c). */
	if (wc->status != XR_WC_SUCCESS && !(wc->opcode & XR_WC_RECV))
		xr_dp_settle(e);
	pthread_mutex_lock(&cq->lock);
	size = 1u << cq->ctx.log_size;
	pi = cq->ctx.pi;
	if (pi - cq->ci >= size) {
		/* Full: the host did not consume in time. */
		bool first = !cq->ctx.overflow;
		cq->ctx.overflow = true;
		pthread_mutex_unlock(&cq->lock);
		if (first || qp->ctx.state != XR_QPS_ERR)
			cq_overrun(e, qp, cqn);
		else
			xr_count(e, XR_CNT_CQ_OVERFLOW, 1);
		return false;
	}
	cqe = (struct xr_hw_cqe *)(uintptr_t)(cq->ctx.base + (uint64_t)(pi & (size - 1)) * XR_CQE_SIZE);
	cqe->wr_id = wc->wr_id;
	cqe->qp_num = qp->qpn;
	cqe->byte_len = wc->byte_len;
	cqe->imm_data = wc->imm;
	cqe->src_qp = wc->src_qp;
	cqe->vendor_err = 0;
	cqe->wc_flags = wc->flags;
	cqe->status = wc->status;
	cqe->opcode = wc->opcode;
	cqe->wqe_index = wc->wqe_index;
	/* The pass bit: 1 on even passes over the ring, 0 on odd ones. */
	__atomic_store_n(&cqe->phase, (uint8_t)(((pi >> cq->ctx.log_size) & 1) ^ 1), __ATOMIC_RELEASE);
	cq->ctx.pi = pi + 1;
	if (cq->ctx.armed && (!cq->ctx.solicited_only || solicited || wc->status != XR_WC_SUCCESS)) {
		cq->ctx.armed = false;
		fire = true;
	}
	pthread_mutex_unlock(&cq->lock);
	xr_count(e, XR_CNT_CQES, 1);
	if (wc->status != XR_WC_SUCCESS)
		xr_evlog_add(e, XR_EV_WQE_COMPLETED, qp->qpn, wc->status, (uint32_t)wc->wr_id);
	if (fire)
		xr_irq_cq(e, cqn);
	return true;
}

bool xr_complete_recv(struct xr_engine *e, struct xr_qp *qp, const struct xr_wc_info *wc, bool solicited)
{
	if (!qp->ctx.srqn) {
		__atomic_store_n(&qp->rq_ci, (uint16_t)(qp->rq_ci + 1), __ATOMIC_RELAXED);
		qp->ctx.rq_ci = qp->rq_ci;
	}
	return xr_complete(e, qp, qp->ctx.rq_cqn, wc, solicited);
}

void xr_qp_to_error(struct xr_engine *e, struct xr_qp *qp, uint8_t status)
{
	if (qp->ctx.state == XR_QPS_ERR)
		return;
	xr_evlog_add(e, XR_EV_QP_ERROR, qp->qpn, status, qp->req.una_psn);
	xr_evlog_add(e, XR_EV_QP_STATE, qp->qpn, qp->ctx.state, XR_QPS_ERR);
	/* Atomic: the receive doorbell reads the state without the lock. */
	__atomic_store_n(&qp->ctx.state, (uint8_t)XR_QPS_ERR, __ATOMIC_RELAXED);
	xr_qp_mark_busy(e, qp);
}

void xr_qp_to_sq_error(struct xr_engine *e, struct xr_qp *qp, uint8_t status)
{
	/* RC fails whole; UD and UC lose only their send queue (IBTA
	 * 10.3.1: the Send Queue Error state; the receive queue works on,
	 * SQE -> RTS resumes). rxe uses ERR for all (G4). */
	if (qp->ctx.type == XR_QPT_RC || (qp->ctx.state != XR_QPS_RTS && qp->ctx.state != XR_QPS_SQD)) {
		xr_qp_to_error(e, qp, status);
		return;
	}
	xr_evlog_add(e, XR_EV_QP_ERROR, qp->qpn, status, qp->req.una_psn);
	xr_evlog_add(e, XR_EV_QP_STATE, qp->qpn, qp->ctx.state, XR_QPS_SQE);
	__atomic_store_n(&qp->ctx.state, (uint8_t)XR_QPS_SQE, __ATOMIC_RELAXED);
	xr_qp_mark_busy(e, qp);
}

static const struct xr_hw_wqe *sq_slot(const struct xr_qp *qp, uint16_t idx)
{
	return (const struct xr_hw_wqe *)xr_ring_slot((uintptr_t)qp->ctx.sq_base, idx, qp->ctx.sq_log_size,
						      qp->ctx.sq_wqe_blocks);
}

static const struct xr_hw_rwqe *rq_slot(const struct xr_qp *qp, uint16_t idx)
{
	return (const struct xr_hw_rwqe *)xr_ring_slot((uintptr_t)qp->ctx.rq_base, idx, qp->ctx.rq_log_size,
						       qp->ctx.rq_wqe_blocks);
}

static uint8_t wc_opcode_of(uint8_t wr)
{
	switch (wr) {
	case XR_WR_RDMA_WRITE: case XR_WR_RDMA_WRITE_WITH_IMM: return XR_WC_RDMA_WRITE;
	case XR_WR_RDMA_READ: return XR_WC_RDMA_READ;
	case XR_WR_ATOMIC_CMP_AND_SWP: return XR_WC_COMP_SWAP;
	case XR_WR_ATOMIC_FETCH_AND_ADD: return XR_WC_FETCH_ADD;
	case XR_WR_LOCAL_INV: return XR_WC_LOCAL_INV;
	case XR_WR_BIND_MW: return XR_WC_BIND_MW;
	default: return XR_WC_SEND;
	}
}

uint8_t xr_wc_opcode_of_wr(uint8_t wr)
{
	return wc_opcode_of(wr);
}

/* The SGEs a send WQE slot of the QP holds. */
unsigned xr_sq_sge_room(const struct xr_qp *qp)
{
	return XR_WQE_BODY(qp->ctx.sq_wqe_blocks) / sizeof(struct xr_sge);
}

/* The SGEs of a WQE read where it lies, in host memory that the host may
 * have written since the WQE was checked: never more than its slot holds. */
unsigned xr_sq_nsge(const struct xr_qp *qp, const struct xr_hw_wqe *w)
{
	unsigned room = xr_sq_sge_room(qp);
	return w->num_sge < room ? w->num_sge : room;
}

/* Copies the WQE in slot w to the engine's own, the header and as much
 * of the body as the header says is used (bounded by the slot: the
 * checks then refuse what does not fit), so a host writing the slot after
 * the checks cannot change what they passed (a WQE copied again to be
 * resent is held to the one started: req.c, reread_ok). */
void xr_sq_copy(const struct xr_qp *qp, struct xr_hw_wqe *to, const struct xr_hw_wqe *w)
{
	enum { FIRST = 64 };   /* four SGEs, 64 inline bytes or a bind: most WQEs whole */
	uint32_t body = XR_WQE_BODY(qp->ctx.sq_wqe_blocks), used;

	/* One copy of fixed size, which the compiler inlines, then the rest. */
	memcpy(to, w, XR_WQE_HDR_SIZE + FIRST);
	used = to->flags & XR_SEND_INLINE ? to->length : to->num_sge * (uint32_t)sizeof(struct xr_sge);
	if (used > body)
		used = body;
	if (used > FIRST)
		memcpy(xr_wqe_body(to) + FIRST, xr_wqe_inline(w) + FIRST, used - FIRST);
}

void xr_rwqe_copy(struct xr_hw_rwqe *to, const struct xr_hw_rwqe *w, unsigned blocks)
{
	unsigned room = XR_RWQE_BODY(blocks) / sizeof(struct xr_sge);

	/* The header and the first 15 SGEs in one copy of fixed size. */
	memcpy(to, w, XR_RWQE_SIZE);
	if (to->num_sge > room)
		to->num_sge = room;
	if (to->num_sge > XR_RWQE_BLOCK_SGE)
		memcpy(xr_rwqe_sges(to) + XR_RWQE_BLOCK_SGE, xr_rwqe_sges_const(w) + XR_RWQE_BLOCK_SGE,
		       (to->num_sge - XR_RWQE_BLOCK_SGE) * sizeof(struct xr_sge));
}

const struct xr_hw_wqe *xr_sq_slot(const struct xr_qp *qp, uint16_t idx)
{
	return sq_slot(qp, idx);
}

const struct xr_hw_rwqe *xr_rq_slot(const struct xr_qp *qp, uint16_t idx)
{
	return rq_slot(qp, idx);
}

/* The send queue's WQEs not completed: the one that failed with its own
 * status, the rest WR_FLUSH_ERR; the requester starts over at sq_pi. */
void xr_qp_flush_sq(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_req *rq = &qp->req;
	/* Once: a doorbell may ring meanwhile (xr_doorbell takes no lock),
	 * and the WQEs it adds wait for the next flush. */
	uint16_t pi = xr_req_pi(e, qp);

	if (qp->ctx.sq_log_size && qp->ctx.sq_base) {
		for (uint16_t i = rq->tail; i != pi; i++) {
			const struct xr_hw_wqe *w = sq_slot(qp, i);
			const struct xr_swqe_meta *m = qp->act ? xr_sq_meta(qp, i) : NULL;
			struct xr_wc_info wc = { .wr_id = w->wr_id, .opcode = wc_opcode_of(w->opcode), .wqe_index = i };
			/* The WQE that failed keeps its own status; the rest are flushed. */
			wc.status = (m && m->started && m->status) ? m->status : XR_WC_WR_FLUSH_ERR;
			if (m)
				memset((void *)m, 0, sizeof(*m));
			xr_complete(e, qp, qp->ctx.sq_cqn, &wc, false);
		}
	}
	rq->tail = rq->head = rq->started_end = pi;
	rq->cur_active = false;
	rq->retx_pending = false;
	rq->rd_atomic_out = rq->rd_atomic_started = 0;
	rq->timer_due_ns = rq->rnr_due_ns = 0;
	qp->ctx.sq_ci = rq->tail;
}

void xr_qp_flush(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;

	xr_qp_flush_sq(e, qp);
	if (rs->have_rwqe) {
		/* A WQE the QP holds mid-message (its own, or taken from the SRQ:
		 * the buffer goes back to the application either way). */
		struct xr_wc_info wc = { .wr_id = qp->act->rwqe.wr_id, .status = XR_WC_WR_FLUSH_ERR, .opcode = XR_WC_RECV,
					 .wqe_index = rs->rwqe_index };
		rs->have_rwqe = false;
		xr_complete_recv(e, qp, &wc, false);
	}
	if (qp->ctx.srqn) {
		/* F4: the SRQ is not flushed (other QPs use it); the QP says it
		 * will take no more (IBV_EVENT_QP_LAST_WQE_REACHED). */
		if (!rs->last_wqe_logged) {
			rs->last_wqe_logged = true;
			xr_evlog_add(e, XR_EV_QP_LAST_WQE, qp->qpn, qp->ctx.srqn, 0);
		}
	} else if (qp->ctx.rq_log_size && qp->ctx.rq_base) {
		/* The twin of the receive doorbell's fence (xr_doorbell): the
		 * state went to ERR before this reads the index, so either
		 * this sees a receive posted meanwhile or its doorbell saw
		 * ERR and queues the QP to be flushed again. */
		atomic_thread_fence(memory_order_seq_cst);
		for (uint16_t pi = xr_qp_rq_pi(qp); qp->rq_head != pi;) {
			uint16_t i = xr_rq_take_index(qp);
			struct xr_wc_info wc = { .wr_id = rq_slot(qp, i)->wr_id, .status = XR_WC_WR_FLUSH_ERR,
						 .opcode = XR_WC_RECV, .wqe_index = i };
			xr_complete_recv(e, qp, &wc, false);
		}
	}
	xr_resp_flush(qp);
	rs->in_msg = XR_RESP_IDLE;
}
