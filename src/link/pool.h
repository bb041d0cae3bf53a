/* SPDX-License-Identifier: MIT */
/* A fixed pool of frames for one link: made once, never per packet. */
#ifndef XR_LINK_POOL_H
#define XR_LINK_POOL_H

#include <pthread.h>
#include <stdlib.h>

#include "xroce/link.h"

struct frame_pool {
	pthread_mutex_t lock;
	struct xr_frame *free, *frames;
	unsigned nfree;   /* frames in free: what a report shows of a pool run dry */
};

static inline int pool_init(struct frame_pool *p, unsigned n)
{
	p->frames = aligned_alloc(64, (size_t)n * sizeof(struct xr_frame));
	if (!p->frames)
		return -1;
	p->free = NULL;
	p->nfree = n;
	for (unsigned i = 0; i < n; i++) {
		struct xr_frame *f = &p->frames[i];
		f->gather = NULL;   /* the engine reads it on every frame it sends */
		f->gather_state = XR_GATHER_NONE;
		f->gather_seq = 0;
		f->next = p->free;
		p->free = f;
	}
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

static inline struct xr_frame *pool_get(struct frame_pool *p)
{
	struct xr_frame *f;

	pthread_mutex_lock(&p->lock);
	f = p->free;
	if (f) {
		p->free = f->next;
		p->nfree--;
	}
	pthread_mutex_unlock(&p->lock);
	if (f) {
		f->next = NULL;
		f->len = 0;
		f->rx_flags = 0;
	}
	return f;
}

static inline void pool_put(struct frame_pool *p, struct xr_frame *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&p->lock);
	f->next = p->free;
	p->free = f;
	p->nfree++;
	pthread_mutex_unlock(&p->lock);
}

/* Up to n frames under one lock (a receive burst arms many at once). */
static inline unsigned pool_get_n(struct frame_pool *p, struct xr_frame **f, unsigned n)
{
	unsigned k = 0;

	pthread_mutex_lock(&p->lock);
	for (; k < n && p->free; k++) {
		f[k] = p->free;
		p->free = f[k]->next;
	}
	p->nfree -= k;
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < k; i++) {
		f[i]->next = NULL;
		f[i]->len = 0;
		f[i]->rx_flags = 0;
	}
	return k;
}

static inline void pool_put_n(struct frame_pool *p, struct xr_frame **f, unsigned n)
{
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < n; i++) {
		f[i]->next = p->free;
		p->free = f[i];
	}
	p->nfree += n;
	pthread_mutex_unlock(&p->lock);
}

static inline void pool_fini(struct frame_pool *p)
{
	free(p->frames);
	pthread_mutex_destroy(&p->lock);
}

#endif
