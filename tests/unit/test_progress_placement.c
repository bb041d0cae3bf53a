/* SPDX-License-Identifier: MIT */
/*
 * Where the engine thread runs. A real-time thread wakes on the core it
 * last ran on; a receiver woken by its sender there takes the sender's
 * core, spins for a next burst that cannot come while it holds that core,
 * and sleeps, over and over (ib_write_bw's server). After one burst and a
 * whole spin with nothing, the thread moves to another core.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "progress_harness.h"

#define BIG (64u << 10)

static pid_t fifo_thread(void)
{
	pid_t t[8], found = 0;
	int n = other_threads(t, 8);

	for (int i = 0; i < n; i++)
		if (task_stat(t[i], 41) == SCHED_FIFO)   /* policy */
			found = t[i];
	return found;
}

/* a writes to b (b's thread receives). */
static void write_to_b(struct pair *p, uint64_t id, uint32_t len, bool signaled)
{
	struct xr_sge s = { (uintptr_t)h_data(&p->a) + (id % 8) * BIG, len, p->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = signaled ? XR_SEND_SIGNALED : 0 };

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + (id % 8) * BIG;
	w.wr.rdma.rkey = p->b.mr->rkey;
	assert_int_equal(xr_post_send(p->a.qp[0], &w, NULL), 0);
}

static int poll_one(struct pair *p, struct xr_wc *wc)
{
	uint64_t t0 = h_now_ns();
	int got;

	while (!(got = xr_poll_cq(p->a.cq, 1, wc)) && h_now_ns() - t0 < 1000000000ull)
		;
	return got;
}

/* The sender spins on core 0, where b's real-time thread last ran: the
 * thread must leave core 0 within the stream. */
static void test_a_receiver_on_its_senders_core_moves(void **state)
{
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_4096, .buf_len = 8 * BIG, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .sq_depth = 64, .cq_depth = 256 };
	cpu_set_t mine, core0, all;
	struct pair p;
	struct xr_wc wc[16];
	uint64_t posted = 0, done = 0, t0, next_sample = 0;
	bool moved = false;
	pid_t tb;

	(void)state;
	if (geteuid() != 0)
		skip();   /* real-time needs CAP_SYS_NICE */
	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	if (!CPU_ISSET(0, &mine) || CPU_COUNT(&mine) < 2)
		skip();   /* one core: nowhere to move */
	CPU_ZERO(&core0);
	CPU_SET(0, &core0);
	all = mine;
	assert_int_equal(h_open(&p, &o), 0);
	assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 1), 0);
	tb = fifo_thread();
	assert_true(tb > 0);
	/* Both on core 0: the caller stays there, the thread may leave. */
	assert_int_equal(sched_setaffinity(0, sizeof(core0), &core0), 0);
	assert_int_equal(sched_setaffinity(tb, sizeof(core0), &core0), 0);
	write_to_b(&p, posted++, 8, true);   /* wakes it: it runs on core 0 */
	assert_int_equal(poll_one(&p, wc), 1);
	done = posted;
	assert_int_equal(task_stat(tb, 39), 0);   /* the core it last ran on */
	assert_int_equal(sched_setaffinity(tb, sizeof(all), &all), 0);

	t0 = h_now_ns();
	while (!moved && h_now_ns() - t0 < 500000000ull) {
		while (posted - done < 16) {
			write_to_b(&p, posted, BIG, posted % 4 == 3);
			posted++;
		}
		int n = xr_poll_cq(p.a.cq, 16, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			done = wc[i].wr_id + 1;
		}
		if (h_now_ns() >= next_sample) {
			next_sample = h_now_ns() + 1000000;
			moved = task_stat(tb, 39) != 0;
		}
	}
	print_message("b's thread %s core 0 after %.1f ms of the stream\n", moved ? "left" : "never left",
		      (double)(h_now_ns() - t0) / 1e6);
	write_to_b(&p, posted++, 8, true);   /* the last WRITEs were unsignaled: this one completes them */
	while (done < posted && h_now_ns() - t0 < 5000000000ull) {
		int n = xr_poll_cq(p.a.cq, 16, wc);
		for (int i = 0; i < n; i++)
			done = wc[i].wr_id + 1;
	}
	assert_int_equal(done, posted);
	assert_int_equal(sched_setaffinity(0, sizeof(mine), &mine), 0);
	assert_true(moved);
	{
		cpu_set_t now;   /* moved, and allowed everywhere again */
		assert_int_equal(sched_getaffinity(tb, sizeof(now), &now), 0);
		assert_true(CPU_EQUAL(&now, &all));
	}
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_receiver_on_its_senders_core_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
