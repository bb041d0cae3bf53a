/* SPDX-License-Identifier: MIT */
/*
 * The in-memory link: two ends, each usually driven by its own thread, so
 * nothing here is shared under one lock. Per direction a single-producer
 * single-consumer ring of frame pointers carries frames (no copy); each
 * end owns half of one frame pool, and a receiver gives a frame back to
 * its owner through a second ring. An end has one user at a time, as a
 * NIC's queue pair has one driver: an engine makes every call on its end
 * under its pass mutex, and a test that drives an end itself does so from
 * one thread. So an end takes no lock: one per call cost a 64-byte WRITE's
 * round trip 9 % and its message rate 6 % (each atomic waits for the
 * frame's stores to reach the cache).
 *
 * Waking a sleeper costs a syscall, so it is paid only when asked for:
 * wait_fd arms the end's eventfd, and a sender writes it only when armed.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "gather.h"
#include "prefetch.h"
#include "touch.h"
#include "xroce/link.h"

/* A single-producer single-consumer ring of frame pointers. A slot is
 * NULL until the producer fills it and again once the consumer took it,
 * so the consumer finds a frame by reading its slot alone (ring_ready,
 * ring_get): the tail, one more line from the other core before every
 * frame, is read only to count what waits (the backlog). */
struct ring {
	_Alignas(64) _Atomic uint32_t tail;   /* written by the producer */
	uint32_t head_seen;          /* the producer's last read of head */
	_Alignas(64) _Atomic uint32_t head;   /* written by the consumer */
	_Alignas(64) uint32_t mask;
	_Atomic(struct xr_frame *) *slot;
};

/* Lines one end writes and the other reads cross the cores with every
 * frame; a line holding both ends' fields would cross back and forth on
 * top (a write here, a read there), so each group has a line of its own:
 * the rings' indexes, this end's free stack, the wakeup flag the other
 * end reads on every send, each end's link (its stats are written per
 * burst). */
struct end {
	struct ring in;              /* frames sent to this end */
	struct ring returned;        /* this end's frames, freed by the other */
	_Alignas(64) struct xr_frame **free_stack;   /* this end's alone */
	uint32_t nfree;
	/* Gather frames sent and maybe not read yet, oldest first (settle):
	 * an entry is stale once its frame is read or reused (seq). */
	struct gather_out {
		struct xr_frame *f;
		uint32_t seq;
	} *out;
	uint32_t out_head, out_tail, out_mask, next_seq;
	_Alignas(64) _Atomic bool armed;   /* read by the other end per send */
	int efd;                     /* written when armed and a frame comes */
};

struct padded_link {
	_Alignas(64) struct xr_link l;
};

struct mem_pair {
	struct end end[2];
	struct xr_frame *frames;     /* the pool: first half end 0's, second half end 1's */
	uint32_t per_end;            /* frames each end owns */
	unsigned depth;              /* frames a direction may hold */
	_Atomic int refs;
	struct padded_link links[2];
};

static struct mem_pair *pair_of(struct xr_link *l, int *me)
{
	struct mem_pair *p = l->priv;
	*me = (l == &p->links[0].l) ? 0 : 1;
	return p;
}

static int ring_init(struct ring *r, uint32_t capacity)
{
	uint32_t size = 1;
	while (size < capacity)
		size <<= 1;
	r->slot = calloc(size, sizeof(*r->slot));
	r->mask = size - 1;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return r->slot ? 0 : -ENOMEM;
}

static uint32_t ring_count(struct ring *r)
{
	return atomic_load_explicit(&r->tail, memory_order_acquire) -
	       atomic_load_explicit(&r->head, memory_order_acquire);
}

/* Producer side: puts up to n frames while the ring holds fewer than limit.
 * The consumer writes head with every frame it takes, so reading it per
 * put is a miss on the other core's line each time (150 ns of an 8-byte
 * WRITE's half round trip, timed): the head last seen is read again only
 * when the ring looks too full for this put. */
static unsigned ring_put(struct ring *r, struct xr_frame **f, unsigned n, uint32_t limit)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t used = tail - r->head_seen;
	unsigned k = 0;

	if (used + n > limit) {
		r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
		used = tail - r->head_seen;
	}

	/* The frame before its pointer; a slot is free again (NULL) once
	 * the head, read above, has passed it. */
	for (; k < n && used + k < limit; k++)
		atomic_store_explicit(&r->slot[(tail + k) & r->mask], f[k], memory_order_release);
	atomic_store_explicit(&r->tail, tail + k, memory_order_release);
	return k;
}

/* Consumer side: is a frame waiting (its slot filled)? */
static bool ring_ready(struct ring *r)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	return atomic_load_explicit(&r->slot[head & r->mask], memory_order_relaxed) != NULL;
}

/* Consumer side: takes up to n frames, slot by slot. */
static unsigned ring_get(struct ring *r, struct xr_frame **f, unsigned n)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	unsigned k = 0;

	for (; k < n; k++) {
		_Atomic(struct xr_frame *) *sl = &r->slot[(head + k) & r->mask];
		if (!(f[k] = atomic_load_explicit(sl, memory_order_acquire)))
			break;
		atomic_store_explicit(sl, NULL, memory_order_relaxed);
	}
	/* The emptied slots before the head that lets the producer refill them. */
	atomic_store_explicit(&r->head, head + k, memory_order_release);
	return k;
}

static int owner_of(struct mem_pair *p, struct xr_frame *f)
{
	return (uint32_t)(f - p->frames) >= p->per_end;
}

static struct xr_frame *mem_alloc(struct xr_link *l)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	struct end *e = &p->end[me];
	struct xr_frame *f = NULL;

	if (!e->nfree)   /* take back what the other end has finished with */
		e->nfree = ring_get(&e->returned, e->free_stack, p->per_end);
	if (e->nfree)
		f = e->free_stack[--e->nfree];
	/* The next frame's first lines were last read on the other core:
	 * take them for writing now, while this frame is being built. They
	 * hold the fields, any packet's headers and a small payload (a
	 * 64-byte WRITE is 138 bytes); a longer copy streams on its own. */
	if (e->nfree) {
		struct xr_frame *next = e->free_stack[e->nfree - 1];
		xr_prefetch_for_write(next, XR_FRAME_SMALL_LINES);
		_Static_assert(offsetof(struct xr_frame, data) + 138 <= 64 * XR_FRAME_SMALL_LINES &&
				       offsetof(struct xr_frame, data) + 82 <= 128,
			       "the fields and a 64-byte WRITE in three lines, an 8-byte one in two");
	}
	if (f) {
		f->next = NULL;
		f->len = 0;
		f->rx_flags = 0;
		f->gather = NULL;
		f->gather_seq = 0;
		__atomic_store_n(&f->gather_state, XR_GATHER_NONE, __ATOMIC_RELAXED);
	}
	return f;
}

/* ---- gather frames: what this end sent by reference ---- */

static bool out_stale(const struct gather_out *o)
{
	uint8_t s = __atomic_load_n(&o->f->gather_state, __ATOMIC_ACQUIRE);

	return o->f->gather_seq != o->seq || s == XR_GATHER_DONE || s == XR_GATHER_COPIED || s == XR_GATHER_NONE;
}

/* Room for one more entry, dropping stale ones from the front only when
 * there is none: the oldest frame out is most often the one the receiver
 * is reading now, and a look at its state per send took its line from
 * the receiver's core in the middle of the claim. */
static bool out_room(struct end *e, uint32_t staged)
{
	if (e->out_tail - e->out_head + staged <= e->out_mask)
		return true;
	while (e->out_head != e->out_tail && out_stale(&e->out[e->out_head & e->out_mask]))
		e->out_head++;
	return e->out_tail - e->out_head + staged <= e->out_mask;
}

/* Every gather frame this end sent: its payload copied in unless the
 * receiver has claimed it, then the readers of those claimed are waited
 * for (each frees its frame when done with the packet). After the first
 * loop no frame can be claimed any more. */
static void mem_settle(struct xr_link *l)
{
	int me;
	struct end *e = &pair_of(l, &me)->end[me];

	if (!e->out)
		return;
	xr_frame_release_claim();
	for (uint32_t i = e->out_head; i != e->out_tail; i++) {
		struct gather_out *o = &e->out[i & e->out_mask];
		struct xr_frame *f = o->f;
		uint8_t s = XR_GATHER_OUT;

		if (f->gather_seq == o->seq &&
		    __atomic_compare_exchange_n(&f->gather_state, &s, XR_GATHER_SETTLING, false, __ATOMIC_ACQUIRE,
						__ATOMIC_ACQUIRE)) {
			memcpy(f->data + f->gather_off, f->gather, f->gather_len);
			f->gather = NULL;
			__atomic_store_n(&f->gather_state, XR_GATHER_COPIED, __ATOMIC_RELEASE);
			l->stats.gather_settled++;
		}
	}
	for (; e->out_head != e->out_tail; e->out_head++) {
		struct gather_out *o = &e->out[e->out_head & e->out_mask];
		if (o->f->gather_seq != o->seq)
			continue;   /* read, freed and reused since */
		while (__atomic_load_n(&o->f->gather_state, __ATOMIC_ACQUIRE) == XR_GATHER_READING)
			sched_yield();   /* its reader may be off its core */
	}
}

static void mem_free(struct xr_link *l, struct xr_frame *f)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	int owner;

	if (!f)
		return;
	owner = owner_of(p, f);
	if (__atomic_load_n(&f->gather_state, __ATOMIC_RELAXED) != XR_GATHER_NONE)
		xr_frame_gather_done(f);
	if (owner == me)
		p->end[me].free_stack[p->end[me].nfree++] = f;
	else   /* the ring holds the owner's whole pool: it cannot be full */
		ring_put(&p->end[owner].returned, &f, 1, p->per_end);
}

static void wake(struct end *e)
{
	uint64_t one = 1;

	/* Pairs with the fence in mem_wait_fd: either the sleeper's last pass
	 * sees our frame, or we see it armed. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&e->armed, memory_order_relaxed) && atomic_exchange(&e->armed, false)) {
		if (write(e->efd, &one, sizeof(one)) < 0) {
			/* A full counter already wakes the sleeper. */
		}
	}
}

static int mem_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	struct end *peer = &p->end[!me];
	struct end *e = &p->end[me];
	unsigned taken, staged = 0;

	for (unsigned i = 0; e->out && i < n; i++) {
		if (!f[i]->gather)
			continue;
		if (out_room(e, staged + 1)) {
			if (!f[i]->gather_seq)   /* the sender's own, or one of ours */
				f[i]->gather_seq = ++e->next_seq;
			staged++;
		} else {
			xr_frame_flatten(f[i]);   /* too many out: this one goes whole */
		}
	}
	taken = ring_put(&peer->in, f, n, p->depth);
	for (unsigned i = 0; staged && i < taken; i++)
		if (f[i]->gather) {
			e->out[e->out_tail++ & e->out_mask] = (struct gather_out){ f[i], f[i]->gather_seq };
			l->stats.tx_gather++;
		}
	if (taken)
		wake(peer);
	l->stats.tx_frames += taken;
	return (int)taken;
}

static int mem_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	unsigned got;

	/* Only the other end moves the tail, and only we move the head. */
	if (!ring_ready(&p->end[me].in))
		return 0;
	got = ring_get(&p->end[me].in, f, n);
	/* The frames' first lines are in the sender's cache: ask for them
	 * all at once, not one miss after another as the engine reads each
	 * frame's length, then its headers. */
	for (unsigned i = 0; i < got; i++)
		for (unsigned k = 0; k < XR_FRAME_SMALL_LINES; k++)
			__builtin_prefetch((const char *)f[i] + 64 * k);
	l->stats.rx_frames += got;
	return (int)got;
}

/* The caller is about to sleep on this fd: arm it, then the caller makes
 * one more pass before sleeping (frames that came before arming). */
static int mem_wait_fd(struct xr_link *l)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	struct end *e = &p->end[me];
	uint64_t v;

	if (read(e->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
	atomic_store(&e->armed, true);
	atomic_thread_fence(memory_order_seq_cst);
	if (ring_ready(&e->in))
		wake(e);   /* already waiting: make the fd readable now */
	return e->efd;
}

static int mem_arm(struct xr_link *l, bool arm);

/* Standing by while a caller drives: frames wake nobody until mem_arm. */
static int mem_standby_fd(struct xr_link *l)
{
	int me;
	struct end *e = &pair_of(l, &me)->end[me];
	uint64_t v;

	if (read(e->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
	mem_arm(l, false);
	return e->efd;
}

static int mem_arm(struct xr_link *l, bool arm)
{
	int me;
	struct end *e = &pair_of(l, &me)->end[me];

	atomic_store(&e->armed, arm);
	/* As mem_wait_fd's; withdrawn, a sender that still saw it armed
	 * writes the fd: a wakeup that finds the frame taken. A waiting
	 * frame is seen in its slot, a line this end just read: the tail
	 * (ring_count) is the producer's line, which receiving never reads,
	 * and reading it made every pause a miss on the other core (a
	 * tenth of a ping-pong's half round trip through the thread). The
	 * head is read plainly: callers hold the engine's dp_mutex, as every
	 * consumer does (a stale head would find an emptied slot). */
	atomic_thread_fence(memory_order_seq_cst);
	return arm && ring_ready(&e->in);
}

static bool mem_is_up(struct xr_link *l)
{
	(void)l;
	return true;
}

static void pair_free(struct mem_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct end *e = &p->end[i];
		if (e->efd >= 0)
			close(e->efd);
		free(e->in.slot);
		free(e->returned.slot);
		free(e->free_stack);
		free(e->out);
	}
	free(p->frames);
	free(p);
}

static void mem_close(struct xr_link *l)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);

	mem_settle(l);   /* the peer may still read what this end sent */
	if (atomic_fetch_sub(&p->refs, 1) == 1)
		pair_free(p);
}

/* A point-to-point wire: every peer is behind the other end. */
static int mem_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	int me;
	struct mem_pair *p = pair_of(l, &me);

	(void)gid;
	memcpy(mac, p->links[!me].l.mac, 6);
	return 0;
}

/* Frames sent to this end and not yet received, of the depth a direction holds. */
static int mem_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);

	*queued = ring_count(&p->end[me].in);
	*capacity = p->depth;
	return 0;
}

static const struct xr_link_ops mem_ops = {
	mem_send, mem_recv, mem_wait_fd, mem_alloc, mem_free, mem_is_up, mem_close, mem_resolve, mem_rx_backlog, NULL,
	mem_standby_fd, mem_arm, mem_settle, NULL,
};

int xr_link_mem_pair(struct xr_link **a, struct xr_link **b, unsigned depth)
{
	return xr_link_mem_pair_ex(a, b, depth, 0);
}

int xr_link_mem_pair_ex(struct xr_link **a, struct xr_link **b, unsigned depth, unsigned flags)
{
	/* Aligned as its lines are laid out (calloc gives 16 bytes). */
	struct mem_pair *p;
	size_t pool_bytes;
	int err = 0;

	if (flags & ~XR_MEM_GATHER)
		return -EINVAL;
	p = aligned_alloc(_Alignof(struct mem_pair), sizeof(struct mem_pair));
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->depth = depth ? depth : 1024;
	/* Each end can fill the other's queue and still build a burst. */
	p->per_end = p->depth + 128;
	/* Not on huge pages: MADV_HUGEPAGE measured +4 to +9 %, but a huge
	 * page's first touch may stall for compaction mid-traffic (two CI
	 * runs with it had an ACK later than its timeout; performance.md).
	 * Each page written once now, not at each frame's first use: the pool
	 * is cycled through, and on a VM that pages in shadow tables every
	 * first touch from here faults (12 us a page here, even one the kernel
	 * has populated): a ping-pong's first thousand round trips took 13-20
	 * us each, not 1.5. It costs the pair its whole pool in memory at once
	 * (9.4 MB at the default depth, 3.1 MB at 256) and ~11 ms. */
	pool_bytes = (size_t)2 * p->per_end * sizeof(struct xr_frame);
	p->frames = aligned_alloc(64, pool_bytes);
	xr_pages_touch(p->frames, pool_bytes, true);
	for (int i = 0; i < 2; i++) {
		struct end *e = &p->end[i];
		e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		e->free_stack = calloc(p->per_end, sizeof(*e->free_stack));
		if (e->efd < 0 || !e->free_stack || ring_init(&e->in, p->depth) || ring_init(&e->returned, p->per_end))
			err = -ENOMEM;
		if (flags & XR_MEM_GATHER) {
			/* Every frame the end owns may be out at once. */
			uint32_t size = 2;
			while (size <= p->per_end)
				size <<= 1;
			e->out = calloc(size, sizeof(*e->out));
			e->out_mask = size - 1;
			if (!e->out)
				err = -ENOMEM;
		}
	}
	if (err || !p->frames) {
		pair_free(p);
		return -ENOMEM;
	}
	for (int i = 0; i < 2; i++) {
		struct xr_link *l = &p->links[i].l;
		for (uint32_t k = 0; k < p->per_end; k++)
			p->end[i].free_stack[p->end[i].nfree++] = &p->frames[(uint32_t)i * p->per_end + k];
		l->ops = &mem_ops;
		l->kind = "mem";
		l->mtu = 9000;
		l->priv = p;
		l->mac[0] = 0x02;
		l->mac[5] = (uint8_t)(i + 1);
		l->gather = flags & XR_MEM_GATHER;
	}
	atomic_init(&p->refs, 2);
	*a = &p->links[0].l;
	*b = &p->links[1].l;
	return 0;
}
