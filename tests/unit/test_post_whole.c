/* SPDX-License-Identifier: MIT */
/*
 * xr_post_send_whole (the ibv_wr_* API's batches): every WR of a list or
 * none. A list with a bad WR, or one that fills the send queue before its
 * end, is taken back: nothing of it runs or completes, the windows it
 * bound have their keys of before, and the ring is as before the call.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rc_checks.h"

#define MSG 64u
#define SQ_DEPTH 8u

static struct pair P;

static int setup(void **state)
{
	struct h_opts o = base_opts(XR_MTU_1024);

	(void)state;
	o.sq_depth = SQ_DEPTH;
	if (h_open(&P, &o))
		return -1;
	memset(h_data(&P.b), 0, 4096);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	h_close(&P);
	return 0;
}

static void write_wr(struct xr_send_wr *w, struct xr_sge *s, uint64_t id, size_t off)
{
	*s = (struct xr_sge){ (uintptr_t)h_data(&P.a) + off, MSG, P.a.mr->lkey };
	*w = (struct xr_send_wr){ .wr_id = id, .sg_list = s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				  .send_flags = XR_SEND_SIGNALED };
	w->wr.rdma.remote_addr = (uintptr_t)h_data(&P.b) + off;
	w->wr.rdma.rkey = P.b.mr->rkey;
}

static void expect_nothing(const char *what)
{
	struct xr_wc wc;

	if (h_wait(&P, &P.a, &wc, 50))
		fail_msg("%s: a completion came (wr_id %llu)", what, (unsigned long long)wc.wr_id);
	assert_int_equal(h_data(&P.b)[0], 0);
}

/* A WRITE, a bind, an invalidation and a bind of the same window, then a
 * WR with too many SGEs: EINVAL naming it, and nothing of the four. */
static void test_a_bad_wr_takes_the_whole_list_back(void **state)
{
	struct xr_mr *mr = xr_reg_mr(P.a.pd, h_data(&P.a), 4096,
				     XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_MW_BIND);
	struct xr_mw *mw = xr_alloc_mw(P.a.pd, XR_MW_TYPE_2);
	struct xr_sge s[2];
	struct xr_send_wr w[5], *bad = NULL;
	uint32_t key;

	(void)state;
	assert_non_null(mr);
	assert_non_null(mw);
	key = mw->rkey;
	memset(h_data(&P.a), 0x5a, MSG);
	write_wr(&w[0], &s[0], 1, 0);
	w[1] = (struct xr_send_wr){ .wr_id = 2, .opcode = XR_WR_BIND_MW, .send_flags = XR_SEND_SIGNALED };
	w[1].bind_mw.mw = mw;
	w[1].bind_mw.rkey = xr_inc_rkey(key);
	w[1].bind_mw.bind_info = (struct xr_mw_bind_info){ mr, (uintptr_t)h_data(&P.a), 4096, XR_ACCESS_REMOTE_READ };
	w[2] = (struct xr_send_wr){ .wr_id = 3, .opcode = XR_WR_LOCAL_INV, .send_flags = XR_SEND_SIGNALED,
				    .invalidate_rkey = xr_inc_rkey(key) };
	w[3] = w[1];
	w[3].wr_id = 4;
	w[3].bind_mw.rkey = xr_inc_rkey(xr_inc_rkey(key));
	write_wr(&w[4], &s[1], 5, 0);
	w[4].num_sge = XR_WQE_BLOCK_SGE + 1;   /* the harness's max_send_sge */
	for (int i = 0; i < 4; i++)
		w[i].next = &w[i + 1];
	assert_int_equal(xr_post_send_whole(P.a.qp[0], w, &bad), EINVAL);
	assert_ptr_equal(bad, &w[4]);
	assert_int_equal(mw->rkey, key);
	expect_nothing("a list with a bad WR");
	/* Without the bad one, the four run, and the window has the
	 * second bind's key. */
	w[3].next = NULL;
	assert_int_equal(xr_post_send_whole(P.a.qp[0], w, &bad), 0);
	expect_wc(&P, &P.a, 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "the WRITE");
	expect_wc(&P, &P.a, 2, XR_WC_SUCCESS, XR_WC_BIND_MW, "the first bind");
	expect_wc(&P, &P.a, 3, XR_WC_SUCCESS, XR_WC_LOCAL_INV, "the invalidation");
	expect_wc(&P, &P.a, 4, XR_WC_SUCCESS, XR_WC_BIND_MW, "the second bind");
	assert_int_equal(h_data(&P.b)[0], 0x5a);
	assert_int_equal(mw->rkey, xr_inc_rkey(xr_inc_rkey(key)));
	assert_int_equal(xr_dealloc_mw(mw), 0);
	assert_int_equal(xr_dereg_mr(mr), 0);
}

/* One more WR than the queue holds: ENOMEM naming the last, none posted;
 * the queue's size then goes whole. */
static void test_a_list_beyond_the_queue_posts_nothing(void **state)
{
	struct xr_sge s[SQ_DEPTH + 1];
	struct xr_send_wr w[SQ_DEPTH + 1], *bad = NULL;

	(void)state;
	memset(h_data(&P.a), 0x6b, MSG * (SQ_DEPTH + 1));
	for (unsigned i = 0; i <= SQ_DEPTH; i++) {
		write_wr(&w[i], &s[i], 10 + i, MSG * i);
		w[i].next = i < SQ_DEPTH ? &w[i + 1] : NULL;
	}
	assert_int_equal(xr_post_send_whole(P.a.qp[0], w, &bad), ENOMEM);
	assert_ptr_equal(bad, &w[SQ_DEPTH]);
	expect_nothing("a list beyond the queue");
	w[SQ_DEPTH - 1].next = NULL;
	assert_int_equal(xr_post_send_whole(P.a.qp[0], w, &bad), 0);
	for (unsigned i = 0; i < SQ_DEPTH; i++)
		expect_wc(&P, &P.a, 10 + i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "a WRITE of the full queue");
	assert_int_equal(h_data(&P.b)[MSG * (SQ_DEPTH - 1)], 0x6b);
	assert_int_equal(h_data(&P.b)[MSG * SQ_DEPTH], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_bad_wr_takes_the_whole_list_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_list_beyond_the_queue_posts_nothing, setup, teardown),
	};

	MODE = XR_PROGRESS_INLINE;
	if (cmocka_run_group_tests_name("inline", tests, NULL, NULL))
		return 1;
	MODE = XR_PROGRESS_THREAD;
	return cmocka_run_group_tests_name("thread", tests, NULL, NULL);
}
