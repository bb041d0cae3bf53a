/* SPDX-License-Identifier: MIT */
/*
 * The host driver: verbs on top of the register file, doorbells and
 * host-memory rings only. It validates what libibverbs' providers
 * validate (modify_qp's state machine and masks, WR shapes), keeps the
 * rings, and translates CQEs into work completions.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../nic/regmap_internal.h"
#include "xroce/regio.h"
#include "xroce/verbs.h"

#define PAGE_SHIFT 12
#define PAGE_SIZE (1u << PAGE_SHIFT)
#define MAX_QUEUE_LOG 15

struct xr_context {
	struct xr_engine *engine;
	struct xr_regio *regs;
	struct xr_link *link;
	pthread_mutex_t lock;          /* register sequences and ID allocation */
	enum xr_progress_mode progress;
	xr_gid gid;
	uint32_t next_pd, next_cqn, next_mr, next_qpn;
	uint32_t *free_mr, nfree_mr;
	uint32_t *free_qpn, nfree_qpn;
	struct xr_qp **qp_by_num;      /* CQEs name QPs by number */
	struct xr_cq **cq_by_num;      /* interrupts name CQs by number */
	uint32_t ev_next;              /* next event log sequence to look at */
};

struct xr_pd {
	struct xr_context *ctx;
	uint32_t pdn;
};

struct xr_cq {
	struct xr_context *ctx;
	uint32_t cqn;
	struct xr_hw_cqe *ring;
	uint32_t log_size, ci;
	int efd;
	pthread_mutex_t lock;
};

struct xr_qp {
	struct xr_context *ctx;
	struct xr_pd *pd;
	uint32_t qpn;
	struct xr_qp_init_attr init;
	struct xr_qp_ctx hw;           /* the context as last committed */
	struct xr_hw_wqe *sq;
	struct xr_hw_rwqe *rq;
	uint32_t sq_log, rq_log;
	uint16_t sq_pi, sq_ci, rq_pi, rq_ci;
	pthread_mutex_t sq_lock, rq_lock;
};

/* ---- device ---- */

static void on_irq(void *arg, uint32_t cqn)
{
	struct xr_context *ctx = arg;
	struct xr_cq *cq = cqn < XR_MAX_CQ ? __atomic_load_n(&ctx->cq_by_num[cqn], __ATOMIC_ACQUIRE) : NULL;
	uint64_t one = 1;

	if (cq && write(cq->efd, &one, sizeof(one)) < 0) {
		/* counter saturated: the waiter is awake anyway */
	}
}

static int wr(struct xr_context *ctx, uint32_t off, uint32_t v)
{
	return xr_regio_write(ctx->regs, off, v) ? EIO : 0;
}

struct xr_context *xr_open_device(struct xr_link *link, const struct xr_device_opts *opts)
{
	struct xr_context *ctx;
	uint32_t low, high;
	int err = 0;

	if (!link || !opts || !opts->addr) {
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	if (xr_gid_parse(&ctx->gid, opts->addr)) {
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->qp_by_num = calloc(XR_MAX_QP, sizeof(*ctx->qp_by_num));
	ctx->cq_by_num = calloc(XR_MAX_CQ, sizeof(*ctx->cq_by_num));
	ctx->engine = xr_engine_create();
	ctx->regs = ctx->engine ? xr_regio_engine(ctx->engine) : NULL;
	if (!ctx->qp_by_num || !ctx->cq_by_num || !ctx->regs) {
		err = ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->link = link;
	ctx->progress = opts->progress;
	ctx->next_pd = ctx->next_cqn = ctx->next_mr = 1;
	ctx->next_qpn = 0x11;   /* low QPNs stay free, as on real devices */
	if (xr_engine_attach_link(ctx->engine, link)) {
		err = EBUSY;
		goto fail;
	}
	/* A link just brought up may take a moment to get its carrier. */
	for (int i = 0; i < 40 && !link->ops->is_up(link); i++)
		usleep(50000);
	xr_engine_set_link_up(ctx->engine, link->ops->is_up(link));
	xr_engine_set_irq(ctx->engine, on_irq, ctx);

	/* Bring-up (seed 000 §3.3): in reset, addresses, then enable. */
	xr_mac_to_regs(link->mac, &low, &high);
	err = wr(ctx, XR_REG_CTRL, XR_CTRL_SOFT_RESET) || wr(ctx, XR_REG_MAC_LOW, low) ||
	      wr(ctx, XR_REG_MAC_HIGH, high);
	if (!err && xr_gid_is_ipv4(&ctx->gid))
		err = wr(ctx, XR_REG_IP_ADDR, xr_gid_to_ipv4(&ctx->gid));
	for (int i = 0; !err && !xr_gid_is_ipv4(&ctx->gid) && i < 4; i++)
		err = wr(ctx, XR_REG_IPV6_ADDR_0 + 4u * (unsigned)i,
			 (uint32_t)ctx->gid.raw[4 * i] << 24 | (uint32_t)ctx->gid.raw[4 * i + 1] << 16 |
			 (uint32_t)ctx->gid.raw[4 * i + 2] << 8 | ctx->gid.raw[4 * i + 3]);
	if (!err)
		err = wr(ctx, XR_REG_CTRL, XR_CTRL_ENABLE | (opts->retry7_forever ? XR_CTRL_RETRY7_FOREVER : 0)) ?
		      ENETDOWN : 0;
	if (!err && ctx->progress == XR_PROGRESS_THREAD)
		err = -xr_engine_start_thread(ctx->engine);
	if (err)
		goto fail;
	return ctx;
fail:
	xr_regio_close(ctx->regs);
	xr_engine_destroy(ctx->engine);
	free(ctx->qp_by_num);
	free(ctx->cq_by_num);
	free(ctx);
	errno = err;
	return NULL;
}

int xr_close_device(struct xr_context *ctx)
{
	if (!ctx)
		return EINVAL;
	xr_engine_stop_thread(ctx->engine);
	xr_regio_close(ctx->regs);
	xr_engine_destroy(ctx->engine);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx->free_mr);
	free(ctx->free_qpn);
	free(ctx->qp_by_num);
	free(ctx->cq_by_num);
	free(ctx);
	return 0;
}

void xr_query_gid(struct xr_context *ctx, xr_gid *gid)
{
	*gid = ctx->gid;
}

struct xr_regio *xr_context_regs(struct xr_context *ctx)
{
	return ctx->regs;
}

struct xr_engine *xr_context_engine(struct xr_context *ctx)
{
	return ctx->engine;
}

/* ---- PD and MR ---- */

struct xr_pd *xr_alloc_pd(struct xr_context *ctx)
{
	struct xr_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	pd->ctx = ctx;
	pd->pdn = ctx->next_pd++ & 0xFFFFFF;
	pthread_mutex_unlock(&ctx->lock);
	return pd;
}

int xr_dealloc_pd(struct xr_pd *pd)
{
	free(pd);
	return 0;
}

static bool push_free(uint32_t **list, uint32_t *n, uint32_t v)
{
	uint32_t *l = realloc(*list, (*n + 1) * sizeof(**list));
	if (!l)
		return false;
	l[(*n)++] = v;
	*list = l;
	return true;
}

struct xr_mr *xr_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_mr *mr;
	struct xr_mr_ctx c;
	uintptr_t start = (uintptr_t)addr, first, last;
	size_t pages;
	uint32_t st;
	int rc;

	if (!ctx || (access & ~0x1F) || (length && !addr) || start + length < start) {
		errno = EINVAL;
		return NULL;
	}
	if ((access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) && !(access & XR_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;   /* as ibv_reg_mr */
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	/* The page table: this process's pages, one entry each. */
	first = start >> PAGE_SHIFT;
	last = length ? (start + length - 1) >> PAGE_SHIFT : first;
	pages = length ? last - first + 1 : 0;
	if (pages) {
		mr->mtt = malloc(pages * sizeof(uint64_t));
		if (!mr->mtt) {
			free(mr);
			errno = ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < pages; i++)
			mr->mtt[i] = (uint64_t)((first + i) << PAGE_SHIFT);
	}
	memset(&c, 0, sizeof(c));
	c.va = start;
	c.len = length;
	c.access = (uint8_t)access;
	c.pd = pd->pdn;
	c.page_shift = PAGE_SHIFT;
	c.mtt = (uintptr_t)mr->mtt;
	c.mtt_count = (uint32_t)pages;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->nfree_mr)
		mr->handle = ctx->free_mr[--ctx->nfree_mr];
	else if (ctx->next_mr < XR_MAX_MR)
		mr->handle = ctx->next_mr++;
	if (!mr->handle) {
		pthread_mutex_unlock(&ctx->lock);
		free(mr->mtt);
		free(mr);
		errno = ENOSPC;
		return NULL;
	}
	rc = xr_regio_mr_commit(ctx->regs, mr->handle, &c, &st);
	if (rc)
		push_free(&ctx->free_mr, &ctx->nfree_mr, mr->handle);
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		free(mr->mtt);
		free(mr);
		errno = EINVAL;
		return NULL;
	}
	mr->context = ctx;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = c.lkey;
	mr->rkey = c.rkey;
	return mr;
}

int xr_dereg_mr(struct xr_mr *mr)
{
	struct xr_context *ctx;
	uint32_t st = 0;
	int rc;

	if (!mr)
		return EINVAL;
	ctx = mr->context;
	pthread_mutex_lock(&ctx->lock);
	rc = xr_regio_mr_invalidate(ctx->regs, mr->handle);
	if (rc > 0 && !xr_regio_read(ctx->regs, XR_REG_QP_CMD_STATUS, &st) && st == XR_CMD_ST_BUSY) {
		/* Windows are bound to it: it stays registered (rxe_dereg_mr). */
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	push_free(&ctx->free_mr, &ctx->nfree_mr, mr->handle);
	pthread_mutex_unlock(&ctx->lock);
	free(mr->mtt);
	free(mr);
	return 0;
}

/* ---- memory windows ---- */

struct xr_mw *xr_alloc_mw(struct xr_pd *pd, enum xr_mw_type type)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_mr_ctx c;
	struct xr_mw *mw;
	int rc;

	if (!ctx || (type != XR_MW_TYPE_1 && type != XR_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&c, 0, sizeof(c));
	c.mw = true;
	c.mw_type = (uint8_t)type;
	c.pd = pd->pdn;
	c.page_shift = PAGE_SHIFT;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->nfree_mr)
		mw->handle = ctx->free_mr[--ctx->nfree_mr];
	else if (ctx->next_mr < XR_MAX_MR)
		mw->handle = ctx->next_mr++;
	if (!mw->handle) {
		pthread_mutex_unlock(&ctx->lock);
		free(mw);
		errno = ENOSPC;
		return NULL;
	}
	rc = xr_regio_mr_commit(ctx->regs, mw->handle, &c, NULL);
	if (rc)
		push_free(&ctx->free_mr, &ctx->nfree_mr, mw->handle);
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		free(mw);
		errno = EINVAL;
		return NULL;
	}
	mw->context = ctx;
	mw->pd = pd;
	mw->type = type;
	mw->rkey = c.rkey;
	return mw;
}

int xr_dealloc_mw(struct xr_mw *mw)
{
	struct xr_context *ctx;

	if (!mw)
		return EINVAL;
	ctx = mw->context;
	pthread_mutex_lock(&ctx->lock);
	/* The engine unbinds it (and the region's count of windows drops). */
	xr_regio_mr_invalidate(ctx->regs, mw->handle);
	push_free(&ctx->free_mr, &ctx->nfree_mr, mw->handle);
	pthread_mutex_unlock(&ctx->lock);
	free(mw);
	return 0;
}

static int post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad, bool internal);

int xr_bind_mw(struct xr_qp *qp, struct xr_mw *mw, struct xr_mw_bind *bind)
{
	struct xr_send_wr w;
	const struct xr_mw_bind_info *b;
	int rc;

	if (!qp || !mw || !bind || mw->type != XR_MW_TYPE_1)
		return EINVAL;
	b = &bind->bind_info;
	/* As the rxe provider: no region means no range; no zero-based windows. */
	if ((!b->mr && (b->addr || b->length)) || (b->mw_access_flags & XR_ACCESS_ZERO_BASED))
		return EINVAL;
	memset(&w, 0, sizeof(w));
	w.wr_id = bind->wr_id;
	w.opcode = XR_WR_BIND_MW;
	w.send_flags = bind->send_flags;
	w.bind_mw.mw = mw;
	w.bind_mw.rkey = xr_inc_rkey(mw->rkey);
	w.bind_mw.bind_info = *b;
	rc = post_send(qp, &w, NULL, true);
	if (!rc)
		mw->rkey = w.bind_mw.rkey;   /* undone by the caller on an error completion */
	return rc;
}

/* ---- CQ ---- */

struct xr_cq *xr_create_cq(struct xr_context *ctx, int cqe)
{
	struct xr_cq *cq;
	struct xr_cq_ctx c;
	uint32_t log = 1;
	int rc;

	if (!ctx || cqe < 1 || cqe > (1 << 20)) {
		errno = EINVAL;
		return NULL;
	}
	while ((1u << log) < (uint32_t)cqe)
		log++;
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ring = aligned_alloc(64, (size_t)XR_CQE_SIZE << log);
	cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!cq->ring || cq->efd < 0) {
		free(cq->ring);
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	memset(cq->ring, 0, (size_t)XR_CQE_SIZE << log);
	cq->ctx = ctx;
	cq->log_size = log;
	pthread_mutex_init(&cq->lock, NULL);
	memset(&c, 0, sizeof(c));
	c.base = (uintptr_t)cq->ring;
	c.log_size = (uint8_t)log;
	pthread_mutex_lock(&ctx->lock);
	cq->cqn = ctx->next_cqn++;
	rc = cq->cqn < XR_MAX_CQ ? xr_regio_cq_commit(ctx->regs, cq->cqn, &c, NULL) : -ENOSPC;
	if (!rc)
		__atomic_store_n(&ctx->cq_by_num[cq->cqn], cq, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		close(cq->efd);
		free(cq->ring);
		free(cq);
		errno = rc == -ENOSPC ? ENOSPC : EINVAL;
		return NULL;
	}
	return cq;
}

int xr_destroy_cq(struct xr_cq *cq)
{
	struct xr_context *ctx;
	int rc;

	if (!cq)
		return EINVAL;
	ctx = cq->ctx;
	pthread_mutex_lock(&ctx->lock);
	rc = xr_regio_cq_destroy(ctx->regs, cq->cqn);
	if (!rc)
		__atomic_store_n(&ctx->cq_by_num[cq->cqn], NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->lock);
	if (rc)
		return EBUSY;   /* a QP still uses it */
	close(cq->efd);
	free(cq->ring);
	pthread_mutex_destroy(&cq->lock);
	free(cq);
	return 0;
}

int xr_poll_cq(struct xr_cq *cq, int n, struct xr_wc *wc)
{
	struct xr_context *ctx = cq->ctx;
	uint32_t mask = (1u << cq->log_size) - 1;
	int got = 0;

	if (n < 0)
		return -EINVAL;
	if (ctx->progress == XR_PROGRESS_INLINE)
		xr_engine_progress(ctx->engine);
	pthread_mutex_lock(&cq->lock);
	while (got < n) {
		struct xr_hw_cqe *c = &cq->ring[cq->ci & mask];
		uint8_t want = ((cq->ci >> cq->log_size) & 1) ^ 1;
		struct xr_qp *qp;
		if (__atomic_load_n(&c->phase, __ATOMIC_ACQUIRE) != want)
			break;
		wc[got].wr_id = c->wr_id;
		wc[got].status = (enum xr_wc_status)c->status;
		wc[got].opcode = (enum xr_wc_opcode)c->opcode;
		wc[got].vendor_err = c->vendor_err;
		wc[got].byte_len = c->byte_len;
		wc[got].imm_data = c->imm_data;
		wc[got].qp_num = c->qp_num;
		wc[got].src_qp = c->src_qp;
		wc[got].wc_flags = c->wc_flags;
		/* Free the ring slots the completion covers (completions are in order). */
		qp = c->qp_num < XR_MAX_QP ? __atomic_load_n(&ctx->qp_by_num[c->qp_num], __ATOMIC_ACQUIRE) : NULL;
		if (qp) {
			if (c->opcode & XR_WC_RECV)
				__atomic_store_n(&qp->rq_ci, (uint16_t)(c->wqe_index + 1), __ATOMIC_RELEASE);
			else
				__atomic_store_n(&qp->sq_ci, (uint16_t)(c->wqe_index + 1), __ATOMIC_RELEASE);
		}
		cq->ci++;
		got++;
	}
	if (got)
		xr_regio_write(ctx->regs, XR_REG_DB_CQ_CI + 8 * cq->cqn, cq->ci);
	pthread_mutex_unlock(&cq->lock);
	return got;
}

int xr_req_notify_cq(struct xr_cq *cq, int solicited_only)
{
	return xr_regio_write(cq->ctx->regs, XR_REG_DB_CQ_ARM + 8 * cq->cqn, solicited_only ? 2 : 1) ? EIO : 0;
}

int xr_cq_event_fd(struct xr_cq *cq)
{
	return cq->efd;
}

int xr_get_cq_event(struct xr_cq *cq, int timeout_ms)
{
	struct pollfd p = { cq->efd, POLLIN, 0 };
	uint64_t v;
	int waited = 0;

	for (;;) {
		int slice = cq->ctx->progress == XR_PROGRESS_INLINE ? 1 : timeout_ms;
		if (cq->ctx->progress == XR_PROGRESS_INLINE)
			xr_engine_progress(cq->ctx->engine);   /* nobody else moves the engine */
		if (poll(&p, 1, slice) > 0 && read(cq->efd, &v, sizeof(v)) == sizeof(v))
			return 0;
		waited += slice < 0 ? 0 : slice;
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return ETIMEDOUT;
	}
}

const char *xr_wc_status_str(enum xr_wc_status s)
{
	static const char *const names[] = {
		"success", "local length error", "local QP operation error", "local EE context operation error",
		"local protection error", "Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error", "transport retry counter exceeded",
		"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
		"operation aborted", "invalid EE context number", "invalid EE context state",
		"fatal error", "response timeout error", "general error",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

/* ---- QP ---- */

static uint32_t log2_at_least(uint32_t n)
{
	uint32_t l = 0;
	while ((1u << l) < n)
		l++;
	return l;
}

uint32_t xr_qp_num(const struct xr_qp *qp)
{
	return qp->qpn;
}

struct xr_qp *xr_create_qp(struct xr_pd *pd, struct xr_qp_init_attr *attr)
{
	struct xr_context *ctx = pd ? pd->ctx : NULL;
	struct xr_qp *qp;
	int rc;

	if (!ctx || !attr || !attr->send_cq || !attr->recv_cq || attr->qp_type != XR_QPT_RC ||
	    attr->cap.max_send_wr < 1 || attr->cap.max_send_wr > (1u << MAX_QUEUE_LOG) ||
	    attr->cap.max_recv_wr > (1u << MAX_QUEUE_LOG) || attr->cap.max_send_sge > XR_WQE_MAX_SGE ||
	    attr->cap.max_recv_sge > XR_RWQE_MAX_SGE || attr->cap.max_inline_data > XR_WQE_MAX_INLINE) {
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
	qp->sq_log = log2_at_least(attr->cap.max_send_wr);
	qp->rq_log = log2_at_least(attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1);
	qp->sq = aligned_alloc(64, (size_t)XR_WQE_SIZE << qp->sq_log);
	qp->rq = aligned_alloc(64, (size_t)XR_RWQE_SIZE << qp->rq_log);
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
	qp->init.cap.max_recv_wr = 1u << qp->rq_log;
	attr->cap = qp->init.cap;

	memset(&qp->hw, 0, sizeof(qp->hw));
	qp->hw.state = XR_QPS_RESET;
	qp->hw.type = XR_QPT_RC;
	qp->hw.sq_cqn = attr->send_cq->cqn;
	qp->hw.rq_cqn = attr->recv_cq->cqn;
	qp->hw.pd = pd->pdn;
	qp->hw.sq_base = (uintptr_t)qp->sq;
	qp->hw.rq_base = (uintptr_t)qp->rq;
	qp->hw.sq_log_size = (uint8_t)qp->sq_log;
	qp->hw.rq_log_size = (uint8_t)qp->rq_log;
	qp->hw.pkey = XR_DEFAULT_PKEY;
	qp->hw.dst_port = XR_ROCE_UDP_PORT;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->nfree_qpn)
		qp->qpn = ctx->free_qpn[--ctx->nfree_qpn];
	else if (ctx->next_qpn < XR_MAX_QP)
		qp->qpn = ctx->next_qpn++;
	rc = qp->qpn ? xr_regio_write(ctx->regs, XR_REG_QP_COMMIT_MASK, XR_QPM_ALL) ||
		       xr_regio_qp_commit(ctx->regs, qp->qpn, &qp->hw, NULL) : -ENOSPC;
	if (!rc)
		__atomic_store_n(&ctx->qp_by_num[qp->qpn], qp, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		free(qp->sq);
		free(qp->rq);
		free(qp);
		errno = rc == -ENOSPC ? ENOSPC : EINVAL;
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
					  XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_CUR_STATE | XR_QP_ALT_PATH |
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

static int check_modify(const struct xr_qp *qp, const struct xr_qp_attr *a, int mask)
{
	unsigned cur = (mask & XR_QP_CUR_STATE) ? a->cur_qp_state : qp->hw.state;
	unsigned next = (mask & XR_QP_STATE) ? a->qp_state : cur;
	const struct transition *t;

	if (cur > XR_QPS_ERR || next > XR_QPS_ERR || cur != qp->hw.state)
		return EINVAL;
	t = &rc_table[cur][next];
	if (!t->valid || (mask & t->req) != t->req ||
	    (mask & ~(t->req | t->opt | XR_QP_STATE)))
		return EINVAL;
	if ((mask & XR_QP_ALT_PATH) || ((mask & XR_QP_AV) && !a->ah_attr.is_global))
		return EINVAL;   /* RoCE: no alternate path; the address needs a GRH */
	if ((mask & XR_QP_PATH_MTU) && (a->path_mtu < XR_MTU_256 || a->path_mtu > XR_MTU_4096))
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
	return 0;
}

int xr_modify_qp(struct xr_qp *qp, struct xr_qp_attr *a, int mask)
{
	struct xr_context *ctx;
	struct xr_qp_ctx next;
	uint32_t commit_mask = 0, st;
	int rc;

	if (!qp || !a)
		return EINVAL;
	ctx = qp->ctx;
	pthread_mutex_lock(&ctx->lock);
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
	if (next.state == XR_QPS_RESET) {
		/* Back to RESET: the rings start over on both sides. */
		pthread_mutex_lock(&qp->sq_lock);
		pthread_mutex_lock(&qp->rq_lock);
		qp->sq_pi = qp->sq_ci = qp->rq_pi = qp->rq_ci = 0;
		pthread_mutex_unlock(&qp->rq_lock);
		pthread_mutex_unlock(&qp->sq_lock);
	}
	rc = xr_regio_write(ctx->regs, XR_REG_QP_COMMIT_MASK, commit_mask) ||
	     xr_regio_qp_commit(ctx->regs, qp->qpn, &next, &st) ? EINVAL : 0;
	if (!rc)
		qp->hw = next;
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int xr_query_qp(struct xr_qp *qp, struct xr_qp_attr *a, int mask, struct xr_qp_init_attr *init)
{
	struct xr_qp_ctx c;
	int rc;

	(void)mask;
	if (!qp || !a)
		return EINVAL;
	pthread_mutex_lock(&qp->ctx->lock);
	rc = xr_regio_qp_read(qp->ctx->regs, qp->qpn, &c) ? EIO : 0;
	pthread_mutex_unlock(&qp->ctx->lock);
	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->qp_state = a->cur_qp_state = (enum xr_qp_state)c.state;
	a->path_mtu = (enum xr_mtu)c.path_mtu;
	a->rq_psn = c.rq_psn;
	a->sq_psn = c.sq_psn;
	a->dest_qp_num = c.dest_qpn;
	a->qp_access_flags = c.access;
	a->cap = qp->init.cap;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.dgid = c.peer_gid;
	a->ah_attr.grh.flow_label = c.flow_label;
	a->ah_attr.grh.hop_limit = c.hop_limit;
	a->ah_attr.grh.traffic_class = c.traffic_class;
	a->max_rd_atomic = c.max_rd_atomic;
	a->max_dest_rd_atomic = c.max_dest_rd_atomic;
	a->min_rnr_timer = c.min_rnr_timer;
	a->port_num = 1;
	a->timeout = c.timeout;
	a->retry_cnt = c.retry_cnt;
	a->rnr_retry = c.rnr_retry;
	if (init)
		*init = qp->init;
	return 0;
}

int xr_destroy_qp(struct xr_qp *qp)
{
	struct xr_context *ctx;

	if (!qp)
		return EINVAL;
	ctx = qp->ctx;
	pthread_mutex_lock(&ctx->lock);
	xr_regio_qp_destroy(ctx->regs, qp->qpn);
	__atomic_store_n(&ctx->qp_by_num[qp->qpn], NULL, __ATOMIC_RELEASE);
	push_free(&ctx->free_qpn, &ctx->nfree_qpn, qp->qpn);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_mutex_destroy(&qp->rq_lock);
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return 0;
}

/* ---- posting ---- */

/* A BIND_MW WQE: the engine checks the region and the window (C10-72..75). */
static int build_bind(struct xr_qp *qp, const struct xr_send_wr *w, struct xr_hw_wqe *q, bool internal)
{
	const struct xr_mw *mw = w->bind_mw.mw;
	const struct xr_mw_bind_info *b = &w->bind_mw.bind_info;

	/* Type-1 windows are bound through xr_bind_mw only; the new key keeps
	 * the window's index (only its key byte changes). */
	if (!mw || mw->context != qp->ctx || (mw->type == XR_MW_TYPE_1 && !internal) ||
	    (w->bind_mw.rkey >> 8) != (mw->rkey >> 8) || (b->mr && b->mr->context != qp->ctx) ||
	    (!b->mr && b->length))
		return EINVAL;
	memset(q, 0, sizeof(*q));
	q->wr_id = w->wr_id;
	q->opcode = XR_WR_BIND_MW;
	q->flags = (uint8_t)((w->send_flags & (XR_SEND_FENCE | XR_SEND_SIGNALED)) |
			     (qp->init.sq_sig_all ? XR_SEND_SIGNALED : 0));
	q->rkey = w->bind_mw.rkey;
	q->bind.addr = b->addr;
	q->bind.length = b->length;
	q->bind.mw_rkey = mw->rkey;
	q->bind.mr_lkey = b->mr ? b->mr->lkey : 0;
	q->bind.access = b->mw_access_flags;
	return 0;
}

static int build_wqe(struct xr_qp *qp, const struct xr_send_wr *w, struct xr_hw_wqe *q, bool internal)
{
	uint32_t len = 0;

	if (w->opcode == XR_WR_BIND_MW)
		return build_bind(qp, w, q, internal);
	if (w->num_sge < 0 || (unsigned)w->num_sge > qp->init.cap.max_send_sge || (w->num_sge && !w->sg_list))
		return EINVAL;
	switch (w->opcode) {
	case XR_WR_RDMA_WRITE: case XR_WR_RDMA_WRITE_WITH_IMM: case XR_WR_SEND: case XR_WR_SEND_WITH_IMM:
	case XR_WR_SEND_WITH_INV: case XR_WR_RDMA_READ: case XR_WR_ATOMIC_CMP_AND_SWP:
	case XR_WR_ATOMIC_FETCH_AND_ADD: case XR_WR_LOCAL_INV:
		break;
	default:
		return EINVAL;
	}
	for (int i = 0; i < w->num_sge; i++) {
		if (len + w->sg_list[i].length < len)
			return EINVAL;
		len += w->sg_list[i].length;
	}
	if ((w->opcode == XR_WR_ATOMIC_CMP_AND_SWP || w->opcode == XR_WR_ATOMIC_FETCH_AND_ADD) &&
	    (len != 8 || w->num_sge != 1 || (w->send_flags & XR_SEND_INLINE) ||
	     (w->wr.atomic.remote_addr & 7)))
		return EINVAL;   /* A38: 8 bytes, 8-byte aligned (rxe validate_send_wr) */
	if ((w->send_flags & XR_SEND_INLINE) &&
	    (len > qp->init.cap.max_inline_data || w->opcode == XR_WR_RDMA_READ))
		return EINVAL;
	if (len > (1u << 31))
		return EINVAL;   /* the port's maximum message size */

	memset(q, 0, offsetof(struct xr_hw_wqe, sge));
	q->wr_id = w->wr_id;
	q->opcode = (uint8_t)w->opcode;
	q->flags = (uint8_t)(w->send_flags | (qp->init.sq_sig_all ? XR_SEND_SIGNALED : 0));
	q->length = len;
	q->imm_data = (w->opcode == XR_WR_SEND_WITH_INV || w->opcode == XR_WR_LOCAL_INV) ?
		      w->invalidate_rkey : w->imm_data;
	if (w->opcode == XR_WR_ATOMIC_CMP_AND_SWP || w->opcode == XR_WR_ATOMIC_FETCH_AND_ADD) {
		q->remote_addr = w->wr.atomic.remote_addr;
		q->rkey = w->wr.atomic.rkey;
		q->compare_add = w->wr.atomic.compare_add;
		q->swap = w->wr.atomic.swap;
	} else {
		q->remote_addr = w->wr.rdma.remote_addr;
		q->rkey = w->wr.rdma.rkey;
	}
	if (w->send_flags & XR_SEND_INLINE) {
		uint32_t off = 0;
		/* The data is copied now: the buffers are the caller's again on return. */
		for (int i = 0; i < w->num_sge; i++) {
			memcpy(q->inline_data + off, (const void *)(uintptr_t)w->sg_list[i].addr, w->sg_list[i].length);
			off += w->sg_list[i].length;
		}
		q->num_sge = 0;
	} else {
		q->num_sge = (uint8_t)w->num_sge;
		if (w->num_sge)
			memcpy(q->sge, w->sg_list, (size_t)w->num_sge * sizeof(struct xr_sge));
	}
	return 0;
}

int xr_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad)
{
	return post_send(qp, wr, bad, false);
}

static int post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad, bool internal)
{
	uint32_t size = 1u << qp->sq_log;
	int rc = 0, posted = 0;

	if (bad)
		*bad = NULL;
	if (qp->hw.state != XR_QPS_RTS && qp->hw.state != XR_QPS_SQD && qp->hw.state != XR_QPS_ERR) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	pthread_mutex_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		uint16_t ci = __atomic_load_n(&qp->sq_ci, __ATOMIC_ACQUIRE);
		if ((uint16_t)(qp->sq_pi - ci) >= size) {
			rc = ENOMEM;
			break;
		}
		rc = build_wqe(qp, wr, &qp->sq[qp->sq_pi & (size - 1)], internal);
		if (rc)
			break;
		/* A type-2 bind: the window's key is the new one from now on,
		 * so it can be invalidated and bound again (undone by the
		 * caller on an error completion, as for type 1). */
		if (wr->opcode == XR_WR_BIND_MW && !internal)
			wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
		qp->sq_pi++;
		posted++;
	}
	if (rc && bad)
		*bad = wr;
	if (posted) {
		/* WQEs are in memory before the engine hears of them. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		xr_regio_write(qp->ctx->regs, XR_REG_DB_SQ + 8 * qp->qpn, qp->sq_pi);
	}
	pthread_mutex_unlock(&qp->sq_lock);
	return rc;
}

int xr_post_recv(struct xr_qp *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	uint32_t size = 1u << qp->rq_log;
	int rc = 0, posted = 0;

	if (bad)
		*bad = NULL;
	if (qp->hw.state == XR_QPS_RESET) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	pthread_mutex_lock(&qp->rq_lock);
	for (; wr; wr = wr->next) {
		uint16_t ci = __atomic_load_n(&qp->rq_ci, __ATOMIC_ACQUIRE);
		struct xr_hw_rwqe *q;
		uint32_t len = 0;
		if ((uint16_t)(qp->rq_pi - ci) >= size) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (unsigned)wr->num_sge > qp->init.cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			rc = EINVAL;
			break;
		}
		/* The total must fit 32 bits and the port's 2^31 message size
		 * (issue 15, defect 12). */
		for (int i = 0; i < wr->num_sge && rc == 0; i++) {
			if (len + wr->sg_list[i].length < len || len + wr->sg_list[i].length > (1u << 31))
				rc = EINVAL;
			len += wr->sg_list[i].length;
		}
		if (rc)
			break;
		q = &qp->rq[qp->rq_pi & (size - 1)];
		q->wr_id = wr->wr_id;
		q->num_sge = (uint32_t)wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++)
			q->sge[i] = wr->sg_list[i];
		q->length = len;
		qp->rq_pi++;
		posted++;
	}
	if (rc && bad)
		*bad = wr;
	if (posted) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		xr_regio_write(qp->ctx->regs, XR_REG_DB_RQ + 8 * qp->qpn, qp->rq_pi);
	}
	pthread_mutex_unlock(&qp->rq_lock);
	return rc;
}

/* ---- asynchronous events ---- */

/* Looks through the event log for the next event the application is told
 * of; 1 found, 0 none yet, -EIO. Events overwritten before we read them
 * are gone (the log is a ring), as a real NIC's event queue overflows. */
static int next_async_event(struct xr_context *ctx, struct xr_async_event *ev)
{
	uint32_t count, cap;

	if (xr_regio_read(ctx->regs, XR_REG_EVLOG_COUNT, &count) ||
	    xr_regio_read(ctx->regs, XR_REG_EVLOG_CAP, &cap))
		return -EIO;
	if (count - ctx->ev_next > cap)
		ctx->ev_next = count - cap;
	for (; ctx->ev_next != count; ctx->ev_next++) {
		uint32_t type, qpn, a0;
		if (xr_regio_write(ctx->regs, XR_REG_EVLOG_SEL, ctx->ev_next) ||
		    xr_regio_read(ctx->regs, XR_REG_EVLOG_TYPE, &type) ||
		    xr_regio_read(ctx->regs, XR_REG_EVLOG_QPN, &qpn) ||
		    xr_regio_read(ctx->regs, XR_REG_EVLOG_ARG0, &a0))
			return -EIO;
		if (!(type >> 31))
			continue;
		if ((type & 0xFF) == XR_EV_CQ_ERROR) {
			*ev = (struct xr_async_event){ .type = XR_EVENT_CQ_ERR, .cqn = a0, .qp_num = qpn };
		} else if ((type & 0xFF) == XR_EV_SQ_DRAINED) {
			*ev = (struct xr_async_event){ .type = XR_EVENT_SQ_DRAINED, .qp_num = qpn };
		} else {
			continue;
		}
		ctx->ev_next++;
		return 1;
	}
	return 0;
}

int xr_get_async_event(struct xr_context *ctx, struct xr_async_event *ev, int timeout_ms)
{
	struct timespec t0, now;
	int rc;

	if (!ctx || !ev)
		return EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		rc = next_async_event(ctx, ev);
		pthread_mutex_unlock(&ctx->lock);
		if (rc < 0)
			return EIO;
		if (rc)
			return 0;
		if (ctx->progress == XR_PROGRESS_INLINE)
			xr_engine_progress(ctx->engine);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout_ms >= 0 && (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
			return ETIMEDOUT;
		usleep(200);
	}
}
