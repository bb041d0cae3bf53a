/* SPDX-License-Identifier: MIT */
/* UD, UC and SRQ helpers on top of the RC harness's two devices: QPs of
 * the other types brought up by hand, receive posting, counters, and
 * waiting for a completion (or for none). Inline progress throughout. */
#ifndef XR_TEST_DGRAM_HARNESS_H
#define XR_TEST_DGRAM_HARNESS_H

#include "rc_harness.h"

static inline uint64_t d_counter(struct end *e, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(e->ctx), c, &v);
	return v;
}

/* A UD QP on e (its CQ, or srq's WQEs), in RTS with Q_Key qkey. */
static inline struct xr_qp *d_ud_qp_sge(struct end *e, uint32_t qkey, struct xr_srq *srq, uint32_t max_recv_sge)
{
	struct xr_qp_init_attr ia;
	struct xr_qp_attr a;
	struct xr_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = e->cq;
	ia.qp_type = XR_QPT_UD;
	ia.srq = srq;
	ia.cap.max_send_wr = 256;
	ia.cap.max_recv_wr = 256;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = max_recv_sge;
	qp = xr_create_qp(e->pd, &ia);
	if (!qp)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	if (xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY))
		return NULL;
	a.qp_state = XR_QPS_RTR;
	if (xr_modify_qp(qp, &a, XR_QP_STATE))
		return NULL;
	a.qp_state = XR_QPS_RTS;
	a.sq_psn = 500;
	if (xr_modify_qp(qp, &a, XR_QP_STATE | XR_QP_SQ_PSN))
		return NULL;
	return qp;
}

static inline struct xr_qp *d_ud_qp(struct end *e, uint32_t qkey, struct xr_srq *srq)
{
	return d_ud_qp_sge(e, qkey, srq, 4);
}

/* A UC QP on e, optionally on an SRQ, not yet connected. */
static inline struct xr_qp *d_uc_qp(struct end *e, struct xr_srq *srq, unsigned depth)
{
	struct xr_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = e->cq;
	ia.qp_type = XR_QPT_UC;
	ia.srq = srq;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	return xr_create_qp(e->pd, &ia);
}

/* UC: INIT -> RTR -> RTS (xr_qp_connect takes UC's masks, G1, by the
 * QP's type and leaves out RC's timers), remote WRITE only. */
static inline int d_uc_connect(struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx,
			       enum xr_mtu mtu, uint32_t my_psn, uint32_t peer_psn)
{
	const struct h_opts o = { .mtu = mtu, .access = XR_ACCESS_REMOTE_WRITE };

	return h_connect(q, peer, peer_ctx, &o, my_psn, peer_psn);
}

/* An AH on from's device towards to's GID. */
static inline struct xr_ah *d_ah(struct end *from, struct end *to, uint8_t hop_limit, uint8_t tclass)
{
	struct xr_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = hop_limit;
	aa.grh.traffic_class = tclass;
	xr_query_gid(to->ctx, &aa.grh.dgid);
	return xr_create_ah(from->pd, &aa);
}

static inline int d_post_recv(struct xr_qp *qp, struct end *e, size_t off, uint32_t len, uint64_t id)
{
	struct xr_sge sge = { (uintptr_t)(h_data(e) + off), len, e->mr->lkey };
	struct xr_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	return xr_post_recv(qp, &wr, NULL);
}

static inline int d_post_srq(struct xr_srq *srq, struct end *e, size_t off, uint32_t len, uint64_t id)
{
	struct xr_sge sge = { (uintptr_t)(h_data(e) + off), len, e->mr->lkey };
	struct xr_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	return xr_post_srq_recv(srq, &wr, NULL);
}

/* A UD SEND (or SEND_WITH_IMM when imm is non-zero) of len bytes at off. */
static inline int d_ud_send(struct xr_qp *qp, struct end *e, struct xr_ah *ah, uint32_t rqpn, uint32_t qkey,
			    size_t off, uint32_t len, uint32_t imm, uint64_t id)
{
	struct xr_sge sge = { (uintptr_t)(h_data(e) + off), len, e->mr->lkey };
	struct xr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? XR_WR_SEND_WITH_IMM : XR_WR_SEND;
	wr.imm_data = imm;
	wr.send_flags = XR_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = qkey;
	return xr_post_send(qp, &wr, NULL);
}

/* Polls e's CQ for ms: how many completions arrived (at most n). */
static inline int d_collect(struct pair *p, struct end *e, struct xr_wc *wc, int n, unsigned ms)
{
	uint64_t until = h_now_ms() + ms;
	int got = 0;

	while (got < n && h_now_ms() < until) {
		int k;
		h_progress(p);
		k = xr_poll_cq(e->cq, n - got, wc + got);
		if (k > 0)
			got += k;
	}
	return got;
}

/* Runs both engines for ms and returns how many completions e's CQ has. */
static inline int d_quiet(struct pair *p, struct end *e, unsigned ms)
{
	struct xr_wc wc[16];
	return d_collect(p, e, wc, 16, ms);
}

static inline struct h_opts d_opts(bool ipv6)
{
	struct h_opts o;

	memset(&o, 0, sizeof(o));
	o.mode = XR_PROGRESS_INLINE;
	o.mtu = XR_MTU_1024;
	o.buf_len = 1 << 20;
	o.nqp = 1;
	o.timeout = 14;
	o.retry_cnt = 7;
	o.rnr_retry = 7;
	o.min_rnr_timer = 1;
	o.ipv6 = ipv6;
	return o;
}

#endif
