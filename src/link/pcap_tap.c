/* SPDX-License-Identifier: MIT */
/* A pcap tap on any link: every frame sent and received goes to a file. */
#include <errno.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "xroce/link.h"

struct tap {
	struct xr_link link;
	struct xr_link *inner;
	pcap_t *dead;
	pcap_dumper_t *dump;
	pthread_mutex_t lock;
	uint64_t recorded, max;    /* max 0: no limit */
	struct xr_frame scratch;   /* a copy of the frame being sent */
};

static void record(struct tap *t, const struct xr_frame *f)
{
	struct timeval tv;
	struct pcap_pkthdr h = { .caplen = f->len, .len = f->len };

	if (t->max && t->recorded >= t->max)
		return;
	t->recorded++;
	gettimeofday(&tv, NULL);
	h.ts = tv;
	pcap_dump((u_char *)t->dump, &h, f->data);
}

static int tap_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct tap *t = l->priv;
	unsigned i;

	/* One at a time, recording only what the inner link took; the copy is
	 * needed because a taken frame belongs to the other end at once. */
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < n; i++) {
		t->scratch.len = f[i]->len;
		memcpy(t->scratch.data, f[i]->data, f[i]->len);
		if (xr_link_send(t->inner, &f[i], 1) != 1)
			break;
		record(t, &t->scratch);
	}
	pthread_mutex_unlock(&t->lock);
	l->stats.tx_frames += i;
	return (int)i;
}

static int tap_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct tap *t = l->priv;
	int got = xr_link_recv(t->inner, f, n);

	if (got > 0) {
		pthread_mutex_lock(&t->lock);
		for (int i = 0; i < got; i++)
			record(t, f[i]);
		pthread_mutex_unlock(&t->lock);
		l->stats.rx_frames += (uint64_t)got;
	}
	return got;
}

static int tap_wait_fd(struct xr_link *l)
{
	struct tap *t = l->priv;
	return t->inner->ops->wait_fd(t->inner);
}

static struct xr_frame *tap_alloc(struct xr_link *l)
{
	struct tap *t = l->priv;
	return xr_link_frame_alloc(t->inner);
}

static void tap_free(struct xr_link *l, struct xr_frame *f)
{
	struct tap *t = l->priv;
	xr_link_frame_free(t->inner, f);
}

static bool tap_is_up(struct xr_link *l)
{
	struct tap *t = l->priv;
	return t->inner->ops->is_up(t->inner);
}

static void tap_close(struct xr_link *l)
{
	struct tap *t = l->priv;

	pcap_dump_close(t->dump);
	pcap_close(t->dead);
	xr_link_close(t->inner);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static int tap_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	struct tap *t = l->priv;
	return xr_link_resolve(t->inner, gid, mac);
}

static int tap_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	struct tap *t = l->priv;
	return xr_link_rx_backlog(t->inner, queued, capacity);
}

static bool tap_tx_held(struct xr_link *l)
{
	struct tap *t = l->priv;
	return xr_link_tx_held(t->inner);
}

static int tap_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	struct tap *t = l->priv;
	return xr_link_mcast(t->inner, group, join);
}

static const struct xr_link_ops tap_ops = {
	tap_send, tap_recv, tap_wait_fd, tap_alloc, tap_free, tap_is_up, tap_close, tap_resolve, tap_rx_backlog,
	tap_tx_held, NULL, NULL, NULL, tap_mcast,
};

struct xr_link *xr_link_pcap_tap(struct xr_link *inner, const char *path)
{
	return xr_link_pcap_tap_n(inner, path, 0);
}

struct xr_link *xr_link_pcap_tap_n(struct xr_link *inner, const char *path, uint64_t max_frames)
{
	struct tap *t;

	/* A gather frame's payload is not in the frame: a capture would lie. */
	if (!inner || inner->gather || !path) {
		errno = EINVAL;
		return NULL;
	}
	t = aligned_alloc(64, sizeof(*t));
	if (t)
		memset(t, 0, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->dead = pcap_open_dead(DLT_EN10MB, 65535);
	t->dump = t->dead ? pcap_dump_open(t->dead, path) : NULL;
	if (!t->dump) {
		if (t->dead)
			pcap_close(t->dead);
		free(t);
		errno = EIO;
		return NULL;
	}
	t->inner = inner;
	t->max = max_frames;
	pthread_mutex_init(&t->lock, NULL);
	t->link = *inner;
	t->link.ops = &tap_ops;
	t->link.kind = "pcap";
	t->link.priv = t;
	memset(&t->link.stats, 0, sizeof(t->link.stats));
	return &t->link;
}
