/* SPDX-License-Identifier: MIT */
/*
 * The engine's side of gather frames (xroce/link.h): a payload that left
 * by reference is sealed and checked where it lies, and before the host
 * may reuse memory a frame could still read, the engine settles its link.
 */
#include <string.h>

#include "../wire/bytes.h"
#include "engine.h"

/* A gather frame's ICRC: its headers, the payload where it lies, the pad. */
void xr_gather_seal(struct xr_frame *f, uint16_t l3_off)
{
	uint32_t pay_end = (uint32_t)f->gather_off + f->gather_len;
	uint32_t c = xr_icrc(f->data + l3_off, (size_t)f->gather_off - l3_off);

	c = xr_crc32(c, f->gather, f->gather_len);
	c = xr_crc32(c, f->data + pay_end, f->len - XR_ICRC_LEN - pay_end);
	put_le32(f->data + f->len - XR_ICRC_LEN, c);
}

/* Folding the CRC into the copy pays from here (xr_crc32_copy). */
#define DEFER_MIN 1024

/* An RC WRITE without immediate: before its copy nothing reads its payload
 * and nothing is taken for it (no receive WQE), so only its headers, which
 * this process built, decide what happens to it up to the copy. And only
 * where the copy's CRC is of the bytes as loaded: one read back from the
 * MR would fail a good packet that the host writes over meanwhile. */
static bool deferrable(const struct xr_pkt *p)
{
	if (!xr_crc32_copy_folds())
		return false;
	switch (p->opcode) {
	case XR_OP_RC_RDMA_WRITE_FIRST:
	case XR_OP_RC_RDMA_WRITE_MIDDLE:
	case XR_OP_RC_RDMA_WRITE_LAST:
	case XR_OP_RC_RDMA_WRITE_ONLY:
		return p->payload_len >= DEFER_MIN && p->payload_len <= XR_MAX_MTU;
	default:
		return false;
	}
}

/* A gather frame parsed without its ICRC: the payload is where the frame
 * says it belongs, and the ICRC over headers, payload and pad holds. */
enum xr_parse_err xr_gather_rx_check(const struct xr_frame *f, struct xr_pkt *p, const uint8_t *ext,
				     struct xr_icrc_defer *d)
{
	uint32_t pay_end = (uint32_t)p->payload_off + p->payload_len, c;

	if (p->payload_off != f->gather_off || p->payload_len != f->gather_len)
		return XR_PARSE_BAD_PAYLOAD_LEN;
	c = xr_icrc(f->data + p->l3_off, (size_t)p->payload_off - p->l3_off);
	p->payload = ext;
	if (d && deferrable(p)) {
		d->pkt = p;
		d->reg = c;
		memcpy(d->pad, f->data + pay_end, p->pad);
		d->bad = false;
		return XR_PARSE_OK;
	}
	c = xr_crc32(c, ext, p->payload_len);
	c = xr_crc32(c, f->data + pay_end, p->pad);
	return c == p->icrc ? XR_PARSE_OK : XR_PARSE_BAD_ICRC;
}

bool xr_icrc_defer_finish(struct xr_engine *e, struct xr_icrc_defer *d, uint32_t crc)
{
	e->rx_defer = NULL;
	d->bad = xr_crc32(crc, d->pad, d->pkt->pad) != d->pkt->icrc;
	return !d->bad;
}

bool xr_icrc_defer_check(struct xr_engine *e, const struct xr_pkt *p, const uint8_t *bytes)
{
	struct xr_icrc_defer *d = xr_icrc_deferred(e, p);

	return !d || xr_icrc_defer_finish(e, d, xr_crc32(d->reg, bytes, p->payload_len));
}

static void settle_locked(struct xr_engine *e)
{
	if (!e->link || !e->link->gather)
		return;
	for (unsigned i = 0; e->txq && i < e->txq->n; i++)
		xr_frame_flatten(e->txq->f[i]);
	xr_link_settle(e->link);
}

void xr_dp_quiesce_settle(struct xr_engine *e)
{
	if (xr_dp_in_pass(e)) {
		settle_locked(e);
		return;
	}
	pthread_mutex_lock(&e->dp_mutex);
	settle_locked(e);
	pthread_mutex_unlock(&e->dp_mutex);
}

void xr_dp_gather_check(struct xr_engine *e, const struct xr_frame *f, uint32_t seq)
{
	uint8_t st;

	if (f->gather_seq != seq)
		return;   /* freed and taken again since: it was read */
	st = __atomic_load_n(&f->gather_state, __ATOMIC_ACQUIRE);
	if (st == XR_GATHER_OUT || st == XR_GATHER_READING)
		xr_dp_settle(e);
}

void xr_dp_settle(struct xr_engine *e)
{
	if (e->link && e->link->gather)
		xr_dp_quiesce_settle(e);
}
