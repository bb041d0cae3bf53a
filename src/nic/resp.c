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

#include "engine.h"

enum { RES_FREE, RES_READ, RES_ATOMIC };

static void queue_ack(struct xr_qp *qp, uint8_t syndrome, uint32_t psn)
{
	qp->resp.ack_due = true;
	qp->resp.ack_syndrome = syndrome;
	qp->resp.ack_psn = psn;
}

static void nak(struct xr_engine *e, struct xr_qp *qp, uint8_t syndrome, uint32_t psn)
{
	static const enum xr_counter cnt[] = {
		XR_CNT_TX_NAK_SEQ, XR_CNT_TX_NAK_INV_REQ, XR_CNT_TX_NAK_REM_ACCESS, XR_CNT_TX_NAK_REM_OP,
	};
	queue_ack(qp, syndrome, psn);
	xr_count(e, cnt[(syndrome & 3)], 1);
	xr_evlog_add(e, XR_EV_NAK_SENT, qp->qpn, syndrome, psn);
	if (syndrome != XR_AETH_NAK_PSN_SEQ) {
		/* Fatal for the responder: the receive WQE in progress fails too. */
		if (qp->resp.have_rwqe) {
			struct xr_wc_info wc = { .wr_id = qp->resp.rwqe.wr_id, .opcode = XR_WC_RECV,
						 .wqe_index = (uint16_t)(qp->resp.rq_head - 1),
						 .status = syndrome == XR_AETH_NAK_INV_REQ ? XR_WC_REM_INV_REQ_ERR :
							   syndrome == XR_AETH_NAK_REM_ACCESS ? XR_WC_REM_ACCESS_ERR :
							   XR_WC_REM_OP_ERR };
			xr_complete(e, qp, qp->ctx.rq_cqn, &wc, false);
			qp->resp.have_rwqe = false;
			qp->rq_ci++;
		}
		xr_qp_to_error(e, qp, syndrome);
	}
}

static void count_dma_error(struct xr_engine *e, enum xr_dma_err err)
{
	xr_count(e, err == XR_DMA_BOUNDS ? XR_CNT_BOUNDS_VIOLATION :
		    err == XR_DMA_PERM ? XR_CNT_PERM_VIOLATION : XR_CNT_RKEY_VIOLATION, 1);
}

static bool take_rwqe(struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;

	if (rs->have_rwqe)
		return true;
	if (rs->rq_head == qp->rq_pi || !qp->ctx.rq_base)
		return false;
	memcpy(&rs->rwqe, xr_rq_slot(qp, rs->rq_head), sizeof(rs->rwqe));
	if (rs->rwqe.num_sge > XR_RWQE_MAX_SGE)
		rs->rwqe.num_sge = XR_RWQE_MAX_SGE;   /* a bad WQE: its length check fails below */
	rs->rq_head++;
	rs->have_rwqe = true;
	rs->recv_offset = 0;
	return true;
}

static void complete_rwqe(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, uint8_t opcode,
			  uint32_t byte_len)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_wc_info wc = { .wr_id = rs->rwqe.wr_id, .status = XR_WC_SUCCESS, .opcode = opcode,
				 .byte_len = byte_len, .src_qp = qp->ctx.dest_qpn,
				 .wqe_index = (uint16_t)(rs->rq_head - 1) };

	if (p->op->flags & XR_OPF_IMM) {
		wc.flags |= XR_WC_WITH_IMM;
		wc.imm = p->imm;
	}
	if (p->op->flags & XR_OPF_INV) {
		wc.flags |= XR_WC_WITH_INV;
		wc.imm = p->ieth_rkey;
	}
	xr_complete(e, qp, qp->ctx.rq_cqn, &wc, p->se);
	rs->have_rwqe = false;
	qp->rq_ci++;
	qp->ctx.rq_ci = qp->rq_ci;
	xr_count(e, XR_CNT_RQ_WQES, 1);
}

static struct xr_rd_res *new_resource(struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;
	/* Full ring: the oldest entry is reused rather than NAKing (as rxe). */
	struct xr_rd_res *res = &rs->res[rs->res_next++ & (rs->nres - 1)];

	memset(res, 0, sizeof(*res));
	return res;
}

static void start_sending(struct xr_qp *qp, struct xr_rd_res *res)
{
	res->sending = true;
	if (qp->resp.res_sending < 0)
		qp->resp.res_sending = (int)(res - qp->resp.res);
}

/* Duplicate READ/atomic: replay from the saved resource, never re-execute. */
static void duplicate_rd_atomic(struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);

	for (uint32_t i = 0; i < rs->nres; i++) {
		struct xr_rd_res *res = &rs->res[i];
		if (p->op->flags & XR_OPF_ATOMIC) {
			if (res->kind == RES_ATOMIC && res->first_psn == p->psn) {
				start_sending(qp, res);
				return;
			}
			continue;
		}
		if (res->kind != RES_READ || psn_cmp(p->psn, res->first_psn) < 0 ||
		    psn_cmp(p->psn, res->last_psn) > 0 || p->reth.rkey != res->rkey)
			continue;
		/* The retried request must lie inside the original one. */
		if (p->reth.va < res->va || p->reth.va + p->reth.len > res->va + res->len ||
		    p->reth.va - res->va != (uint64_t)((p->psn - res->first_psn) & XR_PSN_MASK) * mtu)
			continue;
		res->stream_psn = p->psn;
		res->stream_va = p->reth.va;
		res->stream_len = p->reth.len;
		res->next_psn = p->psn;
		start_sending(qp, res);
		return;
	}
	/* No matching resource: dropped silently, as rxe does. */
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

void xr_resp_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, struct xr_tx *tx)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags, mtu = mtu_bytes(qp->ctx.path_mtu), psn = p->psn;
	uint32_t epsn = qp->ctx.rq_psn, npsn = 1;
	int32_t cmp = psn_cmp(psn, epsn);
	struct xr_mr *mr = NULL;
	enum xr_dma_err derr;

	(void)tx;
	if (qp->ctx.state == XR_QPS_ERR)
		return;
	if (cmp > 0) {
		xr_count(e, XR_CNT_OUT_OF_SEQ, 1);
		if (!rs->nak_seq_sent) {
			rs->nak_seq_sent = true;
			nak(e, qp, XR_AETH_NAK_PSN_SEQ, epsn);
		}
		return;
	}
	if (cmp < 0) {
		xr_count(e, XR_CNT_DUP_REQUEST, 1);
		if (f & (XR_OPF_READ | XR_OPF_ATOMIC))
			duplicate_rd_atomic(qp, p);
		else
			queue_ack(qp, XR_AETH_ACK_UNLIMITED, psn_add(epsn, XR_PSN_MASK));
		return;
	}
	rs->nak_seq_sent = false;

	/* 1. opcode sequence */
	if (!sequence_ok(rs, f)) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
		return;
	}
	/* 2. what the QP allows */
	if (((f & XR_OPF_WRITE) && !(qp->ctx.access & XR_ACCESS_REMOTE_WRITE)) ||
	    ((f & XR_OPF_READ) && !(qp->ctx.access & XR_ACCESS_REMOTE_READ)) ||
	    ((f & XR_OPF_ATOMIC) && !(qp->ctx.access & XR_ACCESS_REMOTE_ATOMIC))) {
		xr_count(e, XR_CNT_PERM_VIOLATION, 1);
		nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
		return;
	}
	/* 3. packet length against the path MTU */
	if (((f & (XR_OPF_FIRST | XR_OPF_MIDDLE)) && !(f & XR_OPF_LAST) && p->payload_len != mtu) ||
	    p->payload_len > mtu) {
		nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
		return;
	}
	/* 4. a receive WQE where the opcode consumes one */
	if ((f & XR_OPF_RWQE) && !take_rwqe(qp)) {
		/* The rest of this burst is dropped quietly: the requester comes
		 * back to this PSN after the RNR wait anyway, and a PSN-sequence
		 * NAK would overwrite the RNR NAK and burn a retry. */
		rs->nak_seq_sent = true;
		xr_count(e, XR_CNT_TX_RNR_NAK, 1);
		queue_ack(qp, (uint8_t)(XR_AETH_RNR_NAK | qp->ctx.min_rnr_timer), psn);
		xr_evlog_add(e, XR_EV_NAK_SENT, qp->qpn, XR_AETH_RNR_NAK | qp->ctx.min_rnr_timer, psn);
		return;
	}

	if (f & XR_OPF_SEND) {
		/* 5. length: the message must fit the receive WQE */
		if (rs->recv_offset + p->payload_len > rs->rwqe.length) {
			nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
			return;
		}
		if (p->payload_len && xr_sgl_write(e, qp->ctx.pd, rs->rwqe.sge, rs->rwqe.num_sge,
						   rs->recv_offset, p->payload, p->payload_len)) {
			nak(e, qp, XR_AETH_NAK_REM_OP, psn);
			return;
		}
		rs->recv_offset += p->payload_len;
		rs->in_msg = (f & XR_OPF_LAST) ? XR_RESP_IDLE : XR_RESP_IN_SEND;
		if (f & XR_OPF_LAST) {
			if ((f & XR_OPF_INV)) {
				struct xr_mr *inv = xr_mr_lookup(e, p->ieth_rkey);
				if (!inv || inv->ctx.pd != qp->ctx.pd) {
					nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
					return;
				}
				__atomic_store_n(&inv->in_use, false, __ATOMIC_RELEASE);
				inv->ctx.valid = false;
				xr_evlog_add(e, XR_EV_MR_INVALIDATE, qp->qpn, p->ieth_rkey, 2);
			}
			complete_rwqe(e, qp, p, XR_WC_RECV, rs->recv_offset);
			xr_count(e, XR_CNT_RDMA_RECVS, 1);
			qp->ctx.msn = psn_add(qp->ctx.msn, 1);
		}
	} else if (f & XR_OPF_WRITE) {
		if (f & XR_OPF_FIRST) {
			/* 5. R_Key and range, for the whole message at its first packet */
			if (p->reth.len) {
				derr = xr_dma_check_rkey(e, p->reth.rkey, qp->ctx.pd, qp->qpn, p->reth.va, p->reth.len,
						    XR_ACCESS_REMOTE_WRITE, &mr);
				if (derr != XR_DMA_OK) {
					count_dma_error(e, derr);
					nak(e, qp, XR_AETH_NAK_REM_ACCESS, psn);
					return;
				}
			}
			rs->write_va = p->reth.va;
			rs->write_rkey = p->reth.rkey;
			rs->write_left = p->reth.len;
			rs->write_total = p->reth.len;
		}
		/* 6. every packet carries exactly its share */
		if ((f & XR_OPF_LAST) ? p->payload_len != rs->write_left : p->payload_len >= rs->write_left) {
			nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
			return;
		}
		if (p->payload_len) {
			derr = xr_dma_check_rkey(e, rs->write_rkey, qp->ctx.pd, qp->qpn, rs->write_va, p->payload_len,
					    XR_ACCESS_REMOTE_WRITE, &mr);
			if (derr != XR_DMA_OK) {   /* invalidated mid-message */
				count_dma_error(e, derr);
				nak(e, qp, XR_AETH_NAK_REM_ACCESS, psn);
				return;
			}
			xr_dma_write(mr, rs->write_va, p->payload, p->payload_len);
		}
		rs->write_va += p->payload_len;
		rs->write_left -= p->payload_len;
		rs->in_msg = (f & XR_OPF_LAST) ? XR_RESP_IDLE : XR_RESP_IN_WRITE;
		if (f & XR_OPF_LAST) {
			if (f & XR_OPF_IMM)
				complete_rwqe(e, qp, p, XR_WC_RECV_RDMA_WITH_IMM, rs->write_total);
			qp->ctx.msn = psn_add(qp->ctx.msn, 1);
		}
	} else if (f & XR_OPF_READ) {
		struct xr_rd_res *res;
		if (!rs->nres) {
			nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
			return;
		}
		if (p->reth.len) {
			derr = xr_dma_check_rkey(e, p->reth.rkey, qp->ctx.pd, qp->qpn, p->reth.va, p->reth.len,
					    XR_ACCESS_REMOTE_READ, &mr);
			if (derr != XR_DMA_OK) {
				count_dma_error(e, derr);
				nak(e, qp, XR_AETH_NAK_REM_ACCESS, psn);
				return;
			}
		}
		npsn = p->reth.len ? (p->reth.len + mtu - 1) / mtu : 1;
		qp->ctx.msn = psn_add(qp->ctx.msn, 1);
		res = new_resource(qp);
		res->kind = RES_READ;
		res->first_psn = psn;
		res->last_psn = psn_add(psn, npsn - 1);
		res->va = p->reth.va;
		res->rkey = p->reth.rkey;
		res->len = p->reth.len;
		res->msn = qp->ctx.msn;
		res->stream_psn = psn;
		res->stream_va = res->va;
		res->stream_len = res->len;
		res->next_psn = psn;
		start_sending(qp, res);
	} else if (f & XR_OPF_ATOMIC) {
		struct xr_rd_res *res;
		uint64_t *word, orig;
		if (!rs->nres || (p->atomic.va & 7)) {
			nak(e, qp, XR_AETH_NAK_INV_REQ, psn);
			return;
		}
		derr = xr_dma_check_rkey(e, p->atomic.rkey, qp->ctx.pd, qp->qpn, p->atomic.va, 8, XR_ACCESS_REMOTE_ATOMIC, &mr);
		if (derr != XR_DMA_OK) {
			count_dma_error(e, derr);
			nak(e, qp, XR_AETH_NAK_REM_ACCESS, psn);
			return;
		}
		word = xr_dma_u64(mr, p->atomic.va);
		if (p->opcode == XR_OP_RC_COMPARE_SWAP) {
			orig = p->atomic.compare;
			__atomic_compare_exchange_n(word, &orig, p->atomic.swap_add, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		} else {
			orig = __atomic_fetch_add(word, p->atomic.swap_add, __ATOMIC_SEQ_CST);
		}
		qp->ctx.msn = psn_add(qp->ctx.msn, 1);
		res = new_resource(qp);
		res->kind = RES_ATOMIC;
		res->first_psn = res->last_psn = psn;
		res->atomic_orig = orig;
		res->msn = qp->ctx.msn;
		start_sending(qp, res);
	}

	qp->ctx.rq_psn = psn_add(psn, npsn);
	if (p->ackreq && (f & (XR_OPF_SEND | XR_OPF_WRITE)))
		queue_ack(qp, XR_AETH_ACK_UNLIMITED, psn);
}

/* ---- responses out ---- */

static bool send_ack(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_pkt p;
	struct xr_frame *f = xr_tx_begin(e, tx, qp, &p);

	if (!f)
		return false;
	p.opcode = XR_OP_RC_ACKNOWLEDGE;
	p.psn = rs->ack_psn;
	p.aeth.syndrome = rs->ack_syndrome;
	p.aeth.msn = qp->ctx.msn;
	xr_pkt_build_hdrs(&p, f->data, sizeof(f->data));
	xr_tx_commit(e, tx, f, &p);
	if ((rs->ack_syndrome & XR_AETH_TYPE_MASK) == XR_AETH_ACK)
		xr_count(e, XR_CNT_TX_ACK, 1);
	rs->ack_due = false;
	return true;
}

/* Sends the next response of a READ or the ATOMIC_ACK; false when it could not. */
static bool send_response(struct xr_engine *e, struct xr_qp *qp, struct xr_rd_res *res, struct xr_tx *tx)
{
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);
	struct xr_pkt p;
	struct xr_frame *f = xr_tx_begin(e, tx, qp, &p);

	if (!f)
		return false;
	p.aeth.syndrome = XR_AETH_ACK_UNLIMITED;
	p.aeth.msn = res->msn;
	if (res->kind == RES_ATOMIC) {
		p.opcode = XR_OP_RC_ATOMIC_ACKNOWLEDGE;
		p.psn = res->first_psn;
		p.atomic_orig = res->atomic_orig;
		xr_pkt_build_hdrs(&p, f->data, sizeof(f->data));
		res->sending = false;
	} else {
		uint32_t n = res->stream_len ? (res->stream_len + mtu - 1) / mtu : 1;
		uint32_t idx = (res->next_psn - res->stream_psn) & XR_PSN_MASK;
		uint32_t off = idx * mtu, len = res->stream_len - off < mtu ? res->stream_len - off : mtu;
		struct xr_mr *mr = NULL;
		if (n == 1)
			p.opcode = XR_OP_RC_RDMA_READ_RESPONSE_ONLY;
		else if (idx == 0)
			p.opcode = XR_OP_RC_RDMA_READ_RESPONSE_FIRST;
		else if (idx == n - 1)
			p.opcode = XR_OP_RC_RDMA_READ_RESPONSE_LAST;
		else
			p.opcode = XR_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
		p.psn = res->next_psn;
		p.payload_len = len;
		if (len && xr_dma_check_rkey(e, res->rkey, qp->ctx.pd, qp->qpn, res->stream_va + off, len,
					XR_ACCESS_REMOTE_READ, &mr) != XR_DMA_OK) {
			/* Invalidated after the request was accepted: stop answering. */
			xr_link_frame_free(e->link, f);
			res->sending = false;
			return true;
		}
		xr_pkt_build_hdrs(&p, f->data, sizeof(f->data));
		if (len)
			xr_dma_read(mr, res->stream_va + off, f->data + p.payload_off, len);
		res->next_psn = psn_add(res->next_psn, 1);
		if (idx + 1 >= n)
			res->sending = false;
	}
	xr_tx_commit(e, tx, f, &p);
	return true;
}

void xr_resp_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx)
{
	struct xr_resp *rs = &qp->resp;

	if (rs->ack_due && !send_ack(e, qp, tx))
		return;
	while (rs->res_sending >= 0) {
		struct xr_rd_res *res = &rs->res[rs->res_sending];
		if (res->sending && !send_response(e, qp, res, tx))
			return;
		if (!res->sending) {
			/* Next resource waiting to answer, oldest first. */
			rs->res_sending = -1;
			for (uint32_t k = 1; k <= rs->nres; k++) {
				uint32_t i = (uint32_t)(res - rs->res + k) & (rs->nres - 1);
				if (rs->res[i].sending) {
					rs->res_sending = (int)i;
					break;
				}
			}
		}
	}
}
