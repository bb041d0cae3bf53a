/* SPDX-License-Identifier: MIT */
/*
 * The data path's pipeline: a progress pass takes a burst of frames from
 * the link and dispatches them (requests to the responder, responses to
 * the completer), then serves every QP on the busy list (flushes, timers,
 * responses, requests) and sends what that produced as bursts. It runs in
 * the engine's thread (progress.c) or inline in a caller's poll or post.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "recv.h"

#define RX_BURST 32

/* While the receive ring is being drained (each burst came back full),
 * ACK timers wait (and the RNR waits of QPs parked off the busy list): an
 * engine kept off its core finds the answers it waited for in its ring,
 * behind other frames, and must read them before judging a timer, or it
 * retransmits for nothing (and, late again and again, spends a healthy
 * QP's retry count). Bounded: a ring that never empties defers them by
 * this many frames at most, then they run in every pass until it does. */
#define XR_RX_DRAIN_MAX 4096

/* ---- the busy list ---- */

/* Doorbells of this thread between xr_engine_post_begin and _end. */
static _Thread_local const struct xr_engine *post_defer;
static _Thread_local bool post_deferred;
static _Thread_local unsigned post_depth;   /* begin/end pairs nest (a batch of batches) */
static _Thread_local unsigned post_foreign; /* sections of other engines opened inside ours */
static _Thread_local bool post_streaming;   /* xr_engine_post_stream: end takes a lease */


/* The thread running a progress pass: a quiesce from inside the pass (an
 * interrupt handler deregistering) must not wait for itself, and a QP the
 * pass puts back on the busy list wakes no one (see xr_qp_mark_busy). */
static _Thread_local const struct xr_engine *pass_owner;
/* The pass runs for xr_engine_poll: its caller comes back at once. */
static _Thread_local bool pass_polling;
/* The clock as the caller has just read it (an assisting caller's lease
 * stamp, xr_engine_poll_at): the pass reads it no second time. 0: none. */
static _Thread_local uint64_t pass_now;

void xr_dp_wake_thread(struct xr_engine *e)
{
	uint64_t one = 1;

	if (write(e->doorbell_efd, &one, sizeof(one)) < 0) {
		/* Saturated counter: the thread is awake anyway. */
	}
}

/* The thread sleeps without a timeout and a pass just gave a QP a timer
 * (an ACK to wait for): instead of a wakeup now, the tick's timer wakes it
 * within XR_TICK_NS to take the timers over. Armed once until it fires. */
static void arm_tick(struct xr_engine *e)
{
	struct itimerspec its = { .it_value = { 0, XR_TICK_NS } };

	if (e->progress.tick_fd >= 0 && !atomic_exchange(&e->progress.tick_armed, true))
		timerfd_settime(e->progress.tick_fd, 0, &its, NULL);
}

/* The thread sleeps without a timeout: only a doorbell, a frame or the
 * tick wakes it. */
static bool thread_sleeps_untimed(struct xr_engine *e)
{
	return e->doorbell_efd >= 0 && atomic_load(&e->progress.sleeping) && atomic_load(&e->progress.untimed);
}

/* The busy list is a ring, oldest first (busy_lock held): twice as long,
 * in order from slot 0. */
static bool busy_grow(struct xr_engine *e)
{
	uint32_t cap = e->busy_cap ? 2 * e->busy_cap : 256;
	struct xr_qp **b = malloc(cap * sizeof(*b));

	if (!b)
		return false;
	for (uint32_t i = 0; i < e->nbusy; i++)
		b[i] = e->busy[(e->busy_head + i) & (e->busy_cap - 1)];
	free(e->busy);
	e->busy = b;
	e->busy_cap = cap;
	e->busy_head = 0;
	return true;
}

/* The oldest busy QP, off the list (NULL: none). */
static struct xr_qp *busy_pop(struct xr_engine *e)
{
	struct xr_qp *qp = NULL;

	pthread_mutex_lock(&e->busy_lock);
	if (e->nbusy) {
		qp = e->busy[e->busy_head];
		e->busy_head = (e->busy_head + 1) & (e->busy_cap - 1);
		__atomic_store_n(&e->nbusy, e->nbusy - 1, __ATOMIC_RELEASE);
		__atomic_store_n(&qp->busy, false, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&e->busy_lock);
	/* The flag's clearing before the serve's reads of sq_pi: the twin of
	 * the send doorbell's fence (xr_doorbell), which takes no lock. (An
	 * XCHG clearing the flag, with sequentially consistent loads of the
	 * index and the flag, measured 0.9x on the 64-byte WRITE.) */
	if (qp)
		atomic_thread_fence(memory_order_seq_cst);
	return qp;
}

void xr_qp_mark_busy(struct xr_engine *e, struct xr_qp *qp)
{
	bool wake = false;

	/* Already on the list (a QP streaming, or one receiving): no lock.
	 * A true seen here may be stale only if a pass has just popped qp;
	 * that pass takes qp's lock (which the caller holds) before serving
	 * it, so it still sees what the caller did. The doorbells hold no
	 * lock: they fence between their index and this load (the receive
	 * doorbell calls it only in ERR), as busy_pop between clearing the
	 * flag and the pass's loads of the index. */
	if (__atomic_load_n(&qp->busy, __ATOMIC_RELAXED))
		goto wake;
	pthread_mutex_lock(&e->busy_lock);
	if (!qp->busy) {
		if (e->nbusy == e->busy_cap && !busy_grow(e)) {
			pthread_mutex_unlock(&e->busy_lock);
			return;   /* the next doorbell or timer scan retries */
		}
		e->busy[(e->busy_head + e->nbusy) & (e->busy_cap - 1)] = qp;
		/* Read without the lock by an idle pass (see progress_locked). */
		__atomic_store_n(&e->nbusy, e->nbusy + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&qp->busy, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&e->busy_lock);
wake:
	/* A poster that runs the pass itself (xr_engine_post_end) wakes no one. */
	if (post_defer == e) {
		post_deferred = true;
		return;
	}
	/* No thread (inline mode), or the thread itself, awake: nobody to
	 * wake, and the fence below (a tenth of a streaming receiver's time,
	 * once per packet) is not needed. A thread started after this load
	 * begins with a pass. */
	if (!atomic_load_explicit(&e->progress.run, memory_order_relaxed) || xr_progress_is_thread(e))
		return;
	/* Only a sleeping progress thread needs the syscall; a QP already on
	 * the list (waiting for an ACK) still needs it woken for new work.
	 * Inside a pass the QP is one the pass served and keeps busy: a QP
	 * that can move wakes the thread at the end of the pass (xr_dp_pass);
	 * one that waits for an ACK or a timer needs the thread only if it sleeps
	 * without a timeout, which it does only when no QP was busy. */
	atomic_thread_fence(memory_order_seq_cst);   /* nbusy before untimed: pairs with sleep_on_fds */
	if (pass_owner == e) {
		if (thread_sleeps_untimed(e))
			arm_tick(e);
		return;
	}
	/* Paused: the thread stands by for a caller who is away. */
	wake = e->doorbell_efd >= 0 && (atomic_load(&e->progress.sleeping) || atomic_load(&e->progress.paused));
	if (wake)
		xr_dp_wake_thread(e);
}

void xr_engine_post_begin(struct xr_engine *e)
{
	if (post_depth && post_defer != e) {
		post_foreign++;   /* another engine's section is open: ours wakes as usual */
		return;
	}
	if (post_depth++)
		return;
	post_defer = e;
	post_deferred = false;
	post_streaming = false;
}

void xr_engine_post_stream(struct xr_engine *e)
{
	if (post_depth && post_defer == e)
		post_streaming = true;
}

int xr_engine_post_end(struct xr_engine *e)
{
	bool ran, streaming;
	int work;

	if (post_foreign && post_defer != e) {
		post_foreign--;
		return 0;
	}
	if (!post_depth || --post_depth)
		return 0;   /* the outermost end runs the pass */
	post_defer = NULL;
	if (!post_deferred)
		return 0;
	post_deferred = false;
	streaming = post_streaming;   /* before the pass: a handler it interrupts may post */
	work = xr_dp_pass(e, false, &ran);
	/* A streaming poster drives the engine (a lease, as xr_engine_assist);
	 * one with a single WR out may spin on memory next, and the thread
	 * must stay armed for the frames that answer it. A pass that could
	 * not run (another one was under way) leaves the doorbell to the
	 * thread, and takes no lease: woken if it sleeps or stands by, or
	 * will once its pass is done (a lease is held or paused: it would
	 * stand by deaf to the doorbell; awake, it finds the eventfd
	 * readable and does not sleep). An awake thread with no lease finds
	 * the work itself. */
	if (ran && streaming)
		xr_progress_lease(e);
	if (!ran && e->doorbell_efd >= 0 && !xr_progress_is_thread(e) &&
	    (atomic_load(&e->progress.sleeping) || atomic_load(&e->progress.standby) ||
	     atomic_load(&e->progress.assist_ns) || atomic_load(&e->progress.paused)))
		xr_dp_wake_thread(e);
	return work;
}

/* ---- frames in ---- */

/* Frames a pass took in: RX_PKTS/RX_BYTES are added once per pass. */
struct rx_tally {
	uint64_t pkts, bytes;
};

static void rx_one(struct xr_engine *e, struct xr_frame *f, struct xr_tx *tx, struct rx_tally *t)
{
	struct xr_pkt p;
	struct xr_qp *qp;
	enum xr_parse_err err;
	const uint8_t *ext = NULL;
	struct xr_icrc_defer d = { .pkt = NULL };

	if (xr_pfc_is_mac_control(f)) {   /* PFC, PAUSE: pfc.c */
		xr_pfc_rx(e, f);
		return;
	}
	if (f->rx_flags & XR_FRAME_ICRC_UNVERIFIABLE) {
		xr_count(e, XR_CNT_DROP_ICRC_UNVERIFIABLE, 1);
		return;
	}
	/* A gather frame's payload is read where it lies (link.h); elsewhere a
	 * peer may write the fields (host link memory): never follow them. */
	if (e->link->gather && __atomic_load_n(&f->gather_state, __ATOMIC_RELAXED) != XR_GATHER_NONE)
		ext = xr_frame_claim(f);
	/* The link may have checked the ICRC already (UDP link): once is enough. */
	err = xr_pkt_parse(f->data, f->len, 0, XR_PARSE_TRANSPORT_LENGTHS |
			   (f->rx_flags & XR_FRAME_ICRC_VERIFIED || ext ? XR_PARSE_NO_ICRC : 0), &p);
	if (err == XR_PARSE_OK && ext)
		err = xr_gather_rx_check(f, &p, ext, &d);
	if (err != XR_PARSE_OK) {
		xr_count(e, xr_counter_of_parse_err(err), 1);
		return;
	}
	if (f->rx_flags & XR_FRAME_ICRC_ID_RECOVERED)
		xr_count(e, XR_CNT_ICRC_ID_RECOVERED, 1);
	if (p.op->flags & XR_OPF_CNP) {
		t->pkts++;
		t->bytes += f->len;
		xr_count(e, XR_CNT_CNP_RCVD, 1);
		xr_cc_cnp_rx(e, &p, xr_engine_now(e));
		return;
	}
	/* A WRITE's payload may be checked by the copy that places it
	 * (gather.c): every other use of the packet checks it first. */
	e->rx_defer = d.pkt ? &d : NULL;
	if (p.dqpn == XR_QPN_MCAST) {
		xr_mcast_rx(e, &p, true);
	} else if (!xr_recv_check(e, &p, true, &qp)) {
		if ((p.traffic_class & 3) == 3 && xr_icrc_defer_check(e, &p, p.payload)) {
			/* ECN CE: the notification point */
			xr_count(e, XR_CNT_ECN_MARKED, 1);
			xr_cc_ce(e, qp, xr_engine_now(e));
		}
		if (!d.bad) {   /* a failed check drops it, as at the parse (counted below) */
			if (p.op->flags & XR_OPF_REQ)
				xr_resp_rx(e, qp, &p, tx);
			else
				xr_comp_rx(e, qp, &p);
			xr_qp_mark_busy(e, qp);
		}
		pthread_mutex_unlock(&qp->lock);
	}
	/* A check still waiting (a drop that counted nothing) is made now:
	 * a bad packet counts as that alone, wherever it was found. */
	xr_icrc_defer_check(e, &p, p.payload);
	if (d.bad) {
		xr_count(e, xr_counter_of_parse_err(XR_PARSE_BAD_ICRC), 1);
		return;
	}
	t->pkts++;
	t->bytes += f->len;
}

/* ---- serving a QP ---- */

static bool qp_has_work(const struct xr_qp *qp)
{
	const struct xr_req *r = &qp->req;

	if (qp->ctx.state == XR_QPS_RESET || qp->ctx.state == XR_QPS_INIT)
		return false;
	if (qp->ctx.state == XR_QPS_ERR)
		return r->tail != xr_qp_sq_pi(qp) || qp->rq_head != xr_qp_rq_pi(qp) || xr_resp_has_work(qp);
	return xr_resp_has_work(qp) || r->cur_active || r->retx_pending ||
	       (r->head != xr_qp_sq_pi(qp) && (qp->ctx.state == XR_QPS_RTS || qp->ctx.state == XR_QPS_SQE)) ||
	       r->timer_due_ns || r->rnr_due_ns || xr_cc_has_work(qp);
}

/* Work a pass could do at once, as opposed to waiting for an ACK, a timer
 * or the pacer (which the thread's timed sleep covers). */
static bool qp_can_move(const struct xr_qp *qp)
{
	const struct xr_req *r = &qp->req;

	if (qp->ctx.state == XR_QPS_ERR)
		return qp_has_work(qp);
	if (qp->cc.held || qp->cc.cnp_owed)
		return qp->cc.cnp_owed;
	return xr_resp_has_work(qp) || r->cur_active || r->retx_pending ||
	       (r->head != xr_qp_sq_pi(qp) && (qp->ctx.state == XR_QPS_RTS || qp->ctx.state == XR_QPS_SQE));
}

/* ---- QPs that wait ---- */

/* After its serve: qp has work, but nothing it can do until a frame (an
 * ACK, a response), a doorbell, a commit or a timer of its own moves it:
 * the link took all it offered, no pause holds it, it owes no CNP and it
 * is not retrying for memory. It waits off the busy list: visiting it
 * every pass cost each pass a lock and a clock read per waiting QP, and
 * 1,000 QPs waiting for ACKs left a quarter of one QP's goodput. */
static bool qp_waits(const struct xr_engine *e, const struct xr_qp *qp, const struct xr_tx *tx)
{
	if (tx->full || e->pfc.paused || qp->ctx.state == XR_QPS_ERR || qp->cc.cnp_owed)
		return false;
	/* WQEs posted that it could not start for want of memory: each pass
	 * tries again. */
	return qp->act || qp->req.head == xr_qp_sq_pi(qp) || qp->ctx.state != XR_QPS_RTS;
}

/* The earliest of qp's own timers: RNR wait (the ACK timer stands still
 * during it), ACK timer, pacer, DCQCN. */
static uint64_t qp_due(const struct xr_qp *qp, uint64_t now)
{
	const struct xr_req *r = &qp->req;
	uint64_t d = xr_cc_next_due(qp, now), t = r->rnr_due_ns ? r->rnr_due_ns : r->timer_due_ns;

	return t && t < d ? t : d;
}

static void park(struct xr_engine *e, struct xr_qp *qp, uint64_t due)
{
	/* Once on the list it stays there until the list is emptied: a QP
	 * served since it was put there (woken by a frame, say) only stops
	 * counting as waiting. */
	if (!qp->parked) {
		if (e->nwait == e->wait_cap) {
			uint32_t cap = e->wait_cap ? 2 * e->wait_cap : 256;
			struct xr_qp **w = realloc(e->wait, cap * sizeof(*w));
			if (!w) {
				xr_qp_mark_busy(e, qp);   /* served every pass instead */
				return;
			}
			e->wait = w;
			e->wait_cap = cap;
		}
		e->wait[e->nwait++] = qp;
		qp->parked = true;
	}
	if (!qp->waiting) {
		qp->waiting = true;
		__atomic_store_n(&e->nwaiting, e->nwaiting + 1, __ATOMIC_RELEASE);
	}
	if (due < e->wait_due_ns)
		e->wait_due_ns = due;
	/* A thread asleep without a timeout: the tick takes the timer over. */
	if (thread_sleeps_untimed(e))
		arm_tick(e);
}

/* qp is being served: it waits no more (it may again after). */
static void unwait(struct xr_engine *e, struct xr_qp *qp)
{
	if (qp->waiting) {
		qp->waiting = false;
		__atomic_store_n(&e->nwaiting, e->nwaiting - 1, __ATOMIC_RELEASE);
	}
}

/* The earliest timer of a waiting QP is due: they are all served again
 * (those still waiting come back with their timers as they stand). A PFC
 * pause brings them back too: a QP whose priority is paused must be
 * served to hold its ACK timer for the pause (xr_pfc_qp_hold), and none
 * waits while a pause lasts (qp_waits). With none waiting any more (all
 * woken and served since), the list is emptied: the thread then sleeps
 * without a tick again. */
static void unpark_due(struct xr_engine *e, uint64_t now)
{
	uint32_t n = e->nwait;

	if (!n || (e->nwaiting && now < e->wait_due_ns && !e->pfc.paused))
		return;
	e->wait_due_ns = UINT64_MAX;
	e->nwait = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct xr_qp *qp = e->wait[i];
		qp->parked = false;
		if (qp->waiting) {
			qp->waiting = false;
			xr_qp_mark_busy(e, qp);
		}
	}
	__atomic_store_n(&e->nwaiting, 0, __ATOMIC_RELEASE);
}

static void serve_qp(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx, uint64_t now, bool timers)
{
	bool held;

	switch (qp->ctx.state) {
	case XR_QPS_RESET:
	case XR_QPS_INIT:
		return;
	case XR_QPS_ERR:
		if (xr_pfc_qp_hold(e, qp, now))
			return;   /* the fatal NAK waits for the pause to end */
		xr_resp_tx(e, qp, tx);   /* a fatal NAK still leaves */
		xr_qp_flush(e, qp);
		return;
	default:
		/* Paused (PFC): nothing of the QP leaves and its ACK timer
		 * stands still; a CNP leaves at its own priority. */
		held = xr_pfc_qp_hold(e, qp, now);
		if (!held && timers)
			xr_comp_timers(e, qp, now);
		xr_cc_timers(e, qp, now);
		if (!xr_cc_tx(e, qp, tx, now) || held)
			return;
		xr_resp_tx(e, qp, tx);
		if (qp->ctx.state == XR_QPS_RTS || qp->ctx.state == XR_QPS_SQD)
			xr_req_tx(e, qp, tx, now);
		if (qp->ctx.state == XR_QPS_ERR)
			xr_qp_flush(e, qp);
		else if (qp->ctx.state == XR_QPS_SQE)
			xr_qp_flush_sq(e, qp);   /* UD/UC: the receive side works on */
	}
}

/* An idle pass with QPs waiting (for an ACK, say) must read the clock to
 * see their timers; a caller polling in a tight loop (xr_engine_poll)
 * runs millions of them, and one clock read in eight serves timers of
 * microseconds and more as well. Every other pass looks: the engine's
 * thread (which sleeps until the timer), a blocking wait's pass per slice
 * (which would see a timer eight slices late), a test's own clock. */
static bool idle_timer_look(struct xr_engine *e)
{
	return !pass_polling || pass_now || e->clock_fn || (++e->idle_polls & 7) == 0;
}

static uint64_t pass_clock(const struct xr_engine *e)
{
	return pass_now && !e->clock_fn ? pass_now : xr_engine_now(e);
}

/* *movable: a QP was left with work it can do at once (qp_can_move), or
 * frames wait for the link: someone must pass again soon. */
static int progress_locked(struct xr_engine *e, bool *movable)
{
	struct xr_frame *rx[RX_BURST];
	struct xr_tx *tx = e->txq;
	uint32_t n, j;
	int work = 0, got;
	uint64_t now, due = UINT64_MAX;
	bool timers;

	/* PFC first: pauses that ran out, the watchdog, XOFF/XON from the
	 * backlog as it stands before this burst is taken. */
	xr_pfc_pass(e);
	got = xr_link_recv(e->link, rx, RX_BURST);
	/* Past the cap, timers stay on until a burst comes back short: one
	 * pass of them would not do, as QPs it put back behind a full link
	 * would be served by the passes after it, timers off again. */
	if (got < RX_BURST)
		e->rx_undrained = 0;
	else if (e->rx_undrained <= XR_RX_DRAIN_MAX)
		e->rx_undrained += RX_BURST;
	timers = !e->rx_undrained || e->rx_undrained > XR_RX_DRAIN_MAX;
	if (got > 0) {
		struct rx_tally t = { 0, 0 };
		for (int i = 0; i < got; i++) {
			if (xr_reg_get(e, XR_REG_CTRL) & XR_CTRL_ENABLE)
				rx_one(e, rx[i], tx, &t);
			else
				xr_count(e, XR_CNT_DROP_DISABLED, 1);
			xr_link_frame_free(e->link, rx[i]);
		}
		if (t.pkts) {
			xr_count_pass(e, XR_CNT_RX_PKTS, t.pkts);
			xr_count_pass(e, XR_CNT_RX_BYTES, t.bytes);
		}
	}
	work += got > 0 ? got : 0;

	/* Frames the link could not take last time go first; while it stays
	 * full nothing new is built (backpressure, never a silent drop). */
	tx->full = false;
	if (tx->n)
		xr_tx_flush(e, tx);
	if (tx->full) {
		/* Nothing is served until the link takes frames: no pacer time. */
		atomic_store_explicit(&e->cc_due_ns, UINT64_MAX, memory_order_relaxed);
		*movable = true;
		return work;
	}

	/* An idle pass stops here without a lock (or, with no QP waiting, a
	 * clock read): a QP marked busy meanwhile is seen by the next pass. */
	if (!__atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE) && e->nwait && timers && idle_timer_look(e))
		unpark_due(e, pass_clock(e));
	if (!__atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE)) {
		xr_tx_flush(e, tx);
		due = e->nwaiting ? e->wait_due_ns : UINT64_MAX;
		if (tx->n && e->pfc.paused && xr_pfc_next_due(e) < due)
			due = xr_pfc_next_due(e);   /* frames held by a pause: the thread looks again when it ends */
		if (due != UINT64_MAX)
			atomic_store_explicit(&e->cc_due_ns, due, memory_order_relaxed);
		return work;
	}
	now = pass_clock(e);
	if (timers)
		unpark_due(e, now);
	/* The QPs busy now, oldest first; those it puts back (and any a
	 * doorbell adds) wait for the next pass. When the link fills, the
	 * pass stops: the QPs it did not reach stay first in line, so every
	 * QP gets its turn and a pass costs what it sends, not the number of
	 * QPs with work. */
	n = __atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE);
	for (j = 0; j < n && !tx->full; j++) {
		struct xr_qp *qp = busy_pop(e);
		if (!qp)
			break;
		pthread_mutex_lock(&qp->lock);
		unwait(e, qp);
		if (qp->in_use) {
			unsigned before = tx->n;
			serve_qp(e, qp, tx, now, timers);
			work += (int)(tx->n - before);
			if (!qp_has_work(qp)) {
				xr_qp_act_put(e, qp);   /* idle: its in-flight state goes */
			} else if (qp_waits(e, qp, tx)) {
				park(e, qp, qp_due(qp, now));
			} else {
				uint64_t d = xr_cc_next_due(qp, now);
				*movable = *movable || qp_can_move(qp);
				if (d < due)
					due = d;
				xr_qp_mark_busy(e, qp);
			}
		}
		pthread_mutex_unlock(&qp->lock);
		if (tx->n >= 24)
			xr_tx_flush(e, tx);
	}
	if (j < n)
		*movable = true;   /* the link was full: QPs wait for their turn */
	if (e->nwaiting && e->wait_due_ns < due)
		due = e->wait_due_ns;
	/* A paced QP, a DCQCN timer, a pause ending or the PFC watchdog: when
	 * the sleeping thread must look again (a paused QP stays busy without
	 * spinning the thread). */
	if (e->pfc.paused) {
		uint64_t d = xr_pfc_next_due(e);
		if (d < due)
			due = d;
	}
	atomic_store_explicit(&e->cc_due_ns, due, memory_order_relaxed);
	xr_tx_flush(e, tx);
	if (tx->n && !e->pfc.paused)
		*movable = true;
	return work;
}

/* block: wait for a pass another thread is running (the engine's thread:
 * spinning on a busy lock could keep its holder, preempted on this core,
 * from ever finishing). Callers that poll do not wait. */
int xr_dp_pass(struct xr_engine *e, bool block, bool *ran)
{
	bool movable = false;
	int work = 0;
	uint64_t now_before;
	bool polling_before;

	if (ran)
		*ran = false;
	if (!e->link || (block ? pthread_mutex_lock(&e->dp_mutex) : pthread_mutex_trylock(&e->dp_mutex)))
		return 0;
	if (ran)
		*ran = true;
	pass_owner = e;
	xr_irq_hold();
	if (!(xr_reg_get(e, XR_REG_CTRL) & XR_CTRL_SOFT_RESET))
		work = progress_locked(e, &movable);
	if (__builtin_expect(e->mcg.loop != NULL, 0))
		xr_mcast_loop_drain(e);   /* no QP lock held now */
	/* A caller's pass left frames in the link that leave only on a later
	 * call, with nothing else due: the thread, asleep without a timeout,
	 * must look again (its own sleep checks this under dp_mutex). */
	if (!xr_progress_is_thread(e) && thread_sleeps_untimed(e) && xr_link_tx_held(e->link))
		arm_tick(e);
	pass_owner = NULL;
	pthread_mutex_unlock(&e->dp_mutex);
	/* The interrupts it raised: a handler's own passes read the clock. */
	now_before = pass_now;
	polling_before = pass_polling;
	pass_now = 0;
	pass_polling = false;
	xr_irq_release();
	pass_now = now_before;
	pass_polling = polling_before;
	/* A caller's pass left work that cannot wait for its next call: the
	 * sleeping thread takes it (the thread's own pass loops by itself). */
	if (movable && !xr_progress_is_thread(e) && e->doorbell_efd >= 0 &&
	    (atomic_load(&e->progress.sleeping) || atomic_load(&e->progress.paused)))
		xr_dp_wake_thread(e);
	return work;
}

int xr_engine_progress(struct xr_engine *e)
{
	return xr_dp_pass(e, false, NULL);
}

int xr_engine_poll(struct xr_engine *e)
{
	int work;

	pass_polling = true;
	work = xr_dp_pass(e, false, NULL);
	pass_polling = false;
	return work;
}

int xr_engine_poll_at(struct xr_engine *e, uint64_t now)
{
	int work;

	pass_now = now;
	work = xr_engine_poll(e);
	pass_now = 0;
	return work;
}

bool xr_dp_in_pass(const struct xr_engine *e)
{
	return pass_owner == e;
}

void xr_dp_quiesce(struct xr_engine *e)
{
	/* A pass running now may hold a key checked before the caller's
	 * change (a key made invalid): wait for it to end. The mutex orders
	 * the caller's store before any later pass. Passes are bounded (one
	 * burst each); the pass's own thread (an interrupt handler
	 * deregistering) must not wait for itself. */
	if (pass_owner == e)
		return;
	pthread_mutex_lock(&e->dp_mutex);
	pthread_mutex_unlock(&e->dp_mutex);
}


int xr_engine_attach_link(struct xr_engine *e, struct xr_link *l)
{
	if (e->link)
		return -EBUSY;
	if (!l)
		return -EINVAL;
	pthread_mutex_lock(&e->reg_lock);   /* an attach sees the link with its groups, or neither */
	e->link = l;
	xr_mcg_link_attached(e);   /* groups attached before the link came */
	pthread_mutex_unlock(&e->reg_lock);
	xr_engine_set_link_up(e, l->ops->is_up(l));
	return 0;
}

void xr_datapath_init(struct xr_engine *e)
{
	e->txq = calloc(1, sizeof(*e->txq));
	pthread_mutex_init(&e->dp_mutex, NULL);
	pthread_mutex_init(&e->busy_lock, NULL);
	e->doorbell_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->progress.tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	atomic_store(&e->cc_due_ns, UINT64_MAX);
	e->wait_due_ns = UINT64_MAX;
	atomic_store(&e->tx_gen, 1);   /* a block's zero never matches */
}

void xr_datapath_fini(struct xr_engine *e)
{
	xr_engine_stop_thread(e);
	xr_mcast_loop_free(e);
	for (unsigned i = 0; e->txq && i < e->txq->n; i++)
		xr_link_frame_free(e->link, e->txq->f[i]);
	if (e->link)
		xr_link_settle(e->link);   /* the host's memory may go with the engine */
	free(e->txq);
	free(e->busy);
	free(e->wait);
	if (e->doorbell_efd >= 0)
		close(e->doorbell_efd);
	if (e->progress.tick_fd >= 0)
		close(e->progress.tick_fd);
	pthread_mutex_destroy(&e->dp_mutex);
	pthread_mutex_destroy(&e->busy_lock);
}
