/* SPDX-License-Identifier: MIT */
/*
 * xr_resize_cq (ibv_resize_cq): the completions not yet polled move to the
 * new ring in order, none lost or repeated, whichever pass over either
 * ring they were on; a ring too small for them is refused and the CQ is as
 * before; traffic goes on through the new ring's wraps; and resizes beside
 * a thread that posts and polls (the engine's thread writing CQEs all the
 * while) lose nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drv/drv.h"
#include "rc_checks.h"

#define MSG 64u

static struct pair P;

static int open_with_cq(enum xr_progress_mode mode, unsigned cq_depth)
{
	struct h_opts o = base_opts(XR_MTU_1024);

	o.mode = mode;
	o.cq_depth = cq_depth;
	o.sq_depth = 64;
	return h_open(&P, &o);
}

static int teardown(void **state)
{
	(void)state;
	h_close(&P);
	return 0;
}

static void post_writes(unsigned n, uint64_t first_id)
{
	for (unsigned i = 0; i < n; i++)
		post_write_at(&P, 0, MSG * (i % 64), MSG, first_id + i);
}

/* a's engine has written n more CQEs (its counter), nothing polled. */
static void until_completed(uint64_t cqes_before, unsigned n)
{
	uint64_t until = h_now_ms() + 5000;

	while (h_counter(&P.a, XR_CNT_CQES) < cqes_before + n && h_now_ms() < until)
		h_progress(&P);
	assert_true(h_counter(&P.a, XR_CNT_CQES) >= cqes_before + n);
}

static void expect_ids(uint64_t first_id, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct xr_wc wc;
		if (!h_wait(&P, &P.a, &wc, 5000))
			fail_msg("completion %u of %u: none", i, n);
		if (wc.wr_id != first_id + i || wc.status != XR_WC_SUCCESS)
			fail_msg("completion %u: wr_id %llu status %d, expected %llu", i, (unsigned long long)wc.wr_id,
				 wc.status, (unsigned long long)(first_id + i));
	}
}

static void no_more(void)
{
	struct xr_wc wc;

	assert_int_equal(h_wait(&P, &P.a, &wc, 20), 0);
}

/* Ten waiting: a ring of 4 is refused and they stay; one of 64 takes
 * them; then the new ring wraps three times. */
static void test_waiting_completions_move_in_order(void **state)
{
	uint64_t c0;

	(void)state;
	assert_int_equal(open_with_cq(XR_PROGRESS_INLINE, 16), 0);
	assert_int_equal(xr_cq_size(P.a.cq), 16);
	c0 = h_counter(&P.a, XR_CNT_CQES);
	post_writes(10, 100);
	until_completed(c0, 10);
	assert_int_equal(xr_resize_cq(P.a.cq, 4), EINVAL);
	assert_int_equal(xr_cq_size(P.a.cq), 16);
	assert_int_equal(xr_resize_cq(P.a.cq, 0), EINVAL);
	assert_int_equal(xr_resize_cq(P.a.cq, XR_CQ_MAX_CQE + 1), EINVAL);
	assert_int_equal(xr_resize_cq(P.a.cq, 33), 0);
	assert_int_equal(xr_cq_size(P.a.cq), 64);
	expect_ids(100, 10);
	no_more();
	for (unsigned round = 0; round < 6; round++) {
		post_writes(40, 1000 + 40 * round);
		expect_ids(1000 + 40 * round, 40);
	}
	no_more();
}

/* The old ring on its second pass (phase 0 expected) and the new one
 * smaller: the waiting three land where the new ring's indexes put them,
 * on whichever pass that is, and the rest of it reads as empty. */
static void test_a_shrink_on_a_later_pass(void **state)
{
	uint64_t c0;

	(void)state;
	assert_int_equal(open_with_cq(XR_PROGRESS_INLINE, 16), 0);
	for (unsigned round = 0; round < 3; round++) {
		post_writes(9, 10 * round);
		expect_ids(10 * round, 9);
	}
	c0 = h_counter(&P.a, XR_CNT_CQES);
	post_writes(3, 500);
	until_completed(c0, 3);
	assert_int_equal(xr_resize_cq(P.a.cq, 2), EINVAL);
	assert_int_equal(xr_resize_cq(P.a.cq, 4), 0);   /* 30 polled: index 30 is on the new ring's 8th pass */
	expect_ids(500, 3);
	no_more();
	for (unsigned round = 0; round < 5; round++) {
		post_writes(3, 600 + 3 * round);
		expect_ids(600 + 3 * round, 3);
	}
	/* Growing again, with nothing waiting. */
	assert_int_equal(xr_resize_cq(P.a.cq, 256), 0);
	post_writes(50, 900);
	expect_ids(900, 50);
	no_more();
}

struct stream {
	unsigned total;
	uint64_t next_id;     /* the next completion expected */
	bool bad;
};

/* Posts and polls a stream of WRITEs, checking each completion's order. */
static void *stream_writes(void *arg)
{
	struct stream *s = arg;
	unsigned posted = 0;
	uint64_t until = h_now_ms() + 30000;

	while (s->next_id < s->total && h_now_ms() < until) {
		struct xr_wc wc[8];
		int got;
		while (posted < s->total && posted - s->next_id < 32) {
			post_write_at(&P, 0, MSG * (posted % 64), MSG, posted);
			posted++;
		}
		got = xr_poll_cq(P.a.cq, 8, wc);
		for (int i = 0; i < got; i++) {   /* atomics: the main thread reads them meanwhile */
			if (wc[i].wr_id != s->next_id || wc[i].status != XR_WC_SUCCESS)
				__atomic_store_n(&s->bad, true, __ATOMIC_RELAXED);
			__atomic_store_n(&s->next_id, s->next_id + 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/* Thread mode: a thread streams WRITEs and polls, the engine's thread
 * writes CQEs, and this one resizes the CQ back and forth (64, 32, 128):
 * every completion arrives once, in order. */
static void test_resizes_beside_a_stream(void **state)
{
	struct stream s = { .total = 20000 };
	pthread_t t;
	unsigned resizes = 0, refused = 0;

	(void)state;
	assert_int_equal(open_with_cq(XR_PROGRESS_THREAD, 64), 0);
	assert_int_equal(pthread_create(&t, NULL, stream_writes, &s), 0);
	while (__atomic_load_n(&s.next_id, __ATOMIC_RELAXED) < s.total && !__atomic_load_n(&s.bad, __ATOMIC_RELAXED) &&
	       resizes < 3000) {
		int rc = xr_resize_cq(P.a.cq, (int[]){ 64, 32, 128 }[resizes % 3]);
		assert_true(rc == 0 || rc == EINVAL);   /* EINVAL: more waiting than 32 */
		refused += rc != 0;
		resizes++;
		usleep(100);
	}
	pthread_join(t, NULL);
	printf("%u resizes (%u refused) beside %llu completions\n", resizes, refused,
	       (unsigned long long)s.next_id);
	assert_false(s.bad);
	assert_int_equal(s.next_id, s.total);
	assert_true(resizes - refused >= 10);
	assert_int_equal(h_counter(&P.a, XR_CNT_CQ_OVERFLOW), 0);
}

static unsigned kept_rings(void)
{
	unsigned n = 0;

	for (struct xr_old_ring *o = P.a.cq->old_rings; o; o = o->next)
		n++;
	return n;
}

/* A resize to the same size changes nothing, and resizes back and forth
 * take the rings kept before: at most one per size stays, not one per
 * resize (100 resizes kept 100 rings, 100 MB at 16,384 entries). */
static void test_kept_rings_stay_bounded(void **state)
{
	struct xr_hw_cqe *ring;

	(void)state;
	assert_int_equal(open_with_cq(XR_PROGRESS_INLINE, 16), 0);
	ring = P.a.cq->ring;
	for (int i = 0; i < 100; i++)
		assert_int_equal(xr_resize_cq(P.a.cq, 16), 0);
	assert_ptr_equal(P.a.cq->ring, ring);
	assert_int_equal(kept_rings(), 0);
	for (unsigned i = 0; i < 100; i++) {
		assert_int_equal(xr_resize_cq(P.a.cq, (int[]){ 64, 8, 16 }[i % 3]), 0);
		post_writes(5, 10 * i);
		expect_ids(10 * i, 5);
	}
	no_more();
	assert_int_equal(kept_rings(), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_waiting_completions_move_in_order, teardown),
		cmocka_unit_test_teardown(test_a_shrink_on_a_later_pass, teardown),
		cmocka_unit_test_teardown(test_resizes_beside_a_stream, teardown),
		cmocka_unit_test_teardown(test_kept_rings_stay_bounded, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
