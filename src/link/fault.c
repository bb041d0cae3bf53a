/* SPDX-License-Identifier: MIT */
/*
 * Fault injection on any link: each frame sent may be dropped, duplicated,
 * held back behind the next one (reordered), bit-flipped (the ICRC or IP
 * checksum must catch it) or delayed. Decisions come from a seeded
 * generator, so a failing run is reproduced by its seed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xroce/link.h"

#define HELD_MAX 256

struct fault {
	struct xr_link link;
	struct xr_link *inner;
	struct xr_fault_cfg cfg;
	uint64_t rng;
	struct xr_frame *held[HELD_MAX];   /* delayed or reordered, by due time */
	unsigned nheld;
	struct xr_fault_stats st;
	pthread_mutex_t lock;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: small, seedable, good enough to draw fault decisions. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static bool chance(struct fault *ft, double p)
{
	return p > 0 && (double)(next_rand(&ft->rng) >> 11) * 0x1.0p-53 < p;
}

/* Sends held frames whose time has come (or all, when force). */
static void release_due(struct fault *ft, bool force)
{
	uint64_t now = now_ns();
	unsigned keep = 0;

	for (unsigned i = 0; i < ft->nheld; i++) {
		struct xr_frame *f = ft->held[i];
		if ((force || f->due_ns <= now) && xr_link_send(ft->inner, &f, 1) == 1)
			continue;
		ft->held[keep++] = f;
	}
	ft->nheld = keep;
}

static void hold(struct fault *ft, struct xr_frame *f, uint64_t due)
{
	if (ft->nheld == HELD_MAX) {
		xr_link_frame_free(ft->inner, f);   /* no room: it is lost, as on a full switch */
		ft->st.dropped++;
		return;
	}
	f->due_ns = due;
	ft->held[ft->nheld++] = f;
}

static int fault_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct fault *ft = l->priv;
	unsigned i;

	pthread_mutex_lock(&ft->lock);
	release_due(ft, false);
	for (i = 0; i < n; i++) {
		struct xr_frame *fr = f[i];
		if (chance(ft, ft->cfg.drop)) {
			xr_link_frame_free(ft->inner, fr);
			ft->st.dropped++;
			continue;
		}
		if (chance(ft, ft->cfg.corrupt) && fr->len > 0) {
			size_t byte = next_rand(&ft->rng) % fr->len;
			fr->data[byte] ^= (uint8_t)(1u << (next_rand(&ft->rng) % 8));
			ft->st.corrupted++;
		}
		if (chance(ft, ft->cfg.duplicate)) {
			struct xr_frame *dup = xr_link_frame_alloc(ft->inner);
			if (dup) {
				dup->len = fr->len;
				memcpy(dup->data, fr->data, fr->len);
				if (xr_link_send(ft->inner, &dup, 1) != 1)
					xr_link_frame_free(ft->inner, dup);
				else
					ft->st.duplicated++;
			}
		}
		if (chance(ft, ft->cfg.delay)) {
			hold(ft, fr, now_ns() + (uint64_t)ft->cfg.delay_us * 1000);
			ft->st.delayed++;
			continue;
		}
		if (chance(ft, ft->cfg.reorder)) {
			/* Due at once, but sent after the frames behind it. */
			hold(ft, fr, 0);
			ft->st.reordered++;
			continue;
		}
		if (xr_link_send(ft->inner, &fr, 1) != 1)
			break;   /* the inner link is full: the caller keeps the rest */
	}
	l->stats.tx_frames += i;
	pthread_mutex_unlock(&ft->lock);
	return (int)i;
}

static int fault_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct fault *ft = l->priv;
	int got;

	pthread_mutex_lock(&ft->lock);
	release_due(ft, false);
	pthread_mutex_unlock(&ft->lock);
	got = xr_link_recv(ft->inner, f, n);
	if (got > 0)
		l->stats.rx_frames += (uint64_t)got;
	return got;
}

static int fault_wait_fd(struct xr_link *l)
{
	struct fault *ft = l->priv;
	return ft->inner->ops->wait_fd(ft->inner);
}

static struct xr_frame *fault_alloc(struct xr_link *l)
{
	struct fault *ft = l->priv;
	return xr_link_frame_alloc(ft->inner);
}

static void fault_free(struct xr_link *l, struct xr_frame *f)
{
	struct fault *ft = l->priv;
	xr_link_frame_free(ft->inner, f);
}

static bool fault_is_up(struct xr_link *l)
{
	struct fault *ft = l->priv;
	return ft->inner->ops->is_up(ft->inner);
}

static void fault_close(struct xr_link *l)
{
	struct fault *ft = l->priv;

	for (unsigned i = 0; i < ft->nheld; i++)
		xr_link_frame_free(ft->inner, ft->held[i]);
	xr_link_close(ft->inner);
	pthread_mutex_destroy(&ft->lock);
	free(ft);
}

static int fault_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	struct fault *ft = l->priv;
	return xr_link_resolve(ft->inner, gid, mac);
}

/* The inner link's receive queue (faults act on the send side). */
static int fault_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	struct fault *ft = l->priv;
	return xr_link_rx_backlog(ft->inner, queued, capacity);
}

/* Delayed or reordered frames leave on the next call. */
static bool fault_tx_held(struct xr_link *l)
{
	struct fault *ft = l->priv;
	bool held;

	pthread_mutex_lock(&ft->lock);
	held = ft->nheld > 0;
	pthread_mutex_unlock(&ft->lock);
	return held || xr_link_tx_held(ft->inner);
}

static int fault_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	struct fault *ft = l->priv;
	return xr_link_mcast(ft->inner, group, join);
}

static const struct xr_link_ops fault_ops = {
	fault_send, fault_recv, fault_wait_fd, fault_alloc, fault_free, fault_is_up, fault_close, fault_resolve,
	fault_rx_backlog, fault_tx_held, NULL, NULL, NULL, fault_mcast,
};

struct xr_link *xr_link_fault(struct xr_link *inner, const struct xr_fault_cfg *cfg)
{
	struct fault *ft;

	/* A gather link's frames must arrive in order and unread by anyone
	 * else (link.h): no faults on one. */
	if (!inner || inner->gather || !cfg || cfg->drop < 0 || cfg->drop > 1 || cfg->duplicate < 0 || cfg->duplicate > 1 ||
	    cfg->reorder < 0 || cfg->reorder > 1 || cfg->corrupt < 0 || cfg->corrupt > 1 ||
	    cfg->delay < 0 || cfg->delay > 1) {
		errno = EINVAL;
		return NULL;
	}
	ft = calloc(1, sizeof(*ft));
	if (!ft) {
		errno = ENOMEM;
		return NULL;
	}
	ft->inner = inner;
	ft->cfg = *cfg;
	ft->rng = cfg->seed;
	pthread_mutex_init(&ft->lock, NULL);
	ft->link = *inner;
	ft->link.ops = &fault_ops;
	ft->link.kind = "fault";
	ft->link.priv = ft;
	memset(&ft->link.stats, 0, sizeof(ft->link.stats));
	return &ft->link;
}

void xr_link_fault_stats(struct xr_link *l, struct xr_fault_stats *out)
{
	struct fault *ft = l->priv;

	pthread_mutex_lock(&ft->lock);
	*out = ft->st;
	pthread_mutex_unlock(&ft->lock);
}
