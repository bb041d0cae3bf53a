/* SPDX-License-Identifier: MIT */
/* ICRC and checksums: the reference's vectors A-D byte-exact, and the fast
 * path against the portable reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <isa-l/crc.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_util.h"
#include "xroce/wire.h"

/* A: a ConnectX-4 Lx CNP, captured on real hardware. */
static const char *vec_a =
	"e41d2dab2bc2 7cfe90643b32 0800 45c2 003c 718c 4000 4011 9161 0a001101 0a001201"
	"0000 12b7 0028 0000 8100ffff 40000118 00000000"
	"00000000000000000000000000000000 82fd002a";

/* C: rxe-style RC SEND_ONLY "hello". */
static const char *vec_c =
	"02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 00"
	"00 34 00 00 40 00 40 11 b7 65 c0 a8 01 01 c0 a8"
	"01 02 c1 32 12 b7 00 20 00 00 04 30 ff ff 00 00"
	"00 12 80 00 00 00 68 65 6c 6c 6f 00 00 00 0d e2"
	"1a 55";

static void test_vector_a_hw_cnp(void **state)
{
	uint8_t f[128];
	size_t n = hex_to_bytes(vec_a, f, sizeof(f));
	struct xr_pkt p;

	(void)state;
	assert_int_equal(n, 74);
	assert_int_equal(xr_icrc(f + 14, n - 14 - 4), 0x2A00FD82u);
	assert_int_equal(xr_icrc_ref(f + 14, n - 14 - 4), 0x2A00FD82u);
	assert_int_equal(xr_pkt_parse(f, n, 0, 0, &p), XR_PARSE_OK);
	assert_int_equal(p.opcode, XR_OP_CNP);
	assert_true(p.becn);
	assert_false(p.fecn);
	assert_int_equal(p.dqpn, 0x118);
	assert_int_equal(p.traffic_class, 0xC2);
	assert_int_equal(p.icrc, 0x2A00FD82u);

	/* The builder reproduces the capture bit for bit. */
	{
		struct xr_pkt b;
		uint8_t out[128];
		xr_pkt_init(&b, XR_OP_CNP);
		memcpy(b.dmac, f, 6);
		memcpy(b.smac, f + 6, 6);
		b.traffic_class = 0xC2;
		b.ip_id = 0x718c;
		b.hop_limit = 0x40;
		xr_gid_from_ipv4(&b.sgid, 0x0a001101);
		xr_gid_from_ipv4(&b.dgid, 0x0a001201);
		b.sport = 0;
		b.dqpn = 0x118;
		assert_int_equal(xr_pkt_build(&b, out, sizeof(out)), 74);
		assert_memory_equal(out, f, 74);
	}
}

static void test_vector_b_scapy_uc(void **state)
{
	static const char *payload_hex = "4630818be28935d90e9a95505401be885e50";
	uint8_t payload[32], out[256];
	struct xr_pkt b, p;
	ssize_t n;

	(void)state;
	xr_pkt_init(&b, XR_OP_UC_SEND_ONLY);
	b.traffic_class = 0x01;
	b.ip_id = 1144;
	b.hop_limit = 64;
	xr_gid_from_ipv4(&b.sgid, 0xC0A80007);
	xr_gid_from_ipv4(&b.dgid, 0xC0A80007);
	b.sport = 49152;
	b.mig = true;
	b.dqpn = 211;
	b.psn = 13571856;
	b.payload = payload;
	b.payload_len = (uint32_t)hex_to_bytes(payload_hex, payload, sizeof(payload));
	assert_int_equal(b.payload_len, 18);
	n = xr_pkt_build(&b, out, sizeof(out));
	assert_int_equal(n, 14 + 20 + 44);
	assert_int_equal(b.pad, 2);
	/* BTH: 24 60 ffff 000000d3 00cf1710. The reference digest prints the
	 * PSN bytes as cf1610, a typo: PSN 13571856 is 0xCF1710, and only that
	 * value reproduces scapy's ICRC 78 f3 53 f3. */
	{
		uint8_t bth[12];
		hex_to_bytes("2460ffff000000d300cf1710", bth, sizeof(bth));
		assert_memory_equal(out + 14 + 20 + 8, bth, 12);
	}
	assert_memory_equal(out + n - 4, "\x78\xf3\x53\xf3", 4);
	assert_int_equal(xr_pkt_parse(out, (size_t)n, 0, 0, &p), XR_PARSE_OK);
	assert_int_equal(p.payload_len, 18);
	assert_memory_equal(p.payload, payload, 18);
}

static void build_vector_c(struct xr_pkt *b, const uint8_t *hello)
{
	static const uint8_t dmac[6] = { 2, 0, 0, 0, 0, 2 }, smac[6] = { 2, 0, 0, 0, 0, 1 };

	xr_pkt_init(b, XR_OP_RC_SEND_ONLY);
	memcpy(b->dmac, dmac, 6);
	memcpy(b->smac, smac, 6);
	xr_gid_from_ipv4(&b->sgid, 0xC0A80101);
	xr_gid_from_ipv4(&b->dgid, 0xC0A80102);
	b->sport = xr_rxe_udp_sport(0x11, 0x12);
	b->dqpn = 0x12;
	b->ackreq = true;
	b->payload = hello;
	b->payload_len = 5;
}

static void test_vector_c_rxe_send(void **state)
{
	uint8_t want[128], out[128];
	size_t n = hex_to_bytes(vec_c, want, sizeof(want));
	struct xr_pkt b;

	(void)state;
	assert_int_equal(xr_rxe_udp_sport(0x11, 0x12), 0xC132);
	assert_int_equal(xr_rxe_udp_sport(0x12, 0x11), 0xC132);
	build_vector_c(&b, (const uint8_t *)"hello");
	assert_int_equal(xr_pkt_build(&b, out, sizeof(out)), (ssize_t)n);
	assert_memory_equal(out, want, n);
	assert_int_equal(b.icrc, 0x551AE20Du);
}

static void test_vector_c_ack(void **state)
{
	uint8_t want[64], out[128];
	size_t n = hex_to_bytes("c1 32 12 b7 00 1c 00 00 11 00 ff ff 00 00 00 11 00 00 00 00"
				"1f 00 00 01 b4 7d 06 67", want, sizeof(want));
	struct xr_pkt b;
	ssize_t len;

	(void)state;
	xr_pkt_init(&b, XR_OP_RC_ACKNOWLEDGE);
	xr_gid_from_ipv4(&b.sgid, 0xC0A80102);
	xr_gid_from_ipv4(&b.dgid, 0xC0A80101);
	b.sport = 0xC132;
	b.dqpn = 0x11;
	b.aeth.syndrome = XR_AETH_ACK_UNLIMITED;
	b.aeth.msn = 1;
	len = xr_pkt_build(&b, out, sizeof(out));
	assert_int_equal(len, 14 + 20 + (ssize_t)n);
	assert_memory_equal(out + 14 + 20, want, n);
	assert_int_equal(out[14 + 2], 0x00);
	assert_int_equal(out[14 + 3], 0x30);
	assert_int_equal(out[14 + 10], 0xb7);
	assert_int_equal(out[14 + 11], 0x69);
}

static void test_vector_d_ipv6(void **state)
{
	uint8_t out[160];
	struct xr_pkt b, p;
	ssize_t n;

	(void)state;
	build_vector_c(&b, (const uint8_t *)"hello");
	b.ip_version = 6;
	assert_int_equal(xr_gid_parse(&b.sgid, "fd00::1"), 0);
	assert_int_equal(xr_gid_parse(&b.dgid, "fd00::2"), 0);
	n = xr_pkt_build(&b, out, sizeof(out));
	assert_int_equal(n, 14 + 40 + 8 + 12 + 8 + 4);
	assert_memory_equal(out + n - 4, "\xd4\x97\x12\x4e", 4);
	assert_int_equal(xr_icrc_ref(out + 14, (size_t)n - 18), b.icrc);
	assert_int_equal(xr_pkt_parse(out, (size_t)n, 0, 0, &p), XR_PARSE_OK);
	assert_int_equal(p.ip_version, 6);
}

/* The ICRC ignores exactly the variant fields: changing them keeps it,
 * changing any other covered byte changes it. */
static void test_icrc_masks_only_variant_fields(void **state)
{
	uint8_t f[128];
	size_t n = hex_to_bytes(vec_c, f, sizeof(f));
	const uint8_t *ip = f + 14;
	size_t ip_len = n - 14 - 4;
	uint32_t base = xr_icrc(ip, ip_len);
	const size_t variant[] = { 1, 8, 10, 11, 20 + 6, 20 + 7, 28 + 4 };

	(void)state;
	for (size_t i = 0; i < ip_len; i++) {
		bool is_variant = false;
		for (size_t k = 0; k < sizeof(variant) / sizeof(variant[0]); k++)
			is_variant |= variant[k] == i;
		f[14 + i] ^= 0x5A;
		if (is_variant)
			assert_int_equal(xr_icrc(ip, ip_len), base);
		else
			assert_int_not_equal(xr_icrc(ip, ip_len), base);
		assert_int_equal(xr_icrc(ip, ip_len), xr_icrc_ref(ip, ip_len));
		f[14 + i] ^= 0x5A;
	}
}

/* Fast path and reference agree on random packets of every length. */
static void test_icrc_fast_equals_reference(void **state)
{
	uint8_t buf[4200];
	uint64_t seed = 0x1CEC0FFEEull;

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = 1 + test_rand(&seed) % sizeof(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)test_rand(&seed);
		buf[0] = (uint8_t)((iter & 1 ? 0x60 : 0x45) | (buf[0] & 0x0F));
		assert_int_equal(xr_icrc(buf, len), xr_icrc_ref(buf, len));
	}
}

/* An ICRC updated for changed covered bytes (a UDP source port, an IPv4
 * ID, payload bytes) equals the ICRC computed afresh, on random packets
 * of every length up to a whole frame, both IP versions. */
static void test_icrc_update_equals_a_fresh_one(void **state)
{
	uint8_t buf[XR_MAX_FRAME], was[8];
	uint64_t seed = 0x5EED5;

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		bool v6 = iter & 1;
		size_t hdr = v6 ? 60 : 40, len = hdr + test_rand(&seed) % (sizeof(buf) - hdr + 1);
		size_t n = 1 + test_rand(&seed) % 4, off;
		uint32_t before, after;
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)test_rand(&seed);
		buf[0] = (uint8_t)((v6 ? 0x60 : 0x45) | (buf[0] & 0x0F));
		/* The UDP source port, the IPv4 ID, or anywhere after the headers. */
		off = iter % 3 == 0 ? hdr - 20 : iter % 3 == 1 && !v6 ? 4 : hdr + test_rand(&seed) % (len - hdr + 1);
		if (off + n > len)
			off = len - n;
		before = xr_icrc(buf, len);
		memcpy(was, buf + off, n);
		for (size_t i = 0; i < n; i++)
			buf[off + i] = (uint8_t)test_rand(&seed);
		after = xr_icrc(buf, len);
		assert_int_equal(xr_icrc_update(before, len, off, was, buf + off, n), after);
	}
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/* XGETBV(1): the state components in use. Only where the OS enabled
 * XSAVE (CPUID.1:ECX.OSXSAVE) and the CPU reports XINUSE (CPUID.(0xD,1):
 * EAX bit 2); *known false otherwise. */
static uint64_t vector_state_in_use(bool *known)
{
	unsigned a, b, c, d, lo, hi;

	*known = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)) && (c & (1u << 28)) &&
		 __get_cpuid_count(0xD, 1, &a, &b, &c, &d) && (a & (1u << 2));
	if (!*known)
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}

__attribute__((target("avx"))) static void upper_clear(void)
{
	_mm256_zeroupper();
}
#endif

/* ISA-L's AVX-512 CRC leaves the vector registers' upper halves in use,
 * and the caller's next SSE instruction stalls on it: after an ICRC they
 * are clean (XINUSE bits 2, the YMM upper halves, and 6, the ZMM ones).
 * It can only fail where ISA-L takes a path that dirties them (AVX-512). */
static void test_icrc_leaves_no_upper_vector_state(void **state)
{
#if defined(__x86_64__)
	static uint8_t pkt[4096];
	bool known;

	(void)state;
	for (size_t i = 0; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 7);
	pkt[0] = 0x45;
	vector_state_in_use(&known);
	if (!known)
		skip();   /* the CPU or OS cannot say (OSXSAVE, AVX or XINUSE missing) */
	/* A CPU may report the state in use when it is not: it must read
	 * clean right after a VZEROUPPER, or this test cannot tell. */
	upper_clear();
	if (vector_state_in_use(&known) & 0x44)
		skip();
	uint32_t c = xr_icrc(pkt, sizeof(pkt));
	uint64_t used = vector_state_in_use(&known);
	assert_int_equal(used & 0x44, 0);
	assert_int_equal(c, xr_icrc_ref(pkt, sizeof(pkt)));
	xr_crc32(0, pkt, sizeof(pkt));
	used = vector_state_in_use(&known);
	assert_int_equal(used & 0x44, 0);
	/* Short buffers fold in xroce's own code, others in ISA-L's. */
	for (size_t n = 1; n <= 4096; n = n * 2 + 1) {
		xr_crc32(0, pkt, n);
		assert_int_equal(vector_state_in_use(&known) & 0x44, 0);
	}
#else
	(void)state;
	skip();
#endif
}

/* An NS for fd00::2 from fd00::1 to its solicited-node group, with a
 * source link-layer option: scapy computes checksum 0x7d97. */
static void test_icmp6_checksum(void **state)
{
	static const uint8_t src[16] = { 0xfd, [15] = 1 };
	static const uint8_t dst[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 2 };
	uint8_t ns[32] = { 0x87, 0, 0, 0, 0, 0, 0, 0, 0xfd, [23] = 2, 1, 1, 2, 0, 0, 0, 0, 1 };

	(void)state;
	assert_int_equal(xr_icmp6_csum(src, dst, ns, sizeof(ns)), 0x7d97);
	ns[2] = 0x7d;
	ns[3] = 0x97;
	assert_int_equal(xr_icmp6_csum(src, dst, ns, sizeof(ns)), 0);   /* intact on receive */
	ns[20] ^= 1;
	assert_int_not_equal(xr_icmp6_csum(src, dst, ns, sizeof(ns)), 0);
}

static void test_udp_checksum(void **state)
{
	uint8_t out[256], payload[77];
	struct xr_pkt b, p;
	ssize_t n;

	(void)state;
	memset(payload, 0xA5, sizeof(payload));
	for (int v = 4; v <= 6; v += 2) {
		build_vector_c(&b, payload);
		b.payload_len = sizeof(payload);
		b.udp_csum = true;
		if (v == 6) {
			b.ip_version = 6;
			xr_gid_parse(&b.sgid, "2001:db8::1");
			xr_gid_parse(&b.dgid, "2001:db8::2");
		}
		n = xr_pkt_build(&b, out, sizeof(out));
		assert_true(n > 0);
		assert_int_equal(xr_pkt_parse(out, (size_t)n, 0, 0, &p), XR_PARSE_OK);
		assert_true(p.udp_csum);
		/* The ICRC does not depend on the UDP checksum. */
		b.udp_csum = false;
		assert_int_equal(xr_pkt_build(&b, out, sizeof(out)), n);
		assert_int_equal(b.icrc, p.icrc);
		/* A wrong non-zero checksum is rejected. */
		b.udp_csum = true;
		xr_pkt_build(&b, out, sizeof(out));
		out[b.l4_off + 6] ^= 1;
		assert_int_equal(xr_pkt_parse(out, (size_t)n, 0, 0, &p), XR_PARSE_BAD_UDP_CSUM);
	}
}

/* The IPv4 ID a socket cannot see is read back out of the ICRC. */
static void test_recover_ipv4_id(void **state)
{
	uint8_t payload[4096], f[XR_MAX_FRAME];
	uint64_t seed = 99;
	int recovered = 0, refused = 0;

	(void)state;
	for (int k = 0; k < 300; k++) {
		struct xr_pkt b;
		ssize_t n;
		uint16_t id, got;
		uint8_t *ip;
		size_t len;
		for (size_t i = 0; i < sizeof(payload); i++)
			payload[i] = (uint8_t)test_rand(&seed);
		build_vector_c(&b, payload);
		b.payload_len = (uint32_t)(test_rand(&seed) % 4097);
		id = (uint16_t)test_rand(&seed);
		b.ip_id = id;
		n = xr_pkt_build(&b, f, sizeof(f));
		assert_true(n > 0);
		ip = f + b.l3_off;
		len = (size_t)n - b.l3_off - 4;
		f[b.l3_off + 4] = 0;   /* what a UDP socket's receiver rebuilds */
		f[b.l3_off + 5] = 0;
		assert_int_equal(xr_icrc_recover_ipv4_id(ip, len, b.icrc, &got), 0);
		assert_int_equal(got, id);
		recovered++;
		/* A flipped payload bit is not explained by any ID (almost always). */
		if (b.payload_len) {
			f[b.payload_off] ^= 0x10;
			refused += xr_icrc_recover_ipv4_id(ip, len, b.icrc, &got) != 0;
		}
	}
	assert_int_equal(recovered, 300);
	assert_true(refused >= 290);
}

/* xr_crc32 against ISA-L's own function, every length to 600 (its own
 * folds from 40 to 255 bytes: each length of the first, masked block),
 * several seeds and alignments; then at the edges of a page between two
 * inaccessible ones, where a load outside the buffer would fault. */
static void test_crc32_equals_isal(void **state)
{
	static const uint32_t seeds[] = { 0, 0xFFFFFFFFu, 0x2144DF1Cu, 0x80000000u };
	static uint8_t src[700];
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map, *page;
	uint64_t rnd = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)test_rand(&rnd);
	for (size_t n = 0; n <= 600; n++)
		for (size_t so = 0; so < 4; so++)
			assert_int_equal(xr_crc32(seeds[(n + so) % 4], src + so * 17, n),
					 crc32_gzip_refl(seeds[(n + so) % 4], src + so * 17, n));
	map = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	page = map + pg;
	assert_int_equal(mprotect(map, (size_t)pg, PROT_NONE), 0);
	assert_int_equal(mprotect(page + pg, (size_t)pg, PROT_NONE), 0);
	for (long i = 0; i < pg; i++)
		page[i] = (uint8_t)test_rand(&rnd);
	for (size_t n = 0; n <= 600; n++) {
		assert_int_equal(xr_crc32(0x12345678u, page, n), crc32_gzip_refl(0x12345678u, page, n));
		assert_int_equal(xr_crc32(0x12345678u, page + pg - n, n),
				 crc32_gzip_refl(0x12345678u, page + pg - n, n));
	}
	munmap(map, (size_t)pg * 3);
}

/* The copying CRC against ISA-L's over the source: lengths around each
 * of the fold's steps (256-, 64- and 16-byte blocks, the tail), misaligned
 * ends, several seeds; exactly n bytes written; source and destination at
 * the edges of pages between inaccessible ones (nothing read or written
 * outside them); overlapping buffers moved as memmove moves them. */
static void test_crc32_copy_equals_isal(void **state)
{
	static const size_t lens[] = { 0, 1, 3, 4, 63, 64, 255, 256, 257, 319, 320, 383, 511, 512,
				       575, 1000, 1023, 1024, 1025, 1039, 1040, 1087, 1104, 1279, 1300,
				       2047, 4095, 4096, 4097, 4159, 4176, 8205 };
	static const uint32_t seeds[] = { 0, 0xFFFFFFFFu, 0x2144DF1Cu, 0x12345678u };
	static uint8_t src[8300], dst[8400], ovl[8400];
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map, *a, *b;
	uint64_t rnd = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)test_rand(&rnd);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t so = 0; so < 40; so += 13)
			for (size_t d = 0; d < 2; d++)
				for (size_t s = 0; s < 4; s++) {
					size_t n = lens[l], doff = 64 + d * 5;
					memset(dst, 0xA5, sizeof(dst));
					assert_int_equal(xr_crc32_copy(seeds[s], dst + doff, src + so, n),
							 crc32_gzip_refl(seeds[s], src + so, n));
					if (n)
						assert_memory_equal(dst + doff, src + so, n);
					for (size_t i = 0; i < doff; i++)
						assert_int_equal(dst[i], 0xA5);
					for (size_t i = doff + n; i < sizeof(dst); i++)
						assert_int_equal(dst[i], 0xA5);
				}
	/* Two pages, each between inaccessible ones: a source and a
	 * destination that end (or start) at a page's edge. */
	map = mmap(NULL, (size_t)pg * 5, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	a = map + pg;
	b = map + 3 * pg;
	assert_int_equal(mprotect(map, (size_t)pg, PROT_NONE), 0);
	assert_int_equal(mprotect(a + pg, (size_t)pg, PROT_NONE), 0);
	assert_int_equal(mprotect(b + pg, (size_t)pg, PROT_NONE), 0);
	for (long i = 0; i < pg; i++)
		a[i] = (uint8_t)test_rand(&rnd);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]) && lens[l] <= (size_t)pg; l++) {
		size_t n = lens[l];
		assert_int_equal(xr_crc32_copy(1, b + pg - n, a + pg - n, n), crc32_gzip_refl(1, a + pg - n, n));
		assert_memory_equal(b + pg - n, a + pg - n, n);
		assert_int_equal(xr_crc32_copy(2, b, a, n), crc32_gzip_refl(2, a, n));
		assert_memory_equal(b, a, n);
	}
	munmap(map, (size_t)pg * 5);
	/* Overlap, either way: memmove's result, and the CRC of the bytes as
	 * they were. */
	for (size_t shift = 1; shift < 200; shift += 67)
		for (int up = 0; up < 2; up++) {
			size_t n = 4096, from = up ? 100 : 100 + shift, to = up ? 100 + shift : 100;
			uint32_t want = crc32_gzip_refl(5, src, n);
			memcpy(ovl + from, src, n);
			assert_int_equal(xr_crc32_copy(5, ovl + to, ovl + from, n), want);
			assert_memory_equal(ovl + to, src, n);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vector_a_hw_cnp),
		cmocka_unit_test(test_vector_b_scapy_uc),
		cmocka_unit_test(test_vector_c_rxe_send),
		cmocka_unit_test(test_vector_c_ack),
		cmocka_unit_test(test_vector_d_ipv6),
		cmocka_unit_test(test_icrc_masks_only_variant_fields),
		cmocka_unit_test(test_icrc_fast_equals_reference),
		cmocka_unit_test(test_icrc_update_equals_a_fresh_one),
		cmocka_unit_test(test_icrc_leaves_no_upper_vector_state),
		cmocka_unit_test(test_crc32_equals_isal),
		cmocka_unit_test(test_crc32_copy_equals_isal),
		cmocka_unit_test(test_udp_checksum),
		cmocka_unit_test(test_icmp6_checksum),
		cmocka_unit_test(test_recover_ipv4_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
