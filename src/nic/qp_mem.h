/* SPDX-License-Identifier: MIT */
/* qp_mem.c's parts that the QP table's commit (qp.c) uses: a commit
 * allocates a new active block or resource array before it changes
 * anything, and a reset or destroy gives them back. */
#ifndef XR_NIC_QP_MEM_H
#define XR_NIC_QP_MEM_H

#include "engine.h"

/* Slots of the QP's send queue: the active block's metadata entries. */
uint32_t xr_qp_sq_slots(const struct xr_qp_ctx *c);
size_t xr_qp_act_size(uint32_t slots);
/* Nothing in qp's active block is in use. */
bool xr_qp_act_at_rest(const struct xr_qp *qp);
struct xr_qp_act *xr_qp_act_alloc(struct xr_engine *e, uint32_t slots);
void xr_qp_act_release(struct xr_engine *e, struct xr_qp_act *a);
void xr_qp_res_free(struct xr_engine *e, struct xr_qp *qp);

#endif
