/* SPDX-License-Identifier: MIT */
/* The switch model's tests: hosts on a fabric and its clock. */
#ifndef XR_TEST_FABRIC_HARNESS_H
#define XR_TEST_FABRIC_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/engine.h"
#include "xroce/fabric.h"
#include "xroce/opcodes.h"
#include "xroce/regio.h"
#include "xroce/verbs.h"
#include "xroce/wire.h"

#define GBPS 1000000000ull


/* ---- synthetic hosts: the test plays the NIC ---- */

struct net {
	struct xr_fabric *fab;
	struct xr_link *host[8];
	int nhosts;
	uint64_t now;
};

static inline int net_host(struct net *n, const struct xr_fabric_port_cfg *pc, bool unpaced, const char *addr)
{
	struct xr_fabric_host_cfg hc = { .unpaced = unpaced, .addr = addr, .depth = 1024 };
	int port = xr_fabric_attach_host(n->fab, pc, &hc, &n->host[n->nhosts]);

	assert_true(port == n->nhosts);
	return n->nhosts++;
}

static inline void net_free(struct net *n)
{
	for (int i = 0; i < n->nhosts; i++)
		xr_link_close(n->host[i]);
	xr_fabric_free(n->fab);
}

static inline struct xr_fabric_port_stats pstats(struct net *n, unsigned port)
{
	struct xr_fabric_port_stats s;
	assert_int_equal(xr_fabric_port_stats(n->fab, port, &s), 0);
	return s;
}

/* ---- real engines on fabric ports ---- */

#define DEV_MAX_QP 8

/* An xroce device on a fabric port: its engine's timers on the fabric's
 * clock, one PD, CQ, buffer and MR (all access), and nqp RC QPs. */
struct dev {
	struct xr_link *link;
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	uint8_t *buf;
	size_t len;
	struct xr_mr *mr;
	struct xr_qp *qp[DEV_MAX_QP];
	unsigned nqp;
};

struct dev_opts {
	struct xr_fabric_host_cfg host;   /* .addr is filled in: 10.0.0.<port + 1> */
	size_t len;
	unsigned nqp, cq_depth, sq_depth, rq_depth;
	bool retry7_forever;
};

/* Attaches the next port of fab and opens d on it; returns the port. */
static inline int dev_open_on(struct xr_fabric *fab, const struct xr_fabric_port_cfg *pc, const struct dev_opts *o,
			      struct dev *d)
{
	char addr[32];
	struct xr_fabric_host_cfg hc = o->host;
	struct xr_device_opts dopts = { .addr = addr, .progress = XR_PROGRESS_INLINE,
					.retry7_forever = o->retry7_forever };
	struct xr_qp_init_attr ia = { 0 };
	int port = (int)xr_fabric_nports(fab);

	assert_true(o->nqp <= DEV_MAX_QP);
	snprintf(addr, sizeof(addr), "10.0.0.%d", port + 1);
	hc.addr = addr;
	assert_int_equal(xr_fabric_attach_host(fab, pc, &hc, &d->link), port);
	d->ctx = xr_open_device(d->link, &dopts);
	assert_non_null(d->ctx);
	xr_engine_set_clock(xr_context_engine(d->ctx), xr_fabric_clock, fab);
	d->pd = xr_alloc_pd(d->ctx);
	d->cq = xr_create_cq(d->ctx, (int)o->cq_depth);
	d->len = o->len;
	d->buf = calloc(1, o->len);
	assert_non_null(d->buf);
	d->mr = xr_reg_mr(d->pd, d->buf, o->len, 0xF | XR_ACCESS_LOCAL_WRITE);
	assert_non_null(d->mr);
	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = o->sq_depth;
	ia.cap.max_recv_wr = o->rq_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	d->nqp = o->nqp;
	for (unsigned i = 0; i < o->nqp; i++) {
		d->qp[i] = xr_create_qp(d->pd, &ia);
		assert_non_null(d->qp[i]);
	}
	return port;
}

static inline void dev_close(struct dev *d)
{
	for (unsigned k = 0; k < d->nqp; k++)
		xr_destroy_qp(d->qp[k]);
	xr_dereg_mr(d->mr);
	xr_destroy_cq(d->cq);
	xr_dealloc_pd(d->pd);
	xr_close_device(d->ctx);
	xr_link_close(d->link);
	free(d->buf);
}

static inline uint64_t dev_counter(struct dev *d, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(d->ctx), c, &v);
	return v;
}

#endif
