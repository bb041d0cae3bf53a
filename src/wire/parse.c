/* SPDX-License-Identifier: MIT */
/*
 * The packet parser. Every length is checked before the bytes it covers
 * are read; each rejection returns its own named reason. No state outside
 * the caller's struct xr_pkt.
 */
#include <string.h>

#include "hdr.h"
#include "xroce/wire.h"

static const char *const err_name[XR_PARSE_ERR_COUNT] = {
	[XR_PARSE_OK] = "OK",
#define XR_X(name, desc) [XR_PARSE_##name] = #name,
	XR_PARSE_ERR_TABLE(XR_X)
#undef XR_X
};

static const char *const err_desc[XR_PARSE_ERR_COUNT] = {
	[XR_PARSE_OK] = "accepted",
#define XR_X(name, desc) [XR_PARSE_##name] = desc,
	XR_PARSE_ERR_TABLE(XR_X)
#undef XR_X
};

const char *xr_parse_err_name(enum xr_parse_err e)
{
	return (unsigned)e < XR_PARSE_ERR_COUNT ? err_name[e] : "?";
}

const char *xr_parse_err_desc(enum xr_parse_err e)
{
	return (unsigned)e < XR_PARSE_ERR_COUNT ? err_desc[e] : "?";
}

static void parse_ext_hdr(const uint8_t *h, enum xr_ext_hdr which, struct xr_pkt *p)
{
	switch (which) {
	case XR_H_RDETH:
		p->rdeth_eec = get_be24(h + RDETH_OFF_EEC);
		break;
	case XR_H_DETH:
		p->deth.qkey = get_be32(h + DETH_OFF_QKEY);
		p->deth.src_qp = get_be24(h + DETH_OFF_SRCQP);
		break;
	case XR_H_RETH:
		p->reth.va = get_be64(h + RETH_OFF_VA);
		p->reth.rkey = get_be32(h + RETH_OFF_RKEY);
		p->reth.len = get_be32(h + RETH_OFF_LEN);
		break;
	case XR_H_ATMETH:
		p->atomic.va = get_be64(h + ATMETH_OFF_VA);
		p->atomic.rkey = get_be32(h + ATMETH_OFF_RKEY);
		p->atomic.swap_add = get_be64(h + ATMETH_OFF_SWAP);
		p->atomic.compare = get_be64(h + ATMETH_OFF_CMP);
		break;
	case XR_H_AETH:
		p->aeth.syndrome = h[AETH_OFF_SYN];
		p->aeth.msn = get_be24(h + AETH_OFF_MSN);
		break;
	case XR_H_ATMACK:
		p->atomic_orig = get_be64(h + ATMACK_OFF_ORIG);
		break;
	case XR_H_IMMDT:
		p->imm = get_be32(h);
		break;
	case XR_H_IETH:
		p->ieth_rkey = get_be32(h);
		break;
	case XR_H_CNP:
		break;  /* reserved bytes; receivers ignore their content */
	}
}

static bool is_valid_mtu(uint32_t n)
{
	return n >= XR_MIN_MTU && n <= XR_MAX_MTU && !(n & (n - 1));
}

static enum xr_parse_err check_payload(const struct xr_opcode_info *op,
				       uint32_t payload, uint32_t mtu, unsigned flags)
{
	uint32_t max = mtu ? mtu : XR_MAX_MTU;

	if ((flags & XR_PARSE_TRANSPORT_LENGTHS) && op->payload != XR_PAY_NONE)
		return payload <= max ? XR_PARSE_OK : XR_PARSE_BAD_PAYLOAD_LEN;
	switch (op->payload) {
	case XR_PAY_NONE:
		return payload ? XR_PARSE_BAD_PAYLOAD_LEN : XR_PARSE_OK;
	case XR_PAY_MTU:
		if (mtu ? payload != mtu : !is_valid_mtu(payload))
			return XR_PARSE_BAD_PAYLOAD_LEN;
		return XR_PARSE_OK;
	case XR_PAY_1_MTU:
		return (payload >= 1 && payload <= max) ? XR_PARSE_OK : XR_PARSE_BAD_PAYLOAD_LEN;
	case XR_PAY_0_MTU:
		return payload <= max ? XR_PARSE_OK : XR_PARSE_BAD_PAYLOAD_LEN;
	}
	return XR_PARSE_BAD_PAYLOAD_LEN;
}

/* From the BTH on: udp points at the UDP header, udp_len is its length field. */
static enum xr_parse_err parse_transport(const uint8_t *ip, size_t ip_total,
					 size_t l4_rel, uint32_t mtu, unsigned flags,
					 struct xr_pkt *p)
{
	const uint8_t *udp = ip + l4_rel, *bth = udp + XR_UDP_HLEN, *h;
	size_t udp_len = ip_total - l4_rel, body;
	const struct xr_opcode_info *op;
	enum xr_parse_err err;

	if (udp_len < XR_UDP_HLEN)
		return XR_PARSE_TRUNCATED_UDP;
	if (get_be16(udp + UDP_OFF_LEN) != udp_len)
		return XR_PARSE_BAD_UDP_LEN;
	p->sport = get_be16(udp + UDP_OFF_SPORT);
	p->dport = get_be16(udp + UDP_OFF_DPORT);
	if (p->dport != XR_ROCE_UDP_PORT)
		return XR_PARSE_NOT_ROCE_PORT;
	p->udp_csum = get_be16(udp + UDP_OFF_CSUM) != 0;
	if (p->udp_csum && xr_udp_csum(ip, ip_total) != get_be16(udp + UDP_OFF_CSUM))
		return XR_PARSE_BAD_UDP_CSUM;

	if (udp_len < XR_UDP_HLEN + XR_BTH_LEN + XR_ICRC_LEN)
		return XR_PARSE_TRUNCATED_BTH;
	p->opcode = bth_opcode(bth);
	p->se = bth_se(bth);
	p->mig = bth_mig(bth);
	p->pad = bth_pad(bth);
	p->tver = bth_tver(bth);
	p->pkey = bth_pkey(bth);
	p->fecn = bth_fecn(bth);
	p->becn = bth_becn(bth);
	p->dqpn = bth_dqpn(bth);
	p->ackreq = bth_ackreq(bth);
	p->bth_resv7 = bth_resv7(bth);
	p->psn = bth_psn(bth);
	if (p->tver != 0)
		return XR_PARSE_BAD_TVER;
	op = xr_opcode_info(p->opcode);
	if (!op)
		return XR_PARSE_UNKNOWN_OPCODE;
	p->op = op;

	body = udp_len - XR_UDP_HLEN - XR_BTH_LEN - XR_ICRC_LEN;
	if (body < op->hdr_len)
		return XR_PARSE_TRUNCATED_HDRS;
	body -= op->hdr_len;
	/* Headers are whole words, so payload + pad must be too. */
	if ((body & 3) || p->pad > body || (op->payload == XR_PAY_NONE && p->pad))
		return XR_PARSE_BAD_PAD;
	p->payload_len = (uint32_t)(body - p->pad);
	err = check_payload(op, p->payload_len, mtu, flags);
	if (err)
		return err;

	h = bth + XR_BTH_LEN;
	for (unsigned i = 0; i < XR_EXT_HDR_COUNT; i++) {
		enum xr_ext_hdr which = (enum xr_ext_hdr)(1u << i);
		if (op->hdrs & which) {
			parse_ext_hdr(h, which, p);
			h += xr_ext_hdr_size(which);
		}
	}
	p->payload = h;
	p->payload_off = (uint16_t)(p->l3_off + (h - ip));
	p->bth_off = (uint16_t)(p->l3_off + (bth - ip));

	p->icrc = get_le32(ip + ip_total - XR_ICRC_LEN);
	if (!(flags & XR_PARSE_NO_ICRC) && xr_icrc(ip, ip_total - XR_ICRC_LEN) != p->icrc)
		return XR_PARSE_BAD_ICRC;
	return XR_PARSE_OK;
}

static enum xr_parse_err parse_ipv4(const uint8_t *ip, size_t len, uint32_t mtu,
				    unsigned flags, struct xr_pkt *p)
{
	size_t total;

	if (len < XR_IPV4_HLEN)
		return XR_PARSE_TRUNCATED_IP;
	if (ip_version(ip) != 4)
		return XR_PARSE_BAD_IP_VERSION;
	if (ip4_ihl_bytes(ip) != XR_IPV4_HLEN)
		return XR_PARSE_BAD_IP_HDR_LEN;
	total = get_be16(ip + IP4_OFF_TOTLEN);
	if (total < XR_IPV4_HLEN || total > len)
		return XR_PARSE_BAD_IP_LEN;
	if (xr_ipv4_csum(ip) != get_be16(ip + IP4_OFF_CSUM))
		return XR_PARSE_BAD_IP_CSUM;
	if (get_be16(ip + IP4_OFF_FRAG) & (IP4_FLAG_MF | IP4_FRAG_OFFSET))
		return XR_PARSE_IP_FRAGMENT;
	if (ip[IP4_OFF_PROTO] != IP_PROTO_UDP)
		return XR_PARSE_NOT_UDP;
	p->ip_version = 4;
	p->traffic_class = ip[IP4_OFF_TOS];
	p->ip_id = get_be16(ip + IP4_OFF_ID);
	p->df = get_be16(ip + IP4_OFF_FRAG) & IP4_FLAG_DF;
	p->hop_limit = ip[IP4_OFF_TTL];
	p->flow_label = 0;
	xr_gid_from_ipv4(&p->sgid, get_be32(ip + IP4_OFF_SRC));
	xr_gid_from_ipv4(&p->dgid, get_be32(ip + IP4_OFF_DST));
	p->l4_off = (uint16_t)(p->l3_off + XR_IPV4_HLEN);
	return parse_transport(ip, total, XR_IPV4_HLEN, mtu, flags, p);
}

static enum xr_parse_err parse_ipv6(const uint8_t *ip, size_t len, uint32_t mtu,
				    unsigned flags, struct xr_pkt *p)
{
	size_t total;

	if (len < XR_IPV6_HLEN)
		return XR_PARSE_TRUNCATED_IP;
	if (ip_version(ip) != 6)
		return XR_PARSE_BAD_IP_VERSION;
	total = XR_IPV6_HLEN + (size_t)get_be16(ip + IP6_OFF_PAYLEN);
	if (total > len)
		return XR_PARSE_BAD_IP_LEN;
	if (ip[IP6_OFF_NEXTHDR] != IP_PROTO_UDP)
		return XR_PARSE_NOT_UDP;
	p->ip_version = 6;
	p->traffic_class = ip6_tclass(ip);
	p->flow_label = ip6_flow_label(ip);
	p->hop_limit = ip[IP6_OFF_HOPLIM];
	p->ip_id = 0;
	p->df = true;  /* IPv6 routers never fragment */
	memcpy(p->sgid.raw, ip + IP6_OFF_SRC, 16);
	memcpy(p->dgid.raw, ip + IP6_OFF_DST, 16);
	p->l4_off = (uint16_t)(p->l3_off + XR_IPV6_HLEN);
	return parse_transport(ip, total, XR_IPV6_HLEN, mtu, flags, p);
}

static enum xr_parse_err parse_l3(const uint8_t *ip, size_t len, uint16_t ethertype,
				  uint32_t mtu, unsigned flags, struct xr_pkt *p)
{
	enum xr_parse_err err;

	if (ethertype == XR_ETHERTYPE_IPV4)
		err = parse_ipv4(ip, len, mtu, flags, p);
	else if (ethertype == XR_ETHERTYPE_IPV6)
		err = parse_ipv6(ip, len, mtu, flags, p);
	else
		return XR_PARSE_NOT_IP;
	if (err == XR_PARSE_OK)
		p->len = (uint16_t)(p->l3_off + (p->ip_version == 4 ?
			get_be16(ip + IP4_OFF_TOTLEN) :
			XR_IPV6_HLEN + get_be16(ip + IP6_OFF_PAYLEN)));
	return err;
}

/* An all-zero packet to start each parse from. A memset of the struct
 * compiles to REP STOSQ, whose start-up cost is paid per packet received;
 * a copy is a few vector moves. Filled at load time, so the compiler does
 * not turn the copy back into that memset. */
static struct xr_pkt pkt_zero;

__attribute__((constructor))
static void pkt_zero_init(void)
{
	memset(&pkt_zero, 0, sizeof(pkt_zero));
}

enum xr_parse_err xr_pkt_parse(const uint8_t *frame, size_t len, uint32_t mtu,
			       unsigned flags, struct xr_pkt *p)
{
	size_t off = XR_ETH_HLEN;
	uint16_t type;

	*p = pkt_zero;
	if (len < XR_ETH_HLEN)
		return XR_PARSE_TRUNCATED_L2;
	memcpy(p->dmac, frame + ETH_OFF_DMAC, 6);
	memcpy(p->smac, frame + ETH_OFF_SMAC, 6);
	type = get_be16(frame + ETH_OFF_TYPE);
	if (type == XR_ETHERTYPE_VLAN) {
		uint16_t tci;
		if (len < XR_ETH_HLEN + XR_VLAN_HLEN)
			return XR_PARSE_TRUNCATED_L2;
		tci = get_be16(frame + XR_ETH_HLEN + VLAN_OFF_TCI);
		p->vlan = true;
		p->pcp = vlan_tci_pcp(tci);
		p->dei = vlan_tci_dei(tci);
		p->vid = vlan_tci_vid(tci);
		type = get_be16(frame + XR_ETH_HLEN + VLAN_OFF_TYPE);
		off += XR_VLAN_HLEN;
	}
	if (len > UINT16_MAX)
		return XR_PARSE_BAD_IP_LEN;
	p->l3_off = (uint16_t)off;
	return parse_l3(frame + off, len - off, type, mtu, flags, p);
}

enum xr_parse_err xr_pkt_parse_ip(const uint8_t *ip, size_t len, uint32_t mtu,
				  unsigned flags, struct xr_pkt *p)
{
	*p = pkt_zero;
	if (len < 1)
		return XR_PARSE_TRUNCATED_IP;
	if (len > UINT16_MAX)
		return XR_PARSE_BAD_IP_LEN;
	return parse_l3(ip, len, ip_version(ip) == 6 ? XR_ETHERTYPE_IPV6 : XR_ETHERTYPE_IPV4,
			mtu, flags, p);
}
