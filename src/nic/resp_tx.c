/* SPDX-License-Identifier: MIT */
/*
 * The responder, what it owes: ACKs, NAKs and RNR NAKs, READ response
 * streams (the R_Key re-checked for every packet) and atomic ACKs leave in
 * the order the requests were decided; requests that arrived while READ
 * responses were still owed run after them (A33).
 */
#include <stdlib.h>
#include <string.h>

#include "resp.h"

/* ---- responses out ---- */

/* The headers of a response. A context whose addresses no packet can
 * carry (the window's field widths refuse one today) fails the QP, as a
 * requester's WQE fails on its packet: nothing it owes can leave, so all
 * of it is dropped, and no frame leaves half built. */
static bool built(struct xr_engine *e, struct xr_qp *qp, struct xr_pkt *p, struct xr_frame *f)
{
	if (xr_tx_build_conn(qp, p, f) >= 0)
		return true;
	xr_link_frame_free(e->link, f);
	xr_qp_to_error(e, qp, XR_WC_LOC_QP_OP_ERR);
	for (unsigned i = 0; i < qp->resp.q_len; i++)
		xr_resp_q_at(qp, i)->fatal = false;
	xr_resp_flush(qp);
	return false;
}

static bool send_ack(struct xr_engine *e, struct xr_qp *qp, const struct xr_resp_item *it, struct xr_tx *tx)
{
	static const enum xr_counter nak_cnt[] = {
		XR_CNT_TX_NAK_SEQ, XR_CNT_TX_NAK_INV_REQ, XR_CNT_TX_NAK_REM_ACCESS, XR_CNT_TX_NAK_REM_OP,
	};
	uint8_t type = it->syndrome & XR_AETH_TYPE_MASK;
	struct xr_pkt p;
	struct xr_frame *f = xr_tx_begin_conn(e, tx, qp, &p);

	if (!f)
		return false;
	p.opcode = XR_OP_RC_ACKNOWLEDGE;
	p.psn = it->psn;
	p.aeth.syndrome = it->syndrome;
	p.aeth.msn = it->msn;
	if (!built(e, qp, &p, f))
		return false;
	xr_tx_commit(e, tx, f, &p);
	/* Counted as they leave: every NAK counted is on the wire. */
	if (type == XR_AETH_ACK) {
		xr_count_pass(e, XR_CNT_TX_ACK, 1);
		return true;
	}
	if (type == XR_AETH_RNR_NAK)
		xr_count(e, XR_CNT_TX_RNR_NAK, 1);
	else
		xr_count(e, (it->syndrome & XR_AETH_VALUE_MASK) < 4 ? nak_cnt[it->syndrome & 3] : XR_CNT_TX_NAK_REM_OP, 1);
	xr_evlog_add(e, XR_EV_NAK_SENT, qp->qpn, it->syndrome, it->psn);
	return true;
}

/* The key was re-checked for a response and failed (the MR went away
 * after the request was accepted): NAK remote access error at the
 * request's PSN instead, and the QP goes to ERR (rxe read_reply). */
static void response_refused(struct xr_engine *e, struct xr_qp *qp, struct xr_resp_item *it,
			     struct xr_rd_res *res)
{
	res->queued = false;
	xr_count(e, XR_CNT_RKEY_VIOLATION, 1);
	it->kind = XR_ITEM_ACK;
	it->syndrome = XR_AETH_NAK_REM_ACCESS;
	it->fatal = true;
	it->psn = res->stream_psn;
	it->msn = qp->ctx.msn;
	xr_qp_to_error(e, qp, XR_WC_REM_ACCESS_ERR);
}

/* Sends the next response of a READ or the ATOMIC_ACK; false when the
 * burst is full. Pops the item when its last response has left. */
static bool send_response(struct xr_engine *e, struct xr_qp *qp, struct xr_resp_item *it, struct xr_tx *tx)
{
	struct xr_rd_res *res = &qp->resp.res[it->res];
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);
	struct xr_mr *mr = NULL;
	struct xr_pkt p;
	struct xr_frame *f;
	uint32_t n = 1, idx = 0, off = 0, len = 0;
	/* The clock only for a paced QP: no read per response otherwise. */
	uint64_t now = xr_cc_paced(qp) ? xr_engine_now(e) : 0;

	if (res->kind == RES_READ) {
		n = res->stream_len ? (uint32_t)(((uint64_t)res->stream_len + mtu - 1) / mtu) : 1;
		idx = (res->next_psn - res->stream_psn) & XR_PSN_MASK;
		off = idx * mtu;
		len = res->stream_len - off < mtu ? res->stream_len - off : mtu;
		if (len && xr_dma_check_rkey(e, res->rkey, qp->ctx.pd, qp->qpn, res->stream_va + off, len,
					XR_ACCESS_REMOTE_READ, &mr) != XR_DMA_OK) {
			response_refused(e, qp, it, res);
			return true;
		}
	}
	/* READ responses carry the QP's data: the same pacer as its requests
	 * (a CNP for a READ's responses names this QP). Held: sent later. */
	if (res->kind == RES_READ && !xr_cc_may_send(e, qp, now))
		return false;
	f = xr_tx_begin_conn(e, tx, qp, &p);
	if (!f)
		return false;
	p.aeth.syndrome = XR_AETH_ACK_UNLIMITED;
	/* The MSN when the response is built (A22, rxe prepare_ack_packet): a
	 * replay carries today's, the original the one its request made. */
	p.aeth.msn = res->replay ? qp->ctx.msn : res->msn;
	if (res->kind == RES_ATOMIC) {
		p.opcode = XR_OP_RC_ATOMIC_ACKNOWLEDGE;
		p.psn = res->first_psn;
		p.atomic_orig = res->atomic_orig;
		if (!built(e, qp, &p, f))
			return false;
		xr_tx_commit(e, tx, f, &p);
		res->queued = false;
		xr_resp_q_pop(&qp->resp);
		return true;
	}
	{
		/* A stream starting at the READ's first PSN (the original, or a
		 * replay of it) is ONLY or FIRST..LAST; a replay from the middle
		 * goes on with MIDDLE and ends with LAST, as rxe answers it. */
		bool first = idx == 0, last = idx + 1 >= n, at_start = res->stream_psn == res->first_psn;
		if (first && last)
			p.opcode = at_start ? XR_OP_RC_RDMA_READ_RESPONSE_ONLY : XR_OP_RC_RDMA_READ_RESPONSE_LAST;
		else if (first)
			p.opcode = at_start ? XR_OP_RC_RDMA_READ_RESPONSE_FIRST : XR_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
		else if (last)
			p.opcode = XR_OP_RC_RDMA_READ_RESPONSE_LAST;
		else
			p.opcode = XR_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
	}
	p.psn = res->next_psn;
	p.payload_len = len;
	if (!built(e, qp, &p, f))
		return false;
	if (len)
		xr_dma_read(mr, res->stream_va + off, f->data + p.payload_off, len);
	xr_tx_commit(e, tx, f, &p);
	xr_cc_sent(e, qp, now, f->len);
	res->next_psn = psn_add(res->next_psn, 1);
	if (idx + 1 >= n && res->redo) {
		/* A duplicate came for responses that left: its replay goes on
		 * from here, ahead of anything queued after the READ. */
		res->redo = false;
		res->replay = true;
		xr_rd_stream_from(res, res->redo_psn, res->redo_va, res->redo_len);
	} else if (idx + 1 >= n) {
		res->queued = false;
		xr_resp_q_pop(&qp->resp);
	}
	return true;
}

static bool fatal_pending(struct xr_qp *qp)
{
	for (unsigned i = 0; i < qp->resp.q_len; i++)
		if (xr_resp_q_at(qp, i)->fatal)
			return true;
	return false;
}

bool xr_resp_send_queued(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx)
{
	struct xr_resp *rs = &qp->resp;

	while (rs->q_len) {
		struct xr_resp_item *it = xr_resp_q_at(qp, 0);
		if (qp->ctx.state == XR_QPS_ERR && !fatal_pending(qp)) {
			/* In ERR the responses owed before the fatal NAK still
			 * leave, then the NAK; nothing after it. */
			xr_resp_flush(qp);
			return false;
		}
		if (it->kind == XR_ITEM_CANCELLED) {
			xr_resp_q_pop(rs);
		} else if (it->kind == XR_ITEM_ACK) {
			if (!send_ack(e, qp, it, tx))
				return false;
			xr_resp_q_pop(rs);
		} else if (!send_response(e, qp, it, tx)) {
			return false;
		}
	}
	return true;
}

/* ---- requests held behind READ responses ---- */

/* A33 (rxe get_req/read_reply): a READ's responses are built in full, from
 * the memory as it is then, before the next request runs. A request that
 * arrives while they cannot all be built (the link pushes back, or they are
 * more than a burst) waits here, a copy of it, and so does everything behind
 * it on the QP (their PSNs are classified when they run). Frames go back to
 * the link at once; a request that finds no room is dropped unexecuted and
 * counted (rx_drop_resp_busy): the requester sends it again. The copies
 * (struct xr_resp_held, resp.h) are part of the QP's active block. */
void xr_resp_hold(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_resp *rs = &qp->resp;
	struct xr_qp_act *a = qp->act;
	struct xr_resp_held *h;
	uint32_t n = p->payload_len < XR_RESP_HELD_BYTES ? p->payload_len : XR_RESP_HELD_BYTES;

	if (!a->held) {   /* only for a QP that needs it, until it is idle again */
		/* Not for a packet whose check is still to come (gather.c):
		 * checked where it lies, then. */
		if (!xr_icrc_defer_check(e, p, p->payload))
			return;
		a->held = calloc(XR_RESP_HELD, sizeof(*a->held));
		if (a->held)
			atomic_fetch_add(&e->qp_mem.act_bytes, XR_RESP_HELD * sizeof(*a->held));
		else
			xr_count(e, XR_CNT_QP_MEM_FAIL, 1);
	}
	if (!a->held || rs->held_len == XR_RESP_HELD) {
		/* A check still to come (gather.c) comes first: a bad packet
		 * counts only as that (the pass counts it). */
		if (xr_icrc_defer_check(e, p, p->payload))
			xr_count(e, XR_CNT_DROP_RESP_BUSY, 1);
		return;
	}
	h = &a->held[(rs->held_head + rs->held_len) % XR_RESP_HELD];
	h->pkt = *p;
	memcpy(h->data, p->payload, n);
	h->pkt.payload = h->data;
	/* A check left to the payload's copy (gather.c) is of this one. */
	if (xr_icrc_defer_check(e, p, h->data))
		rs->held_len++;
}

/* Runs held requests until one must wait again. */
static void run_held(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;

	while (rs->held_len && qp->ctx.state != XR_QPS_ERR && xr_resp_q_has_room(rs)) {
		struct xr_resp_held *h = &qp->act->held[rs->held_head];
		if (xr_resp_must_wait(qp, &h->pkt))
			return;
		rs->held_head = (uint8_t)((rs->held_head + 1) % XR_RESP_HELD);
		rs->held_len--;
		xr_resp_run(e, qp, &h->pkt);
	}
	if (qp->ctx.state == XR_QPS_ERR)
		rs->held_len = 0;
}

void xr_resp_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx)
{
	/* Each round empties the queue and then runs at least one request. */
	while (xr_resp_send_queued(e, qp, tx) && qp->resp.held_len)
		run_held(e, qp);
}

bool xr_resp_has_work(const struct xr_qp *qp)
{
	return qp->resp.q_len != 0 || qp->resp.held_len != 0;
}

/* Drops what is owed after the last fatal NAK (everything, without one):
 * the fatal NAK and what its requester is owed before it still leave. */
void xr_resp_flush(struct xr_qp *qp)
{
	struct xr_resp *rs = &qp->resp;
	unsigned keep = 0;

	for (unsigned i = 0; i < rs->q_len; i++)
		if (xr_resp_q_at(qp, i)->fatal)
			keep = i + 1;
	for (unsigned i = keep; i < rs->q_len; i++)
		if (xr_resp_q_at(qp, i)->kind == XR_ITEM_RES)
			rs->res[xr_resp_q_at(qp, i)->res].queued = false;
	rs->q_len = (uint8_t)keep;
	rs->held_len = 0;
}
