/* SPDX-License-Identifier: MIT */
/*
 * The ACK timer of an engine kept off its core (a loaded host, a
 * descheduled thread): when it runs again, the answer may already wait in
 * its receive ring, behind other traffic. The ring is read before the
 * timer is judged, so a healthy QP neither retransmits for nothing nor,
 * late again and again, spends its retry count; a ring that never
 * empties still lets the timer fire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
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

/* timeout 10: 4.096 us * 2^10, about 4.2 ms. link_depth 0: the mem
 * link's default. */
static void open_pair(unsigned nqp, unsigned link_depth)
{
	const struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 16,
				  .nqp = nqp, .sq_depth = 512, .timeout = 10, .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1, .link_depth = link_depth };

	fake_now = 1000000;
	assert_int_equal(h_open(&P, &o), 0);
	xr_engine_set_clock(xr_context_engine(P.a.ctx), fake_clock, NULL);
	xr_engine_set_clock(xr_context_engine(P.b.ctx), fake_clock, NULL);
}

/* n frames from B's side of the link into A's ring: SENDs to a QP number
 * A does not have, as another connection's traffic would be (each one a
 * counted drop). */
static void traffic_to_a(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct xr_frame *f = xr_link_frame_alloc(P.lb);
		struct xr_pkt p;

		assert_non_null(f);
		xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
		memcpy(p.smac, P.lb->mac, 6);
		memcpy(p.dmac, P.la->mac, 6);
		xr_query_gid(P.b.ctx, &p.sgid);
		xr_query_gid(P.a.ctx, &p.dgid);
		p.pkey = 0xFFFF;
		p.dqpn = 0xABCDE;
		p.psn = i;
		assert_true(xr_pkt_build_hdrs(&p, f->data, sizeof(f->data)) > 0);
		xr_pkt_finish(&p, f->data);
		f->len = p.len;
		assert_int_equal(xr_link_send(P.lb, &f, 1), 1);
	}
}

/* A WRITE of len bytes on A's QP q, signaled or not. */
static void post_write(unsigned q, uint64_t wr_id, uint32_t len, unsigned flags)
{
	struct xr_sge s = { (uintptr_t)h_data(&P.a), len, P.a.mr->lkey };
	struct xr_send_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				 .send_flags = flags };

	wr.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b);
	wr.wr.rdma.rkey = P.b.mr->rkey;
	assert_int_equal(xr_post_send(P.a.qp[q], &wr, NULL), 0);
}

static struct xr_engine *engine_a(void)
{
	return xr_context_engine(P.a.ctx);
}

/* The ACK sits behind three bursts of other frames when A comes back a
 * second late: A reads it first, and nothing is retransmitted. */
static void test_ack_in_the_ring_beats_the_timer(void **state)
{
	struct xr_wc wc;
	(void)state;

	open_pair(1, 0);
	post_write(0, 1, 64, XR_SEND_SIGNALED);
	xr_engine_progress(engine_a());                  /* the WRITE leaves */
	traffic_to_a(96);
	xr_engine_progress(xr_context_engine(P.b.ctx));  /* B takes it and ACKs: behind the 96 */
	fake_now += 1000000000;                          /* A was away for a second */
	for (int i = 0; i < 8; i++)
		xr_engine_progress(engine_a());
	if (h_counter(&P.a, XR_CNT_ACK_TIMEOUTS) || h_counter(&P.a, XR_CNT_RETRANSMITS))
		h_dump(&P);
	assert_int_equal(h_counter(&P.a, XR_CNT_ACK_TIMEOUTS), 0);
	assert_int_equal(h_counter(&P.a, XR_CNT_RETRANSMITS), 0);
	assert_int_equal(h_counter(&P.a, XR_CNT_DROP_UNKNOWN_QPN), 96);
	assert_int_equal(h_counter(&P.a, XR_CNT_RX_ACK), 1);
	assert_int_equal(xr_poll_cq(P.a.cq, 1, &wc), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	h_close(&P);
}

/* A ring that never empties (a burst's worth comes in every pass) and no
 * answer: the timer still fires, after a bounded number of frames. */
static void test_full_ring_still_lets_the_timer_fire(void **state)
{
	int passes = 0;
	(void)state;

	open_pair(1, 0);
	post_write(0, 2, 64, XR_SEND_SIGNALED);
	xr_engine_progress(engine_a());
	fake_now += 1000000000;   /* B never answers */
	traffic_to_a(64);
	while (!h_counter(&P.a, XR_CNT_ACK_TIMEOUTS) && passes < 1000) {
		traffic_to_a(32);   /* as many as a pass takes: two bursts always wait */
		xr_engine_progress(engine_a());
		passes++;
	}
	assert_int_equal(h_counter(&P.a, XR_CNT_ACK_TIMEOUTS), 1);
	assert_int_equal(h_counter(&P.a, XR_CNT_RETRANSMITS), 1);
	/* Deferred by at most XR_RX_DRAIN_MAX frames (4096): 128 bursts. */
	assert_true(passes <= 4096 / 32 + 2);
	h_close(&P);
}

/* As above, with 31 QPs streaming beside the one that waits, a link that
 * holds 128 frames (each pass fills it: the QPs a pass does not reach are
 * served by the next ones) and the waiter's WRITE lost: its timer fires
 * within the bound all the same. (A single pass of timers after the cap
 * put the waiter behind the streams, and the passes that served it had
 * timers off again: it never fired.) */
static void test_busy_link_still_lets_the_timer_fire(void **state)
{
	enum { NQP = 32 };
	struct xr_frame *lost[8];
	int passes = 0, got;
	(void)state;

	open_pair(NQP, 128);
	post_write(0, 1, 64, XR_SEND_SIGNALED);
	xr_engine_progress(engine_a());
	got = xr_link_recv(P.lb, lost, 8);   /* the waiter's WRITE, lost */
	assert_int_equal(got, 1);
	xr_link_frame_free(P.lb, lost[0]);
	fake_now += 1000000000;
	for (unsigned q = 1; q < NQP; q++)
		for (int k = 0; k < 400; k++)
			post_write(q, 100 + (uint64_t)k, 65536, 0);
	while (!h_counter(&P.a, XR_CNT_ACK_TIMEOUTS) && passes < 20000) {
		uint32_t queued = 0, cap = 0;
		assert_int_equal(xr_link_rx_backlog(P.la, &queued, &cap), 0);
		if (queued < 40)
			traffic_to_a(40 - queued);   /* every burst A takes is full */
		xr_engine_progress(engine_a());
		xr_engine_progress(xr_context_engine(P.b.ctx));
		passes++;
	}
	assert_true(h_counter(&P.a, XR_CNT_ACK_TIMEOUTS) >= 1);
	assert_true(passes <= 4096 / 32 + 64);
	h_close(&P);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ack_in_the_ring_beats_the_timer),
		cmocka_unit_test(test_full_ring_still_lets_the_timer_fire),
		cmocka_unit_test(test_busy_link_still_lets_the_timer_fire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
