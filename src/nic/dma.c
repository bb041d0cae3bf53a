/* SPDX-License-Identifier: MIT */
/*
 * Access to registered memory, as the NIC's DMA engine does it: a key
 * names an MR (or, for a peer's R_Key, a bound memory window); its bounds,
 * protection domain and access flags are checked before a byte moves; VAs go through the MR's page table (MTT) to
 * host addresses, page by page, so regions need not be contiguous.
 */
#include <string.h>

#include "dma_hook.h"
#include "engine.h"

/* Registered memory is shared with the program as a NIC's DMA target is:
 * by the verbs' contract its threads may spin on a buffer a WRITE lands
 * in, or change a source being read. Under ThreadSanitizer only that host
 * side of a copy is left unchecked; the engine's side, a frame (on a
 * gather link a WRITE's payload may be the sender's memory instead), is
 * checked as any access (make test-tsan: XR_TSAN). */
#ifdef XR_TSAN
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
void __tsan_read_range(void *addr, unsigned long size);
void __tsan_write_range(void *addr, unsigned long size);
#define HOST_COPY_BEGIN() __tsan_ignore_thread_begin()
#define HOST_COPY_END() __tsan_ignore_thread_end()
#define FRAME_READ(p, n) __tsan_read_range((void *)(uintptr_t)(p), (n))
#define FRAME_WRITE(p, n) __tsan_write_range((void *)(uintptr_t)(p), (n))
#else
#define HOST_COPY_BEGIN() ((void)0)
#define HOST_COPY_END() ((void)0)
#define FRAME_READ(p, n) ((void)0)
#define FRAME_WRITE(p, n) ((void)0)
#endif

/* [va, va+len) inside [base, base+size), access allowed. */
static enum xr_dma_err check_range(const struct xr_mr_ctx *c, uint64_t va, uint64_t len, uint32_t access)
{
	if ((c->access & access) != access)
		return XR_DMA_PERM;
	/* Without overflow. */
	if (va < c->va || len > c->len || va - c->va > c->len - len)
		return XR_DMA_BOUNDS;
	return XR_DMA_OK;
}

enum xr_dma_err xr_dma_check(struct xr_engine *e, uint32_t key, uint32_t pd, uint64_t va,
			     uint64_t len, uint32_t access, struct xr_mr **out)
{
	struct xr_mr *mr = xr_mr_lookup(e, key);
	enum xr_dma_err err;

	*out = NULL;
	/* A window is never an L_Key. */
	if (!mr || mr->ctx.mw)
		return XR_DMA_BAD_KEY;
	if (mr->ctx.pd != pd)
		return XR_DMA_BAD_PD;
	err = check_range(&mr->ctx, va, len, access);
	if (err == XR_DMA_OK)
		*out = mr;
	return err;
}

enum xr_dma_err xr_dma_check_rkey(struct xr_engine *e, uint32_t key, uint32_t pd, uint32_t qpn,
				  uint64_t va, uint64_t len, uint32_t access, struct xr_mr **out)
{
	struct xr_mr *w = xr_mr_lookup(e, key), *mr;
	enum xr_dma_err err;

	if (!w || !w->ctx.mw)
		return xr_dma_check(e, key, pd, va, len, access, out);
	*out = NULL;
	/* A window grants something only while bound with a length
	 * (rxe_lookup_mw), to QPs of its PD, and a type-2 window only to
	 * the QP that bound it (C6). */
	if (!w->ctx.bound || !w->ctx.len)
		return XR_DMA_BAD_KEY;
	if (w->ctx.pd != pd)
		return XR_DMA_BAD_PD;
	if (w->ctx.mw_type == 2 && w->ctx.mw_qpn != qpn)
		return XR_DMA_BAD_KEY;
	/* Access and range are the window's (IBTA; rxe checks the region's
	 * range instead, transport-rules C8). */
	err = check_range(&w->ctx, va, len, access);
	if (err != XR_DMA_OK)
		return err;
	/* The bytes move through the region's page table (VAs are absolute:
	 * no zero-based windows). A region with windows bound cannot be
	 * deregistered, so the parent is live. */
	mr = &e->mrs[w->ctx.parent];
	if (!__atomic_load_n(&mr->in_use, __ATOMIC_ACQUIRE) || mr->ctx.mw)
		return XR_DMA_BAD_KEY;
	*out = mr;
	return XR_DMA_OK;
}

/* Host address of va (already bounds-checked) and the bytes left in its page. */
static uint8_t *translate(const struct xr_mr *mr, uint64_t va, size_t *in_page)
{
	const uint64_t *mtt = (const uint64_t *)(uintptr_t)mr->ctx.mtt;
	unsigned shift = mr->ctx.page_shift;
	uint64_t page = (va >> shift) - (mr->ctx.va >> shift);
	uint64_t off = va & ((1ull << shift) - 1);

	*in_page = (size_t)((1ull << shift) - off);
	return (uint8_t *)(uintptr_t)(mtt[page] + off);
}

void (*volatile xr_dma_write_hook)(void *arg);
void *volatile xr_dma_write_hook_arg;

/* Page by page; with crc, each piece's CRC taken by its copy. */
static void place(const struct xr_mr *mr, uint64_t va, const uint8_t *s, size_t len, uint32_t *crc)
{
	if (__builtin_expect(xr_dma_write_hook != NULL, 0))
		xr_dma_write_hook(xr_dma_write_hook_arg);

	while (len) {
		size_t room, n;
		uint8_t *dst = translate(mr, va, &room);
		n = len < room ? len : room;
		/* A gather frame's source may overlap the destination (one
		 * buffer registered with both engines): each page's piece
		 * moves whole. A WRITE onto its own source is undefined, as on
		 * any NIC; this only keeps it from being a bad copy. */
		FRAME_READ(s, n);
		HOST_COPY_BEGIN();
		if (crc)
			*crc = xr_crc32_copy(*crc, dst, s, n);
		else
			memmove(dst, s, n);
		HOST_COPY_END();
		s += n;
		va += n;
		len -= n;
	}
}

void xr_dma_write(const struct xr_mr *mr, uint64_t va, const void *src, size_t len)
{
	place(mr, va, src, len, NULL);
}

/* Whether [va, va+len) lies anywhere on [src, src+len) in host memory. */
static bool overlaps(const struct xr_mr *mr, uint64_t va, const uint8_t *src, size_t len)
{
	for (size_t done = 0; done < len;) {
		size_t room;
		const uint8_t *dst = translate(mr, va + done, &room);
		size_t n = len - done < room ? len - done : room;
		if (dst < src + len && src < dst + n)
			return true;
		done += n;
	}
	return false;
}

uint32_t xr_dma_write_crc(const struct xr_mr *mr, uint64_t va, const void *src, size_t len, uint32_t crc)
{
	const uint8_t *s = src;

	/* A WRITE onto its own source: a page's copy would change the next
	 * page's source before it is read. The CRC of the source, then the
	 * moves, as xr_dma_write. */
	if (overlaps(mr, va, s, len)) {
		crc = xr_crc32(crc, s, len);
		place(mr, va, s, len, NULL);
	} else {
		place(mr, va, s, len, &crc);
	}
	return crc;
}

void xr_dma_read(const struct xr_mr *mr, uint64_t va, void *dst, size_t len)
{
	uint8_t *d = dst;

	while (len) {
		size_t room, n;
		const uint8_t *src = translate(mr, va, &room);
		n = len < room ? len : room;
		FRAME_WRITE(d, n);
		HOST_COPY_BEGIN();
		memcpy(d, src, n);
		HOST_COPY_END();
		d += n;
		va += n;
		len -= n;
	}
}

uint64_t *xr_dma_u64(const struct xr_mr *mr, uint64_t va)
{
	size_t room;
	return (uint64_t *)(void *)translate(mr, va, &room);   /* 8-aligned: never crosses a page */
}

/* Walks an SGE list from byte `offset` of the message, len bytes. */
static int sgl_walk(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n,
		    uint32_t offset, uint8_t *buf, uint32_t len, bool to_mem)
{
	for (unsigned i = 0; i < n && len; i++) {
		struct xr_mr *mr;
		uint32_t take;
		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		take = sge[i].length - offset;
		if (take > len)
			take = len;
		if (xr_dma_check(e, sge[i].lkey, pd, sge[i].addr + offset, take,
				 to_mem ? XR_ACCESS_LOCAL_WRITE : 0, &mr) != XR_DMA_OK)
			return XR_WC_LOC_PROT_ERR;
		if (to_mem)
			xr_dma_write(mr, sge[i].addr + offset, buf, take);
		else
			xr_dma_read(mr, sge[i].addr + offset, buf, take);
		buf += take;
		len -= take;
		offset = 0;
	}
	return len ? XR_WC_LOC_LEN_ERR : 0;
}

int xr_sgl_read(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n,
		uint32_t offset, void *dst, uint32_t len)
{
	return sgl_walk(e, pd, sge, n, offset, dst, len, false);
}

int xr_sgl_map(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n, uint32_t offset,
	       uint32_t len, const uint8_t **out)
{
	struct xr_mr *mr;
	const uint8_t *start = NULL;
	uint64_t va;
	unsigned i = 0;

	*out = NULL;
	while (i < n && offset >= sge[i].length)
		offset -= sge[i++].length;
	if (i == n || len > sge[i].length - offset)
		return 0;   /* not inside one entry: copied, with the copy's checks */
	va = sge[i].addr + offset;
	if (xr_dma_check(e, sge[i].lkey, pd, va, len, 0, &mr) != XR_DMA_OK)
		return XR_WC_LOC_PROT_ERR;
	/* One run of host memory, page after page, or a copy. */
	for (uint32_t done = 0; done < len;) {
		size_t room;
		const uint8_t *h = translate(mr, va + done, &room);
		if (!done)
			start = h;
		else if (h != start + done)
			return 0;
		done += room < len - done ? (uint32_t)room : len - done;
	}
	*out = start;
	return 0;
}

int xr_sgl_write(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n,
		 uint32_t offset, const void *src, uint32_t len)
{
	return sgl_walk(e, pd, sge, n, offset, (uint8_t *)(uintptr_t)src, len, true);
}
