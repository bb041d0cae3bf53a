/* SPDX-License-Identifier: MIT */
/*
 * The RoCE v2 invariant CRC (reference §5): CRC-32 (IEEE, reflected, as
 * zlib) over 8 bytes of 0xFF, then the IP, UDP and BTH headers with their
 * variant fields set to all ones, then everything up to the ICRC itself.
 *
 * Fast path: one CRC (xr_crc32, crc32.c) over the packet exactly as it
 * is, with a seed that already accounts for the masking. CRC is linear:
 * setting the variant bytes to ones XORs delta_i = byte ^ 0xFF in at
 * offset pos_i, which changes the raw register by
 * crc_table[delta_i] * x^(8(L-1-pos_i)). Changing the seed by S changes
 * it by S * x^(8L). So the seed adjustment
 *     S = XOR_i crc_table[delta_i] * x^(-8(pos_i+1))   (mod P)
 * does the masking, independent of the packet length L; one 256-entry
 * table per variant position holds the products. No copy, no second call
 * (slow on tiny buffers), no multiply per packet.
 *
 * Reference path: a byte-wise table CRC that masks each byte by its offset.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hdr.h"
#include "xroce/wire.h"

/* zlib.crc32(8 x 0xFF): the CRC after the pseudo-LRH (rxe's seed 0xDEBB20E3
 * is its complement, the raw register). */
#define CRC_AFTER_LRH 0x2144DF1Cu
#define CRC_POLY_REFLECTED 0xEDB88320u

/* Variant byte positions within IP+UDP+BTH, per IP version. */
#define MASKED_HDR_V4 (XR_IPV4_HLEN + XR_UDP_HLEN + XR_BTH_LEN)
#define MASKED_HDR_V6 (XR_IPV6_HLEN + XR_UDP_HLEN + XR_BTH_LEN)
static const uint8_t variant_v4[] = {
	IP4_OFF_TOS, IP4_OFF_TTL, IP4_OFF_CSUM, IP4_OFF_CSUM + 1,
	XR_IPV4_HLEN + UDP_OFF_CSUM, XR_IPV4_HLEN + UDP_OFF_CSUM + 1,
	XR_IPV4_HLEN + XR_UDP_HLEN + BTH_OFF_FB,
};
static const uint8_t variant_v6[] = {
	0, 1, 2, 3, IP6_OFF_HOPLIM,  /* byte 0: low nibble only (traffic class) */
	XR_IPV6_HLEN + UDP_OFF_CSUM, XR_IPV6_HLEN + UDP_OFF_CSUM + 1,
	XR_IPV6_HLEN + XR_UDP_HLEN + BTH_OFF_FB,
};

static uint32_t crc_table[256];                  /* R(0, one byte) */
static uint32_t seed_v4[sizeof(variant_v4)][256];/* crc_table[b] * x^(-8(pos+1)) */
static uint32_t seed_v6[sizeof(variant_v6)][256];

/* Multiplies a reflected CRC register by x^-1 mod P (undoes one zero bit). */
static uint32_t div_x(uint32_t s)
{
	return (s & 0x80000000u) ? ((s ^ CRC_POLY_REFLECTED) << 1) | 1 : s << 1;
}

static void fill_seed_tables(uint32_t (*t)[256], const uint8_t *pos, size_t npos)
{
	for (size_t i = 0; i < npos; i++)
		for (unsigned b = 0; b < 256; b++) {
			uint32_t s = crc_table[b];
			for (unsigned k = 0; k < 8u * (pos[i] + 1u); k++)
				s = div_x(s);
			t[i][b] = s;
		}
}

/* Built once at load time, so the per-packet path has no init check. */
__attribute__((constructor))
static void tables_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? CRC_POLY_REFLECTED ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	fill_seed_tables(seed_v4, variant_v4, sizeof(variant_v4));
	fill_seed_tables(seed_v6, variant_v6, sizeof(variant_v6));
}

static size_t ip_hdr_len(const uint8_t *ip)
{
	return ip_version(ip) == 6 ? XR_IPV6_HLEN : XR_IPV4_HLEN;
}

/* Seed that makes one CRC over the unmasked packet equal the ICRC. */
static uint32_t masked_seed(const uint8_t *ip, bool v6)
{
	uint32_t s = CRC_AFTER_LRH;

	if (v6) {
		s ^= seed_v6[0][(uint8_t)(ip[0] ^ (ip[0] | 0x0F))];
		for (size_t i = 1; i < sizeof(variant_v6); i++)
			s ^= seed_v6[i][(uint8_t)~ip[variant_v6[i]]];
	} else {
		for (size_t i = 0; i < sizeof(variant_v4); i++)
			s ^= seed_v4[i][(uint8_t)~ip[variant_v4[i]]];
	}
	return s;
}

/* Packets too short to hold all headers: CRC over a masked copy. */
static uint32_t icrc_masked_copy(const uint8_t *ip, size_t len)
{
	uint8_t hdr[MASKED_HDR_V6];
	bool v6 = ip_version(ip) == 6;
	const uint8_t *pos = v6 ? variant_v6 : variant_v4;
	size_t npos = v6 ? sizeof(variant_v6) : sizeof(variant_v4);

	memcpy(hdr, ip, len);
	for (size_t i = 0; i < npos; i++)
		if (pos[i] < len)
			hdr[pos[i]] = (v6 && pos[i] == 0) ? (uint8_t)(hdr[0] | 0x0F) : 0xFF;
	return xr_crc32(CRC_AFTER_LRH, hdr, len);
}

uint32_t xr_icrc(const uint8_t *ip, size_t len)
{
	bool v6;

	if (len == 0)
		return CRC_AFTER_LRH;
	v6 = ip_version(ip) == 6;
	if (len < (v6 ? MASKED_HDR_V6 : MASKED_HDR_V4))
		return icrc_masked_copy(ip, len);
	return xr_crc32(masked_seed(ip, v6), ip, len);
}

/* ---- the IPv4 ID behind an ICRC ----
 *
 * A UDP socket never shows the IPv4 ID, yet the ICRC covers it, and rxe
 * sends non-zero IDs. The ID can be read back from the ICRC itself: with
 * the ID field set to v the ICRC is icrc(0) ^ A(v) * x^(8L) (mod P), A
 * linear in v's 16 bits (the seed tables of positions 4 and 5). So
 * A(v) = (icrc_wire ^ icrc(0)) * x^(-8L), and a table of the 65,536 A(v)
 * names v. A corrupted packet passes only if it lands on one of those
 * 65,536 values: 16 of the ICRC's 32 bits still check the packet. */

#define MAX_L 0x10000
static uint32_t seed_id[2][256];           /* ID high and low byte */
static uint32_t *inv_x8n;                   /* x^(-8n) mod P, reflected */
static struct id_slot { uint32_t a; uint16_t v; bool used; } *id_index;   /* A(v) -> v */
#define ID_INDEX_SLOTS (1u << 18)
static pthread_once_t id_once = PTHREAD_ONCE_INIT;

static uint32_t mulmod_portable(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			p ^= b;
		b = (b & 1) ? (b >> 1) ^ CRC_POLY_REFLECTED : b >> 1;
	}
	return p;
}

static uint32_t id_a(uint16_t v)
{
	return seed_id[0][v >> 8] ^ seed_id[1][v & 0xFF];
}

static void id_init(void)
{
	static const uint8_t pos[2] = { IP4_OFF_ID, IP4_OFF_ID + 1 };

	fill_seed_tables(seed_id, pos, 2);
	inv_x8n = malloc(MAX_L * sizeof(*inv_x8n));
	id_index = calloc(ID_INDEX_SLOTS, sizeof(*id_index));
	if (!inv_x8n || !id_index)
		return;
	inv_x8n[0] = 0x80000000u;   /* the polynomial 1 */
	for (size_t n = 1; n < MAX_L; n++) {
		uint32_t s = inv_x8n[n - 1];
		for (int k = 0; k < 8; k++)
			s = div_x(s);
		inv_x8n[n] = s;
	}
	for (uint32_t v = 0; v <= 0xFFFF; v++) {
		uint32_t a = id_a((uint16_t)v), i = (a * 0x9E3779B1u) >> 14;
		while (id_index[i].used)
			i = (i + 1) & (ID_INDEX_SLOTS - 1);
		id_index[i] = (struct id_slot){ a, (uint16_t)v, true };
	}
}

int xr_icrc_recover_ipv4_id(const uint8_t *ip, size_t len, uint32_t wire_icrc, uint16_t *id)
{
	return xr_icrc_recover_ipv4_id_from(ip, len, xr_icrc(ip, len), wire_icrc, id);
}

int xr_icrc_recover_ipv4_id_from(const uint8_t *ip, size_t len, uint32_t icrc_id0, uint32_t wire_icrc,
				 uint16_t *id)
{
	uint32_t d, a, i;

	if (len < MASKED_HDR_V4 || len >= MAX_L || ip_version(ip) != 4 || get_be16(ip + IP4_OFF_ID) != 0)
		return -1;
	pthread_once(&id_once, id_init);
	if (!id_index)
		return -1;
	d = icrc_id0 ^ wire_icrc;
	if (!d) {
		*id = 0;
		return 0;
	}
	a = mulmod_portable(d, inv_x8n[len]);
	for (i = (a * 0x9E3779B1u) >> 14; id_index[i].used; i = (i + 1) & (ID_INDEX_SLOTS - 1))
		if (id_index[i].a == a) {
			*id = id_index[i].v;
			return 0;
		}
	return -1;
}

/* ---- an ICRC after a header field changed ----
 *
 * Changing n bytes at off by XOR d changes the CRC by R(d) * x^(8m), m the
 * bytes after them (R: the raw register of d from zero): no pass over the
 * packet. Only for bytes the ICRC covers as they are (not variant ones). */

static uint32_t x8n[XR_MAX_FRAME + 1];   /* x^(8n) mod P, reflected */
static pthread_once_t x8n_once = PTHREAD_ONCE_INIT;

static void x8n_init(void)
{
	x8n[0] = 0x80000000u;   /* the polynomial 1 */
	for (size_t n = 1; n <= XR_MAX_FRAME; n++)
		x8n[n] = crc_table[x8n[n - 1] & 0xFF] ^ (x8n[n - 1] >> 8);   /* one zero byte */
}

uint32_t xr_icrc_update(uint32_t icrc, size_t len, size_t off, const uint8_t *was, const uint8_t *now, size_t n)
{
	uint32_t r = 0;

	if (off + n > len || len - off - n > XR_MAX_FRAME)
		return icrc ^ 1u;   /* cannot be: a wrong ICRC, never a wild read */
	pthread_once(&x8n_once, x8n_init);
	for (size_t i = 0; i < n; i++)
		r = crc_table[(r ^ was[i] ^ now[i]) & 0xFF] ^ (r >> 8);
	return icrc ^ mulmod_portable(r, x8n[len - off - n]);
}

/* ---- portable reference ---- */

/* True when byte i of the IP packet is a variant field (masked to 1s). */
static bool is_variant_byte(size_t ip_len, size_t i)
{
	if (ip_len == XR_IPV4_HLEN) {
		if (i == IP4_OFF_TOS || i == IP4_OFF_TTL ||
		    i == IP4_OFF_CSUM || i == IP4_OFF_CSUM + 1)
			return true;
	} else if (i <= 3 || i == IP6_OFF_HOPLIM) {
		return true;  /* byte 0 only in its low nibble, see caller */
	}
	return i == ip_len + UDP_OFF_CSUM || i == ip_len + UDP_OFF_CSUM + 1 ||
	       i == ip_len + XR_UDP_HLEN + BTH_OFF_FB;
}

uint32_t xr_icrc_ref(const uint8_t *ip, size_t len)
{
	uint32_t crc = 0xFFFFFFFFu;
	size_t ip_len = len ? ip_hdr_len(ip) : XR_IPV4_HLEN;

	for (size_t i = 0; i < 8; i++)
		crc = crc_table[(crc ^ 0xFF) & 0xFF] ^ (crc >> 8);
	for (size_t i = 0; i < len; i++) {
		uint8_t b = ip[i];
		if (is_variant_byte(ip_len, i))
			b = (ip_len == XR_IPV6_HLEN && i == 0) ? (uint8_t)(b | 0x0F) : 0xFF;
		crc = crc_table[(crc ^ b) & 0xFF] ^ (crc >> 8);
	}
	return ~crc;
}

/* ---- Internet checksums ---- */

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += get_be16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t xr_ipv4_csum(const uint8_t *hdr20)
{
	uint32_t sum = csum_add(0, hdr20, IP4_OFF_CSUM);
	sum = csum_add(sum, hdr20 + IP4_OFF_CSUM + 2, XR_IPV4_HLEN - IP4_OFF_CSUM - 2);
	return csum_fold(sum);
}

uint16_t xr_udp_csum(const uint8_t *ip, size_t ip_len_total)
{
	size_t ip_len = ip_hdr_len(ip);
	const uint8_t *udp = ip + ip_len;
	size_t udp_len = ip_len_total - ip_len;
	uint32_t sum = 0;
	uint16_t c;

	if (ip_len == XR_IPV4_HLEN)
		sum = csum_add(sum, ip + IP4_OFF_SRC, 8);
	else
		sum = csum_add(sum, ip + IP6_OFF_SRC, 32);
	sum += IP_PROTO_UDP + (uint32_t)udp_len;
	sum = csum_add(sum, udp, UDP_OFF_CSUM);
	sum = csum_add(sum, udp + UDP_OFF_CSUM + 2, udp_len - UDP_OFF_CSUM - 2);
	c = csum_fold(sum);
	return c ? c : 0xFFFF;  /* 0 means "no checksum" on the wire */
}

uint16_t xr_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *icmp, size_t len)
{
	uint32_t sum = csum_add(csum_add(0, src, 16), dst, 16);

	sum += (uint32_t)len + 58 /* ICMPv6 */;
	return csum_fold(csum_add(sum, icmp, len));
}

uint16_t xr_rxe_udp_sport(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)lqpn * rqpn;
	uint32_t fl;

	v ^= v >> 20;
	v ^= v >> 40;
	fl = (uint32_t)(v & 0xFFFFF);
	return (uint16_t)(0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)));
}
