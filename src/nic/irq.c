/* SPDX-License-Identifier: MIT */
/*
 * Interrupts: the completion interrupt (an armed CQ got a CQE) and the
 * event queue's (an event was logged). Raised outside a pass, the handler
 * runs at once, in the thread that raised it (a register access: its lock
 * is recursive, so the handler may read the log through the registers).
 * Raised inside a pass, it waits for the pass to end: the pass holds the
 * data path's lock and a QP's, and a handler that touched the engine
 * (cleared the counters, committed or reset a QP, reset the engine) would
 * wait for them forever. So does hardware: an interrupt reaches the host
 * after the pipeline's write that raised it, never inside the pipeline.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

void xr_irq_cq(struct xr_engine *e, uint32_t cqn)
{
	if (!e->irq)
		return;
	if (xr_dp_in_pass(e)) {
		if (e->irq_held.n == e->irq_held.cap) {
			unsigned cap = e->irq_held.cap ? 2 * e->irq_held.cap : 64;
			uint32_t *c = realloc(e->irq_held.cqn, cap * sizeof(*c));
			if (c) {
				e->irq_held.cqn = c;
				e->irq_held.cap = cap;
			}
		}
		if (e->irq_held.n < e->irq_held.cap) {
			e->irq_held.cqn[e->irq_held.n++] = cqn;
			return;
		}
		/* Out of memory: raised now rather than lost. */
	}
	e->irq(e->irq_ctx, cqn);
}

void xr_irq_hold_begin(struct xr_engine *e, struct xr_irq_held *h)
{
	h->ev_from = atomic_load_explicit(&e->evlog_seq, memory_order_relaxed);
	h->ncq = 0;
	h->more = NULL;
}

/* Before the pass lets go of dp_mutex: what it raised, moved out. */
void xr_irq_hold_take(struct xr_engine *e, struct xr_irq_held *h)
{
	unsigned n = e->irq_held.n;

	h->ev_to = atomic_load_explicit(&e->evlog_seq, memory_order_relaxed);
	h->ncq = n;
	if (!n)
		return;
	if (n <= sizeof(h->cqn) / sizeof(h->cqn[0])) {
		memcpy(h->cqn, e->irq_held.cqn, n * sizeof(h->cqn[0]));
	} else {
		h->more = e->irq_held.cqn;   /* the next pass that needs one allocates anew */
		e->irq_held.cqn = NULL;
		e->irq_held.cap = 0;
	}
	e->irq_held.n = 0;
}

/* Whether event seq is whole in the log and was held by a pass, and what
 * its handler is told; a slot rewritten meanwhile (the ring lapped it, or
 * another thread's event is being written there) is not. */
static bool held_event(struct xr_engine *e, uint64_t seq, uint32_t *type, uint32_t *qpn)
{
	const struct xr_evlog_slot *sl = &e->evlog[seq % XR_EVLOG_ENTRIES];
	uint64_t t1 = atomic_load_explicit(&sl->tag, memory_order_acquire), t2;
	bool held;

	*type = __atomic_load_n(&sl->ev.type, __ATOMIC_RELAXED);
	*qpn = __atomic_load_n(&sl->ev.qpn, __ATOMIC_RELAXED);
	held = __atomic_load_n(&sl->held, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_acquire);   /* the fields before the second look */
	t2 = atomic_load_explicit(&sl->tag, memory_order_relaxed);
	return held && t1 == t2 && t1 == 2 * seq + 2;
}

/* After the pass let go: the completions' handlers, then the events',
 * each in the order raised. */
void xr_irq_hold_deliver(struct xr_engine *e, struct xr_irq_held *h)
{
	const uint32_t *cqn = h->more ? h->more : h->cqn;
	uint32_t type, qpn;

	for (unsigned i = 0; i < h->ncq; i++)
		e->irq(e->irq_ctx, cqn[i]);
	free(h->more);
	h->more = NULL;
	if (!e->event_irq || h->ev_to == h->ev_from)
		return;
	/* Only the last ring's worth can still be read. */
	for (uint64_t s = h->ev_to - h->ev_from > XR_EVLOG_ENTRIES ? h->ev_to - XR_EVLOG_ENTRIES : h->ev_from;
	     s < h->ev_to; s++)
		if (held_event(e, s, &type, &qpn))
			e->event_irq(e->event_irq_ctx, type, qpn);
}
