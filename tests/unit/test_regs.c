/* SPDX-License-Identifier: MIT */
/* The control plane: register file, tables, counters, event log, backends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nic/engine.h"
#include "nic/recv.h"
#include "test_util.h"
#include "xroce/engine.h"
#include "xroce/regio.h"

static struct xr_engine *E;
static struct xr_regio *R;

static int setup(void **state)
{
	(void)state;
	E = xr_engine_create();
	R = xr_regio_engine(E);
	return E && R ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	xr_regio_close(R);
	xr_engine_destroy(E);
	return 0;
}

static uint32_t rd(uint32_t off)
{
	uint32_t v = 0xDEADBEEF;
	assert_int_equal(xr_regio_read(R, off, &v), XR_AXI_OKAY);
	return v;
}

static uint64_t counter(enum xr_counter c)
{
	uint64_t v;
	assert_int_equal(xr_regio_read_counter(R, c, &v), 0);
	return v;
}

/* Brings the engine up: addresses, link, out of reset, enabled. */
static void bring_up(void)
{
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_LOW, 0x00000001), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_HIGH, 0x0200), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_IP_ADDR, 0x0A000001), 0);
	xr_engine_set_link_up(E, true);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_ENABLE), 0);
}

static void make_cq(uint32_t cqn)
{
	static uint8_t ring[64 * 16];
	struct xr_cq_ctx c = { .base = (uintptr_t)ring, .log_size = 4 };
	assert_int_equal(xr_regio_cq_commit(R, cqn, &c, NULL), 0);
}

static struct xr_qp_ctx rc_ctx(uint8_t state)
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
static void make_rts_qp(uint32_t qpn, struct xr_qp_ctx *c)
{
	static const uint8_t path[] = { XR_QPS_RESET, XR_QPS_INIT, XR_QPS_RTR, XR_QPS_RTS };
	for (size_t i = 0; i < sizeof(path); i++) {
		uint32_t st = 0;
		c->state = path[i];
		assert_int_equal(xr_regio_qp_commit(R, qpn, c, &st), 0);
	}
}

/* ---- every register: reset value and access type ---- */

static void test_reset_values_and_access(void **state)
{
	size_t n;
	const struct xr_reg_desc *d = xr_reg_descs(&n);
	unsigned checked = 0;

	(void)state;
	/* First every reset value, before any probe can change one. */
	for (size_t i = 0; i < n; i++) {
		uint32_t v;
		if (d[i].count > 1 || d[i].access == XR_WO)
			continue;
		v = rd(d[i].offset);
		if (v != d[i].reset)
			fail_msg("%s reads 0x%08x after reset, table says 0x%08x", d[i].name, v, d[i].reset);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t v, probe;
		if (d[i].count > 1) {
			/* Doorbells are write-only: they read as 0. */
			assert_int_equal(xr_regio_read(R, d[i].offset, &v), XR_AXI_OKAY);
			assert_int_equal(v, 0);
			continue;
		}
		v = rd(d[i].offset);
		if (d[i].access == XR_WO)
			assert_int_equal(v, 0);
		switch (d[i].access) {
		case XR_RO:
			assert_int_equal(xr_regio_write(R, d[i].offset, ~v), XR_AXI_SLVERR);
			/* Registers that record the refusal itself change; no other. */
			if (d[i].offset == XR_REG_REG_ERR_ADDR)
				assert_int_equal(rd(d[i].offset), d[i].offset);
			else if (d[i].offset != XR_REG_EVLOG_COUNT &&
				 d[i].offset != XR_COUNTER_BASE + 8 * XR_CNT_REG_SLVERR)
				assert_int_equal(rd(d[i].offset), v);
			break;
		case XR_RW:
			if (d[i].offset == XR_REG_CTRL || d[i].offset == XR_REG_EVLOG_SEL)
				break;   /* side effects: covered by their own tests */
			probe = E->writable_mask[d[i].offset / 4] & 0x5A5A5A5Au;
			assert_int_equal(xr_regio_write(R, d[i].offset, probe), XR_AXI_OKAY);
			assert_int_equal(rd(d[i].offset), probe);
			assert_int_equal(xr_regio_write(R, d[i].offset, d[i].reset), XR_AXI_OKAY);
			break;
		default:
			break;
		}
		checked++;
	}
	assert_true(checked > 100);
	assert_int_equal(rd(XR_REG_ID), XR_REG_ID_MAGIC);
}

static void test_slverr_decerr(void **state)
{
	static const uint32_t unmapped[] = {
		0x400, 0x0FFC, 0x2000, XR_COUNTER_BASE + 8 * XR_CNT_COUNT, 0x00FFFFC,
		0x300000, 0xFFFFFFFC, 0x0118, 0x033C + 0x20,
	};
	static const uint32_t misaligned[] = { 0x1, 0x2, 0x3, 0x1002, 0x100001 };
	uint32_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(unmapped) / sizeof(unmapped[0]); i++) {
		assert_int_equal(xr_regio_read(R, unmapped[i], &v), XR_AXI_DECERR);
		assert_int_equal(xr_regio_write(R, unmapped[i], 1), XR_AXI_DECERR);
	}
	for (size_t i = 0; i < sizeof(misaligned) / sizeof(misaligned[0]); i++) {
		assert_int_equal(xr_regio_read(R, misaligned[i], &v), XR_AXI_DECERR);
		assert_int_equal(xr_regio_write(R, misaligned[i], 1), XR_AXI_DECERR);
	}
	/* Bad values: bits outside a register's fields, unknown commands. */
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_HIGH, 0x10000), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_write(R, XR_REG_UDP_PORT, 0x10000), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, 0x10), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_write(R, XR_REG_QP_SEL, 0x1000000), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_write(R, XR_REG_QP_CMD, 7), XR_AXI_SLVERR);
	assert_int_equal(rd(XR_REG_QP_CMD_STATUS), XR_CMD_ST_BAD_CMD);
	assert_int_equal(xr_regio_write(R, XR_REG_STATUS, 0), XR_AXI_SLVERR);
	/* A doorbell for a QP that does not exist. */
	assert_int_equal(xr_regio_write(R, XR_REG_DB_SQ + 8 * 77, 1), XR_AXI_SLVERR);
	assert_int_equal(rd(XR_REG_MAC_HIGH), 0);   /* refused writes change nothing */

	assert_int_equal(counter(XR_CNT_REG_DECERR), 2 * 9 + 2 * 5);
	assert_int_equal(counter(XR_CNT_REG_SLVERR), 7);
	assert_int_equal(rd(XR_REG_REG_ERR_ADDR), XR_REG_DB_SQ + 8 * 77);
}

/* ---- bring-up (seed 000 §3.3) ---- */

static void test_bring_up_sequence(void **state)
{
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET);
	struct xr_mr_ctx m;
	uint64_t page[1];
	static uint8_t buf[4096] __attribute__((aligned(4096)));

	(void)state;
	/* 1. soft reset (already asserted at power-on) */
	assert_int_equal(rd(XR_REG_STATUS) >> 8 & 0xF, XR_NOT_READY_RESET);
	/* 2. addresses */
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_LOW, 0x33445566), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_HIGH, 0x0211), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_IP_ADDR, 0xC0A80101), 0);
	/* 3. QPs in RESET (and the CQ they use) */
	make_cq(1);
	assert_int_equal(xr_regio_qp_commit(R, 10, &c, NULL), 0);
	/* 4. MRs */
	page[0] = (uintptr_t)buf;
	m = (struct xr_mr_ctx){ .va = 0x10000, .len = 4096, .access = 7, .page_shift = 12,
				.mtt = (uintptr_t)page, .mtt_count = 1 };
	assert_int_equal(xr_regio_mr_commit(R, 1, &m, NULL), 0);
	/* 5. enable: refused while the link is down, and STATUS says why */
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_ENABLE), XR_AXI_SLVERR);
	assert_int_equal(rd(XR_REG_STATUS) >> 8 & 0xF, XR_NOT_READY_LINK_DOWN);
	assert_false(rd(XR_REG_CTRL) & XR_CTRL_ENABLE);
	assert_false(rd(XR_REG_CTRL) & XR_CTRL_SOFT_RESET);   /* reset release did apply */
	/* enable together with reset is a bad value */
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, 3), XR_AXI_SLVERR);
	xr_engine_set_link_up(E, true);
	assert_int_equal(rd(XR_REG_STATUS) >> 8 & 0xF, XR_NOT_READY_DISABLED);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_ENABLE), 0);
	assert_int_equal(rd(XR_REG_STATUS), XR_STATUS_LINK_UP | XR_STATUS_READY | XR_STATUS_ENABLED);
	/* the configuration survived the reset release */
	assert_non_null(xr_qp_lookup(E, 10));
	assert_non_null(xr_mr_lookup(E, m.rkey));
	/* the link going down is reported */
	xr_engine_set_link_up(E, false);
	assert_int_equal(rd(XR_REG_STATUS) >> 8 & 0xF, XR_NOT_READY_LINK_DOWN);
}

static void test_enable_needs_address(void **state)
{
	(void)state;
	xr_engine_set_link_up(E, true);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_ENABLE), XR_AXI_SLVERR);
	assert_int_equal(rd(XR_REG_STATUS) >> 8 & 0xF, XR_NOT_READY_NO_ADDRESS);
	/* an IPv6 address is enough too */
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_LOW, 1), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_IPV6_ADDR_0, 0xFD000000), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_ENABLE), 0);
}

/* ---- QP table and the state machine ---- */

static void test_qp_commit_read_and_transitions(void **state)
{
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET), back;
	uint32_t st;

	(void)state;
	make_cq(1);
	/* A QP must be created in RESET. */
	c.state = XR_QPS_RTS;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_NO_ENTRY);
	/* Reserved and out-of-range QPNs. */
	c.state = XR_QPS_RESET;
	assert_int_equal(xr_regio_qp_commit(R, 0, &c, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_INDEX);
	assert_int_equal(xr_regio_qp_commit(R, 1, &c, &st), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_qp_commit(R, XR_MAX_QP, &c, &st), XR_AXI_SLVERR);
	/* A field that does not fit is refused before anything is written. */
	c.dest_qpn = 1u << 24;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), -EINVAL);
	c.dest_qpn = 0x123456;
	c.sq_psn = 0xABCDEF;
	c.rq_psn = 0x654321;
	c.timeout = 14;
	c.retry_cnt = 7;
	c.rnr_retry = 6;
	c.min_rnr_timer = 12;
	c.max_rd_atomic = 16;
	c.max_dest_rd_atomic = 8;
	c.sq_base = 0x123456789ABCull;
	c.sq_log_size = 10;
	c.peer_mac[0] = 0x02;
	c.peer_mac[5] = 0x99;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	assert_int_equal(xr_regio_qp_read(R, 20, &back), 0);
	assert_memory_equal(&back, &c, sizeof(c));

	/* Invalid transitions: RESET->RTR, RESET->ERR, INIT->RTS, RTR->RTR. */
	c.state = XR_QPS_RTR;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_TRANSITION);
	c.state = XR_QPS_ERR;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);
	c.state = XR_QPS_INIT;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	c.state = XR_QPS_RTS;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);
	/* RTR needs a valid MTU and existing CQs. */
	c.state = XR_QPS_RTR;
	c.path_mtu = 0;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_MTU);
	c.path_mtu = 5;
	c.rq_cqn = 9;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_CQ);
	c.rq_cqn = 1;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);   /* RTR->RTR */
	c.state = XR_QPS_RTS;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	c.state = XR_QPS_SQD;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	c.state = XR_QPS_RTS;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	c.state = XR_QPS_ERR;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	c.state = XR_QPS_RTS;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), XR_AXI_SLVERR);   /* ERR->RTS */
	/* ->RESET forgets the MSN. */
	c.state = XR_QPS_RESET;
	c.msn = 77;
	assert_int_equal(xr_regio_qp_commit(R, 20, &c, &st), 0);
	assert_int_equal(xr_regio_qp_read(R, 20, &back), 0);
	assert_int_equal(back.msn, 0);
	/* The event log saw the state changes. */
	assert_true(rd(XR_REG_EVLOG_COUNT) >= 8);
	/* Destroy, then it is gone. */
	assert_int_equal(xr_regio_qp_destroy(R, 20), 0);
	assert_null(xr_qp_lookup(E, 20));
	assert_int_equal(xr_regio_qp_read(R, 20, &back), XR_AXI_SLVERR);
}

/* A commit with a mask changes only the selected fields. */
static void test_qp_commit_mask(void **state)
{
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET), live;

	(void)state;
	make_cq(1);
	c.sq_psn = 100;
	c.timeout = 5;
	make_rts_qp(30, &c);
	/* The engine advances the PSN while the driver edits the shadow. */
	pthread_mutex_lock(&E->qps[30]->lock);
	E->qps[30]->ctx.sq_psn = 555;
	pthread_mutex_unlock(&E->qps[30]->lock);
	c.timeout = 20;
	c.sq_psn = 100;   /* stale in the shadow */
	assert_int_equal(xr_regio_write(R, XR_REG_QP_COMMIT_MASK, XR_QPM_TIMEOUT), 0);
	assert_int_equal(xr_regio_qp_commit(R, 30, &c, NULL), 0);
	assert_int_equal(xr_qp_snapshot(E, 30, &live), 0);
	assert_int_equal(live.timeout, 20);
	assert_int_equal(live.sq_psn, 555);
	assert_int_equal(live.state, XR_QPS_RTS);
}

/* ---- shadow + commit atomicity against a concurrent data path ---- */

struct race {
	atomic_bool stop;
	atomic_uint snapshots, accepted, refused;
	const char *_Atomic failure;
};

static struct xr_qp_ctx cfg_a, cfg_b;

static bool same_config(const struct xr_qp_ctx *x, const struct xr_qp_ctx *y)
{
	return x->dest_qpn == y->dest_qpn && !memcmp(&x->peer_gid, &y->peer_gid, sizeof(xr_gid)) &&
	       x->pkey == y->pkey && x->sq_psn == y->sq_psn && x->rq_psn == y->rq_psn &&
	       x->timeout == y->timeout && x->access == y->access && x->src_port == y->src_port &&
	       x->hop_limit == y->hop_limit && x->flow_label == y->flow_label;
}

static void *data_path(void *arg)
{
	struct race *r = arg;
	struct xr_pkt p;
	uint8_t frame[128];

	/* A packet from peer A with A's P_Key: accepted exactly when the QP holds config A. */
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	p.dmac[0] = 0x02;
	p.dmac[5] = 0x01;
	xr_gid_from_ipv4(&p.dgid, 0x0A000001);
	p.sgid = cfg_a.peer_gid;
	p.pkey = cfg_a.pkey;
	p.dqpn = 40;
	xr_pkt_build(&p, frame, sizeof(frame));
	while (!atomic_load(&r->stop)) {
		struct xr_qp *qp;
		struct xr_qp_ctx snap;
		int why = xr_recv_check(E, &p, true, &qp);
		if (why == 0) {
			snap = qp->ctx;   /* what the data path works from, under the lock */
			pthread_mutex_unlock(&qp->lock);
			if (!same_config(&snap, &cfg_a))
				r->failure = "packet accepted with a context that is not config A";
			r->accepted++;
		} else {
			if (why - 1 != XR_CNT_DROP_BAD_SRC)
				r->failure = "refused for a reason other than the peer address";
			r->refused++;
		}
		if (xr_qp_snapshot(E, 40, &snap))
			r->failure = "QP vanished during commits";
		else if (!same_config(&snap, &cfg_a) && !same_config(&snap, &cfg_b))
			r->failure = "snapshot mixes two configurations";
		r->snapshots++;
	}
	return NULL;
}

static void test_commit_is_atomic_under_traffic(void **state)
{
	struct race r = { .failure = NULL };
	pthread_t t;

	(void)state;
	bring_up();
	make_cq(1);
	cfg_a = rc_ctx(XR_QPS_RESET);
	cfg_a.dest_qpn = 0x111;
	cfg_a.sq_psn = cfg_a.rq_psn = 0xAAAAA;
	cfg_a.timeout = 10;
	cfg_a.src_port = 0xC001;
	cfg_a.flow_label = 0x11111;
	cfg_b = cfg_a;
	cfg_b.dest_qpn = 0x222;
	xr_gid_from_ipv4(&cfg_b.peer_gid, 0x0A000003);
	cfg_b.pkey = 0x8001;
	cfg_b.sq_psn = cfg_b.rq_psn = 0xBBBBB;
	cfg_b.timeout = 20;
	cfg_b.access = XR_ACCESS_REMOTE_READ;
	cfg_b.src_port = 0xC002;
	cfg_b.hop_limit = 3;
	cfg_b.flow_label = 0x22222;
	make_rts_qp(40, &cfg_a);

	pthread_create(&t, NULL, data_path, &r);
	/* At least 20,000 commits, and on until the data path has seen both
	 * configurations many times (bounded, for a loaded machine). */
	for (unsigned i = 0; i < 20000 || ((atomic_load(&r.snapshots) < 5000 || !atomic_load(&r.accepted) ||
					     !atomic_load(&r.refused)) && i < 20000000); i++) {
		struct xr_qp_ctx *c = (i & 1) ? &cfg_a : &cfg_b;
		c->state = XR_QPS_RTS;
		assert_int_equal(xr_regio_qp_commit(R, 40, c, NULL), 0);
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	if (r.failure)
		fail_msg("%s (after %u snapshots)", r.failure, atomic_load(&r.snapshots));
	assert_true(r.snapshots > 100);
	assert_true(r.accepted > 0 && r.refused > 0);
	assert_int_equal(counter(XR_CNT_DROP_BAD_SRC), r.refused);
}

/* ---- receive checks: each refusal has its counter ---- */

static void test_recv_checks(void **state)
{
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET);
	struct xr_pkt p;
	struct xr_qp *qp;
	uint8_t f[128];

	(void)state;
	make_cq(1);
	make_rts_qp(50, &c);
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	p.dmac[0] = 0x02;
	p.dmac[5] = 0x01;
	xr_gid_from_ipv4(&p.dgid, 0x0A000001);
	p.sgid = c.peer_gid;
	p.dqpn = 50;
	xr_pkt_build(&p, f, sizeof(f));
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 1 + XR_CNT_DROP_DISABLED);
	bring_up();
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 0);
	pthread_mutex_unlock(&qp->lock);
	p.dqpn = 51;
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 1 + XR_CNT_DROP_UNKNOWN_QPN);
	p.dqpn = 50;
	p.opcode = XR_OP_UC_SEND_ONLY;
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 1 + XR_CNT_DROP_BAD_TRANSPORT);
	p.opcode = XR_OP_RC_SEND_ONLY;
	p.pkey = 0x7FFF;   /* limited member of the same partition: accepted */
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 0);
	pthread_mutex_unlock(&qp->lock);
	p.pkey = 0x1234;
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 1 + XR_CNT_DROP_BAD_PKEY);
	p.pkey = 0xFFFF;
	p.dmac[5] = 9;
	assert_int_equal(xr_recv_check(E, &p, true, &qp), 1 + XR_CNT_DROP_NOT_FOR_US);
	assert_int_equal(xr_recv_check(E, &p, false, &qp), 0);   /* IP-level links skip L2 */
	pthread_mutex_unlock(&qp->lock);
	c.state = XR_QPS_ERR;
	assert_int_equal(xr_regio_qp_commit(R, 50, &c, NULL), 0);
	assert_int_equal(xr_recv_check(E, &p, false, &qp), 1 + XR_CNT_DROP_BAD_STATE);
	assert_int_equal(counter(XR_CNT_DROP_BAD_STATE), 1);
	assert_int_equal(counter(XR_CNT_DROP_UNKNOWN_QPN), 1);
	assert_int_equal(counter(XR_CNT_DROP_DISABLED), 1);
}

/* ---- MR table: keys, variants, validation ---- */

static void test_mr_keys_and_validation(void **state)
{
	static uint64_t mtt[3];
	struct xr_mr_ctx m = { .va = 0x7000F00, .len = 8192, .access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ,
			       .page_shift = 12, .mtt = (uintptr_t)mtt, .mtt_count = 3 };
	struct xr_mr_ctx back;
	uint32_t st, key1, key2;

	(void)state;
	mtt[0] = 0x1000; mtt[1] = 0x5000; mtt[2] = 0x9000;
	assert_int_equal(xr_regio_mr_commit(R, 7, &m, &st), 0);
	key1 = m.rkey;
	assert_int_equal(key1 >> 8, 7);
	assert_int_equal(m.lkey, m.rkey);
	assert_non_null(xr_mr_lookup(E, key1));
	assert_int_equal(xr_regio_mr_read(R, 7, &back), 0);
	assert_true(back.valid);
	assert_int_equal(back.va, m.va);
	assert_int_equal(back.len, m.len);
	assert_int_equal(back.mtt_count, 3);
	/* Re-registration: a new variant, the old key is stale. */
	assert_int_equal(xr_regio_mr_commit(R, 7, &m, &st), 0);
	key2 = m.rkey;
	assert_int_not_equal(key1, key2);
	assert_null(xr_mr_lookup(E, key1));
	assert_non_null(xr_mr_lookup(E, key2));
	/* Invalidate. */
	assert_int_equal(xr_regio_mr_invalidate(R, 7), 0);
	assert_null(xr_mr_lookup(E, key2));
	assert_int_equal(xr_regio_mr_invalidate(R, 7), XR_AXI_SLVERR);
	/* Refusals. */
	m.mtt_count = 2;   /* 0x7000F00 + 8192 spans 3 pages */
	assert_int_equal(xr_regio_mr_commit(R, 8, &m, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_RANGE);
	m.mtt_count = 3;
	m.access = XR_ACCESS_REMOTE_WRITE;   /* remote write needs local write */
	assert_int_equal(xr_regio_mr_commit(R, 8, &m, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_ACCESS);
	m.access = 1;
	m.page_shift = 11;
	assert_int_equal(xr_regio_mr_commit(R, 8, &m, &st), XR_AXI_SLVERR);
	m.page_shift = 12;
	m.va = UINT64_MAX - 10;
	m.len = 100;
	assert_int_equal(xr_regio_mr_commit(R, 8, &m, &st), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_mr_commit(R, 0, &m, &st), XR_AXI_SLVERR);
	assert_int_equal(st, XR_CMD_ST_BAD_INDEX);
	assert_null(xr_mr_lookup(E, 0));
	assert_null(xr_mr_lookup(E, 0xFFFFFFFF));
}

/* ---- soft reset clears QP, MR, CQ and counter state ---- */

static void test_soft_reset_clears_state(void **state)
{
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET);
	struct xr_mr_ctx m = { .len = 0, .page_shift = 12 };
	uint32_t v;

	(void)state;
	make_cq(1);
	make_rts_qp(60, &c);
	assert_int_equal(xr_regio_mr_commit(R, 3, &m, NULL), 0);
	xr_regio_read(R, 0x5, &v);   /* an error to count */
	assert_int_equal(counter(XR_CNT_REG_DECERR), 1);
	assert_int_equal(xr_regio_write(R, XR_REG_MAC_LOW, 0x1234), 0);
	bring_up();
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, 0), 0);
	assert_int_equal(xr_regio_write(R, XR_REG_CTRL, XR_CTRL_SOFT_RESET), 0);
	assert_null(xr_qp_lookup(E, 60));
	assert_null(xr_mr_lookup(E, m.rkey));
	assert_false(E->cqs[1].in_use);
	for (unsigned i = 0; i < XR_CNT_COUNT; i++)
		assert_int_equal(counter(i), 0);
	assert_int_equal(rd(XR_REG_QP_STATE), 0);   /* shadows back to reset values */
	assert_int_equal(rd(XR_REG_EVLOG_COUNT), 1);   /* only the reset itself */
	xr_regio_write(R, XR_REG_EVLOG_SEL, 0);
	assert_int_equal(rd(XR_REG_EVLOG_TYPE), (1u << 31) | XR_EV_SOFT_RESET);
	/* A key from before the reset stays stale after re-registration. */
	{
		uint32_t old = m.rkey;
		assert_int_equal(xr_regio_mr_commit(R, 3, &m, NULL), 0);
		assert_int_not_equal(m.rkey, old);
		assert_null(xr_mr_lookup(E, old));
	}
}

/* ---- 64-bit counters: latching and wrap ---- */

static void test_counter_latch_and_wrap(void **state)
{
	uint32_t lo, hi;
	const uint32_t off = XR_COUNTER_BASE + 8 * XR_CNT_TX_PKTS;

	(void)state;
	xr_count(E, XR_CNT_TX_PKTS, 0x1FFFFFFFFull);   /* hi 1, lo 0xFFFFFFFF */
	lo = rd(off);
	xr_count(E, XR_CNT_TX_PKTS, 1);                /* now hi 2, lo 0 */
	hi = rd(off + 4);
	assert_int_equal(lo, 0xFFFFFFFF);
	assert_int_equal(hi, 1);                       /* latched with the low read */
	assert_int_equal(counter(XR_CNT_TX_PKTS), 0x200000000ull);
	/* Reading another counter's low word moves the latch. */
	rd(XR_COUNTER_BASE + 8 * XR_CNT_RX_PKTS);
	assert_int_equal(rd(off + 4), 2);
	/* Wrap at 2^64. */
	xr_count(E, XR_CNT_RX_PKTS, UINT64_MAX);
	assert_int_equal(counter(XR_CNT_RX_PKTS), UINT64_MAX);
	xr_count(E, XR_CNT_RX_PKTS, 3);
	assert_int_equal(counter(XR_CNT_RX_PKTS), 2);
	/* CNT_CTRL.clear */
	assert_int_equal(xr_regio_write(R, XR_REG_CNT_CTRL, 1), 0);
	assert_int_equal(counter(XR_CNT_TX_PKTS), 0);
	/* Every counter has a name and a register. */
	for (unsigned c = 0; c < XR_CNT_COUNT; c++) {
		char name[64];
		snprintf(name, sizeof(name), "%s_lo", xr_counter_name(c));
		assert_non_null(xr_reg_by_name(name));
		assert_int_equal(xr_reg_by_name(name)->offset, XR_COUNTER_BASE + 8 * c);
	}
	assert_string_equal(xr_counter_name(XR_CNT_PARSE_BAD_ICRC), "rx_drop_bad_icrc");
}

/* ---- event log: bounded ring with a wrap count ---- */

static void test_event_log_wraps(void **state)
{
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET);
	const uint32_t n = XR_EVLOG_ENTRIES + 100;

	(void)state;
	make_cq(1);
	make_rts_qp(70, &c);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(xr_regio_write(R, XR_REG_DB_SQ + 8 * 70, i & 0xFFFF), 0);
	{
		uint32_t count = rd(XR_REG_EVLOG_COUNT);
		assert_true(count >= n);
		assert_int_equal(rd(XR_REG_EVLOG_WRAP), count / XR_EVLOG_ENTRIES);
		assert_int_equal(rd(XR_REG_EVLOG_WRAP), 1);
		/* The oldest events are gone, the newest is the last doorbell. */
		xr_regio_write(R, XR_REG_EVLOG_SEL, 0);
		assert_int_equal(rd(XR_REG_EVLOG_TYPE) >> 31, 0);
		xr_regio_write(R, XR_REG_EVLOG_SEL, count - 1);
		assert_int_equal(rd(XR_REG_EVLOG_TYPE), (1u << 31) | XR_EV_WQE_POSTED);
		assert_int_equal(rd(XR_REG_EVLOG_QPN), 70);
		assert_int_equal(rd(XR_REG_EVLOG_ARG1), (n - 1) & 0xFFFF);
		xr_regio_write(R, XR_REG_EVLOG_SEL, count);
		assert_int_equal(rd(XR_REG_EVLOG_TYPE) >> 31, 0);
		/* Timestamps do not go backwards. */
		xr_regio_write(R, XR_REG_EVLOG_SEL, count - 2);
		uint64_t t1 = rd(XR_REG_EVLOG_TS_LO) | (uint64_t)rd(XR_REG_EVLOG_TS_HI) << 32;
		xr_regio_write(R, XR_REG_EVLOG_SEL, count - 1);
		uint64_t t2 = rd(XR_REG_EVLOG_TS_LO) | (uint64_t)rd(XR_REG_EVLOG_TS_HI) << 32;
		assert_true(t2 >= t1 && t2 > 0);
	}
}

/* ---- capacity: 65,536 QPs and MRs ---- */

static void test_table_capacity(void **state)
{
	const uint32_t n = 65536;
	struct xr_qp_ctx c = rc_ctx(XR_QPS_RESET), back;
	struct xr_mr_ctx m = { .page_shift = 12, .access = XR_ACCESS_LOCAL_WRITE };
	uint32_t *keys = malloc(n * sizeof(*keys));

	(void)state;
	for (uint32_t i = 0; i < n; i++) {
		c.dest_qpn = i;
		assert_int_equal(xr_regio_qp_commit(R, XR_FIRST_QPN + i, &c, NULL), 0);
		m.va = (uint64_t)i << 20;
		assert_int_equal(xr_regio_mr_commit(R, 1 + i, &m, NULL), 0);
		keys[i] = m.rkey;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct xr_qp *qp = xr_qp_lookup(E, XR_FIRST_QPN + i);
		struct xr_mr *mr = xr_mr_lookup(E, keys[i]);
		assert_non_null(qp);
		assert_int_equal(qp->ctx.dest_qpn, i);
		assert_non_null(mr);
		assert_int_equal(mr->ctx.va, (uint64_t)i << 20);
	}
	assert_int_equal(xr_regio_qp_read(R, XR_FIRST_QPN + n - 1, &back), 0);
	assert_int_equal(back.dest_qpn, n - 1);
	free(keys);
}

/* ---- backends ---- */

/* Records every access, stacked on another backend. */
struct trace {
	struct xr_regio *inner;
	uint32_t off[64], val[64];
	bool write[64];
	unsigned n;
};

static int trace_read(void *ctx, uint32_t a, uint32_t *v)
{
	struct trace *t = ctx;
	if (t->n < 64) { t->off[t->n] = a; t->write[t->n] = false; t->val[t->n++] = 0; }
	return xr_regio_read(t->inner, a, v);
}

static int trace_write(void *ctx, uint32_t a, uint32_t v)
{
	struct trace *t = ctx;
	if (t->n < 64) { t->off[t->n] = a; t->write[t->n] = true; t->val[t->n++] = v; }
	return xr_regio_write(t->inner, a, v);
}

static const struct xr_regio_ops trace_ops = { trace_read, trace_write, NULL };

static void test_mmio_backend_access_pattern(void **state)
{
	const size_t size = 0x300000;
	int fd = memfd_create("xroce-bar", 0);
	char path[64];
	struct xr_regio *mmio, tr;
	struct trace t = { .n = 0 };
	struct xr_qp_ctx c = rc_ctx(XR_QPS_INIT);
	volatile uint32_t *bar;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	mmio = xr_regio_mmio(path, 0, size);
	assert_non_null(mmio);
	bar = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(bar != MAP_FAILED);
	t.inner = mmio;
	tr.ops = &trace_ops;
	tr.ctx = &t;

	c.dest_qpn = 0xABCDE;
	c.sq_psn = 0x12345;
	assert_int_equal(xr_regio_qp_commit(&tr, 0x77, &c, NULL), 0);
	/* Every write landed at its register's offset... */
	for (unsigned i = 0; i < t.n; i++) {
		assert_true(t.write[i]);
		assert_int_equal(bar[t.off[i] / 4], t.val[i]);
		assert_non_null(xr_reg_by_offset(t.off[i]));
	}
	assert_int_equal(bar[XR_REG_QP_SEL / 4], 0x77);
	assert_int_equal(bar[XR_REG_QP_DEST_QPN / 4], 0xABCDE);
	assert_int_equal(bar[XR_REG_QP_SQ_PSN / 4], 0x12345);
	assert_int_equal(bar[XR_REG_QP_STATE / 4] & 0xF, XR_QPS_INIT);
	/* ...the select register first, the command last and exactly once. */
	assert_int_equal(t.off[0], XR_REG_QP_SEL);
	assert_int_equal(t.off[t.n - 1], XR_REG_QP_CMD);
	assert_int_equal(t.val[t.n - 1], XR_CMD_COMMIT);
	for (unsigned i = 0; i + 1 < t.n; i++)
		assert_int_not_equal(t.off[i], XR_REG_QP_CMD);
	/* Out of the mapping: refused, not a crash. */
	{
		uint32_t v;
		assert_int_equal(xr_regio_read(mmio, (uint32_t)size, &v), -EFAULT);
		assert_int_equal(xr_regio_write(mmio, 2, 0), -EFAULT);
	}
	/* Counters read low then high. */
	t.n = 0;
	{
		uint64_t v;
		xr_regio_read_counter(&tr, XR_CNT_RX_PKTS, &v);
		assert_int_equal(t.n, 2);
		assert_int_equal(t.off[0], XR_COUNTER_BASE + 8 * XR_CNT_RX_PKTS);
		assert_int_equal(t.off[1], XR_COUNTER_BASE + 8 * XR_CNT_RX_PKTS + 4);
	}
	munmap((void *)bar, size);
	xr_regio_close(mmio);
	close(fd);
	assert_null(xr_regio_mmio("/nonexistent/bar", 0, 4096));
}

static void test_debug_socket_attach(void **state)
{
	char path[64];
	struct xr_regio *s;
	uint32_t v;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/xroce-test-%d.sock", (int)getpid());
	unlink(path);
	assert_int_equal(xr_engine_serve_debug(E, path), 0);
	assert_int_equal(xr_engine_serve_debug(E, path), -EBUSY);
	s = xr_regio_socket(path);
	assert_non_null(s);
	assert_int_equal(xr_regio_read(s, XR_REG_ID, &v), XR_AXI_OKAY);
	assert_int_equal(v, XR_REG_ID_MAGIC);
	assert_int_equal(xr_regio_write(s, XR_REG_IP_ADDR, 0x01020304), XR_AXI_OKAY);
	assert_int_equal(rd(XR_REG_IP_ADDR), 0x01020304);
	assert_int_equal(xr_regio_write(s, XR_REG_ID, 0), XR_AXI_SLVERR);
	assert_int_equal(xr_regio_read(s, 0x3, &v), XR_AXI_DECERR);
	xr_regio_close(s);
	/* A second client after the first left. */
	s = xr_regio_socket(path);
	assert_non_null(s);
	assert_int_equal(xr_regio_read(s, XR_REG_IP_ADDR, &v), XR_AXI_OKAY);
	assert_int_equal(v, 0x01020304);
	xr_regio_close(s);
	xr_engine_stop_debug(E);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_null(xr_regio_socket(path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reset_values_and_access, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slverr_decerr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bring_up_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enable_needs_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_commit_read_and_transitions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_commit_mask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_is_atomic_under_traffic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recv_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mr_keys_and_validation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_soft_reset_clears_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counter_latch_and_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_log_wraps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_capacity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_backend_access_pattern, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_attach, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
