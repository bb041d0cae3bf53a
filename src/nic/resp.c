/* SPDX-License-Identifier: MIT */
/*
 * The responder: requests arriving on a QP. A request at the expected PSN
 * goes through the checks in rxe's order (opcode sequence, QP access,
 * receive WQE or RNR NAK, R_Key and range, lengths) and is executed;
 * later PSNs draw one PSN-sequence NAK per gap; earlier ones are
 * duplicates: re-ACKed, or replayed from the saved READ/atomic resource.
 * No memory is touched before every check has passed.
 */
#include <string.h>

#include "resp.h"

/* The largest RETH DMA length (C9-94): longer requests are invalid. */
#define MAX_DMA_LEN (1ull << 31)

/* ---- the response queue ---- */

/* The last slot is kept for a fatal NAK: it always leaves. */
static struct xr_resp_item *q_push(struct xr_qp *qp, bool fatal)
{
	struct xr_resp *rs = &qp->resp;

	if (rs->q_len >= XR_RESP_QUEUE - (fatal ? 0 : 1))
		return NULL;
	return xr_resp_q_at(qp, rs->q_len++);
}

/* An ACK, NAK or RNR NAK for psn, behind every response owed before it.
 * A positive ACK replaces one still waiting at the tail (ACKs are
 * cumulative); NAKs are never merged or overwritten. */
static void queue_ack(struct xr_engine *e, struct xr_qp *qp, uint8_t syndrome, uint32_t psn, bool fatal)
{
	struct xr_resp *rs = &qp->resp;
	bool ack = (syndrome & XR_AETH_TYPE_MASK) == XR_AETH_ACK;
	struct xr_resp_item *it;

	if (rs->q_len) {
		it = xr_resp_q_at(qp, rs->q_len - 1u);
		/* A cumulative ACK replaces one waiting; a repeated RNR NAK for the
		 * same PSN is the same NAK. */
		if (it->kind == XR_ITEM_ACK &&
		    ((ack && (it->syndrome & XR_AETH_TYPE_MASK) == XR_AETH_ACK) ||
		     (it->syndrome == syndrome && it->psn == psn && !fatal))) {
			it->psn = psn;
			it->msn = qp->ctx.msn;
			return;
		}
	}
	it = q_push(qp, fatal);
	if (!it) {
		/* Requests are not executed without room (q_has_room), so only a
		 * duplicate's ACK or a sequence NAK can land here: the requester's
		 * timer recovers either. Never silent. */
		xr_count(e, XR_CNT_DROP_RESP_BUSY, 1);
		return;
	}
	it->kind = XR_ITEM_ACK;
	it->syndrome = syndrome;
	it->fatal = fatal;
	it->psn = psn;
	it->msn = qp->ctx.msn;
}

static bool queue_res(struct xr_qp *qp, struct xr_rd_res *res, bool replay)
{
	struct xr_resp_item *it = q_push(qp, false);

	if (!it)
		return false;
	it->kind = XR_ITEM_RES;
	it->res = (uint8_t)(res - qp->resp.res);
	it->fatal = false;
	res->queued = true;
	res->replay = replay;
	res->redo = false;
	return true;
}

/* A replay still queued for a slot a new request needs: the requester has
 * its answer already (it would not have sent the new request otherwise). */
static void cancel_replay(struct xr_qp *qp, struct xr_rd_res *res)
{
	struct xr_resp *rs = &qp->resp;
	uint8_t idx = (uint8_t)(res - rs->res);

	for (unsigned i = 0; i < rs->q_len; i++) {
		struct xr_resp_item *it = xr_resp_q_at(qp, i);
		if (it->kind == XR_ITEM_RES && it->res == idx)
			it->kind = XR_ITEM_CANCELLED;
	}
	res->queued = false;
}

/* The slot a new READ/atomic takes is busy with responses never sent:
 * more outstanding than max_dest_rd_atomic allows. */
static bool resources_exhausted(const struct xr_resp *rs)
{
	const struct xr_rd_res *res;

	if (!rs->nres)
		return true;
	res = &rs->res[rs->res_next & (rs->nres - 1)];
	return res->queued && !res->replay;
}

/* A fatal NAK: the receive WQE the message holds fails with wc_status
 * (the responder's own code), and the QP goes to ERR once it has left. */
static void nak(struct xr_engine *e, struct xr_qp *qp, uint8_t syndrome, uint32_t psn, uint8_t wc_status)
{
	queue_ack(e, qp, syndrome, psn, syndrome != XR_AETH_NAK_PSN_SEQ);
	if (syndrome == XR_AETH_NAK_PSN_SEQ)
		return;
	xr_resp_fail_rwqe(e, qp, wc_status);
	xr_qp_to_error(e, qp, wc_status);
}

void xr_resp_fail_rwqe(struct xr_engine *e, struct xr_qp *qp, uint8_t wc_status)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_wc_info wc = { .opcode = XR_WC_RECV, .wqe_index = rs->rwqe_index, .status = wc_status };

	if (!rs->have_rwqe)
		return;
	wc.wr_id = qp->act->rwqe.wr_id;
	rs->have_rwqe = false;
	xr_complete_recv(e, qp, &wc, false);
}

static void count_dma_error(struct xr_engine *e, enum xr_dma_err err)
{
	xr_count(e, err == XR_DMA_BOUNDS ? XR_CNT_BOUNDS_VIOLATION :
		    err == XR_DMA_PERM ? XR_CNT_PERM_VIOLATION : XR_CNT_RKEY_VIOLATION, 1);
}

bool xr_resp_take_rwqe(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;

	if (rs->have_rwqe)
		return true;
	if (qp->ctx.srqn) {
		/* F3: whichever attached QP needs one first takes the next */
		if (xr_srq_take(e, qp, 0, &qp->act->rwqe, &rs->rwqe_index) != XR_SRQ_TAKEN)
			return false;
	} else {
		if (qp->rq_head == xr_qp_rq_pi(qp))
			return false;
		xr_rwqe_copy(&qp->act->rwqe, xr_rq_slot(qp, qp->rq_head), qp->ctx.rq_wqe_blocks);
		rs->rwqe_index = xr_rq_take_index(qp);
	}
	rs->have_rwqe = true;
	rs->recv_offset = 0;
	return true;
}

bool xr_resp_complete_rwqe(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, uint8_t opcode,
			   uint32_t byte_len)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_wc_info wc = { .wr_id = qp->act->rwqe.wr_id, .status = XR_WC_SUCCESS, .opcode = opcode,
				 .byte_len = byte_len, .src_qp = qp->ctx.dest_qpn,
				 .wqe_index = rs->rwqe_index };

	if (p->op->flags & XR_OPF_IMM) {
		wc.flags |= XR_WC_WITH_IMM;
		wc.imm = p->imm;
	}
	if (p->op->flags & XR_OPF_INV) {
		wc.flags |= XR_WC_WITH_INV;
		wc.imm = p->ieth_rkey;
	}
	rs->have_rwqe = false;
	xr_count_pass(e, XR_CNT_RQ_WQES, 1);
	return xr_complete_recv(e, qp, &wc, p->se);
}

/* The next resource slot for a READ/atomic, or NULL when every slot still
 * owes responses: the requester exceeded max_dest_rd_atomic. A slot whose
 * responses have left is recycled (it stays for replay until then). */
static struct xr_rd_res *new_resource(struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_rd_res *res;

	if (resources_exhausted(rs))
		return NULL;
	res = &rs->res[rs->res_next & (rs->nres - 1)];
	if (res->queued)
		cancel_replay(qp, res);
	rs->res_next++;
	memset(res, 0, sizeof(*res));
	return res;
}

/* Duplicate READ/atomic: replay from the saved resource, never re-execute. */
static void duplicate_rd_atomic(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);

	/* None allocated yet: this QP never served a READ/atomic. */
	for (uint32_t i = 0; rs->res && i < rs->nres; i++) {
		struct xr_rd_res *res = &rs->res[i];
		if (p->op->flags & XR_OPF_ATOMIC) {
			if (res->kind != RES_ATOMIC || res->first_psn != p->psn)
				continue;
		} else {
			if (res->kind != RES_READ || psn_cmp(p->psn, res->first_psn) < 0 ||
			    psn_cmp(p->psn, res->last_psn) > 0 || p->reth.rkey != res->rkey)
				continue;
			/* The retried request must lie inside the original one. */
			if (p->reth.va < res->va || p->reth.len > res->len ||
			    p->reth.va - res->va > res->len - p->reth.len ||
			    p->reth.va - res->va != (uint64_t)((p->psn - res->first_psn) & XR_PSN_MASK) * mtu)
				continue;
		}
		/* Still answering. A duplicate for responses that left (lost
		 * on the way), or for more than the stream (a shorter replay)
		 * holds, is served once the stream's last is built, as rxe
		 * serves requests in order: dropping it left the requester to
		 * wait for its ACK timer. Only with nothing queued behind the
		 * stream, which goes on with it (the order rxe keeps); else
		 * dropped, as before. Two such make one replay, from the
		 * earlier PSN to the further end (both lie in the original at
		 * their offsets). One inside what is still to be built is
		 * answered by the stream. */
		if (res->queued) {
			bool sent = psn_cmp(p->psn, res->next_psn) < 0;
			bool beyond = p->reth.va + p->reth.len > res->stream_va + res->stream_len;
			if (res->kind == RES_READ && (sent || beyond) && rs->q_len == 1) {
				uint64_t end = p->reth.va + p->reth.len;
				if (res->redo && res->redo_va + res->redo_len > end)
					end = res->redo_va + res->redo_len;
				if (!res->redo || psn_cmp(p->psn, res->redo_psn) < 0) {
					res->redo_psn = p->psn;
					res->redo_va = p->reth.va;
				}
				res->redo_len = (uint32_t)(end - res->redo_va);
				res->redo = true;
			}
			return;
		}
		if (res->kind == RES_READ)
			xr_rd_stream_from(res, p->psn, p->reth.va, p->reth.len);
		if (!xr_resp_q_has_room(rs) || !queue_res(qp, res, true))
			xr_count(e, XR_CNT_DROP_RESP_BUSY, 1);
		return;
	}
	/* No matching resource: dropped silently, as rxe does. */
	xr_count(e, XR_CNT_DROP_DUP_NO_RES, 1);
}

/* The opcode may follow what came before it on this QP. */
static bool sequence_ok(const struct xr_resp *rs, uint32_t f)
{
	bool cont = f & (XR_OPF_MIDDLE | XR_OPF_LAST) && !(f & XR_OPF_FIRST);

	switch (rs->in_msg) {
	case XR_RESP_IN_SEND:
		return cont && (f & XR_OPF_SEND);
	case XR_RESP_IN_WRITE:
		return cont && (f & XR_OPF_WRITE);
	default:
		return !cont;
	}
}

static void rnr_nak(struct xr_engine *e, struct xr_qp *qp, uint32_t psn)
{
	/* ePSN stays; the "NAK sent" flag is not set: the RNR'd PSN comes back
	 * as a new request, and a later gap draws its own NAK (A18). */
	queue_ack(e, qp, (uint8_t)(XR_AETH_RNR_NAK | (qp->ctx.min_rnr_timer & XR_AETH_VALUE_MASK)), psn, false);
}

/* SEND_*_WITH_INVALIDATE: only keys that may be invalidated remotely. */
static bool remote_invalidate(struct xr_engine *e, struct xr_qp *qp, uint32_t key)
{
	return xr_mr_invalidate_key(e, key, qp->ctx.pd, true, qp->qpn) == 0;
}

static void rx_send(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags;
	int err;

	/* The message must fit the receive WQE: the responder's own length error. */
	if ((uint64_t)rs->recv_offset + p->payload_len > qp->act->rwqe.length) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_LOC_LEN_ERR);
		return;
	}
	if (p->payload_len && (err = xr_sgl_write(e, qp->ctx.pd, xr_rwqe_sges(&qp->act->rwqe), qp->act->rwqe.num_sge,
						  rs->recv_offset, p->payload, p->payload_len)) != 0) {
		/* An unusable receive WQE (key, rights): remote operational error. */
		nak(e, qp, XR_AETH_NAK_REM_OP, p->psn, (uint8_t)err);
		return;
	}
	rs->recv_offset += p->payload_len;
	rs->in_msg = (f & XR_OPF_LAST) ? XR_RESP_IDLE : XR_RESP_IN_SEND;
	if (!(f & XR_OPF_LAST))
		return;
	if ((f & XR_OPF_INV) && !remote_invalidate(e, qp, p->ieth_rkey)) {
		xr_count(e, XR_CNT_INV_REFUSED, 1);
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return;
	}
	qp->ctx.msn = psn_add(qp->ctx.msn, 1);
	xr_count_pass(e, XR_CNT_RDMA_RECVS, 1);
	xr_resp_complete_rwqe(e, qp, p, XR_WC_RECV, rs->recv_offset);
}

/* Where a WRITE packet's payload goes: decided on its headers and the QP,
 * acting on nothing. False: a key or range was refused (derr), or the
 * packet does not carry its share. */
struct write_target {
	uint64_t va;
	uint32_t rkey, left, total;   /* the message's, as of this packet */
	struct xr_mr *mr;
	enum xr_dma_err derr;
};

static bool write_target(struct xr_engine *e, const struct xr_qp *qp, const struct xr_pkt *p,
			 struct write_target *w)
{
	const struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags;

	w->mr = NULL;
	w->derr = XR_DMA_OK;
	if (f & XR_OPF_FIRST) {
		/* R_Key and range, for the whole message at its first packet */
		w->va = p->reth.va;
		w->rkey = p->reth.rkey;
		w->left = w->total = p->reth.len;
		if (p->reth.len)
			w->derr = xr_dma_check_rkey(e, w->rkey, qp->ctx.pd, qp->qpn, w->va, w->left,
						    XR_ACCESS_REMOTE_WRITE, &w->mr);
		if (w->derr != XR_DMA_OK)
			return false;
	} else {
		w->va = rs->write_va;
		w->rkey = rs->write_rkey;
		w->left = rs->write_left;
		w->total = rs->write_total;
	}
	/* every packet carries exactly its share */
	if ((f & XR_OPF_LAST) ? p->payload_len != w->left : p->payload_len >= w->left)
		return false;
	if (p->payload_len)   /* the key may have been invalidated mid-message */
		w->derr = xr_dma_check_rkey(e, w->rkey, qp->ctx.pd, qp->qpn, w->va, p->payload_len,
					    XR_ACCESS_REMOTE_WRITE, &w->mr);
	return w->derr == XR_DMA_OK;
}

/* False: the copy found the payload's ICRC bad (a check left to it,
 * gather.c), and the packet did nothing. */
static bool rx_write(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_icrc_defer *d = xr_icrc_deferred(e, p);
	uint32_t f = p->op->flags;
	struct write_target w;

	if (!write_target(e, qp, p, &w)) {
		if (!xr_icrc_defer_check(e, p, p->payload))
			return false;   /* refused: checked first, and it was bad */
		if (w.derr != XR_DMA_OK) {
			count_dma_error(e, w.derr);
			nak(e, qp, XR_AETH_NAK_REM_ACCESS, p->psn, XR_WC_REM_ACCESS_ERR);
		} else {
			nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		}
		return true;
	}
	if (d && !xr_icrc_defer_finish(e, d, xr_dma_write_crc(w.mr, w.va, p->payload, p->payload_len, d->reg)))
		return false;
	if (!d && p->payload_len)
		xr_dma_write(w.mr, w.va, p->payload, p->payload_len);
	rs->write_va = w.va + p->payload_len;
	rs->write_rkey = w.rkey;
	rs->write_left = w.left - p->payload_len;
	rs->write_total = w.total;
	rs->in_msg = (f & XR_OPF_LAST) ? XR_RESP_IDLE : XR_RESP_IN_WRITE;
	if (f & XR_OPF_LAST) {
		qp->ctx.msn = psn_add(qp->ctx.msn, 1);
		if (f & XR_OPF_IMM)
			xr_resp_complete_rwqe(e, qp, p, XR_WC_RECV_RDMA_WITH_IMM, rs->write_total);
	}
	return true;
}

/* 0, or the PSNs the READ's responses take (set in *npsn). */
static void rx_read(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, uint32_t *npsn)
{
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);
	struct xr_mr *mr = NULL;
	struct xr_rd_res *res;
	enum xr_dma_err derr;
	uint64_t n;

	if (p->reth.len) {
		derr = xr_dma_check_rkey(e, p->reth.rkey, qp->ctx.pd, qp->qpn, p->reth.va, p->reth.len, XR_ACCESS_REMOTE_READ, &mr);
		if (derr != XR_DMA_OK) {
			count_dma_error(e, derr);
			nak(e, qp, XR_AETH_NAK_REM_ACCESS, p->psn, XR_WC_REM_ACCESS_ERR);
			return;
		}
	}
	res = new_resource(qp);
	if (!res) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return;
	}
	n = p->reth.len ? ((uint64_t)p->reth.len + mtu - 1) / mtu : 1;
	qp->ctx.msn = psn_add(qp->ctx.msn, 1);
	res->kind = RES_READ;
	res->first_psn = p->psn;
	res->last_psn = psn_add(p->psn, (uint32_t)(n - 1));
	res->va = p->reth.va;
	res->rkey = p->reth.rkey;
	res->len = p->reth.len;
	res->msn = qp->ctx.msn;
	xr_rd_stream_from(res, p->psn, res->va, res->len);
	queue_res(qp, res, false);
	*npsn = (uint32_t)n;
}

static void rx_atomic(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_mr *mr = NULL;
	struct xr_rd_res *res;
	enum xr_dma_err derr;
	uint64_t *word, orig;

	if (p->atomic.va & 7) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return;
	}
	derr = xr_dma_check_rkey(e, p->atomic.rkey, qp->ctx.pd, qp->qpn, p->atomic.va, 8, XR_ACCESS_REMOTE_ATOMIC, &mr);
	if (derr != XR_DMA_OK) {
		count_dma_error(e, derr);
		nak(e, qp, XR_AETH_NAK_REM_ACCESS, p->psn, XR_WC_REM_ACCESS_ERR);
		return;
	}
	word = xr_dma_u64(mr, p->atomic.va);
	if (p->opcode == XR_OP_RC_COMPARE_SWAP) {
		orig = p->atomic.compare;
		__atomic_compare_exchange_n(word, &orig, p->atomic.swap_add, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(word, p->atomic.swap_add, __ATOMIC_SEQ_CST);
	}
	res = new_resource(qp);
	if (!res) {   /* request_ok saw a free slot: cannot happen */
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return;
	}
	qp->ctx.msn = psn_add(qp->ctx.msn, 1);
	res->kind = RES_ATOMIC;
	res->first_psn = res->last_psn = p->psn;
	res->atomic_orig = orig;
	res->msn = qp->ctx.msn;
	queue_res(qp, res, false);
}

static bool qp_allows(const struct xr_qp *qp, uint32_t f)
{
	return !(((f & XR_OPF_WRITE) && !(qp->ctx.access & XR_ACCESS_REMOTE_WRITE)) ||
		 ((f & XR_OPF_READ) && !(qp->ctx.access & XR_ACCESS_REMOTE_READ)) ||
		 ((f & XR_OPF_ATOMIC) && !(qp->ctx.access & XR_ACCESS_REMOTE_ATOMIC)));
}

/* The path MTU (C9-92) and the DMA length (C9-94). */
static bool lengths_ok(const struct xr_qp *qp, const struct xr_pkt *p)
{
	uint32_t f = p->op->flags, mtu = mtu_bytes(qp->ctx.path_mtu);

	return !(((f & (XR_OPF_FIRST | XR_OPF_MIDDLE)) && !(f & XR_OPF_LAST) && p->payload_len != mtu) ||
		 p->payload_len > mtu || ((f & XR_OPF_LAST) && !(f & XR_OPF_FIRST) && !p->payload_len) ||
		 ((p->op->hdrs & XR_H_RETH) && p->reth.len > MAX_DMA_LEN));
}

/* The checks of a new request in rxe's order (A48); true when it may run. */
static bool request_ok(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags;

	/* 1. opcode sequence */
	if (!sequence_ok(rs, f)) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return false;
	}
	/* 2. what the QP allows */
	if (!qp_allows(qp, f)) {
		xr_count(e, XR_CNT_PERM_VIOLATION, 1);
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return false;
	}
	/* 3. resources: a receive WQE, or a READ/atomic slot */
	if ((f & XR_OPF_RWQE) && !xr_resp_take_rwqe(e, qp)) {
		rnr_nak(e, qp, p->psn);
		return false;
	}
	if ((f & (XR_OPF_READ | XR_OPF_ATOMIC)) && !xr_qp_res_get(e, qp))
		return false;   /* no memory: dropped unexecuted (counted), sent again */
	if ((f & (XR_OPF_READ | XR_OPF_ATOMIC)) && resources_exhausted(rs)) {
		/* max_dest_rd_atomic 0, or more outstanding than it allows */
		xr_count(e, XR_CNT_RD_ATOMIC_EXCEEDED, 1);
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return false;
	}
	/* 4. lengths */
	if (!lengths_ok(qp, p)) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, p->psn, XR_WC_REM_INV_REQ_ERR);
		return false;
	}
	return true;
}

void xr_resp_run(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags, psn = p->psn, epsn = qp->ctx.rq_psn, npsn = 1;
	int32_t cmp = psn_cmp(psn, epsn);
	bool nak_seq_sent;

	if (qp->ctx.state == XR_QPS_ERR)
		return;
	if (cmp > 0) {
		xr_count(e, XR_CNT_OUT_OF_SEQ, 1);
		if (!rs->nak_seq_sent && xr_resp_q_has_room(rs)) {
			rs->nak_seq_sent = true;
			nak(e, qp, XR_AETH_NAK_PSN_SEQ, epsn, 0);
		}
		return;
	}
	if (cmp < 0) {
		xr_count(e, XR_CNT_DUP_REQUEST, 1);
		if (f & (XR_OPF_READ | XR_OPF_ATOMIC))
			duplicate_rd_atomic(e, qp, p);
		else   /* the newest SEND/WRITE executed (a READ's PSN would read as an implied NAK) */
			queue_ack(e, qp, XR_AETH_ACK_UNLIMITED,
				  rs->acked_any ? rs->ack_psn : psn_add(epsn, XR_PSN_MASK), false);
		return;
	}
	if (!xr_resp_q_has_room(rs)) {
		/* Not executed, ePSN unchanged: the requester sends it again. */
		xr_count(e, XR_CNT_DROP_RESP_BUSY, 1);
		return;
	}
	nak_seq_sent = rs->nak_seq_sent;
	rs->nak_seq_sent = false;
	if (!request_ok(e, qp, p))
		return;
	if (f & XR_OPF_SEND) {
		rx_send(e, qp, p);
	} else if (f & XR_OPF_WRITE) {
		if (!rx_write(e, qp, p)) {   /* dropped: as if never here */
			rs->nak_seq_sent = nak_seq_sent;
			return;
		}
	} else if (f & XR_OPF_READ) {
		rx_read(e, qp, p, &npsn);
	} else if (f & XR_OPF_ATOMIC) {
		rx_atomic(e, qp, p);
	}
	/* A fatal error, or a receive CQ that overran (A42): no ACK. */
	if (qp->ctx.state == XR_QPS_ERR)
		return;
	qp->ctx.rq_psn = psn_add(psn, npsn);
	if (f & (XR_OPF_SEND | XR_OPF_WRITE)) {
		rs->ack_psn = psn;
		rs->acked_any = true;
		if (p->ackreq)
			queue_ack(e, qp, XR_AETH_ACK_UNLIMITED, psn, false);
	}
}

/* A READ stream (original or replay) still owed. */
static bool read_queued(struct xr_qp *qp)
{
	const struct xr_resp *rs = &qp->resp;

	for (unsigned i = 0; i < rs->q_len; i++) {
		const struct xr_resp_item *it = xr_resp_q_at(qp, i);
		if (it->kind == XR_ITEM_RES && rs->res[it->res].kind == RES_READ)
			return true;
	}
	return false;
}

bool xr_resp_must_wait(struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;

	/* Duplicates and later PSNs execute nothing: their answers queue. */
	if (!rs->q_len || p->psn != qp->ctx.rq_psn || !read_queued(qp))
		return false;
	return !((p->op->flags & (XR_OPF_READ | XR_OPF_ATOMIC)) && resources_exhausted(rs));
}

/* True when xr_resp_run will hand p, an RC WRITE, to rx_write, every
 * check before passed: rx_write checks its ICRC by the copy (gather.c),
 * or first if it refuses the packet. */
static bool write_runs(const struct xr_qp *qp, const struct xr_pkt *p)
{
	uint32_t f = p->op->flags;

	return qp->ctx.type == XR_QPT_RC && qp->ctx.state != XR_QPS_ERR && p->psn == qp->ctx.rq_psn &&
	       xr_resp_q_has_room(&qp->resp) && (f & XR_OPF_WRITE) && !(f & XR_OPF_RWQE) &&
	       sequence_ok(&qp->resp, f) && qp_allows(qp, f) && lengths_ok(qp, p);
}

/* A33 (rxe get_req, read_reply): requests run in PSN order, and a READ's
 * responses are built in full before the next request runs, so the READ
 * returns the memory as it was when it executed (a later WRITE, or a
 * SEND_WITH_INV of its key, comes after it). They are built now when the
 * link takes them; otherwise the request waits (resp_tx.c). */
void xr_resp_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, struct xr_tx *tx)
{
	/* A payload whose check waits for its copy (gather.c) is checked now
	 * unless that copy comes next (or one into the held requests). */
	if (xr_icrc_deferred(e, p) && !write_runs(qp, p) && !xr_icrc_defer_check(e, p, p->payload))
		return;
	/* The unacknowledged transports answer nothing and queue nothing. */
	if (qp->ctx.type == XR_QPT_UD) {
		xr_ud_rx(e, qp, p);
		return;
	}
	/* The receive WQE being filled and what is owed live in the active
	 * block: without memory the request is dropped unexecuted (counted;
	 * RC's requester sends it again). No memory is taken for a packet
	 * whose check is still to come. */
	if ((!qp->act && !xr_icrc_defer_check(e, p, p->payload)) || !xr_qp_act_get(e, qp))
		return;
	if (qp->ctx.type == XR_QPT_UC) {
		xr_uc_rx(e, qp, p);
		return;
	}
	if (qp->resp.held_len) {
		if (qp->ctx.state != XR_QPS_ERR)
			xr_resp_hold(e, qp, p);
		return;
	}
	if (xr_resp_must_wait(qp, p) && (!xr_resp_send_queued(e, qp, tx) || xr_resp_must_wait(qp, p))) {
		xr_resp_hold(e, qp, p);
		return;
	}
	xr_resp_run(e, qp, p);
}
