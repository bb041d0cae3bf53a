/* SPDX-License-Identifier: MIT */
/*
 * Receive checks: what a parsed packet must satisfy before a QP sees it
 * (after rxe_recv.c): engine running, addressed to us, an existing QP in a
 * state that receives, the QP's transport, its peer, its P_Key (and Q_Key
 * for UD). Each refusal is counted under its own name.
 */
#include <string.h>

#include "engine.h"
#include "recv.h"

bool xr_recv_addressed_to_us(struct xr_engine *e, const struct xr_pkt *p, bool check_mac)
{
	if (check_mac) {
		uint8_t mac[6];
		xr_mac_from_regs(mac, xr_reg_get(e, XR_REG_MAC_LOW), xr_reg_get(e, XR_REG_MAC_HIGH));
		if (memcmp(mac, p->dmac, 6))
			return false;
	}
	/* An unset address (0.0.0.0, ::: the family the device has none of)
	 * is nobody's, not a match for a packet sent to it. */
	if (p->ip_version == 4) {
		uint32_t ip = xr_reg_get(e, XR_REG_IP_ADDR);
		return ip && xr_gid_to_ipv4(&p->dgid) == ip;
	}
	uint32_t any = 0;
	for (int i = 0; i < 4; i++) {
		uint32_t w = xr_reg_get(e, XR_REG_IPV6_ADDR_0 + 4u * (unsigned)i);
		if (get_be32(p->dgid.raw + 4 * i) != w)
			return false;
		any |= w;
	}
	return any != 0;
}

/* The BTH P_Key matches when the low 15 bits are equal and non-zero and
 * at least one side is a full member (bit 15), as rxe checks it. */
static bool pkey_matches(uint16_t pkt, uint16_t qp)
{
	return (pkt & 0x7FFF) && (pkt & 0x7FFF) == (qp & 0x7FFF) && ((pkt | qp) & 0x8000);
}

static bool state_receives(uint8_t state)
{
	return state == XR_QPS_RTR || state == XR_QPS_RTS || state == XR_QPS_SQD || state == XR_QPS_SQE;
}

static enum xr_transport qp_transport(uint8_t type)
{
	return type == XR_QPT_UC ? XR_TRANSPORT_UC : type == XR_QPT_UD ? XR_TRANSPORT_UD : XR_TRANSPORT_RC;
}

/* A packet whose ICRC check waits for its copy (gather.c) is checked
 * first: a bad one counts only as that (the pass counts it), as if
 * dropped at its parse. */
int xr_recv_drop(struct xr_engine *e, const struct xr_pkt *p, enum xr_counter why)
{
	if (xr_icrc_defer_check(e, p, p->payload))
		xr_count(e, why, 1);
	return (int)why + 1;
}

int xr_recv_check(struct xr_engine *e, const struct xr_pkt *p, bool check_mac, struct xr_qp **out)
{
	*out = NULL;
	if (!(xr_reg_get(e, XR_REG_CTRL) & XR_CTRL_ENABLE))
		return xr_recv_drop(e, p, XR_CNT_DROP_DISABLED);
	if (!xr_recv_addressed_to_us(e, p, check_mac))
		return xr_recv_drop(e, p, XR_CNT_DROP_NOT_FOR_US);
	return xr_recv_check_qp(e, p, p->dqpn, out);
}

int xr_recv_check_qp(struct xr_engine *e, const struct xr_pkt *p, uint32_t qpn, struct xr_qp **out)
{
	struct xr_qp *qp;
	const struct xr_qp_ctx *c;
	int why = 0;

	*out = NULL;
	qp = xr_qp_lookup(e, qpn);
	if (!qp)
		return xr_recv_drop(e, p, XR_CNT_DROP_UNKNOWN_QPN);

	pthread_mutex_lock(&qp->lock);
	c = &qp->ctx;
	if (!qp->in_use)
		why = xr_recv_drop(e, p, XR_CNT_DROP_UNKNOWN_QPN);
	else if (!state_receives(c->state))
		why = xr_recv_drop(e, p, XR_CNT_DROP_BAD_STATE);
	else if (xr_opcode_transport(p->opcode) != qp_transport(c->type))
		why = xr_recv_drop(e, p, XR_CNT_DROP_BAD_TRANSPORT);
	else if (c->type != XR_QPT_UD && memcmp(p->sgid.raw, c->peer_gid.raw, 16))
		why = xr_recv_drop(e, p, XR_CNT_DROP_BAD_SRC);
	else if (!pkey_matches(p->pkey, c->pkey))
		why = xr_recv_drop(e, p, XR_CNT_DROP_BAD_PKEY);
	else if (c->type == XR_QPT_UD && p->deth.qkey != c->qkey)
		why = xr_recv_drop(e, p, XR_CNT_DROP_BAD_QKEY);   /* D3: silent, counted */
	if (why) {
		pthread_mutex_unlock(&qp->lock);
		return why;
	}
	*out = qp;   /* returned locked: the caller processes the packet, then unlocks */
	return 0;
}
