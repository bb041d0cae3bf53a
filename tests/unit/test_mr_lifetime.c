/* SPDX-License-Identifier: MIT */
/*
 * Deregistration while a peer writes into the region (issue 15, defect 1):
 * after xr_dereg_mr returns, no byte of the region is touched again. Two
 * engines with a progress thread each; b streams 64 KiB WRITEs into a's
 * region while a deregisters it, then a writes a canary over the region and
 * checks that nothing overwrites it. Before the fix, a WRITE that had passed
 * the key check was still copying after dereg returned (under ASan: a
 * heap-use-after-free write once the region is freed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include <cmocka.h>

#include "rc_harness.h"

#define MSG      (64u * 1024)
#define REGION   (8u * MSG)
#define ROUNDS   40
#define CANARY   0x5A

static bool region_is_canary(const uint8_t *p, size_t len, size_t *where)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != CANARY) {
			*where = i;
			return false;
		}
	return true;
}

static void one_round(unsigned round)
{
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_4096, .buf_len = REGION, .timeout = 10,
			    .retry_cnt = 1, .rnr_retry = 1, .sq_depth = 64, .cq_depth = 1024 };
	struct pair p;
	struct xr_sge s;
	struct xr_wc wc;
	uint64_t until;
	size_t where = 0;
	unsigned posted = 0;

	assert_int_equal(h_open(&p, &o), 0);
	memset(h_data(&p.b), 0xC3, REGION);
	s = (struct xr_sge){ (uintptr_t)h_data(&p.b), MSG, p.b.mr->lkey };
	/* Keep b's send queue full of WRITEs into a's region. */
	for (; posted < 48; posted++) {
		struct xr_send_wr w = { .wr_id = posted, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.a) + (posted % 8) * MSG;
		w.wr.rdma.rkey = p.a.mr->rkey;
		assert_int_equal(xr_post_send(p.b.qp[0], &w, NULL), 0);
	}
	/* Let some land, at a different moment each round. */
	usleep(200 + round * 97 % 900);
	assert_int_equal(xr_dereg_mr(p.a.mr), 0);
	p.a.mr = NULL;
	memset(h_data(&p.a), CANARY, REGION);
	/* b's WRITEs now fail (remote access error) and a's QP goes to ERR;
	 * give any straggler every chance to land. */
	until = h_now_ms() + 300;
	while (h_now_ms() < until)
		if (xr_poll_cq(p.b.cq, 1, &wc) == 1 && wc.status != XR_WC_SUCCESS && wc.status != XR_WC_WR_FLUSH_ERR)
			break;
	usleep(20000);
	if (!region_is_canary(h_data(&p.a), REGION, &where))
		fail_msg("round %u: byte %zu of the region written after dereg_mr returned (0x%02x)", round, where,
			 h_data(&p.a)[where]);
	assert_true(h_guards_ok(&p.a));
	h_close(&p);
}

static void test_no_write_after_dereg(void **state)
{
	(void)state;
	for (unsigned r = 0; r < ROUNDS; r++)
		one_round(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_write_after_dereg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
