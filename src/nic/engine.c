/* SPDX-License-Identifier: MIT */
/* Engine lifetime: power-on state, soft reset, link state, the event log. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

uint64_t xr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Bits a write may set: the defined fields, or all 32 when there are none. */
static uint32_t field_mask(const struct xr_reg_desc *d)
{
	const char *p = d->fields;
	uint32_t mask = 0;

	if (!*p)
		return 0xFFFFFFFFu;
	while (*p) {
		const char *end = strchr(p, ' ');
		char name[48];
		unsigned lo, width;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		snprintf(name, sizeof(name), "%.*s", colon ? (int)(colon - p) : (int)len, p);
		if (!xr_reg_field(d, name, &lo, &width))
			mask |= (width >= 32 ? 0xFFFFFFFFu : ((1u << width) - 1)) << lo;
		p += len;
		if (*p)
			p++;
	}
	return mask;
}

/* Every plain register to its reset value. */
static void regs_reset(struct xr_engine *e)
{
	size_t n;
	const struct xr_reg_desc *d = xr_reg_descs(&n);

	memset(e->regs, 0, sizeof(e->regs));
	for (size_t i = 0; i < n; i++)
		if (d[i].count == 1 && d[i].offset < 0x400) {
			e->regs[d[i].offset / 4] = d[i].reset;
			e->writable_mask[d[i].offset / 4] = field_mask(&d[i]);
		}
}

void xr_engine_set_clock(struct xr_engine *e, uint64_t (*fn)(void *ctx), void *ctx)
{
	e->clock_fn = fn;
	e->clock_ctx = ctx;
	e->t0_ns = xr_engine_now(e);
}

/* Is zeroed memory a default mutex (glibc's PTHREAD_MUTEX_INITIALIZER is
 * all zero)? Then the CQ table's 2^17 locks are ready as calloc leaves
 * them: initialising each wrote all 10.5 MB of the table at every
 * engine's creation, ~28 ms and half of a program's start on a VM that
 * pages in shadow tables, for CQs most programs never make. */
static bool zero_is_a_mutex(void)
{
	static const pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER, zero;

	return !memcmp(&init, &zero, sizeof(init));
}

struct xr_engine *xr_engine_create(void)
{
	struct xr_engine *e = calloc(1, sizeof(*e));

	if (!e)
		goto nomem;
	e->mrs = calloc(XR_MAX_MR, sizeof(*e->mrs));
	e->mr_variant = calloc(XR_MAX_MR, 1);
	e->cqs = calloc(XR_MAX_CQ, sizeof(*e->cqs));
	e->srqs = calloc(XR_MAX_SRQ, sizeof(*e->srqs));
	if (!e->mrs || !e->mr_variant || !e->cqs || !e->srqs)
		goto nomem;
	pthread_mutex_init(&e->reg_lock, NULL);
	pthread_mutex_init(&e->evlog_lock, NULL);
	e->debug.listen_fd = -1;
	e->t0_ns = xr_now_ns();
	xr_datapath_init(e);
	if (!zero_is_a_mutex())
		for (uint32_t i = 0; i < XR_MAX_CQ; i++)
			pthread_mutex_init(&e->cqs[i].lock, NULL);
	for (uint32_t i = 0; i < XR_MAX_SRQ; i++)
		pthread_mutex_init(&e->srqs[i].lock, NULL);
	regs_reset(e);
	return e;
nomem:
	if (e) {
		free(e->mrs);
		free(e->mr_variant);
		free(e->cqs);
		free(e->srqs);
		free(e);
	}
	errno = ENOMEM;
	return NULL;
}

void xr_engine_destroy(struct xr_engine *e)
{
	if (!e)
		return;
	xr_engine_stop_debug(e);
	xr_datapath_fini(e);
	xr_tables_free(e);
	free(e->mrs);
	free(e->mr_variant);
	free(e->cqs);
	for (uint32_t i = 0; i < XR_MAX_SRQ; i++)
		pthread_mutex_destroy(&e->srqs[i].lock);
	free(e->srqs);
	pthread_mutex_destroy(&e->reg_lock);
	pthread_mutex_destroy(&e->evlog_lock);
	free(e);
}

/* CTRL.soft_reset asserted: tables, counters and the event log start over. */
void xr_engine_soft_reset(struct xr_engine *e)
{
	/* No pass runs meanwhile (CTRL.soft_reset, set first, keeps later
	 * passes from touching the tables until it is released). */
	pthread_mutex_lock(&e->dp_mutex);
	xr_mcg_reset(e);
	xr_tables_reset(e);
	xr_pfc_reset(e);
	for (unsigned c = 0; c < XR_CNT_COUNT; c++)
		atomic_store_explicit(&e->counters[c], 0, memory_order_relaxed);
	e->latch_valid = false;
	memset(&e->evlog_latched, 0, sizeof(e->evlog_latched));
	e->evlog_latched_valid = false;
	pthread_mutex_lock(&e->evlog_lock);   /* events from outside the pass too */
	for (unsigned i = 0; i < XR_EVLOG_ENTRIES; i++)
		atomic_store_explicit(&e->evlog[i].tag, 0, memory_order_relaxed);
	atomic_store(&e->evlog_seq, 0);
	pthread_mutex_unlock(&e->evlog_lock);
	/* The shadow windows and command status go back to reset values too. */
	for (uint32_t off = XR_REG_QP_SEL; off < 0x400; off += 4) {
		const struct xr_reg_desc *d = xr_reg_by_offset(off);
		bool table_window = off < XR_REG_CAP_QP || off == XR_REG_QP_CMD_STATUS || off >= XR_REG_QP_PEER_GID_0;
		if (d && table_window)
			xr_reg_set(e, off, d->reset);
	}
	pthread_mutex_unlock(&e->dp_mutex);
	xr_dp_settle(e);   /* every QP and region gone: the host's buffers may go */
	xr_evlog_add(e, XR_EV_SOFT_RESET, 0, 0, 0);
}

void xr_engine_set_link_up(struct xr_engine *e, bool up)
{
	bool was = atomic_exchange(&e->link_up, up);
	if (was != up)
		xr_evlog_add(e, XR_EV_LINK, 0, up, 0);
}

void xr_evlog_add(struct xr_engine *e, enum xr_event_type t, uint32_t qpn, uint32_t a0, uint32_t a1)
{
	uint64_t seq, ts;
	struct xr_evlog_slot *sl;

	if ((unsigned)t < 32 && (xr_reg_get(e, XR_REG_EVLOG_MASK) >> t & 1))
		return;   /* filtered (EVLOG_MASK): nor is its interrupt raised */
	ts = xr_engine_now(e) - e->t0_ns;
	/* Events are rare (none per packet): writers take turns, so the
	 * slot always holds the newest event that maps to it. */
	pthread_mutex_lock(&e->evlog_lock);
	seq = atomic_fetch_add_explicit(&e->evlog_seq, 1, memory_order_relaxed);
	sl = &e->evlog[seq % XR_EVLOG_ENTRIES];

	atomic_store_explicit(&sl->tag, 2 * seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);   /* the odd tag before the fields */
	__atomic_store_n(&sl->ev.ts_ns, ts, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ev.type, (uint8_t)t, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ev.qpn, qpn, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ev.arg0, a0, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->ev.arg1, a1, __ATOMIC_RELAXED);
	atomic_store_explicit(&sl->tag, 2 * seq + 2, memory_order_release);
	pthread_mutex_unlock(&e->evlog_lock);
	xr_irq_event(e, t, qpn);   /* inside an access or a pass: at its end (irq.c) */
}

/* The selected event into the EVLOG_* read registers' values: invalid when
 * it is not in the ring (not yet, or overwritten) or still being written. */
void xr_evlog_read(struct xr_engine *e, uint64_t seq, struct xr_evlog_entry *out, bool *valid)
{
	uint64_t n = atomic_load(&e->evlog_seq);
	const struct xr_evlog_slot *sl = &e->evlog[seq % XR_EVLOG_ENTRIES];
	uint64_t t1, t2;

	memset(out, 0, sizeof(*out));
	*valid = false;
	if (seq >= n || n - seq > XR_EVLOG_ENTRIES)
		return;
	t1 = atomic_load_explicit(&sl->tag, memory_order_acquire);
	out->ts_ns = __atomic_load_n(&sl->ev.ts_ns, __ATOMIC_RELAXED);
	out->type = __atomic_load_n(&sl->ev.type, __ATOMIC_RELAXED);
	out->qpn = __atomic_load_n(&sl->ev.qpn, __ATOMIC_RELAXED);
	out->arg0 = __atomic_load_n(&sl->ev.arg0, __ATOMIC_RELAXED);
	out->arg1 = __atomic_load_n(&sl->ev.arg1, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_acquire);   /* the fields before the second look */
	t2 = atomic_load_explicit(&sl->tag, memory_order_relaxed);
	*valid = t1 == t2 && t1 == 2 * seq + 2;
	if (!*valid)
		memset(out, 0, sizeof(*out));
}

uint64_t xr_evlog_count(struct xr_engine *e)
{
	return atomic_load(&e->evlog_seq);
}

uint64_t xr_engine_answers_in(const struct xr_engine *e)
{
	/* Frames first: a pass counts an ACK when it takes it and its frames
	 * at the end of the burst, so the difference can only lag (a caller
	 * waiting for it looks again), never count an ACK as an answer. */
	uint64_t frames = atomic_load(&e->counters[XR_CNT_RX_PKTS]);

	return frames - atomic_load(&e->counters[XR_CNT_RX_ACK]);
}
