/* SPDX-License-Identifier: MIT */
/*
 * The hand-back after a completion that emptied a QP's send queue, with
 * the engine's thread running. The caller may stop calling now (spin on
 * memory for its peer's answer), so the engine goes back to the thread.
 *
 * In a ping-pong (perftest's ib_write_lat: wait on memory, post, poll)
 * the answer leaves the peer a few microseconds after the ACK this
 * completion came from. Passing on until it comes takes it on the
 * caller's own core; handed back at once, it wakes the engine's thread,
 * which on a VM costs both ends tens of microseconds. So the caller
 * lingers: until a frame other than a plain ACK has come since the last
 * post to a QP that sends into this CQ (the answer, or a READ's response,
 * which shows none is coming), for at most LINGER_NS. A linger that found
 * nothing (nobody answers: a one-way sender, the end of a run) makes the
 * CQ skip the next 1, 2, 4 ... LINGER_BACKOFF_MAX hand-backs' lingers;
 * one that found its answer halves that. CQs armed for events are not
 * lingered on: their callers block. Then the engine is paused, not handed
 * back with a wakeup (xr_engine_assist_pause).
 */

#include "drv.h"

/* Longer than a peer's answer that needed a wakeup of its engine thread
 * (35-50 us here): at 20 us, one such round made the next linger miss
 * too, and ib_write_lat fell back to a wakeup per round in 2 runs of 5. */
#define LINGER_NS 50000
#define LINGER_BACKOFF_MAX 1024

void xr_linger_posted(struct xr_qp *qp)
{
	struct xr_cq *cq = qp->init.send_cq;

	if (cq)
		__atomic_store_n(&cq->linger.answers_at_post, xr_engine_answers_in(qp->ctx->engine), __ATOMIC_RELAXED);
}

/* Anything but an ACK since the QP's last post. */
static bool answered(struct xr_engine *e, uint64_t at_post)
{
	return (int64_t)(xr_engine_answers_in(e) - at_post) > 0;
}

/* Lingers on; whether the answer came. */
static bool linger(struct xr_engine *e, uint64_t at_post)
{
	uint64_t start = xr_now_ns();

	/* The clock one turn in eight: a turn is a fraction of a microsecond. */
	for (unsigned k = 1; !answered(e, at_post); k++) {
		if (!(k & 7) && xr_now_ns() - start >= LINGER_NS)
			return false;
		xr_engine_assist(e);
	}
	return true;
}

void xr_linger_hand_back(struct xr_cq *cq)
{
	struct xr_engine *e = cq->ctx->engine;
	struct xr_linger *l = &cq->linger;
	uint64_t at_post = __atomic_load_n(&l->answers_at_post, __ATOMIC_RELAXED);
	uint16_t skip = __atomic_load_n(&l->skip, __ATOMIC_RELAXED), b;

	if (__atomic_load_n(&cq->evented, __ATOMIC_RELAXED)) {
		xr_engine_assist_pause(e);
		return;
	}
	if (skip) {
		__atomic_store_n(&l->skip, skip - 1, __ATOMIC_RELAXED);
		xr_engine_assist_pause(e);
		return;
	}
	b = __atomic_load_n(&l->backoff, __ATOMIC_RELAXED);
	if (linger(e, at_post)) {
		b /= 2;
	} else {
		b = b ? (b * 2 < LINGER_BACKOFF_MAX ? b * 2 : LINGER_BACKOFF_MAX) : 1;
		__atomic_store_n(&l->skip, b, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&l->backoff, b, __ATOMIC_RELAXED);
	xr_engine_assist_pause(e);
}
