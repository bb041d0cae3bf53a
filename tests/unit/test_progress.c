/* SPDX-License-Identifier: MIT */
/*
 * The engine's progress thread as the drop-in libibverbs uses it: a poster
 * that runs the pass itself (xr_engine_post_begin/_end, no wakeup of the
 * thread), the thread at real-time priority, an idle thread that costs no
 * CPU, and polling callers beside a real-time thread (its passes wait for
 * theirs instead of spinning on the lock, which could keep a preempted
 * caller from ever finishing on a small machine).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#include <cmocka.h>

#include "progress_harness.h"
#include "dgram_harness.h"

/* The doorbell rung between begin and end is served by end's own pass:
 * the WRITE leaves from this thread (the thread, asleep, is not needed). */
static void test_post_end_sends_from_the_caller(void **state)
{
	struct pair p;
	struct xr_wc wc;

	(void)state;
	open_pair(&p);
	assert_int_equal(xr_engine_post_end(eng(&p.b)), 0);   /* nothing posted: no pass */
	for (int i = 0; i < 100; i++) {
		/* The thread goes to sleep: after the last completion it stands
		 * by for the rest of the caller's lease (a pause), then sleeps;
		 * awake, its pass could be the one in the way. */
		usleep(6000);
		xr_engine_post_begin(eng(&p.b));
		post_write(&p, (uint64_t)i);
		assert_true(xr_engine_post_end(eng(&p.b)) > 0);
		assert_int_equal(h_wait(&p, &p.b, &wc, 2000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	/* Outside begin/end a doorbell still wakes the thread: it sends. */
	usleep(20000);
	post_write(&p, 1000);
	assert_int_equal(h_wait(&p, &p.b, &wc, 2000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	h_close(&p);
}

static void test_realtime_thread(void **state)
{
	struct pair p;
	struct xr_engine *idle = xr_engine_create();
	pid_t t[8];
	int n, fifo = 0, rc;

	(void)state;
	assert_non_null(idle);
	assert_int_equal(xr_engine_thread_realtime(idle, 1), -ESRCH);
	xr_engine_destroy(idle);
	open_pair(&p);
	rc = xr_engine_thread_realtime(eng(&p.b), 1);
	n = other_threads(t, 8);
	for (int i = 0; i < n; i++)
		fifo += task_stat(t[i], 41) == SCHED_FIFO;   /* policy */
	if (geteuid() == 0) {
		/* b's thread, and only it (a's stays at normal priority) */
		assert_int_equal(rc, 0);
		assert_int_equal(n, 2);
		assert_int_equal(fifo, 1);
	} else {
		assert_true(rc == 0 || rc == -EPERM);
	}
	assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 100000), -EINVAL);
	h_close(&p);
}

/* After traffic, both threads sleep: at most one clock tick of CPU
 * between them in a second. */
static void test_idle_thread_costs_nothing(void **state)
{
	struct pair p;
	struct xr_wc wc;
	pid_t t[8];
	long before = 0, after = 0;
	int n;

	(void)state;
	open_pair(&p);
	for (int i = 0; i < 50; i++) {
		post_write(&p, (uint64_t)i);
		assert_int_equal(h_wait(&p, &p.b, &wc, 2000), 1);
	}
	usleep(50000);
	n = other_threads(t, 8);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++)
		before += task_stat(t[i], 14) + task_stat(t[i], 15);   /* utime + stime */
	sleep(1);
	for (int i = 0; i < n; i++)
		after += task_stat(t[i], 14) + task_stat(t[i], 15);
	assert_true(after - before <= 1);
	h_close(&p);
}

/* Posting receives to a QP that is not in error is no work for the engine
 * (they wait for SENDs): the sleeping thread is not woken for each. Before,
 * every receive doorbell woke it: ibv_rc_pingpong reposting 500 receives
 * paid 500 context switches (about 1 ms per iteration on 2 cores). */
static void test_posted_receives_let_the_thread_sleep(void **state)
{
	struct pair p;
	struct xr_sge s;
	pid_t t[8];
	long woke;
	int n;

	cpu_set_t one, all;

	(void)state;
	open_pair(&p);
	s = (struct xr_sge){ (uintptr_t)h_data(&p.a), MSG, p.a.mr->lkey };
	/* As the library runs it (real-time when permitted), on one core: a
	 * woken thread runs at once, so each needless wakeup is seen. */
	if (geteuid() == 0)
		assert_int_equal(xr_engine_thread_realtime(eng(&p.a), 1), 0);
	n = other_threads(t, 8);
	sched_getaffinity(0, sizeof(all), &all);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	for (int i = 0; i < n; i++)
		sched_setaffinity(t[i], sizeof(one), &one);
	sched_setaffinity(0, sizeof(one), &one);
	usleep(20000);
	woke = -threads_wakeups(t, n);
	for (int i = 0; i < 200; i++) {
		struct xr_recv_wr r = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1 };
		assert_int_equal(xr_post_recv(p.a.qp[0], &r, NULL), 0);
	}
	usleep(20000);
	woke += threads_wakeups(t, n);
	sched_setaffinity(0, sizeof(all), &all);
	assert_true(woke < 20);
	h_close(&p);
}

/* A caller that posts with xr_engine_post_begin/_end and waits for its
 * completion assisting (as the library's post_send and poll_cq do) drives
 * the engine itself. A QP its pass leaves waiting for the ACK arms the
 * thread's tick timer instead of waking it (one wakeup less per message on
 * the drop-in library's path), and a thread that finds the caller's pass
 * under way must not spin through wakeups: per WRITE, a's thread wakes for
 * the request, b's for the ACK and at most once more for the pass lock. */
static void test_caller_driven_posts_cost_few_wakeups(void **state)
{
	enum { N = 200 };
	struct pair p;
	struct xr_wc wc;
	cpu_set_t one, all;
	pid_t t[8];
	long woke;
	int n;

	(void)state;
	open_pair(&p);
	if (geteuid() == 0) {
		assert_int_equal(xr_engine_thread_realtime(eng(&p.a), 1), 0);
		assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 1), 0);
	}
	sched_getaffinity(0, sizeof(all), &all);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	n = other_threads(t, 8);
	for (int i = 0; i < n; i++)
		sched_setaffinity(t[i], sizeof(one), &one);
	sched_setaffinity(0, sizeof(one), &one);
	usleep(20000);
	woke = -threads_wakeups(t, n);
	for (int i = 0; i < N; i++) {
		uint64_t until = h_now_ms() + 5000;
		int got = 0;
		xr_engine_post_begin(eng(&p.b));
		post_write(&p, (uint64_t)i);
		xr_engine_post_end(eng(&p.b));
		while (!got && h_now_ms() < until) {
			got = xr_poll_cq(p.b.cq, 1, &wc);
			if (!got)
				xr_engine_assist(eng(&p.b));
		}
		assert_int_equal(got, 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	woke += threads_wakeups(t, n);
	sched_setaffinity(0, sizeof(all), &all);
	printf("engine threads woke %ld times for %d caller-driven WRITEs\n", woke, N);
	assert_true(woke <= 3 * N + N / 4);
	h_close(&p);
}

/* Callers polling in a tight loop (xr_engine_assist) beside a real-time
 * thread, on one core: every WRITE completes. With the thread spinning on
 * the busy pass lock, a caller preempted while holding it never got the
 * core back and the QPs ran out of retries. */
static void test_assisting_callers_beside_a_realtime_thread(void **state)
{
	struct pair p;
	struct xr_wc wc;
	cpu_set_t one, all;
	pid_t t[8];
	int n;

	(void)state;
	open_pair(&p);
	if (geteuid() == 0) {
		assert_int_equal(xr_engine_thread_realtime(eng(&p.a), 1), 0);
		assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 1), 0);
	}
	sched_getaffinity(0, sizeof(all), &all);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	n = other_threads(t, 8);
	for (int i = 0; i < n; i++)
		sched_setaffinity(t[i], sizeof(one), &one);
	sched_setaffinity(0, sizeof(one), &one);
	for (int i = 0; i < 2000; i++) {
		uint64_t until = h_now_ms() + 5000;
		int got = 0;
		xr_engine_post_begin(eng(&p.b));
		post_write(&p, (uint64_t)i);
		xr_engine_post_end(eng(&p.b));
		while (!got && h_now_ms() < until) {
			got = xr_poll_cq(p.b.cq, 1, &wc);
			if (!got)
				xr_engine_assist(eng(&p.b));
		}
		assert_int_equal(got, 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	sched_setaffinity(0, sizeof(all), &all);
	h_close(&p);
}

/* A link that took a frame but sends it only on a later call (the fault
 * link's delay; the XDP link's tx ring after a kick the kernel refused):
 * the thread must come back to it. Before, a responder's thread with no
 * QP waiting slept untimed with its ACK in the link, until the requester
 * timed out and retransmitted (1 s here, for every WRITE). */
static void test_frames_held_by_the_link_are_sent(void **state)
{
	struct xr_fault_cfg f = { .seed = 5, .delay = 1.0, .delay_us = 200 };
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_1024, .buf_len = 4096, .timeout = 18,
			    .retry_cnt = 7, .rnr_retry = 7, .fault = &f };
	struct pair p;
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	for (int i = 0; i < 3; i++) {
		usleep(5000);   /* a's thread is asleep */
		post_write(&p, (uint64_t)i);
		assert_int_equal(h_wait(&p, &p.b, &wc, 5000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	assert_int_equal(h_counter(&p.b, XR_CNT_ACK_TIMEOUTS), 0);
	h_close(&p);
}

/* The same when the caller's own pass (xr_engine_post_end) put the frame
 * in the link and nothing waits after it (a UD SEND completes once sent):
 * the sleeping thread is told to look again, or the frame stayed in b's
 * link until something else woke b. */
static void test_frames_a_callers_pass_left_in_the_link_are_sent(void **state)
{
	struct xr_fault_cfg f = { .seed = 6, .delay = 1.0, .delay_us = 200 };
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_1024, .buf_len = 4096, .timeout = 18,
			    .retry_cnt = 7, .rnr_retry = 7, .fault = &f };
	struct pair p;
	struct xr_qp *src, *dst;
	struct xr_ah *ah;
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	src = d_ud_qp(&p.b, 9, NULL);
	dst = d_ud_qp(&p.a, 9, NULL);
	ah = d_ah(&p.b, &p.a, 64, 0);
	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(ah);
	for (int i = 0; i < 3; i++) {
		uint64_t until;
		int got = 0;

		assert_int_equal(d_post_recv(dst, &p.a, 0, 256, (uint64_t)i), 0);
		usleep(5000);   /* b's thread is asleep */
		xr_engine_post_begin(eng(&p.b));
		assert_int_equal(d_ud_send(src, &p.b, ah, xr_qp_num(dst), 9, 0, 64, 0, (uint64_t)i), 0);
		xr_engine_post_end(eng(&p.b));
		/* Only a's side is called from here on. */
		for (until = h_now_ms() + 1000; !got && h_now_ms() < until;)
			got = xr_poll_cq(p.a.cq, 1, &wc);
		assert_int_equal(got, 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.opcode, XR_WC_RECV);
		while (xr_poll_cq(p.b.cq, 1, &wc) == 1)
			assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	h_close(&p);
}

/* Two engines' post sections nested in one thread: the outer engine's
 * doorbell is not lost (the inner section reset the outer one's state, so
 * neither a pass nor a wakeup followed it). Watched on memory: a poll of
 * the CQ would run the pass itself. */
static void test_nested_post_sections_of_two_engines(void **state)
{
	struct pair p;
	volatile uint8_t *landed;
	uint64_t until;

	(void)state;
	open_pair(&p);
	landed = h_data(&p.a);
	landed[0] = 0;
	h_data(&p.b)[0] = 0x5A;
	xr_engine_post_begin(eng(&p.b));
	post_write(&p, 1);
	xr_engine_post_begin(eng(&p.a));
	xr_engine_post_end(eng(&p.a));
	xr_engine_post_end(eng(&p.b));
	until = h_now_ms() + 5000;
	while (landed[0] != 0x5A && h_now_ms() < until)
		;
	assert_int_equal(landed[0], 0x5A);
	h_close(&p);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* perftest's write_lat: post one WRITE, poll until it completes, then spin
 * on memory (not calling the library) for the peer's WRITE. The completion
 * that empties the send queue ends the caller's lease, so its engine's
 * thread delivers the peer's WRITE at once instead of after the lease
 * (500 us) has run out. */
static void test_drained_send_queue_hands_the_engine_back(void **state)
{
	enum { ROUNDS = 101 };
	struct pair p;
	struct xr_wc wc;
	uint64_t t[ROUNDS];
	volatile uint8_t *landed;

	(void)state;
	open_pair(&p);
	landed = h_data(&p.b);
	if (geteuid() == 0) {
		assert_int_equal(xr_engine_thread_realtime(eng(&p.a), 1), 0);
		assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 1), 0);
	}
	for (int r = 0; r < ROUNDS; r++) {
		uint8_t stamp = (uint8_t)(r + 1);
		uint64_t until = h_now_ms() + 5000, t0;
		int got = 0;
		/* b writes to a and polls for the completion (a lease)... */
		h_data(&p.b)[MSG] = stamp;
		{
			struct xr_sge s = { (uintptr_t)h_data(&p.b) + MSG, 1, p.b.mr->lkey };
			struct xr_send_wr w = { .wr_id = (uint64_t)r, .sg_list = &s, .num_sge = 1,
						.opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED };
			w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.a);
			w.wr.rdma.rkey = p.a.mr->rkey;
			assert_int_equal(xr_post_send(p.b.qp[0], &w, NULL), 0);
		}
		while (!got && h_now_ms() < until)
			got = xr_poll_cq(p.b.cq, 1, &wc);
		assert_int_equal(got, 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		/* ...then a answers with a WRITE to b, and b spins on memory. */
		h_data(&p.a)[MSG] = stamp;
		t0 = h_now_ns();
		{
			struct xr_sge s = { (uintptr_t)h_data(&p.a) + MSG, 1, p.a.mr->lkey };
			struct xr_send_wr w = { .wr_id = (uint64_t)r, .sg_list = &s, .num_sge = 1,
						.opcode = XR_WR_RDMA_WRITE };
			w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
			w.wr.rdma.rkey = p.b.mr->rkey;
			assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
		}
		while (landed[0] != stamp && h_now_ms() < until)
			;
		assert_int_equal(landed[0], stamp);
		t[r] = h_now_ns() - t0;
	}
	qsort(t, ROUNDS, sizeof(t[0]), cmp_u64);
	printf("a WRITE onto a spinning caller's memory after its last completion: median %.1f us\n",
	       (double)t[ROUNDS / 2] / 1e3);
	assert_true(t[ROUNDS / 2] < 700000);
	h_close(&p);
}

/* A WRITE toward a peer that never answers (b's engine never runs): the
 * ACK timeout (8: 1.05 ms) fires 8 times, then RETRY_EXC_ERR, due after
 * about 8.4 ms. A program waiting for it with completion events runs one
 * pass per 1 ms slice of xr_get_cq_event, and one that polls the CQ runs
 * passes back to back: both must see every timeout within about a slice.
 * Idle passes that looked at the timers one time in eight made the
 * event-driven waiter's error come after 70-80 ms. The best of up to
 * eight rounds, against a bound of 30 ms: a loaded machine delays single
 * rounds (three rounds all took 32 ms or more beside a build on both
 * cores), never every round by 70 ms. */
static double retry_exhausted_after_ms(bool events)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 4096, .timeout = 8,
			    .retry_cnt = 7, .rnr_retry = 7 };
	struct pair p;
	struct xr_wc wc;
	struct xr_sge sg;
	uint64_t t0;
	double ms;
	int got = 0;

	assert_int_equal(h_open(&p, &o), 0);
	sg = (struct xr_sge){ (uintptr_t)h_data(&p.a), 64, p.a.mr->lkey };
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b);
	w.wr.rdma.rkey = p.b.mr->rkey;
	t0 = h_now_ns();
	assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	while (!got && h_now_ns() - t0 < 2000000000ull) {
		if (events) {
			assert_int_equal(xr_req_notify_cq(p.a.cq, 0), 0);
			if ((got = xr_poll_cq(p.a.cq, 1, &wc)))
				break;
			(void)xr_get_cq_event(p.a.cq, 100);
		}
		got = xr_poll_cq(p.a.cq, 1, &wc);
	}
	/* The time is taken before the pair is closed: its teardown took 27
	 * ms under ASan on one machine, and was counted as the wait. */
	ms = (double)(h_now_ns() - t0) / 1e6;
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, XR_WC_RETRY_EXC_ERR);
	h_close(&p);
	return ms;
}

static void test_waiters_see_ack_timeouts_in_time(void **state)
{
	(void)state;
	for (int events = 0; events < 2; events++) {
		double best = 1e9;
		for (int round = 0; round < 8 && best >= 30.0; round++) {
			double ms = retry_exhausted_after_ms(events);
			best = ms < best ? ms : best;
		}
		print_message("%s: RETRY_EXC_ERR after %.1f ms (8 timeouts of 1.05 ms)\n",
			      events ? "waiting for events" : "polling", best);
		assert_true(best >= 8.0);
		assert_true(best < 30.0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_end_sends_from_the_caller),
		cmocka_unit_test(test_realtime_thread),
		cmocka_unit_test(test_idle_thread_costs_nothing),
		cmocka_unit_test(test_posted_receives_let_the_thread_sleep),
		cmocka_unit_test(test_assisting_callers_beside_a_realtime_thread),
		cmocka_unit_test(test_caller_driven_posts_cost_few_wakeups),
		cmocka_unit_test(test_frames_held_by_the_link_are_sent),
		cmocka_unit_test(test_frames_a_callers_pass_left_in_the_link_are_sent),
		cmocka_unit_test(test_nested_post_sections_of_two_engines),
		cmocka_unit_test(test_drained_send_queue_hands_the_engine_back),
		cmocka_unit_test(test_waiters_see_ack_timeouts_in_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
