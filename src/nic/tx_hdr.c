/* SPDX-License-Identifier: MIT */
/*
 * A packet's headers. Every packet's addresses come from the registers
 * and the QP context; a connected QP's (RC, UC) are the same for each of
 * its packets, so its Ethernet, IP and UDP headers are built once into a
 * template kept in its active block, and a packet copies them and patches
 * its lengths: at 64 bytes, building the headers field by field was an
 * eighth of the sender's time. Any write of a register or a table moves
 * the engine's tx_gen (regfile.c), and a template older than that is
 * built again, so a QP modified, or a MAC, IP address, UDP port or the
 * ECN setting changed, shows in its next packet.
 */
#include <string.h>

#include "engine.h"

void xr_tx_address(struct xr_engine *e, const struct xr_qp *qp, struct xr_pkt *p)
{
	const struct xr_qp_ctx *c = &qp->ctx;

	xr_mac_from_regs(p->smac, xr_reg_get(e, XR_REG_MAC_LOW), xr_reg_get(e, XR_REG_MAC_HIGH));
	if (c->peer_mac[0] | c->peer_mac[1] | c->peer_mac[2] | c->peer_mac[3] | c->peer_mac[4] | c->peer_mac[5])
		memcpy(p->dmac, c->peer_mac, 6);
	else
		xr_mac_from_regs(p->dmac, xr_reg_get(e, XR_REG_PEER_MAC_LOW), xr_reg_get(e, XR_REG_PEER_MAC_HIGH));
	p->vlan = c->vlan;
	p->pcp = c->pcp;
	p->vid = c->vid;
	p->dgid = c->peer_gid;
	if (xr_gid_is_ipv4(&c->peer_gid)) {
		p->ip_version = 4;
		xr_gid_from_ipv4(&p->sgid, xr_reg_get(e, XR_REG_IP_ADDR));
	} else {
		p->ip_version = 6;
		for (int i = 0; i < 4; i++) {
			uint32_t w = xr_reg_get(e, XR_REG_IPV6_ADDR_0 + 4u * (unsigned)i);
			p->sgid.raw[4 * i] = (uint8_t)(w >> 24);
			p->sgid.raw[4 * i + 1] = (uint8_t)(w >> 16);
			p->sgid.raw[4 * i + 2] = (uint8_t)(w >> 8);
			p->sgid.raw[4 * i + 3] = (uint8_t)w;
		}
		p->flow_label = c->flow_label;
	}
	p->traffic_class = xr_cc_tclass(e, c->traffic_class);
	p->hop_limit = c->hop_limit ? c->hop_limit : 64;
	p->sport = c->src_port ? c->src_port : xr_rxe_udp_sport(qp->qpn, c->dest_qpn);
	p->dport = c->dst_port ? c->dst_port : (uint16_t)xr_reg_get(e, XR_REG_PEER_UDP_PORT);
	p->pkey = c->pkey;
	p->dqpn = c->dest_qpn;
}

struct xr_frame *xr_tx_begin_conn(struct xr_engine *e, struct xr_tx *tx, struct xr_qp *qp, struct xr_pkt *p)
{
	struct xr_tx_proto *pr = &qp->act->proto;
	struct xr_frame *f = xr_tx_frame(e, tx, xr_pfc_qp_prio(e, qp));
	uint32_t gen;

	if (!f)
		return NULL;
	/* The generation before the registers and the context it is built
	 * from: a write after this read moves it again (release, there). */
	gen = atomic_load_explicit(&e->tx_gen, memory_order_acquire);
	if (pr->qp != qp || pr->gen != gen) {
		xr_pkt_init(&pr->pkt, 0);
		xr_tx_address(e, qp, &pr->pkt);
		pr->err = xr_hdr_tmpl_init(&pr->tmpl, &pr->pkt);
		pr->qp = qp;
		pr->gen = gen;
	}
	*p = pr->pkt;
	return f;
}

ssize_t xr_tx_build_conn(const struct xr_qp *qp, struct xr_pkt *p, struct xr_frame *f)
{
	const struct xr_tx_proto *pr = &qp->act->proto;

	if (pr->err)
		return pr->err;
	return xr_pkt_build_hdrs_tmpl(p, &pr->tmpl, f->data, sizeof(f->data));
}
