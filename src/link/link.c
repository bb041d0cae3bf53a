/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "gather.h"
#include "xroce/link.h"

void xr_link_close(struct xr_link *l)
{
	if (l && l->ops->close)
		l->ops->close(l);
}

int xr_link_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	memset(mac, 0, 6);
	return l->ops->resolve ? l->ops->resolve(l, gid, mac) : 0;
}

int xr_link_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	*queued = *capacity = 0;
	return l->ops->rx_backlog ? l->ops->rx_backlog(l, queued, capacity) : -EOPNOTSUPP;
}

/* ---- gather frames (link.h) ---- */

/* The gather frame this thread has claimed and not freed: a settle from
 * inside its processing (a deregistration from a completion's handler)
 * gives it up first, so two ends settling at once never wait on each
 * other's claim. Its payload is read before anything completes. */
static _Thread_local struct xr_frame *claimed;

const uint8_t *xr_frame_claim(struct xr_frame *f)
{
	uint8_t s = __atomic_load_n(&f->gather_state, __ATOMIC_ACQUIRE);

	if (s != XR_GATHER_OUT ||
	    !__atomic_compare_exchange_n(&f->gather_state, &s, XR_GATHER_READING, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* The sender is copying it in (a memcpy; its thread may be off
		 * its core): then every byte is in data[], as for NONE or COPIED. */
		while (s == XR_GATHER_SETTLING) {
			sched_yield();
			s = __atomic_load_n(&f->gather_state, __ATOMIC_ACQUIRE);
		}
		return NULL;
	}
	claimed = f;
	return f->gather;
}

void xr_frame_gather_done(struct xr_frame *f)
{
	uint8_t s = __atomic_load_n(&f->gather_state, __ATOMIC_ACQUIRE);

	if (claimed == f)
		claimed = NULL;
	/* Claimed, or never looked at (a frame dropped unread): either way
	 * the receiver is done with the sender's memory. A frame the sender
	 * is settling needs nothing: only its own thread reuses it. */
	while (s == XR_GATHER_READING || s == XR_GATHER_OUT)
		if (__atomic_compare_exchange_n(&f->gather_state, &s, XR_GATHER_DONE, false, __ATOMIC_RELEASE,
						__ATOMIC_ACQUIRE))
			return;
}

void xr_frame_release_claim(void)
{
	if (claimed)
		xr_frame_gather_done(claimed);
}

void xr_frame_set_gather(struct xr_frame *f, uint16_t off, const uint8_t *src, uint32_t len)
{
	f->gather = src;
	f->gather_off = off;
	f->gather_len = len;
	__atomic_store_n(&f->gather_state, XR_GATHER_OUT, __ATOMIC_RELAXED);
}

void xr_frame_flatten(struct xr_frame *f)
{
	if (!f->gather)
		return;
	memcpy(f->data + f->gather_off, f->gather, f->gather_len);
	f->gather = NULL;
	__atomic_store_n(&f->gather_state, XR_GATHER_NONE, __ATOMIC_RELAXED);
}
