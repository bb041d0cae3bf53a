/* SPDX-License-Identifier: MIT */
/*
 * The engine: xroce's model of the NIC hardware. Everything it does is
 * configured through its register file (xroce/regmap.h) and host-memory
 * rings; this header only creates and destroys engines and connects them
 * to the outside (link state, debug socket).
 */
#ifndef XROCE_ENGINE_H
#define XROCE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "xroce/regio.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xr_engine;

/* A new engine at power-on: CTRL.soft_reset set, all tables empty.
 * NULL with errno ENOMEM on failure. */
struct xr_engine *xr_engine_create(void);
void xr_engine_destroy(struct xr_engine *e);

/* One 32-bit register access, as an AXI-Lite slave answers it. */
enum xr_axi_resp xr_engine_reg_read(struct xr_engine *e, uint32_t addr, uint32_t *val);
enum xr_axi_resp xr_engine_reg_write(struct xr_engine *e, uint32_t addr, uint32_t val);

/* Link state as the MAC reports it (links set it; tests may too). */
void xr_engine_set_link_up(struct xr_engine *e, bool up);

struct xr_link;
/* Connects the engine's MAC to a link (not owned: close it after the
 * engine is destroyed). The link state follows the link. 0 or -EBUSY. */
int xr_engine_attach_link(struct xr_engine *e, struct xr_link *l);

/*
 * Progress: the engine's pipeline runs either in a thread of its own
 * (start_thread) or inline, one pass per xr_engine_progress call, in the
 * caller's thread. A pass receives a burst, serves every QP with work and
 * fires due timers; it returns how much it did (0: idle). Concurrent
 * callers do not block: one runs the pass, the others return 0.
 */
int xr_engine_progress(struct xr_engine *e);
/* xr_engine_progress for a caller that calls it in a tight loop (a CQ
 * poll, a spin on memory): an idle pass reads the clock for the timers of
 * QPs waiting for an ACK in one call of eight, as such a caller comes
 * back within microseconds. A caller that passes now and then (once per
 * slice of a blocking wait) uses xr_engine_progress, which always looks. */
int xr_engine_poll(struct xr_engine *e);
int xr_engine_start_thread(struct xr_engine *e);
#define XR_PROGRESS_THREAD_NAME "xroce-progress"   /* its name, as top -H and perf show it */
/* A pass run by a caller that polls for completions while the engine has
 * its own thread: while callers keep doing so, the thread stays out of
 * their way (on a small machine it would take the cores they spin on and
 * be preempted holding the pipeline); it takes over when they stop. */
int xr_engine_assist(struct xr_engine *e);
/* The caller has nothing in flight any more (its last completion) or is
 * about to block (arming a CQ for an event): it may not call again soon,
 * so the thread takes over now, not when the lease runs out (500 us,
 * doubled each time the thread found it renewed, up to 4 ms). */
void xr_engine_assist_end(struct xr_engine *e);
/* xr_engine_assist_end for a caller whose last completion emptied its
 * send queue and that may spin on memory next: where the link can, the
 * thread is not woken but left to the frames that come next (the link
 * armed for it), so a caller back first (a ping-pong's next post and
 * poll) costs no wakeup at all. Otherwise xr_engine_assist_end. */
void xr_engine_assist_pause(struct xr_engine *e);
/* CLOCK_MONOTONIC in nanoseconds: the clock leases and lingers are timed by. */
uint64_t xr_now_ns(void);
/* Frames received so far other than plain ACKs (requests, responses,
 * NAKs): what a caller waiting on its peer waits for. */
uint64_t xr_engine_answers_in(const struct xr_engine *e);
/* Doorbells this thread rings between begin and end do not wake the
 * engine's thread: end runs the pass that sends the work itself (an
 * ibverbs post_send: the packets leave from the caller's thread), and
 * wakes the thread only if a pass of the thread's was in the way.
 * end returns what the pass did. */
void xr_engine_post_begin(struct xr_engine *e);
/* Between begin and end: the caller streams (it posted while earlier WRs
 * are outstanding) and will be back soon, so end's pass leaves it holding
 * the engine as xr_engine_assist does (for at most a lease, 0.5 to 4 ms, if it
 * then spins on memory instead: unsignaled WRs look outstanding). */
void xr_engine_post_stream(struct xr_engine *e);
int xr_engine_post_end(struct xr_engine *e);
/* The engine's thread at real-time priority (SCHED_FIFO prio): it sleeps
 * whenever it has nothing to do, and woken by a frame it then takes a
 * core from a program spinning on memory at once, not after the spinner's
 * time slice. 0, -EPERM (no CAP_SYS_NICE or RLIMIT_RTPRIO), -EINVAL, or
 * -ESRCH (no thread). */
int xr_engine_thread_realtime(struct xr_engine *e, int prio);
void xr_engine_stop_thread(struct xr_engine *e);

/* The engine's timer clock (ACK and RNR timers, event timestamps): fn(ctx)
 * returns nanoseconds on a monotonic scale. NULL restores CLOCK_MONOTONIC.
 * Tests drive timers exactly with it (set before traffic starts). */
void xr_engine_set_clock(struct xr_engine *e, uint64_t (*fn)(void *ctx), void *ctx);

/* Completion interrupts: fn(ctx, cqn) runs when an armed CQ gets a CQE
 * (from the engine's thread or the progressing caller), once the pass
 * that wrote it has ended: fn may use the engine. */
void xr_engine_set_irq(struct xr_engine *e, void (*fn)(void *ctx, uint32_t cqn), void *ctx);
/* The event queue's interrupt: fn(ctx, type, qpn) runs after each event is
 * logged (enum xr_event_type; from whichever thread logged it, in the
 * order it logged them), once the register access or the pass that
 * logged it has ended: fn may use the engine, and reads the registers as
 * the access left them. As a CPU's interrupt, it may come between two
 * accesses of a command sequence on that thread (select, shadow, command,
 * status): a handler that issues commands of its own must not meet one
 * half done (xr_engine_irq_hold). Both handlers: set before traffic
 * starts. */
void xr_engine_set_event_irq(struct xr_engine *e, void (*fn)(void *ctx, uint32_t type, uint32_t qpn), void *ctx);
/* Interrupts raised on this thread (by any engine) wait for the matching
 * release, as a CPU's are masked: a driver whose handlers issue commands
 * brackets its own command sequences with these. They nest. xroce's
 * driver (verbs.h) holds them while it holds a lock of its own, so a
 * handler may call any verb, but for destroying an object the call it
 * interrupted still uses (the CQ being polled, the region being
 * registered again). */
void xr_engine_irq_hold(void);
void xr_engine_irq_release(void);

/* What the engine holds for its QPs (sizing; bench-scale reports it).
 * Bytes as allocated, without the allocator's own overhead. */
struct xr_engine_qp_mem {
	uint64_t qps;             /* QPs in use */
	uint64_t slot_bytes;      /* one QP's slot: all an idle QP holds */
	uint64_t table_bytes;     /* the QP table: pages of slots allocated, and its directory */
	uint64_t active;          /* QPs holding in-flight state (work posted, sent or owed) */
	uint64_t active_bytes;    /* that state */
	uint64_t res_bytes;       /* READ/atomic resources (kept by QPs that served one) */
	uint64_t spare_bytes;     /* in-flight state idle QPs gave back, kept for reuse (engine-wide, <= 1 MiB) */
};
void xr_engine_qp_mem(struct xr_engine *e, struct xr_engine_qp_mem *out);

/*
 * Serves the register file on a UNIX stream socket at path (created, and
 * removed by xr_engine_stop_debug or destroy) from a thread of its own,
 * to up to 8 clients at once (src/nic/debug_wire.h: one request, then its
 * answer). A client that holds half a request for 2 s, or reads no
 * answers, is dropped; a ninth takes the place of the quietest.
 * Returns 0 or -errno (-EADDRINUSE, -ENAMETOOLONG, -EBUSY if already serving).
 */
int xr_engine_serve_debug(struct xr_engine *e, const char *path);
void xr_engine_stop_debug(struct xr_engine *e);

#ifdef __cplusplus
}
#endif
#endif
