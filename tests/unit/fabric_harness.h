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

#endif
