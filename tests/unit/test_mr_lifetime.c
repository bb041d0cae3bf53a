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
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#include <cmocka.h>

#include "nic/dma_hook.h"
#include "rc_harness.h"
#include "xroce/regio.h"

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

/* ---- the window between the key check and the copy, made wide ----
 *
 * The hook in the DMA path stops a's progress pass after a WRITE passed
 * its key check and before it copies. Another thread then deregisters (or
 * re-registers) the region and writes a canary over the memory once the
 * call has returned, while the pass waits up to HOOK_WAIT_MS for it. With
 * the quiesce the call cannot return while the pass runs: the pass goes on
 * after the wait, copies into memory still registered, and only then does
 * the call return and the canary go down; it stays intact. Without it the
 * call returns at once and the copy lands on the canary (under ASan also a
 * heap-use-after-free read of the freed page table). */
#define HOOK_WAIT_MS 200
#define HOOK_LEN     (64u * 1024)

struct hook_run {
	struct pair *p;
	bool rereg;              /* re-register the index instead of deregistering */
	uint8_t *other;          /* rereg: the memory the new registration maps */
	uint64_t *other_mtt;
	pthread_t thread;
	atomic_bool armed, started, done;
	int rc;
};

static void *hook_thread(void *arg)
{
	struct hook_run *h = arg;
	struct end *a = &h->p->a;

	while (!atomic_load(&h->started))
		usleep(100);
	if (h->rereg) {
		/* A new registration of the same index over the same addresses,
		 * translated to other pages (a COMMIT of an index in use). */
		struct xr_regio *r = xr_context_regs(a->ctx);
		struct xr_mr_ctx c;
		uint32_t st = 0;
		h->rc = xr_regio_mr_read(r, a->mr->handle, &c);
		c.mtt = (uintptr_t)h->other_mtt;
		if (!h->rc)
			h->rc = xr_regio_mr_commit(r, a->mr->handle, &c, &st);
		memset(h->other, CANARY, HOOK_LEN);
	} else {
		h->rc = xr_dereg_mr(a->mr);
		a->mr = NULL;
		memset(h_data(a), CANARY, HOOK_LEN);
	}
	atomic_store(&h->done, true);
	return NULL;
}

static void in_the_window(void *arg)
{
	struct hook_run *h = arg;
	uint64_t until = h_now_ms() + HOOK_WAIT_MS;

	if (!atomic_exchange(&h->armed, false))
		return;
	atomic_store(&h->started, true);
	while (!atomic_load(&h->done) && h_now_ms() < until)
		usleep(1000);
}

static void window_round(bool rereg)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_4096, .buf_len = HOOK_LEN, .timeout = 10,
			    .retry_cnt = 1, .rnr_retry = 1 };
	struct hook_run h = { .rereg = rereg };
	struct pair p;
	struct xr_sge s;
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	uint8_t *other_base = NULL;
	size_t where = 0, pages = HOOK_LEN / 4096 + 1;
	uint64_t until;

	assert_int_equal(h_open(&p, &o), 0);
	h.p = &p;
	if (rereg) {
		uintptr_t start = (uintptr_t)h_data(&p.a);
		other_base = aligned_alloc(4096, (pages + 1) * 4096);
		h.other_mtt = calloc(pages, sizeof(uint64_t));
		assert_non_null(other_base);
		assert_non_null(h.other_mtt);
		h.other = other_base + (start & 4095);
		for (size_t i = 0; i < pages; i++)
			h.other_mtt[i] = (uint64_t)(uintptr_t)other_base + i * 4096;
	}
	memset(h_data(&p.b), 0xC3, HOOK_LEN);
	/* 16 KiB from 16 KiB on: without the fix the stale page table the
	 * copy reads is freed, and its first entries are the allocator's. */
	s = (struct xr_sge){ (uintptr_t)h_data(&p.b), HOOK_LEN / 4, p.b.mr->lkey };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.a) + HOOK_LEN / 4;
	w.wr.rdma.rkey = p.a.mr->rkey;
	assert_int_equal(pthread_create(&h.thread, NULL, hook_thread, &h), 0);
	atomic_store(&h.armed, true);
	xr_dma_write_hook_arg = &h;
	xr_dma_write_hook = in_the_window;
	assert_int_equal(xr_post_send(p.b.qp[0], &w, NULL), 0);
	until = h_now_ms() + 2000;
	while (!atomic_load(&h.done) && h_now_ms() < until)
		h_progress(&p);
	/* Let anything still in flight land. */
	for (int i = 0; i < 2000; i++)
		h_progress(&p);
	xr_dma_write_hook = NULL;
	pthread_join(h.thread, NULL);
	assert_true(atomic_load(&h.done));
	assert_int_equal(h.rc, 0);
	if (rereg) {
		if (!region_is_canary(h.other, HOOK_LEN, &where))
			fail_msg("byte %zu of the new registration's memory written by a packet checked "
				 "against the old one, after the COMMIT returned (0x%02x)", where, h.other[where]);
	} else if (!region_is_canary(h_data(&p.a), HOOK_LEN, &where)) {
		fail_msg("byte %zu of the region written after dereg_mr returned (0x%02x)", where,
			 h_data(&p.a)[where]);
	}
	assert_true(h_guards_ok(&p.a));
	h_close(&p);
	free(other_base);
	free(h.other_mtt);
}

static void test_dereg_in_the_window(void **state)
{
	(void)state;
	window_round(false);
}

static void test_rereg_in_the_window(void **state)
{
	(void)state;
	window_round(true);
}

/* b WRITEs 8 bytes of its buffer to raddr with rkey (both engines run
 * inline): the completion's status. */
static int b_writes(struct pair *p, uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct xr_sge s = { (uintptr_t)h_data(&p->b), 8, p->b.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;
	uint64_t until = h_now_ms() + 2000;
	int got = 0;

	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	assert_int_equal(xr_post_send(p->b.qp[0], &w, NULL), 0);
	while (!got && h_now_ms() < until) {
		xr_engine_progress(xr_context_engine(p->a.ctx));
		xr_engine_progress(xr_context_engine(p->b.ctx));
		got = xr_poll_cq(p->b.cq, 1, &wc);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.wr_id, id);
	return wc.status;
}

/* A region registered again over another range (ibv_rereg_mr,
 * CHANGE_TRANSLATION) keeps its slot and takes new keys: a WRITE with the
 * new key lands in the new range, one with the old key is refused and
 * touches neither. */
static void test_rereg_moves_the_region(void **state)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 16, .timeout = 10,
			    .retry_cnt = 1, .rnr_retry = 1 };
	struct pair p;
	struct xr_mr *mr;
	uint8_t *x, *y;
	uint32_t handle, old_rkey;
	(void)state;

	assert_int_equal(h_open(&p, &o), 0);
	x = h_data(&p.a) + 4096;
	y = h_data(&p.a) + 32768;
	memset(x, 0, 4096);
	memset(y, 0, 4096);
	memset(h_data(&p.b), 0xA7, 8);
	mr = xr_reg_mr(p.a.pd, x, 4096, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	assert_int_equal(b_writes(&p, (uintptr_t)x, mr->rkey, 1), XR_WC_SUCCESS);
	assert_int_equal(x[0], 0xA7);
	memset(x, 0, 8);
	handle = mr->handle;
	old_rkey = mr->rkey;
	assert_int_equal(xr_rereg_mr(mr, 0, NULL, NULL, 0, 0), EINVAL);
	assert_int_equal(mr->rkey, old_rkey);
	assert_int_equal(xr_rereg_mr(mr, XR_REREG_TRANSLATION, NULL, y, 4096, 0), 0);
	assert_int_equal(mr->handle, handle);
	assert_int_not_equal(mr->rkey, old_rkey);
	assert_ptr_equal(mr->addr, y);
	assert_int_equal(b_writes(&p, (uintptr_t)y + 100, mr->rkey, 2), XR_WC_SUCCESS);
	assert_int_equal(y[100], 0xA7);
	assert_int_equal(b_writes(&p, (uintptr_t)x, old_rkey, 3), XR_WC_REM_ACCESS_ERR);
	for (unsigned i = 0; i < 4096; i++)
		assert_int_equal(x[i], 0);
	assert_int_equal(xr_dereg_mr(mr), 0);
	h_close(&p);
}

/* A freed MR index is not handed out again before 1024 others
 * (drv/mr.c, MR_QUARANTINE): a peer still holding the key of a region
 * just deregistered cannot meet the next region in that slot, whose key
 * byte may repeat (it is random). Before, the freed index came back at
 * once, and a key from two or more registrations back matched again one
 * time in 254. The key just deregistered is refused on the wire. */
static void test_a_stale_key_stays_stale(void **state)
{
	enum { N = 1500, QUARANTINE = 1024 };
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 4096, .timeout = 10,
			    .retry_cnt = 1, .rnr_retry = 1 };
	struct pair p;
	static uint32_t handle[N], key[N];
	struct xr_mr *mr = NULL;
	(void)state;

	assert_int_equal(h_open(&p, &o), 0);
	for (unsigned i = 0; i < N; i++) {
		mr = xr_reg_mr(p.a.pd, h_data(&p.a), 4096, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE);
		assert_non_null(mr);
		handle[i] = mr->handle;
		key[i] = mr->rkey;
		for (unsigned j = i > QUARANTINE ? i - QUARANTINE : 0; j < i; j++)
			if (handle[j] == handle[i])
				fail_msg("registration %u takes the index of registration %u (%u), freed %u registrations ago",
					 i, j, handle[i], i - j);
		if (i + 1 < N)
			assert_int_equal(xr_dereg_mr(mr), 0);
	}
	assert_int_equal(b_writes(&p, (uintptr_t)h_data(&p.a), key[N - 2], 9), XR_WC_REM_ACCESS_ERR);
	assert_int_equal(xr_dereg_mr(mr), 0);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dereg_in_the_window),
		cmocka_unit_test(test_rereg_in_the_window),
		cmocka_unit_test(test_no_write_after_dereg),
		cmocka_unit_test(test_a_stale_key_stays_stale),
		cmocka_unit_test(test_rereg_moves_the_region),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
