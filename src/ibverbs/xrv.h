/* SPDX-License-Identifier: MIT */
/*
 * The drop-in libibverbs: private objects. Each ibverbs object embeds the
 * struct the system's <infiniband/verbs.h> defines (so inline verbs and
 * programs read it as they expect) next to the xroce object it stands
 * for. One thin layer: every verb maps onto xroce's own API.
 */
#ifndef XROCE_IBVERBS_XRV_H
#define XROCE_IBVERBS_XRV_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "xroce/link.h"
#include "xroce/verbs.h"

#define XRV_EXPORT __attribute__((visibility("default")))
/* After the definition of a name that also has an old-ABI version: binds
 * the definition to the default version (gen_abi.py checks for it). */
#include "abi_symver.h"
#define XRV_DEFAULT(name) __asm__(".symver " #name ", " #name "@@" XRV_VER_##name ", remove")
#define XRV_DEV_NAME "xroce0"
#define XRV_VENDOR_ID 0x000000     /* none: perftest then treats the device as generic */
#define XRV_VENDOR_PART 0x7872    /* "xr": in no vendor table perftest keeps */

struct xrv_context {
	struct xr_context *xr;
	struct xr_link *link;
	char addr[64];                /* the bound address (the GID) */
	xr_gid gid;
	uint32_t ifindex;             /* the GID's netdev (raw link), else 0 */
	int async_fd;                 /* epoll set of the device's event fd */
	struct verbs_context vctx;    /* last: ibv_context is its last member */
};

struct xrv_pd {
	struct ibv_pd ibv;
	struct xr_pd *xr;
};

struct xrv_mr {
	struct ibv_mr ibv;
	struct xr_mr *xr;
};

struct xrv_mw {
	struct ibv_mw ibv;
	struct xr_mw *xr;
};

struct xrv_channel {
	struct ibv_comp_channel ibv;  /* fd: an epoll set of its CQs' event fds */
};

struct xrv_cq_poll;

struct xrv_cq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibv_ex;  /* its first members are ibv_cq's */
	};
	struct xr_cq *xr;
	struct xrv_cq_poll *poll;     /* an extended CQ's (cq_ex.c), or NULL */
	struct xrv_cq *prev, *next;   /* the registry asynchronous events search */
};

struct xrv_wr_batch;

struct xrv_qp {
	struct ibv_qp_ex ibv;         /* room for ibv_qp_ex, as the ABI asks */
	struct xr_qp *xr;
	struct xrv_wr_batch *wr;      /* the ibv_wr_* API's, or NULL (wr_api.c) */
	struct xrv_qp *prev, *next;
};

struct xrv_srq {
	struct ibv_srq ibv;
	struct xr_srq *xr;
	struct xrv_srq *prev, *next;
};

struct xrv_ah {
	struct ibv_ah ibv;
	struct xr_ah *xr;
};

/* XROCE_EXIT_REPORT: counters and events on stderr at close or exit (report.c). */
void xrv_report_open(struct xr_context *xr, struct xr_link *link);
void xrv_report_close(void);

/* Asynchronous events name QPs and CQs by number (async.c). */
void xrv_register_cq(struct xrv_cq *cq);
void xrv_unregister_cq(struct xrv_cq *cq);
void xrv_register_qp(struct xrv_qp *qp);
void xrv_unregister_qp(struct xrv_qp *qp);
/* Posts receive WRs in batches to q (a QP or an SRQ) through post (qp.c). */
typedef int (*xrv_post_recv_fn)(void *q, struct xr_recv_wr *wr, struct xr_recv_wr **bad);
int xrv_post_recvs(struct ibv_recv_wr *wr, struct ibv_recv_wr **bad, xrv_post_recv_fn post, void *q);
/* An ibv_ah_attr as xroce's (0, or EINVAL with a line naming what is wrong; ah.c). */
int xrv_ah_attr_from_ibv(const char *verb, const struct ibv_ah_attr *in, struct xr_ah_attr *out);
void xrv_register_srq(struct xrv_srq *srq);
void xrv_unregister_srq(struct xrv_srq *srq);

static inline struct xrv_context *xrv_ctx(struct ibv_context *c)
{
	return (struct xrv_context *)((char *)c - offsetof(struct xrv_context, vctx.context));
}
#define XRV_OF(type, p) ((struct type *)(p))   /* the ibv struct is each object's first member */

/* Logs one line to stderr, prefixed "xroce: ". */
void xrv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Refuses an unsupported verb: logs once per name, sets errno. */
void xrv_unsupported(const char *verb, const char *why);

/* Context ops (cq.c, qp.c, mem.c) installed by ibv_open_device. */
int xrv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int xrv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int xrv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* ibv_create_qp_ex, and with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS the ibv_wr_*
 * builders (wr_api.c). */
struct ibv_qp *xrv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
void xrv_wr_batch_free(struct xrv_wr_batch *b);
/* ibv_create_cq_ex: start_poll .. end_poll and the ibv_wc_read_* (cq_ex.c). */
struct ibv_cq_ex *xrv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
void xrv_cq_poll_free(struct xrv_cq_poll *p);
int xrv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int xrv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_mw *xrv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int xrv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
int xrv_dealloc_mw(struct ibv_mw *mw);
int xrv_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len);
/* ibv_modify_qp_rate_limit (an inline verb through the context): the QP's pacer cap. */
int xrv_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr);
int xrv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *attr, size_t len);

#endif
