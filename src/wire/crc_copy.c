/* SPDX-License-Identifier: MIT */
/*
 * A copy that computes the CRC-32 (IEEE, reflected: ISA-L's and zlib's) of
 * what it copies, in one pass: the payload a packet takes into its frame is
 * read once, and the ICRC no longer reads it back from the frame (where,
 * on the mem link, the loads waited for the copy's stores; see tx_flush).
 *
 * ISA-L has no copying CRC, so the bulk is folded here with VPCLMULQDQ on
 * CPUs with AVX-512 (the method of Intel's "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ"): four 64-byte accumulators, each
 * 128-bit lane folded forward by multiplying its two halves by x^(D+32)
 * and x^(D-32) mod P (D the distance in bits), then one lane, then 16-byte
 * steps. The constants are computed at load time, not tabled.
 *
 * Everything after the loads stays in registers: the finish reads nothing
 * the copy stored. A load from memory just stored by smaller stores cannot
 * be forwarded and waits for every older store, and the copy's are stores
 * into a frame's lines that the other core holds (a first version finished
 * with ISA-L over a stack buffer and lost 40 % on 64 KiB READs).
 * Elsewhere, and under FOLD_MIN bytes, it is ISA-L and memcpy.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "crc_table.h"
#include "xroce/wire.h"

#define CRC_POLY_NORMAL 0x04C11DB7u   /* x^32 omitted */
#define FOLD_MIN 1024   /* below, the fixed costs outweigh the pass saved */

/* x^e mod P, in the normal bit order (bit d: x^d). */
static uint32_t xpow_mod(unsigned e)
{
	uint32_t r = 1;

	while (e--)
		r = (r & 0x80000000u) ? (r << 1) ^ CRC_POLY_NORMAL : r << 1;
	return r;
}

/* x^e mod P reflected into `bits` bits: bit j holds x^(bits-1-j). The
 * fold constants use 33 (what VPCLMULQDQ's product of two reflected
 * values needs), the final reduction 32 (a raw register's order). */
static uint64_t xpow_reflected(unsigned e, unsigned bits)
{
	uint32_t k = xpow_mod(e);
	uint64_t v = 0;

	for (unsigned d = 0; d < 32; d++)
		if (k >> d & 1)
			v |= 1ull << (bits - 1 - d);
	return v;
}

#if defined(__x86_64__)
static bool use_vector;
/* Per lane {low half, high half}: fold by 2048 bits (four accumulators
 * ahead), by 512 (one), each lane onto the last (384, 256, 128, none),
 * and by 128 (the 16-byte steps). */
static uint64_t k2048[2], k512[2], klanes[8], k128[2];
static uint64_t x128, x96, x64;   /* x^k mod P as raw registers */

__attribute__((constructor))
static void crc_copy_init(void)
{
	static const unsigned lane_d[3] = { 384, 256, 128 };

	__builtin_cpu_init();
	use_vector = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
		     __builtin_cpu_supports("pclmul");
	k2048[0] = xpow_reflected(2048 + 32, 33);
	k2048[1] = xpow_reflected(2048 - 32, 33);
	k512[0] = xpow_reflected(512 + 32, 33);
	k512[1] = xpow_reflected(512 - 32, 33);
	for (unsigned i = 0; i < 3; i++) {
		klanes[2 * i] = xpow_reflected(lane_d[i] + 32, 33);
		klanes[2 * i + 1] = xpow_reflected(lane_d[i] - 32, 33);
	}
	klanes[6] = klanes[7] = 0;
	k128[0] = klanes[4];
	k128[1] = klanes[5];
	x128 = xpow_reflected(128, 32);
	x96 = xpow_reflected(96, 32);
	x64 = xpow_reflected(64, 32);
}

#define VEC_TARGET __attribute__((target("avx2,avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,ssse3,sse4.1")))

VEC_TARGET static inline __m512i fold(__m512i acc, __m512i k, __m512i next)
{
	__m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11);

	return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);   /* lo ^ hi ^ next */
}

VEC_TARGET static inline __m128i fold16(__m128i acc, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)),
			     next);
}

VEC_TARGET static inline uint64_t clmul32(uint64_t a, uint64_t b)
{
	return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a),
								 _mm_cvtsi64_si128((long long)b), 0));
}

/* The raw register after a zero register took r's 16 bytes, w0..w3:
 * w0 x^128 + w1 x^96 + w2 x^64 + w3 x^32 mod P. The three products sum
 * to 63 bits (x^(62-k) at bit k, one shift aligns them with w3); the low
 * word's x^32 is four table steps. */
VEC_TARGET static uint32_t reduce128(__m128i r)
{
	uint64_t q0 = (uint64_t)_mm_cvtsi128_si64(r), q1 = (uint64_t)_mm_extract_epi64(r, 1);
	uint64_t v = (clmul32(q0 & 0xFFFFFFFFu, x128) ^ clmul32(q0 >> 32, x96) ^ clmul32(q1 & 0xFFFFFFFFu, x64)) << 1;
	uint32_t lo = (uint32_t)v ^ (uint32_t)(q1 >> 32);

	for (int i = 0; i < 4; i++)
		lo = xr_crc_table[lo & 0xFF] ^ (lo >> 8);
	return lo ^ (uint32_t)(v >> 32);
}

/* n >= 256: copies n bytes and returns the raw register (start value
 * reg) after them. */
VEC_TARGET static uint32_t fold_copy(uint32_t reg, uint8_t *dst, const uint8_t *src, size_t n)
{
	__m512i kf = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k2048));
	__m512i k1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k512));
	__m512i x0 = _mm512_loadu_si512(src), x1 = _mm512_loadu_si512(src + 64);
	__m512i x2 = _mm512_loadu_si512(src + 128), x3 = _mm512_loadu_si512(src + 192);
	__m128i r, k16 = _mm_loadu_si128((const __m128i *)(const void *)k128);

	_mm512_storeu_si512(dst, x0);
	_mm512_storeu_si512(dst + 64, x1);
	_mm512_storeu_si512(dst + 128, x2);
	_mm512_storeu_si512(dst + 192, x3);
	/* The register's start value enters as the message's first 4 bytes. */
	x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(_mm_cvtsi32_si128((int)reg)));
	src += 256, dst += 256, n -= 256;
	while (n >= 256) {
		__m512i y0 = _mm512_loadu_si512(src), y1 = _mm512_loadu_si512(src + 64);
		__m512i y2 = _mm512_loadu_si512(src + 128), y3 = _mm512_loadu_si512(src + 192);
		_mm512_storeu_si512(dst, y0);
		_mm512_storeu_si512(dst + 64, y1);
		_mm512_storeu_si512(dst + 128, y2);
		_mm512_storeu_si512(dst + 192, y3);
		x0 = fold(x0, kf, y0);
		x1 = fold(x1, kf, y1);
		x2 = fold(x2, kf, y2);
		x3 = fold(x3, kf, y3);
		src += 256, dst += 256, n -= 256;
	}
	x1 = fold(x0, k1, x1);
	x2 = fold(x1, k1, x2);
	x3 = fold(x2, k1, x3);
	while (n >= 64) {
		__m512i y = _mm512_loadu_si512(src);
		_mm512_storeu_si512(dst, y);
		x3 = fold(x3, k1, y);
		src += 64, dst += 64, n -= 64;
	}
	/* Lanes 0..2 onto lane 3 (whose constant is zero: it stays as is). */
	{
		__m512i kl = _mm512_loadu_si512(klanes);
		__m512i t = fold(x3, kl, _mm512_maskz_mov_epi64(0xC0, x3));
		__m256i h = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
		r = _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
	}
	while (n >= 16) {
		__m128i y = _mm_loadu_si128((const __m128i *)(const void *)src);
		_mm_storeu_si128((__m128i *)(void *)dst, y);
		r = fold16(r, k16, y);
		src += 16, dst += 16, n -= 16;
	}
	if (n) {
		/* r || the last t bytes = a || b, a r's first t bytes (folded
		 * by 128 bits onto b), b the rest of r and the tail: two
		 * shuffles from one table, no bytes through memory. */
		static const uint8_t shf[48] = {
			0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
			0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
			0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
		};
		__mmask16 m = (__mmask16)((1u << n) - 1);
		__m128i t = _mm_maskz_loadu_epi8(m, src);
		__m128i up = _mm_loadu_si128((const __m128i *)(const void *)(shf + n));        /* by 16 - n up */
		__m128i down = _mm_loadu_si128((const __m128i *)(const void *)(shf + 16 + n)); /* by n down */
		__m128i a = _mm_shuffle_epi8(r, up);
		__m128i b = _mm_or_si128(_mm_shuffle_epi8(r, down), _mm_shuffle_epi8(t, up));

		_mm_mask_storeu_epi8(dst, m, t);
		r = fold16(a, k16, b);
	}
	return reduce128(r);
}
#endif

uint32_t xr_crc32_copy(uint32_t crc, void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	if (use_vector && n >= FOLD_MIN)
		return ~fold_copy(~crc, dst, src, n);
#endif
	/* Over the source, then the copy: the CRC's loads must not wait for
	 * the copy's stores. */
	crc = xr_crc32(crc, src, n);
	memcpy(dst, src, n);
	return crc;
}
