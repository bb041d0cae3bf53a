/* SPDX-License-Identifier: MIT */
/*
 * The host endpoint's data path. A frame sent is copied once, into a slot
 * of the destination's ring; a frame received is handed over in its slot
 * (no copy) and the slot is free again when the caller gives the frame
 * back. A peer shares the mapping, so it could rewrite a slot we are
 * reading: lengths are checked when the slot is taken, and the mapping
 * ends with HOST_TAIL_PAD bytes so that any length a peer writes later
 * still reads inside it (the ICRC then fails, as on a corrupting wire).
 *
 * Wakeups as the mem link: the receiver arms before sleeping, the sender
 * writes the receiver's eventfd only when armed.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../wire/hdr.h"
#include "host.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The frame's destination IP address as a GID; false when it has none. */
static bool frame_dst(const struct xr_frame *f, xr_gid *dst)
{
	size_t l3 = XR_ETH_HLEN;
	uint16_t type;

	if (f->len < XR_ETH_HLEN + XR_VLAN_HLEN || f->len > XR_MAX_FRAME)
		return false;
	type = get_be16(f->data + ETH_OFF_TYPE);
	if (type == XR_ETHERTYPE_VLAN) {
		type = get_be16(f->data + XR_ETH_HLEN + VLAN_OFF_TYPE);
		l3 += XR_VLAN_HLEN;
	}
	if (type == XR_ETHERTYPE_IPV4 && f->len >= l3 + XR_IPV4_HLEN) {
		xr_gid_from_ipv4(dst, get_be32(f->data + l3 + IP4_OFF_DST));
		return true;
	}
	if (type == XR_ETHERTYPE_IPV6 && f->len >= l3 + XR_IPV6_HLEN) {
		memcpy(dst->raw, f->data + l3 + IP6_OFF_DST, 16);
		return true;
	}
	return false;
}

/* Connections the control thread accepted join the table. Lock held. */
static void adopt_pending(struct host_ep *h)
{
	pthread_mutex_lock(&h->pending_lock);
	for (unsigned i = 0; i < h->npending; i++)
		h->conn[h->nconn++] = h->pending[i];   /* reserve() keeps this in bounds */
	h->npending = 0;
	pthread_mutex_unlock(&h->pending_lock);
}

static struct host_neg *neg_find(struct host_ep *h, const xr_gid *a)
{
	for (unsigned i = 0; i < h->nneg; i++)
		if (!memcmp(h->neg[i].addr.raw, a->raw, 16))
			return &h->neg[i];
	return NULL;
}

/* The live connection to a, connecting on first use; NULL when no device
 * holds a (remembered for HOST_NEG_NS). *gone: one did and has exited. */
static struct host_conn *route(struct host_ep *h, const xr_gid *a, bool *gone)
{
	struct host_neg *n;
	struct host_conn *c;
	uint64_t now;

	*gone = false;
	if (h->last && !memcmp(h->last->peer.raw, a->raw, 16) && !atomic_load_explicit(&h->last->dead, memory_order_acquire))
		return h->last;
	for (unsigned i = 0; i < h->nconn; i++) {
		if (memcmp(h->conn[i]->peer.raw, a->raw, 16))
			continue;
		if (!atomic_load_explicit(&h->conn[i]->dead, memory_order_acquire))
			return h->last = h->conn[i];
		*gone = true;
	}
	now = now_ns();
	n = neg_find(h, a);
	if (n && n->until > now)
		return NULL;
	c = host_ep_connect(h, a);
	if (c) {
		if (n)
			*n = h->neg[--h->nneg];
		return h->last = c;
	}
	if (!n) {   /* full: forget the oldest-placed entry */
		n = h->nneg < HOST_MAX_NEG ? &h->neg[h->nneg++] : &h->neg[now % HOST_MAX_NEG];
		n->addr = *a;
	}
	n->until = now + HOST_NEG_NS;
	return NULL;
}

bool host_ep_is_local(struct host_ep *h, const struct xr_frame *f)
{
	xr_gid dst;
	bool gone, local;

	if (!frame_dst(f, &dst))
		return false;
	pthread_mutex_lock(&h->lock);
	adopt_pending(h);
	local = route(h, &dst, &gone) != NULL;
	pthread_mutex_unlock(&h->lock);
	return local;
}

/* Publishes what was written to c's ring and wakes the peer if it sleeps. */
static void publish(struct host_conn *c)
{
	uint64_t one = 1;

	atomic_store_explicit(&c->tx->tail, c->tx_tail, memory_order_release);
	/* Pairs with the fence in host_ep_wait_fd: either the peer's last
	 * pass sees the frame, or we see it armed. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&c->tx->armed, memory_order_relaxed) && atomic_exchange(&c->tx->armed, 0)) {
		if (write(c->peer_efd, &one, sizeof(one)) < 0) {
			/* a full counter wakes the peer anyway */
		}
	}
}

/* Room for one frame in c's ring: 1, 0 (full: retry later) or -1 (full
 * for HOST_STALL_NS: the peer is stopped or stuck, drop). */
static int room(struct host_conn *c)
{
	uint32_t used = c->tx_tail - atomic_load_explicit(&c->tx->head, memory_order_acquire);
	uint64_t now;

	if (used < c->slots) {
		c->full_since = 0;
		return 1;
	}
	now = now_ns();
	if (!c->full_since)
		c->full_since = now;
	return now - c->full_since > HOST_STALL_NS ? -1 : 0;
}

unsigned host_ep_send(struct host_ep *h, struct xr_frame **f, unsigned n, bool drop_unknown, bool *not_local)
{
	struct host_conn *open = NULL;   /* written to, not yet published */
	unsigned i;

	*not_local = false;
	pthread_mutex_lock(&h->lock);
	adopt_pending(h);
	for (i = 0; i < n; i++) {
		struct xr_frame *fr = f[i], *slot;
		struct host_conn *c;
		xr_gid dst;
		bool gone;
		int r;

		if (!frame_dst(fr, &dst)) {
			if (!drop_unknown) {
				*not_local = true;
				break;
			}
			h->st.tx_drop_not_ip++;
			continue;
		}
		c = route(h, &dst, &gone);
		if (!c) {
			if (!drop_unknown) {
				*not_local = true;
				break;
			}
			if (gone)
				h->st.tx_drop_peer_gone++;
			else
				h->st.tx_drop_no_peer++;
			continue;
		}
		if (open && open != c) {
			publish(open);
			open = NULL;
		}
		r = room(c);
		if (r == 0)
			break;   /* the caller keeps the rest, in order */
		if (r < 0) {
			h->st.tx_drop_stalled++;
			continue;
		}
		slot = &c->tx_slot[c->tx_tail & c->mask];
		slot->len = fr->len;
		slot->rx_flags = 0;
		memcpy(slot->data, fr->data, fr->len);
		c->tx_tail++;
		open = c;
		h->st.tx_host++;
	}
	if (open)
		publish(open);
	pthread_mutex_unlock(&h->lock);
	return i;
}

/* Slots given back in order free the ring up to the first still held. */
static void advance_head(struct host_conn *c)
{
	uint32_t head = c->rx_head;

	while (head != c->rx_taken && c->rx_done[head & c->mask]) {
		c->rx_done[head & c->mask] = 0;
		head++;
	}
	if (head != c->rx_head) {
		c->rx_head = head;
		atomic_store_explicit(&c->rx->head, head, memory_order_release);
	}
}

/* Frees connections whose peer has gone, once nothing of theirs is held. */
static void reap(struct host_ep *h)
{
	for (unsigned i = 0; i < h->nconn;) {
		struct host_conn *c = h->conn[i];
		if (!atomic_load_explicit(&c->dead, memory_order_acquire) || c->rx_head != c->rx_taken ||
		    atomic_load_explicit(&c->rx->tail, memory_order_acquire) != c->rx_taken) {
			i++;
			continue;
		}
		if (h->last == c)
			h->last = NULL;
		h->conn[i] = h->conn[--h->nconn];
		host_conn_free(c);
		atomic_fetch_sub(&h->reserved, 1);
	}
}

unsigned host_ep_recv(struct host_ep *h, struct xr_frame **f, unsigned n)
{
	unsigned got = 0;

	pthread_mutex_lock(&h->lock);
	adopt_pending(h);
	reap(h);
	for (unsigned k = 0; k < h->nconn && got < n; k++) {
		struct host_conn *c = h->conn[(h->rr + k) % h->nconn];
		uint32_t avail = atomic_load_explicit(&c->rx->tail, memory_order_acquire) - c->rx_taken;

		if (avail > c->slots)
			avail = 0;   /* a peer's scribble, not a count: take nothing */
		for (; avail && got < n; avail--) {
			uint32_t idx = c->rx_taken++ & c->mask;
			struct xr_frame *s = &c->rx_slot[idx];
			uint16_t len = s->len;
			if (len < XR_ETH_HLEN || len > XR_MAX_FRAME) {
				h->st.rx_drop_bad_len++;
				c->rx_done[idx] = 1;
				advance_head(c);
				continue;
			}
			s->rx_flags = 0;
			s->next = NULL;
			f[got++] = s;
		}
	}
	if (h->nconn)
		h->rr = (h->rr + 1) % h->nconn;
	h->st.rx_host += got;
	pthread_mutex_unlock(&h->lock);
	return got;
}

bool host_ep_release(struct host_ep *h, struct xr_frame *f)
{
	bool found = false;

	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->nconn; i++) {
		struct host_conn *c = h->conn[i];
		if (f >= c->rx_slot && f < c->rx_slot + c->slots) {
			c->rx_done[f - c->rx_slot] = 1;
			advance_head(c);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return found;
}

int host_ep_wait_fd(struct host_ep *h)
{
	uint64_t v;
	bool waiting = false;

	if (read(h->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
	pthread_mutex_lock(&h->lock);
	adopt_pending(h);
	for (unsigned i = 0; i < h->nconn; i++)
		atomic_store(&h->conn[i]->rx->armed, 1);
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned i = 0; i < h->nconn && !waiting; i++)
		waiting = atomic_load_explicit(&h->conn[i]->rx->tail, memory_order_acquire) != h->conn[i]->rx_taken;
	pthread_mutex_unlock(&h->lock);
	if (waiting) {
		v = 1;   /* already there: make the fd readable now */
		if (write(h->efd, &v, sizeof(v)) < 0) {
			/* a full counter is readable too */
		}
	}
	return h->efd;
}

void host_ep_stats(struct host_ep *h, struct xr_link_host_stats *out)
{
	pthread_mutex_lock(&h->lock);
	*out = h->st;
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_lock(&h->pending_lock);
	out->peers_accepted = h->ctl_st.peers_accepted;
	out->peers_gone = h->ctl_st.peers_gone;
	out->refused_uid = h->ctl_st.refused_uid;
	out->refused_hello = h->ctl_st.refused_hello;
	out->refused_full += h->ctl_st.refused_full;
	pthread_mutex_unlock(&h->pending_lock);
}
