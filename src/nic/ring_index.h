/* SPDX-License-Identifier: MIT */
/*
 * The doorbells' producer indexes as the engine reads them. Both doorbells
 * store their index without the QP's lock (qp.c, xr_doorbell), so the
 * engine checks an index where it reads it: whether a host could have
 * rung it, and, for the send queue, what a refused one reads as. Included
 * by engine.h, after struct xr_qp.
 */
#ifndef XR_NIC_RING_INDEX_H
#define XR_NIC_RING_INDEX_H

/* A producer index a host could have rung on a ring of 2^log_size slots
 * (0: none): not behind the WQEs the engine has taken (taken_end; the
 * index never goes back), at most the ring's size past the oldest not
 * completed (beyond, the engine would run the ring around and take WQEs
 * it had finished). */
static inline bool xr_ring_pi_fits(uint16_t pi, uint16_t taken_end, uint16_t oldest, uint8_t log_size)
{
	uint32_t size = log_size ? 1u << log_size : 0;

	return (uint16_t)(pi - taken_end) <= (uint16_t)(oldest + size - taken_end);
}

/* The refused doorbell is the one read now: its value, no ring since. */
static inline bool xr_sq_still_refused(const struct xr_qp *qp, uint16_t pi)
{
	const struct xr_req *r = &qp->req;

	return r->refused && pi == r->pi_refused &&
	       __atomic_load_n(&qp->sq_rings, __ATOMIC_RELAXED) == r->rings_refused;
}

/* The send queue's, with the WQEs started and not completed. One refused
 * stays refused until the host rings again: once the flush has moved the
 * tail up it could fit, and the flush would complete old slots; but the
 * same value rung again (a batch posted from the new tail) is a doorbell
 * of its own. The count is read after the index (stored before it). */
static inline bool xr_sq_pi_fits(const struct xr_qp *qp, uint16_t pi)
{
	const struct xr_req *r = &qp->req;

	return !xr_sq_still_refused(qp, pi) && xr_ring_pi_fits(pi, r->started_end, r->tail, qp->ctx.sq_log_size);
}

/* The send doorbell, stored without qp's lock (xr_doorbell): acquire, so
 * the WQEs the host wrote before ringing are seen. One that does not fit
 * reads as the last that did; xr_req_pi (req.c) reports it. */
static inline uint16_t xr_qp_sq_pi(const struct xr_qp *qp)
{
	uint16_t pi = __atomic_load_n(&qp->sq_pi, __ATOMIC_ACQUIRE);

	return xr_sq_pi_fits(qp, pi) ? pi : qp->req.pi_ok;
}

/* The receive doorbell, stored without qp's lock too (xr_doorbell):
 * acquire, so the WQEs written before it are seen. The doorbell refuses
 * an index outside the ring as the engine's indexes were when it
 * checked; one behind a WQE the engine took since (a host ringing an
 * index back while receives land) reads as nothing posted past the WQEs
 * taken, until a doorbell that fits. So does any index of a ring with no
 * base (registers written by hand): no WQE to take, none to flush. */
static inline uint16_t xr_qp_rq_pi(const struct xr_qp *qp)
{
	uint16_t pi = __atomic_load_n(&qp->rq_pi, __ATOMIC_ACQUIRE);

	if (!qp->ctx.rq_base || !xr_ring_pi_fits(pi, qp->rq_head, qp->rq_ci, qp->ctx.rq_log_size))
		return qp->rq_head;
	return pi;
}

/* The next receive WQE of the QP's own ring taken (caller holds qp's
 * lock): the index the receive doorbell checks against (atomic: it reads
 * it without the lock). */
static inline uint16_t xr_rq_take_index(struct xr_qp *qp)
{
	uint16_t i = qp->rq_head;

	__atomic_store_n(&qp->rq_head, (uint16_t)(i + 1), __ATOMIC_RELAXED);
	return i;
}

/* req.c: xr_qp_sq_pi for the requester and the flush, which take the
 * WQEs up to it: a doorbell that does not fit fails the send queue
 * (counted once per doorbell). */
uint16_t xr_req_pi(struct xr_engine *e, struct xr_qp *qp);

#endif
