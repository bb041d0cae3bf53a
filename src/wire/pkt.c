/* SPDX-License-Identifier: MIT */
/* GIDs and packet-description defaults. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "bytes.h"
#include "xroce/wire.h"

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };

/* Two 8-byte stores: a GID is compared 8 bytes at a time (memcmp), and a
 * load that spans two smaller stores cannot take its value from the store
 * buffer: it waits for every older store to reach the cache, a frame's
 * whole payload copy behind a sender's route lookup. */
void xr_gid_from_ipv4(xr_gid *gid, uint32_t ipv4)
{
	uint64_t hi = 0, lo;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	lo = 0xffff0000u | (uint64_t)__builtin_bswap32(ipv4) << 32;
#else
	lo = 0xffff00000000ull | ipv4;
#endif
	memcpy(gid->raw, &hi, 8);
	memcpy(gid->raw + 8, &lo, 8);
}

bool xr_gid_is_ipv4(const xr_gid *gid)
{
	return !memcmp(gid->raw, v4_mapped_prefix, sizeof(v4_mapped_prefix));
}

uint32_t xr_gid_to_ipv4(const xr_gid *gid)
{
	return get_be32(gid->raw + 12);
}

bool xr_gid_is_mcast(const xr_gid *gid)
{
	if (xr_gid_is_ipv4(gid))
		return (gid->raw[12] & 0xF0) == 0xE0;
	return gid->raw[0] == 0xFF;
}

void xr_gid_mcast_mac(const xr_gid *gid, uint8_t mac[6])
{
	if (xr_gid_is_ipv4(gid)) {
		mac[0] = 0x01; mac[1] = 0x00; mac[2] = 0x5E;
		mac[3] = gid->raw[13] & 0x7F;
		mac[4] = gid->raw[14];
		mac[5] = gid->raw[15];
	} else {
		mac[0] = 0x33; mac[1] = 0x33;
		memcpy(mac + 2, gid->raw + 12, 4);
	}
}

int xr_gid_parse(xr_gid *gid, const char *text)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!text)
		return -EINVAL;
	if (inet_pton(AF_INET, text, &a4) == 1) {
		xr_gid_from_ipv4(gid, ntohl(a4.s_addr));
		return 0;
	}
	if (inet_pton(AF_INET6, text, &a6) == 1) {
		memcpy(gid->raw, a6.s6_addr, 16);
		return 0;
	}
	return -EINVAL;
}

char *xr_gid_format(const xr_gid *gid, char *buf, size_t len)
{
	if (!buf || !len)
		return buf;
	if (xr_gid_is_ipv4(gid))
		inet_ntop(AF_INET, gid->raw + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len);
	return buf;
}

/* The defaults as one value: every packet sent starts as a copy of it. A
 * memset of the struct compiles to REP STOSQ, whose start-up cost was 4 %
 * of a 64-byte WRITE sender's time; a copy is a few vector moves. */
static struct xr_pkt pkt_defaults;

__attribute__((constructor))
static void pkt_defaults_init(void)
{
	struct xr_pkt *p = &pkt_defaults;

	memset(p, 0, sizeof(*p));
	p->ip_version = 4;
	p->df = true;
	p->hop_limit = 64;
	p->dport = XR_ROCE_UDP_PORT;
	p->sport = 0xC000;
	p->pkey = XR_DEFAULT_PKEY;
	p->dqpn = 1;
	xr_gid_from_ipv4(&p->sgid, 0);
	xr_gid_from_ipv4(&p->dgid, 0);
}

void xr_pkt_init(struct xr_pkt *p, uint8_t opcode)
{
	*p = pkt_defaults;
	p->opcode = opcode;
	if (opcode == XR_OP_RC_ACKNOWLEDGE || opcode == XR_OP_RC_ATOMIC_ACKNOWLEDGE)
		p->aeth.syndrome = XR_AETH_ACK_UNLIMITED;
	if (opcode == XR_OP_CNP) {
		p->becn = true;  /* a CNP carries BECN=1 (ConnectX capture) */
		p->sport = 0;
	}
	if (opcode == XR_OP_UD_SEND_ONLY || opcode == XR_OP_UD_SEND_ONLY_WITH_IMMEDIATE)
		p->deth.qkey = XR_GSI_QKEY;
}
