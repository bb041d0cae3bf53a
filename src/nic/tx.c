/* SPDX-License-Identifier: MIT */
/*
 * Frames out: a pass builds its packets into frames taken here, commits
 * them to the burst (struct xr_tx), and sends the burst at the flush. A
 * large frame's ICRC is computed at the flush (the note at struct xr_tx).
 */
#include <string.h>

#include "engine.h"

#define TX_SLOTS (sizeof(((struct xr_tx *)0)->f) / sizeof(((struct xr_tx *)0)->f[0]))

void xr_tx_flush(struct xr_engine *e, struct xr_tx *tx)
{
	struct xr_frame *held[TX_SLOTS];
	unsigned done = 0, nheld = 0;

	for (unsigned i = tx->sealed; i < tx->n; i++) {
		if (!tx->seal[i].late)
			continue;
		if (tx->f[i]->gather)
			xr_gather_seal(tx->f[i], tx->seal[i].l3_off);
		else
			xr_pkt_seal(tx->f[i]->data, tx->seal[i].l3_off, tx->f[i]->len, tx->seal[i].udp_csum);
	}

	/* Group frames for this engine's own QPs (a load when it has none). */
	if (__builtin_expect(e->mcg.n != 0, 0))
		for (unsigned i = tx->sealed; i < tx->n; i++)
			xr_mcast_loop_keep(e, tx->f[i]);

	/* The pass's packets in the counters, two adds per flush instead of
	 * per packet. */
	if (tx->pkts) {
		xr_count_pass(e, XR_CNT_TX_PKTS, tx->pkts);
		xr_count_pass(e, XR_CNT_TX_BYTES, tx->bytes);
		tx->pkts = tx->bytes = 0;
	}

	if (e->pfc.paused) {
		/* Frames of a priority the peer paused stay, in order; the
		 * others go (a MAC's per-priority queues). */
		unsigned k = 0;
		for (unsigned i = 0; i < tx->n; i++) {
			if (xr_pfc_frame_paused(e, tx->f[i]))
				held[nheld++] = tx->f[i];
			else
				tx->f[k++] = tx->f[i];
		}
		tx->n = k;
	}
	while (done < tx->n) {
		int sent = xr_link_send(e->link, tx->f + done, tx->n - done);
		if (sent <= 0)
			break;
		done += (unsigned)sent;
	}
	tx->full = done < tx->n;
	/* The link is full: keep the rest for the next pass, in order. */
	memmove(tx->f, tx->f + done, (tx->n - done) * sizeof(tx->f[0]));
	tx->n -= done;
	memcpy(tx->f + tx->n, held, nheld * sizeof(held[0]));
	tx->n += nheld;
	tx->sealed = tx->n;
}

struct xr_frame *xr_tx_begin(struct xr_engine *e, struct xr_tx *tx, struct xr_qp *qp, struct xr_pkt *p)
{
	return xr_tx_begin_prio(e, tx, qp, p, xr_pfc_qp_prio(e, qp));
}

struct xr_frame *xr_tx_frame(struct xr_engine *e, struct xr_tx *tx, uint8_t prio)
{
	struct xr_frame *f;

	/* A paused priority builds nothing: every producer (requester,
	 * responder, from the serve loop or the receive path) waits. */
	if (e->pfc.paused && xr_pfc_paused(e, prio))
		return NULL;
	if (tx->n == TX_SLOTS)
		xr_tx_flush(e, tx);
	if (tx->full || tx->n == TX_SLOTS)
		return NULL;
	f = xr_link_frame_alloc(e->link);
	if (!f)
		tx->full = true;
	return f;
}

struct xr_frame *xr_tx_begin_prio(struct xr_engine *e, struct xr_tx *tx, struct xr_qp *qp, struct xr_pkt *p,
				  uint8_t prio)
{
	struct xr_frame *f = xr_tx_frame(e, tx, prio);

	if (f) {
		xr_pkt_init(p, 0);
		xr_tx_address(e, qp, p);
	}
	return f;
}

void xr_tx_commit(struct xr_engine *e, struct xr_tx *tx, struct xr_frame *f, struct xr_pkt *p)
{
	bool late = p->payload_len >= XR_TX_SEAL_LATE_MIN || f->gather;

	if (late)
		xr_pkt_pad(p, f->data);
	else
		xr_pkt_finish(p, f->data);
	f->len = p->len;
	(void)e;   /* counted (and a late frame sealed) at the flush, xr_tx_flush */
	tx->seal[tx->n] = (struct xr_tx_seal){ .l3_off = p->l3_off, .late = late, .udp_csum = p->udp_csum };
	tx->f[tx->n++] = f;
	tx->pkts++;
	tx->bytes += f->len;
}
