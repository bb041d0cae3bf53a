/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events: the device's event log read back as the events an
 * application is told of (CQ errors, SQ drained, SRQ limit, last WQE).
 */
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "drv.h"

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
		} else if ((type & 0xFF) == XR_EV_SRQ_LIMIT) {
			*ev = (struct xr_async_event){ .type = XR_EVENT_SRQ_LIMIT_REACHED, .qp_num = qpn, .srq_num = a0 };
		} else if ((type & 0xFF) == XR_EV_QP_LAST_WQE) {
			*ev = (struct xr_async_event){ .type = XR_EVENT_QP_LAST_WQE_REACHED, .qp_num = qpn, .srq_num = a0 };
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
	bool woke = false;
	uint64_t v;
	int rc;

	if (!ctx || !ev)
		return EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { ctx->async_efd, POLLIN, 0 };
		int left, slice;
		drv_lock(&ctx->lock);
		rc = next_async_event(ctx, ev);
		drv_unlock(&ctx->lock);
		if (rc < 0)
			return EIO;
		/* One count per event told of (the fd is a semaphore); a count
		 * that woke us for no event (one lost to the log's wrap) goes too. */
		if ((rc || woke) && read(ctx->async_efd, &v, sizeof(v)) < 0) {
			/* nothing counted */
		}
		if (rc)
			return 0;
		if (ctx->progress == XR_PROGRESS_INLINE)
			xr_engine_progress(ctx->engine);
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = timeout_ms < 0 ? -1 :
		       timeout_ms - (int)((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (timeout_ms >= 0 && left <= 0)
			return ETIMEDOUT;
		/* Inline mode: nobody else moves the engine, so wait in slices. */
		slice = ctx->progress == XR_PROGRESS_INLINE ? 1 : left;
		woke = poll(&p, 1, slice) > 0;
	}
}

int xr_async_event_fd(struct xr_context *ctx)
{
	return ctx ? ctx->async_efd : -1;
}
