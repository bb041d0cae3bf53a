/* SPDX-License-Identifier: MIT */
/*
 * Every wire format in one place: field offsets and accessors. Fields are
 * read and written only through these, never by casting structs onto
 * packet bytes, so alignment and byte order are owned here.
 */
#ifndef XR_WIRE_HDR_H
#define XR_WIRE_HDR_H

#include <stdbool.h>
#include <string.h>

#include "bytes.h"

/* ---- Ethernet / 802.1Q ---- */
#define ETH_OFF_DMAC   0
#define ETH_OFF_SMAC   6
#define ETH_OFF_TYPE   12
#define VLAN_OFF_TCI   0   /* relative to the tag, after the 0x8100 TPID */
#define VLAN_OFF_TYPE  2

static inline uint16_t vlan_tci(uint8_t pcp, bool dei, uint16_t vid)
{
	return (uint16_t)((pcp & 7u) << 13 | (dei ? 1u : 0u) << 12 | (vid & 0xFFFu));
}
static inline uint8_t  vlan_tci_pcp(uint16_t tci) { return (uint8_t)(tci >> 13); }
static inline bool     vlan_tci_dei(uint16_t tci) { return tci >> 12 & 1; }
static inline uint16_t vlan_tci_vid(uint16_t tci) { return tci & 0xFFF; }

/* ---- IPv4 ---- */
#define IP4_OFF_VER_IHL  0
#define IP4_OFF_TOS      1
#define IP4_OFF_TOTLEN   2
#define IP4_OFF_ID       4
#define IP4_OFF_FRAG     6
#define IP4_OFF_TTL      8
#define IP4_OFF_PROTO    9
#define IP4_OFF_CSUM     10
#define IP4_OFF_SRC      12
#define IP4_OFF_DST      16
#define IP4_FLAG_DF      0x4000
#define IP4_FLAG_MF      0x2000
#define IP4_FRAG_OFFSET  0x1FFF
#define IP_PROTO_UDP     17

static inline uint8_t ip_version(const uint8_t *ip) { return ip[0] >> 4; }
static inline uint8_t ip4_ihl_bytes(const uint8_t *ip) { return (uint8_t)((ip[0] & 0xF) * 4); }

/* ---- IPv6 ---- */
#define IP6_OFF_PAYLEN   4
#define IP6_OFF_NEXTHDR  6
#define IP6_OFF_HOPLIM   7
#define IP6_OFF_SRC      8
#define IP6_OFF_DST      24

static inline uint8_t ip6_tclass(const uint8_t *ip)
{
	return (uint8_t)((ip[0] & 0xF) << 4 | ip[1] >> 4);
}
static inline uint32_t ip6_flow_label(const uint8_t *ip)
{
	return (uint32_t)(ip[1] & 0xF) << 16 | get_be16(ip + 2);
}
static inline void ip6_set_vtf(uint8_t *ip, uint8_t tclass, uint32_t flow)
{
	put_be32(ip, 6u << 28 | (uint32_t)tclass << 20 | (flow & 0xFFFFF));
}

/* ---- UDP ---- */
#define UDP_OFF_SPORT  0
#define UDP_OFF_DPORT  2
#define UDP_OFF_LEN    4
#define UDP_OFF_CSUM   6

/* ---- BTH ---- */
#define BTH_OFF_OPCODE 0
#define BTH_OFF_FLAGS  1   /* SE | M | PadCnt(2) | TVer(4) */
#define BTH_OFF_PKEY   2
#define BTH_OFF_FB     4   /* FECN | BECN | resv6: masked in the ICRC */
#define BTH_OFF_DQPN   5
#define BTH_OFF_ACKREQ 8   /* AckReq | resv7 */
#define BTH_OFF_PSN    9

static inline uint8_t  bth_opcode(const uint8_t *b) { return b[BTH_OFF_OPCODE]; }
static inline bool     bth_se(const uint8_t *b)     { return b[BTH_OFF_FLAGS] >> 7; }
static inline bool     bth_mig(const uint8_t *b)    { return b[BTH_OFF_FLAGS] >> 6 & 1; }
static inline uint8_t  bth_pad(const uint8_t *b)    { return b[BTH_OFF_FLAGS] >> 4 & 3; }
static inline uint8_t  bth_tver(const uint8_t *b)   { return b[BTH_OFF_FLAGS] & 0xF; }
static inline uint16_t bth_pkey(const uint8_t *b)   { return get_be16(b + BTH_OFF_PKEY); }
static inline bool     bth_fecn(const uint8_t *b)   { return b[BTH_OFF_FB] >> 7; }
static inline bool     bth_becn(const uint8_t *b)   { return b[BTH_OFF_FB] >> 6 & 1; }
static inline uint32_t bth_dqpn(const uint8_t *b)   { return get_be24(b + BTH_OFF_DQPN); }
static inline bool     bth_ackreq(const uint8_t *b) { return b[BTH_OFF_ACKREQ] >> 7; }
static inline uint8_t  bth_resv7(const uint8_t *b)  { return b[BTH_OFF_ACKREQ] & 0x7F; }
static inline uint32_t bth_psn(const uint8_t *b)    { return get_be24(b + BTH_OFF_PSN); }

static inline void bth_set_flags(uint8_t *b, bool se, bool mig, uint8_t pad, uint8_t tver)
{
	b[BTH_OFF_FLAGS] = (uint8_t)((se ? 0x80 : 0) | (mig ? 0x40 : 0) |
				     (pad & 3) << 4 | (tver & 0xF));
}
static inline void bth_set_fb(uint8_t *b, bool fecn, bool becn)
{
	b[BTH_OFF_FB] = (uint8_t)((fecn ? 0x80 : 0) | (becn ? 0x40 : 0));
}
static inline void bth_set_ackreq_psn(uint8_t *b, bool ackreq, uint8_t resv7, uint32_t psn)
{
	b[BTH_OFF_ACKREQ] = (uint8_t)((ackreq ? 0x80 : 0) | (resv7 & 0x7F));
	put_be24(b + BTH_OFF_PSN, psn);
}

/* ---- extended transport headers (offsets within each header) ---- */
#define RETH_OFF_VA     0
#define RETH_OFF_RKEY   8
#define RETH_OFF_LEN    12
#define AETH_OFF_SYN    0
#define AETH_OFF_MSN    1
#define ATMETH_OFF_VA   0
#define ATMETH_OFF_RKEY 8
#define ATMETH_OFF_SWAP 12
#define ATMETH_OFF_CMP  20
#define ATMACK_OFF_ORIG 0
#define DETH_OFF_QKEY   0
#define DETH_OFF_SRCQP  5
#define RDETH_OFF_EEC   1

#endif
