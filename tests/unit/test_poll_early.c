/* SPDX-License-Identifier: MIT */
/*
 * A caller that polls in a tight loop (xr_engine_poll) runs the pass in
 * its own thread and sees what a burst placed only once the pass returns.
 * After a small burst the pass returns before building what the burst
 * calls for; the caller's next poll builds it, with what the caller
 * posted in between (a ping-pong's reply leaves with the ACK). Passes of
 * xr_engine_progress, a stream's bursts and the pass after an early one
 * serve at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rc_harness.h"

static struct xr_engine *eng(struct end *e)
{
	return xr_context_engine(e->ctx);
}

static void open_inline(struct pair *p)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 16, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7 };

	assert_int_equal(h_open(p, &o), 0);
}

/* from posts a WRITE of len bytes of v at off into to's buffer. */
static void post_write(struct end *from, struct end *to, uint32_t off, uint32_t len, uint8_t v, bool signaled)
{
	struct xr_sge s = { (uintptr_t)h_data(from) + off, len, from->mr->lkey };
	struct xr_send_wr w = { .wr_id = off, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = signaled ? XR_SEND_SIGNALED : 0 };

	memset(h_data(from) + off, v, len);
	w.wr.rdma.remote_addr = (uintptr_t)h_data(to) + off;
	w.wr.rdma.rkey = to->mr->rkey;
	assert_int_equal(xr_post_send(from->qp[0], &w, NULL), 0);
}

/* The same, sent by from's pass. */
static void write_at(struct end *from, struct end *to, uint32_t off, uint32_t len, uint8_t v, bool signaled)
{
	post_write(from, to, off, len, v, signaled);
	xr_engine_progress(eng(from));
}

static uint64_t sent(struct end *e)
{
	return h_counter(e, XR_CNT_TX_PKTS);
}

/* b polls once: the WRITE's bytes are there, its ACK not built yet. b
 * answers with a WRITE of its own; its next poll sends both, and a's
 * WRITE completes. */
static void test_a_polled_write_is_seen_before_its_ack(void **state)
{
	struct pair p;
	struct xr_wc wc;
	uint64_t b_sent;

	(void)state;
	open_inline(&p);
	b_sent = sent(&p.b);
	write_at(&p.a, &p.b, 0, 8, 0x5A, true);
	assert_int_equal(xr_engine_poll(eng(&p.b)), 1);
	assert_int_equal(h_data(&p.b)[7], 0x5A);
	assert_int_equal(sent(&p.b), b_sent);   /* the ACK waits for the next poll */

	post_write(&p.b, &p.a, 64, 8, 0xA5, false);
	xr_engine_poll(eng(&p.b));   /* ACK and WRITE leave together */
	assert_int_equal(sent(&p.b), b_sent + 2);
	assert_int_equal(h_wait(&p, &p.a, &wc, 1000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 0);
	assert_int_equal(h_data(&p.a)[64 + 7], 0xA5);
	h_close(&p);
}

/* A caller of xr_engine_progress (a blocking wait's slice) is not in a
 * tight loop: its pass answers at once. */
static void test_a_progress_pass_answers_at_once(void **state)
{
	struct pair p;
	uint64_t b_sent;

	(void)state;
	open_inline(&p);
	b_sent = sent(&p.b);
	write_at(&p.a, &p.b, 0, 8, 0x11, true);
	xr_engine_progress(eng(&p.b));
	assert_int_equal(h_data(&p.b)[0], 0x11);
	assert_int_equal(sent(&p.b), b_sent + 1);
	h_close(&p);
}

/* Small bursts back to back: the pass after an early one serves, so a
 * stream of them never keeps the ACKs waiting more than a poll. */
static void test_every_other_pass_at_most_returns_early(void **state)
{
	struct pair p;
	uint64_t b_sent;

	(void)state;
	open_inline(&p);
	b_sent = sent(&p.b);
	write_at(&p.a, &p.b, 0, 8, 0x21, true);
	xr_engine_poll(eng(&p.b));
	assert_int_equal(sent(&p.b), b_sent);
	write_at(&p.a, &p.b, 64, 8, 0x22, true);
	xr_engine_poll(eng(&p.b));   /* a frame again, but this pass serves */
	assert_true(sent(&p.b) > b_sent);
	assert_int_equal(h_data(&p.b)[64], 0x22);
	h_close(&p);
}

/* A burst larger than a ping-pong's is a stream's: served in its pass. */
static void test_a_large_burst_is_served_at_once(void **state)
{
	struct pair p;
	uint64_t b_sent;

	(void)state;
	open_inline(&p);
	b_sent = sent(&p.b);
	for (uint32_t i = 0; i < 8; i++)
		write_at(&p.a, &p.b, i * 64, 8, (uint8_t)i, true);
	assert_true(sent(&p.a) >= 8);
	xr_engine_poll(eng(&p.b));
	assert_true(sent(&p.b) > b_sent);
	assert_int_equal(h_data(&p.b)[7 * 64], 7);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_polled_write_is_seen_before_its_ack),
		cmocka_unit_test(test_a_progress_pass_answers_at_once),
		cmocka_unit_test(test_every_other_pass_at_most_returns_early),
		cmocka_unit_test(test_a_large_burst_is_served_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
