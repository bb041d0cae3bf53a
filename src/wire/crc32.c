/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 (IEEE, reflected: ISA-L's and zlib's), the ICRC's: xr_crc32.
 *
 * ISA-L folds a buffer under 256 bytes 16 bytes at a time, in series, and
 * its fixed costs dominate a packet's headers or a small packet. On CPUs
 * with AVX-512 and VPCLMULQDQ such buffers (SHORT_MIN to SHORT_MAX bytes)
 * are folded here instead, by the method of Intel's "Fast CRC Computation
 * for Generic Polynomials Using PCLMULQDQ": 64-byte blocks, each 128-bit
 * lane folded forward by multiplying its two halves by x^(D+32) and
 * x^(D-32) mod P (D the distance in bits), the four lanes onto one, and
 * one reduction of the 128-bit remainder. With a zero register, zeros in
 * front of a message change nothing, so the first n mod 64 bytes are
 * loaded as the end of a block (a masked load: nothing outside the buffer
 * is read) and no step is partial; the start register's share, reg x^(8n),
 * is added before the reduction. The constants are computed at load time,
 * not tabled. Each byte is read once (a frame's CRC must be of the bytes
 * it carries, even if its source changes meanwhile). Longer and shorter
 * buffers, and other CPUs, go to ISA-L.
 */
#include <isa-l/crc.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "xroce/wire.h"

#if defined(__x86_64__)
#define SHORT_MIN 40    /* xr_crc32 folds from here (ISA-L is quicker below) */
#define SHORT_MAX 256   /* and from here leaves it to ISA-L */
#define CRC_POLY_NORMAL 0x04C11DB7u   /* x^32 omitted */

static bool use_vector, use_avx;
/* Per lane {low half, high half}: fold by 512 bits (a block), and each
 * lane onto the last (384, 256, 128 bits; the last's own constant zero). */
static uint64_t k512[2], klanes[8];
static uint64_t k2048[2];   /* fold by 2048 bits: four blocks ahead (the copy) */
/* A remainder's words' weights x^128, x^96, x^64 (mod P) and x^32, and
 * x^(8n) (mod P), all reflected into 33 bits, as VPCLMULQDQ wants them. */
static uint64_t kwords[4];
static uint64_t x8n_short[SHORT_MAX];

/* x^e mod P, in the normal bit order (bit d: x^d). */
static uint32_t xpow_mod(unsigned e)
{
	uint32_t r = 1;

	while (e--)
		r = (r & 0x80000000u) ? (r << 1) ^ CRC_POLY_NORMAL : r << 1;
	return r;
}

/* x^e mod P reflected into 33 bits (bit j: x^(32-j)): what a carry-less
 * product with a reflected 32- or 64-bit value needs to land aligned. */
static uint64_t xpow_reflected(unsigned e)
{
	uint32_t k = xpow_mod(e);
	uint64_t v = 0;

	for (unsigned d = 0; d < 32; d++)
		if (k >> d & 1)
			v |= 1ull << (32 - d);
	return v;
}

__attribute__((constructor))
static void crc32_init(void)
{
	static const unsigned lane_d[3] = { 384, 256, 128 };

	__builtin_cpu_init();   /* whatever order the constructors run in */
	use_avx = __builtin_cpu_supports("avx");
	use_vector = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
		     __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
		     __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
		     __builtin_cpu_supports("sse4.1");
	k512[0] = xpow_reflected(512 + 32);
	k512[1] = xpow_reflected(512 - 32);
	k2048[0] = xpow_reflected(2048 + 32);
	k2048[1] = xpow_reflected(2048 - 32);
	for (unsigned i = 0; i < 3; i++) {
		klanes[2 * i] = xpow_reflected(lane_d[i] + 32);
		klanes[2 * i + 1] = xpow_reflected(lane_d[i] - 32);
	}
	klanes[6] = klanes[7] = 0;
	kwords[0] = xpow_reflected(128);
	kwords[1] = xpow_reflected(96);
	kwords[2] = xpow_reflected(64);
	kwords[3] = 1;   /* x^32 itself, left to the reduction */
	for (unsigned n = 0; n < SHORT_MAX; n++)
		x8n_short[n] = xpow_reflected(8 * n);
}

#define VEC_TARGET __attribute__((target("avx2,avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1")))

VEC_TARGET static inline __m512i fold(__m512i acc, __m512i k, __m512i next)
{
	__m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11);

	return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);   /* lo ^ hi ^ next */
}

/* The four lanes of x onto the last. */
VEC_TARGET static inline __m128i lanes_to_one(__m512i x)
{
	__m512i t = fold(x, _mm512_loadu_si512(klanes), _mm512_maskz_mov_epi64(0xC0, x));
	__m256i h = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));

	return _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* What a zero register becomes after r's 16 bytes, w0..w3, before the
 * reduction: v = w0 x^128 + w1 x^96 + w2 x^64 + w3 x^32 (mod P but for
 * the last term), in the low 64 bits (bit k: x^(63-k)). One multiply per
 * word, all four at once. */
VEC_TARGET static inline __m128i unreduced128(__m128i r)
{
	__m256i w = _mm256_cvtepu32_epi64(r);
	__m256i k = _mm256_loadu_si256((const __m256i *)(const void *)kwords);
	__m256i t = _mm256_xor_si256(_mm256_clmulepi64_epi128(w, k, 0x00), _mm256_clmulepi64_epi128(w, k, 0x11));

	return _mm_xor_si128(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* v mod P, as a raw register: Barrett reduction in the reflected order,
 * with floor(x^64 / P) and P reflected into 33 bits. */
VEC_TARGET static inline uint32_t barrett(__m128i v)
{
	const __m128i lo32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(v, lo32), _mm_set_epi64x(0, 0x1F7011641ll), 0),
				  lo32);
	__m128i rem = _mm_clmulepi64_si128(q, _mm_set_epi64x(0, 0x1DB710641ll), 0);

	return (uint32_t)_mm_extract_epi32(_mm_xor_si128(rem, v), 1);
}

/* The raw register after src's n bytes (1 <= n < SHORT_MAX) from reg;
 * with dst, the bytes are also stored there from the registers they were
 * loaded into (the copy: masked stores, nothing outside dst's n bytes). */
VEC_TARGET static inline __attribute__((always_inline)) uint32_t short_fold(uint32_t reg, uint8_t *dst,
									     const uint8_t *src, size_t n)
{
	size_t m = ((n - 1) & 63) + 1, left = n - m;
	__mmask64 head = ~0ull << (64 - m);
	__m512i k1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k512));
	__m512i x = _mm512_maskz_loadu_epi8(head, (const void *)((uintptr_t)src + m - 64));
	__m128i v;
	uint32_t crc;

	if (dst) {
		_mm512_mask_storeu_epi8((void *)((uintptr_t)dst + m - 64), head, x);
		dst += m;
	}
	for (src += m; left; src += 64, left -= 64) {
		__m512i y = _mm512_loadu_si512(src);
		if (dst) {
			_mm512_storeu_si512(dst, y);
			dst += 64;
		}
		x = fold(x, k1, y);
	}
	v = _mm_xor_si128(unreduced128(lanes_to_one(x)),
			  _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)reg), _mm_loadu_si64(&x8n_short[n]), 0));
	crc = barrett(v);
	/* The caller's SSE code must not pay for the upper halves (below);
	 * GCC would not clear them before a tail call. */
	_mm256_zeroupper();
	return crc;
}

VEC_TARGET static uint32_t crc_short(uint32_t reg, const uint8_t *src, size_t n)
{
	return short_fold(reg, NULL, src, n);
}

VEC_TARGET static uint32_t short_copy(uint32_t reg, uint8_t *dst, const uint8_t *src, size_t n)
{
	return short_fold(reg, dst, src, n);
}

VEC_TARGET static inline __m128i fold16(__m128i acc, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)),
			     next);
}

/* Copies n >= 256 bytes and returns the raw register (start value reg)
 * after them. Each byte is loaded once and both stored and folded from
 * the register it came in: the CRC is of the bytes stored, even if the
 * source changes meanwhile. Four accumulators fold a 256-byte block a
 * turn, then onto one, 64-byte then 16-byte steps, and the last n mod 16
 * bytes through two shuffles; nothing after the loads goes through memory. */
VEC_TARGET static uint32_t fold_copy(uint32_t reg, uint8_t *dst, const uint8_t *src, size_t n)
{
	__m512i kf = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k2048));
	__m512i k1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k512));
	__m128i k16 = _mm_loadu_si128((const __m128i *)(const void *)&klanes[4]);   /* by 128 bits */
	__m512i x0 = _mm512_loadu_si512(src), x1 = _mm512_loadu_si512(src + 64);
	__m512i x2 = _mm512_loadu_si512(src + 128), x3 = _mm512_loadu_si512(src + 192);
	__m128i r;
	uint32_t crc;

	_mm512_storeu_si512(dst, x0);
	_mm512_storeu_si512(dst + 64, x1);
	_mm512_storeu_si512(dst + 128, x2);
	_mm512_storeu_si512(dst + 192, x3);
	/* The start register enters as the message's first 4 bytes. */
	x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)reg)));
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
	r = lanes_to_one(x3);
	while (n >= 16) {
		__m128i y = _mm_loadu_si128((const __m128i *)(const void *)src);
		_mm_storeu_si128((__m128i *)(void *)dst, y);
		r = fold16(r, k16, y);
		src += 16, dst += 16, n -= 16;
	}
	if (n) {
		/* r || the last n bytes = a || b: a is r's first n bytes (folded
		 * by 128 bits onto b), b the rest of r then the tail. */
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
	crc = barrett(unreduced128(r));
	_mm256_zeroupper();
	return crc;
}

__attribute__((target("avx"))) static void vector_upper_clear(void)
{
	_mm256_zeroupper();
}
#endif

/* ISA-L's AVX-512 CRC returns with the upper halves of the vector
 * registers in use (it has no VZEROUPPER), and the next SSE instruction of
 * the caller, compiled for plain x86-64, then stalls: a fifth of a 64 KiB
 * sender's time sat on the first one after the ICRC. Cleared here, once
 * per CRC. */
uint32_t xr_crc32(uint32_t seed, const uint8_t *p, size_t n)
{
	uint32_t c;

#if defined(__x86_64__)
	if (use_vector && n >= SHORT_MIN && n < SHORT_MAX)
		return ~crc_short(~seed, p, n);
#endif
	c = crc32_gzip_refl(seed, p, n);
#if defined(__x86_64__)
	if (use_avx)
		vector_upper_clear();
#endif
	return c;
}

bool xr_crc32_copy_folds(void)
{
#if defined(__x86_64__)
	return use_vector;
#else
	return false;
#endif
}

uint32_t xr_crc32_copy(uint32_t seed, void *dst, const void *src, size_t n)
{
	const uint8_t *s = src;
	uint8_t *d = dst;

#if defined(__x86_64__)
	/* Overlapping buffers move as memmove would (below). */
	if (use_vector && n && (d + n <= s || s + n <= d))
		return n >= SHORT_MAX ? ~fold_copy(~seed, d, s, n) : ~short_copy(~seed, d, s, n);
#endif
	/* The copy, then the CRC of what it stored: one read of the source. */
	memmove(d, s, n);
	return xr_crc32(seed, d, n);
}
