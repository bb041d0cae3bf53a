/* SPDX-License-Identifier: MIT */
/*
 * The completer: the requester's receive side. ACKs are cumulative and
 * complete SEND/WRITE WQEs up to their PSN; READ and atomic WQEs complete
 * only through their own responses (which also acknowledge everything
 * before them). NAKs and timeouts send the requester back (go-back-N);
 * retry_cnt and rnr_retry bound that. rnr_retry 7 means infinite (IBTA);
 * retry_cnt 7 means seven retries, so a dead peer is detected, unless
 * CTRL.retry7_forever asks for rxe's reading (retry_cnt 7 = infinite,
 * which perftest and rc_pingpong ask for against rxe). When they run out,
 * or on a fatal NAK, the WQE fails and the QP goes to ERR. ACKs, NAKs and
 * responses outside the outstanding window change nothing and are counted.
 */
#include <string.h>

#include "engine.h"

#define RETRY_INFINITE 7   /* for retry_cnt and rnr_retry */

/* RNR NAK timer codes in microseconds (IBTA table 45; code 0 = 655.36 ms). */
static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

void xr_req_arm_timer(struct xr_qp *qp, uint64_t now);

/* Only a WQE started (in [tail, started_end)) is looked at: the QP has
 * its active block while there is one. */
static struct xr_swqe_meta *meta_at(struct xr_qp *qp, uint16_t i)
{
	return xr_sq_meta(qp, i);
}

static bool is_rd_atomic(uint8_t wr)
{
	return wr == XR_WR_RDMA_READ || wr == XR_WR_ATOMIC_CMP_AND_SWP || wr == XR_WR_ATOMIC_FETCH_AND_ADD;
}

/* A WQE is outstanding from its start until it completes: [tail,
 * started_end). Not [tail, head): a rewind moves head back, and the WQEs
 * it passes stay outstanding. */
static bool outstanding(const struct xr_req *r)
{
	return r->tail != r->started_end;
}

/* Completes the WQE at the tail with status. */
static void complete_tail(struct xr_engine *e, struct xr_qp *qp, uint8_t status, uint32_t byte_len)
{
	struct xr_req *r = &qp->req;
	struct xr_swqe_meta *m = meta_at(qp, r->tail);
	const struct xr_hw_wqe *w = xr_sq_slot(qp, r->tail);

	if (status != XR_WC_SUCCESS || (m->flags & XR_SEND_SIGNALED)) {
		struct xr_wc_info wc = { .wr_id = w->wr_id, .status = status,
					 .opcode = xr_wc_opcode_of_wr(m->opcode), .byte_len = byte_len,
					 .wqe_index = r->tail };
		/* The host may reuse this WQE's buffers and every earlier one's
		 * (an error completion settles in xr_complete). */
		if (status == XR_WC_SUCCESS && m->gather_f)
			xr_dp_gather_check(e, m->gather_f, m->gather_seq);
		xr_complete(e, qp, qp->ctx.sq_cqn, &wc, false);
	}
	if (is_rd_atomic(m->opcode) && r->rd_atomic_out)
		r->rd_atomic_out--;
	if (is_rd_atomic(m->opcode) && r->rd_atomic_started)
		r->rd_atomic_started--;
	if (r->cur_active && r->cur == r->tail)
		r->cur_active = false;   /* its resend is not needed */
	memset(m, 0, sizeof(*m));
	r->tail++;
	qp->ctx.sq_ci = r->tail;
	/* A resend stuck behind it (a rewind whose point the peer has since
	 * acknowledged) restarts from the oldest WQE still outstanding. */
	if ((uint16_t)(r->head - r->tail) > (uint16_t)(r->started_end - r->tail))
		r->head = r->tail;
}

/* Fails the WQE at the tail and the QP with it. */
static void fail_tail(struct xr_engine *e, struct xr_qp *qp, uint8_t status)
{
	if (outstanding(&qp->req))   /* also when rewound behind it */
		complete_tail(e, qp, status, 0);
	xr_qp_to_error(e, qp, status);
}

static bool retry_forever(struct xr_engine *e, struct xr_qp *qp)
{
	return qp->ctx.retry_cnt == RETRY_INFINITE && (xr_reg_get(e, XR_REG_CTRL) & XR_CTRL_RETRY7_FOREVER);
}

/* Where a response's PSN lies: in the outstanding window [una, sent_end),
 * stale (before it: a duplicate) or beyond anything sent (forged or from
 * an earlier life of the connection). The last two are counted. */
static bool in_window(struct xr_engine *e, struct xr_qp *qp, uint32_t psn, bool stale_ok)
{
	struct xr_req *r = &qp->req;

	if (psn_cmp(psn, r->sent_end) >= 0) {
		xr_count(e, XR_CNT_DROP_RESP_WINDOW, 1);
		return false;
	}
	if (!stale_ok && psn_cmp(psn, r->una_psn) < 0) {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		return false;
	}
	return true;
}

/* The peer answered up to (not including) next: the retry budgets start over. */
static void made_progress(struct xr_qp *qp, uint32_t next)
{
	struct xr_req *r = &qp->req;

	r->una_psn = next;
	r->retried = false;
	r->retry_left = qp->ctx.retry_cnt;
	if (qp->ctx.rnr_retry != RETRY_INFINITE)
		r->rnr_left = qp->ctx.rnr_retry;
}

static uint32_t tail_expected_psn(struct xr_qp *qp);

/* Everything up to psn is acknowledged: SEND/WRITE WQEs complete. A READ
 * or atomic still waiting for its response holds the acknowledged PSN
 * back: an ACK beyond it says its response was lost, not that it is done.
 * A WQE being sent again after a rewind completes too once it was sent in
 * full before (the head then moves past it), so a NAK's WQE is always the
 * tail once this ran for the PSN before it (B17). */
static void ack_upto(struct xr_engine *e, struct xr_qp *qp, uint32_t psn)
{
	struct xr_req *r = &qp->req;
	uint32_t next = psn_add(psn, 1);

	while (outstanding(r)) {
		struct xr_swqe_meta *m = meta_at(qp, r->tail);
		if (!m->started || is_rd_atomic(m->opcode) || psn_cmp(m->last_psn, psn) > 0)
			break;
		if (psn_cmp(r->sent_end, m->last_psn) <= 0)
			break;   /* not even fully sent yet (a stray ACK) */
		/* byte_len: the WR's length (B23, rxe make_send_cqe) */
		complete_tail(e, qp, XR_WC_SUCCESS, m->length);
	}
	/* Not past the first READ/atomic still waiting, wherever it is: a
	 * WRITE being resent may stand before it, and after a rewind it may
	 * lie beyond head (started before, to be started again). */
	for (uint16_t i = r->tail; r->rd_atomic_started && i != r->started_end; i++) {
		struct xr_swqe_meta *m = meta_at(qp, i);
		if (is_rd_atomic(m->opcode)) {
			uint32_t wait = psn_add(m->first_psn, m->read_done / mtu_bytes(qp->ctx.path_mtu));
			if (psn_cmp(next, wait) > 0)
				next = wait;
			break;
		}
	}
	if (psn_cmp(next, r->una_psn) > 0)
		made_progress(qp, next);
}

/* Every packet sent is acknowledged: a WQE still being sent (held by its
 * pacer, say) has nothing on the wire to time out; its next packet starts
 * the timer again (send_packet). */
static bool nothing_unacked(const struct xr_req *r)
{
	return !r->retx_pending && psn_cmp(r->una_psn, r->sent_end) >= 0;
}

/* Nothing for the ACK timer to wait for: no WQE outstanding and no resend
 * under way, or every PSN sent acknowledged. */
static bool timer_idle(const struct xr_req *r)
{
	return (!outstanding(r) && !r->cur_active) || nothing_unacked(r);
}

/* Timer bookkeeping after progress: stop when nothing is outstanding. */
static void rearm(struct xr_engine *e, struct xr_qp *qp)
{
	struct xr_req *r = &qp->req;

	if (timer_idle(r))
		r->timer_due_ns = 0;
	else
		xr_req_arm_timer(qp, xr_engine_now(e));
}

/* One retry from psn; false (and the QP failed) when retries are exhausted. */
static bool retry_from(struct xr_engine *e, struct xr_qp *qp, uint32_t psn)
{
	struct xr_req *r = &qp->req;

	r->retried = true;
	r->retried_psn = psn;
	if (retry_forever(e, qp)) {
		xr_req_retransmit(e, qp, psn);
		return true;
	}
	if (r->retry_left == 0) {
		xr_count(e, XR_CNT_RETRY_EXCEEDED, 1);
		fail_tail(e, qp, XR_WC_RETRY_EXC_ERR);
		return false;
	}
	r->retry_left--;
	xr_req_retransmit(e, qp, psn);
	return true;
}

static bool already_retrying(const struct xr_req *r, uint32_t psn)
{
	return r->retx_pending || (r->retried && r->retried_psn == psn);
}

/* PSN the tail READ/atomic expects next. */
static uint32_t tail_expected_psn(struct xr_qp *qp)
{
	struct xr_swqe_meta *m = meta_at(qp, qp->req.tail);
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu);
	return psn_add(m->first_psn, m->read_done / mtu);
}

/* A NAK or RNR NAK at a PSN beyond the oldest WQE, a READ or atomic still
 * waiting for its response (rxe check_psn: COMPST_ERROR_RETRY): that
 * response was lost. The NAK is not acted on; the requester goes back to
 * the READ (one retry, once per gap) and sends everything after it again,
 * so the NAKed request is answered again after the READ's response. */
static bool implied_nak(struct xr_engine *e, struct xr_qp *qp, uint32_t psn)
{
	struct xr_req *r = &qp->req;
	struct xr_swqe_meta *m;

	if (!outstanding(r))
		return false;
	m = meta_at(qp, r->tail);
	if (!is_rd_atomic(m->opcode) || psn_cmp(psn, m->last_psn) <= 0)
		return false;
	if (!already_retrying(r, tail_expected_psn(qp)) && retry_from(e, qp, tail_expected_psn(qp)))
		rearm(e, qp);
	return true;
}

static void rx_ack(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_req *r = &qp->req;
	uint8_t syn = p->aeth.syndrome, type = syn & XR_AETH_TYPE_MASK;
	uint32_t psn = p->psn;

	/* Beyond anything sent, or older than what is acknowledged: stale.
	 * (An ACK of una-1 repeats the last one: harmless, and an RNR NAK or
	 * NAK at una is in the window.) */
	if (!in_window(e, qp, psn, true))
		return;
	/* An error NAK at a request PSN of the oldest WQE, a READ partly
	 * answered (its first, or that of a retry for its tail), names it
	 * however far its responses got (B18). */
	bool read_nak = type == XR_AETH_NAK && syn != XR_AETH_NAK_PSN_SEQ && outstanding(r) &&
			meta_at(qp, r->tail)->opcode == XR_WR_RDMA_READ && meta_at(qp, r->tail)->read_done &&
			psn_cmp(psn, meta_at(qp, r->tail)->first_psn) >= 0;
	if ((psn_cmp(psn, psn_add(r->una_psn, XR_PSN_MASK)) < 0 && !read_nak) ||
	    (type != XR_AETH_ACK && (!outstanding(r) ||
				     psn_cmp(psn, meta_at(qp, r->tail)->first_psn) < 0))) {
		/* Stale; and a NAK must name a PSN of a WQE still outstanding
		 * (a READ is NAKed at its request PSN even after some of its
		 * responses, B18): anything older, or a NAK with nothing
		 * outstanding, is forged or from an earlier life. */
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		return;
	}
	switch (type) {
	case XR_AETH_ACK:
		xr_count_pass(e, XR_CNT_RX_ACK, 1);
		ack_upto(e, qp, psn);
		/* An ACK past a pending READ/atomic: its responses were lost (B10). */
		implied_nak(e, qp, psn);
		break;
	case XR_AETH_RNR_NAK:
		xr_count(e, XR_CNT_RX_RNR_NAK, 1);
		xr_evlog_add(e, XR_EV_NAK_RCVD, qp->qpn, syn, psn);
		ack_upto(e, qp, psn_add(psn, XR_PSN_MASK));
		if (implied_nak(e, qp, psn))
			return;
		if (qp->ctx.rnr_retry != RETRY_INFINITE) {
			if (r->rnr_left == 0) {
				xr_count(e, XR_CNT_RNR_RETRY_EXCEEDED, 1);
				fail_tail(e, qp, XR_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			r->rnr_left--;
		}
		r->rnr_due_ns = xr_engine_now(e) + 1000ull * rnr_timer_us[syn & XR_AETH_VALUE_MASK];
		/* The packets behind the RNR'd one draw a PSN-sequence NAK for
		 * the same PSN (A18): the same news, not another retry. */
		r->retried = true;
		r->retried_psn = psn;
		/* The peer is alive: no ACK timeout while waiting out its RNR
		 * timer; the timer restarts when the retry is sent. */
		r->timer_due_ns = 0;
		xr_req_retransmit(e, qp, psn);
		return;
	case XR_AETH_NAK:
		xr_evlog_add(e, XR_EV_NAK_RCVD, qp->qpn, syn, psn);
		xr_count(e, syn == XR_AETH_NAK_PSN_SEQ ? XR_CNT_RX_NAK_SEQ : syn == XR_AETH_NAK_INV_REQ ?
			    XR_CNT_RX_NAK_INV_REQ : syn == XR_AETH_NAK_REM_ACCESS ? XR_CNT_RX_NAK_REM_ACCESS :
			    XR_CNT_RX_NAK_REM_OP, 1);
		ack_upto(e, qp, psn_add(psn, XR_PSN_MASK));
		if (implied_nak(e, qp, psn))
			return;
		/* Everything before psn is complete: the tail holds psn. */
		switch (syn) {
		case XR_AETH_NAK_PSN_SEQ:
			/* A READ's PSNs are acknowledged by its responses only: a
			 * NAK inside its range sends N back to what it still
			 * misses, neither past it nor behind it. */
			if (is_rd_atomic(meta_at(qp, r->tail)->opcode) && psn_cmp(psn, tail_expected_psn(qp)) != 0)
				psn = tail_expected_psn(qp);
			/* One retry per gap: while it is under way, more NAKs for
			 * the same PSN are the same news (B14). */
			if (already_retrying(r, psn))
				break;
			if (!retry_from(e, qp, psn))
				return;
			break;
		case XR_AETH_NAK_INV_REQ:
			fail_tail(e, qp, XR_WC_REM_INV_REQ_ERR);
			return;
		case XR_AETH_NAK_REM_ACCESS:
			fail_tail(e, qp, XR_WC_REM_ACCESS_ERR);
			return;
		default:
			fail_tail(e, qp, XR_WC_REM_OP_ERR);
			return;
		}
		break;
	default:
		return;   /* reserved type: ignored */
	}
	rearm(e, qp);
}

/* A response of the wrong kind for the oldest WQE: for a PSN of that WQE
 * (a READ response to a SEND, an atomic ACK to a READ...) the responder is
 * broken: BAD_RESP_ERR (B12); for another PSN it is a stale duplicate. */
static void wrong_kind(struct xr_engine *e, struct xr_qp *qp, const struct xr_swqe_meta *m, uint32_t psn)
{
	if (psn_cmp(psn, m->first_psn) >= 0 && psn_cmp(psn, m->last_psn) <= 0) {
		xr_count(e, XR_CNT_DROP_RESP_UNEXPECTED, 1);
		fail_tail(e, qp, XR_WC_BAD_RESP_ERR);
	} else {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
	}
}

static void rx_read_response(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_req *r = &qp->req;
	uint32_t mtu = mtu_bytes(qp->ctx.path_mtu), offset, expect_len;
	struct xr_swqe_meta *m;
	const struct xr_hw_wqe *w;
	int err;

	if (!in_window(e, qp, p->psn, false))
		return;
	/* A response acknowledges every request before its READ. */
	ack_upto(e, qp, psn_add(p->psn, XR_PSN_MASK));
	if (!outstanding(r)) {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		return;
	}
	/* Beyond the oldest READ/atomic: its response was lost (B10). */
	if (implied_nak(e, qp, p->psn))
		return;
	m = meta_at(qp, r->tail);
	if (m->opcode != XR_WR_RDMA_READ) {
		wrong_kind(e, qp, m, p->psn);
		return;
	}
	if (psn_cmp(p->psn, m->first_psn) < 0 || psn_cmp(p->psn, m->last_psn) > 0) {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		return;   /* a duplicate of an answered READ */
	}
	if (p->psn != tail_expected_psn(qp)) {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		/* Out of order: a gap means lost responses; ask again, once per gap. */
		if (psn_cmp(p->psn, tail_expected_psn(qp)) > 0 && !already_retrying(r, tail_expected_psn(qp)) &&
		    retry_from(e, qp, tail_expected_psn(qp)))
			rearm(e, qp);   /* the resend gets a whole timeout, as implied_nak's */
		return;
	}
	/* The response sequence (rxe check_ack, B12): a READ's responses start
	 * with FIRST or ONLY and go on with MIDDLE and LAST, and LAST (or ONLY)
	 * lands on the READ's last PSN; anything else is a broken responder.
	 * A retry of its tail is a READ of the bytes still missing: rxe answers
	 * it MIDDLE..LAST, a responder that serves it as a new READ FIRST..LAST
	 * (or ONLY); both are taken at the retried PSN. */
	bool restart = m->read_done && r->retried && p->psn == r->retried_psn;
	if ((!restart && !!m->read_done != !(p->op->flags & XR_OPF_FIRST)) ||
	    !(p->op->flags & XR_OPF_LAST) != (p->psn != m->last_psn)) {
		xr_count(e, XR_CNT_DROP_RESP_UNEXPECTED, 1);
		fail_tail(e, qp, XR_WC_BAD_RESP_ERR);
		return;
	}
	w = xr_sq_slot(qp, r->tail);
	offset = m->read_done;
	expect_len = m->length - offset < mtu ? m->length - offset : mtu;
	if (p->payload_len != expect_len) {
		fail_tail(e, qp, XR_WC_BAD_RESP_ERR);
		return;
	}
	if (p->payload_len) {
		err = xr_sgl_write(e, qp->ctx.pd, xr_wqe_sges(w), xr_sq_nsge(qp, w), offset, p->payload, p->payload_len);
		if (err) {
			fail_tail(e, qp, (uint8_t)err);
			return;
		}
	}
	m->read_done += p->payload_len;
	made_progress(qp, psn_add(p->psn, 1));
	if (p->psn == m->last_psn)
		complete_tail(e, qp, XR_WC_SUCCESS, m->length);
	rearm(e, qp);
}

static void rx_atomic_ack(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	struct xr_req *r = &qp->req;
	struct xr_swqe_meta *m;
	const struct xr_hw_wqe *w;
	int err;

	if (!in_window(e, qp, p->psn, false))
		return;
	ack_upto(e, qp, psn_add(p->psn, XR_PSN_MASK));
	if (!outstanding(r)) {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		return;
	}
	if (implied_nak(e, qp, p->psn))
		return;   /* B10, as for a READ response */
	m = meta_at(qp, r->tail);
	if (!is_rd_atomic(m->opcode) || m->opcode == XR_WR_RDMA_READ) {
		wrong_kind(e, qp, m, p->psn);
		return;
	}
	if (m->first_psn != p->psn) {
		xr_count(e, XR_CNT_DUP_RESPONSE, 1);
		return;   /* duplicate */
	}
	w = xr_sq_slot(qp, r->tail);
	err = xr_sgl_write(e, qp->ctx.pd, xr_wqe_sges(w), xr_sq_nsge(qp, w), 0, &p->atomic_orig, 8);
	if (err) {
		fail_tail(e, qp, (uint8_t)err);
		return;
	}
	made_progress(qp, psn_add(p->psn, 1));
	complete_tail(e, qp, XR_WC_SUCCESS, 8);
	rearm(e, qp);
}

void xr_comp_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	const struct xr_req *r = &qp->req;

	if (!qp->ctx.sq_log_size || (qp->ctx.state != XR_QPS_RTS && qp->ctx.state != XR_QPS_SQD &&
			      qp->ctx.state != XR_QPS_SQE)) {
		/* A response to a QP that has sent nothing (RTR): no requester yet. */
		xr_count(e, XR_CNT_DROP_RESP_UNEXPECTED, 1);
		return;
	}
	if ((r->tail == r->head && r->una_psn == r->sent_end && !r->cur_active) || !qp->act) {
		/* Nothing outstanding: nothing this could answer. */
		xr_count(e, XR_CNT_DROP_RESP_UNEXPECTED, 1);
		return;
	}
	if (p->op->flags & XR_OPF_ACK)
		rx_ack(e, qp, p);
	else if (p->op->flags & XR_OPF_READ_RESP)
		rx_read_response(e, qp, p);
	else if (p->op->flags & XR_OPF_ATOMIC_ACK)
		rx_atomic_ack(e, qp, p);
}

void xr_comp_timers(struct xr_engine *e, struct xr_qp *qp, uint64_t now)
{
	struct xr_req *r = &qp->req;

	if (!r->timer_due_ns || now < r->timer_due_ns || r->rnr_due_ns)
		return;
	if (timer_idle(r)) {
		r->timer_due_ns = 0;
		return;
	}
	xr_count(e, XR_CNT_ACK_TIMEOUTS, 1);
	xr_evlog_add(e, XR_EV_TIMEOUT, qp->qpn, r->una_psn, r->retry_left);
	if (!retry_from(e, qp, outstanding(r) && is_rd_atomic(meta_at(qp, r->tail)->opcode) ?
			       tail_expected_psn(qp) : r->una_psn))
		return;
	xr_req_arm_timer(qp, now);
}
