/* SPDX-License-Identifier: MIT */
/*
 * xr_dma_write_crc (dma.c): a payload placed through a region's page
 * table, its CRC taken by the copy. What lands is what xr_dma_write would
 * place, and the CRC is ISA-L's over the source as it was: across pages,
 * and for a WRITE onto its own source (one buffer behind both ends),
 * where a page's copy must not change the next page's source first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <isa-l/crc.h>

#include "nic/dma_hook.h"
#include "nic/engine.h"

#define PAGE 4096u
#define PAGES 4u

static _Alignas(4096) uint8_t mem[PAGES * PAGE];
static uint64_t mtt[PAGES];

/* A region of VA 0x10000.. over mem's pages in the order given. */
static struct xr_mr region(const unsigned order[PAGES])
{
	struct xr_mr mr;

	memset(&mr, 0, sizeof(mr));
	for (unsigned i = 0; i < PAGES; i++)
		mtt[i] = (uintptr_t)(mem + order[i] * PAGE);
	mr.in_use = true;
	mr.ctx.va = 0x10000;
	mr.ctx.len = PAGES * PAGE;
	mr.ctx.page_shift = 12;
	mr.ctx.mtt = (uintptr_t)mtt;
	mr.ctx.mtt_count = PAGES;
	return mr;
}

static unsigned hooked;

static void count_hook(void *arg)
{
	(void)arg;
	hooked++;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 7));
}

static void test_pages_apart(void **state)
{
	static const unsigned order[PAGES] = { 2, 0, 3, 1 };   /* not contiguous */
	static uint8_t src[3 * PAGE];
	static const size_t offs[] = { 0, 1, 100, PAGE - 64, PAGE - 1 };
	static const size_t lens[] = { 1, 63, 300, 1024, PAGE, PAGE + 1, 2 * PAGE + 17 };
	struct xr_mr mr = region(order);

	(void)state;
	fill(src, sizeof(src), 5);
	for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			uint64_t va = mr.ctx.va + offs[o];
			uint8_t back[3 * PAGE];
			size_t placed = 0;
			memset(mem, 0xA5, sizeof(mem));
			assert_int_equal(xr_dma_write_crc(&mr, va, src + 3, lens[l], 0x1234u),
					 crc32_gzip_refl(0x1234u, src + 3, lens[l]));
			xr_dma_read(&mr, va, back, lens[l]);
			assert_memory_equal(back, src + 3, lens[l]);
			for (size_t i = 0; i < sizeof(mem); i++)   /* nothing else written */
				placed += mem[i] != 0xA5;
			assert_true(placed <= lens[l]);
		}
}

/* The region's pages in order, and a source inside the same memory, a
 * little before or after the destination: xr_dma_write's result (each
 * page's piece moved whole), and the CRC of the bytes as they were. */
static void test_onto_its_own_source(void **state)
{
	static const unsigned order[PAGES] = { 0, 1, 2, 3 };
	static const long shifts[] = { -3000, -100, -1, 1, 100, 3000 };
	struct xr_mr mr = region(order);
	uint8_t was[2 * PAGE + 300], want[sizeof(mem)];

	(void)state;
	for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
		size_t dst = PAGE + 100, src = (size_t)((long)dst + shifts[i]), n = sizeof(was);
		fill(mem, sizeof(mem), (uint8_t)i);
		xr_dma_write(&mr, mr.ctx.va + dst, mem + src, n);
		memcpy(want, mem, sizeof(mem));
		fill(mem, sizeof(mem), (uint8_t)i);
		memcpy(was, mem + src, n);
		assert_int_equal(xr_dma_write_crc(&mr, mr.ctx.va + dst, mem + src, n, 7), crc32_gzip_refl(7, was, n));
		assert_memory_equal(mem, want, sizeof(mem));
	}
}

/* The destination's first piece away from the source, its second a
 * little past the second piece's source: that copy changes the third
 * piece's source before it is read. */
static void test_onto_its_own_source_further_on(void **state)
{
	static const unsigned order[PAGES] = { 3, 1, 2, 0 };
	struct xr_mr mr = region(order);
	uint64_t va = mr.ctx.va + PAGE - 100;   /* mem page 3's last 100 bytes, then pages 1 and 2 */
	size_t src = 3900, n = 6000;
	uint8_t was[6000], want[sizeof(mem)];

	(void)state;
	fill(mem, sizeof(mem), 9);
	xr_dma_write(&mr, va, mem + src, n);
	memcpy(want, mem, sizeof(mem));
	fill(mem, sizeof(mem), 9);
	memcpy(was, mem + src, n);
	assert_int_equal(xr_dma_write_crc(&mr, va, mem + src, n, 3), crc32_gzip_refl(3, was, n));
	assert_memory_equal(mem, want, sizeof(mem));
}

/* The test hook (dma_hook.h) sees one placement per call, either way. */
static void test_the_hook_sees_each_placement_once(void **state)
{
	static const unsigned order[PAGES] = { 0, 1, 2, 3 };
	struct xr_mr mr = region(order);
	static uint8_t src[2 * PAGE];

	(void)state;
	xr_dma_write_hook = count_hook;
	hooked = 0;
	xr_dma_write_crc(&mr, mr.ctx.va + 10, src, sizeof(src), 0);
	assert_int_equal(hooked, 1);
	xr_dma_write_crc(&mr, mr.ctx.va + 10, mem + 100, PAGE, 0);   /* onto its own source */
	assert_int_equal(hooked, 2);
	xr_dma_write_hook = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages_apart),
		cmocka_unit_test(test_onto_its_own_source),
		cmocka_unit_test(test_onto_its_own_source_further_on),
		cmocka_unit_test(test_the_hook_sees_each_placement_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
