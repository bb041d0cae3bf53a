/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: create, modify (the RC, UC and UD transition tables and
 * attribute checks), query and destroy.
 */
#include <time.h>

#include "drv.h"

/* ---- QP ---- */

static uint32_t log2_at_least(uint32_t n)
{
	uint32_t l = 0;
	while ((1u << l) < n)
		l++;
	return l;
}

/* The smallest send WQE slot whose body holds the SGEs and the inline
 * data asked for (ring.h). */
static uint8_t wqe_blocks_log(const struct xr_qp_cap *c)
{
	uint32_t need = c->max_send_sge * (uint32_t)sizeof(struct xr_sge);
	uint8_t log = 0;

	if (c->max_inline_data > need)
		need = c->max_inline_data;
	while (XR_WQE_BODY(log) < need)
		log++;
	return log;
}

uint32_t xr_qp_num(const struct xr_qp *qp)
{
	return qp->qpn;
}

/* The largest IB MTU a UD packet (IPv6, UDP, BTH, DETH, ImmDt, ICRC) fits
 * in on this link: the port's active MTU (D1). */
/* An IBV_RATE_* value (ah_attr.static_rate) in Mb/s; 0 (and unknown
 * values) mean no cap. */
uint32_t xr_static_rate_mbps(uint8_t rate)
{
	static const uint32_t mbps[] = {
		[2] = 2500, [3] = 10000, [4] = 30000, [5] = 5000, [6] = 20000, [7] = 40000, [8] = 60000,
		[9] = 80000, [10] = 120000, [11] = 14000, [12] = 56000, [13] = 112000, [14] = 168000,
		[15] = 25000, [16] = 100000, [17] = 200000, [18] = 300000, [19] = 28000, [20] = 50000,
		[21] = 400000, [22] = 600000,
	};
	return rate < sizeof(mbps) / sizeof(mbps[0]) ? mbps[rate] : 0;
}

static uint8_t ud_mtu(const struct xr_context *ctx)
{
	uint32_t room = ctx->link && ctx->link->mtu ? ctx->link->mtu : 1500;
	uint8_t m = XR_MTU_4096;

	room = room > 76 ? room - 76 : 0;
	while (m > XR_MTU_256 && (128u << m) > room)
		m--;
	return m;
}

struct xr_qp *xr_create_qp(struct xr_pd *pd, struct xr_qp_init_attr *attr)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_qp *qp;
	uint32_t st = 0;
	int rc;

	if (!ctx || !attr || !attr->send_cq || !attr->recv_cq ||
	    (attr->qp_type != XR_QPT_RC && attr->qp_type != XR_QPT_UC && attr->qp_type != XR_QPT_UD) ||
	    (attr->srq && attr->srq->ctx != ctx) ||
	    attr->cap.max_send_wr > (1u << MAX_QUEUE_LOG) || attr->cap.max_send_sge > XR_WQE_MAX_SGE ||
	    (!attr->srq && (attr->cap.max_recv_wr > (1u << MAX_QUEUE_LOG) || attr->cap.max_recv_sge > XR_RWQE_MAX_SGE)) ||
	    attr->cap.max_inline_data > XR_WQE_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = ctx;
	qp->pd = pd;
	qp->init = *attr;
	if (attr->srq) {
		/* Its receive WQEs come from the SRQ: the receive caps are
		 * ignored (ibv_create_qp(3)), and read back as 0. */
		qp->init.cap.max_recv_wr = 0;
		qp->init.cap.max_recv_sge = 0;
	}
	/* A ring has at least two entries: the context's log size 0 means
	 * "no queue" to the engine (ibv_rc_pingpong asks for one send WR). */
	qp->sq_log = log2_at_least(attr->cap.max_send_wr < 2 ? 2 : attr->cap.max_send_wr);
	qp->rq_log = log2_at_least(qp->init.cap.max_recv_wr < 2 ? 2 : qp->init.cap.max_recv_wr);   /* SRQ: 2, unused */
	qp->sq_blocks_log = wqe_blocks_log(&attr->cap);
	qp->sq = aligned_alloc(64, (size_t)XR_WQE_SIZE << (qp->sq_log + qp->sq_blocks_log));
	/* A QP on an SRQ posts no receive WQE of its own: one-block slots. */
	qp->rq_blocks_log = attr->srq ? 0 : xr_rwqe_blocks_log(qp->init.cap.max_recv_sge);
	qp->rq = aligned_alloc(64, (size_t)XR_RWQE_SIZE << (qp->rq_log + qp->rq_blocks_log));
	if (!qp->sq || !qp->rq) {
		free(qp->sq);
		free(qp->rq);
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&qp->sq_lock, NULL);
	pthread_mutex_init(&qp->rq_lock, NULL);
	qp->init.cap.max_send_wr = 1u << qp->sq_log;
	qp->init.cap.max_recv_wr = attr->srq ? 0 : 1u << qp->rq_log;
	attr->cap = qp->init.cap;

	memset(&qp->hw, 0, sizeof(qp->hw));
	qp->hw.state = qp->post_state = XR_QPS_RESET;
	qp->hw.type = (uint8_t)attr->qp_type;
	qp->hw.srqn = attr->srq ? attr->srq->srqn : 0;
	if (attr->qp_type == XR_QPT_UD)
		qp->hw.path_mtu = ud_mtu(ctx);   /* UD has no path: the port's MTU */
	qp->hw.sq_cqn = attr->send_cq->cqn;
	qp->hw.rq_cqn = attr->recv_cq->cqn;
	qp->hw.pd = pd->pdn;
	qp->hw.sq_base = (uintptr_t)qp->sq;
	qp->hw.rq_base = (uintptr_t)qp->rq;
	qp->hw.sq_log_size = (uint8_t)qp->sq_log;
	qp->hw.sq_wqe_blocks = qp->sq_blocks_log;
	qp->hw.rq_wqe_blocks = qp->rq_blocks_log;
	qp->hw.rq_log_size = (uint8_t)qp->rq_log;
	qp->hw.pkey = XR_DEFAULT_PKEY;
	qp->hw.dst_port = XR_ROCE_UDP_PORT;

	drv_lock(&ctx->lock);
	if (ctx->nfree_qpn)
		qp->qpn = ctx->free_qpn[--ctx->nfree_qpn];
	else if (ctx->next_qpn < XR_MAX_QP)
		qp->qpn = ctx->next_qpn++;
	rc = qp->qpn ? xr_regio_write(ctx->regs, XR_REG_QP_COMMIT_MASK, XR_QPM_ALL) ||
		       xr_regio_qp_commit(ctx->regs, qp->qpn, &qp->hw, &st) : -ENOSPC;
	if (!rc)
		__atomic_store_n(&ctx->qp_by_num[qp->qpn], qp, __ATOMIC_RELEASE);
	else if (qp->qpn)
		push_free(&ctx->free_qpn, &ctx->nfree_qpn, qp->qpn);   /* not used: the next QP takes it */
	if (!rc && attr->srq)
		attr->srq->nqps++;
	drv_unlock(&ctx->lock);
	if (rc) {
		pthread_mutex_destroy(&qp->sq_lock);
		pthread_mutex_destroy(&qp->rq_lock);
		free(qp->sq);
		free(qp->rq);
		free(qp);
		/* The engine is out of memory (BUSY) or refused the context. */
		errno = rc == -ENOSPC ? ENOSPC : st == XR_CMD_ST_BUSY ? ENOMEM : EINVAL;
		return NULL;
	}
	return qp;
}

/* ibv_modify_qp's transition table for RC (IBTA 10.3; kernel qp_state_table). */
struct transition {
	bool valid;
	uint32_t req, opt;
};

static const struct transition rc_table[7][7] = {
	[XR_QPS_RESET] = {
		[XR_QPS_RESET] = { true, 0, 0 },
		[XR_QPS_INIT] = { true, XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS, 0 },
	},
	[XR_QPS_INIT] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_INIT] = { true, 0, XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS },
		[XR_QPS_RTR] = { true, XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
				       XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER,
				 XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX },
	},
	[XR_QPS_RTR] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY | XR_QP_SQ_PSN |
				       XR_QP_MAX_QP_RD_ATOMIC,
				 XR_QP_CUR_STATE | XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_MIN_RNR_TIMER |
				       XR_QP_PATH_MIG_STATE },
	},
	[XR_QPS_RTS] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_ACCESS_FLAGS | XR_QP_ALT_PATH |
					  XR_QP_PATH_MIG_STATE | XR_QP_MIN_RNR_TIMER },
		[XR_QPS_SQD] = { true, 0, XR_QP_EN_SQD_ASYNC_NOTIFY },
	},
	[XR_QPS_SQD] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS |
					  XR_QP_MIN_RNR_TIMER | XR_QP_PATH_MIG_STATE },
		[XR_QPS_SQD] = { true, 0, XR_QP_PKEY_INDEX | XR_QP_AV | XR_QP_MAX_QP_RD_ATOMIC |
					  XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_PORT | XR_QP_ALT_PATH |
					  XR_QP_ACCESS_FLAGS | XR_QP_TIMEOUT | XR_QP_RETRY_CNT |
					  XR_QP_RNR_RETRY | XR_QP_MIN_RNR_TIMER | XR_QP_PATH_MIG_STATE },
	},
	[XR_QPS_SQE] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
	},
	[XR_QPS_ERR] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
	},
};

/* UC (transport-rules G1): no RDMA READ/atomic attributes, no timers. */
static const struct transition uc_table[7][7] = {
	[XR_QPS_RESET] = {
		[XR_QPS_RESET] = { true, 0, 0 },
		[XR_QPS_INIT] = { true, XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS, 0 },
	},
	[XR_QPS_INIT] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_INIT] = { true, 0, XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS },
		[XR_QPS_RTR] = { true, XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN,
				 XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX },
	},
	[XR_QPS_RTR] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, XR_QP_SQ_PSN, XR_QP_CUR_STATE | XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS |
							     XR_QP_PATH_MIG_STATE },
	},
	[XR_QPS_RTS] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_ACCESS_FLAGS | XR_QP_ALT_PATH |
					  XR_QP_PATH_MIG_STATE },
		[XR_QPS_SQD] = { true, 0, XR_QP_EN_SQD_ASYNC_NOTIFY },
	},
	[XR_QPS_SQD] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS |
					  XR_QP_PATH_MIG_STATE },
		[XR_QPS_SQD] = { true, 0, XR_QP_AV | XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX |
					  XR_QP_PATH_MIG_STATE },
	},
	[XR_QPS_SQE] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_ACCESS_FLAGS },
	},
	[XR_QPS_ERR] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
	},
};

/* UD (G1): the Q_Key instead of an address, access flags and a path. */
static const struct transition ud_table[7][7] = {
	[XR_QPS_RESET] = {
		[XR_QPS_RESET] = { true, 0, 0 },
		[XR_QPS_INIT] = { true, XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY, 0 },
	},
	[XR_QPS_INIT] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_INIT] = { true, 0, XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY },
		[XR_QPS_RTR] = { true, 0, XR_QP_PKEY_INDEX | XR_QP_QKEY },
	},
	[XR_QPS_RTR] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, XR_QP_SQ_PSN, XR_QP_CUR_STATE | XR_QP_QKEY },
	},
	[XR_QPS_RTS] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_QKEY },
		[XR_QPS_SQD] = { true, 0, XR_QP_EN_SQD_ASYNC_NOTIFY },
	},
	[XR_QPS_SQD] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_QKEY },
		[XR_QPS_SQD] = { true, 0, XR_QP_PKEY_INDEX | XR_QP_QKEY },
	},
	[XR_QPS_SQE] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
		[XR_QPS_RTS] = { true, 0, XR_QP_CUR_STATE | XR_QP_QKEY },
	},
	[XR_QPS_ERR] = {
		[XR_QPS_RESET] = { true, 0, 0 }, [XR_QPS_ERR] = { true, 0, 0 },
	},
};

static int check_modify(const struct xr_qp *qp, const struct xr_qp_attr *a, int mask)
{
	unsigned cur = (mask & XR_QP_CUR_STATE) ? a->cur_qp_state : qp->hw.state;
	unsigned next = (mask & XR_QP_STATE) ? a->qp_state : cur;
	const struct transition *t;

	if (cur > XR_QPS_ERR || next > XR_QPS_ERR || cur != qp->hw.state)
		return EINVAL;
	t = qp->hw.type == XR_QPT_UD ? &ud_table[cur][next] :
	    qp->hw.type == XR_QPT_UC ? &uc_table[cur][next] : &rc_table[cur][next];
	/* The rate cap may change whenever the QP can send (as mlx5 takes
	 * IB_QP_RATE_LIMIT into RTS and in RTS). */
	uint32_t rate = next >= XR_QPS_RTR && next <= XR_QPS_SQD ? XR_QP_RATE_LIMIT : 0;
	if (!t->valid || (mask & t->req) != t->req ||
	    (mask & ~(t->req | t->opt | XR_QP_STATE | rate)))
		return EINVAL;
	if ((mask & XR_QP_ALT_PATH) || ((mask & XR_QP_AV) && !a->ah_attr.is_global))
		return EINVAL;   /* RoCE: no alternate path; the address needs a GRH */
	/* G3: no larger than the link carries (frames past its MTU are lost). */
	if ((mask & XR_QP_PATH_MTU) && (a->path_mtu < XR_MTU_256 || a->path_mtu > xr_active_mtu(qp->ctx)))
		return EINVAL;
	if ((mask & XR_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if (((mask & XR_QP_RETRY_CNT) && a->retry_cnt > 7) || ((mask & XR_QP_RNR_RETRY) && a->rnr_retry > 7))
		return EINVAL;
	if ((mask & XR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if (((mask & XR_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > XR_MAX_RD_ATOMIC) ||
	    ((mask & XR_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > XR_MAX_RD_ATOMIC))
		return EINVAL;
	if ((mask & XR_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & XR_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & XR_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~0xFu))
		return EINVAL;
	if ((mask & XR_QP_DEST_QPN) && a->dest_qp_num > XR_QPN_MASK)
		return EINVAL;
	/* A privileged Q_Key (bit 31) needs privilege we do not grant (D2). */
	if ((mask & XR_QP_QKEY) && (a->qkey & 0x80000000u))
		return EPERM;
	return 0;
}

/* The context as committed, under ctx->lock. Posts check only the state,
 * through post_state: a RESET stores it holding both queue locks (it
 * zeroes the rings), any other state without them. Handlers a post's
 * doorbell raises run after the post let go of its queue's lock
 * (drv_lock), so they may move or reset the QP. */
static void hw_set(struct xr_qp *qp, const struct xr_qp_ctx *c)
{
	qp->hw = *c;
	__atomic_store_n(&qp->post_state, c->state, __ATOMIC_RELEASE);
}

/* Under both CQs' locks (xr_cq_lock_pair). */
static void mark_stale(struct xr_qp *qp)
{
	xr_cq_mark_stale_locked(qp->init.send_cq, qp->qpn);
	if (qp->init.recv_cq != qp->init.send_cq)
		xr_cq_mark_stale_locked(qp->init.recv_cq, qp->qpn);
}

int xr_modify_qp(struct xr_qp *qp, struct xr_qp_attr *a, int mask)
{
	struct xr_context *ctx;
	struct xr_qp_ctx next;
	uint32_t commit_mask = 0, st;
	uint16_t was[4] = { 0 };   /* the rings' indexes before a RESET */
	bool reset;
	int rc;

	if (!qp || !a)
		return EINVAL;
	ctx = qp->ctx;
	drv_lock(&ctx->lock);
	{
		/* The engine moves a QP to ERR or SQE by itself: judge the
		 * modify from the state it is in, not the one last set here. */
		struct xr_qp_ctx now, moved;
		if (!xr_regio_qp_read(ctx->regs, qp->qpn, &now) && now.state != qp->hw.state) {
			moved = qp->hw;
			moved.state = now.state;
			hw_set(qp, &moved);
		}
	}
	rc = check_modify(qp, a, mask);
	if (rc)
		goto out;
	next = qp->hw;
	if (mask & XR_QP_STATE) {
		next.state = (uint8_t)a->qp_state;
		commit_mask |= XR_QPM_STATE;
	}
	if (mask & XR_QP_ACCESS_FLAGS) {
		next.access = (uint8_t)a->qp_access_flags;
		commit_mask |= XR_QPM_ACCESS;
	}
	if (mask & XR_QP_AV) {
		const struct xr_global_route *g = &a->ah_attr.grh;
		next.peer_gid = g->dgid;
		next.ipv6 = !xr_gid_is_ipv4(&g->dgid);
		next.flow_label = g->flow_label & 0xFFFFF;
		next.hop_limit = g->hop_limit;
		next.traffic_class = g->traffic_class;
		/* The neighbour's MAC, as the kernel resolves it for RoCE. */
		if (xr_link_resolve(ctx->link, &g->dgid, next.peer_mac)) {
			rc = EHOSTUNREACH;
			goto out;
		}
		commit_mask |= XR_QPM_AV;
	}
	if (mask & (XR_QP_AV | XR_QP_RATE_LIMIT)) {
		/* Two caps, kept apart as the verbs keep them (the AV's
		 * static_rate, the QP's rate_limit): the engine paces at the
		 * lower one that is set. */
		uint32_t s = xr_static_rate_mbps((mask & XR_QP_AV) ? a->ah_attr.static_rate : qp->static_rate);
		uint64_t l = ((uint64_t)((mask & XR_QP_RATE_LIMIT) ? a->rate_limit : qp->rate_limit) + 999) / 1000;
		uint64_t cap = s && (!l || s < l) ? s : l;
		next.rate_limit = cap > 0xFFFFFF ? 0xFFFFFF : (uint32_t)cap;
		commit_mask |= XR_QPM_RATE_LIMIT;
	}
	if (mask & XR_QP_PATH_MTU) {
		next.path_mtu = (uint8_t)a->path_mtu;
		commit_mask |= XR_QPM_PATH_MTU;
	}
	if (mask & XR_QP_TIMEOUT) {
		next.timeout = a->timeout;
		commit_mask |= XR_QPM_TIMEOUT;
	}
	if (mask & XR_QP_RETRY_CNT) {
		next.retry_cnt = a->retry_cnt;
		commit_mask |= XR_QPM_RETRY_CNT;
	}
	if (mask & XR_QP_RNR_RETRY) {
		next.rnr_retry = a->rnr_retry;
		commit_mask |= XR_QPM_RNR_RETRY;
	}
	if (mask & XR_QP_RQ_PSN) {
		next.rq_psn = a->rq_psn & XR_PSN_MASK;
		commit_mask |= XR_QPM_RQ_PSN;
	}
	if (mask & XR_QP_SQ_PSN) {
		next.sq_psn = a->sq_psn & XR_PSN_MASK;
		commit_mask |= XR_QPM_SQ_PSN;
	}
	if (mask & XR_QP_MAX_QP_RD_ATOMIC) {
		next.max_rd_atomic = a->max_rd_atomic;
		commit_mask |= XR_QPM_MAX_RD_ATOMIC;
	}
	if (mask & XR_QP_MAX_DEST_RD_ATOMIC) {
		next.max_dest_rd_atomic = a->max_dest_rd_atomic;
		commit_mask |= XR_QPM_MAX_DEST_RD_ATOMIC;
	}
	if (mask & XR_QP_MIN_RNR_TIMER) {
		next.min_rnr_timer = a->min_rnr_timer;
		commit_mask |= XR_QPM_MIN_RNR_TIMER;
	}
	if (mask & XR_QP_DEST_QPN) {
		next.dest_qpn = a->dest_qp_num;
		commit_mask |= XR_QPM_DEST_QPN;
	}
	if (mask & XR_QP_QKEY) {
		next.qkey = a->qkey;
		commit_mask |= XR_QPM_QKEY;
	}
	reset = next.state == XR_QPS_RESET;
	if (reset) {
		/* Back to RESET: the rings start over on both sides. The CQs
		 * stay locked until the old life's completions are marked: a
		 * poller in between would move the new indexes by an old slot.
		 * The queues stay locked through the commit: a commit that
		 * fails leaves the engine's indexes as they were, and the
		 * driver's go back to them, no post having moved them. */
		xr_cq_lock_pair(qp->init.send_cq, qp->init.recv_cq);
		drv_lock(&qp->sq_lock);
		drv_lock(&qp->rq_lock);
		was[0] = qp->sq_pi, was[1] = qp->sq_ci, was[2] = qp->rq_pi, was[3] = qp->rq_ci;
		qp->sq_pi = qp->sq_ci = qp->rq_pi = qp->rq_ci = 0;
	}
	rc = xr_regio_write(ctx->regs, XR_REG_QP_COMMIT_MASK, commit_mask) ||
	     xr_regio_qp_commit(ctx->regs, qp->qpn, &next, &st) ? EINVAL : 0;
	if (reset && !rc)
		mark_stale(qp);
	else if (reset)
		qp->sq_pi = was[0], qp->sq_ci = was[1], qp->rq_pi = was[2], qp->rq_ci = was[3];
	if (!rc) {
		hw_set(qp, &next);
		if (mask & XR_QP_AV)
			qp->static_rate = a->ah_attr.static_rate;
		if (mask & XR_QP_RATE_LIMIT)
			qp->rate_limit = a->rate_limit;
	}
	if (reset) {
		drv_unlock(&qp->rq_lock);
		drv_unlock(&qp->sq_lock);
		xr_cq_unlock_pair(qp->init.send_cq, qp->init.recv_cq);
	}
out:
	drv_unlock(&ctx->lock);
	return rc;
}

int xr_query_qp(struct xr_qp *qp, struct xr_qp_attr *a, int mask, struct xr_qp_init_attr *init)
{
	struct xr_qp_ctx c;
	uint32_t rate_limit;
	uint8_t static_rate;
	int rc;

	(void)mask;
	if (!qp || !a)
		return EINVAL;
	drv_lock(&qp->ctx->lock);
	rc = xr_regio_qp_read(qp->ctx->regs, qp->qpn, &c) ? EIO : 0;
	rate_limit = qp->rate_limit;   /* a modify's, under the lock */
	static_rate = qp->static_rate;
	drv_unlock(&qp->ctx->lock);
	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->qp_state = a->cur_qp_state = (enum xr_qp_state)c.state;
	a->path_mtu = (enum xr_mtu)c.path_mtu;
	a->rq_psn = c.rq_psn;
	a->sq_psn = c.sq_psn;
	a->dest_qp_num = c.dest_qpn;
	a->qkey = c.qkey;
	a->qp_access_flags = c.access;
	a->cap = qp->init.cap;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.dgid = c.peer_gid;
	a->ah_attr.grh.flow_label = c.flow_label;
	a->ah_attr.static_rate = static_rate;
	a->ah_attr.grh.hop_limit = c.hop_limit;
	a->ah_attr.grh.traffic_class = c.traffic_class;
	a->max_rd_atomic = c.max_rd_atomic;
	a->max_dest_rd_atomic = c.max_dest_rd_atomic;
	a->min_rnr_timer = c.min_rnr_timer;
	a->port_num = 1;
	a->timeout = c.timeout;
	a->retry_cnt = c.retry_cnt;
	a->rnr_retry = c.rnr_retry;
	a->rate_limit = rate_limit;
	if (init)
		*init = qp->init;
	return 0;
}

/* A NIC's ACK leaves before the program can react to the receive it
 * answers; here it may still wait in the engine when a program that saw
 * its last completion destroys the QP (ibv_rc_pingpong does, at once).
 * Let the engine finish what it is doing first, briefly and bounded. */
static void settle(struct xr_context *ctx)
{
	struct timespec nap = { 0, 50000 };

	for (int i = 0, quiet = 0; i < 200 && quiet < 3; i++) {
		if (xr_engine_progress(ctx->engine) > 0) {
			quiet = 0;
			continue;
		}
		quiet++;
		nanosleep(&nap, NULL);   /* the engine's thread may be mid-pass */
	}
}

int xr_destroy_qp(struct xr_qp *qp)
{
	struct xr_context *ctx;
	uint32_t busy = 0;
	uint8_t st;

	if (!qp)
		return EINVAL;
	ctx = qp->ctx;
	st = __atomic_load_n(&qp->post_state, __ATOMIC_ACQUIRE);   /* hw is ctx->lock's */
	if (st == XR_QPS_RTR || st == XR_QPS_RTS || st == XR_QPS_SQD)
		settle(ctx);
	drv_lock(&ctx->lock);
	if (xr_regio_qp_destroy(ctx->regs, qp->qpn) > 0 && !xr_regio_read(ctx->regs, XR_REG_QP_CMD_STATUS, &busy) &&
	    busy == XR_CMD_ST_BUSY) {
		drv_unlock(&ctx->lock);
		return EBUSY;   /* attached to a multicast group: it stays */
	}
	xr_cq_lock_pair(qp->init.send_cq, qp->init.recv_cq);
	mark_stale(qp);   /* the number may be a new QP's next */
	xr_cq_unlock_pair(qp->init.send_cq, qp->init.recv_cq);
	__atomic_store_n(&ctx->qp_by_num[qp->qpn], NULL, __ATOMIC_RELEASE);
	push_free(&ctx->free_qpn, &ctx->nfree_qpn, qp->qpn);
	if (qp->init.srq)
		qp->init.srq->nqps--;
	drv_unlock(&ctx->lock);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_mutex_destroy(&qp->rq_lock);
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return 0;
}
