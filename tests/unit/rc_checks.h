/* SPDX-License-Identifier: MIT */
/* What the RC suites share: the mode under test, counters, payloads, the
 * base options, completion checks and the pcap tap's frames (test_rc.c,
 * test_rc_errors.c, test_tx_hdr.c). */
#ifndef XR_TEST_RC_CHECKS_H
#define XR_TEST_RC_CHECKS_H

#include <unistd.h>

#include "rc_harness.h"
#include "test_util.h"

static enum xr_progress_mode MODE;

static inline uint64_t cnt(struct end *e, enum xr_counter c)
{
	uint64_t v = 0;
	assert_int_equal(xr_regio_read_counter(xr_context_regs(e->ctx), c, &v), 0);
	return v;
}

static inline void fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(test_rand(&seed) >> 17);
}

static inline struct h_opts base_opts(enum xr_mtu mtu)
{
	/* Slow machines and sanitizers must not turn a late ACK into a failure:
	 * these tests are about operations, not retry budgets (those set
	 * retry_cnt themselves). */
	struct h_opts o = { .mode = MODE, .mtu = mtu, .buf_len = 3u << 20, .timeout = 12, .retry_cnt = 7,
			    .rnr_retry = 7, .min_rnr_timer = 1, .retry7_forever = true };
	return o;
}

/* Three SGEs covering [off, off+len) of e's buffer, uneven. */
static inline int split_sges(struct end *e, size_t off, uint32_t len, struct xr_sge *s)
{
	uint32_t a = len / 3, b = len / 2 - len / 3;

	if (len < 3) {
		s[0] = (struct xr_sge){ (uintptr_t)h_data(e) + off, len, e->mr->lkey };
		return 1;
	}
	s[0] = (struct xr_sge){ (uintptr_t)h_data(e) + off, a, e->mr->lkey };
	s[1] = (struct xr_sge){ (uintptr_t)h_data(e) + off + a, b, e->mr->lkey };
	s[2] = (struct xr_sge){ (uintptr_t)h_data(e) + off + a + b, len - a - b, e->mr->lkey };
	return 3;
}

/* A signaled WRITE of len bytes on a's QP q, from a's buffer at off to
 * b's at off. */
static inline void post_write_at(struct pair *p, unsigned q, size_t off, uint32_t len, uint64_t id)
{
	struct xr_sge sge = { (uintptr_t)h_data(&p->a) + off, len, p->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				.opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + off;
	w.wr.rdma.rkey = p->b.mr->rkey;
	assert_int_equal(xr_post_send(p->a.qp[q], &w, NULL), 0);
}

static inline void expect_wc(struct pair *p, struct end *e, uint64_t wr_id, enum xr_wc_status st,
		      enum xr_wc_opcode op, const char *what)
{
	struct xr_wc wc;
	if (!h_wait(p, e, &wc, 5000))
		fail_msg("%s: no completion", what);
	if (wc.wr_id != wr_id || wc.status != st || (st == XR_WC_SUCCESS && wc.opcode != op))
		fail_msg("%s: wc id %llu status %d (%s) opcode %d, expected id %llu status %d opcode %d", what,
			 (unsigned long long)wc.wr_id, wc.status, xr_wc_status_str(wc.status), wc.opcode,
			 (unsigned long long)wr_id, st, op);
}

/* Every frame of a pcap file (a tap's, closed), in order: each must parse
 * as RoCE v2 (the IPv4 checksum, the ICRC); fn sees each. The file goes
 * afterwards. Returns how many there were. */
static inline unsigned h_tapped_frames(const char *path, void (*fn)(const struct xr_pkt *pk, void *arg), void *arg)
{
	static uint8_t frame[XR_MAX_FRAME];
	uint8_t hdr[24], rec[16];
	unsigned n = 0;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fread(hdr, 1, 24, f), 24);
	while (fread(rec, 1, 16, f) == 16) {
		uint32_t incl = (uint32_t)rec[8] | (uint32_t)rec[9] << 8 | (uint32_t)rec[10] << 16 | (uint32_t)rec[11] << 24;
		struct xr_pkt pk;
		assert_true(incl <= sizeof(frame));
		assert_int_equal(fread(frame, 1, incl, f), incl);
		assert_int_equal(xr_pkt_parse(frame, incl, 0, 0, &pk), XR_PARSE_OK);
		fn(&pk, arg);
		n++;
	}
	fclose(f);
	unlink(path);
	return n;
}

static inline int set_thread(void **s) { (void)s; MODE = XR_PROGRESS_THREAD; return 0; }
static inline int set_inline(void **s) { (void)s; MODE = XR_PROGRESS_INLINE; return 0; }

/* Each test in both progress modes. */
#define BOTH(t) cmocka_unit_test_setup(t, set_thread), cmocka_unit_test_setup(t, set_inline)
/* The same with a teardown of the test's own. */
#define BOTH_T(t, td) cmocka_unit_test_setup_teardown(t, set_thread, td), \
	cmocka_unit_test_setup_teardown(t, set_inline, td)

#endif
