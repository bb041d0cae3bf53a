/* SPDX-License-Identifier: MIT */
/*
 * The machine's own bounds, shared by the benches so that each compares
 * with the same yardstick, measured in its own run:
 *   bound_copy_crc_rate  one core doing the unavoidable per-byte work of
 *                        an RDMA WRITE: the sender's ICRC, the receiver's
 *                        ICRC and the receiver's copy, per packet;
 *   bound_cacheline_half_rtt_us  two threads on two cores bouncing one
 *                        cache line (the least a busy-polling exchange
 *                        between two cores can cost);
 *   bound_spsc_msg_rate  64-byte messages through an SPSC ring between
 *                        the cores;
 *   bound_wakeup_us      waking a thread asleep on an eventfd on the
 *                        other core, where a program spins (what an engine
 *                        thread costs a program that spins on memory);
 *   bound_memlink_half_rtt_us  the in-memory link alone: an 8-byte
 *                        WRITE's frame sent back and forth between the
 *                        cores (what an engine's latency pays for the link).
 */
#ifndef XR_BENCH_BOUND_H
#define XR_BENCH_BOUND_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xroce/link.h"
#include "xroce/wire.h"

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Per message: for each packet, CRC the source, copy it, CRC the copy.
 * Sources and destinations rotate through 16 messages' worth of memory,
 * as xroce-perf's buffers do (16 slots). */
static inline double bound_copy_crc_rate(size_t size, size_t mtu, double seconds)
{
	const size_t span = 16 * size;
	uint8_t *src = malloc(span), *dst = malloc(span);
	volatile uint32_t sink = 0;
	uint64_t bytes = 0;
	size_t off = 0;
	double t0, t;

	if (!src || !dst) {
		free(src);
		free(dst);
		return -1;
	}
	for (size_t i = 0; i < span; i++)
		src[i] = (uint8_t)(i * 31);
	memset(dst, 0, span);
	t0 = now_s();
	do {
		for (int rep = 0; rep < 16; rep++) {
			if (off + size > span)
				off = 0;
			for (size_t p = 0; p < size; p += mtu) {
				size_t n = size - p < mtu ? size - p : mtu;
				sink ^= xr_crc32(0, src + off + p, n);
				memcpy(dst + off + p, src + off + p, n);
				sink ^= xr_crc32(0, dst + off + p, n);
			}
			off += size;
			bytes += size;
		}
		t = now_s();
	} while (t - t0 < seconds);
	free(src);
	free(dst);
	return (double)bytes / (t - t0);
}

/* One cache line, two threads: the initiator writes an odd number, the
 * echoer answers with the next even one. */
struct pp {
	_Alignas(64) _Atomic uint64_t line;
	unsigned iters;
	int cpu;
};

static inline void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);   /* best effort: an unpinned run still measures */
}

static inline void *echoer(void *arg)
{
	struct pp *p = arg;
	pin(p->cpu);
	for (uint64_t v = 1; v < 2ull * p->iters; v += 2) {
		while (atomic_load_explicit(&p->line, memory_order_acquire) != v)
			;
		atomic_store_explicit(&p->line, v + 1, memory_order_release);
	}
	return NULL;
}

static inline double bound_cacheline_half_rtt_us(unsigned iters)
{
	struct pp p = { .iters = iters, .cpu = 1 };
	double *lat = malloc(iters * sizeof(double)), med;
	pthread_t t;

	if (!lat)
		return -1;
	atomic_store(&p.line, 0);
	if (pthread_create(&t, NULL, echoer, &p)) {
		free(lat);
		return -1;
	}
	pin(0);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t v = 2ull * i + 1;
		double t0 = now_s();
		atomic_store_explicit(&p.line, v, memory_order_release);
		while (atomic_load_explicit(&p.line, memory_order_acquire) != v + 1)
			;
		lat[i] = (now_s() - t0) * 1e6 / 2;
	}
	pthread_join(t, NULL);
	qsort(lat, iters, sizeof(double), cmp_double);
	med = lat[iters / 2];
	free(lat);
	return med;
}

/* Two cores, the in-memory link alone, the per-byte work of a stream of
 * WRITEs and nothing else: the sender copies a burst of packets' payloads
 * from the source into frames, then CRCs each frame (as the engine seals
 * a burst at its flush) and sends the burst, the receiver CRCs each frame
 * and copies the payload out. The ceiling of the engine's 64 KiB row on
 * this link: what it adds is headers, checks and bookkeeping. With gather
 * the frame carries only a pointer to its source, as a send that reads
 * the payload from the MR (no copy into the frame) would: the sender CRCs
 * the source, the receiver CRCs and copies from it. */
struct memlink_stream {
	struct xr_link *l;
	const uint8_t *src;
	uint8_t *dst;
	size_t size, mtu;
	bool gather;
	_Atomic bool done;           /* the sender stopped: drain and finish */
	uint64_t bytes, bad;         /* the receiver's */
	double t_end;
};

static inline void *memlink_stream_rx(void *arg)
{
	struct memlink_stream *m = arg;
	size_t off = 0;

	pin(1);
	for (;;) {
		struct xr_frame *f[32];
		/* Read before the ring: done seen, an empty ring is the end. */
		bool done = atomic_load_explicit(&m->done, memory_order_acquire);
		int n = xr_link_recv(m->l, f, 32);
		if (n <= 0) {
			if (done)
				break;
			continue;
		}
		for (int i = 0; i < n; i++) {
			const uint8_t *pay = f[i]->data + 64;
			uint32_t want;
			size_t len = f[i]->len - 64;
			if (m->gather)
				memcpy(&pay, f[i]->data + 8, sizeof(pay));
			memcpy(&want, f[i]->data, 4);
			m->bad += xr_crc32(0, pay, len) != want;
			if (off + len > m->size)
				off = 0;
			memcpy(m->dst + off, pay, len);
			off += len;
			m->bytes += len;
			xr_link_frame_free(m->l, f[i]);
		}
	}
	m->t_end = now_s();
	return NULL;
}

/* Packets per burst: the engine's requester fills one 64 KiB message's
 * sixteen 4 KiB packets in a pass, then flushes them. */
#define MEMLINK_BURST 16

/* Bytes per second that reached the receiver; -1 on failure. */
static inline double bound_memlink_stream_rate(size_t size, size_t mtu, double seconds, bool gather)
{
	/* A packet's payload goes 64 bytes into a frame: no more than fits. */
	const size_t most = sizeof(((struct xr_frame *)0)->data) - 64;
	struct memlink_stream m = { .size = size, .mtu = mtu < most ? mtu : most, .gather = gather };
	uint8_t *src = malloc(size), *dst = malloc(size);
	struct xr_link *a, *b;
	double t0, rate = -1;
	pthread_t t;

	if (!src || !dst || xr_link_mem_pair(&a, &b, 0)) {
		free(src);
		free(dst);
		return -1;
	}
	for (size_t i = 0; i < size; i++)
		src[i] = (uint8_t)(i * 31);
	m.l = b;
	m.src = src;
	m.dst = dst;
	atomic_init(&m.done, false);
	if (pthread_create(&t, NULL, memlink_stream_rx, &m))
		goto out;
	pin(0);
	t0 = now_s();
	for (size_t off = 0; now_s() - t0 < seconds;) {
		for (int k = 0; k < 4; k++) {
			struct xr_frame *f[MEMLINK_BURST];
			int sent = 0;
			for (int i = 0; i < MEMLINK_BURST; i++) {
				const uint8_t *s = src + off;
				size_t len = size - off < m.mtu ? size - off : m.mtu;
				while (!(f[i] = xr_link_frame_alloc(a)))
					;
				if (gather)
					memcpy(f[i]->data + 8, &s, sizeof(s));
				else
					memcpy(f[i]->data + 64, s, len);
				f[i]->len = (uint32_t)(64 + len);
				off = off + len >= size ? 0 : off + len;
			}
			for (int i = 0; i < MEMLINK_BURST; i++) {
				const uint8_t *pay = f[i]->data + 64;
				uint32_t c;
				if (gather)
					memcpy(&pay, f[i]->data + 8, sizeof(pay));
				c = xr_crc32(0, pay, f[i]->len - 64u);
				memcpy(f[i]->data, &c, 4);
			}
			while (sent < MEMLINK_BURST) {
				int r = xr_link_send(a, f + sent, MEMLINK_BURST - sent);
				sent += r > 0 ? r : 0;
			}
		}
	}
	atomic_store_explicit(&m.done, true, memory_order_release);
	pthread_join(t, NULL);
	if (!m.bad)
		rate = (double)m.bytes / (m.t_end - t0);
out:
	xr_link_close(a);
	xr_link_close(b);
	free(src);
	free(dst);
	return rate;
}

/* One end of the bare link's frame ping-pong: receive the frame, read
 * its bytes, free it, send one of the same size back. */
#define MEMLINK_FRAME 82   /* Ethernet, IPv4, UDP, BTH, RETH, 8 bytes, ICRC */
struct memlink_pp {
	struct xr_link *l;
	unsigned iters;
	int cpu;
	bool first;                  /* sends before its first receive */
	double *lat;                 /* the first end's half round trips */
};

static inline void *memlink_end(void *arg)
{
	struct memlink_pp *e = arg;
	struct xr_frame *f;

	pin(e->cpu);
	for (unsigned i = 0; i < e->iters; i++) {
		double t0 = now_s();
		volatile uint8_t sink;
		if (!e->first || i) {
			while (xr_link_recv(e->l, &f, 1) != 1)
				;
			sink = (uint8_t)(f->data[0] + f->data[MEMLINK_FRAME - 1] + f->len);
			(void)sink;
			xr_link_frame_free(e->l, f);
		}
		if (e->lat && i)
			e->lat[i - 1] = (now_s() - t0) * 1e6 / 2;
		while (!(f = xr_link_frame_alloc(e->l)))
			;
		memset(f->data, (int)i, MEMLINK_FRAME);
		f->len = MEMLINK_FRAME;
		while (xr_link_send(e->l, &f, 1) != 1)
			;
	}
	return NULL;
}

/* The time from one end's send to its receive of the answer, halved:
 * median over iters (the first end times the gap between its sends). */
static inline double bound_memlink_half_rtt_us(unsigned iters)
{
	struct xr_link *a, *b;
	double *lat = malloc(iters * sizeof(double)), med = -1;
	struct memlink_pp pa = { .iters = iters, .cpu = 0, .first = true, .lat = lat };
	struct memlink_pp pb = { .iters = iters, .cpu = 1 };
	pthread_t t;

	if (!lat || iters < 2 || xr_link_mem_pair(&a, &b, 0)) {
		free(lat);
		return -1;
	}
	pa.l = a;
	pb.l = b;
	if (!pthread_create(&t, NULL, memlink_end, &pb)) {
		memlink_end(&pa);
		pthread_join(t, NULL);
		qsort(lat, iters - 1, sizeof(double), cmp_double);
		med = lat[(iters - 1) / 2];
	}
	xr_link_close(a);
	xr_link_close(b);
	free(lat);
	return med;
}

/* The machine's ceiling for message-rate traffic: a single-producer
 * single-consumer ring carrying 64-byte messages from one core to the
 * other, each copied in by the producer and read out by the consumer
 * (what a WRITE of 64 bytes must at least cost both ends). */
#define SPSC_SLOTS 256
struct spsc {
	_Alignas(64) _Atomic uint64_t tail;
	_Alignas(64) _Atomic uint64_t head;
	_Alignas(64) uint8_t slot[SPSC_SLOTS][64];
	uint64_t count;
	volatile uint64_t sum;
};

static inline void *spsc_consumer(void *arg)
{
	struct spsc *q = arg;
	uint64_t sum = 0;

	pin(1);
	for (uint64_t h = 0; h < q->count;) {
		uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
		for (; h < t; h++) {
			uint8_t m[64];
			memcpy(m, q->slot[h % SPSC_SLOTS], 64);
			sum += m[0] + m[63];
		}
		atomic_store_explicit(&q->head, h, memory_order_release);
	}
	q->sum = sum;
	return NULL;
}

/* Messages per second through the ring. */
static inline double bound_spsc_msg_rate(double seconds)
{
	struct spsc *q = aligned_alloc(64, sizeof(*q));
	uint8_t msg[64];
	pthread_t t;
	double t0, t1;

	if (!q)
		return -1;
	memset(q, 0, sizeof(*q));
	memset(msg, 0x5a, sizeof(msg));
	/* About `seconds` at a rate of the order this machine reaches. */
	q->count = (uint64_t)(seconds * 50e6);
	if (pthread_create(&t, NULL, spsc_consumer, q)) {
		free(q);
		return -1;
	}
	pin(0);
	t0 = now_s();
	for (uint64_t i = 0; i < q->count;) {
		uint64_t room = SPSC_SLOTS - (i - atomic_load_explicit(&q->head, memory_order_acquire));
		for (; room && i < q->count; room--, i++) {
			msg[0] = (uint8_t)i;
			memcpy(q->slot[i % SPSC_SLOTS], msg, 64);
			atomic_store_explicit(&q->tail, i + 1, memory_order_release);
		}
	}
	pthread_join(t, NULL);
	t1 = now_s();
	double n = (double)q->count;
	free(q);
	return n / (t1 - t0);
}

/* One cross-core wakeup: a thread asleep in poll() on an eventfd, on the
 * core where another thread spins (a program polling memory), is woken
 * from this core and answers through a cache line this core spins on. It
 * sleeps at real-time priority when allowed, as the drop-in library's
 * engine thread does. The median of iters, in microseconds. */
struct wk {
	_Alignas(64) _Atomic uint64_t line;
	_Alignas(64) _Atomic bool stop;   /* not on the measured line */
	int efd;
	unsigned iters;
	bool rt;                          /* the sleeper got real-time priority */
};

static inline void *wk_spinner(void *arg)
{
	struct wk *w = arg;
	pin(1);
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed))
		;
	return NULL;
}

static inline void *wk_sleeper(void *arg)
{
	struct wk *w = arg;
	struct sched_param sp = { .sched_priority = 1 };
	uint64_t v;

	pin(1);
	w->rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;   /* as the library, when allowed */
	for (unsigned i = 1; i <= w->iters; i++) {
		struct pollfd pf = { w->efd, POLLIN, 0 };
		if (poll(&pf, 1, 1000) <= 0 || read(w->efd, &v, sizeof(v)) != sizeof(v))
			break;
		atomic_store_explicit(&w->line, i, memory_order_release);
	}
	return NULL;
}

static inline double bound_wakeup_us(unsigned iters, bool *rt)
{
	struct wk w = { .iters = iters };
	double *lat = malloc(iters * sizeof(double)), med = -1;
	pthread_t spin, sleeper;
	unsigned done = 0;

	w.efd = eventfd(0, EFD_CLOEXEC);
	if (!iters || !lat || w.efd < 0 || pthread_create(&spin, NULL, wk_spinner, &w)) {
		free(lat);
		if (w.efd >= 0)
			close(w.efd);
		return -1;
	}
	if (pthread_create(&sleeper, NULL, wk_sleeper, &w)) {
		atomic_store(&w.stop, true);
		pthread_join(spin, NULL);
		free(lat);
		close(w.efd);
		return -1;
	}
	pin(0);
	for (unsigned i = 1; i <= iters; i++) {
		uint64_t one = 1;
		double t0, deadline;
		struct timespec gap = { 0, 200000 };   /* let it fall asleep again */
		nanosleep(&gap, NULL);
		t0 = now_s();
		deadline = t0 + 1.0;
		if (write(w.efd, &one, sizeof(one)) != sizeof(one))
			break;
		while (atomic_load_explicit(&w.line, memory_order_acquire) != i && now_s() < deadline)
			;
		if (atomic_load_explicit(&w.line, memory_order_acquire) != i)
			break;
		lat[done++] = (now_s() - t0) * 1e6;
	}
	atomic_store(&w.stop, true);
	{
		uint64_t one = 1;   /* a sleeper still waiting (a break above) */
		if (write(w.efd, &one, sizeof(one)) < 0) {
		}
	}
	pthread_join(sleeper, NULL);
	pthread_join(spin, NULL);
	close(w.efd);
	if (done == iters) {   /* a partial sample (a lost wakeup) is no figure */
		qsort(lat, done, sizeof(double), cmp_double);
		med = lat[done / 2];
	}
	if (rt)
		*rt = w.rt;
	free(lat);
	return med;
}

#endif
