/* SPDX-License-Identifier: MIT */
/*
 * Interrupts: the completion interrupt (an armed CQ got a CQE) and the
 * event queue's (an event was logged). Raised inside a register access or
 * a pass, an interrupt waits until the thread has left the outermost of
 * them: the access holds the register lock and the register window's
 * state (a command's status, the selected QP), the pass the data path's
 * lock and a QP's, and a handler that touched the engine (read the log
 * through the registers, cleared the counters, committed a QP) would wait
 * for them forever or change what the access returns. So does hardware:
 * an interrupt reaches the host after the access or the pipeline's write
 * that raised it. Raised anywhere else, the handler runs at once.
 *
 * Held interrupts queue per thread, in the order raised; a handler that
 * itself enters the engine raises its own behind them.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct held_irq {
	struct xr_engine *e;
	uint32_t type;    /* an event's type, or HELD_CQ */
	uint32_t arg;     /* the event's QPN, or the CQ's number */
};

#define HELD_CQ UINT32_MAX

#define HELD_INLINE 64

_Thread_local unsigned xr_irq_depth;    /* register accesses and passes entered */
_Thread_local unsigned xr_irq_queued;   /* held, delivered or not yet */

static _Thread_local struct {
	struct held_irq *q;      /* the inline array, or past it one on the heap */
	unsigned next, cap;      /* next: the first not delivered yet */
	bool delivering;         /* in a handler: what it raises waits its turn */
	struct held_irq inline_q[HELD_INLINE];
} held;

static void run(const struct held_irq *h)
{
	struct xr_engine *e = h->e;

	/* The handler as it is now: one may have been cleared meanwhile. */
	if (h->type == HELD_CQ) {
		void (*fn)(void *, uint32_t) = e->irq;
		if (fn)
			fn(e->irq_ctx, h->arg);
	} else {
		void (*fn)(void *, uint32_t, uint32_t) = e->event_irq;
		if (fn)
			fn(e->event_irq_ctx, h->type, h->arg);
	}
}

static void raise_irq(struct xr_engine *e, uint32_t type, uint32_t arg)
{
	struct held_irq h = { e, type, arg };

	/* Held inside an access or a pass, and while a handler runs: one that
	 * raises more (a doorbell's event) sees them after the ones before. */
	if (xr_irq_depth || held.delivering) {
		if (!held.q) {
			held.q = held.inline_q;
			held.cap = HELD_INLINE;
		}
		if (xr_irq_queued == held.cap) {
			struct held_irq *q = held.q == held.inline_q ? malloc(2 * held.cap * sizeof(*q))
								     : realloc(held.q, 2 * held.cap * sizeof(*q));
			if (q) {
				if (held.q == held.inline_q)
					memcpy(q, held.inline_q, sizeof(held.inline_q));
				held.q = q;
				held.cap *= 2;
			}
		}
		if (xr_irq_queued < held.cap)
			held.q[xr_irq_queued++] = h;
		else   /* never run inside an access or a pass: counted, its event stays logged */
			xr_count(e, XR_CNT_IRQ_LOST, 1);
		return;
	}
	run(&h);
}

void xr_irq_event(struct xr_engine *e, uint32_t type, uint32_t qpn)
{
	if (e->event_irq)
		raise_irq(e, type, qpn);
}

void xr_irq_cq(struct xr_engine *e, uint32_t cqn)
{
	if (e->irq)
		raise_irq(e, HELD_CQ, cqn);
}

/* The thread has left the outermost access or pass. What handlers raise
 * meanwhile joins the queue, and this loop delivers it: each once, in
 * order, and no handler is entered again while it runs (as a CPU masks
 * an interrupt inside its handler). */
void xr_irq_deliver(void)
{
	if (held.delivering)
		return;   /* a handler's own access: the loop below carries on */
	held.delivering = true;
	while (held.next < xr_irq_queued) {
		struct held_irq h = held.q[held.next++];   /* a copy: the queue may grow */
		run(&h);
	}
	held.delivering = false;
	xr_irq_queued = held.next = 0;
	if (held.q != held.inline_q) {   /* a flush's thousands: not kept past it */
		free(held.q);
		held.q = NULL;
	}
}

void xr_engine_irq_hold(void)
{
	xr_irq_hold();
}

void xr_engine_irq_release(void)
{
	if (xr_irq_depth)   /* an unmatched release changes nothing */
		xr_irq_release();
}

void xr_engine_set_event_irq(struct xr_engine *e, void (*fn)(void *, uint32_t, uint32_t), void *ctx)
{
	e->event_irq_ctx = ctx;
	e->event_irq = fn;
}

void xr_engine_set_irq(struct xr_engine *e, void (*fn)(void *, uint32_t), void *ctx)
{
	pthread_mutex_lock(&e->reg_lock);
	e->irq = fn;
	e->irq_ctx = ctx;
	pthread_mutex_unlock(&e->reg_lock);
}
