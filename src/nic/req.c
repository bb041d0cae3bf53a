/* SPDX-License-Identifier: MIT */
/*
 * The requester: takes WQEs from the send queue and turns them into
 * packets. Messages are segmented FIRST/MIDDLE/LAST (or ONLY); each packet
 * takes one PSN and a READ of N response packets takes N; AckReq goes on
 * every message's last packet and after 64 packets without one; at most
 * 129 PSNs are unacknowledged (rxe's 128 beyond the oldest) and max_rd_atomic
 * READs/atomics outstanding.
 * Retransmission rewinds to a PSN, reusing the original PSNs and resuming
 * mid-message (a partly answered READ is re-requested for what is left).
 */
#include <string.h>

#include "engine.h"

#define MAX_UNACKED_PSNS 128
#define MAX_PKTS_PER_ACK 64

static bool is_rd_atomic(uint8_t wr)
{
	return wr == XR_WR_RDMA_READ || wr == XR_WR_ATOMIC_CMP_AND_SWP || wr == XR_WR_ATOMIC_FETCH_AND_ADD;
}

static uint32_t packets_of(const struct xr_hw_wqe *w, uint32_t mtu)
{
	if (w->opcode == XR_WR_ATOMIC_CMP_AND_SWP || w->opcode == XR_WR_ATOMIC_FETCH_AND_ADD)
		return 1;
	/* mtu is a power of two: a shift, not a division, per WQE. */
	return w->length ? (uint32_t)(((uint64_t)w->length + mtu - 1) >> __builtin_ctz(mtu)) : 1;
}

static uint64_t ack_timeout_ns(uint8_t timeout)
{
	return timeout ? 4096ull << timeout : 0;   /* 4.096 us x 2^timeout */
}

void xr_req_arm_timer(struct xr_qp *qp, uint64_t now)
{
	uint64_t t = ack_timeout_ns(qp->ctx.timeout);
	qp->req.timer_due_ns = t ? now + t : 0;
}

/* The WR opcodes a transport carries (B30, E7; UD: SEND and SEND_WITH_IMM). */
static bool opcode_allowed(uint8_t type, uint8_t wr)
{
	bool send_write = wr == XR_WR_SEND || wr == XR_WR_SEND_WITH_IMM || wr == XR_WR_RDMA_WRITE ||
			  wr == XR_WR_RDMA_WRITE_WITH_IMM;

	if (type == XR_QPT_UD)
		return wr == XR_WR_SEND || wr == XR_WR_SEND_WITH_IMM;
	if (type == XR_QPT_UC)
		return send_write || wr == XR_WR_LOCAL_INV || wr == XR_WR_BIND_MW;
	return true;
}

/* What a WQE must satisfy before its first packet; 0 or a WC status. */
static int check_wqe(struct xr_engine *e, struct xr_qp *qp, const struct xr_hw_wqe *w)
{
	uint64_t sum = 0;   /* 32 bits wrap: SGEs of regions of 4 GiB and more */

	if (!opcode_allowed(qp->ctx.type, w->opcode))
		return XR_WC_LOC_QP_OP_ERR;

	switch (w->opcode) {
	case XR_WR_RDMA_WRITE: case XR_WR_RDMA_WRITE_WITH_IMM: case XR_WR_SEND:
	case XR_WR_SEND_WITH_IMM: case XR_WR_SEND_WITH_INV: case XR_WR_RDMA_READ:
		break;
	case XR_WR_ATOMIC_CMP_AND_SWP: case XR_WR_ATOMIC_FETCH_AND_ADD:
		if (w->length != 8 || (w->flags & XR_SEND_INLINE))
			return XR_WC_LOC_LEN_ERR;
		break;
	default:
		return XR_WC_LOC_QP_OP_ERR;
	}
	if (w->flags & XR_SEND_INLINE) {
		if (w->opcode == XR_WR_RDMA_READ || w->length > XR_WQE_BODY(qp->ctx.sq_wqe_blocks))
			return XR_WC_LOC_LEN_ERR;
		return 0;
	}
	if (w->num_sge > xr_sq_sge_room(qp))
		return XR_WC_LOC_LEN_ERR;
	for (unsigned i = 0; i < w->num_sge; i++) {
		const struct xr_sge *s = &xr_wqe_sges(w)[i];
		uint32_t need = (w->opcode == XR_WR_RDMA_READ || is_rd_atomic(w->opcode)) ? XR_ACCESS_LOCAL_WRITE : 0;
		struct xr_mr *mr;
		if (s->length && xr_dma_check(e, s->lkey, qp->ctx.pd, s->addr, s->length, need, &mr) != XR_DMA_OK)
			return XR_WC_LOC_PROT_ERR;
		sum += s->length;
	}
	if (sum != w->length)
		return XR_WC_LOC_LEN_ERR;
	return 0;
}

/* LOCAL_INV and BIND_MW run in the requester, in order, without a packet:
 * 0 or the WC status of the failure (rxe_do_local_ops). */
static int local_op(struct xr_engine *e, struct xr_qp *qp, const struct xr_hw_wqe *w)
{
	if (w->opcode == XR_WR_BIND_MW)
		return xr_mw_bind(e, qp->ctx.pd, qp->qpn, w) ? XR_WC_MW_BIND_ERR : 0;
	/* Only a bound type-2 window may be invalidated: an ordinary region
	 * fails the WQE and stays registered (rxe_invalidate_mr). */
	if (xr_mr_invalidate_key(e, w->imm_data, qp->ctx.pd, false, qp->qpn)) {
		xr_count(e, XR_CNT_INV_REFUSED, 1);
		return XR_WC_LOC_QP_OP_ERR;
	}
	return 0;
}

/* Recounts READs/atomics in flight before index `upto` (after a rewind). */
static void recount_rd_atomic(struct xr_qp *qp, uint16_t upto)
{
	uint32_t n = 0;

	for (uint16_t i = qp->req.tail; i != upto; i++)
		if (is_rd_atomic(xr_sq_meta(qp, i)->opcode))
			n++;
	qp->req.rd_atomic_out = n;
}

/* A WQE read again from the ring to be resent (as a NIC fetches it
 * again) must be the one started: the host may not touch it before its
 * completion, but a buggy one can, and its length and SGE count bound
 * what the packets read of the copy. One that changed fails
 * (LOC_QP_OP_ERR), and the send queue. */
static bool reread_ok(struct xr_engine *e, struct xr_qp *qp, uint16_t i)
{
	const struct xr_hw_wqe *w = &qp->act->cur_wqe;
	struct xr_swqe_meta *m = xr_sq_meta(qp, i);

	if (w->opcode == m->opcode && w->flags == m->flags && w->length == m->length &&
	    ((w->flags & XR_SEND_INLINE) || w->num_sge <= xr_sq_sge_room(qp)))
		return true;
	m->status = XR_WC_LOC_QP_OP_ERR;
	qp->req.cur_active = false;
	xr_qp_to_sq_error(e, qp, XR_WC_LOC_QP_OP_ERR);
	return false;
}

/* Go-back-N: the next packet sent is PSN `psn`, of whichever WQE holds it. */
static void rewind_to(struct xr_engine *e, struct xr_qp *qp, uint32_t psn)
{
	struct xr_req *r = &qp->req;
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);

	for (uint16_t i = r->tail; i != r->head; i++) {
		struct xr_swqe_meta *m = xr_sq_meta(qp, i);
		if (psn_cmp(psn, m->first_psn) < 0 || psn_cmp(psn, m->last_psn) > 0)
			continue;
		xr_sq_copy(qp, &qp->act->cur_wqe, xr_sq_slot(qp, i));
		if (!reread_ok(e, qp, i))
			return;
		r->cur = i;
		r->cur_active = true;
		r->cur_psn = psn;
		r->cur_offset = ((psn - m->first_psn) & XR_PSN_MASK) * mtu;
		r->head = (uint16_t)(i + 1);
		recount_rd_atomic(qp, i);
		if (is_rd_atomic(m->opcode))
			r->rd_atomic_out++;
		xr_count(e, XR_CNT_RETRANSMITS, 1);
		xr_evlog_add(e, XR_EV_RETRANSMIT, qp->qpn, psn, 0);
		return;
	}
}

void xr_req_retransmit(struct xr_engine *e, struct xr_qp *qp, uint32_t from_psn)
{
	(void)e;
	qp->req.retx_pending = true;
	qp->req.retx_psn = from_psn;
}

/* Notes that every WQE before head has been started at least once. */
static void note_started(struct xr_req *r)
{
	if ((uint16_t)(r->head - r->tail) > (uint16_t)(r->started_end - r->tail))
		r->started_end = r->head;
}

/* Starts the WQE at head; false when it cannot start yet. */
static bool start_wqe(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_req *r = &qp->req;
	const struct xr_hw_wqe *w = xr_sq_slot(qp, r->head);
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);
	struct xr_swqe_meta *m;
	int err = 0;

	/* The WQE copy and its metadata live in the active block. */
	if (!xr_qp_act_get(e, qp))
		return false;   /* no memory: the WQE waits, the QP stays busy */
	m = xr_sq_meta(qp, r->head);
	xr_sq_copy(qp, &qp->act->cur_wqe, w);
	if (!m->started) {   /* else restarted after a rewind: same PSNs as the first time */
		w = &qp->act->cur_wqe;
		bool local = (w->opcode == XR_WR_LOCAL_INV || w->opcode == XR_WR_BIND_MW) &&
			     opcode_allowed(qp->ctx.type, w->opcode);
		if (local || (err = check_wqe(e, qp, w)) != 0) {
			/* Runs (or fails) in order: wait until everything before it completed. */
			struct xr_wc_info wc = { .wr_id = w->wr_id, .opcode = xr_wc_opcode_of_wr(w->opcode),
						 .wqe_index = r->head };
			if (r->tail != r->head)
				return false;
			wc.status = (uint8_t)(local ? local_op(e, qp, w) : err);
			if (wc.status == XR_WC_SUCCESS && !(w->flags & XR_SEND_SIGNALED)) {
				/* unsignaled success: no CQE */
			} else {
				/* Its success hands back the buffers of the WRs
				 * completed silently before it, which carry no check of
				 * their own (xr_dp_gather_check): local operations are
				 * rare, so settle. */
				if (wc.status == XR_WC_SUCCESS)
					xr_dp_settle(e);
				xr_complete(e, qp, qp->ctx.sq_cqn, &wc, false);
			}
			r->head++;
			/* Runs alone (tail == head): nothing beyond it was started. */
			r->tail = r->started_end = r->head;
			qp->ctx.sq_ci = r->tail;
			if (wc.status != XR_WC_SUCCESS)
				xr_qp_to_sq_error(e, qp, wc.status);
			return wc.status == XR_WC_SUCCESS;
		}
		if ((w->flags & XR_SEND_FENCE) && r->rd_atomic_out)
			return false;
		m->opcode = w->opcode;
		m->flags = w->flags;
		m->length = w->length;
		m->status = 0;
		m->read_done = 0;
		m->first_psn = qp->ctx.sq_psn;
		/* UD: one packet, whatever the length (an oversize one is not sent, D1) */
		m->last_psn = psn_add(m->first_psn, qp->ctx.type == XR_QPT_UD ? 0 : packets_of(w, mtu) - 1);
		m->started = true;
		if (is_rd_atomic(w->opcode))
			r->rd_atomic_started++;
		qp->ctx.sq_psn = psn_add(m->last_psn, 1);
		xr_count_pass(e, XR_CNT_SQ_WQES, 1);
		if (w->opcode == XR_WR_SEND || w->opcode == XR_WR_SEND_WITH_IMM || w->opcode == XR_WR_SEND_WITH_INV)
			xr_count_pass(e, XR_CNT_RDMA_SENDS, 1);
	}
	if (is_rd_atomic(m->opcode)) {
		/* max_rd_atomic 0 lets none out: the WQE waits, and the send
		 * queue behind it, until a modify raises the limit or the QP
		 * fails (B5, rxe check_init_depth; no error completion). */
		if (r->rd_atomic_out >= qp->ctx.max_rd_atomic)
			return false;
		r->rd_atomic_out++;
	}
	r->cur = r->head++;
	note_started(r);
	r->cur_active = true;
	r->cur_offset = 0;
	r->cur_psn = m->first_psn;
	return true;
}

static uint8_t send_opcode(uint8_t wr, bool first, bool last)
{
	bool write = wr == XR_WR_RDMA_WRITE || wr == XR_WR_RDMA_WRITE_WITH_IMM;

	if (first && last) {
		switch (wr) {
		case XR_WR_RDMA_WRITE: return XR_OP_RC_RDMA_WRITE_ONLY;
		case XR_WR_RDMA_WRITE_WITH_IMM: return XR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
		case XR_WR_SEND_WITH_IMM: return XR_OP_RC_SEND_ONLY_WITH_IMMEDIATE;
		case XR_WR_SEND_WITH_INV: return XR_OP_RC_SEND_ONLY_WITH_INVALIDATE;
		default: return XR_OP_RC_SEND_ONLY;
		}
	}
	if (first)
		return write ? XR_OP_RC_RDMA_WRITE_FIRST : XR_OP_RC_SEND_FIRST;
	if (!last)
		return write ? XR_OP_RC_RDMA_WRITE_MIDDLE : XR_OP_RC_SEND_MIDDLE;
	switch (wr) {
	case XR_WR_RDMA_WRITE: return XR_OP_RC_RDMA_WRITE_LAST;
	case XR_WR_RDMA_WRITE_WITH_IMM: return XR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE;
	case XR_WR_SEND_WITH_IMM: return XR_OP_RC_SEND_LAST_WITH_IMMEDIATE;
	case XR_WR_SEND_WITH_INV: return XR_OP_RC_SEND_LAST_WITH_INVALIDATE;
	default: return XR_OP_RC_SEND_LAST;
	}
}

/* The payload may leave by reference (a gather frame, link.h) on a link
 * that carries them: an RC packet, whose WQE completes only once the peer
 * has read it, sent for the first time (a retransmission may still be
 * queued behind the acknowledged original when the buffer is handed
 * back), large enough to be worth it. */
static bool may_gather(const struct xr_engine *e, const struct xr_qp *qp, const struct xr_pkt *p, uint32_t len)
{
	return e->link->gather && qp->ctx.type == XR_QPT_RC && len >= XR_TX_SEAL_LATE_MIN && !p->udp_csum &&
	       psn_cmp(p->psn, qp->req.sent_end) >= 0;
}

/* Sends the next packet of the current WQE; false when it could not. */
static bool send_packet(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx, uint64_t now)
{
	struct xr_req *r = &qp->req;
	const struct xr_hw_wqe *w = &qp->act->cur_wqe;
	struct xr_swqe_meta *m = xr_sq_meta(qp, r->cur);
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);
	struct xr_frame *f;
	struct xr_pkt p;
	uint32_t len = 0;
	bool last = true;

	if (qp->ctx.type == XR_QPT_UD && w->length > mtu) {
		/* D1 (C10-93.1.1, as rxe): nothing is sent, the PSN is used up
		 * and the WQE completes SUCCESS. Counted, so it is never silent. */
		xr_count(e, XR_CNT_UD_SEND_OVERSIZE, 1);
		r->cur_active = false;
		r->cur_psn = psn_add(m->last_psn, 1);
		return true;
	}
	/* A UD packet's addresses are its WQE's; a connection's its template's. */
	f = qp->ctx.type == XR_QPT_UD ? xr_tx_begin(e, tx, qp, &p) : xr_tx_begin_conn(e, tx, qp, &p);
	if (!f)
		return false;
	if (qp->ctx.type == XR_QPT_UD)
		xr_ud_address(e, qp, w, &p);
	p.psn = r->cur_psn;
	switch (w->opcode) {
	case XR_WR_RDMA_READ:
		/* One request for whatever is still to come back. */
		p.opcode = XR_OP_RC_RDMA_READ_REQUEST;
		p.reth.va = w->remote_addr + r->cur_offset;
		p.reth.rkey = w->rkey;
		p.reth.len = w->length - r->cur_offset;
		break;
	case XR_WR_ATOMIC_CMP_AND_SWP:
	case XR_WR_ATOMIC_FETCH_AND_ADD:
		p.opcode = w->opcode == XR_WR_ATOMIC_CMP_AND_SWP ? XR_OP_RC_COMPARE_SWAP : XR_OP_RC_FETCH_ADD;
		p.atomic.va = w->remote_addr;
		p.atomic.rkey = w->rkey;
		if (w->opcode == XR_WR_ATOMIC_CMP_AND_SWP) {
			p.atomic.compare = w->compare_add;
			p.atomic.swap_add = w->swap;
		} else {
			p.atomic.swap_add = w->compare_add;
		}
		break;
	default: {
		bool first = r->cur_offset == 0;
		len = w->length - r->cur_offset;
		if (len > mtu)
			len = mtu;
		last = r->cur_offset + len == w->length;
		p.opcode = send_opcode(w->opcode, first, last);
		p.reth.va = w->remote_addr;
		p.reth.rkey = w->rkey;
		p.reth.len = w->length;
		p.imm = w->imm_data;
		p.ieth_rkey = w->imm_data;
		p.se = last && (w->flags & XR_SEND_SOLICITED) &&
		       (w->opcode == XR_WR_SEND || w->opcode == XR_WR_SEND_WITH_IMM ||
			w->opcode == XR_WR_SEND_WITH_INV || w->opcode == XR_WR_RDMA_WRITE_WITH_IMM);
	}
	}
	if (qp->ctx.type == XR_QPT_UD)
		p.opcode = w->opcode == XR_WR_SEND_WITH_IMM ? XR_OP_UD_SEND_ONLY_WITH_IMMEDIATE : XR_OP_UD_SEND_ONLY;
	else if (qp->ctx.type == XR_QPT_UC)
		p.opcode = (uint8_t)(p.opcode | XR_TRANSPORT_UC << 5);   /* the same operation, UC's opcode */
	p.payload_len = len;
	/* AckReq only on RC: UC and UD are never acknowledged (B3). */
	/* A paced QP also asks every eighth of its ACK timeout: a message
	 * that takes longer to pace out than the timer runs would time out
	 * before its last packet asks for an ACK. */
	p.ackreq = qp->ctx.type == XR_QPT_RC &&
		   (last || r->since_ackreq + 1 >= MAX_PKTS_PER_ACK ||
		    (xr_cc_paced(qp) && qp->ctx.timeout &&
		     now - r->ackreq_ns >= ack_timeout_ns(qp->ctx.timeout) / 8));
	if ((qp->ctx.type == XR_QPT_UD ? xr_pkt_build_hdrs(&p, f->data, sizeof(f->data))
				       : xr_tx_build_conn(qp, &p, f)) < 0) {
		xr_link_frame_free(e->link, f);
		m->status = XR_WC_LOC_QP_OP_ERR;
		return false;
	}
	if (len) {
		int err = 0;
		const uint8_t *src = NULL;
		if (w->flags & XR_SEND_INLINE)
			memcpy(f->data + p.payload_off, xr_wqe_inline(w) + r->cur_offset, len);
		else if (may_gather(e, qp, &p, len) &&
			 !(err = xr_sgl_map(e, qp->ctx.pd, xr_wqe_sges(w), w->num_sge, r->cur_offset, len, &src)) && src) {
			xr_frame_set_gather(f, p.payload_off, src, len);
			f->gather_seq = ++e->gather_seq ? e->gather_seq : ++e->gather_seq;   /* never 0 */
			qp->act->gather_f = f;
			qp->act->gather_seq = f->gather_seq;
		} else if (!err)
			err = xr_sgl_read(e, qp->ctx.pd, xr_wqe_sges(w), w->num_sge, r->cur_offset, f->data + p.payload_off, len);
		if (err) {
			/* The region went away under a posted WQE: fail it in order. */
			xr_link_frame_free(e->link, f);
			m->status = (uint8_t)err;
			r->cur_active = false;
			xr_qp_to_sq_error(e, qp, (uint8_t)err);
			return false;
		}
	}
	xr_tx_commit(e, tx, f, &p);
	/* What this WQE's success must find read (xr_dp_gather_check); a QP
	 * that never sent by reference has nothing to record. */
	if (qp->act->gather_f) {
		m->gather_f = qp->act->gather_f;
		m->gather_seq = qp->act->gather_seq;
	}
	xr_cc_sent(e, qp, now, f->len);
	{
		/* Responses may now carry PSNs up to this packet's (a READ's: up
		 * to its last response); anything later is forged or stale. */
		uint32_t end = is_rd_atomic(w->opcode) ? psn_add(m->last_psn, 1) : psn_add(p.psn, 1);
		if (psn_cmp(end, r->sent_end) > 0)
			r->sent_end = end;
	}
	r->since_ackreq = p.ackreq ? 0 : r->since_ackreq + 1;
	if (p.ackreq)
		r->ackreq_ns = now;
	if (!r->timer_due_ns && qp->ctx.type == XR_QPT_RC)
		xr_req_arm_timer(qp, now);
	if (w->opcode == XR_WR_RDMA_READ || w->opcode == XR_WR_ATOMIC_CMP_AND_SWP ||
	    w->opcode == XR_WR_ATOMIC_FETCH_AND_ADD || last) {
		r->cur_active = false;
		r->cur_psn = psn_add(m->last_psn, 1);
	} else {
		r->cur_offset += len;
		r->cur_psn = psn_add(r->cur_psn, 1);
	}
	return true;
}

/* UC and UD: a WQE is done once its last packet has left (E1); nothing
 * will acknowledge it. WQEs run one at a time, so it is the tail. */
static void complete_unacked(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_req *r = &qp->req;
	struct xr_swqe_meta *m = xr_sq_meta(qp, r->tail);

	if (m->flags & XR_SEND_SIGNALED) {
		struct xr_wc_info wc = { .wr_id = qp->act->cur_wqe.wr_id, .status = XR_WC_SUCCESS,
					 .opcode = xr_wc_opcode_of_wr(m->opcode), .byte_len = qp->act->cur_wqe.length,
					 .wqe_index = r->tail };
		xr_complete(e, qp, qp->ctx.sq_cqn, &wc, false);
	}
	memset(m, 0, sizeof(*m));
	r->tail++;
	qp->ctx.sq_ci = r->tail;
	r->una_psn = r->sent_end = r->cur_psn;
}

/* A real NIC's doorbell is a posted write: nobody hears of a bad one
 * until the NIC reads the ring, so the send queue fails then, as for a
 * WQE it cannot run (the event log's qp_error names the status; no WQE
 * completes with it). The WQEs up to the last good index the engine read
 * are flushed; those the bad one names beyond them are not WQEs the
 * engine can tell apart from old ones, and nothing of them runs. */
uint16_t xr_req_pi(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_req *r = &qp->req;
	uint16_t pi = __atomic_load_n(&qp->sq_pi, __ATOMIC_ACQUIRE);

	if (xr_sq_pi_fits(qp, pi)) {
		r->refused = false;   /* a later doorbell: the next bad one counts again */
		return r->pi_ok = pi;
	}
	if (!xr_sq_still_refused(qp, pi)) {   /* once per doorbell */
		r->refused = true;
		r->pi_refused = pi;
		r->rings_refused = __atomic_load_n(&qp->sq_rings, __ATOMIC_RELAXED);
		xr_count(e, XR_CNT_SQ_DOORBELL_REFUSED, 1);
		/* Already failed (a flush reads it): a UD/UC QP in SQE keeps
		 * its receive side. */
		if (qp->ctx.state == XR_QPS_RTS || qp->ctx.state == XR_QPS_SQD)
			xr_qp_to_sq_error(e, qp, XR_WC_LOC_QP_OP_ERR);
	}
	return r->pi_ok;
}

void xr_req_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx, uint64_t now)
{
	struct xr_req *r = &qp->req;

	if (!qp->ctx.sq_log_size || !qp->ctx.sq_base)
		return;
	if (r->rnr_due_ns) {
		if (now < r->rnr_due_ns)
			return;
		r->rnr_due_ns = 0;
		xr_req_arm_timer(qp, now);   /* stopped during the wait (comp.c) */
	}
	if (r->retx_pending) {
		r->retx_pending = false;
		rewind_to(e, qp, r->retx_psn);
	}
	if (qp->ctx.state == XR_QPS_RTS)
		r->drained_logged = false;
	for (;;) {
		if (!r->cur_active) {
			/* SQD: finish what started (all of it again after a
			 * rewind), start nothing new. */
			bool restart = r->head != r->started_end;
			uint16_t pi = xr_req_pi(e, qp);
			if (qp->ctx.state != XR_QPS_RTS && qp->ctx.state != XR_QPS_SQD)
				return;   /* the index failed the send queue */
			if (r->head == pi || (qp->ctx.state != XR_QPS_RTS && !restart)) {
				if (qp->ctx.state == XR_QPS_SQD && r->tail == r->started_end && !r->drained_logged) {
					r->drained_logged = true;
					xr_dp_settle(e);   /* every WR done: their buffers go back, as above */
					xr_evlog_add(e, XR_EV_SQ_DRAINED, qp->qpn, 0, 0);
				}
				return;
			}
			if (!start_wqe(e, qp))
				return;
			if (!r->cur_active)
				continue;   /* a LOCAL_INV ran */
			if (restart && !reread_ok(e, qp, r->cur))
				return;   /* read again after a rewind, and rewritten */
		}
		/* As rxe: no packet more than 128 PSNs beyond the oldest
		 * unacknowledged one, so 129 in flight (B2). */
		if (qp->ctx.type == XR_QPT_RC && psn_cmp(r->cur_psn, psn_add(r->una_psn, MAX_UNACKED_PSNS)) > 0)
			return;   /* window full */
		if (!xr_cc_may_send(e, qp, now))
			return;   /* the pacer: served again on a later pass */
		if (!send_packet(e, qp, tx, now))
			return;
		if (qp->ctx.type != XR_QPT_RC && !r->cur_active)
			complete_unacked(e, qp);
	}
}
