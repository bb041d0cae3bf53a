/* SPDX-License-Identifier: MIT */
/*
 * xr_qp_connect: RESET -> INIT -> RTR -> RTS for an RC or UC QP, the
 * sequence every tool, test and benchmark used to write out for itself
 * (attributes and masks as ibv_rc_pingpong gives them). It is built on
 * xr_modify_qp only, so the state machine's checks stay in one place.
 */
#include "drv.h"

void xr_connect_attr_init(struct xr_connect_attr *c)
{
	memset(c, 0, sizeof(*c));
	c->path_mtu = XR_MTU_1024;
	c->access = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
	c->hop_limit = 64;
	c->max_rd_atomic = XR_MAX_RD_ATOMIC;
	c->max_dest_rd_atomic = XR_MAX_RD_ATOMIC;
	c->min_rnr_timer = 12;
	c->timeout = 14;
	c->retry_cnt = 7;
	c->rnr_retry = 7;
}

/* Everything xr_modify_qp would refuse at RTR or RTS, checked before INIT
 * so that a bad argument leaves the QP untouched in RESET. */
static bool attr_ok(const struct xr_connect_attr *c, bool rc, enum xr_mtu active)
{
	/* Checked here, not first at RTR: a bad argument leaves the QP in RESET. */
	if (c->path_mtu < XR_MTU_256 || c->path_mtu > active)
		return false;
	if (c->dest_qp_num > XR_QPN_MASK || (c->access & ~0xFu))
		return false;
	if (!rc)
		return true;   /* UC takes none of the rest */
	return c->timeout <= 31 && c->min_rnr_timer <= 31 && c->retry_cnt <= 7 && c->rnr_retry <= 7 &&
	       c->max_rd_atomic <= XR_MAX_RD_ATOMIC && c->max_dest_rd_atomic <= XR_MAX_RD_ATOMIC;
}

int xr_qp_connect(struct xr_qp *qp, const struct xr_connect_attr *c)
{
	struct xr_qp_attr a;
	uint8_t state, type;
	bool rc;
	int err;

	if (!qp || !c)
		return -EINVAL;
	drv_lock(&qp->ctx->lock);
	state = qp->hw.state;
	type = qp->hw.type;
	drv_unlock(&qp->ctx->lock);
	rc = type == XR_QPT_RC;
	/* Not RESET: an INIT QP would pass INIT -> INIT and be connected
	 * over whatever it was, which is never what a caller meant. */
	if (state != XR_QPS_RESET || (!rc && type != XR_QPT_UC) || !attr_ok(c, rc, xr_active_mtu(qp->ctx)))
		return -EINVAL;

	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = c->access;
	err = xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS);
	if (err)
		return -err;

	a.qp_state = XR_QPS_RTR;
	a.path_mtu = c->path_mtu;
	a.dest_qp_num = c->dest_qp_num;
	a.rq_psn = c->rq_psn;
	a.ah_attr.is_global = 1;   /* RoCE: every path has a GRH */
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = c->dgid;
	a.ah_attr.grh.hop_limit = c->hop_limit;
	a.ah_attr.grh.traffic_class = c->traffic_class;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	err = xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
				   (rc ? XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER : 0));
	if (err)
		return -err;

	a.qp_state = XR_QPS_RTS;
	a.sq_psn = c->sq_psn;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	err = xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_SQ_PSN |
				   (rc ? XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY | XR_QP_MAX_QP_RD_ATOMIC : 0));
	return -err;
}
