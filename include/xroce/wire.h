/* SPDX-License-Identifier: MIT */
/*
 * RoCE v2 wire layer: the opcode table, a parsed-packet description, the
 * builder and parser, and the ICRC.
 *
 *   Ethernet [802.1Q] | IPv4 or IPv6 | UDP 4791 | BTH | ext hdrs | payload
 *   | pad | ICRC (4 bytes, least-significant byte first)
 *
 * Errors are negative errno values; parse rejections are named reasons.
 */
#ifndef XROCE_WIRE_H
#define XROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xroce/opcodes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_ROCE_UDP_PORT   4791
#define XR_ETH_HLEN        14
#define XR_VLAN_HLEN       4
#define XR_IPV4_HLEN       20
#define XR_IPV6_HLEN       40
#define XR_UDP_HLEN        8
#define XR_BTH_LEN         12
#define XR_ICRC_LEN        4
#define XR_ETHERTYPE_IPV4  0x0800
#define XR_ETHERTYPE_IPV6  0x86DD
#define XR_ETHERTYPE_VLAN  0x8100
#define XR_DEFAULT_PKEY    0xFFFF
#define XR_PSN_MASK        0xFFFFFFu
#define XR_QPN_MASK        0xFFFFFFu
#define XR_MIN_MTU         256
#define XR_MAX_MTU         4096
/* Largest frame the builder makes: L2 + VLAN + IPv6 + UDP + BTH + the
 * longest header run + MTU payload + pad + ICRC, rounded up. */
#define XR_MAX_FRAME       4224

/* AETH syndromes (bits [6:5] type, [4:0] value). */
#define XR_AETH_ACK            0x00
#define XR_AETH_RNR_NAK        0x20
#define XR_AETH_NAK            0x60
#define XR_AETH_TYPE_MASK      0x60
#define XR_AETH_VALUE_MASK     0x1F
#define XR_AETH_ACK_UNLIMITED  0x1F  /* what rxe sends on every ACK */
#define XR_AETH_NAK_PSN_SEQ    0x60
#define XR_AETH_NAK_INV_REQ    0x61
#define XR_AETH_NAK_REM_ACCESS 0x62
#define XR_AETH_NAK_REM_OP     0x63
#define XR_AETH_NAK_INV_RD_REQ 0x64

#define XR_GSI_QKEY 0x80010000u

/* ---- opcode table ---- */

struct xr_opcode_info {
	uint8_t  opcode;
	const char *name;          /* e.g. "RC_SEND_FIRST" */
	uint32_t hdrs;             /* enum xr_ext_hdr bits */
	enum xr_payload_rule payload;
	uint32_t flags;            /* enum xr_op_flag bits */
	uint8_t  hdr_len;          /* bytes of extended headers after BTH */
};

/* The entry for an opcode, or NULL when xroce does not know it. */
const struct xr_opcode_info *xr_opcode_info(uint8_t opcode);
/* Every known opcode, in table order; *count receives the length. */
const struct xr_opcode_info *xr_opcode_all(size_t *count);
/* Looks up "RC_SEND_ONLY", "send_only" (RC assumed), or a number. -1 if none. */
int xr_opcode_by_name(const char *name);
/* Offset of one extended header after the BTH, or -1 if the opcode lacks it. */
int xr_ext_hdr_offset(const struct xr_opcode_info *op, enum xr_ext_hdr h);
size_t xr_ext_hdr_size(enum xr_ext_hdr h);
const char *xr_ext_hdr_name(enum xr_ext_hdr h);
static inline enum xr_transport xr_opcode_transport(uint8_t opcode)
{
	return (enum xr_transport)(opcode >> 5);
}

/* ---- parse rejections: one named reason each ---- */

/* X(NAME, description); XR_PARSE_OK (0) is not in the table. */
#define XR_PARSE_ERR_TABLE(X) \
	X(TRUNCATED_L2,     "frame shorter than its Ethernet/VLAN header") \
	X(NOT_IP,           "EtherType is neither IPv4 nor IPv6") \
	X(TRUNCATED_IP,     "shorter than the IP header") \
	X(BAD_IP_VERSION,   "IP version field disagrees with the EtherType or is not 4/6") \
	X(BAD_IP_HDR_LEN,   "IPv4 header length is not 20 (options are not used by RoCE v2)") \
	X(BAD_IP_LEN,       "IP total/payload length disagrees with the frame") \
	X(BAD_IP_CSUM,      "IPv4 header checksum is wrong") \
	X(IP_FRAGMENT,      "IPv4 fragment (RoCE v2 never fragments)") \
	X(NOT_UDP,          "IP protocol/next header is not UDP") \
	X(TRUNCATED_UDP,    "shorter than the UDP header") \
	X(BAD_UDP_LEN,      "UDP length disagrees with the IP length") \
	X(NOT_ROCE_PORT,    "UDP destination port is not 4791") \
	X(BAD_UDP_CSUM,     "non-zero UDP checksum is wrong") \
	X(TRUNCATED_BTH,    "UDP payload shorter than BTH + ICRC") \
	X(BAD_TVER,         "BTH transport version is not 0") \
	X(UNKNOWN_OPCODE,   "opcode not in the opcode table") \
	X(TRUNCATED_HDRS,   "too short for the extended headers of the opcode") \
	X(BAD_PAD,          "pad count inconsistent with the opcode or the length") \
	X(BAD_PAYLOAD_LEN,  "payload length inconsistent with the opcode and MTU") \
	X(BAD_ICRC,         "invariant CRC mismatch")

enum xr_parse_err {
	XR_PARSE_OK = 0,
#define XR_X(name, desc) XR_PARSE_##name,
	XR_PARSE_ERR_TABLE(XR_X)
#undef XR_X
	XR_PARSE_ERR_COUNT
};

const char *xr_parse_err_name(enum xr_parse_err e);
const char *xr_parse_err_desc(enum xr_parse_err e);

/* ---- the packet description shared by builder and parser ---- */

/* A GID: IPv4 travels as ::ffff:a.b.c.d, IPv6 as itself. */
typedef struct { uint8_t raw[16]; } xr_gid;

void xr_gid_from_ipv4(xr_gid *gid, uint32_t ipv4_host_order);
bool xr_gid_is_ipv4(const xr_gid *gid);
uint32_t xr_gid_to_ipv4(const xr_gid *gid);  /* host order */
/* A multicast group: IPv4 224.0.0.0/4 (as ::ffff:a.b.c.d) or IPv6 ff00::/8. */
bool xr_gid_is_mcast(const xr_gid *gid);
/* The Ethernet address a group's frames go to: 01:00:5e and the low 23
 * bits of an IPv4 group (RFC 1112), 33:33 and the low 32 bits of an IPv6
 * one (RFC 2464). gid must be a group. */
void xr_gid_mcast_mac(const xr_gid *gid, uint8_t mac[6]);
/* Text forms: dotted IPv4 or any inet_pton IPv6 form; 0 or -EINVAL. */
int xr_gid_parse(xr_gid *gid, const char *text);
/* Writes an IPv4 or IPv6 text form; returns buf. */
char *xr_gid_format(const xr_gid *gid, char *buf, size_t len);

struct xr_pkt {
	/* L2: present only in frames (not in IP-level packets). */
	uint8_t  dmac[6], smac[6];
	bool     vlan;
	uint8_t  pcp;              /* 802.1Q priority, 0..7 */
	bool     dei;
	uint16_t vid;              /* 0..4095 */

	/* L3: ip_version 4 uses IPv4-mapped GIDs. */
	uint8_t  ip_version;       /* 4 or 6 */
	xr_gid   sgid, dgid;
	uint8_t  traffic_class;    /* IPv4 TOS / IPv6 TC: DSCP<<2 | ECN */
	uint8_t  hop_limit;        /* IPv4 TTL / IPv6 hop limit */
	uint16_t ip_id;            /* IPv4 only (covered by ICRC) */
	bool     df;               /* IPv4 don't-fragment */
	uint32_t flow_label;       /* IPv6 only, 20 bits */

	/* UDP */
	uint16_t sport, dport;
	bool     udp_csum;         /* build: compute it; parse: it was non-zero */

	/* BTH */
	uint8_t  opcode;
	bool     se, mig;
	uint8_t  pad;              /* build derives it from payload_len */
	uint8_t  tver;
	uint16_t pkey;
	bool     fecn, becn;
	uint32_t dqpn;
	bool     ackreq;
	uint8_t  bth_resv7;        /* reserved bits next to AckReq, kept verbatim */
	uint32_t psn;

	/* Extended headers: valid when the opcode's table entry has them. */
	struct { uint64_t va; uint32_t rkey; uint32_t len; } reth;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add, compare; } atomic;
	uint64_t atomic_orig;      /* AtomicAckETH */
	uint32_t imm;              /* ImmDt, as the 32-bit big-endian wire value */
	uint32_t ieth_rkey;
	struct { uint32_t qkey; uint32_t src_qp; } deth;
	uint32_t rdeth_eec;

	/* Payload: build reads it; parse points into the frame. */
	const uint8_t *payload;
	uint32_t payload_len;

	/* Filled by parse (and by build, for the caller's convenience). */
	uint32_t icrc;             /* CRC value; wire bytes are LSB first */
	uint16_t l3_off, l4_off, bth_off, payload_off;
	uint16_t len;              /* frame length */
	const struct xr_opcode_info *op;
};

/* Sensible rxe-like defaults: IPv4, DF, TTL 64, P_Key 0xFFFF, UDP dst 4791. */
void xr_pkt_init(struct xr_pkt *p, uint8_t opcode);

/* ---- builder ---- */

/*
 * Builds a whole Ethernet frame from *p into buf. Lengths, checksums, pad
 * and ICRC are derived. p->pad, ->icrc, offsets and ->op are updated.
 * Returns the frame length, -EINVAL for an unknown opcode or a bad field,
 * -EMSGSIZE when the frame does not fit in cap (or payload > 4096).
 */
ssize_t xr_pkt_build(struct xr_pkt *p, uint8_t *buf, size_t cap);
/*
 * The same in two steps, for callers that place the payload themselves
 * (gathered straight from memory into the frame, one copy): build_hdrs
 * writes every header and sets the offsets (p->payload is not read); the
 * caller writes p->payload_len bytes at buf + p->payload_off; finish
 * writes pad, ICRC and the optional UDP checksum.
 */
ssize_t xr_pkt_build_hdrs(struct xr_pkt *p, uint8_t *buf, size_t cap);

/*
 * The headers of one connection, built once: Ethernet, IP and UDP bytes
 * as they are for every packet of it, but for the lengths and the IPv4
 * checksum, which build_hdrs_tmpl patches (the sum of the rest is kept).
 * tmpl_init takes the L2-L4 fields of *p (-EINVAL for a bad one);
 * build_hdrs_tmpl is build_hdrs for a packet whose L2-L4 fields are the
 * template's: only the BTH and what follows it are read from *p. It copies
 * the template's whole size when cap allows (one fixed-size copy): bytes
 * up to sizeof(bytes) past the headers may be overwritten, so the payload
 * is written after it, never before.
 */
struct xr_hdr_tmpl {
	uint8_t bytes[XR_ETH_HLEN + XR_VLAN_HLEN + XR_IPV6_HLEN + XR_UDP_HLEN];
	uint8_t l3_off, l4_off;      /* the BTH follows the UDP header at l4_off */
	uint8_t ip_version;
	uint32_t ip4_sum;            /* the IPv4 header's sum without its total length */
};
int xr_hdr_tmpl_init(struct xr_hdr_tmpl *t, const struct xr_pkt *p);
ssize_t xr_pkt_build_hdrs_tmpl(struct xr_pkt *p, const struct xr_hdr_tmpl *t, uint8_t *buf, size_t cap);

/* MAC control frames, XR_MAC_CTRL_FRAME (60) bytes, to 01:80:C2:00:00:01:
 * an 802.1Qbb PFC frame pausing the priorities in mask for quanta (0:
 * resume), and an 802.3x PAUSE. Return the length. */
#define XR_MAC_CTRL_FRAME 60
uint16_t xr_build_pfc_frame(uint8_t *buf, const uint8_t smac[6], uint8_t mask, uint16_t quanta);
uint16_t xr_build_pause_frame(uint8_t *buf, const uint8_t smac[6], uint16_t quanta);
void xr_pkt_finish(struct xr_pkt *p, uint8_t *buf);
/* xr_pkt_finish in two steps, for a sender that builds a burst of frames
 * before it sends them: the pad now, the ICRC (and the UDP checksum, when
 * asked) of a frame of len bytes with its IP header at l3_off later, from
 * the frame's bytes. Returns the ICRC. */
void xr_pkt_pad(const struct xr_pkt *p, uint8_t *buf);
uint32_t xr_pkt_seal(uint8_t *buf, size_t l3_off, size_t len, bool udp_csum);

/* ---- parser ---- */

enum xr_parse_flag {
	XR_PARSE_NO_ICRC = 1u << 0,   /* skip the ICRC check (caller verified it) */
	/* Leave the path-MTU length rules (FIRST/MIDDLE exactly one MTU, LAST
	 * at least one byte) to the transport, which answers them with a NAK
	 * (C9-92); only lengths no MTU allows are rejected here. */
	XR_PARSE_TRANSPORT_LENGTHS = 1u << 1,
};

/*
 * Parses an Ethernet frame. mtu is the path MTU the payload rules are
 * checked against; 0 means "not known": payloads must then be <= 4096 and
 * FIRST/MIDDLE payloads a valid MTU. Never reads outside frame[0..len).
 */
enum xr_parse_err xr_pkt_parse(const uint8_t *frame, size_t len, uint32_t mtu,
			       unsigned flags, struct xr_pkt *out);
/* The same, starting at the IP header (for links that deliver IP packets). */
enum xr_parse_err xr_pkt_parse_ip(const uint8_t *ip, size_t len, uint32_t mtu,
				  unsigned flags, struct xr_pkt *out);

/* ---- checksums and ICRC ---- */

/*
 * ICRC over an IP packet: ip points at the IPv4/IPv6 header, len covers IP
 * through the pad (not the ICRC). Returns the CRC value, to be written
 * least-significant byte first. xr_icrc uses ISA-L; xr_icrc_ref is the
 * portable table-driven reference; they must always agree.
 */
uint32_t xr_icrc(const uint8_t *ip, size_t len);
/* CRC-32 as zlib (ISA-L), leaving no vector state behind for the caller. */
uint32_t xr_crc32(uint32_t seed, const uint8_t *p, size_t n);
/* Copies n bytes from src to dst (as memmove) and returns xr_crc32(seed)
 * of the bytes it stored. The source is read once. When
 * xr_crc32_copy_folds() (AVX-512 with VPCLMULQDQ) and the buffers do not
 * overlap, the CRC is of the bytes as loaded, whatever src or dst become
 * meanwhile; otherwise it is read back from dst after the copy. */
uint32_t xr_crc32_copy(uint32_t seed, void *dst, const void *src, size_t n);
bool xr_crc32_copy_folds(void);
uint32_t xr_icrc_ref(const uint8_t *ip, size_t len);

/*
 * The IPv4 ID that makes an ICRC match, for IPv4 packets whose ID field is
 * unknown and set to 0 (a UDP socket does not see it). ip..len as for
 * xr_icrc. 0 and *id on success, -1 when no ID explains the ICRC (the
 * packet is corrupt). 16 of the ICRC's 32 bits still check the packet.
 */
int xr_icrc_recover_ipv4_id(const uint8_t *ip, size_t len, uint32_t wire_icrc, uint16_t *id);
/* The same from icrc_id0 = xr_icrc(ip, len), already computed by the
 * caller: no second pass over the packet. */
int xr_icrc_recover_ipv4_id_from(const uint8_t *ip, size_t len, uint32_t icrc_id0, uint32_t wire_icrc,
				 uint16_t *id);

/* The ICRC of an ip..len packet (as xr_icrc) whose n bytes at off, which
 * the ICRC covers as they are, changed from was to now: no pass over the
 * packet. */
uint32_t xr_icrc_update(uint32_t icrc, size_t len, size_t off, const uint8_t *was, const uint8_t *now, size_t n);

uint16_t xr_ipv4_csum(const uint8_t *hdr20);
/* UDP checksum with the pseudo-header; ip points at the IP header. */
uint16_t xr_udp_csum(const uint8_t *ip, size_t ip_len);
/* ICMPv6 checksum with the IPv6 pseudo-header over len bytes of icmp (its
 * checksum field included: 0 when a received message is intact, or write
 * it over a zeroed field). */
uint16_t xr_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *icmp, size_t len);

/* The UDP source port rxe uses for an RC QP pair (reference §1). */
uint16_t xr_rxe_udp_sport(uint32_t lqpn, uint32_t rqpn);

#ifdef __cplusplus
}
#endif
#endif
