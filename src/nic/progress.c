/* SPDX-License-Identifier: MIT */
/*
 * Who runs the data path's passes (datapath.c) when the engine has a
 * thread of its own: the thread, which spins while a reply is due, sleeps
 * on the link and the doorbell when idle, and stands by while a caller
 * drives the engine from its own polls and posts (the lease).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

/* Set in the engine's own thread. */
static _Thread_local const struct xr_engine *thread_of;

bool xr_progress_is_thread(const struct xr_engine *e)
{
	return thread_of == e;
}

/* After the last pass that did something, the thread keeps polling this
 * long (a reply in flight on a fast path), then sleeps on the link's wait
 * fd and the doorbell: a woken thread gets a core at once, a spinning one
 * waits for its time slice behind the program's own spinning thread. */
#define SPIN_NS 5000

/* A pass that moved this many frames is part of a stream; after it the
 * thread polls STREAM_SPIN_NS for the next burst. A ping-pong's pass moves
 * a frame or two and the program needs the core for its reply. */
#define BURST_WORK 4
#define STREAM_SPIN_NS 50000

/* A woken thread runs on the core it last ran on (real-time), or stays
 * there (normal: on a VM that shows no cache topology the scheduler looks
 * for an idle core only within that one). A receiver woken by its sender
 * thus came back on the sender's core burst after burst: it took the
 * burst, spun STREAM_SPIN_NS for the next, which could not come while it
 * held the sender's core, and slept, while the other core idled
 * (ib_write_bw's server, perf sched: every 80 us). One burst and then a
 * whole spin with nothing is that sign: the thread moves to another core
 * before it sleeps, and wakes there from then on. */
static void move_off_this_core(void)
{
	cpu_set_t all, others, now;
	int me = sched_getcpu();

	if (me < 0 || sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < 2 || !CPU_ISSET(me, &all))
		return;
	others = all;
	CPU_CLR(me, &others);
	/* Leaving the allowed set moves it at once; the whole set back
	 * leaves it where it landed (unless someone else set the thread's
	 * affinity meanwhile: theirs stands). */
	if (!sched_setaffinity(0, sizeof(others), &others) && !sched_getaffinity(0, sizeof(now), &now) &&
	    CPU_EQUAL(&now, &others))
		sched_setaffinity(0, sizeof(all), &all);
}

/* At most one move in this long: a workload that shows the sign every
 * time (a paced sender) must not have the thread change cores per burst. */
#define MOVE_GAP_NS 10000000

/* A caller that assisted holds the engine this long at first (the
 * lease): the thread stands by (stand_by) until the caller stops
 * assisting for a lease or ends it itself. The lease bounds the delay
 * when a caller stops calling without ending it (a last empty poll before
 * spinning on memory, a program that polls now and then), and sets how
 * often the standing-by thread looks (a wakeup per lease, no pass). */
#define ASSIST_LEASE_NS 500000

/* A caller found still driving at the lease's end has its lease doubled,
 * up to this: the thread that stood by preempts whatever runs on its core
 * each time it looks (2,000 times a second at 500 us, a twentieth of
 * the receiver's time in a stream through the thread). If the caller
 * then stops calling without ending the lease, frames for it wait up to
 * this long, once. Each standing by starts again at ASSIST_LEASE_NS: a
 * lease ended and taken again at once (a last empty poll after the last
 * completion) has earned nothing. */
#define ASSIST_LEASE_MAX_NS 4000000

uint64_t xr_progress_lease(struct xr_engine *e)
{
	uint64_t now = xr_now_ns();

	atomic_store_explicit(&e->progress.assist_ns, now, memory_order_relaxed);
	/* Back from a pause with a request out (a ping-pong's post, then
	 * polls for its ACK): the frames are ours to take again, not the
	 * thread's to wake for (a frame between the two wakes it: it finds
	 * the lease and stands by again). With nothing out, the pause stands:
	 * a loop polling until its CQ is empty, then spinning on memory,
	 * takes a lease it will not keep, and a frame must still wake the
	 * thread, not wait for a lease grown to 4 ms. */
	if (atomic_load_explicit(&e->progress.paused, memory_order_relaxed) &&
	    (__atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE) || __atomic_load_n(&e->nwaiting, __ATOMIC_ACQUIRE)) &&
	    atomic_exchange(&e->progress.paused, false))
		xr_dp_link_arm(e, false);
	return now;
}

int xr_engine_assist(struct xr_engine *e)
{
	/* The lease's clock reading serves the pass's timers, all of them:
	 * while the caller holds the lease its passes are the only ones. */
	return xr_engine_poll_at(e, xr_progress_lease(e));
}

static bool assisted_lately(struct xr_engine *e)
{
	uint64_t last = atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed);

	/* The clock after the stamp: read first, a stamp renewed meanwhile
	 * would lie ahead of it. */
	return last && xr_now_ns() - last < ASSIST_LEASE_NS;
}

void xr_engine_assist_end(struct xr_engine *e)
{
	atomic_store(&e->progress.paused, false);   /* the thread arms for itself from now */
	if (!atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed))
		return;
	atomic_store(&e->progress.assist_ns, 0);
	/* Pairs with stand_by: either it sees the lease over, or we see it
	 * standing by and wake it (taken again meanwhile, the lease it then
	 * stands by for starts short again). */
	atomic_thread_fence(memory_order_seq_cst);
	if (e->doorbell_efd >= 0 && atomic_load(&e->progress.standby))
		xr_dp_wake_thread(e);
}

/* The hand-back without a wakeup: the caller keeps its lease but leaves
 * the frames that come next to the thread, which stands by polling the
 * link's standby fd, armed for it (and armed again each time it stands
 * by while paused). A frame that comes before the caller is back wakes
 * it, as a hand-back would have; a caller back first (a ping-pong's next
 * post and poll) withdraws the arming, and the round costs no system
 * call. Only with nothing timed: the thread standing by serves no
 * timers. Links that cannot (-1), or frames still coming: the hand-back. */
void xr_engine_assist_pause(struct xr_engine *e)
{
	int r;

	if (!atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed))
		return;
	if (!assisted_lately(e)) {   /* run out already: the thread's, as it is */
		xr_engine_assist_end(e);
		return;
	}
	/* Paused before armed: a thread that stands by from here on arms the
	 * link itself (xr_dp_link_standby_fd) rather than withdraw ours. */
	atomic_store(&e->progress.paused, true);
	r = xr_dp_link_arm(e, true);
	for (int i = 0; r > 0 && i < 3; i++) {   /* a frame came meanwhile: ours */
		xr_engine_progress(e);
		r = xr_dp_link_arm(e, true);
	}
	/* After the passes: what they left timed is the thread's to serve. */
	if (r != 0 || e->doorbell_efd < 0 || __atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&e->nwaiting, __ATOMIC_ACQUIRE)) {
		xr_engine_assist_end(e);
		return;
	}
	atomic_fetch_add(&e->progress.pauses, 1);
	/* A thread standing by deaf to the link (its standby fd was busy or
	 * gone), or asleep for longer than a fresh lease (the lease grew
	 * while the caller drove): a caller back with a request out would
	 * leave it the frames for that long. The hand-back, once: from then
	 * on the thread stands by for short leases while pauses come. */
	atomic_thread_fence(memory_order_seq_cst);   /* pairs with stand_by's entry */
	if (atomic_load(&e->progress.standby) &&
	    (atomic_load(&e->progress.standby_deaf) ||
	     atomic_load(&e->progress.standby_until) > xr_now_ns() + ASSIST_LEASE_NS))
		xr_engine_assist_end(e);
}

/* Woken while the caller is paused (away): what comes next is ours, the
 * timers included, as after a hand-back; the lease ends unless the
 * caller is back meanwhile (a new stamp, which the exchange leaves). */
static void take_over(struct xr_engine *e)
{
	uint64_t last = atomic_load(&e->progress.assist_ns);

	if (!atomic_load_explicit(&e->progress.paused, memory_order_relaxed) || !atomic_exchange(&e->progress.paused, false))
		return;
	if (last)
		atomic_compare_exchange_strong(&e->progress.assist_ns, &last, 0);
}

/* A caller drives the engine (xr_engine_assist): the thread neither spins
 * beside it nor sleeps with the link armed, where every frame the caller's
 * next pass would take anyway cost a wakeup and a pass fighting the
 * caller's for the pipeline. It waits for the lease to run out (the caller
 * went quiet), to be ended (xr_engine_assist_end: the caller got its last
 * completion or blocks on an event, and may now spin on memory), or for a
 * doorbell another thread could not serve itself (xr_engine_post_end). */
enum standby_end { LEASE_EXPIRED, LEASE_ENDED, DOORBELL, LINK, STOPPING };

static enum standby_end stand_by(struct xr_engine *e)
{
	bool waiting = false;
	struct pollfd pf[2] = { { e->doorbell_efd, POLLIN, 0 }, { xr_dp_link_standby_fd(e, &waiting), POLLIN, 0 } };
	uint64_t lease = ASSIST_LEASE_NS, v;
	uint32_t pauses = atomic_load(&e->progress.pauses);
	enum standby_end why;

	/* Standing by from here to the return: a lease ended at any moment
	 * in between rings the doorbell (xr_engine_assist_end) or arms the
	 * link (xr_engine_assist_pause), so one ended and taken again is
	 * never mistaken for one renewed. */
	atomic_store(&e->progress.standby_deaf, pf[1].fd < 0);
	atomic_store(&e->progress.standby_until, UINT64_MAX);   /* not yet asleep: not yet known */
	atomic_store(&e->progress.standby, true);
	atomic_thread_fence(memory_order_seq_cst);   /* pairs with xr_engine_assist_end and _pause */
	/* Paused, and the link can no longer (a UDP link's first datagram
	 * from the network): deaf to frames, we would leave them to the
	 * lease's end. The lease ends now, unless the caller is back. */
	if (pf[1].fd < 0 && atomic_load(&e->progress.paused)) {
		uint64_t last = atomic_load(&e->progress.assist_ns);
		atomic_store(&e->progress.paused, false);
		atomic_compare_exchange_strong(&e->progress.assist_ns, &last, 0);
	}
	for (;;) {
		uint64_t last = atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed);
		uint64_t now = xr_now_ns();   /* after the stamp: never behind it */
		struct timespec ts;
		int ready;

		if (!atomic_load(&e->progress.run)) {
			why = STOPPING;
			break;
		}
		if (!last) {
			why = LEASE_ENDED;
			break;
		}
		if (waiting) {
			why = LINK;   /* came before a pause's arming, which the caller left to us */
			break;
		}
		if (now - last >= lease) {
			why = LEASE_EXPIRED;
			break;
		}
		ts.tv_sec = (time_t)((lease - (now - last)) / 1000000000u);
		ts.tv_nsec = (long)((lease - (now - last)) % 1000000000u);
		atomic_store(&e->progress.standby_until, last + lease);
		ready = ppoll(pf, pf[1].fd >= 0 ? 2 : 1, &ts, NULL);
		if (ready > 0 && pf[1].fd >= 0 && (pf[1].revents & POLLIN)) {
			if (atomic_load(&e->progress.paused)) {
				why = LINK;   /* armed by a pause: the caller is away */
				break;
			}
			/* A frame that raced a withdrawal (or a datagram waiting
			 * in a UDP socket): the caller's to take. Deaf to the link
			 * from here on; a pause then wakes us (_pause, after its
			 * `paused`, reads `standby_deaf`; we, after it, `paused`). */
			pf[1].fd = -1;
			atomic_store(&e->progress.standby_deaf, true);
			atomic_thread_fence(memory_order_seq_cst);
			if (atomic_load(&e->progress.paused)) {
				why = LINK;
				break;
			}
			continue;
		}
		if (ready > 0 && read(e->doorbell_efd, &v, sizeof(v)) == sizeof(v) &&
		    atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed)) {
			why = DOORBELL;   /* rung while the lease holds: a pass is owed */
			break;
		}
		/* Slept the lease out and found it renewed: a caller that keeps
		 * driving. (A doorbell or a signal proves nothing.) */
		if (ready == 0) {
			uint64_t again = atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed);
			uint32_t p = atomic_load(&e->progress.pauses);
			/* Paused meanwhile: the caller may go quiet after any
			 * round, and a lease grown to 4 ms would keep its last
			 * frames that long. Short leases while pauses come. */
			if (p != pauses) {
				pauses = p;
				lease = ASSIST_LEASE_NS;
			} else if (again && again != last)
				lease = lease * 2 < ASSIST_LEASE_MAX_NS ? lease * 2 : ASSIST_LEASE_MAX_NS;
		}
	}
	atomic_store(&e->progress.standby, false);
	return why;
}

/* Until a frame, a doorbell or (while timers can be due) the next tick.
 * link_fd was taken (and the link's wakeup armed) before the last pass. */
static void sleep_on_fds(struct xr_engine *e, int link_fd)
{
	struct pollfd pf[3] = { { link_fd, POLLIN, 0 }, { e->doorbell_efd, POLLIN, 0 }, { e->progress.tick_fd, POLLIN, 0 } };
	uint64_t v;
	int ready;

	/* Timers run only for QPs on the busy list, and frames the link
	 * refused wait in txq: with neither, nothing is due until a frame or
	 * a doorbell, so an idle device sleeps for good. */
	bool due;
	struct timespec ts = { 0, XR_TICK_NS }, *tmo;
	uint64_t cc_due = atomic_load_explicit(&e->cc_due_ns, memory_order_relaxed);

	/* Untimed first, then nbusy: a pass that puts a QP on the list after
	 * this load sees untimed and wakes us (xr_qp_mark_busy). */
	atomic_store(&e->progress.untimed, true);
	due = __atomic_load_n(&e->nbusy, __ATOMIC_SEQ_CST) || __atomic_load_n(&e->nwaiting, __ATOMIC_ACQUIRE) ||
	      xr_dp_tx_waiting(e);
	if (due)
		atomic_store(&e->progress.untimed, false);
	tmo = due ? &ts : NULL;

	if (due && cc_due != UINT64_MAX && !e->clock_fn) {
		/* The pacer's next packet or a DCQCN timer is sooner than the tick. */
		uint64_t now = xr_now_ns();
		uint64_t wait = cc_due > now ? cc_due - now : 0;
		if (wait < 1000000)
			ts.tv_nsec = (long)wait;
	}
	ready = ppoll(pf, e->progress.tick_fd >= 0 ? 3 : 2, tmo, NULL);
	atomic_store(&e->progress.untimed, false);
	if (ready > 0 && (pf[2].revents & POLLIN)) {
		if (read(e->progress.tick_fd, &v, sizeof(v)) < 0) {
			/* read by an earlier wakeup */
		}
		atomic_store(&e->progress.tick_armed, false);
	}
	if (ready > 0 && (pf[1].revents & POLLIN)) {
		if (read(e->doorbell_efd, &v, sizeof(v)) < 0) {
			/* drained by another wakeup */
		}
	}
}

/* Sleeps until a frame, a doorbell or a timer; false when the last pass
 * before sleeping found work instead (the thread carries on). */
static bool sleep_armed(struct xr_engine *e)
{
	int link_fd;

	atomic_store(&e->progress.sleeping, true);
	link_fd = xr_dp_link_wait_fd(e);
	/* Work queued (or a frame received) between the last pass and the
	 * flag (the link's arming) is found by this pass. */
	if (xr_dp_pass(e, true, NULL)) {
		atomic_store(&e->progress.sleeping, false);
		return false;
	}
	sleep_on_fds(e, link_fd);
	atomic_store(&e->progress.sleeping, false);
	take_over(e);   /* a caller that paused while we slept armed */
	return true;
}

static void *progress_thread(void *arg)
{
	struct xr_engine *e = arg;
	uint64_t last_work = xr_now_ns(), now;
	bool streaming = false, worked = false;
	unsigned bursts = 0;   /* passes that moved a burst since the thread last slept */
	uint64_t last_move = 0;

	thread_of = e;

	while (atomic_load(&e->progress.run)) {
		int work;

		/* A caller drives: no pass of ours would find what its next
		 * pass does not, and each would fight it for the pipeline.
		 * (No lease, no clock read: a streaming thread passes back to
		 * back, and two reads per pass were a twentieth of its time.) */
		if (atomic_load_explicit(&e->progress.assist_ns, memory_order_relaxed) && assisted_lately(e)) {
			enum standby_end why = stand_by(e);
			streaming = false;
			bursts = 0;
			if (why == DOORBELL) {
				take_over(e);   /* rung while paused: a post left work we must time */
				xr_dp_pass(e, true, NULL);
			}
			/* A frame the caller left to us (or one that raced its
			 * return: its passes take what a busy pass lock keeps from us). */
			else if (why == LINK) {
				take_over(e);
				if (xr_dp_pass(e, false, NULL))
					last_work = xr_now_ns();
			} else if (why == LEASE_EXPIRED)
				take_over(e);
			/* Handed back by the caller (xr_engine_assist_end): what
			 * comes next are the peer's frames, so sleep armed for them
			 * at once rather than spin beside a caller that may go on
			 * driving (a stream whose send queue ran empty for a moment). */
			else if (why == LEASE_ENDED && atomic_load(&e->progress.run) && !sleep_armed(e))
				last_work = xr_now_ns();
			continue;
		}
		work = xr_dp_pass(e, false, NULL);
		if (work) {
			worked = true;   /* the time is read at the first idle pass */
			streaming = work >= BURST_WORK;
			bursts += streaming;
			continue;
		}
		now = xr_now_ns();
		if (worked) {
			last_work = now;
			worked = false;
		}
		/* Spin only while a requester waits for its peer (a reply is due
		 * soon; the QP waits off the busy list or is on it): with nothing
		 * in flight the reply to what was just delivered comes from the
		 * program, which needs the core. */
		if (now - last_work < SPIN_NS &&
		    (__atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE) || __atomic_load_n(&e->nwaiting, __ATOMIC_ACQUIRE)))
			continue;
		/* A stream (a pass that moved a burst) has its next frames on the
		 * way: a wakeup per burst would cost both ends more than this. */
		if (streaming && now - last_work < STREAM_SPIN_NS)
			continue;
		if (streaming && bursts == 1 && now - last_move >= MOVE_GAP_NS) {
			move_off_this_core();
			last_move = now;
		}
		bursts = 0;
		streaming = false;
		if (!sleep_armed(e))
			last_work = xr_now_ns();
	}
	return NULL;
}

int xr_engine_start_thread(struct xr_engine *e)
{
	int err;

	if (!e->link)
		return -ENOTCONN;
	if (e->doorbell_efd < 0)
		return -EMFILE;   /* nothing could wake it: no eventfd at init */
	if (e->progress.started)
		return -EBUSY;
	atomic_store(&e->progress.run, true);
	err = pthread_create(&e->progress.thread, NULL, progress_thread, e);
	if (err)
		return -err;
	pthread_setname_np(e->progress.thread, XR_PROGRESS_THREAD_NAME);   /* top -H, perf, tests */
	e->progress.started = true;
	return 0;
}

int xr_engine_thread_realtime(struct xr_engine *e, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (!e->progress.started)
		return -ESRCH;
	return -pthread_setschedparam(e->progress.thread, SCHED_FIFO, &sp);
}

void xr_engine_stop_thread(struct xr_engine *e)
{
	if (!e->progress.started)
		return;
	atomic_store(&e->progress.run, false);
	if (e->doorbell_efd >= 0) {
		uint64_t one = 1;   /* an idle thread sleeps without a timeout */
		if (write(e->doorbell_efd, &one, sizeof(one)) < 0) {
			/* saturated: it is awake */
		}
	}
	pthread_join(e->progress.thread, NULL);
	e->progress.started = false;
}

