/* SPDX-License-Identifier: MIT */
/*
 * Multicast groups (ibv_attach_mcast, ibv_detach_mcast): a UD QP joins a
 * group through the MCG window; the engine has the link join it and
 * hands the group's datagrams to every QP attached (D8). A QP attached
 * cannot be destroyed (EBUSY, as the IB core and rxe).
 */
#include "drv.h"

static int mcg_cmd(struct xr_qp *qp, const xr_gid *gid, uint32_t cmd)
{
	uint32_t st;
	int rc;

	if (!qp || !gid)
		return EINVAL;
	if (!xr_gid_is_mcast(gid) || qp->init.qp_type != XR_QPT_UD)
		return EINVAL;   /* the IB core's checks, before the device's */
	drv_lock(&qp->ctx->lock);
	rc = xr_regio_mcg(qp->ctx->regs, cmd, gid, qp->qpn, &st);
	drv_unlock(&qp->ctx->lock);
	if (!rc)
		return 0;
	if (rc < 0)
		return -rc;
	return st == XR_CMD_ST_FULL ? ENOMEM : st == XR_CMD_ST_LINK ? EADDRNOTAVAIL : EINVAL;
}

int xr_attach_mcast(struct xr_qp *qp, const xr_gid *gid)
{
	return mcg_cmd(qp, gid, 1);
}

int xr_detach_mcast(struct xr_qp *qp, const xr_gid *gid)
{
	return mcg_cmd(qp, gid, 2);
}
