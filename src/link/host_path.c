/* SPDX-License-Identifier: MIT */
/*
 * The host endpoint's data path. Each direction's sender owns its slots:
 * the caller builds a frame in one (host_ep_alloc), sending passes its
 * index to the peer, the peer's engine reads the frame where it is and
 * its index comes back when that engine gives the frame back. No copy,
 * unless a frame was built elsewhere (the UDP link's own pool, another
 * connection's slot, no slot free at the time): then it is copied once.
 * A peer can write only its own memfd (ours it maps read only), but that
 * one may change under us while we read it: its indices are checked
 * against our private record of who holds each slot, lengths when a slot
 * is taken, and it ends with HOST_TAIL_PAD bytes so that any length the
 * peer writes later still reads inside it (the ICRC then fails, as on a
 * corrupting wire).
 *
 * Wakeups as the mem link: the receiver arms before sleeping (bumps its
 * `sleeps`), the sender writes the receiver's eventfd only when armed (a
 * value it has not woken it for yet, and not withdrawn by `awake`).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../wire/hdr.h"
#include "host.h"
#include "prefetch.h"

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
	if (!atomic_load_explicit(&h->npending, memory_order_relaxed))
		return;   /* the common case: no lock per burst */
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
 * holds a (remembered for HOST_NEG_NS, counted from the attempt's end;
 * twice as long after each attempt that stalled the data path, up to
 * HOST_NEG_MAX_NS: a stopped peer, or one that never answers). *gone: one
 * did and has exited. */
static struct host_conn *route(struct host_ep *h, const xr_gid *a, bool *gone)
{
	struct host_neg *n;
	struct host_conn *c;
	uint64_t now;

	*gone = false;
	/* A group is no device's address: its frames go through the network,
	 * which copies them to every member (local ones too). Not remembered
	 * as a destination that failed, nor asked for. */
	if (xr_gid_is_mcast(a))
		return NULL;
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
		n->wait_ns = HOST_NEG_NS;
	}
	{
		uint64_t end = now_ns();
		n->until = end + n->wait_ns;
		if (end - now >= HOST_SLOW_CONNECT_NS)
			n->wait_ns = n->wait_ns * 2 < HOST_NEG_MAX_NS ? n->wait_ns * 2 : HOST_NEG_MAX_NS;
		else
			n->wait_ns = HOST_NEG_NS;
	}
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

/* Publishes what was put in c's ring and wakes the peer if it sleeps. */
static void publish(struct host_conn *c)
{
	uint64_t one = 1;
	uint32_t sleeps;

	atomic_store_explicit(&c->out->tail, c->tx_tail, memory_order_release);
	/* Pairs with the fence in host_ep_wait_fd: either the peer's last
	 * pass sees the frame, or we see it armed (a new `sleeps`). */
	atomic_thread_fence(memory_order_seq_cst);
	sleeps = atomic_load_explicit(&c->in->sleeps, memory_order_relaxed);
	if (sleeps != c->woken && sleeps != atomic_load_explicit(&c->in->awake, memory_order_relaxed)) {
		c->woken = sleeps;
		if (write(c->peer_efd, &one, sizeof(one)) < 0) {
			/* a full counter wakes the peer anyway */
		}
	}
}

/* Takes back the slots the peer gave back. An index we did not send is
 * the peer's scribble: counted, ignored (our record says who holds what). */
static void reclaim(struct host_ep *h, struct host_conn *c)
{
	uint32_t tail = atomic_load_explicit(&c->in->ret_tail, memory_order_acquire);

	if (tail - c->tx_ret_head > HOST_SLOTS) {   /* not a count: take nothing, go on from it */
		h->st.rx_drop_bad_index++;
		c->tx_ret_head = tail;
		return;
	}
	for (; c->tx_ret_head != tail; c->tx_ret_head++) {
		uint32_t i = atomic_load_explicit(&c->in->ret[c->tx_ret_head & (HOST_SLOTS - 1)], memory_order_relaxed);
		if (i >= HOST_SLOTS || c->tx_state[i] != TX_PEER) {
			h->st.rx_drop_bad_index++;
			continue;
		}
		c->tx_state[i] = TX_FREE;
		c->tx_free[c->ntx_free++] = i;
	}
}

/* HOST_SLOTS_WARM slots out, and nearly all of them back (a frame or two
 * in flight, as a ping-pong keeps): taken back now, on top of the stack,
 * such traffic keeps to the same few slots instead of cycling through all
 * of them, each page's first touch a fault (on this VM, which pages in
 * shadow tables, 12 us a page: a ping-pong's first few hundred round
 * trips took 40 us and more). Traffic with more in flight cycles through
 * all, as the reader's cache needs (HOST_SLOTS), and reads the peer's
 * tail here once per cycle. The tail is the peer's: reclaim checks it. */
static bool warm_slots_back(const struct host_conn *c)
{
	return c->ntx_free == HOST_SLOTS - HOST_SLOTS_WARM &&
	       atomic_load_explicit(&c->in->ret_tail, memory_order_relaxed) - c->tx_ret_head >= HOST_SLOTS_WARM - 4;
}

/* A free slot of c for the caller (state TX_ENGINE), or -1. */
static int32_t slot_take(struct host_ep *h, struct host_conn *c)
{
	uint32_t i;

	if (!c->ntx_free || warm_slots_back(c))
		reclaim(h, c);
	if (!c->ntx_free)
		return -1;
	i = c->tx_free[--c->ntx_free];
	c->tx_state[i] = TX_ENGINE;
	c->tx_engine++;
	/* The next slot was last read by the peer's core: take its first
	 * lines for writing while this one is built (as the mem link). */
	if (c->ntx_free) {
		struct xr_frame *next = &c->tx_slot[c->tx_free[c->ntx_free - 1]];
		xr_prefetch_for_write(next, XR_FRAME_SMALL_LINES);
	}
	return (int32_t)i;
}

/* The caller is done with our slot i without sending it. */
static void slot_put(struct host_conn *c, uint32_t i)
{
	c->tx_state[i] = TX_FREE;
	c->tx_free[c->ntx_free++] = i;
	c->tx_engine--;
}

/* Passes our slot i (the caller's) to the peer; published later. */
static void slot_send(struct host_conn *c, uint32_t i)
{
	atomic_store_explicit(&c->out->sent[c->tx_tail & (HOST_SLOTS - 1)], i, memory_order_relaxed);
	c->tx_tail++;
	c->tx_state[i] = TX_PEER;
	c->tx_engine--;
	c->full_since = 0;
}

/* A frame for a peer carries the peer's MAC (host_mac_of): the UDP link
 * has no L2 to learn it from, and the receiver cannot write the frame. */
static void addressed(struct xr_frame *f, const xr_gid *dst)
{
	host_mac_of(dst, f->data + ETH_OFF_DMAC);
}

/* The connection whose own slot f is (*i its index), or NULL. */
static struct host_conn *tx_owner(struct host_ep *h, const struct xr_frame *f, uint32_t *i)
{
	struct host_conn *c = h->last;

	if (c && f >= c->tx_slot && f < c->tx_slot + HOST_SLOTS) {
		*i = (uint32_t)(f - c->tx_slot);
		return c;
	}
	for (unsigned k = 0; k < h->nconn; k++) {
		c = h->conn[k];
		if (f >= c->tx_slot && f < c->tx_slot + HOST_SLOTS) {
			*i = (uint32_t)(f - c->tx_slot);
			return c;
		}
	}
	return NULL;
}

struct xr_frame *host_ep_alloc(struct host_ep *h)
{
	struct host_conn *c;
	struct xr_frame *f = NULL;
	int32_t i;

	pthread_mutex_lock(&h->lock);
	c = h->last;
	if (c && !atomic_load_explicit(&c->dead, memory_order_acquire) && (i = slot_take(h, c)) >= 0)
		f = &c->tx_slot[i];
	pthread_mutex_unlock(&h->lock);
	if (f) {
		f->next = NULL;
		f->len = 0;
		f->rx_flags = 0;
	}
	return f;
}

/* A free slot of c to copy into: its index, -2 (none: retry later) or -1
 * (none for HOST_STALL_NS: the peer is stopped or stuck, drop). */
static int32_t room(struct host_ep *h, struct host_conn *c)
{
	int32_t i = slot_take(h, c);
	uint64_t now;

	if (i >= 0) {
		c->full_since = 0;
		return i;
	}
	now = now_ns();
	if (!c->full_since)
		c->full_since = now;
	return now - c->full_since > HOST_STALL_NS ? -1 : -2;
}

unsigned host_ep_send(struct host_ep *h, struct xr_frame **f, unsigned n, bool drop_unknown, bool *not_local)
{
	struct host_conn *open = NULL;   /* written to, not yet published */
	unsigned i;

	*not_local = false;
	pthread_mutex_lock(&h->lock);
	adopt_pending(h);
	for (i = 0; i < n; i++) {
		struct xr_frame *fr = f[i];
		struct host_conn *c, *own;
		uint32_t own_i = 0;
		int32_t slot;
		xr_gid dst;
		bool gone;

		own = tx_owner(h, fr, &own_i);
		if (!frame_dst(fr, &dst)) {
			if (!drop_unknown) {
				*not_local = true;
				break;
			}
			h->st.tx_drop_not_ip++;
			goto done;
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
			goto done;
		}
		if (open && open != c) {
			publish(open);
			open = NULL;
		}
		if (own == c) {   /* built in place: nothing to copy */
			addressed(fr, &dst);
			slot_send(c, own_i);
			f[i] = NULL;
			open = c;
			h->st.tx_host++;
			continue;
		}
		slot = room(h, c);
		if (slot == -2)
			break;   /* the caller keeps the rest, in order */
		if (slot < 0) {
			h->st.tx_drop_stalled++;
			goto done;
		}
		/* fr is private memory or a slot of ours: frame_dst checked its length. */
		c->tx_slot[slot].next = NULL;
		c->tx_slot[slot].len = fr->len;
		c->tx_slot[slot].rx_flags = 0;
		memcpy(c->tx_slot[slot].data, fr->data, fr->len);
		addressed(&c->tx_slot[slot], &dst);
		slot_send(c, (uint32_t)slot);
		open = c;
		h->st.tx_host++;
done:
		if (own) {   /* another connection's slot, copied or dropped */
			slot_put(own, own_i);
			f[i] = NULL;
		}
	}
	if (open)
		publish(open);
	pthread_mutex_unlock(&h->lock);
	return i;
}

/* Gives the peer's slot i back to it. The ring cannot overflow from an
 * honest peer (it has HOST_SLOTS slots); a dishonest one only loses its own. */
static void give_back(struct host_conn *c, uint32_t i)
{
	atomic_store_explicit(&c->out->ret[c->rx_ret_tail & (HOST_SLOTS - 1)], i, memory_order_relaxed);
	c->rx_ret_tail++;
	atomic_store_explicit(&c->out->ret_tail, c->rx_ret_tail, memory_order_release);
}

/* Frames a peer has left for us: what its tail says, or none when the
 * tail is no count (a scribble: host_ep_recv takes nothing from it). */
static uint32_t rx_waiting(const struct host_conn *c)
{
	uint32_t avail = atomic_load_explicit(&c->in->tail, memory_order_acquire) - c->rx_head;

	return avail > HOST_SLOTS ? 0 : avail;
}

/* Frees connections whose peer has gone, once nothing of theirs is held
 * and nothing it sent is left to read. A scribbled tail leaves nothing to
 * read: a dead peer's connection never stays for it (HOST_MAX_CONNS such
 * peers locked everyone out). */
static void reap(struct host_ep *h)
{
	for (unsigned i = 0; i < h->nconn;) {
		struct host_conn *c = h->conn[i];
		if (!atomic_load_explicit(&c->dead, memory_order_acquire) || c->nrx_held || c->tx_engine ||
		    rx_waiting(c)) {
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
		uint32_t avail = rx_waiting(c);   /* a peer's scribble, not a count: nothing */

		for (; avail && got < n; avail--) {
			uint32_t i = atomic_load_explicit(&c->in->sent[c->rx_head++ & (HOST_SLOTS - 1)], memory_order_relaxed);
			struct xr_frame *s;
			uint16_t len;
			if (i >= HOST_SLOTS || c->rx_held[i]) {
				h->st.rx_drop_bad_index++;
				continue;
			}
			s = &c->rx_slot[i];
			len = *(volatile uint16_t *)&s->len;   /* read once: the peer may rewrite it */
			if (len < XR_ETH_HLEN || len > XR_MAX_FRAME) {
				h->st.rx_drop_bad_len++;
				give_back(c, i);
				continue;
			}
			c->rx_held[i] = 1;
			c->nrx_held++;
			f[got++] = s;   /* read only: the sender set next, rx_flags and our MAC */
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
	uint32_t i;

	pthread_mutex_lock(&h->lock);
	for (unsigned k = 0; k < h->nconn && !found; k++) {
		struct host_conn *c = h->conn[k];
		if (f >= c->rx_slot && f < c->rx_slot + HOST_SLOTS) {
			i = (uint32_t)(f - c->rx_slot);
			found = true;
			if (c->rx_held[i]) {
				c->rx_held[i] = 0;
				c->nrx_held--;
				give_back(c, i);
			}
		} else if (f >= c->tx_slot && f < c->tx_slot + HOST_SLOTS) {
			i = (uint32_t)(f - c->tx_slot);
			found = true;
			if (c->tx_state[i] == TX_ENGINE)
				slot_put(c, i);
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
		atomic_fetch_add(&h->conn[i]->out->sleeps, 1);   /* only we write it: no race on the add */
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned i = 0; i < h->nconn && !waiting; i++)
		waiting = rx_waiting(h->conn[i]) != 0;   /* a scribbled tail: no reason to stay awake */
	pthread_mutex_unlock(&h->lock);
	if (waiting) {
		v = 1;   /* already there: make the fd readable now */
		if (write(h->efd, &v, sizeof(v)) < 0) {
			/* a full counter is readable too */
		}
	}
	return h->efd;
}

int host_ep_standby_fd(struct host_ep *h)
{
	uint64_t v;

	if (read(h->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
	host_ep_arm(h, false);
	return h->efd;
}

int host_ep_arm(struct host_ep *h, bool arm)
{
	bool waiting = false;

	pthread_mutex_lock(&h->lock);
	adopt_pending(h);
	for (unsigned i = 0; i < h->nconn; i++) {
		struct host_out *o = h->conn[i]->out;
		if (arm)
			atomic_fetch_add(&o->sleeps, 1);   /* only we write both: no race */
		else
			atomic_store(&o->awake, atomic_load_explicit(&o->sleeps, memory_order_relaxed));
	}
	/* Pairs with publish's fence: armed, either the peer sees the new
	 * `sleeps` or we see its frame; withdrawn, either it sees `awake` or
	 * it writes the fd (a wakeup that finds the frame taken). */
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned i = 0; i < h->nconn && arm && !waiting; i++)
		waiting = rx_waiting(h->conn[i]) != 0;   /* a scribbled tail: no reason to stay awake */
	pthread_mutex_unlock(&h->lock);
	return waiting;
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
