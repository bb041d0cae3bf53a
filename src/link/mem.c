/* SPDX-License-Identifier: MIT */
/*
 * The in-memory link: two ends joined by two bounded frame queues, with
 * one frame pool for both (a frame sent by one end is freed by the other).
 * Sending passes the frame pointer: no copy. An eventfd per direction lets
 * a receiver sleep in poll().
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "xroce/link.h"

struct queue {
	struct xr_frame *head, *tail;
	unsigned count;
	int efd;                 /* readable while frames are queued */
};

struct mem_pair {
	pthread_mutex_t lock;
	struct xr_frame *free_list;
	struct xr_frame *frames; /* the pool, one allocation */
	struct queue q[2];       /* q[i]: frames for end i */
	unsigned depth;
	int refs;
	struct xr_link ends[2];
};

static struct mem_pair *pair_of(struct xr_link *l, int *me)
{
	struct mem_pair *p = l->priv;
	*me = (l == &p->ends[0]) ? 0 : 1;
	return p;
}

static struct xr_frame *mem_alloc(struct xr_link *l)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	struct xr_frame *f;

	pthread_mutex_lock(&p->lock);
	f = p->free_list;
	if (f)
		p->free_list = f->next;
	pthread_mutex_unlock(&p->lock);
	if (f) {
		f->next = NULL;
		f->len = 0;
	}
	return f;
}

static void mem_free(struct xr_link *l, struct xr_frame *f)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);

	if (!f)
		return;
	pthread_mutex_lock(&p->lock);
	f->next = p->free_list;
	p->free_list = f;
	pthread_mutex_unlock(&p->lock);
}

static int mem_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	struct queue *q = &p->q[!me];
	unsigned taken = 0;
	bool was_empty;

	pthread_mutex_lock(&p->lock);
	was_empty = q->count == 0;
	for (; taken < n && q->count < p->depth; taken++) {
		struct xr_frame *fr = f[taken];
		fr->next = NULL;
		if (q->tail)
			q->tail->next = fr;
		else
			q->head = fr;
		q->tail = fr;
		q->count++;
	}
	pthread_mutex_unlock(&p->lock);
	if (taken && was_empty) {
		uint64_t one = 1;
		if (write(q->efd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow with one per transition. */
		}
	}
	l->stats.tx_frames += taken;
	return (int)taken;
}

static int mem_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	struct queue *q = &p->q[me];
	unsigned got = 0;

	pthread_mutex_lock(&p->lock);
	while (got < n && q->head) {
		f[got++] = q->head;
		q->head = q->head->next;
		q->count--;
	}
	if (!q->head) {
		uint64_t v;
		q->tail = NULL;
		if (read(q->efd, &v, sizeof(v)) < 0) {
			/* EAGAIN: already drained */
		}
	}
	pthread_mutex_unlock(&p->lock);
	l->stats.rx_frames += got;
	return (int)got;
}

static int mem_wait_fd(struct xr_link *l)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	return p->q[me].efd;
}

static bool mem_is_up(struct xr_link *l)
{
	(void)l;
	return true;
}

static void mem_close(struct xr_link *l)
{
	int me;
	struct mem_pair *p = pair_of(l, &me);
	bool last;

	pthread_mutex_lock(&p->lock);
	last = --p->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (!last)
		return;
	close(p->q[0].efd);
	close(p->q[1].efd);
	pthread_mutex_destroy(&p->lock);
	free(p->frames);
	free(p);
}

/* A point-to-point wire: every peer is behind the other end. */
static int mem_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	int me;
	struct mem_pair *p = pair_of(l, &me);

	(void)gid;
	memcpy(mac, p->ends[!me].mac, 6);
	return 0;
}

static const struct xr_link_ops mem_ops = {
	mem_send, mem_recv, mem_wait_fd, mem_alloc, mem_free, mem_is_up, mem_close, mem_resolve,
};

int xr_link_mem_pair(struct xr_link **a, struct xr_link **b, unsigned depth)
{
	struct mem_pair *p = calloc(1, sizeof(*p));
	unsigned nframes;

	if (!p)
		return -ENOMEM;
	p->depth = depth ? depth : 1024;
	nframes = 2 * p->depth + 256;
	p->frames = aligned_alloc(64, (size_t)nframes * sizeof(struct xr_frame));
	p->q[0].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	p->q[1].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!p->frames || p->q[0].efd < 0 || p->q[1].efd < 0) {
		if (p->q[0].efd >= 0) close(p->q[0].efd);
		if (p->q[1].efd >= 0) close(p->q[1].efd);
		free(p->frames);
		free(p);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nframes; i++) {
		p->frames[i].next = p->free_list;
		p->free_list = &p->frames[i];
	}
	pthread_mutex_init(&p->lock, NULL);
	p->refs = 2;
	for (int i = 0; i < 2; i++) {
		struct xr_link *l = &p->ends[i];
		l->ops = &mem_ops;
		l->kind = "mem";
		l->mtu = 9000;
		l->priv = p;
		l->mac[0] = 0x02;
		l->mac[5] = (uint8_t)(i + 1);
	}
	*a = &p->ends[0];
	*b = &p->ends[1];
	return 0;
}
