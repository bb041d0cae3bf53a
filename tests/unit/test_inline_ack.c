/* SPDX-License-Identifier: MIT */
/*
 * Inline progress: the poll that gives a program what it waited for has
 * also answered it. A program that got its receive completion, or saw a
 * WRITE land while spinning on memory, may stop calling into the library
 * (a server at work on the request) or move its QP to ERR (the usual
 * teardown): the peer's message, delivered, must still complete with
 * success, not time out and exhaust its retries for want of the ACK.
 * (A pass that handed a small burst back before building its ACKs, tried
 * on 2026-12-06 for write_lat, failed the first and last cases.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rc_harness.h"

/* Retries run out within ~10 ms (timeout 8: 1 ms), so a missing ACK shows. */
static void open_inline(struct pair *p)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 16, .timeout = 8,
			    .retry_cnt = 2, .rnr_retry = 2 };

	assert_int_equal(h_open(p, &o), 0);
}

/* a's next completion, driving only a's engine for up to 200 ms. */
static enum xr_wc_status a_completes(struct pair *p)
{
	uint64_t until = h_now_ms() + 200;
	struct xr_wc wc;

	do {
		if (xr_poll_cq(p->a.cq, 1, &wc) == 1)
			return wc.status;
	} while (h_now_ms() < until);
	fail_msg("a has no completion in 200 ms");
	return XR_WC_GENERAL_ERR;
}

/* a SENDs 8 bytes to b's posted receive; b polls its CQ until it has it. */
static void send_and_receive(struct pair *p)
{
	struct xr_sge rs = { (uintptr_t)h_data(&p->b), 64, p->b.mr->lkey };
	struct xr_recv_wr r = { .wr_id = 7, .sg_list = &rs, .num_sge = 1 };
	struct xr_sge ss = { (uintptr_t)h_data(&p->a), 8, p->a.mr->lkey };
	struct xr_send_wr s = { .wr_id = 9, .sg_list = &ss, .num_sge = 1, .opcode = XR_WR_SEND,
				.send_flags = XR_SEND_SIGNALED };
	uint64_t until = h_now_ms() + 1000;
	struct xr_wc wc;
	int got = 0;

	assert_int_equal(xr_post_recv(p->b.qp[0], &r, NULL), 0);
	assert_int_equal(xr_post_send(p->a.qp[0], &s, NULL), 0);
	xr_engine_progress(xr_context_engine(p->a.ctx));   /* the SEND leaves */
	while (!got && h_now_ms() < until)
		got = xr_poll_cq(p->b.cq, 1, &wc);
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
}

/* b got its receive and stops calling: a's SEND completes with success. */
static void test_a_server_that_stops_polling_has_acked(void **state)
{
	struct pair p;

	(void)state;
	open_inline(&p);
	send_and_receive(&p);
	assert_int_equal(a_completes(&p), XR_WC_SUCCESS);
	h_close(&p);
}

/* b got its receive and moves its QP to ERR, its engine still running:
 * the ACK it owed has left, not been flushed with the QP. */
static void test_err_after_the_last_receive_keeps_its_ack(void **state)
{
	struct pair p;
	struct xr_qp_attr at = { .qp_state = XR_QPS_ERR };

	(void)state;
	open_inline(&p);
	send_and_receive(&p);
	assert_int_equal(xr_modify_qp(p.b.qp[0], &at, XR_QP_STATE), 0);
	for (int i = 0; i < 100; i++)
		xr_engine_progress(xr_context_engine(p.b.ctx));
	assert_int_equal(a_completes(&p), XR_WC_SUCCESS);
	h_close(&p);
}

/* b spins on memory (xr_engine_poll, as xroce-perf's write_lat) until a's
 * WRITE lands, then stops: a's WRITE completes with success. */
static void test_a_memory_spinner_that_stops_has_acked(void **state)
{
	struct pair p;
	struct xr_sge s;
	struct xr_send_wr w = { .wr_id = 3, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	volatile uint8_t *flag;
	uint64_t until;

	(void)state;
	open_inline(&p);
	s = (struct xr_sge){ (uintptr_t)h_data(&p.a), 8, p.a.mr->lkey };
	memset(h_data(&p.a), 0x6B, 8);
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
	w.wr.rdma.rkey = p.b.mr->rkey;
	flag = h_data(&p.b) + 7;
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	xr_engine_progress(xr_context_engine(p.a.ctx));
	until = h_now_ms() + 1000;
	while (*flag != 0x6B && h_now_ms() < until)
		xr_engine_poll(xr_context_engine(p.b.ctx));
	assert_int_equal(*flag, 0x6B);
	assert_int_equal(a_completes(&p), XR_WC_SUCCESS);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_server_that_stops_polling_has_acked),
		cmocka_unit_test(test_err_after_the_last_receive_keeps_its_ack),
		cmocka_unit_test(test_a_memory_spinner_that_stops_has_acked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
