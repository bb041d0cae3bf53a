/* SPDX-License-Identifier: MIT */
/*
 * Device context: open (bring-up), close and queries, the interrupt hook
 * that wakes CQ waiters, and protection domains.
 */
#include <sys/eventfd.h>
#include <unistd.h>

#include "drv.h"

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

/* Events an application is told of wake xr_get_async_event's waiters. */
static void on_event(void *arg, uint32_t type, uint32_t qpn)
{
	struct xr_context *ctx = arg;
	uint64_t one = 1;

	(void)qpn;
	if ((type == XR_EV_CQ_ERROR || type == XR_EV_SQ_DRAINED || type == XR_EV_SRQ_LIMIT ||
	     type == XR_EV_QP_LAST_WQE) && write(ctx->async_efd, &one, sizeof(one)) < 0) {
		/* counter saturated: waiters are awake anyway */
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
	ctx->async_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	ctx->qp_by_num = calloc(XR_MAX_QP, sizeof(*ctx->qp_by_num));
	ctx->cq_by_num = calloc(XR_MAX_CQ, sizeof(*ctx->cq_by_num));
	ctx->engine = xr_engine_create();
	ctx->regs = ctx->engine ? xr_regio_engine(ctx->engine) : NULL;
	if (!ctx->qp_by_num || !ctx->cq_by_num || !ctx->regs || ctx->async_efd < 0) {
		err = ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->link = link;
	ctx->progress = opts->progress;
	ctx->next_pd = ctx->next_cqn = ctx->next_mr = 1;
	ctx->next_qpn = 0x11;   /* low QPNs stay free, as on real devices */
	ctx->next_srqn = 1;
	if (xr_engine_attach_link(ctx->engine, link)) {
		err = EBUSY;
		goto fail;
	}
	/* A link just brought up may take a moment to get its carrier. */
	for (int i = 0; i < 40 && !link->ops->is_up(link); i++)
		usleep(50000);
	xr_engine_set_link_up(ctx->engine, link->ops->is_up(link));
	xr_engine_set_irq(ctx->engine, on_irq, ctx);
	xr_engine_set_event_irq(ctx->engine, on_event, ctx);

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
	if (ctx->async_efd >= 0)
		close(ctx->async_efd);
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
	free(ctx->free_srqn);
	free(ctx->qp_by_num);
	free(ctx->cq_by_num);
	close(ctx->async_efd);
	free(ctx);
	return 0;
}

void xr_query_gid(struct xr_context *ctx, xr_gid *gid)
{
	*gid = ctx->gid;
}

enum xr_mtu xr_active_mtu(struct xr_context *ctx)
{
	/* IP 40 (IPv6, the larger) + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 (a
	 * WRITE_ONLY_WITH_IMM's) + ICRC 4 */
	uint32_t room = ctx->link->mtu > 84 ? ctx->link->mtu - 84 : 0;
	enum xr_mtu m = XR_MTU_256;

	while (m < XR_MTU_4096 && (256u << m) <= room)
		m++;
	return m;
}

struct xr_regio *xr_context_regs(struct xr_context *ctx)
{
	return ctx->regs;
}

struct xr_engine *xr_context_engine(struct xr_context *ctx)
{
	return ctx->engine;
}
/* ---- PD ---- */

struct xr_pd *xr_alloc_pd(struct xr_context *ctx)
{
	struct xr_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	drv_lock(&ctx->lock);
	pd->ctx = ctx;
	pd->pdn = ctx->next_pd++ & 0xFFFFFF;
	drv_unlock(&ctx->lock);
	return pd;
}

int xr_dealloc_pd(struct xr_pd *pd)
{
	free(pd);
	return 0;
}
