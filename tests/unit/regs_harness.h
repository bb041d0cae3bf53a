/* SPDX-License-Identifier: MIT */
/* One engine behind its register file, for the control-plane tests. */
#ifndef XR_TEST_REGS_HARNESS_H
#define XR_TEST_REGS_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nic/engine.h"
#include "nic/recv.h"
#include "test_util.h"
#include "xroce/engine.h"
#include "xroce/regio.h"

static struct xr_engine *E;
static struct xr_regio *R;

static inline int setup(void **state)
{
	(void)state;
	E = xr_engine_create();
	R = xr_regio_engine(E);
	return E && R ? 0 : -1;
}

static inline int teardown(void **state)
{
	(void)state;
	xr_regio_close(R);
	xr_engine_destroy(E);
	return 0;
}

static inline uint32_t rd(uint32_t off)
{
	uint32_t v = 0xDEADBEEF;
	assert_int_equal(xr_regio_read(R, off, &v), XR_AXI_OKAY);
	return v;
}

static inline uint64_t counter(enum xr_counter c)
{
	uint64_t v;
	assert_int_equal(xr_regio_read_counter(R, c, &v), 0);
	return v;
}

/* Brings the engine up: addresses, link, out of reset, enabled. */
static inline void bring_up(void)
{
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_LOW, 0x00000001), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_HIGH, 0x0200), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_IP_ADDR, 0x0A000001), 0);
	xr_engine_set_link_up(E, true);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_ENABLE), 0);
}

static inline void make_cq(uint32_t cqn)
{
	static uint8_t ring[64 * 16];
	struct xr_cq_ctx c = { .base = (uintptr_t)ring, .log_size = 4 };
	assert_int_equal(xr_regio_cq_commit(R, cqn, &c, NULL), 0);
}

static inline struct xr_qp_ctx rc_ctx(uint8_t state)
{
	struct xr_qp_ctx c;
	memset(&c, 0, sizeof(c));
	c.state = state;
	c.type = XR_QPT_RC;
	c.path_mtu = 3;
	c.sq_cqn = c.rq_cqn = 1;
	c.pkey = 0xFFFF;
	c.dst_port = 4791;
	c.hop_limit = 64;
	c.access = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_LOCAL_WRITE;
	xr_gid_from_ipv4(&c.peer_gid, 0x0A000002);
	return c;
}

/* Creates qpn and walks it RESET -> INIT -> RTR -> RTS. */
static inline void make_rts_qp(uint32_t qpn, struct xr_qp_ctx *c)
{
	static const uint8_t path[] = { XR_QPS_RESET, XR_QPS_INIT, XR_QPS_RTR, XR_QPS_RTS };
	for (size_t i = 0; i < sizeof(path); i++) {
		uint32_t st = 0;
		c->state = path[i];
		assert_int_equal(xr_regio_qp_commit(R, qpn, c, &st), 0);
	}
}

#endif
