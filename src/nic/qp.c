/* SPDX-License-Identifier: MIT */
/*
 * The QP table behind the QP window: O(1) lookup by QPN, contexts applied
 * atomically by COMMIT under the QP's lock (which the data path holds per
 * packet), validation of what hardware must refuse, and the state
 * machine's allowed transitions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "test_hooks.h"
#include "qp_mem.h"
#include "resp.h"

void (*volatile xr_qp_commit_hook)(void *arg);
void *volatile xr_qp_commit_hook_arg;
void (*volatile xr_rq_doorbell_hook)(void *arg);
void *volatile xr_rq_doorbell_hook_arg;

/* Allowed QP state transitions (IBTA vol.1 10.3, kernel qp_state_table). */
static const uint8_t transitions[7] = {
	[XR_QPS_RESET] = 1u << XR_QPS_RESET | 1u << XR_QPS_INIT,
	[XR_QPS_INIT]  = 1u << XR_QPS_RESET | 1u << XR_QPS_INIT | 1u << XR_QPS_RTR | 1u << XR_QPS_ERR,
	[XR_QPS_RTR]   = 1u << XR_QPS_RESET | 1u << XR_QPS_RTS | 1u << XR_QPS_ERR,
	[XR_QPS_RTS]   = 1u << XR_QPS_RESET | 1u << XR_QPS_RTS | 1u << XR_QPS_SQD | 1u << XR_QPS_ERR,
	[XR_QPS_SQD]   = 1u << XR_QPS_RESET | 1u << XR_QPS_RTS | 1u << XR_QPS_SQD | 1u << XR_QPS_ERR,
	[XR_QPS_SQE]   = 1u << XR_QPS_RESET | 1u << XR_QPS_RTS | 1u << XR_QPS_ERR,
	[XR_QPS_ERR]   = 1u << XR_QPS_RESET | 1u << XR_QPS_ERR,
};

static void shadow_load(struct xr_engine *e, const struct xr_qp_ctx *c)
{
	uint32_t off[XR_QP_SHADOW_WORDS], val[XR_QP_SHADOW_WORDS];
	int n = xr_qp_ctx_encode(c, off, val);

	for (int i = 0; i < n; i++)
		xr_reg_set(e, off[i], val[i]);
	xr_reg_set(e, XR_REG_QP_SQ_CI, c->sq_ci);
	xr_reg_set(e, XR_REG_QP_RQ_CI, c->rq_ci);
	/* Read-only congestion state, as of this READ. */
	xr_reg_set(e, XR_REG_QP_CC_RATE, c->cc_rate);
	xr_reg_set(e, XR_REG_QP_CC_TARGET, c->cc_target);
	xr_reg_set(e, XR_REG_QP_CC_ALPHA, c->cc_alpha);
	xr_reg_set(e, XR_REG_QP_CE_RCVD, c->ce_rcvd);
	xr_reg_set(e, XR_REG_QP_CNP_SENT, c->cnp_sent);
	xr_reg_set(e, XR_REG_QP_CNP_RCVD, c->cnp_rcvd);
}

static void shadow_clear(struct xr_engine *e)
{
	struct xr_qp_ctx zero;

	memset(&zero, 0, sizeof(zero));
	shadow_load(e, &zero);
	xr_reg_set(e, XR_REG_QP_PORTS, xr_reg_by_offset(XR_REG_QP_PORTS)->reset);
	xr_reg_set(e, XR_REG_QP_NET, xr_reg_by_offset(XR_REG_QP_NET)->reset);
	xr_reg_set(e, XR_REG_QP_COMMIT_MASK, XR_QPM_ALL);
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

/* ---- the table: pages of slots ---- */

/* Slot qpn for a commit (under reg_lock), its page allocated on first
 * use: NULL when memory ran out. A slot never used before gets its lock. */
static struct xr_qp *slot_get(struct xr_engine *e, uint32_t qpn)
{
	struct xr_qp *page = e->qp_pages[qpn >> XR_QP_PAGE_SHIFT], *qp;

	if (!page) {
		page = calloc(XR_QP_PAGE, sizeof(*page));
		if (!page)
			return NULL;
		atomic_fetch_add(&e->qp_mem.pages, 1);
		__atomic_store_n(&e->qp_pages[qpn >> XR_QP_PAGE_SHIFT], page, __ATOMIC_RELEASE);
	}
	qp = &page[qpn & (XR_QP_PAGE - 1)];
	if (!qp->qpn) {
		pthread_mutex_init(&qp->lock, NULL);
		qp->qpn = qpn;
	}
	return qp;
}

struct xr_qp *xr_qp_lookup(struct xr_engine *e, uint32_t qpn)
{
	struct xr_qp *qp;

	if (qpn >= XR_MAX_QP)
		return NULL;
	qp = xr_qp_slot(e, qpn);
	return (qp && __atomic_load_n(&qp->in_use, __ATOMIC_ACQUIRE)) ? qp : NULL;
}

/* What a commit must allocate, taken before it changes anything: a failed
 * commit leaves the QP (and an SRQ it names) as it was. */
struct commit_mem {
	struct xr_qp_act *act;       /* the active block resized for a new SQ size */
	struct xr_rd_res *res;       /* more READ/atomic resources */
	uint32_t res_cap;
	bool res_discard;            /* max_dest_rd_atomic changed: the saved results go (A34) */
};

static bool commit_mem_take(struct xr_engine *e, struct xr_qp *qp, const struct xr_qp_ctx *next,
			    struct commit_mem *m)
{
	uint32_t slots = xr_qp_sq_slots(next);
	uint32_t nres = next->max_dest_rd_atomic ? pow2_at_least(next->max_dest_rd_atomic) : 0;
	bool reset = next->state == XR_QPS_RESET;   /* the block goes: nothing in flight stays */

	memset(m, 0, sizeof(*m));
	m->res_discard = qp->in_use && next->max_dest_rd_atomic != qp->ctx.max_dest_rd_atomic;
	if (qp->act && !reset && qp->act->meta_slots != slots && !xr_qp_act_at_rest(qp)) {
		m->act = xr_qp_act_alloc(e, slots);
		if (!m->act)
			return false;
	}
	/* Only a QP that has resources already gets more now; the others
	 * take theirs at their first READ/atomic. */
	if (qp->resp.res && nres != qp->resp.nres && nres > qp->resp.res_cap) {
		m->res = calloc(nres, sizeof(*m->res));
		if (!m->res) {
			xr_count(e, XR_CNT_QP_MEM_FAIL, 1);
			xr_qp_act_release(e, m->act);
			return false;
		}
		m->res_cap = nres;
		atomic_fetch_add(&e->qp_mem.res_bytes, nres * sizeof(*m->res));
	}
	return true;
}

static void commit_mem_drop(struct xr_engine *e, struct commit_mem *m)
{
	xr_qp_act_release(e, m->act);
	if (m->res)
		atomic_fetch_sub(&e->qp_mem.res_bytes, m->res_cap * sizeof(*m->res));
	free(m->res);
}

/* Sizes the engine-private per-QP state to the context just committed,
 * with what commit_mem_take allocated. */
static void runtime_setup(struct xr_engine *e, struct xr_qp *qp, struct commit_mem *m)
{
	uint32_t slots = xr_qp_sq_slots(&qp->ctx);
	uint32_t nres = qp->ctx.max_dest_rd_atomic ? pow2_at_least(qp->ctx.max_dest_rd_atomic) : 0;
	struct xr_resp *rs = &qp->resp;

	if (qp->act && qp->act->meta_slots != slots) {
		struct xr_qp_act *old = qp->act;
		if (m->act) {
			/* The WQE copies, queue and held requests carry over;
			 * the metadata starts over (zero), as it always did. */
			memcpy(m->act, old, sizeof(*old));
			m->act->meta_slots = slots;
			old->held = NULL;
			qp->act = m->act;
			m->act = NULL;
		} else {
			qp->act = NULL;   /* at rest: taken again, resized, at the next need */
		}
		xr_qp_act_release(e, old);
	}
	if (nres != rs->nres || m->res_discard) {
		/* max_dest_rd_atomic changed, even within the same number of
		 * slots: the saved results go (A34); what is still owed was owed
		 * under the old limit and is dropped too. */
		xr_resp_flush(qp);
		if (m->res) {
			xr_qp_res_free(e, qp);
			rs->res = m->res;
			rs->res_cap = m->res_cap;
			m->res = NULL;
		} else if (rs->res) {
			memset(rs->res, 0, rs->res_cap * sizeof(*rs->res));
		}
		rs->nres = nres;
		rs->res_next = 0;
	}
}

/* RESET, destroy, soft reset: progress forgotten, the active block given
 * back; READ/atomic resources are kept (zeroed) by a QP that stays, and
 * freed with one that goes (keep_res false). */
static void runtime_reset(struct xr_engine *e, struct xr_qp *qp, bool keep_res)
{
	struct xr_rd_res *res;
	uint32_t nres = qp->resp.nres, cap;

	xr_qp_act_release(e, qp->act);
	qp->act = NULL;
	if (!keep_res) {
		xr_qp_res_free(e, qp);
		nres = 0;
	}
	res = qp->resp.res;
	cap = qp->resp.res_cap;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.res = res;
	qp->resp.nres = nres;
	qp->resp.res_cap = cap;
	if (res)
		memset(res, 0, cap * sizeof(*res));
	__atomic_store_n(&qp->rq_head, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->rq_ci, 0, __ATOMIC_RELAXED);
	xr_cc_reset(qp);
}

int xr_qp_snapshot(struct xr_engine *e, uint32_t qpn, struct xr_qp_ctx *out)
{
	struct xr_qp *qp = xr_qp_lookup(e, qpn);

	if (!qp)
		return -ENOENT;
	pthread_mutex_lock(&qp->lock);
	*out = qp->ctx;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static bool cq_exists(struct xr_engine *e, uint32_t cqn)
{
	return cqn < XR_MAX_CQ && e->cqs[cqn].in_use;
}

static enum xr_cmd_status validate(struct xr_engine *e, const struct xr_qp_ctx *c)
{
	if (c->state > XR_QPS_ERR)
		return XR_CMD_ST_BAD_STATE;
	if (c->type != XR_QPT_RC && c->type != XR_QPT_UC && c->type != XR_QPT_UD)
		return XR_CMD_ST_BAD_TYPE;
	if (c->state >= XR_QPS_RTR && c->state != XR_QPS_ERR && (c->path_mtu < 1 || c->path_mtu > 5))
		return XR_CMD_ST_BAD_MTU;
	if (c->path_mtu > 5)
		return XR_CMD_ST_BAD_MTU;
	if (c->state != XR_QPS_RESET && (!cq_exists(e, c->sq_cqn) || !cq_exists(e, c->rq_cqn)))
		return XR_CMD_ST_BAD_CQ;
	if (c->sq_log_size > 15 || c->rq_log_size > 15)   /* 16-bit doorbell indexes */
		return XR_CMD_ST_BAD_RANGE;
	if (c->sq_wqe_blocks > XR_WQE_MAX_BLOCKS_LOG || c->rq_wqe_blocks > XR_WQE_MAX_BLOCKS_LOG)
		return XR_CMD_ST_BAD_RANGE;
	/* Responder resources: as many as the response queue can always hold. */
	if (c->max_dest_rd_atomic > XR_MAX_DEST_RD_ATOMIC || c->max_rd_atomic > XR_MAX_DEST_RD_ATOMIC)
		return XR_CMD_ST_BAD_RANGE;
	if (c->srqn >= XR_MAX_SRQ)
		return XR_CMD_ST_BAD_RANGE;
	return XR_CMD_ST_OK;
}

/* Applies the fields a commit mask selects onto the live context. */
static void merge(struct xr_qp_ctx *live, const struct xr_qp_ctx *s, uint32_t mask)
{
#define TAKE(bit, field) do { if (mask & (bit)) live->field = s->field; } while (0)
	TAKE(XR_QPM_STATE, state);
	TAKE(XR_QPM_TYPE, type);
	TAKE(XR_QPM_ACCESS, access);
	TAKE(XR_QPM_PKEY, pkey);
	if (mask & XR_QPM_AV) {
		live->peer_gid = s->peer_gid;
		memcpy(live->peer_mac, s->peer_mac, 6);
		live->ipv6 = s->ipv6;
		live->flow_label = s->flow_label;
		live->src_port = s->src_port;
		live->dst_port = s->dst_port;
		live->traffic_class = s->traffic_class;
		live->hop_limit = s->hop_limit;
		live->pcp = s->pcp;
		live->vlan = s->vlan;
		live->vid = s->vid;
	}
	TAKE(XR_QPM_PATH_MTU, path_mtu);
	TAKE(XR_QPM_TIMEOUT, timeout);
	TAKE(XR_QPM_RETRY_CNT, retry_cnt);
	TAKE(XR_QPM_RNR_RETRY, rnr_retry);
	TAKE(XR_QPM_RQ_PSN, rq_psn);
	TAKE(XR_QPM_MAX_RD_ATOMIC, max_rd_atomic);
	TAKE(XR_QPM_MIN_RNR_TIMER, min_rnr_timer);
	TAKE(XR_QPM_SQ_PSN, sq_psn);
	TAKE(XR_QPM_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	TAKE(XR_QPM_DEST_QPN, dest_qpn);
	TAKE(XR_QPM_MSN, msn);
	TAKE(XR_QPM_PD, pd);
	TAKE(XR_QPM_QKEY, qkey);
	TAKE(XR_QPM_SRQ, srqn);
	TAKE(XR_QPM_RATE_LIMIT, rate_limit);
	if (mask & XR_QPM_CQS) {
		live->sq_cqn = s->sq_cqn;
		live->rq_cqn = s->rq_cqn;
	}
	if (mask & XR_QPM_RINGS) {
		live->sq_base = s->sq_base;
		live->rq_base = s->rq_base;
		live->sq_log_size = s->sq_log_size;
		live->sq_wqe_blocks = s->sq_wqe_blocks;
		live->rq_wqe_blocks = s->rq_wqe_blocks;
		live->rq_log_size = s->rq_log_size;
	}
#undef TAKE
}

/* The receive doorbell reads srqn, rq_log_size and state without the QP's
 * lock (xr_doorbell). A commit or a retire writes the context a word at a
 * time, each an atomic store, so such a read is no data race (8-byte
 * stores against 1- and 4-byte loads: GCC's and clang's plain moves). */
typedef uint64_t __attribute__((may_alias)) ctx_word;

static void ctx_store(struct xr_qp_ctx *dst, const struct xr_qp_ctx *src)
{
	_Static_assert(sizeof(struct xr_qp_ctx) % sizeof(ctx_word) == 0 &&
		       _Alignof(struct xr_qp_ctx) >= _Alignof(ctx_word), "the context is whole words");
	ctx_word *d = (ctx_word *)dst;
	const ctx_word *s = (const ctx_word *)src;

	for (size_t i = 0; i < sizeof(*dst) / sizeof(*d); i++)
		__atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
}

/* In SQD with WQEs started and not all completed: still draining (B28;
 * the SQ_DRAINED event comes when the last one completes, req.c). */
static bool sq_draining(const struct xr_qp *qp)
{
	return qp->ctx.state == XR_QPS_SQD && qp->req.tail != qp->req.started_end;
}

/* A live requester's SQ PSN moved (the verbs set it RTR->RTS only): its
 * next WQE would take the new PSNs while its window counts from the old,
 * and wait for good. The same value, or a QP leaving for RESET or ERR, passes. */
static bool sq_psn_moves(const struct xr_qp *qp, const struct xr_qp_ctx *next)
{
	uint8_t s = qp->ctx.state;

	return (s == XR_QPS_RTS || s == XR_QPS_SQD || s == XR_QPS_SQE) && next->state != XR_QPS_RESET &&
	       next->state != XR_QPS_ERR && (next->sq_psn & XR_PSN_MASK) != qp->ctx.sq_psn;
}

/* What a QP's work hangs on (its rings, CQs, PD and SRQ) is chosen in
 * RESET only: on a live QP, WQEs posted and in flight would be read from
 * another ring, complete on another CQ, or be checked against another
 * PD's keys. A commit that writes the same values (a full mask) passes. */
static bool anchors_change(const struct xr_qp_ctx *a, const struct xr_qp_ctx *b)
{
	return a->sq_base != b->sq_base || a->rq_base != b->rq_base || a->sq_log_size != b->sq_log_size ||
	       a->sq_wqe_blocks != b->sq_wqe_blocks || a->rq_wqe_blocks != b->rq_wqe_blocks ||
	       a->rq_log_size != b->rq_log_size || a->sq_cqn != b->sq_cqn || a->rq_cqn != b->rq_cqn ||
	       a->pd != b->pd || a->srqn != b->srqn;
}

static enum xr_cmd_status qp_commit(struct xr_engine *e, uint32_t qpn)
{
	struct xr_qp_ctx shadow, next;
	struct xr_qp *qp = xr_qp_slot(e, qpn);
	bool is_new = !qp || !qp->in_use;
	uint32_t mask = is_new ? XR_QPM_ALL : xr_reg_get(e, XR_REG_QP_COMMIT_MASK);
	uint32_t old_srqn;
	struct commit_mem mem;
	enum xr_cmd_status st;
	uint8_t old_state;

	xr_qp_ctx_decode(&shadow, xr_reg_shadow_get, e);
	if (is_new && shadow.state != XR_QPS_RESET)
		return XR_CMD_ST_NO_ENTRY;   /* QPs are created in RESET */
	qp = slot_get(e, qpn);
	if (!qp) {
		xr_count(e, XR_CNT_QP_MEM_FAIL, 1);
		return XR_CMD_ST_BUSY;
	}

	pthread_mutex_lock(&qp->lock);
	next = is_new ? shadow : qp->ctx;
	old_state = is_new ? XR_QPS_RESET : qp->ctx.state;
	old_srqn = is_new ? 0 : qp->ctx.srqn;
	merge(&next, &shadow, mask);
	if (!is_new && next.type != qp->ctx.type && old_state != XR_QPS_RESET)
		st = XR_CMD_ST_BAD_TYPE;
	else if (!is_new && !(transitions[old_state] & (1u << next.state)))
		st = XR_CMD_ST_BAD_TRANSITION;
	else if (!is_new && ((old_state != XR_QPS_RESET && anchors_change(&qp->ctx, &next)) || sq_psn_moves(qp, &next)))
		st = XR_CMD_ST_BAD_STATE;
	else if (!is_new && sq_draining(qp) && next.state != XR_QPS_ERR && next.state != XR_QPS_RESET)
		st = XR_CMD_ST_BAD_STATE;   /* B28: SQD is left or changed once drained */
	else
		st = validate(e, &next);
	/* Memory first: nothing below may fail once the SRQ is taken. */
	if (st == XR_CMD_ST_OK && !commit_mem_take(e, qp, &next, &mem))
		st = XR_CMD_ST_BUSY;
	if (st == XR_CMD_ST_OK && next.srqn != old_srqn) {
		if (next.srqn && !xr_srq_attach(e, next.srqn)) {
			st = XR_CMD_ST_NO_ENTRY;   /* no such SRQ */
			commit_mem_drop(e, &mem);
		} else if (old_srqn) {
			xr_srq_detach(e, old_srqn);
		}
	}
	if (st == XR_CMD_ST_OK) {
		next.sq_psn &= XR_PSN_MASK;
		next.rq_psn &= XR_PSN_MASK;
		if (next.state == XR_QPS_RESET) {
			/* RESET forgets progress: the rings start over. */
			next.msn = 0;
			next.sq_ci = next.rq_ci = 0;
		}
		/* And again on leaving RESET: a doorbell of a post that raced
		 * the reset (rung before the host's own index went to 0, landed
		 * after the commit) would otherwise have the QP run WQEs of
		 * the old ring that nobody posted since. The host posts
		 * nothing in RESET. */
		if (next.state == XR_QPS_RESET || old_state == XR_QPS_RESET) {
			__atomic_store_n(&qp->sq_pi, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&qp->rq_pi, 0, __ATOMIC_RELAXED);
		}
		ctx_store(&qp->ctx, &next);
		/* Under the lock, with the context: a pass that takes the QP
		 * after the commit never builds from a template of before it. */
		xr_tx_headers_stale(e);
		if (next.state == XR_QPS_RESET)
			runtime_reset(e, qp, true);
		runtime_setup(e, qp, &mem);
		if (next.state == XR_QPS_SQD && old_state != XR_QPS_SQD)
			qp->req.drained_logged = false;   /* each entry into SQD has its SQ_DRAINED */
		bool to_rts = next.state == XR_QPS_RTS && old_state == XR_QPS_RTR;
		if (to_rts) {
			qp->req.una_psn = next.sq_psn;
			qp->req.sent_end = next.sq_psn;
		}
		/* The retry budgets are the attributes' from the commit that sets
		 * them on (RTR->RTS, SQD->SQD), as rxe_qp_from_attr: not only from
		 * the next ACK. */
		if ((mask & XR_QPM_RETRY_CNT) || to_rts)
			qp->req.retry_left = next.retry_cnt;
		if ((mask & XR_QPM_RNR_RETRY) || to_rts)
			qp->req.rnr_left = next.rnr_retry;
		if (is_new)
			atomic_fetch_add(&e->qp_mem.qps, 1);
		__atomic_store_n(&qp->in_use, true, __ATOMIC_RELEASE);
		/* Flush (ERR), or resume posted work: a QP waiting off the busy
		 * list (datapath.c) may move now (a higher max_rd_atomic). */
		if (next.state >= XR_QPS_RTR)
			xr_qp_mark_busy(e, qp);
	}
	pthread_mutex_unlock(&qp->lock);
	if (__builtin_expect(xr_qp_commit_hook != NULL, 0))
		xr_qp_commit_hook(xr_qp_commit_hook_arg);

	/* Reset, or failed by the host: its buffers may go (flushed WQEs
	 * settle too, but a reset flushes nothing). A new QP sent nothing. */
	if (st == XR_CMD_ST_OK && !is_new && (next.state == XR_QPS_RESET || next.state == XR_QPS_ERR))
		xr_dp_settle(e);
	if (st == XR_CMD_ST_OK && (is_new || old_state != next.state))
		xr_evlog_add(e, XR_EV_QP_STATE, qpn, is_new ? 0xFF : old_state, next.state);
	return st;
}

/* A QP leaves the table (DESTROY, soft reset; caller holds its lock): its
 * slot stays allocated, so the data path never sees freed memory. */
static void qp_retire(struct xr_engine *e, struct xr_qp *qp)
{
	if (qp->in_use)
		atomic_fetch_sub(&e->qp_mem.qps, 1);
	__atomic_store_n(&qp->in_use, false, __ATOMIC_RELEASE);
	ctx_store(&qp->ctx, &(struct xr_qp_ctx){ 0 });
	__atomic_store_n(&qp->sq_pi, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->rq_pi, 0, __ATOMIC_RELAXED);
	runtime_reset(e, qp, false);
}

enum xr_cmd_status xr_qp_cmd(struct xr_engine *e, uint32_t cmd)
{
	uint32_t qpn = xr_reg_get(e, XR_REG_QP_SEL);
	struct xr_qp *qp;
	struct xr_qp_ctx c;

	if (cmd == XR_CMD_CLEAR) {
		shadow_clear(e);
		return XR_CMD_ST_OK;
	}
	if (cmd < XR_CMD_COMMIT || cmd > XR_CMD_DESTROY)
		return XR_CMD_ST_BAD_CMD;
	if (qpn < XR_FIRST_QPN || qpn >= XR_MAX_QP)
		return XR_CMD_ST_BAD_INDEX;
	if (cmd == XR_CMD_COMMIT)
		return qp_commit(e, qpn);
	qp = xr_qp_lookup(e, qpn);
	if (!qp)
		return XR_CMD_ST_NO_ENTRY;
	if (cmd == XR_CMD_READ) {
		pthread_mutex_lock(&qp->lock);
		c = qp->ctx;
		xr_cc_read(e, qp, &c);
		pthread_mutex_unlock(&qp->lock);
		shadow_load(e, &c);
		return XR_CMD_ST_OK;
	}
	if (xr_mcg_qp_attached(e, qpn))
		return XR_CMD_ST_BUSY;   /* o10-2.2.3 (rxe_qp_chk_destroy): detach first */
	pthread_mutex_lock(&qp->lock);
	if (qp->ctx.srqn)
		xr_srq_detach(e, qp->ctx.srqn);
	qp_retire(e, qp);
	pthread_mutex_unlock(&qp->lock);
	xr_dp_settle(e);   /* its buffers may go now */
	xr_evlog_add(e, XR_EV_QP_DESTROY, qpn, 0, 0);
	return XR_CMD_ST_OK;
}

bool xr_qp_any_on_cq(struct xr_engine *e, uint32_t cqn)
{
	for (uint32_t p = 0; p < XR_QP_PAGES; p++) {
		struct xr_qp *page = __atomic_load_n(&e->qp_pages[p], __ATOMIC_ACQUIRE);
		for (uint32_t i = 0; page && i < XR_QP_PAGE; i++) {
			struct xr_qp *qp = &page[i];
			/* Without the QP's lock: the data path stores the state
			 * (to ERR or SQE) beside this, atomically. */
			if (__atomic_load_n(&qp->in_use, __ATOMIC_ACQUIRE) &&
			    (__atomic_load_n(&qp->ctx.sq_cqn, __ATOMIC_RELAXED) == cqn ||
			     __atomic_load_n(&qp->ctx.rq_cqn, __ATOMIC_RELAXED) == cqn) &&
			    __atomic_load_n(&qp->ctx.state, __ATOMIC_RELAXED) != XR_QPS_RESET)
				return true;
		}
	}
	return false;
}

void xr_tables_reset(struct xr_engine *e)
{
	for (uint32_t p = 0; p < XR_QP_PAGES; p++) {
		struct xr_qp *page = e->qp_pages[p];
		for (uint32_t i = 0; page && i < XR_QP_PAGE; i++) {
			struct xr_qp *qp = &page[i];
			if (!qp->qpn)
				continue;   /* never used */
			pthread_mutex_lock(&qp->lock);
			qp_retire(e, qp);
			pthread_mutex_unlock(&qp->lock);
		}
	}
	xr_srq_table_reset(e);
	memset(e->mrs, 0, XR_MAX_MR * sizeof(*e->mrs));
	for (uint32_t i = 0; i < XR_MAX_CQ; i++) {
		pthread_mutex_lock(&e->cqs[i].lock);
		memset(&e->cqs[i].ctx, 0, sizeof(e->cqs[i].ctx));
		e->cqs[i].in_use = false;
		e->cqs[i].ci = 0;
		pthread_mutex_unlock(&e->cqs[i].lock);
	}
	/* Key variants survive: a key from before the reset must stay stale. */
}

void xr_tables_free(struct xr_engine *e)
{
	for (uint32_t p = 0; p < XR_QP_PAGES; p++) {
		struct xr_qp *page = e->qp_pages[p];
		if (!page)
			continue;
		for (uint32_t i = 0; i < XR_QP_PAGE; i++) {
			struct xr_qp *qp = &page[i];
			if (!qp->qpn)
				continue;
			xr_qp_act_release(e, qp->act);
			xr_qp_res_free(e, qp);
			pthread_mutex_destroy(&qp->lock);
		}
		free(page);
		e->qp_pages[p] = NULL;
	}
	for (unsigned l = 0; l < 16; l++)
		while (e->qp_mem.spare[l]) {
			struct xr_qp_act *a = e->qp_mem.spare[l];
			e->qp_mem.spare[l] = a->next_spare;
			atomic_fetch_sub(&e->qp_mem.spare_bytes, xr_qp_act_size(a->meta_slots));
			free(a);
		}
}

void xr_engine_qp_mem(struct xr_engine *e, struct xr_engine_qp_mem *out)
{
	out->qps = atomic_load(&e->qp_mem.qps);
	out->slot_bytes = sizeof(struct xr_qp);
	out->table_bytes = atomic_load(&e->qp_mem.pages) * XR_QP_PAGE * sizeof(struct xr_qp) + sizeof(e->qp_pages);
	out->active = atomic_load(&e->qp_mem.act);
	out->active_bytes = atomic_load(&e->qp_mem.act_bytes);
	out->res_bytes = atomic_load(&e->qp_mem.res_bytes);
	out->spare_bytes = atomic_load(&e->qp_mem.spare_bytes);
}

enum xr_axi_resp xr_doorbell(struct xr_engine *e, uint32_t addr, uint32_t val)
{
	if (addr >= XR_REG_DB_CQ_CI && addr < XR_REG_DB_CQ_CI + 8 * XR_MAX_CQ) {
		uint32_t cqn = (addr - XR_REG_DB_CQ_CI) / 8;
		struct xr_cq *cq = &e->cqs[cqn];
		enum xr_axi_resp r = XR_AXI_OKAY;
		pthread_mutex_lock(&cq->lock);
		if (!cq->in_use || ((addr & 4) && val > 3))
			r = XR_AXI_SLVERR;
		else if (addr & 4) {
			cq->ctx.armed = val & 1 || val & 2;
			cq->ctx.solicited_only = (val & 2) && !(val & 1);
		} else if ((uint32_t)(val - cq->ci) <= cq->ctx.pi - cq->ci) {
			cq->ci = val;
		} else {
			/* Behind the last consumer index, or past what the
			 * engine wrote: the CQ would look full for good (its
			 * completions lost, its QPs failed). */
			r = XR_AXI_SLVERR;
		}
		pthread_mutex_unlock(&cq->lock);
		return r;
	} else {
		uint32_t qpn = (addr - XR_REG_DB_SQ) / 8;
		struct xr_qp *qp = xr_qp_lookup(e, qpn);
		if (!qp || val > 0xFFFF)
			return XR_AXI_SLVERR;
		if (!(addr & 4)) {
			/* The send doorbell takes no lock (a lock pair per post
			 * was a twentieth of a 64-byte sender's time). Release:
			 * the WQEs written before it go with it. The fence
			 * orders the store before the busy flag's load; the
			 * pass has its twin between clearing the flag and
			 * reading sq_pi (busy_pop): either the pass sees the
			 * new index, or this sees the flag clear and queues
			 * the QP. */
			/* The count before the index (release orders them):
			 * the same value rung again is read afresh (req.c).
			 * Not an atomic add: the driver rings under its SQ
			 * lock, and a lost count only re-reads a value. */
			__atomic_store_n(&qp->sq_rings, (uint16_t)(__atomic_load_n(&qp->sq_rings, __ATOMIC_RELAXED) + 1),
					 __ATOMIC_RELAXED);
			__atomic_store_n(&qp->sq_pi, (uint16_t)val, __ATOMIC_RELEASE);
			atomic_thread_fence(memory_order_seq_cst);
			xr_qp_mark_busy(e, qp);
		} else {
			/* The receive doorbell takes no lock either (a lock pair
			 * per posted receive was a sixteenth of a 64-byte SEND
			 * receiver's time). Its checks read the engine's indexes
			 * of the moment: a receive's slot is freed before its CQE
			 * goes out (xr_complete_recv), so a host posting into
			 * slots its completions freed is never refused; an index
			 * behind a WQE taken meanwhile gets past, and the engine
			 * reads it as nothing posted (xr_qp_rq_pi). The indexes
			 * and the data path's moves to ERR are atomic stores; a
			 * commit, a destroy and a soft reset store the context
			 * a word at a time (ctx_store), and a commit to ERR
			 * queues the QP itself. */
			if (__atomic_load_n(&qp->ctx.srqn, __ATOMIC_RELAXED))
				return XR_AXI_SLVERR;   /* its receive WQEs come from the SRQ */
			if (!xr_ring_pi_fits((uint16_t)val, __atomic_load_n(&qp->rq_head, __ATOMIC_RELAXED),
					     __atomic_load_n(&qp->rq_ci, __ATOMIC_RELAXED),
					     __atomic_load_n(&qp->ctx.rq_log_size, __ATOMIC_RELAXED)))
				return XR_AXI_SLVERR;
			__atomic_store_n(&qp->rq_pi, (uint16_t)val, __ATOMIC_RELEASE);
			if (__builtin_expect(xr_rq_doorbell_hook != NULL, 0))
				xr_rq_doorbell_hook(xr_rq_doorbell_hook_arg);
			/* A receive is work only to be flushed (qp_has_work):
			 * otherwise waking the progress thread per posted
			 * receive costs a program that reposts hundreds of them
			 * a context switch each. The fence orders the store
			 * before the state's load; the flush has its twin
			 * (xr_qp_flush): either it sees this index, or this sees
			 * ERR and queues the QP to be flushed again. */
			atomic_thread_fence(memory_order_seq_cst);
			if (__atomic_load_n(&qp->ctx.state, __ATOMIC_RELAXED) == XR_QPS_ERR)
				xr_qp_mark_busy(e, qp);
		}
		xr_evlog_add(e, XR_EV_WQE_POSTED, qpn, (addr & 4) ? 1 : 0, val);
		return XR_AXI_OKAY;
	}
}
