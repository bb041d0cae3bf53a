/* SPDX-License-Identifier: MIT */
/*
 * The pause: a caller whose completion emptied its send queue keeps its
 * lease but arms the link for the engine's thread standing by, instead of
 * waking it. A ping-pong (perftest's ib_write_lat loop: wait on memory,
 * post, poll) then runs without waking either engine thread, while a
 * frame that comes when the caller has gone quiet still wakes the thread
 * at once rather than waiting out the lease.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "progress_harness.h"

/* One side of the ping-pong: waits for the peer's stamp r in its own
 * buffer (not for the first round of the side that starts), writes its
 * stamp r into the peer's, polls for that WRITE's completion. */
struct side {
	struct end *me, *peer;
	bool starts;
	unsigned rounds;
	int failed;   /* 0, or the line of what went wrong */
};

static void *ping_pong_side(void *arg)
{
	struct side *s = arg;
	volatile uint8_t *in = h_data(s->me) + MSG;
	uint64_t until = h_now_ms() + 20000;

	for (unsigned r = 1; r <= s->rounds && !s->failed; r++) {
		uint8_t stamp = (uint8_t)(r % 251 + 1);
		struct xr_sge sg = { (uintptr_t)h_data(s->me) + 2 * MSG, 1, s->me->mr->lkey };
		struct xr_send_wr wr = { .wr_id = r, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					 .send_flags = XR_SEND_SIGNALED };
		struct xr_wc wc;
		int got = 0;

		if (!(s->starts && r == 1))
			while (*in != (uint8_t)((s->starts ? r - 1 : r) % 251 + 1) && h_now_ms() < until)
				;
		h_data(s->me)[2 * MSG] = stamp;
		wr.wr.rdma.remote_addr = (uintptr_t)h_data(s->peer) + MSG;
		wr.wr.rdma.rkey = s->peer->mr->rkey;
		if (xr_post_send(s->me->qp[0], &wr, NULL)) {
			s->failed = __LINE__;
			break;
		}
		while (!got && h_now_ms() < until)
			got = xr_poll_cq(s->me->cq, 1, &wc);
		if (got != 1 || wc.status != XR_WC_SUCCESS)
			s->failed = __LINE__;
	}
	return NULL;
}

/* Runs rounds of the ping-pong between a (which starts) and b, each side
 * in a thread of its own; returns the engine threads' wakeups meanwhile,
 * less the looks of a thread standing by (one per short lease, 500 us,
 * each; whatever the rounds cost, ASan's are slower). */
static long ping_pong(struct pair *p, const pid_t *t, int n, unsigned rounds)
{
	struct side a = { &p->a, &p->b, true, rounds, 0 }, b = { &p->b, &p->a, false, rounds, 0 };
	pthread_t ta, tb;
	long woke = -threads_wakeups(t, n);
	uint64_t t0 = h_now_ns();

	/* Each side's stamps start from nothing. */
	h_data(&p->a)[MSG] = 0;
	h_data(&p->b)[MSG] = 0;
	assert_int_equal(pthread_create(&tb, NULL, ping_pong_side, &b), 0);
	assert_int_equal(pthread_create(&ta, NULL, ping_pong_side, &a), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	woke += threads_wakeups(t, n);
	assert_int_equal(a.failed, 0);
	assert_int_equal(b.failed, 0);
	printf("%u rounds in %.1f ms: %ld wakeups, %ld of them a look's\n", rounds, (double)(h_now_ns() - t0) / 1e6, woke,
	       (long)(n * (h_now_ns() - t0) / 500000));
	return woke - (long)(n * (h_now_ns() - t0) / 500000);
}

/* Before the pause, each round woke both engine threads at least once
 * (the hand-back, and the peer's frames for the thread then asleep on the
 * link): 2,000 rounds cost 5,000 wakeups or more. With it a round costs
 * none beyond the looks of the threads standing by, unless a side is kept
 * from its core long enough to miss the answer (another test on the same
 * cores): a few attempts, and one of them must stay under a quarter of a
 * wakeup per round. A tenth failed once under ASan beside other tests
 * (225-384 in 2,000 rounds), still twenty times below the defect. */
XR_TIMING_TEST static void test_a_ping_pong_wakes_no_engine_thread(void **state)
{
	const unsigned rounds = 2000;
	long best = -1;
	struct pair p;
	pid_t t[8];
	int n;

	(void)state;
	open_pair(&p);
	n = other_threads(t, 8);
	assert_int_equal(n, 2);   /* the two engine threads */
	for (int attempt = 0; attempt < 4; attempt++) {
		long woke = ping_pong(&p, t, n, rounds);
		printf("attempt %d: %ld wakeups beyond the looks in %u rounds\n", attempt, woke, rounds);
		if (best < 0 || woke < best)
			best = woke;
		if (best * 4 < (long)rounds)
			break;
	}
	h_close(&p);
	assert_true(best * 4 < (long)rounds);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The median of the n (>= 1) rounds' times (sorts v). */
static uint64_t median_of(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_u64);
	return v[n / 2];
}

/* b's caller: an unsignaled WRITE to a, polled for until its ACK and then
 * for 25 ms (the lease grows to 4 ms), then a signaled one polled for
 * until its completion (the pause). Returns when b last polled. */
static uint64_t b_pauses(struct pair *p, uint64_t id)
{
	uint64_t acks = h_counter(&p->b, XR_CNT_RX_ACK), until = h_now_ms() + 5000, last = 0;
	struct xr_wc wc;
	int got = 0;

	post_write_flags(p, id, 0);
	while (h_counter(&p->b, XR_CNT_RX_ACK) == acks && h_now_ms() < until)
		assert_int_equal(xr_poll_cq(p->b.cq, 1, &wc), 0);
	for (uint64_t end = h_now_ns() + 25000000; h_now_ns() < end;)
		assert_int_equal(xr_poll_cq(p->b.cq, 1, &wc), 0);
	post_write_flags(p, id, XR_SEND_SIGNALED);
	while (!got && h_now_ms() < until) {
		got = xr_poll_cq(p->b.cq, 1, &wc);
		last = h_now_ns();
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	return last;
}

/* After the pause b calls nothing (a program spinning on memory for its
 * peer's answer): a's WRITE must wake b's thread, not wait for the lease
 * b holds to run out (4 ms by then). A pause that did not arm the link
 * left every such WRITE to the lease's end, so the median of the rounds
 * b's thread was not kept from a core is judged (as return_then_quiet's):
 * the ASan stage beside other tests once made one round 2 ms late. */
static void test_a_frame_after_a_pause_wakes_the_thread(void **state)
{
	struct pair p;
	pid_t t[8];
	int n, conclusive = 0;
	uint64_t in_time[5];

	(void)state;
	open_pair(&p);
	n = other_threads(t, 8);
	if (geteuid() == 0)
		assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 1), 0);
	for (int r = 0; r < 20 && conclusive < 5; r++) {
		uint8_t stamp = (uint8_t)(r + 1);
		volatile uint8_t *landed = h_data(&p.b) + MSG;
		struct xr_sge sg = { (uintptr_t)h_data(&p.a) + MSG, 1, p.a.mr->lkey };
		struct xr_send_wr wr = { .wr_id = stamp, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					 .send_flags = XR_SEND_SIGNALED };
		uint64_t last, took, delay, until;
		struct xr_wc wc;

		last = b_pauses(&p, (uint64_t)r);
		delay = threads_run_delay(t, n);
		h_data(&p.a)[MSG] = stamp;
		wr.wr.rdma.remote_addr = (uintptr_t)landed;
		wr.wr.rdma.rkey = p.b.mr->rkey;
		assert_int_equal(xr_post_send(p.a.qp[0], &wr, NULL), 0);
		until = h_now_ms() + 5000;
		while (*landed != stamp && h_now_ms() < until)
			;
		took = h_now_ns() - last;
		delay = threads_run_delay(t, n) - delay;
		assert_int_equal(*landed, stamp);
		for (int got = 0; !got && h_now_ms() < until;)
			got = xr_poll_cq(p.a.cq, 1, &wc);
		printf("round %d: a's WRITE landed %.3f ms after b's last poll (engine threads kept waiting %.3f ms)\n",
		       r, (double)took / 1e6, (double)delay / 1e6);
		if (delay > 300000)
			continue;   /* b's thread kept from a core: proves nothing */
		in_time[conclusive++] = took;
	}
	h_close(&p);
	assert_true(conclusive >= 1);
	assert_true(median_of(in_time, conclusive) < 2000000);
}

/* One byte at off from one end's buffer to the other's, by RDMA WRITE. */
static void write_byte(struct end *from, struct end *to, unsigned off, uint8_t v, unsigned flags)
{
	struct xr_sge sg = { (uintptr_t)h_data(from) + off, 1, from->mr->lkey };
	struct xr_send_wr wr = { .wr_id = v, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				 .send_flags = flags };

	h_data(from)[off] = v;
	wr.wr.rdma.remote_addr = (uintptr_t)h_data(to) + off;
	wr.wr.rdma.rkey = to->mr->rkey;
	assert_int_equal(xr_post_send(from->qp[0], &wr, NULL), 0);
}

/* b's caller: a signaled WRITE to a, then away for 5 ms (b's thread
 * takes the ACK and sleeps armed), then polls its completion (a pause). */
static uint64_t b_pauses_away(struct pair *p, uint64_t id)
{
	uint64_t until = h_now_ms() + 5000;
	struct xr_wc wc;
	int got = 0;

	post_write(p, id);
	usleep(5000);
	while (!got && h_now_ms() < until)
		got = xr_poll_cq(p->b.cq, 1, &wc);
	assert_int_equal(got, 1);
	return h_now_ns();
}

/* Rounds of: b pauses (pause), comes back with a request out (an
 * unsignaled WRITE, one empty poll: the pause's arming is withdrawn) and
 * goes quiet; a's WRITE must land within limit_ns in the median of the
 * rounds b's engine thread was not kept from a core. A deaf thread makes
 * every round late (the timer's tick, or never); the VM alone made one
 * round in 20 to 40 runs late (1.6 ms against 0.5, the threads' run delay
 * not showing it: the vCPU was away), which failed the test when every
 * round had to be in time. */
static void return_then_quiet(uint64_t (*pause_b)(struct pair *, uint64_t), int rounds, uint64_t limit_ns)
{
	struct pair p;
	pid_t t[8];
	int n, conclusive = 0;
	uint64_t in_time[5];

	open_pair(&p);
	n = other_threads(t, 8);
	if (geteuid() == 0)
		assert_int_equal(xr_engine_thread_realtime(eng(&p.b), 1), 0);
	for (int r = 0; r < rounds && conclusive < 5; r++) {
		volatile uint8_t *landed = h_data(&p.b) + MSG;
		uint8_t stamp = (uint8_t)(r + 1);
		uint64_t t0, took, delay, until = h_now_ms() + 5000;
		struct xr_wc wc;

		pause_b(&p, (uint64_t)r);
		post_write_flags(&p, 100u + (unsigned)r, 0);
		assert_int_equal(xr_poll_cq(p.b.cq, 1, &wc), 0);
		delay = threads_run_delay(t, n);
		t0 = h_now_ns();
		write_byte(&p.a, &p.b, MSG, stamp, 0);
		while (*landed != stamp && h_now_ms() < until)
			;
		took = h_now_ns() - t0;
		delay = threads_run_delay(t, n) - delay;
		assert_int_equal(*landed, stamp);
		printf("round %d: a's WRITE landed after %.3f ms (engine threads kept waiting %.3f ms)\n", r,
		       (double)took / 1e6, (double)delay / 1e6);
		if (delay > 100000)
			continue;
		in_time[conclusive++] = took;
	}
	h_close(&p);
	assert_true(conclusive >= 1);
	assert_true(median_of(in_time, conclusive) < limit_ns);
}

/* b's thread sleeps armed on the link when b pauses; a's WRITE wakes it,
 * and it finds b's lease and takes the WRITE when it runs out: 0.5 ms.
 * The link's arming counter is the sleeping thread's too: withdrawn, it
 * left the thread deaf, and the WRITE waited for the timer tick the post
 * armed (1 ms), or with nothing timed for ever. */
static void test_a_return_leaves_the_sleeping_thread_armed(void **state)
{
	(void)state;
	return_then_quiet(b_pauses_away, 20, 800000);
}

/* As above, but b polled for 25 ms first: the thread stands by for a
 * lease grown to 4 ms. That lease kept a's WRITE up to 4 ms; it must
 * wait no longer than for a lease taken afresh (0.5 ms): the pause wakes
 * a thread asleep for longer, and the leases stay short while pauses come. */
static void test_a_return_after_a_grown_lease_starts_short(void **state)
{
	(void)state;
	return_then_quiet(b_pauses, 12, 1500000);
}

/* After a pause, a's WRITE wakes b's thread; b's program sees it land
 * while the thread may still be in that pass, and answers at once. Its
 * post cannot run a pass then (the thread holds the lock) and leaves the
 * doorbell to the thread, which must take it rather than stand by for
 * the lease after its pass. */
static void test_a_post_beside_the_threads_pass_leaves_at_once(void **state)
{
	const unsigned rounds = 300;
	unsigned slow = 0;
	struct pair p;

	(void)state;
	open_pair(&p);
	for (unsigned r = 0; r < rounds; r++) {
		uint8_t v = (uint8_t)(r % 250 + 1);
		volatile uint8_t *at_b = h_data(&p.b) + 2 * MSG, *at_a = h_data(&p.a) + 3 * MSG;
		uint64_t t0, until = h_now_ms() + 5000;
		struct xr_wc wc;
		int got = 0;

		write_byte(&p.b, &p.a, 4 * MSG, v, XR_SEND_SIGNALED);
		while (!got && h_now_ms() < until)
			got = xr_poll_cq(p.b.cq, 1, &wc);   /* the pause */
		assert_int_equal(got, 1);
		write_byte(&p.a, &p.b, 2 * MSG, v, XR_SEND_SIGNALED);
		while (*at_b != v && h_now_ms() < until)
			;
		t0 = h_now_ns();
		write_byte(&p.b, &p.a, 3 * MSG, v, 0);
		while (*at_a != v && h_now_ms() < until)
			;
		assert_int_equal(*at_a, v);
		slow += h_now_ns() - t0 >= 400000;
		for (got = 0; !got && h_now_ms() < until;)
			got = xr_poll_cq(p.a.cq, 1, &wc);
	}
	printf("%u of %u answers took 0.4 ms or more\n", slow, rounds);
	h_close(&p);
	assert_true(slow * 10 < rounds);
}

/* How long the xr_poll_cq call that returned the completion of b's
 * signaled WR took (b polls from the post on). */
static uint64_t completion_call_ns(struct pair *p, struct xr_send_wr *wr)
{
	uint64_t until = h_now_ms() + 5000, t0 = 0;
	struct xr_wc wc;
	int got = 0;

	assert_int_equal(xr_post_send(p->b.qp[0], wr, NULL), 0);
	while (!got && h_now_ms() < until) {
		t0 = h_now_ns();
		got = xr_poll_cq(p->b.cq, 1, &wc);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	return h_now_ns() - t0;
}

/* A completion nobody answers (a's program never writes back) lingers,
 * and each linger that found nothing doubles the hand-backs that skip it:
 * 64 of them linger 6 times (the first, then after 1, 2, 4, 8 and 16
 * skipped), not 64.
 * A READ's completion comes with the response, which shows no answer is
 * coming: it never lingers. */
XR_TIMING_TEST static void test_a_linger_waits_only_for_answers_that_come(void **state)
{
	struct pair p;
	struct xr_sge s;
	struct xr_send_wr w = { .sg_list = &s, .num_sge = 1, .send_flags = XR_SEND_SIGNALED };
	unsigned write_long = 0, read_long = 0;

	(void)state;
	open_pair(&p);
	s = (struct xr_sge){ (uintptr_t)h_data(&p.b), 8, p.b.mr->lkey };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.a);
	w.wr.rdma.rkey = p.a.mr->rkey;
	/* READs first: the WRITEs' backoff would skip their lingers too. */
	for (int i = 0; i < 64; i++) {
		w.opcode = XR_WR_RDMA_READ;
		read_long += completion_call_ns(&p, &w) >= 50000;
	}
	for (int i = 0; i < 64; i++) {
		w.opcode = XR_WR_RDMA_WRITE;
		write_long += completion_call_ns(&p, &w) >= 50000;
	}
	printf("completion calls of 50 us or more: %u of 64 WRITEs, %u of 64 READs\n", write_long, read_long);
	h_close(&p);
	assert_true(write_long >= 5 && write_long <= 12);
	assert_true(read_long <= 2);
}

/* The thread standing by through a pause still stops at once when the
 * device closes. */
static void test_stop_right_after_a_pause(void **state)
{
	(void)state;
	for (int i = 0; i < 10; i++) {
		struct pair p;
		struct xr_wc wc;
		uint64_t until;
		int got = 0;

		open_pair(&p);
		assert_int_equal(xr_poll_cq(p.b.cq, 1, &wc), 0);   /* a lease */
		post_write(&p, (uint64_t)i);
		for (until = h_now_ms() + 5000; !got && h_now_ms() < until;)
			got = xr_poll_cq(p.b.cq, 1, &wc);   /* its completion pauses */
		assert_int_equal(got, 1);
		stop_b_and_close(&p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#ifndef XR_TSAN   /* timing or page faults (test_util.h) */
		cmocka_unit_test(test_a_ping_pong_wakes_no_engine_thread),
#endif
		cmocka_unit_test(test_a_frame_after_a_pause_wakes_the_thread),
		cmocka_unit_test(test_a_return_leaves_the_sleeping_thread_armed),
		cmocka_unit_test(test_a_return_after_a_grown_lease_starts_short),
		cmocka_unit_test(test_a_post_beside_the_threads_pass_leaves_at_once),
#ifndef XR_TSAN   /* timing or page faults (test_util.h) */
		cmocka_unit_test(test_a_linger_waits_only_for_answers_that_come),
#endif
		cmocka_unit_test(test_stop_right_after_a_pause),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
