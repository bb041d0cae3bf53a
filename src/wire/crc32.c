/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 (IEEE, reflected: ISA-L's and zlib's), the ICRC's: xr_crc32, and
 * xr_crc32_copy, a copy that computes the CRC of what it copies in one
 * pass (a frame's payload is read once; the ICRC no longer reads it back
 * from the frame, where on the mem link the loads waited for the copy's
 * stores: see tx_flush).
 *
 * On CPUs with AVX-512 and VPCLMULQDQ both fold here (the method of
 * Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"):
 * 64-byte accumulators (four from 256 bytes), each 128-bit lane folded
 * forward by multiplying its two halves by x^(D+32) and x^(D-32) mod P (D
 * the distance in bits), then one lane, then 16-byte steps, a last partial
 * one by two shuffles, and a reduction of the 128-bit remainder. The
 * constants are computed at load time, not tabled. xr_crc32 folds buffers
 * of 16 to SHORT_MAX bytes (a packet's headers, a small packet: ISA-L
 * folds those 16 bytes at a time in series, and its fixed costs dominate)
 * and leaves longer ones to ISA-L; xr_crc32_copy folds from FOLD_MIN.
 *
 * Everything after the loads stays in registers: the finish reads nothing
 * the copy stored. A load from memory just stored by smaller stores cannot
 * be forwarded and waits for every older store, and the copy's are stores
 * into a frame's lines that the other core holds (a first version finished
 * with ISA-L over a stack buffer and lost 40 % on 64 KiB READs).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <isa-l/crc.h>

#include "xroce/wire.h"

#define CRC_POLY_NORMAL 0x04C11DB7u   /* x^32 omitted */
#define FOLD_MIN 1024   /* copies below: the fixed costs outweigh the pass saved */
#define SHORT_MIN 40    /* xr_crc32 folds from here (ISA-L is quicker below) */
#define SHORT_MAX 256   /* and from here leaves it to ISA-L */

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
static bool use_vector, use_avx;
/* Per lane {low half, high half}: fold by 2048 bits (four accumulators
 * ahead), by 512 (one), each lane onto the last (384, 256, 128, none),
 * and by 128 (the 16-byte steps). */
static uint64_t k2048[2], k512[2], klanes[8], k128[2];
/* A remainder's words' weights x^128, x^96, x^64 (mod P) and x^32, and
 * x^(8n) (mod P), all reflected into 33 bits, as VPCLMULQDQ wants them. */
static uint64_t kwords[4];
static uint64_t x8n_short[SHORT_MAX];

__attribute__((constructor))
static void crc32_init(void)
{
	static const unsigned lane_d[3] = { 384, 256, 128 };

	__builtin_cpu_init();
	use_avx = __builtin_cpu_supports("avx");
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
	kwords[0] = xpow_reflected(128, 33);
	kwords[1] = xpow_reflected(96, 33);
	kwords[2] = xpow_reflected(64, 33);
	kwords[3] = 1;   /* x^32 itself, left to the reduction */
	for (unsigned n = 0; n < SHORT_MAX; n++)
		x8n_short[n] = xpow_reflected(8 * n, 33);
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

VEC_TARGET static inline uint32_t reduce128(__m128i r)
{
	return barrett(unreduced128(r));
}

/* The four lanes of x onto the last (whose constant is zero: it stays as
 * is). */
VEC_TARGET static inline __m128i lanes_to_one(__m512i x)
{
	__m512i t = fold(x, _mm512_loadu_si512(klanes), _mm512_maskz_mov_epi64(0xC0, x));
	__m256i h = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
	return _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* 1 <= n < SHORT_MAX, no copy. With a zero register, zeros in front of a
 * message change nothing: the first n mod 64 bytes (or 64) are loaded as
 * the end of a 64-byte block (a masked load: nothing before src is read),
 * the rest in whole blocks, so no step is partial. The start register's
 * share, reg x^(8n), is added before the one reduction. */
VEC_TARGET static uint32_t crc_short(uint32_t reg, const uint8_t *src, size_t n)
{
	size_t m = ((n - 1) & 63) + 1, left = n - m;
	__m512i k1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k512));
	__m512i x = _mm512_maskz_loadu_epi8(~0ull << (64 - m), (const void *)((uintptr_t)src + m - 64));

	for (src += m; left; src += 64, left -= 64)
		x = fold(x, k1, _mm512_loadu_si512(src));
	__m128i v = _mm_xor_si128(unreduced128(lanes_to_one(x)),
				  _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)reg), _mm_loadu_si64(&x8n_short[n]), 0));
	uint32_t crc = barrett(v);

	/* The caller's SSE code must not pay for the upper halves (see
	 * xr_crc32); GCC would not clear them before a tail call. */
	_mm256_zeroupper();
	return crc;
}

/* Copies (with copy) and CRCs n >= 16 bytes; returns the raw register
 * (start value reg) after them. Inlined into its two users, so the copy's
 * stores vanish from the other. */
VEC_TARGET static inline __attribute__((always_inline)) uint32_t
fold_body(uint32_t reg, uint8_t *dst, const uint8_t *src, size_t n, bool copy)
{
	__m512i k1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k512));
	__m128i r, k16 = _mm_loadu_si128((const __m128i *)(const void *)k128);
	/* The register's start value enters as the message's first 4 bytes. */
	__m128i start = _mm_cvtsi32_si128((int)reg);

	if (n >= 64) {
		__m512i x3;
		if (n >= 256) {
			__m512i kf = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k2048));
			__m512i x0 = _mm512_loadu_si512(src), x1 = _mm512_loadu_si512(src + 64);
			__m512i x2 = _mm512_loadu_si512(src + 128);
			x3 = _mm512_loadu_si512(src + 192);
			if (copy) {
				_mm512_storeu_si512(dst, x0);
				_mm512_storeu_si512(dst + 64, x1);
				_mm512_storeu_si512(dst + 128, x2);
				_mm512_storeu_si512(dst + 192, x3);
				dst += 256;
			}
			x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(start));
			src += 256, n -= 256;
			while (n >= 256) {
				__m512i y0 = _mm512_loadu_si512(src), y1 = _mm512_loadu_si512(src + 64);
				__m512i y2 = _mm512_loadu_si512(src + 128), y3 = _mm512_loadu_si512(src + 192);
				if (copy) {
					_mm512_storeu_si512(dst, y0);
					_mm512_storeu_si512(dst + 64, y1);
					_mm512_storeu_si512(dst + 128, y2);
					_mm512_storeu_si512(dst + 192, y3);
					dst += 256;
				}
				x0 = fold(x0, kf, y0);
				x1 = fold(x1, kf, y1);
				x2 = fold(x2, kf, y2);
				x3 = fold(x3, kf, y3);
				src += 256, n -= 256;
			}
			x1 = fold(x0, k1, x1);
			x2 = fold(x1, k1, x2);
			x3 = fold(x2, k1, x3);
		} else {
			x3 = _mm512_loadu_si512(src);
			if (copy) {
				_mm512_storeu_si512(dst, x3);
				dst += 64;
			}
			x3 = _mm512_xor_si512(x3, _mm512_castsi128_si512(start));
			src += 64, n -= 64;
		}
		while (n >= 64) {
			__m512i y = _mm512_loadu_si512(src);
			if (copy) {
				_mm512_storeu_si512(dst, y);
				dst += 64;
			}
			x3 = fold(x3, k1, y);
			src += 64, n -= 64;
		}
		r = lanes_to_one(x3);
	} else {
		r = _mm_loadu_si128((const __m128i *)(const void *)src);
		if (copy) {
			_mm_storeu_si128((__m128i *)(void *)dst, r);
			dst += 16;
		}
		r = _mm_xor_si128(r, start);
		src += 16, n -= 16;
	}
	while (n >= 16) {
		__m128i y = _mm_loadu_si128((const __m128i *)(const void *)src);
		if (copy) {
			_mm_storeu_si128((__m128i *)(void *)dst, y);
			dst += 16;
		}
		r = fold16(r, k16, y);
		src += 16, n -= 16;
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

		if (copy)
			_mm_mask_storeu_epi8(dst, m, t);
		r = fold16(a, k16, b);
	}
	return reduce128(r);
}

VEC_TARGET static uint32_t fold_copy(uint32_t reg, uint8_t *dst, const uint8_t *src, size_t n)
{
	uint32_t crc = fold_body(reg, dst, src, n, true);

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
