/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: create, the modify_qp state machine (xroce's, which follows
 * ibv_modify_qp's rules and masks), query, destroy, and posting work
 * requests through the context ops.
 */
#include "xrv.h"

_Static_assert((int)IBV_QP_STATE == (int)XR_QP_STATE && (int)IBV_QP_AV == (int)XR_QP_AV && (int)IBV_QP_DEST_QPN == (int)XR_QP_DEST_QPN &&
	       (int)IBV_QP_MAX_DEST_RD_ATOMIC == (int)XR_QP_MAX_DEST_RD_ATOMIC && (int)IBV_QP_CAP == (int)XR_QP_CAP,
	       "xroce's QP attribute masks are ibverbs' values");
_Static_assert((int)IBV_QPS_RESET == (int)XR_QPS_RESET && (int)IBV_QPS_ERR == (int)XR_QPS_ERR &&
	       (int)IBV_QPS_SQD == (int)XR_QPS_SQD, "xroce's QP states are ibverbs' values");
_Static_assert((int)IBV_WR_SEND_WITH_INV == (int)XR_WR_SEND_WITH_INV && (int)IBV_WR_BIND_MW == (int)XR_WR_BIND_MW &&
	       (int)IBV_WR_ATOMIC_FETCH_AND_ADD == (int)XR_WR_ATOMIC_FETCH_AND_ADD, "xroce's WR opcodes are ibverbs' values");
_Static_assert((int)IBV_SEND_INLINE == (int)XR_SEND_INLINE && (int)IBV_SEND_SIGNALED == (int)XR_SEND_SIGNALED &&
	       (int)IBV_SEND_FENCE == (int)XR_SEND_FENCE && (int)IBV_SEND_SOLICITED == (int)XR_SEND_SOLICITED,
	       "xroce's send flags are ibverbs' values");
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct xr_sge) &&
	       offsetof(struct ibv_sge, lkey) == offsetof(struct xr_sge, lkey),
	       "an ibv_sge list is an xr_sge list");

/* IBV_QP_STATE .. IBV_QP_DEST_QPN and IBV_QP_RATE_LIMIT: xroce's masks */
#define XRV_QP_MASKS (((1 << 21) - 1) | IBV_QP_RATE_LIMIT)
_Static_assert((int)IBV_QP_RATE_LIMIT == (int)XR_QP_RATE_LIMIT, "the rate limit mask is ibverbs' value");

static const char *qp_type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RAW_PACKET: return "raw packet QPs";
	case IBV_QPT_XRC_SEND: case IBV_QPT_XRC_RECV: return "XRC QPs";
	default: return "this QP type";
	}
}

static void caps_from_xr(struct ibv_qp_cap *o, const struct xr_qp_cap *c)
{
	o->max_send_wr = c->max_send_wr;
	o->max_recv_wr = c->max_recv_wr;
	o->max_send_sge = c->max_send_sge;
	o->max_recv_sge = c->max_recv_sge;
	o->max_inline_data = c->max_inline_data;
}

XRV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct xr_qp_init_attr in = { 0 };
	struct xr_qp_attr qa;
	struct xr_qp_init_attr got;
	struct xrv_qp *qp;

	if (!pd || !attr || !attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	switch (attr->qp_type) {
	case IBV_QPT_RC: in.qp_type = XR_QPT_RC; break;
	case IBV_QPT_UC: in.qp_type = XR_QPT_UC; break;
	case IBV_QPT_UD: in.qp_type = XR_QPT_UD; break;
	default:
		xrv_unsupported("ibv_create_qp", qp_type_name(attr->qp_type));
		return NULL;
	}
	in.srq = attr->srq ? XRV_OF(xrv_srq, attr->srq)->xr : NULL;
	in.send_cq = XRV_OF(xrv_cq, attr->send_cq)->xr;
	in.recv_cq = XRV_OF(xrv_cq, attr->recv_cq)->xr;
	in.cap.max_send_wr = attr->cap.max_send_wr;
	in.cap.max_recv_wr = attr->cap.max_recv_wr;
	in.cap.max_send_sge = attr->cap.max_send_sge;
	in.cap.max_recv_sge = attr->cap.max_recv_sge;
	in.cap.max_inline_data = attr->cap.max_inline_data;
	in.sq_sig_all = attr->sq_sig_all;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->xr = xr_create_qp(XRV_OF(xrv_pd, pd)->xr, &in);
	if (!qp->xr) {
		int err = errno;
		if (err == EINVAL)
			xrv_log("ibv_create_qp: capabilities beyond the device's (at most %u WRs, %u send / %u receive SGEs, "
				"%u inline bytes)", 1u << 15, XR_WQE_MAX_SGE, XR_RWQE_MAX_SGE, XR_WQE_MAX_INLINE);
		free(qp);
		errno = err;
		return NULL;
	}
	if (!xr_query_qp(qp->xr, &qa, XR_QP_CAP, &got))
		caps_from_xr(&attr->cap, &got.cap);
	qp->ibv.qp_base.context = pd->context;
	qp->ibv.qp_base.qp_context = attr->qp_context;
	qp->ibv.qp_base.pd = pd;
	qp->ibv.qp_base.send_cq = attr->send_cq;
	qp->ibv.qp_base.recv_cq = attr->recv_cq;
	qp->ibv.qp_base.handle = xr_qp_num(qp->xr);
	qp->ibv.qp_base.qp_num = xr_qp_num(qp->xr);
	qp->ibv.qp_base.state = IBV_QPS_RESET;
	qp->ibv.qp_base.qp_type = attr->qp_type;
	qp->ibv.qp_base.srq = attr->srq;
	pthread_mutex_init(&qp->ibv.qp_base.mutex, NULL);
	pthread_cond_init(&qp->ibv.qp_base.cond, NULL);
	xrv_register_qp(qp);
	return &qp->ibv.qp_base;
}
XRV_DEFAULT(ibv_create_qp);

XRV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibv)
{
	struct xrv_qp *qp = XRV_OF(xrv_qp, ibv);
	int rc;

	if (!ibv)
		return EINVAL;
	rc = xr_destroy_qp(qp->xr);
	if (rc)
		return rc;
	xrv_unregister_qp(qp);
	xrv_wr_batch_free(qp->wr);
	pthread_mutex_destroy(&ibv->mutex);
	pthread_cond_destroy(&ibv->cond);
	free(qp);
	return 0;
}
XRV_DEFAULT(ibv_destroy_qp);

XRV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct xr_qp_attr a = { 0 };
	int rc;

	if (!qp || !attr)
		return EINVAL;
	if (mask & ~XRV_QP_MASKS) {
		xrv_unsupported("ibv_modify_qp", "attributes beyond IBV_QP_DEST_QPN other than IBV_QP_RATE_LIMIT");
		return EOPNOTSUPP;
	}
	if ((mask & IBV_QP_AV) && (rc = xrv_ah_attr_from_ibv("ibv_modify_qp", &attr->ah_attr, &a.ah_attr)))
		return rc;
	if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > XR_MAX_RD_ATOMIC) ||
	    ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > XR_MAX_RD_ATOMIC)) {
		/* perftest takes the peer's limit as its own (rxe's is 128). */
		xrv_log("ibv_modify_qp: max_rd_atomic %u, max_dest_rd_atomic %u: xroce0 allows at most %u "
			"(ibv_devinfo -v: max_qp_rd_atom; perftest: -o %u)",
			mask & IBV_QP_MAX_QP_RD_ATOMIC ? attr->max_rd_atomic : 0,
			mask & IBV_QP_MAX_DEST_RD_ATOMIC ? attr->max_dest_rd_atomic : 0, XR_MAX_RD_ATOMIC, XR_MAX_RD_ATOMIC);
		return EINVAL;
	}
	a.qp_state = (enum xr_qp_state)attr->qp_state;
	a.cur_qp_state = (enum xr_qp_state)attr->cur_qp_state;
	a.path_mtu = (enum xr_mtu)attr->path_mtu;
	a.qkey = attr->qkey;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.dest_qp_num = attr->dest_qp_num;
	a.qp_access_flags = attr->qp_access_flags;
	a.cap.max_send_wr = attr->cap.max_send_wr;
	a.cap.max_recv_wr = attr->cap.max_recv_wr;
	a.cap.max_send_sge = attr->cap.max_send_sge;
	a.cap.max_recv_sge = attr->cap.max_recv_sge;
	a.cap.max_inline_data = attr->cap.max_inline_data;
	a.pkey_index = attr->pkey_index;
	a.sq_draining = attr->sq_draining;
	a.max_rd_atomic = attr->max_rd_atomic;
	a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a.min_rnr_timer = attr->min_rnr_timer;
	a.port_num = attr->port_num;
	a.timeout = attr->timeout;
	a.retry_cnt = attr->retry_cnt;
	a.rnr_retry = attr->rnr_retry;
	a.rate_limit = attr->rate_limit;
	rc = xr_modify_qp(XRV_OF(xrv_qp, qp)->xr, &a, mask);
	if (!rc && (mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return rc;
}
XRV_DEFAULT(ibv_modify_qp);

int xrv_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr)
{
	struct xr_qp_attr a = { 0 };

	if (!qp || !attr)
		return EINVAL;
	/* max_burst_sz and typical_pkt_sz: the engine's bucket depth is
	 * CC_PACER_BURST, one value for every QP. */
	a.rate_limit = attr->rate_limit;
	return xr_modify_qp(XRV_OF(xrv_qp, qp)->xr, &a, XR_QP_RATE_LIMIT);
}

XRV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	struct xr_qp_attr a;
	struct xr_qp_init_attr in;
	int rc;

	if (!qp || !attr || !init)
		return EINVAL;
	rc = xr_query_qp(XRV_OF(xrv_qp, qp)->xr, &a, mask, &in);
	if (rc)
		return rc;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)a.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)a.cur_qp_state;
	attr->path_mtu = (enum ibv_mtu)a.path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = a.qkey;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	attr->dest_qp_num = a.dest_qp_num;
	attr->qp_access_flags = a.qp_access_flags;
	caps_from_xr(&attr->cap, &a.cap);
	memcpy(attr->ah_attr.grh.dgid.raw, a.ah_attr.grh.dgid.raw, 16);
	attr->ah_attr.grh.flow_label = a.ah_attr.grh.flow_label;
	attr->ah_attr.grh.sgid_index = a.ah_attr.grh.sgid_index;
	attr->ah_attr.grh.hop_limit = a.ah_attr.grh.hop_limit;
	attr->ah_attr.grh.traffic_class = a.ah_attr.grh.traffic_class;
	attr->ah_attr.sl = a.ah_attr.sl;
	attr->ah_attr.static_rate = a.ah_attr.static_rate;
	attr->ah_attr.is_global = a.ah_attr.is_global;
	attr->ah_attr.port_num = a.ah_attr.port_num;
	attr->pkey_index = a.pkey_index;
	attr->sq_draining = a.sq_draining;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->port_num = a.port_num ? a.port_num : 1;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	attr->rate_limit = a.rate_limit;
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	caps_from_xr(&init->cap, &in.cap);
	init->qp_type = qp->qp_type;
	init->srq = qp->srq;
	init->sq_sig_all = in.sq_sig_all;
	return 0;
}
XRV_DEFAULT(ibv_query_qp);

/* ---- posting (context ops) ---- */

#define POST_BATCH 16   /* WRs converted per call into xroce's API */

static int convert_send(const struct ibv_qp *qp, const struct ibv_send_wr *w, struct xr_send_wr *o)
{
	memset(o, 0, sizeof(*o));
	o->wr_id = w->wr_id;
	o->sg_list = (struct xr_sge *)(void *)w->sg_list;
	o->num_sge = w->num_sge;
	o->opcode = (enum xr_wr_opcode)w->opcode;
	o->send_flags = w->send_flags;
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		o->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		o->wr.rdma.rkey = w->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		o->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		o->wr.atomic.compare_add = w->wr.atomic.compare_add;
		o->wr.atomic.swap = w->wr.atomic.swap;
		o->wr.atomic.rkey = w->wr.atomic.rkey;
		break;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		if (qp->qp_type == IBV_QPT_UD) {
			if (!w->wr.ud.ah)
				return EINVAL;
			o->wr.ud.ah = XRV_OF(xrv_ah, w->wr.ud.ah)->xr;
			o->wr.ud.remote_qpn = w->wr.ud.remote_qpn;
			o->wr.ud.remote_qkey = w->wr.ud.remote_qkey;
		}
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		o->invalidate_rkey = w->invalidate_rkey;
		break;
	case IBV_WR_BIND_MW:
		if (!w->bind_mw.mw)
			return EINVAL;
		o->bind_mw.mw = XRV_OF(xrv_mw, w->bind_mw.mw)->xr;
		o->bind_mw.rkey = w->bind_mw.rkey;
		o->bind_mw.bind_info.mr = w->bind_mw.bind_info.mr ? XRV_OF(xrv_mr, w->bind_mw.bind_info.mr)->xr : NULL;
		o->bind_mw.bind_info.addr = w->bind_mw.bind_info.addr;
		o->bind_mw.bind_info.length = w->bind_mw.bind_info.length;
		o->bind_mw.bind_info.mw_access_flags = w->bind_mw.bind_info.mw_access_flags;
		break;
	default:
		return EINVAL;   /* TSO, driver opcodes, atomic write, flush: not on this device */
	}
	if (w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		o->imm_data = w->imm_data;
	return 0;
}

static int post_send_all(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct xr_qp *xqp = XRV_OF(xrv_qp, qp)->xr;

	while (wr) {
		struct xr_send_wr o[POST_BATCH], *xbad = NULL;
		struct ibv_send_wr *src[POST_BATCH];
		int n = 0, rc;
		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			rc = convert_send(qp, wr, &o[n]);
			if (rc) {
				if (n) {
					o[n - 1].next = NULL;
					rc = xr_post_send(xqp, o, &xbad);
					if (rc) {
						*bad = src[xbad - o];
						return rc;
					}
				}
				*bad = wr;
				return EINVAL;
			}
			src[n] = wr;
			o[n].next = n + 1 < POST_BATCH && wr->next ? &o[n + 1] : NULL;
		}
		rc = xr_post_send(xqp, o, &xbad);
		if (rc) {
			*bad = xbad ? src[xbad - o] : src[0];
			return rc;
		}
	}
	return 0;
}

/* The work leaves from the caller's thread: no wakeup of the engine's
 * thread (on a small machine a wakeup costs more than the pass). */
int xrv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct xr_engine *e = xr_context_engine(xrv_ctx(qp->context)->xr);
	int rc;

	xr_engine_post_begin(e);
	rc = post_send_all(qp, wr, bad);
	xr_engine_post_end(e);
	return rc;
}

/* Receive WRs in batches through post (a QP's RQ or an SRQ). */
int xrv_post_recvs(struct ibv_recv_wr *wr, struct ibv_recv_wr **bad, xrv_post_recv_fn post, void *q)
{
	while (wr) {
		struct xr_recv_wr o[POST_BATCH], *xbad = NULL;
		struct ibv_recv_wr *src[POST_BATCH];
		int n = 0, rc;
		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			src[n] = wr;
			o[n].wr_id = wr->wr_id;
			o[n].sg_list = (struct xr_sge *)(void *)wr->sg_list;
			o[n].num_sge = wr->num_sge;
			o[n].next = n + 1 < POST_BATCH && wr->next ? &o[n + 1] : NULL;
		}
		rc = post(q, o, &xbad);
		if (rc) {
			*bad = xbad ? src[xbad - o] : src[0];
			return rc;
		}
	}
	return 0;
}

static int post_rq(void *q, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	return xr_post_recv(q, wr, bad);
}

int xrv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return xrv_post_recvs(wr, bad, post_rq, XRV_OF(xrv_qp, qp)->xr);
}
