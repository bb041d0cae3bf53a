/* SPDX-License-Identifier: MIT */
/*
 * DCQCN end to end through the switch model: N senders stream RDMA WRITEs
 * into one receiver behind a bottleneck port that marks ECN (RED). The
 * receiver's engine answers CE with CNPs, the senders' engines cut and
 * recover their rates and pace their QPs. With DCQCN the bottleneck runs
 * full, its queue stays near Kmin, nothing is dropped after the first
 * round trips, and the flows share fairly; without it the queue overflows
 * and go-back-N retransmits whole windows. One thread and the fabric's
 * simulated clock: deterministic.
 */
#include "incast_harness.h"

/* The runs are deterministic (the fabric's clock), so the sanitizer build,
 * ten times slower, checks memory on a shorter stretch of the same run and
 * the normal build the figures over the full second. */
#ifdef __SANITIZE_ADDRESS__
#define WINDOWS 2
#else
#define WINDOWS 10
#endif

static void test_incast_2to1_dcqcn(void **state)
{
	struct incast s;
	struct incast_cfg c = base;
	(void)state;

	c.nsend = 2;
	c.nwin = WINDOWS;
	incast_open(&s, &c);
	incast_run(&s);
	assert_true(s.cnp_sent > 0);
	assert_int_equal(s.cnp_sent, s.cnp_rcvd);
	assert_true(s.cuts > 0);
	assert_true(s.util >= 0.9);
	assert_true(s.goodput >= 0.9);
	assert_true(s.fairness >= 0.95);
	assert_int_equal(s.drops - s.drops_first, 0);
	assert_true(s.qmean <= 3.0 * c.kmin);
	assert_true(s.qp99 <= c.kmax);
	incast_free(&s);
}

static void test_incast_8to1_dcqcn(void **state)
{
	struct incast s;
	struct incast_cfg c = base;
	(void)state;

	c.nsend = 8;
	c.nwin = WINDOWS;
	incast_open(&s, &c);
	incast_run(&s);
	assert_true(s.cnp_sent > 0);
	assert_true(s.util >= 0.9);
	assert_true(s.goodput >= 0.9);
	assert_true(s.fairness >= 0.95);
	assert_true(s.fairness_min >= 0.95);   /* every 100 ms window too */
	assert_int_equal(s.drops - s.drops_first, 0);
	assert_true(s.qmean <= 3.0 * c.kmin);
	assert_true(s.qp99 <= c.kmax);
	incast_free(&s);
}

static void test_incast_8to1_no_dcqcn(void **state)
{
	struct incast s;
	struct incast_cfg c = base;
	(void)state;

	c.nsend = 8;
	c.dcqcn = false;
	c.nwin = WINDOWS;
	incast_open(&s, &c);
	incast_run(&s);
	/* The collapse: the queue sits at its limit, tail drops go on after
	 * the warm-up, go-back-N resends whole windows, goodput falls. */
	assert_true(s.drops - s.drops_first > 1000);
	assert_true(s.rexmit > 100);
	assert_true(s.goodput < 0.7);
	assert_int_equal(s.cuts, 0);
	assert_true(s.qmean > 0.5 * c.queue_limit);
	incast_free(&s);
}

static void test_pacer_accuracy(void **state)
{
	/* Each QP's cap, the other QP's (0: uncapped, it takes what is left). */
	static const uint32_t runs[][2] = {
#ifndef __SANITIZE_ADDRESS__
		{ 100, 0 }, { 1000, 0 }, { 9000, 100 },
#endif
		{ 300, 2000 }, { 5000, 100 },
	};
	double r[2];
	(void)state;

	for (unsigned i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		pacer_run(runs[i][0], runs[i][1], r);
		assert_true(fabs(r[0] / runs[i][0] - 1) < 0.02);
		if (runs[i][1])
			assert_true(fabs(r[1] / runs[i][1] - 1) < 0.02);
		else   /* the capped QP does not hold the engine: the other gets the rest */
			assert_true(r[1] > 0.9 * (10000 - runs[i][0]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incast_2to1_dcqcn),
		cmocka_unit_test(test_incast_8to1_dcqcn),
		cmocka_unit_test(test_incast_8to1_no_dcqcn),
		cmocka_unit_test(test_pacer_accuracy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
