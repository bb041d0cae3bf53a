/* SPDX-License-Identifier: MIT */
/*
 * Completion queues and completion channels. A channel's fd is an epoll
 * set of its CQs' event fds (xroce signals a CQ's fd when the armed CQ
 * gets a completion), so it is pollable, one channel serves many CQs and
 * ibv_get_cq_event learns which CQ fired from the epoll entry.
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "xrv.h"

_Static_assert((int)IBV_WC_SUCCESS == (int)XR_WC_SUCCESS && (int)IBV_WC_GENERAL_ERR == (int)XR_WC_GENERAL_ERR &&
	       (int)IBV_WC_RETRY_EXC_ERR == (int)XR_WC_RETRY_EXC_ERR, "xroce's completion status codes are ibverbs' values");
_Static_assert((int)IBV_WC_RECV == (int)XR_WC_RECV && (int)IBV_WC_RECV_RDMA_WITH_IMM == (int)XR_WC_RECV_RDMA_WITH_IMM &&
	       (int)IBV_WC_LOCAL_INV == (int)XR_WC_LOCAL_INV && (int)IBV_WC_BIND_MW == (int)XR_WC_BIND_MW,
	       "xroce's completion opcodes are ibverbs' values");
_Static_assert((int)IBV_WC_WITH_IMM == (int)XR_WC_WITH_IMM && (int)IBV_WC_WITH_INV == (int)XR_WC_WITH_INV && (int)IBV_WC_GRH == (int)XR_WC_GRH,
	       "xroce's completion flags are ibverbs' values");

XRV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct xrv_channel *ch;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ibv.fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->ibv.fd < 0) {
		int err = errno;
		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibv.context = context;
	return &ch->ibv;
}

XRV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return EINVAL;
	if (__atomic_load_n(&channel->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;   /* CQs still use it */
	close(channel->fd);
	free(XRV_OF(xrv_channel, channel));
	return 0;
}

XRV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector)
{
	struct xrv_cq *cq;

	if (!context || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->xr = xr_create_cq(xrv_ctx(context)->xr, cqe);
	if (!cq->xr) {
		free(cq);
		return NULL;
	}
	if (channel) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };
		if (epoll_ctl(channel->fd, EPOLL_CTL_ADD, xr_cq_event_fd(cq->xr), &ev)) {
			int err = errno;
			xr_destroy_cq(cq->xr);
			free(cq);
			errno = err;
			return NULL;
		}
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_ACQ_REL);
	}
	cq->ibv.context = context;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	cq->ibv.cqe = xr_cq_size(cq->xr);   /* what it holds: at least cqe */
	cq->ibv.handle = (uint32_t)(uintptr_t)cq;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	xrv_register_cq(cq);
	return &cq->ibv;
}
XRV_DEFAULT(ibv_create_cq);

XRV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibv)
{
	struct xrv_cq *cq = XRV_OF(xrv_cq, ibv);
	int fd, rc;

	if (!ibv)
		return EINVAL;
	fd = xr_cq_event_fd(cq->xr);
	if (ibv->channel)
		epoll_ctl(ibv->channel->fd, EPOLL_CTL_DEL, fd, NULL);
	rc = xr_destroy_cq(cq->xr);
	if (rc) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };
		if (ibv->channel)
			epoll_ctl(ibv->channel->fd, EPOLL_CTL_ADD, fd, &ev);
		return rc;   /* EBUSY: a QP still uses it */
	}
	xrv_unregister_cq(cq);
	xrv_cq_poll_free(cq->poll);
	if (ibv->channel)
		__atomic_sub_fetch(&ibv->channel->refcnt, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_destroy(&ibv->mutex);
	pthread_cond_destroy(&ibv->cond);
	free(cq);
	return 0;
}
XRV_DEFAULT(ibv_destroy_cq);

/* A new ring; the completions not yet polled move into it. EINVAL when
 * they would not fit, or cqe is out of the device's range. */
XRV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	int rc;

	if (!cq)
		return EINVAL;
	rc = xr_resize_cq(XRV_OF(xrv_cq, cq)->xr, cqe);
	if (rc == EINVAL && cqe >= 1 && cqe <= XR_CQ_MAX_CQE)
		xrv_log("ibv_resize_cq: %d entries cannot hold the completions still to be polled", cqe);
	if (!rc)
		cq->cqe = xr_cq_size(XRV_OF(xrv_cq, cq)->xr);
	return rc;
}
XRV_DEFAULT(ibv_resize_cq);

int xrv_poll_cq(struct ibv_cq *ibv, int n, struct ibv_wc *wc)
{
	struct xr_cq *xcq = XRV_OF(xrv_cq, ibv)->xr;
	struct xr_wc w[32];
	int total = 0;

	/* A program spinning on an empty CQ lends its core to the engine for
	 * a pass, and one that got completions hands it back to the engine's
	 * thread: xr_poll_cq does both. */
	while (total < n) {
		int want = n - total < 32 ? n - total : 32, got = xr_poll_cq(xcq, want, w);
		if (got < 0)
			return total ? total : got;
		for (int i = 0; i < got; i++) {
			struct ibv_wc *o = &wc[total + i];
			o->wr_id = w[i].wr_id;
			o->status = (enum ibv_wc_status)w[i].status;
			o->opcode = (enum ibv_wc_opcode)w[i].opcode;
			o->vendor_err = w[i].vendor_err;
			o->byte_len = w[i].byte_len;
			o->imm_data = w[i].imm_data;
			o->qp_num = w[i].qp_num;
			o->src_qp = w[i].src_qp;
			o->wc_flags = w[i].wc_flags;
			o->pkey_index = 0;
			o->slid = 0;
			o->sl = 0;
			o->dlid_path_bits = 0;
		}
		total += got;
		if (got < want)
			break;
	}
	return total;
}

int xrv_req_notify_cq(struct ibv_cq *ibv, int solicited_only)
{
	return xr_req_notify_cq(XRV_OF(xrv_cq, ibv)->xr, solicited_only);
}

XRV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	int nonblock;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	/* A program about to block (after polling its CQ empty, the usual
	 * loop) hands the engine back to its thread, which delivers the event. */
	if (channel->context)
		xr_engine_assist_end(xr_context_engine(xrv_ctx(channel->context)->xr));
	nonblock = fcntl(channel->fd, F_GETFL) & O_NONBLOCK;
	for (;;) {
		struct epoll_event ev;
		struct xrv_cq *x;
		uint64_t v;
		int n = epoll_wait(channel->fd, &ev, 1, nonblock ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		x = ev.data.ptr;
		/* Another thread may have taken this event first: wait again. */
		if (read(xr_cq_event_fd(x->xr), &v, sizeof(v)) != sizeof(v))
			continue;
		*cq = &x->ibv;
		*cq_context = x->ibv.cq_context;
		return 0;
	}
}
XRV_DEFAULT(ibv_get_cq_event);

XRV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
XRV_DEFAULT(ibv_ack_cq_events);
