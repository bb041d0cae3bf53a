/* SPDX-License-Identifier: MIT */
/*
 * A payload's source written while it is sent: memory read by a peer's
 * READ that the host keeps changing (a seqlock, a version-checked store),
 * or a send buffer changed under a posted WRITE. The data that arrives is
 * whatever the engine read, but every frame's ICRC must be the CRC of the
 * bytes it carries: read once, into the frame. (On 2026-12-06 a CRC over
 * the source before the copy read it twice: READs met bad ICRCs, retried
 * and failed with retries exhausted.) Copies only: a gather link's frame
 * reads the payload where it lies, and a change there is a dropped frame
 * by design (test_gather). Both progress modes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "rc_checks.h"

#define OPS 300
#define OP_LEN (32u << 10)

struct scribbler {
	uint8_t *buf;
	size_t len;
	atomic_bool stop;
	atomic_ulong passes;
};

static void *scribble(void *arg)
{
	struct scribbler *s = arg;
	unsigned v = 0;

	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		memset(s->buf, (int)(v++ & 0xFF), s->len);
		atomic_fetch_add_explicit(&s->passes, 1, memory_order_relaxed);
	}
	return NULL;
}

/* At a page offset that splits MTU-sized packets across the region's
 * pages, so a packet's payload is read in pieces. */
static uint8_t *split_start(struct end *e)
{
	uintptr_t base = (uintptr_t)h_data(e);

	return (uint8_t *)(base + ((3552 - (base & 4095)) & 4095));
}

static void run(bool read)
{
	struct h_opts o = { .mode = MODE, .mtu = XR_MTU_1024, .buf_len = 1 << 16, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7 };
	struct scribbler s = { 0 };
	struct pair p;
	pthread_t t;
	unsigned ok = 0;
	uint64_t until;

	assert_int_equal(h_open(&p, &o), 0);
	/* The bytes being sent: b's for a READ, a's own for a WRITE. */
	s.buf = split_start(read ? &p.b : &p.a);
	s.len = OP_LEN;
	assert_int_equal(pthread_create(&t, NULL, scribble, &s), 0);
	until = h_now_ms() + 20000;
	/* The writer running before the first operation, and on through ten
	 * of its passes at least: on a loaded machine its thread may wait
	 * for a core while 300 operations go by. */
	while (!atomic_load(&s.passes) && h_now_ms() < until)
		usleep(100);
	for (unsigned i = 0; (i < OPS || atomic_load(&s.passes) <= 10) && h_now_ms() < until; i++) {
		uint8_t *local = read ? h_data(&p.a) : split_start(&p.a);
		struct xr_sge sge = { (uintptr_t)local, OP_LEN, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					.opcode = read ? XR_WR_RDMA_READ : XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)(read ? split_start(&p.b) : h_data(&p.b));
		w.wr.rdma.rkey = p.b.mr->rkey;
		assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
		expect_wc(&p, &p.a, i, XR_WC_SUCCESS, read ? XR_WC_RDMA_READ : XR_WC_RDMA_WRITE,
			  read ? "READ of memory being written" : "WRITE from a buffer being written");
		ok++;
	}
	atomic_store(&s.stop, true);
	pthread_join(t, NULL);
	assert_true(ok >= OPS);
	assert_true(atomic_load(&s.passes) > 10);   /* the source really changed under the traffic */
	assert_int_equal(h_counter(&p.a, XR_CNT_PARSE_BAD_ICRC), 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 0);
	h_close(&p);
}

static void test_read_of_memory_being_written(void **state)
{
	(void)state;
	run(true);
}

static void test_write_from_a_buffer_being_written(void **state)
{
	(void)state;
	run(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_read_of_memory_being_written),
		BOTH(test_write_from_a_buffer_being_written),
	};

	unsetenv("XROCE_TEST_GATHER");   /* copies only (above) */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
