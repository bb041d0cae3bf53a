/* SPDX-License-Identifier: MIT */
/* The packet builder: a frame from a struct xr_pkt, driven by the opcode table. */
#include <errno.h>
#include <string.h>

#include "hdr.h"
#include "xroce/wire.h"

static void build_ext_hdr(uint8_t *h, enum xr_ext_hdr which, const struct xr_pkt *p)
{
	switch (which) {
	case XR_H_RDETH:
		h[0] = 0;
		put_be24(h + RDETH_OFF_EEC, p->rdeth_eec);
		break;
	case XR_H_DETH:
		put_be32(h + DETH_OFF_QKEY, p->deth.qkey);
		h[4] = 0;
		put_be24(h + DETH_OFF_SRCQP, p->deth.src_qp);
		break;
	case XR_H_RETH:
		put_be64(h + RETH_OFF_VA, p->reth.va);
		put_be32(h + RETH_OFF_RKEY, p->reth.rkey);
		put_be32(h + RETH_OFF_LEN, p->reth.len);
		break;
	case XR_H_ATMETH:
		put_be64(h + ATMETH_OFF_VA, p->atomic.va);
		put_be32(h + ATMETH_OFF_RKEY, p->atomic.rkey);
		put_be64(h + ATMETH_OFF_SWAP, p->atomic.swap_add);
		put_be64(h + ATMETH_OFF_CMP, p->atomic.compare);
		break;
	case XR_H_AETH:
		h[AETH_OFF_SYN] = p->aeth.syndrome;
		put_be24(h + AETH_OFF_MSN, p->aeth.msn);
		break;
	case XR_H_ATMACK:
		put_be64(h + ATMACK_OFF_ORIG, p->atomic_orig);
		break;
	case XR_H_IMMDT:
		put_be32(h, p->imm);
		break;
	case XR_H_IETH:
		put_be32(h, p->ieth_rkey);
		break;
	case XR_H_CNP:
		memset(h, 0, xr_ext_hdr_size(XR_H_CNP));
		break;
	}
}

/* The fields of Ethernet, IP and UDP: what a template is made of. */
static int check_l2_l4(const struct xr_pkt *p)
{
	if (p->ip_version != 4 && p->ip_version != 6)
		return -EINVAL;
	if (p->ip_version == 4 && (!xr_gid_is_ipv4(&p->sgid) || !xr_gid_is_ipv4(&p->dgid)))
		return -EINVAL;
	if (p->pcp > 7 || p->vid > 0xFFF || p->flow_label > 0xFFFFF)
		return -EINVAL;
	return 0;
}

/* The fields of the BTH and what follows it: what changes per packet. */
static int check_bth_on(const struct xr_pkt *p, const struct xr_opcode_info *op)
{
	if (!op)
		return -EINVAL;
	if (p->tver > 0xF || p->dqpn > XR_QPN_MASK || p->psn > XR_PSN_MASK || p->bth_resv7 > 0x7F ||
	    p->aeth.msn > 0xFFFFFF || p->deth.src_qp > XR_QPN_MASK || p->rdeth_eec > 0xFFFFFF)
		return -EINVAL;
	if (op->payload == XR_PAY_NONE && p->payload_len)
		return -EINVAL;
	if (p->payload_len > XR_MAX_MTU)
		return -EMSGSIZE;
	return 0;
}

/* The IPv4 header's one's-complement sum without its total length, which
 * is all that changes from packet to packet of one connection. From the
 * fields' values, not read back from the frame: the frame's lines may
 * still be on their way from the core that read them last, and a read of
 * bytes just stored there waits for them. */
static uint32_t ipv4_sum_but_len(const struct xr_pkt *p, uint32_t src, uint32_t dst)
{
	return (0x45u << 8 | p->traffic_class) + p->ip_id + (p->df ? IP4_FLAG_DF : 0u) +
	       ((uint32_t)p->hop_limit << 8 | IP_PROTO_UDP) + (src >> 16) + (src & 0xFFFF) + (dst >> 16) +
	       (dst & 0xFFFF);
}

static uint16_t ipv4_csum_with_len(uint32_t sum, uint16_t totlen)
{
	sum += totlen;
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Ethernet (tagged or not), IP and UDP up to the BTH at l4_off + 8, with
 * every length and the IPv4 checksum for a frame of total bytes. */
static void build_l2_l4(const struct xr_pkt *p, uint8_t *buf, size_t l3_off, size_t l4_off, size_t total)
{
	uint8_t *ip = buf + l3_off, *udp = buf + l4_off;

	memcpy(buf + ETH_OFF_DMAC, p->dmac, 6);
	memcpy(buf + ETH_OFF_SMAC, p->smac, 6);
	if (p->vlan) {
		put_be16(buf + ETH_OFF_TYPE, XR_ETHERTYPE_VLAN);
		put_be16(buf + ETH_OFF_TYPE + 2 + VLAN_OFF_TCI, vlan_tci(p->pcp, p->dei, p->vid));
	}
	put_be16(buf + l3_off - 2, p->ip_version == 4 ? XR_ETHERTYPE_IPV4 : XR_ETHERTYPE_IPV6);

	if (p->ip_version == 4) {
		uint32_t src = xr_gid_to_ipv4(&p->sgid), dst = xr_gid_to_ipv4(&p->dgid);

		ip[IP4_OFF_VER_IHL] = 0x45;
		ip[IP4_OFF_TOS] = p->traffic_class;
		put_be16(ip + IP4_OFF_TOTLEN, (uint16_t)(total - l3_off));
		put_be16(ip + IP4_OFF_ID, p->ip_id);
		put_be16(ip + IP4_OFF_FRAG, p->df ? IP4_FLAG_DF : 0);
		ip[IP4_OFF_TTL] = p->hop_limit;
		ip[IP4_OFF_PROTO] = IP_PROTO_UDP;
		put_be32(ip + IP4_OFF_SRC, src);
		put_be32(ip + IP4_OFF_DST, dst);
		put_be16(ip + IP4_OFF_CSUM,
			 ipv4_csum_with_len(ipv4_sum_but_len(p, src, dst), (uint16_t)(total - l3_off)));
	} else {
		ip6_set_vtf(ip, p->traffic_class, p->flow_label);
		put_be16(ip + IP6_OFF_PAYLEN, (uint16_t)(total - l4_off));
		ip[IP6_OFF_NEXTHDR] = IP_PROTO_UDP;
		ip[IP6_OFF_HOPLIM] = p->hop_limit;
		memcpy(ip + IP6_OFF_SRC, p->sgid.raw, 16);
		memcpy(ip + IP6_OFF_DST, p->dgid.raw, 16);
	}

	/* UDP; the checksum, when asked for, is filled in last. */
	put_be16(udp + UDP_OFF_SPORT, p->sport);
	put_be16(udp + UDP_OFF_DPORT, p->dport);
	put_be16(udp + UDP_OFF_LEN, (uint16_t)(total - l4_off));
	put_be16(udp + UDP_OFF_CSUM, 0);
}

/* The BTH and the opcode's extended headers, walked in wire order. */
static void build_bth(const struct xr_pkt *p, const struct xr_opcode_info *op, uint8_t *bth, uint8_t pad)
{
	uint8_t *h = bth + XR_BTH_LEN;

	bth[BTH_OFF_OPCODE] = p->opcode;
	bth_set_flags(bth, p->se, p->mig, pad, p->tver);
	put_be16(bth + BTH_OFF_PKEY, p->pkey);
	bth_set_fb(bth, p->fecn, p->becn);
	put_be24(bth + BTH_OFF_DQPN, p->dqpn);
	bth_set_ackreq_psn(bth, p->ackreq, p->bth_resv7, p->psn);
	for (unsigned i = 0; i < XR_EXT_HDR_COUNT; i++) {
		enum xr_ext_hdr which = (enum xr_ext_hdr)(1u << i);
		if (op->hdrs & which) {
			build_ext_hdr(h, which, p);
			h += xr_ext_hdr_size(which);
		}
	}
}

/* The layout of a frame with its BTH at bth_off: offsets, length, pad.
 * Returns the length, -EMSGSIZE past cap. */
static ssize_t lay_out(struct xr_pkt *p, const struct xr_opcode_info *op, size_t l3_off, size_t l4_off,
		       size_t cap)
{
	size_t bth_off = l4_off + XR_UDP_HLEN;
	size_t pay_off = bth_off + XR_BTH_LEN + op->hdr_len;
	uint8_t pad = (uint8_t)(-p->payload_len & 3);
	size_t total = pay_off + p->payload_len + pad + XR_ICRC_LEN;

	if (total > cap)
		return -EMSGSIZE;
	p->pad = pad;
	p->op = op;
	p->l3_off = (uint16_t)l3_off;
	p->l4_off = (uint16_t)l4_off;
	p->bth_off = (uint16_t)bth_off;
	p->payload_off = (uint16_t)pay_off;
	p->len = (uint16_t)total;
	return (ssize_t)total;
}

ssize_t xr_pkt_build_hdrs(struct xr_pkt *p, uint8_t *buf, size_t cap)
{
	const struct xr_opcode_info *op = xr_opcode_info(p->opcode);
	size_t l3_off = XR_ETH_HLEN + (p->vlan ? XR_VLAN_HLEN : 0);
	size_t l4_off = l3_off + (p->ip_version == 4 ? XR_IPV4_HLEN : XR_IPV6_HLEN);
	int err = check_l2_l4(p);
	ssize_t total;

	if (!err)
		err = check_bth_on(p, op);
	if (err)
		return err;
	total = lay_out(p, op, l3_off, l4_off, cap);
	if (total < 0)
		return total;
	build_l2_l4(p, buf, l3_off, l4_off, (size_t)total);
	build_bth(p, op, buf + p->bth_off, p->pad);
	return total;
}

int xr_hdr_tmpl_init(struct xr_hdr_tmpl *t, const struct xr_pkt *p)
{
	int err = check_l2_l4(p);

	if (err)
		return err;
	memset(t, 0, sizeof(*t));
	t->ip_version = p->ip_version;
	t->l3_off = (uint8_t)(XR_ETH_HLEN + (p->vlan ? XR_VLAN_HLEN : 0));
	t->l4_off = (uint8_t)(t->l3_off + (p->ip_version == 4 ? XR_IPV4_HLEN : XR_IPV6_HLEN));
	/* Built for a frame that ends at the BTH: the lengths are patched per packet. */
	build_l2_l4(p, t->bytes, t->l3_off, t->l4_off, (size_t)t->l4_off + XR_UDP_HLEN);
	if (p->ip_version == 4)
		t->ip4_sum = ipv4_sum_but_len(p, xr_gid_to_ipv4(&p->sgid), xr_gid_to_ipv4(&p->dgid));
	return 0;
}

ssize_t xr_pkt_build_hdrs_tmpl(struct xr_pkt *p, const struct xr_hdr_tmpl *t, uint8_t *buf, size_t cap)
{
	const struct xr_opcode_info *op = xr_opcode_info(p->opcode);
	int err = check_bth_on(p, op);
	ssize_t total;
	uint8_t *ip = buf + t->l3_off;

	if (err)
		return err;
	total = lay_out(p, op, t->l3_off, t->l4_off, cap);
	if (total < 0)
		return total;
	if (cap >= sizeof(t->bytes))
		memcpy(buf, t->bytes, sizeof(t->bytes));
	else
		memcpy(buf, t->bytes, (size_t)t->l4_off + XR_UDP_HLEN);
	if (t->ip_version == 4) {
		uint16_t len = (uint16_t)(total - t->l3_off);
		put_be16(ip + IP4_OFF_TOTLEN, len);
		put_be16(ip + IP4_OFF_CSUM, ipv4_csum_with_len(t->ip4_sum, len));
	} else {
		put_be16(ip + IP6_OFF_PAYLEN, (uint16_t)(total - t->l4_off));
	}
	put_be16(buf + t->l4_off + UDP_OFF_LEN, (uint16_t)(total - t->l4_off));
	build_bth(p, op, buf + p->bth_off, p->pad);
	return total;
}

/* The pad (0..3 bytes) as one 4-byte store: the bytes after it are the
 * ICRC's, written by the seal (a variable memset is REP STOSB, slow to
 * start). */
void xr_pkt_pad(const struct xr_pkt *p, uint8_t *buf)
{
	put_le32(buf + p->payload_off + p->payload_len, 0);
}

uint32_t xr_pkt_seal(uint8_t *buf, size_t l3_off, size_t len, bool udp_csum)
{
	uint8_t *ip = buf + l3_off;
	size_t ip_len = len - l3_off;
	uint32_t icrc = xr_icrc(ip, ip_len - XR_ICRC_LEN);

	put_le32(buf + len - XR_ICRC_LEN, icrc);
	if (udp_csum)
		put_be16(buf + l3_off + (ip_version(ip) == 6 ? XR_IPV6_HLEN : XR_IPV4_HLEN) + UDP_OFF_CSUM,
			 xr_udp_csum(ip, ip_len));
	return icrc;
}

void xr_pkt_finish(struct xr_pkt *p, uint8_t *buf)
{
	xr_pkt_pad(p, buf);
	p->icrc = xr_pkt_seal(buf, p->l3_off, p->len, p->udp_csum);
}

ssize_t xr_pkt_build(struct xr_pkt *p, uint8_t *buf, size_t cap)
{
	ssize_t len;

	if (p->payload_len && !p->payload)
		return -EINVAL;
	len = xr_pkt_build_hdrs(p, buf, cap);
	if (len < 0)
		return len;
	if (p->payload_len)
		memcpy(buf + p->payload_off, p->payload, p->payload_len);
	xr_pkt_finish(p, buf);
	return len;
}
