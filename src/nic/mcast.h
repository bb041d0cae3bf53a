/* SPDX-License-Identifier: MIT */
/* Multicast groups (mcast.c): the MCG table and its uses. */
#ifndef XR_NIC_MCAST_H
#define XR_NIC_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "xroce/link.h"
#include "xroce/regmap.h"
#include "xroce/wire.h"

struct xr_engine;

/* Packed in g[0 .. n); changed under reg_lock and dp_mutex, read by
 * passes (which hold dp_mutex). */
struct xr_mcg_table {
	struct xr_mcg {
		xr_gid gid;
		uint32_t nqp;
		uint32_t qpn[XR_MCG_MAX_QP];
	} g[XR_MAX_MCG];
	uint32_t n, attached;
	/* Copies of group frames this engine sent, for its own QPs (a
	 * pass's, oldest first). */
	struct xr_mcast_copy *loop, **loop_tail;
};

enum xr_cmd_status xr_mcg_cmd(struct xr_engine *e, uint32_t cmd);
bool xr_mcg_qp_attached(struct xr_engine *e, uint32_t qpn);
void xr_mcg_reset(struct xr_engine *e);
void xr_mcg_link_attached(struct xr_engine *e);
/* A datagram to DestQP 0xFFFFFF, to every QP attached to its group (pass only). */
void xr_mcast_rx(struct xr_engine *e, const struct xr_pkt *p, bool check_mac);
/* Loopback (pass only): a frame about to leave is copied if it goes to a
 * group this engine has; the copies reach its QPs at the pass's end,
 * when no QP lock is held. */
void xr_mcast_loop_keep(struct xr_engine *e, const struct xr_frame *f);
void xr_mcast_loop_drain(struct xr_engine *e);
void xr_mcast_loop_free(struct xr_engine *e);

#endif
