/* SPDX-License-Identifier: MIT */
/* The sizes of the engine's QP allocations, for test_qp_mem's failing
 * allocator (that file uses the verbs' struct xr_qp, not the engine's). */
#include <stddef.h>

#include "nic/engine.h"

size_t test_qp_page_bytes(void);
size_t test_qp_act_bytes(unsigned sq_log);
size_t test_qp_res_bytes(unsigned nres);

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
