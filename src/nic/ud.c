/* SPDX-License-Identifier: MIT */
/*
 * UD: the address of a datagram (inline in its WQE) and the datagram
 * responder. One packet per message; no ACK, no retransmission, no PSN
 * check (D3); the Q_Key is checked with the other receive checks (recv.c).
 * Every receive buffer starts with 40 bytes of network header (D4: IPv6
 * header, or 20 zero bytes and the IPv4 header), then the payload. With no
 * WQE posted, or one too small, the datagram is dropped and counted; the
 * QP stays in RTS (D6, D7).
 */
#include <string.h>

#include "engine.h"
#include "resp.h"
#include "../wire/bytes.h"

#define GRH_LEN 40

/* rxe's UD source port: 0xC000 + hash_32(qpn, 14) (reference §1). */
static uint16_t ud_sport(uint32_t qpn)
{
	return (uint16_t)(0xC000u + (((qpn * 0x61C88647u) >> 18) & 0x3FFFu));
}

void xr_ud_address(struct xr_engine *e, const struct xr_qp *qp, const struct xr_hw_wqe *w, struct xr_pkt *p)
{
	const struct xr_hw_ud_av *av = &w->ud;
	static const uint8_t no_mac[6];

	memcpy(p->dgid.raw, av->dgid, 16);
	if (xr_gid_is_ipv4(&p->dgid)) {
		p->ip_version = 4;
		xr_gid_from_ipv4(&p->sgid, xr_reg_get(e, XR_REG_IP_ADDR));
		p->flow_label = 0;
	} else {
		p->ip_version = 6;
		for (int i = 0; i < 4; i++)
			put_be32(p->sgid.raw + 4 * i, xr_reg_get(e, XR_REG_IPV6_ADDR_0 + 4u * (unsigned)i));
		p->flow_label = av->flow_label & 0xFFFFF;
	}
	if (xr_gid_is_mcast(&p->dgid))
		xr_gid_mcast_mac(&p->dgid, p->dmac);   /* a group's frames go to its MAC, whatever the AV says */
	else if (memcmp(av->dmac, no_mac, 6))
		memcpy(p->dmac, av->dmac, 6);
	else
		xr_mac_from_regs(p->dmac, xr_reg_get(e, XR_REG_PEER_MAC_LOW), xr_reg_get(e, XR_REG_PEER_MAC_HIGH));
	p->traffic_class = xr_cc_tclass(e, av->traffic_class);
	p->hop_limit = av->hop_limit ? av->hop_limit : 64;
	p->sport = av->udp_sport ? av->udp_sport : ud_sport(qp->qpn);
	p->dqpn = av->remote_qpn & XR_QPN_MASK;
	/* C10-15: a WQE Q_Key with bit 31 set asks for the QP's own (the
	 * IBTA rule; rxe sends the WQE's value unchanged, D2). */
	p->deth.qkey = (av->remote_qkey & 0x80000000u) ? qp->ctx.qkey : av->remote_qkey;
	p->deth.src_qp = qp->qpn;
}

/* The 40 bytes ibverbs puts before a UD payload, from the frame itself. */
static void grh_of(const struct xr_pkt *p, uint8_t grh[GRH_LEN])
{
	const uint8_t *frame = p->payload ? p->payload - p->payload_off : NULL;

	memset(grh, 0, GRH_LEN);
	if (!frame)
		return;
	if (p->ip_version == 4)
		memcpy(grh + GRH_LEN - XR_IPV4_HLEN, frame + p->l3_off, XR_IPV4_HLEN);
	else
		memcpy(grh, frame + p->l3_off, XR_IPV6_HLEN);
}

/* Takes a receive WQE that holds at least len bytes: its own queue's, or
 * the SRQ's. Without one the datagram is dropped, counted (no RNR). */
static bool take_for(struct xr_engine *e, struct xr_qp *qp, uint32_t len, struct xr_hw_rwqe *w, uint16_t *idx)
{
	enum xr_srq_take got;

	if (qp->ctx.srqn) {
		got = xr_srq_take(e, qp, len, w, idx);
	} else if (qp->rq_head == xr_qp_rq_pi(qp)) {
		got = XR_SRQ_EMPTY;
	} else if (xr_rq_slot(qp, qp->rq_head)->length < len) {
		got = XR_SRQ_TOO_SMALL;
	} else {
		xr_rwqe_copy(w, xr_rq_slot(qp, qp->rq_head), qp->ctx.rq_wqe_blocks);
		*idx = xr_rq_take_index(qp);
		got = XR_SRQ_TAKEN;
	}
	if (got == XR_SRQ_EMPTY)
		xr_count(e, XR_CNT_DROP_NO_RWQE, 1);
	else if (got == XR_SRQ_TOO_SMALL)
		xr_count(e, XR_CNT_DROP_UD_OVERSIZE, 1);   /* D7 (newer rxe): the WQE stays */
	return got == XR_SRQ_TAKEN;
}

void xr_ud_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p)
{
	uint32_t len = GRH_LEN + p->payload_len;
	struct xr_wc_info wc = { .status = XR_WC_SUCCESS, .opcode = XR_WC_RECV, .byte_len = len,
				 .src_qp = p->deth.src_qp, .flags = XR_WC_GRH };
	union xr_rwqe_copy c;
	struct xr_hw_rwqe *w = &c.w;
	uint8_t grh[GRH_LEN];
	int err;

	if (!(p->op->flags & XR_OPF_SEND) || !(p->op->hdrs & XR_H_DETH))
		return;   /* recv.c lets only UD opcodes through; be safe */
	if (!take_for(e, qp, len, w, &wc.wqe_index))
		return;
	wc.wr_id = w->wr_id;
	grh_of(p, grh);
	err = xr_sgl_write(e, qp->ctx.pd, xr_rwqe_sges(w), w->num_sge, 0, grh, GRH_LEN);
	if (!err && p->payload_len)
		err = xr_sgl_write(e, qp->ctx.pd, xr_rwqe_sges(w), w->num_sge, GRH_LEN, p->payload, p->payload_len);
	if (err) {
		/* An unusable receive WQE (key, rights): it fails and the QP
		 * with it, as on RC (A41; rxe uses no SQE, G4). */
		wc.status = (uint8_t)err;
		wc.byte_len = 0;
		wc.flags = 0;
		xr_complete_recv(e, qp, &wc, false);
		xr_qp_to_error(e, qp, (uint8_t)err);
		return;
	}
	if (p->op->flags & XR_OPF_IMM) {
		wc.flags |= XR_WC_WITH_IMM;
		wc.imm = p->imm;
	}
	xr_count(e, XR_CNT_RQ_WQES, 1);
	xr_count(e, XR_CNT_RDMA_RECVS, 1);
	xr_complete_recv(e, qp, &wc, p->se);
}
