/* SPDX-License-Identifier: MIT */
/* The register file: reset values, access errors, bring-up, soft reset,
 * counters, the event log and the MMIO/debug-socket backends. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nic/debug_wire.h"
#include "regs_harness.h"
#include "wire/bytes.h"

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
		0x300000, 0xFFFFFFFC, 0x0118, 0x03AC, 0x03FC,
		/* Between the CQ and the QP doorbells, and past the last QP's. */
		0x100000, 0x7FFFFC, XR_REG_SPACE, XR_REG_SPACE + 4,
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

	assert_int_equal(counter(XR_CNT_REG_DECERR), 2 * sizeof(unmapped) / sizeof(unmapped[0]) + 2 * 5);
	assert_int_equal(counter(XR_CNT_REG_SLVERR), 7);
	assert_int_equal(rd(XR_REG_REG_ERR_ADDR), XR_REG_DB_SQ + 8 * 77);
}

/* ---- the map's layout (version 3.2: 2^20 QPs, EVLOG_MASK, WQE slot sizes) ---- */

/* The addresses a register (or every register of an array) answers at. */
static uint64_t reg_end(const struct xr_reg_desc *d)
{
	return d->offset + (uint64_t)(d->count - 1) * d->stride + 4;
}

static bool share_an_address(const struct xr_reg_desc *a, const struct xr_reg_desc *b)
{
	if (reg_end(a) <= b->offset || reg_end(b) <= a->offset)
		return false;
	/* Interleaved arrays of one stride (DB_SQ and DB_RQ) do not meet. */
	if (a->count > 1 && b->count > 1 && a->stride == b->stride &&
	    (a->offset > b->offset ? a->offset - b->offset : b->offset - a->offset) % a->stride)
		return false;
	return true;
}

static void test_map_layout(void **state)
{
	size_t n;
	const struct xr_reg_desc *d = xr_reg_descs(&n);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		assert_true(reg_end(&d[i]) <= XR_REG_SPACE);
		for (size_t j = i + 1; j < n; j++)
			if (share_an_address(&d[i], &d[j]))
				fail_msg("%s and %s share an address", d[i].name, d[j].name);
	}
	/* Every QP's doorbells decode, the last one's too; one past does not. */
	assert_string_equal(xr_reg_by_offset(XR_REG_DB_SQ + 8 * (XR_MAX_QP - 1))->name, "DB_SQ");
	assert_string_equal(xr_reg_by_offset(XR_REG_DB_RQ + 8 * (XR_MAX_QP - 1))->name, "DB_RQ");
	assert_null(xr_reg_by_offset(XR_REG_DB_SQ + 8 * XR_MAX_QP));
	assert_string_equal(xr_reg_by_offset(XR_REG_DB_CQ_ARM + 8 * (XR_MAX_CQ - 1))->name, "DB_CQ_ARM");
	assert_null(xr_reg_by_offset(XR_REG_DB_CQ_CI + 8 * XR_MAX_CQ));
	assert_int_equal(rd(XR_REG_CAP_QP), XR_MAX_QP);
	assert_int_equal(rd(XR_REG_VERSION), 0x00030004);   /* 3.4: multicast groups */
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
	/* Doorbells are not logged by default (EVLOG_MASK bit 8): a stream
	 * of them would overwrite the errors the log is for. */
	{
		uint32_t before = rd(XR_REG_EVLOG_COUNT);
		assert_int_equal(rd(XR_REG_EVLOG_MASK), 1u << XR_EV_WQE_POSTED);
		assert_int_equal(xr_regio_write(R, XR_REG_DB_SQ + 8 * 70, 0), 0);
		assert_int_equal(rd(XR_REG_EVLOG_COUNT), before);
		/* A masked type stays out; an unmasked one comes in. */
		assert_int_equal(xr_regio_write(R, XR_REG_EVLOG_MASK, 1u << XR_EV_REG_ERROR), 0);
		assert_int_equal(xr_regio_write(R, 0x7FFFFC, 1), XR_AXI_DECERR);
		assert_int_equal(rd(XR_REG_EVLOG_COUNT), before);
		assert_int_equal(xr_regio_write(R, XR_REG_EVLOG_MASK, 0), 0);
	}
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
	const size_t size = XR_REG_SPACE;
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

/* A file shorter than the register window is refused: an access past its
 * end would be a SIGBUS. */
static void test_mmio_file_shorter_than_the_window(void **state)
{
	int fd = memfd_create("xroce-short", 0);
	char path[64];

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	errno = 0;
	assert_null(xr_regio_mmio(path, 0, XR_REG_SPACE));
	assert_int_equal(errno, EINVAL);
	assert_null(xr_regio_mmio(path, 4096, 4096));   /* the window past the end */
	close(fd);
}

/* E's registers served at a path of this process's. */
static void serve_debug(char *path, size_t n)
{
	snprintf(path, n, "/tmp/xroce-test-%d.sock", (int)getpid());
	unlink(path);
	assert_int_equal(xr_engine_serve_debug(E, path), 0);
}

static void test_debug_socket_attach(void **state)
{
	char path[64];
	struct xr_regio *s;
	uint32_t v;

	(void)state;
	serve_debug(path, sizeof(path));
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


/* Two threads share one client: each gets its own answers (the client
 * holds a request and its answer together), 2,000 reads each. */
struct sock_reader {
	struct xr_regio *s;
	uint32_t addr, want;
	unsigned wrong;
};

static void *read_many(void *arg)
{
	struct sock_reader *r = arg;

	for (int i = 0; i < 2000; i++) {
		uint32_t v = 0;
		if (xr_regio_read(r->s, r->addr, &v) != XR_AXI_OKAY || v != r->want)
			r->wrong++;
	}
	return NULL;
}

static void test_debug_socket_shared_by_threads(void **state)
{
	char path[64];
	struct sock_reader a = { .addr = XR_REG_ID, .want = XR_REG_ID_MAGIC },
			   b = { .addr = XR_REG_VERSION, .want = XR_REGMAP_VERSION };
	pthread_t ta, tb;

	(void)state;
	serve_debug(path, sizeof(path));
	a.s = b.s = xr_regio_socket(path);
	assert_non_null(a.s);
	assert_int_equal(pthread_create(&ta, NULL, read_many, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, read_many, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.wrong, 0);
	assert_int_equal(b.wrong, 0);
	xr_regio_close(a.s);
	xr_engine_stop_debug(E);
}

/* The server goes while a client is attached: its accesses fail, and keep
 * failing, with an error, not a SIGPIPE that ends the program. */
static void test_debug_socket_server_gone(void **state)
{
	char path[64];
	struct xr_regio *s;
	uint32_t v;

	(void)state;
	serve_debug(path, sizeof(path));
	s = xr_regio_socket(path);
	assert_non_null(s);
	assert_int_equal(xr_regio_read(s, XR_REG_ID, &v), XR_AXI_OKAY);
	xr_engine_stop_debug(E);
	for (int i = 0; i < 3; i++) {
		assert_true(xr_regio_read(s, XR_REG_ID, &v) < 0);
		assert_true(xr_regio_write(s, XR_REG_IP_ADDR, 1) < 0);
	}
	xr_regio_close(s);
}

/* A client that sends a request and leaves before its answer: the server
 * drops it (no SIGPIPE ends this program) and serves the next. */
static void test_debug_socket_client_gone_before_its_answer(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t req[XR_DBG_REQ_LEN] = { XR_DBG_OP_READ };
	struct xr_regio *s;
	uint32_t v;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/xroce-test-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	assert_int_equal(xr_engine_serve_debug(E, sa.sun_path), 0);
	for (int i = 0; i < 20; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		put_le32(req + 4, XR_REG_ID);
		assert_int_equal(write(fd, req, sizeof(req)), (ssize_t)sizeof(req));
		close(fd);
	}
	s = xr_regio_socket(sa.sun_path);
	assert_non_null(s);
	assert_int_equal(xr_regio_read(s, XR_REG_ID, &v), XR_AXI_OKAY);
	assert_int_equal(v, XR_REG_ID_MAGIC);
	xr_regio_close(s);
	xr_engine_stop_debug(E);
}

static int raw_client(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void *stop_server(void *arg)
{
	xr_engine_stop_debug(arg);
	return NULL;
}

/* Clients that misbehave hold nobody up: one that sent part of a request
 * and stopped, one that floods requests and reads no answer. Another is
 * served beside them, and the server stops when asked. */
static void test_debug_socket_misbehaving_clients(void **state)
{
	uint8_t req[XR_DBG_REQ_LEN] = { XR_DBG_OP_READ };
	char path[64];
	struct xr_regio *s;
	int idle, flood;
	uint32_t v;

	(void)state;
	serve_debug(path, sizeof(path));
	idle = raw_client(path);
	assert_int_equal(write(idle, req, 3), 3);
	flood = raw_client(path);
	put_le32(req + 4, XR_REG_ID);
	fcntl(flood, F_SETFL, O_NONBLOCK);
	/* Until the socket is full, or the server has dropped it (no SIGPIPE). */
	for (int i = 0; i < 100000 && send(flood, req, sizeof(req), MSG_NOSIGNAL) == (ssize_t)sizeof(req); i++)
		;
	s = xr_regio_socket(path);
	assert_non_null(s);
	assert_int_equal(xr_regio_read(s, XR_REG_ID, &v), XR_AXI_OKAY);
	assert_int_equal(v, XR_REG_ID_MAGIC);
	xr_regio_close(s);
	assert_true(h_finishes(stop_server, E));   /* within 5 s */
	close(idle);
	close(flood);
}

/* A server that never answers: the access fails after the client's wait,
 * and so does every later one, since the late answer would be read as
 * theirs. */
static void *accept_and_keep(void *arg)
{
	int *fds = arg;

	fds[1] = accept(fds[0], NULL, NULL);
	return NULL;
}

static void test_debug_socket_server_that_never_answers(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t resp[XR_DBG_RESP_LEN] = { 0 }, req[XR_DBG_REQ_LEN];
	int fds[2] = { socket(AF_UNIX, SOCK_STREAM, 0), -1 };
	struct xr_regio *s;
	pthread_t t;
	uint32_t v;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/xroce-test-%d.mute", (int)getpid());
	unlink(sa.sun_path);
	assert_int_equal(bind(fds[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fds[0], 1), 0);
	assert_int_equal(pthread_create(&t, NULL, accept_and_keep, fds), 0);
	s = xr_regio_socket(sa.sun_path);
	assert_non_null(s);
	pthread_join(t, NULL);
	assert_int_equal(xr_regio_read(s, XR_REG_ID, &v), -ETIMEDOUT);
	/* The answer comes late: the next access must not take it. */
	assert_int_equal(read(fds[1], req, sizeof(req)), (ssize_t)sizeof(req));
	assert_int_equal(write(fds[1], resp, sizeof(resp)), (ssize_t)sizeof(resp));
	assert_true(xr_regio_read(s, XR_REG_ID, &v) < 0);
	xr_regio_close(s);
	close(fds[1]);
	close(fds[0]);
	unlink(sa.sun_path);
}

/* A server whose backlog is full (it accepts nobody): the client's
 * connect gives up after its wait instead of blocking without end. */
static void test_debug_socket_server_that_accepts_nobody(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ls = socket(AF_UNIX, SOCK_STREAM, 0), fill[64], nfill = 0;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/xroce-test-%d.full", (int)getpid());
	unlink(sa.sun_path);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 1), 0);
	while (nfill < 64) {   /* until the backlog refuses one */
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			break;
		}
		fill[nfill++] = fd;
	}
	errno = 0;
	assert_null(xr_regio_socket(sa.sun_path));
	assert_int_equal(errno, ETIMEDOUT);
	while (nfill)
		close(fill[--nfill]);
	close(ls);
	unlink(sa.sun_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reset_values_and_access, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slverr_decerr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bring_up_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enable_needs_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_soft_reset_clears_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counter_latch_and_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_log_wraps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_backend_access_pattern, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_file_shorter_than_the_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_shared_by_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_server_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_client_gone_before_its_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_misbehaving_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_server_that_never_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_socket_server_that_accepts_nobody, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
