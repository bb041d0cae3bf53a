/* SPDX-License-Identifier: MIT */
/*
 * Access to registered memory, as the NIC's DMA engine does it: a key
 * names an MR; the MR's bounds, protection domain and access flags are
 * checked before a byte moves; VAs go through the MR's page table (MTT) to
 * host addresses, page by page, so regions need not be contiguous.
 */
#include <string.h>

#include "engine.h"

enum xr_dma_err xr_dma_check(struct xr_engine *e, uint32_t key, uint32_t pd, uint64_t va,
			     uint64_t len, uint32_t access, struct xr_mr **out)
{
	struct xr_mr *mr = xr_mr_lookup(e, key);

	*out = NULL;
	if (!mr)
		return XR_DMA_BAD_KEY;
	if (mr->ctx.pd != pd)
		return XR_DMA_BAD_PD;
	if ((mr->ctx.access & access) != access)
		return XR_DMA_PERM;
	/* [va, va+len) inside [mr.va, mr.va+mr.len), without overflow. */
	if (va < mr->ctx.va || len > mr->ctx.len || va - mr->ctx.va > mr->ctx.len - len)
		return XR_DMA_BOUNDS;
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

void xr_dma_write(const struct xr_mr *mr, uint64_t va, const void *src, size_t len)
{
	const uint8_t *s = src;

	while (len) {
		size_t room, n;
		uint8_t *dst = translate(mr, va, &room);
		n = len < room ? len : room;
		memcpy(dst, s, n);
		s += n;
		va += n;
		len -= n;
	}
}

void xr_dma_read(const struct xr_mr *mr, uint64_t va, void *dst, size_t len)
{
	uint8_t *d = dst;

	while (len) {
		size_t room, n;
		const uint8_t *src = translate(mr, va, &room);
		n = len < room ? len : room;
		memcpy(d, src, n);
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

int xr_sgl_write(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n,
		 uint32_t offset, const void *src, uint32_t len)
{
	return sgl_walk(e, pd, sge, n, offset, (uint8_t *)(uintptr_t)src, len, true);
}
