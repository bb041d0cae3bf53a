/* SPDX-License-Identifier: MIT */
/* The sizes of the engine's QP allocations, for the failing allocator
 * (failing_alloc.h; its users see the verbs' struct xr_qp, not the
 * engine's). */
#include <stddef.h>

#include "nic/engine.h"
#include "nic/resp.h"

size_t test_qp_page_bytes(void);
size_t test_qp_act_bytes(unsigned sq_log);
size_t test_qp_res_bytes(unsigned nres);
size_t test_resp_held_bytes(void);

/* A page of QP table slots. */
size_t test_qp_page_bytes(void)
{
	return XR_QP_PAGE * sizeof(struct xr_qp);
}

/* The active block of a QP whose send queue has 2^sq_log slots. */
size_t test_qp_act_bytes(unsigned sq_log)
{
	return sizeof(struct xr_qp_act) + ((size_t)1 << sq_log) * sizeof(struct xr_swqe_meta);
}

/* nres READ/atomic resources. */
size_t test_qp_res_bytes(unsigned nres)
{
	return nres * sizeof(struct xr_rd_res);
}

/* A QP's held requests (behind a READ, resp_tx.c). */
size_t test_resp_held_bytes(void)
{
	return XR_RESP_HELD * sizeof(struct xr_resp_held);
}
