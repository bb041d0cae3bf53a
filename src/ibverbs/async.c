/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events: xroce's event log (through xr_get_async_event) as
 * ibv_async_events. The context's async_fd is the device's event fd, so
 * a program may poll it. Events name CQs and QPs by number; a registry of
 * the live ones turns numbers back into objects.
 */
#include <fcntl.h>
#include <unistd.h>

#include "xrv.h"

static struct {
	pthread_mutex_t lock;
	struct xrv_cq *cqs;
	struct xrv_qp *qps;
	struct xrv_srq *srqs;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define LIST_ADD(head, o) do { (o)->prev = NULL; (o)->next = (head); if (head) (head)->prev = (o); (head) = (o); } while (0)
#define LIST_DEL(head, o) do { if ((o)->prev) (o)->prev->next = (o)->next; else (head) = (o)->next; \
			       if ((o)->next) (o)->next->prev = (o)->prev; } while (0)

void xrv_register_cq(struct xrv_cq *cq)
{
	pthread_mutex_lock(&reg.lock);
	LIST_ADD(reg.cqs, cq);
	pthread_mutex_unlock(&reg.lock);
}

void xrv_unregister_cq(struct xrv_cq *cq)
{
	pthread_mutex_lock(&reg.lock);
	LIST_DEL(reg.cqs, cq);
	pthread_mutex_unlock(&reg.lock);
}

void xrv_register_qp(struct xrv_qp *qp)
{
	pthread_mutex_lock(&reg.lock);
	LIST_ADD(reg.qps, qp);
	pthread_mutex_unlock(&reg.lock);
}

void xrv_unregister_qp(struct xrv_qp *qp)
{
	pthread_mutex_lock(&reg.lock);
	LIST_DEL(reg.qps, qp);
	pthread_mutex_unlock(&reg.lock);
}

void xrv_register_srq(struct xrv_srq *srq)
{
	pthread_mutex_lock(&reg.lock);
	LIST_ADD(reg.srqs, srq);
	pthread_mutex_unlock(&reg.lock);
}

void xrv_unregister_srq(struct xrv_srq *srq)
{
	pthread_mutex_lock(&reg.lock);
	LIST_DEL(reg.srqs, srq);
	pthread_mutex_unlock(&reg.lock);
}

/* Fills the event's object; false if it is gone already. */
static bool resolve(const struct xr_async_event *x, struct ibv_async_event *ev)
{
	bool found = false;

	pthread_mutex_lock(&reg.lock);
	if (x->type == XR_EVENT_CQ_ERR) {
		for (struct xrv_cq *c = reg.cqs; c && !found; c = c->next)
			if (xr_cq_num(c->xr) == x->cqn) {
				ev->element.cq = &c->ibv;
				ev->event_type = IBV_EVENT_CQ_ERR;
				found = true;
			}
	} else if (x->type == XR_EVENT_SRQ_LIMIT_REACHED) {
		for (struct xrv_srq *q = reg.srqs; q && !found; q = q->next)
			if (xr_srq_num(q->xr) == x->srq_num) {
				ev->element.srq = &q->ibv;
				ev->event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
				found = true;
			}
	} else {
		for (struct xrv_qp *q = reg.qps; q && !found; q = q->next)
			if (q->ibv.qp_base.qp_num == x->qp_num) {
				ev->element.qp = &q->ibv.qp_base;
				ev->event_type = x->type == XR_EVENT_QP_LAST_WQE_REACHED ? IBV_EVENT_QP_LAST_WQE_REACHED
											 : IBV_EVENT_SQ_DRAINED;
				found = true;
			}
	}
	pthread_mutex_unlock(&reg.lock);
	return found;
}

XRV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct xrv_context *x;
	int nonblock;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	x = xrv_ctx(context);
	nonblock = fcntl(context->async_fd, F_GETFL) & O_NONBLOCK;
	for (;;) {
		struct xr_async_event xe;
		int rc = xr_get_async_event(x->xr, &xe, nonblock ? 0 : -1);
		if (rc == ETIMEDOUT) {
			errno = EAGAIN;
			return -1;
		}
		if (rc) {
			errno = rc;
			return -1;
		}
		memset(event, 0, sizeof(*event));
		if (resolve(&xe, event))
			return 0;
	}
}
XRV_DEFAULT(ibv_get_async_event);

XRV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;   /* objects are not destroyed under an unacknowledged event here */
}
XRV_DEFAULT(ibv_ack_async_event);
