/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: ibv_create/modify/query/destroy_srq and
 * ibv_post_srq_recv (a context op), each onto xroce's own SRQ verbs.
 */
#include "xrv.h"

_Static_assert((int)IBV_SRQ_MAX_WR == (int)XR_SRQ_MAX_WR && (int)IBV_SRQ_LIMIT == (int)XR_SRQ_LIMIT,
	       "xroce's SRQ attribute masks are ibverbs' values");

XRV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct xr_srq_init_attr in = { 0 };
	struct xrv_srq *srq;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	in.attr.max_wr = attr->attr.max_wr;
	in.attr.max_sge = attr->attr.max_sge;
	in.attr.srq_limit = attr->attr.srq_limit;
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->xr = xr_create_srq(XRV_OF(xrv_pd, pd)->xr, &in);
	if (!srq->xr) {
		int err = errno;
		if (err == EINVAL)
			xrv_log("ibv_create_srq: max_wr %u, max_sge %u: xroce0 allows 1..%u WRs and %u SGEs "
				"(ibv_devinfo -v: max_srq_wr, max_srq_sge)", attr->attr.max_wr, attr->attr.max_sge,
				1u << 15, XR_RWQE_MAX_SGE);
		free(srq);
		errno = err;
		return NULL;
	}
	attr->attr.max_wr = in.attr.max_wr;
	attr->attr.max_sge = in.attr.max_sge;
	srq->ibv.context = pd->context;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.pd = pd;
	srq->ibv.handle = xr_srq_num(srq->xr);
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	xrv_register_srq(srq);
	return &srq->ibv;
}
XRV_DEFAULT(ibv_create_srq);

XRV_EXPORT int ibv_modify_srq(struct ibv_srq *ibv, struct ibv_srq_attr *attr, int mask)
{
	struct xr_srq_attr a;
	int rc;

	if (!ibv || !attr)
		return EINVAL;
	a.max_wr = attr->max_wr;
	a.max_sge = attr->max_sge;
	a.srq_limit = attr->srq_limit;
	rc = xr_modify_srq(XRV_OF(xrv_srq, ibv)->xr, &a, mask);
	if (rc == EINVAL && (mask & IBV_SRQ_MAX_WR))
		xrv_log("ibv_modify_srq: xroce0 does not resize an SRQ (create it at the size needed)");
	return rc;
}
XRV_DEFAULT(ibv_modify_srq);

XRV_EXPORT int ibv_query_srq(struct ibv_srq *ibv, struct ibv_srq_attr *attr)
{
	struct xr_srq_attr a;
	int rc;

	if (!ibv || !attr)
		return EINVAL;
	rc = xr_query_srq(XRV_OF(xrv_srq, ibv)->xr, &a);
	if (rc)
		return rc;
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}
XRV_DEFAULT(ibv_query_srq);

XRV_EXPORT int ibv_destroy_srq(struct ibv_srq *ibv)
{
	struct xrv_srq *srq = XRV_OF(xrv_srq, ibv);
	int rc;

	if (!ibv)
		return EINVAL;
	rc = xr_destroy_srq(srq->xr);
	if (rc)
		return rc;   /* EBUSY: QPs still use it */
	xrv_unregister_srq(srq);
	pthread_mutex_destroy(&ibv->mutex);
	pthread_cond_destroy(&ibv->cond);
	free(srq);
	return 0;
}
XRV_DEFAULT(ibv_destroy_srq);

static int post_srq(void *q, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	return xr_post_srq_recv(q, wr, bad);
}

int xrv_post_srq_recv(struct ibv_srq *ibv, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return xrv_post_recvs(wr, bad, post_srq, XRV_OF(xrv_srq, ibv)->xr);
}
