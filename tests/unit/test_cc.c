/* SPDX-License-Identifier: MIT */
/*
 * DCQCN's arithmetic step by step, the reaction point's checks, and a
 * paced QP that must not time out: two engines on a mem pair, their
 * timers on a clock the test moves, CNPs built here and handed to B.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rc_harness.h"

static uint64_t fake_now = 1000000;

static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static struct pair P;

static void reg_write(struct end *e, uint32_t off, uint32_t v)
{
	assert_int_equal(xr_regio_write(xr_context_regs(e->ctx), off, v), 0);
}

static void open_pair(uint8_t timeout, uint8_t retry_cnt)
{
	const struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_4096, .buf_len = 1 << 20,
				  .timeout = timeout, .retry_cnt = retry_cnt, .rnr_retry = 7, .min_rnr_timer = 1 };

	fake_now = 1000000;
	assert_int_equal(h_open(&P, &o), 0);
	xr_engine_set_clock(xr_context_engine(P.a.ctx), fake_clock, NULL);
	xr_engine_set_clock(xr_context_engine(P.b.ctx), fake_clock, NULL);
	reg_write(&P.b, XR_REG_DCQCN_MAX_RATE, 10000);   /* a 10 Gb/s line */
}

/* A CNP from src to dst for qpn, as a peer's NIC sends it, into B. */
static void cnp_to_b(const char *src, const char *dst, uint32_t qpn)
{
	struct xr_frame *f = xr_link_frame_alloc(P.la);
	struct xr_pkt p;

	assert_non_null(f);
	xr_pkt_init(&p, XR_OP_CNP);
	memcpy(p.smac, P.la->mac, 6);
	memcpy(p.dmac, P.lb->mac, 6);
	assert_int_equal(xr_gid_parse(&p.sgid, src), 0);
	assert_int_equal(xr_gid_parse(&p.dgid, dst), 0);
	p.pkey = 0xFFFF;
	p.dqpn = qpn;
	assert_true(xr_pkt_build_hdrs(&p, f->data, sizeof(f->data)) > 0);
	xr_pkt_finish(&p, f->data);
	f->len = p.len;
	assert_int_equal(xr_link_send(P.la, &f, 1), 1);
	for (int i = 0; i < 4; i++)
		h_progress(&P);
}

static void advance(uint64_t ns)
{
	fake_now += ns;
	h_progress(&P);
}

/* Defaults: g 1/256, alpha starting at 1, K = T = 55 us, F 5, R_AI 40 Mb/s. */
static void test_dcqcn_steps(void **state)
{
	uint32_t qb;
	struct xr_qp_ctx c;
	(void)state;

	open_pair(14, 7);
	qb = xr_qp_num(P.b.qp[0]);
	c = h_qp_read(&P.b);
	assert_int_equal(c.cc_rate, 0);   /* not paced before a CNP */

	/* First CNP: from line rate, cut by alpha/2 = 1/2; alpha stays 1. */
	cnp_to_b("10.0.0.1", "10.0.0.2", qb);
	c = h_qp_read(&P.b);
	assert_int_equal(c.cnp_rcvd, 1);
	assert_int_equal(c.cc_rate, 5000);
	assert_int_equal(c.cc_target, 10000);
	assert_int_equal(c.cc_alpha, 1024);
	/* Again at once: no increase since, so the target stays. */
	cnp_to_b("10.0.0.1", "10.0.0.2", qb);
	c = h_qp_read(&P.b);
	assert_int_equal(c.cc_rate, 2500);
	assert_int_equal(c.cc_target, 10000);
	/* One timer period: fast recovery halfway to the target; alpha
	 * decays by (1 - g) for the period without a CNP. */
	advance(55000);
	c = h_qp_read(&P.b);
	assert_int_equal(c.cc_rate, 6250);
	assert_int_equal(c.cc_target, 10000);
	assert_int_equal(c.cc_alpha, 1020);
	/* A cut after an increase: the target becomes the current rate, the
	 * cut uses the decayed alpha, then alpha = (1 - g) alpha + g. */
	advance(1000);
	cnp_to_b("10.0.0.1", "10.0.0.2", qb);
	c = h_qp_read(&P.b);
	double a = 255.0 / 256;
	assert_int_equal(c.cc_target, 6250);
	assert_true(fabs(c.cc_rate - 6250 * (1 - a / 2)) <= 1);
	assert_true(fabs(c.cc_alpha - 1024 * (a * 255 / 256 + 1.0 / 256)) <= 1);
	/* Four more periods: fast recovery, target unchanged; the fifth: additive. */
	for (int k = 1; k <= 4; k++)
		advance(55000);
	assert_int_equal(h_qp_read(&P.b).cc_target, 6250);
	advance(55000);
	assert_int_equal(h_qp_read(&P.b).cc_target, 6290);
	/* Additive steps climb back to line rate, where DCQCN lets go. */
	for (int k = 0; k < 200 && h_qp_read(&P.b).cc_rate; k++)
		advance(55000);
	c = h_qp_read(&P.b);
	assert_int_equal(c.cc_rate, 0);
	assert_int_equal(c.cc_target, 0);
	assert_int_equal(h_counter(&P.b, XR_CNT_DCQCN_CUTS), 3);
	assert_true(h_counter(&P.b, XR_CNT_DCQCN_INCREASES) > 90);
	h_close(&P);
}

/* Only the QP's peer, to this engine's address, for a QP that sends. */
static void test_cnp_checks(void **state)
{
	uint32_t qb;
	(void)state;

	open_pair(14, 7);
	qb = xr_qp_num(P.b.qp[0]);
	cnp_to_b("10.0.0.9", "10.0.0.2", qb);          /* not the peer */
	cnp_to_b("10.0.0.1", "10.0.0.2", qb + 100);    /* no such QP */
	assert_int_equal(h_counter(&P.b, XR_CNT_DROP_CNP), 2);
	cnp_to_b("10.0.0.1", "10.0.0.7", qb);          /* not our address */
	assert_int_equal(h_counter(&P.b, XR_CNT_DROP_NOT_FOR_US), 1);
	assert_int_equal(h_qp_read(&P.b).cnp_rcvd, 0);
	assert_int_equal(h_qp_read(&P.b).cc_rate, 0);
	assert_int_equal(h_counter(&P.b, XR_CNT_CNP_RCVD), 3);
	/* dcqcn_enable off: counted on the QP, the rate is left alone. */
	uint32_t ctrl = 0;
	xr_regio_read(xr_context_regs(P.b.ctx), XR_REG_CC_CTRL, &ctrl);
	reg_write(&P.b, XR_REG_CC_CTRL, ctrl & ~XR_CC_DCQCN_ENABLE);
	cnp_to_b("10.0.0.1", "10.0.0.2", qb);
	assert_int_equal(h_qp_read(&P.b).cnp_rcvd, 1);
	assert_int_equal(h_qp_read(&P.b).cc_rate, 0);
	/* A QP in RESET takes none. */
	struct xr_qp_attr a = { .qp_state = XR_QPS_RESET };
	reg_write(&P.b, XR_REG_CC_CTRL, ctrl);
	assert_int_equal(xr_modify_qp(P.b.qp[0], &a, XR_QP_STATE), 0);
	cnp_to_b("10.0.0.1", "10.0.0.2", qb);
	assert_int_equal(h_counter(&P.b, XR_CNT_DROP_CNP), 3);
	h_close(&P);
}

/* A 64 KiB WRITE paced at 10 Mb/s takes 55 ms against a 1 ms ACK timeout
 * and one retry: between its packets nothing is unacknowledged, so the
 * timer must not run (it used to time out and fail the QP). */
static void test_paced_qp_does_not_time_out(void **state)
{
	struct xr_qp_attr a = { .rate_limit = 10000 };
	struct xr_sge sg;
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;
	int got = 0;
	(void)state;

	open_pair(8, 1);
	assert_int_equal(xr_modify_qp(P.a.qp[0], &a, XR_QP_RATE_LIMIT), 0);
	sg = (struct xr_sge){ (uintptr_t)h_data(&P.a), 65536, P.a.mr->lkey };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b);
	w.wr.rdma.rkey = P.b.mr->rkey;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, NULL), 0);
	uint64_t start = fake_now;
	for (int i = 0; i < 20000 && !got; i++) {
		advance(10000);
		got = xr_poll_cq(P.a.cq, 1, &wc);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	printf("64 KiB at 10 Mb/s: %.1f ms, %llu ACK timeouts, %llu pacer holds\n", (fake_now - start) / 1e6,
	       (unsigned long long)h_counter(&P.a, XR_CNT_ACK_TIMEOUTS), (unsigned long long)h_counter(&P.a, XR_CNT_PACER_WAITS));
	assert_true(fake_now - start >= 40000000);   /* it was paced: 12 of its 16 packets 4.2 ms apart */
	assert_int_equal(h_counter(&P.a, XR_CNT_ACK_TIMEOUTS), 0);
	assert_int_equal(h_counter(&P.a, XR_CNT_RETRANSMITS), 0);
	h_close(&P);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dcqcn_steps),
		cmocka_unit_test(test_cnp_checks),
		cmocka_unit_test(test_paced_qp_does_not_time_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
