/* SPDX-License-Identifier: MIT */
/*
 * Protection domains, memory regions and memory windows.
 */
#include "xrv.h"

_Static_assert((int)IBV_ACCESS_LOCAL_WRITE == (int)XR_ACCESS_LOCAL_WRITE && (int)IBV_ACCESS_REMOTE_WRITE == (int)XR_ACCESS_REMOTE_WRITE &&
	       (int)IBV_ACCESS_REMOTE_READ == (int)XR_ACCESS_REMOTE_READ && (int)IBV_ACCESS_REMOTE_ATOMIC == (int)XR_ACCESS_REMOTE_ATOMIC &&
	       (int)IBV_ACCESS_MW_BIND == (int)XR_ACCESS_MW_BIND, "xroce's access flags are ibverbs' values");

XRV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct xrv_pd *pd;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->xr = xr_alloc_pd(xrv_ctx(context)->xr);
	if (!pd->xr) {
		free(pd);
		return NULL;
	}
	pd->ibv.context = context;
	pd->ibv.handle = (uint32_t)(uintptr_t)pd;
	return &pd->ibv;
}
XRV_DEFAULT(ibv_alloc_pd);

XRV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibv)
{
	struct xrv_pd *pd = XRV_OF(xrv_pd, ibv);
	int rc;

	if (!ibv)
		return EINVAL;
	rc = xr_dealloc_pd(pd->xr);
	if (!rc)
		free(pd);
	return rc;
}
XRV_DEFAULT(ibv_dealloc_pd);

/* ---- memory regions ---- */

XRV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibv_pd, void *addr, size_t length, uint64_t iova,
					   unsigned int access)
{
	struct xrv_mr *mr;

	if (!ibv_pd) {
		errno = EINVAL;
		return NULL;
	}
	/* Optional flags (relaxed ordering, ...) are hints a device may ignore. */
	access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	access &= ~(unsigned)IBV_ACCESS_HUGETLB;
	if (access & IBV_ACCESS_ON_DEMAND) {
		xrv_unsupported("ibv_reg_mr", "IBV_ACCESS_ON_DEMAND (regions are registered whole)");
		return NULL;
	}
	if (access & IBV_ACCESS_ZERO_BASED) {
		xrv_unsupported("ibv_reg_mr", "IBV_ACCESS_ZERO_BASED");
		return NULL;
	}
	if (iova != (uintptr_t)addr) {
		xrv_unsupported("ibv_reg_mr_iova", "an IOVA other than the buffer's address");
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->xr = xr_reg_mr(XRV_OF(xrv_pd, ibv_pd)->xr, addr, length, (int)access);
	if (!mr->xr) {
		free(mr);
		return NULL;
	}
	mr->ibv.context = ibv_pd->context;
	mr->ibv.pd = ibv_pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->xr->handle;
	mr->ibv.lkey = mr->xr->lkey;
	mr->ibv.rkey = mr->xr->rkey;
	return &mr->ibv;
}

XRV_EXPORT struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

XRV_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}
XRV_DEFAULT(ibv_reg_mr);

XRV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibv)
{
	struct xrv_mr *mr = XRV_OF(xrv_mr, ibv);
	int rc;

	if (!ibv)
		return EINVAL;
	rc = xr_dereg_mr(mr->xr);
	if (!rc)
		free(mr);
	return rc;
}
XRV_DEFAULT(ibv_dereg_mr);

XRV_EXPORT int ibv_rereg_mr(struct ibv_mr *ibv, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct xrv_mr *mr = XRV_OF(xrv_mr, ibv);
	unsigned acc = (unsigned)access & ~(unsigned)(IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB);
	int rc;

	if (!ibv || !flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && !pd) || ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && !addr)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (acc & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED))) {
		xrv_unsupported("ibv_rereg_mr", "IBV_ACCESS_ON_DEMAND or IBV_ACCESS_ZERO_BASED");
		errno = EOPNOTSUPP;
		return IBV_REREG_MR_ERR_INPUT;
	}
	rc = xr_rereg_mr(mr->xr,
			 ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? XR_REREG_TRANSLATION : 0) |
			 ((flags & IBV_REREG_MR_CHANGE_PD) ? XR_REREG_PD : 0) |
			 ((flags & IBV_REREG_MR_CHANGE_ACCESS) ? XR_REREG_ACCESS : 0),
			 (flags & IBV_REREG_MR_CHANGE_PD) ? XRV_OF(xrv_pd, pd)->xr : NULL, addr, length, (int)acc);
	if (rc) {
		/* The region stays as it was: refused input, or the engine's
		 * refusal (windows bound to it) as the kernel's command failing. */
		errno = rc;
		return rc == EINVAL ? IBV_REREG_MR_ERR_INPUT : IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibv->pd = pd;
	ibv->addr = mr->xr->addr;
	ibv->length = mr->xr->length;
	ibv->lkey = mr->xr->lkey;
	ibv->rkey = mr->xr->rkey;
	return 0;
}

XRV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
					    int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	xrv_unsupported("ibv_reg_dmabuf_mr", "a software device has no dma-buf importer");
	return NULL;
}

/* ---- memory windows (context ops) ---- */

struct ibv_mw *xrv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct xrv_mw *mw;

	if (!pd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->xr = xr_alloc_mw(XRV_OF(xrv_pd, pd)->xr, type == IBV_MW_TYPE_1 ? XR_MW_TYPE_1 : XR_MW_TYPE_2);
	if (!mw->xr) {
		free(mw);
		return NULL;
	}
	mw->ibv.context = pd->context;
	mw->ibv.pd = pd;
	mw->ibv.rkey = mw->xr->rkey;
	mw->ibv.handle = mw->xr->handle;
	mw->ibv.type = type;
	return &mw->ibv;
}

int xrv_dealloc_mw(struct ibv_mw *ibv)
{
	struct xrv_mw *mw = XRV_OF(xrv_mw, ibv);
	int rc = xr_dealloc_mw(mw->xr);

	if (!rc)
		free(mw);
	return rc;
}

int xrv_bind_mw(struct ibv_qp *qp, struct ibv_mw *ibv, struct ibv_mw_bind *bind)
{
	struct xrv_mw *mw = XRV_OF(xrv_mw, ibv);
	struct xr_mw_bind b;
	int rc;

	if (!qp || !ibv || !bind || ibv->type != IBV_MW_TYPE_1)
		return EINVAL;
	b.wr_id = bind->wr_id;
	b.send_flags = bind->send_flags;
	b.bind_info.mr = bind->bind_info.mr ? XRV_OF(xrv_mr, bind->bind_info.mr)->xr : NULL;
	b.bind_info.addr = bind->bind_info.addr;
	b.bind_info.length = bind->bind_info.length;
	b.bind_info.mw_access_flags = bind->bind_info.mw_access_flags;
	rc = xr_bind_mw(XRV_OF(xrv_qp, qp)->xr, mw->xr, &b);
	if (!rc)
		ibv->rkey = mw->xr->rkey;
	return rc;
}
