/* SPDX-License-Identifier: MIT */
/*
 * The responder's two halves: resp.c takes requests in (PSN, checks,
 * execution, duplicates); resp_tx.c sends what is owed (the response
 * queue: ACKs, NAKs, READ responses, atomic ACKs) and runs the requests
 * held behind READ responses.
 */
#ifndef XR_NIC_RESP_H
#define XR_NIC_RESP_H

#include "engine.h"

enum { RES_FREE, RES_READ, RES_ATOMIC };

/* A request held behind READ responses, a copy of it (resp_tx.c). */
#define XR_RESP_HELD 32
#define XR_RESP_HELD_BYTES 4096   /* the largest path MTU: longer ones fail its check */
struct xr_resp_held {
	struct xr_pkt pkt;
	uint8_t data[XR_RESP_HELD_BYTES];
};

/* Item i of qp's response queue (which lives in its active block). */
static inline struct xr_resp_item *xr_resp_q_at(struct xr_qp *qp, unsigned i)
{
	return &qp->act->q[(qp->resp.q_head + i) % XR_RESP_QUEUE];
}

static inline void xr_resp_q_pop(struct xr_resp *rs)
{
	rs->q_head = (uint8_t)((rs->q_head + 1) % XR_RESP_QUEUE);
	rs->q_len--;
}

/* Room for what one more request may queue (a response stream and an ACK)
 * besides the fatal NAK's slot. */
static inline bool xr_resp_q_has_room(const struct xr_resp *rs)
{
	return rs->q_len + 3 <= XR_RESP_QUEUE;
}

/* A READ resource's response stream from psn: len bytes at va. */
static inline void xr_rd_stream_from(struct xr_rd_res *res, uint32_t psn, uint64_t va, uint32_t len)
{
	res->stream_psn = res->next_psn = psn;
	res->stream_va = va;
	res->stream_len = len;
}

/* resp.c */
/* A request, now that every request before it has run and the READ
 * responses owed before it have been built (A33). */
void xr_resp_run(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p);
/* p may not run yet: it is the next request and READ responses are still
 * owed (a READ/atomic that finds every resource busy does not wait: it is
 * refused now, A31). */
bool xr_resp_must_wait(struct xr_qp *qp, const struct xr_pkt *p);

/* The receive WQE a message needs (kept until its message ends): from the
 * QP's RQ or its SRQ; false when none is posted. */
bool xr_resp_take_rwqe(struct xr_engine *e, struct xr_qp *qp);
/* Completes the held receive WQE; false when the CQE was lost (the CQ
 * overran and the QP went to ERR). */
bool xr_resp_complete_rwqe(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, uint8_t opcode,
			   uint32_t byte_len);
/* Completes the held receive WQE (if any) with an error status. */
void xr_resp_fail_rwqe(struct xr_engine *e, struct xr_qp *qp, uint8_t wc_status);

/* resp_tx.c */
/* Sends what the queue holds, in order; true when it is empty. */
bool xr_resp_send_queued(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx);
/* Keeps a copy of p to run after the responses owed before it. */
void xr_resp_hold(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p);

#endif
