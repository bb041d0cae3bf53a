/* SPDX-License-Identifier: MIT */
/*
 * The UC responder: SEND and RDMA WRITE (with or without immediate),
 * never an ACK, NAK or RNR NAK (E2). A FIRST or ONLY is taken at any PSN
 * and resyncs ePSN (E3); a MIDDLE or LAST must come at ePSN inside a
 * message of its kind, or the message is dropped whole: a message is
 * delivered complete or not at all, never merged with another. A new
 * FIRST/ONLY while a message is open starts a new message (the IBTA
 * reading; rxe also drops that one, E4 ⚠), into the same receive WQE.
 * Length, access and R_Key errors drop the message silently and leave
 * the QP in RTS (E6); only an unusable receive WQE moves it to ERR. On an
 * SRQ a dropped message completes the WQE it took with the error (E4, E6,
 * as rxe): kept for the next message it could outlive the QP unseen.
 */
#include <string.h>

#include "engine.h"
#include "resp.h"

#define MAX_DMA_LEN (1ull << 31)

/* The message in progress is given up: its receive WQE (if it holds one)
 * is kept for the next message, which overwrites whatever was placed. */
static void abandon(struct xr_qp *qp)
{
	qp->resp.in_msg = XR_RESP_IDLE;
	qp->resp.recv_offset = 0;
}

/* A WQE taken from an SRQ is not kept: it completes with wc_status. */
static void drop_msg(struct xr_engine *e, struct xr_qp *qp, enum xr_counter why, uint8_t wc_status)
{
	xr_count(e, why, 1);
	abandon(qp);
	if (qp->ctx.srqn && wc_status != XR_WC_SUCCESS)
		xr_resp_fail_rwqe(e, qp, wc_status);
}

static bool continues(const struct xr_resp *rs, uint32_t f)
{
	if (rs->in_msg == XR_RESP_IN_SEND)
		return f & XR_OPF_SEND;
	if (rs->in_msg == XR_RESP_IN_WRITE)
		return f & XR_OPF_WRITE;
	return false;
}

static bool lengths_ok(const struct xr_qp *qp, const struct xr_pkt *p)
{
	uint32_t f = p->op->flags, mtu = mtu_bytes(qp->ctx.path_mtu);

	if (p->payload_len > mtu)
		return false;
	if ((f & (XR_OPF_FIRST | XR_OPF_MIDDLE)) && !(f & XR_OPF_LAST) && p->payload_len != mtu)
		return false;
	if ((f & XR_OPF_LAST) && !(f & XR_OPF_FIRST) && !p->payload_len)
		return false;
	return !((p->op->hdrs & XR_H_RETH) && p->reth.len > MAX_DMA_LEN);
}

/* false: the message is dropped (or the QP failed). */
static bool uc_send(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags;
	int err;

	if ((uint64_t)rs->recv_offset + p->payload_len > qp->act->rwqe.length) {
		drop_msg(e, qp, XR_CNT_DROP_UC_INVALID, XR_WC_REM_INV_REQ_ERR);   /* longer than the buffer */
		return false;
	}
	if (p->payload_len && (err = xr_sgl_write(e, qp->ctx.pd, xr_rwqe_sges(&qp->act->rwqe), qp->act->rwqe.num_sge,
						  rs->recv_offset, p->payload, p->payload_len)) != 0) {
		abandon(qp);
		xr_resp_fail_rwqe(e, qp, (uint8_t)err);
		xr_qp_to_error(e, qp, (uint8_t)err);
		return false;
	}
	rs->recv_offset += p->payload_len;
	rs->in_msg = (f & XR_OPF_LAST) ? XR_RESP_IDLE : XR_RESP_IN_SEND;
	if (f & XR_OPF_LAST) {
		xr_count(e, XR_CNT_RDMA_RECVS, 1);
		xr_resp_complete_rwqe(e, qp, p, XR_WC_RECV, rs->recv_offset);
	}
	return true;
}

static bool uc_write(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags;
	struct xr_mr *mr = NULL;
	enum xr_dma_err derr = XR_DMA_OK;

	if (f & XR_OPF_FIRST) {
		if (p->reth.len)
			derr = xr_dma_check_rkey(e, p->reth.rkey, qp->ctx.pd, qp->qpn, p->reth.va, p->reth.len,
						 XR_ACCESS_REMOTE_WRITE, &mr);
		rs->write_va = p->reth.va;
		rs->write_rkey = p->reth.rkey;
		rs->write_left = p->reth.len;
		rs->write_total = p->reth.len;
	}
	if (derr == XR_DMA_OK &&
	    ((f & XR_OPF_LAST) ? p->payload_len != rs->write_left : p->payload_len >= rs->write_left)) {
		drop_msg(e, qp, XR_CNT_DROP_UC_INVALID, XR_WC_REM_INV_REQ_ERR);
		return false;
	}
	if (derr == XR_DMA_OK && p->payload_len)
		derr = xr_dma_check_rkey(e, rs->write_rkey, qp->ctx.pd, qp->qpn, rs->write_va, p->payload_len,
					 XR_ACCESS_REMOTE_WRITE, &mr);
	if (derr != XR_DMA_OK) {
		xr_count(e, derr == XR_DMA_BOUNDS ? XR_CNT_BOUNDS_VIOLATION :
			    derr == XR_DMA_PERM ? XR_CNT_PERM_VIOLATION : XR_CNT_RKEY_VIOLATION, 1);
		drop_msg(e, qp, XR_CNT_DROP_UC_INVALID, XR_WC_REM_ACCESS_ERR);
		return false;
	}
	if (p->payload_len)
		xr_dma_write(mr, rs->write_va, p->payload, p->payload_len);
	rs->write_va += p->payload_len;
	rs->write_left -= p->payload_len;
	rs->in_msg = (f & XR_OPF_LAST) ? XR_RESP_IDLE : XR_RESP_IN_WRITE;
	if ((f & XR_OPF_LAST) && (f & XR_OPF_IMM))
		xr_resp_complete_rwqe(e, qp, p, XR_WC_RECV_RDMA_WITH_IMM, rs->write_total);
	return true;
}

void xr_uc_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	uint32_t f = p->op->flags;

	if (!(f & (XR_OPF_SEND | XR_OPF_WRITE)))
		return;   /* recv.c passes only UC opcodes, and UC has no others */
	if (f & XR_OPF_FIRST) {
		if (rs->in_msg != XR_RESP_IDLE) {
			drop_msg(e, qp, XR_CNT_DROP_UC_MSG, XR_WC_REM_INV_REQ_ERR);   /* the open message lost its end */
			if (qp->ctx.state == XR_QPS_ERR)
				return;   /* its completion overran the CQ: the QP takes nothing more */
		}
	} else if (rs->in_msg == XR_RESP_IDLE || p->psn != qp->ctx.rq_psn || !continues(rs, f)) {
		/* A gap, no message open, or the other kind: this packet and
		 * the rest of its message go (E3, E5). */
		drop_msg(e, qp, XR_CNT_DROP_UC_MSG, XR_WC_REM_INV_REQ_ERR);
		return;
	}
	qp->ctx.rq_psn = psn_add(p->psn, 1);
	if ((f & XR_OPF_WRITE) && !(qp->ctx.access & XR_ACCESS_REMOTE_WRITE)) {
		xr_count(e, XR_CNT_PERM_VIOLATION, 1);
		drop_msg(e, qp, XR_CNT_DROP_UC_INVALID, XR_WC_SUCCESS);   /* before any WQE is taken: silent */
		return;
	}
	if (!lengths_ok(qp, p)) {
		drop_msg(e, qp, XR_CNT_DROP_UC_INVALID, XR_WC_REM_INV_REQ_ERR);
		return;
	}
	if ((f & XR_OPF_RWQE) && !xr_resp_take_rwqe(e, qp)) {
		drop_msg(e, qp, XR_CNT_DROP_NO_RWQE, XR_WC_SUCCESS);   /* no RNR on UC (E6); nothing held */
		return;
	}
	if (f & XR_OPF_FIRST)
		rs->recv_offset = 0;
	if (f & XR_OPF_SEND)
		uc_send(e, qp, p);
	else
		uc_write(e, qp, p);
}
