/* SPDX-License-Identifier: MIT */
/*
 * The engine's QP memory (issue "Scale"): a QP with work in flight takes
 * its active block and gives it back when idle; running out of memory
 * fails cleanly. Allocations of the engine's exact sizes are failed on
 * purpose (the link wraps malloc and calloc):
 *  1. a QP create whose table page cannot be allocated fails with ENOMEM,
 *     attaches nothing to its SRQ (which stays destroyable) and gives its
 *     QPN back;
 *  2. a create the engine refuses for another reason gives its QPN back;
 *  3. a requester without memory for its WQE waits, counted, then sends;
 *  4. a responder without memory drops the request unexecuted, counted,
 *     and the requester's retry gets through;
 *  5. after WRITEs and a READ, every QP is idle again and holds its slot
 *     alone, the READ's responder its resources besides;
 *  6. once its WRITE is acknowledged no QP waits for an ACK: the engines'
 *     threads sleep without a tick, as they did before QPs could wait off
 *     the busy list (one woken by its ACK used to keep them ticking until
 *     its old ACK timer was due).
 */
#include <dirent.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "failing_alloc.h"
#include "rc_harness.h"

/* ---- one device with no QP yet ---- */

struct dev {
	struct xr_link *la, *lb;
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
};

static void dev_open(struct dev *d)
{
	struct xr_device_opts o = { .addr = "10.0.0.1", .progress = XR_PROGRESS_INLINE };

	assert_int_equal(xr_link_mem_pair(&d->la, &d->lb, 0), 0);
	d->ctx = xr_open_device(d->la, &o);
	assert_non_null(d->ctx);
	d->pd = xr_alloc_pd(d->ctx);
	d->cq = xr_create_cq(d->ctx, 16);
	assert_non_null(d->pd);
	assert_non_null(d->cq);
}

static void dev_close(struct dev *d)
{
	xr_destroy_cq(d->cq);
	xr_dealloc_pd(d->pd);
	xr_close_device(d->ctx);
	xr_link_close(d->la);
	xr_link_close(d->lb);
}

static struct xr_qp *small_qp(struct dev *d, struct xr_srq *srq)
{
	struct xr_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = XR_QPT_RC;
	ia.srq = srq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	return xr_create_qp(d->pd, &ia);
}

static uint64_t dev_counter(struct dev *d, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(d->ctx), c, &v);
	return v;
}

/* 1. */
static void test_create_without_memory(void **state)
{
	struct xr_srq_init_attr sa = { { 4, 1, 0 } };
	struct xr_srq_ctx hw;
	struct xr_srq *srq;
	struct xr_qp *qp;
	struct dev d;

	(void)state;
	dev_open(&d);
	srq = xr_create_srq(d.pd, &sa);
	assert_non_null(srq);
	/* The device's first QP needs the table's first page. */
	fail_next(test_qp_page_bytes(), 1);
	errno = 0;
	assert_null(small_qp(&d, srq));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(fail_left, 0);
	assert_int_equal(dev_counter(&d, XR_CNT_QP_MEM_FAIL), 1);
	/* Nothing attached to the SRQ, in the engine either. */
	assert_int_equal(xr_regio_srq_read(xr_context_regs(d.ctx), xr_srq_num(srq), &hw), 0);
	assert_int_equal(hw.nqps, 0);
	/* Its QPN goes to the next QP: the first one a device hands out. */
	qp = small_qp(&d, srq);
	assert_non_null(qp);
	assert_int_equal(xr_qp_num(qp), 0x11);
	assert_int_equal(xr_destroy_srq(srq), EBUSY);   /* used now */
	assert_int_equal(xr_destroy_qp(qp), 0);
	assert_int_equal(xr_destroy_srq(srq), 0);
	dev_close(&d);
}

/* 2. */
static void test_refused_create_gives_qpn_back(void **state)
{
	struct xr_srq_init_attr sa = { { 4, 1, 0 } };
	struct xr_regio *r;
	struct xr_srq_ctx hw;
	struct xr_srq *srq;
	struct xr_qp *qp;
	uint32_t first;
	struct dev d;

	(void)state;
	dev_open(&d);
	r = xr_context_regs(d.ctx);
	qp = small_qp(&d, NULL);
	assert_non_null(qp);
	first = xr_qp_num(qp);
	assert_int_equal(xr_destroy_qp(qp), 0);
	/* The SRQ goes away behind the driver's back: the engine refuses a
	 * QP that names it. */
	srq = xr_create_srq(d.pd, &sa);
	assert_non_null(srq);
	assert_int_equal(xr_regio_srq_read(r, xr_srq_num(srq), &hw), 0);
	assert_int_equal(xr_regio_srq_destroy(r, xr_srq_num(srq)), 0);
	assert_null(small_qp(&d, srq));
	assert_int_equal(errno, EINVAL);
	/* Neither the failed create nor the destroy before it lost a QPN. */
	qp = small_qp(&d, NULL);
	assert_non_null(qp);
	assert_int_equal(xr_qp_num(qp), first);
	assert_int_equal(xr_destroy_qp(qp), 0);
	qp = small_qp(&d, NULL);
	assert_int_equal(xr_qp_num(qp), first);
	assert_int_equal(xr_destroy_qp(qp), 0);
	hw.valid = false;
	assert_int_equal(xr_regio_srq_commit(r, xr_srq_num(srq), &hw, NULL), 0);
	assert_int_equal(xr_destroy_srq(srq), 0);
	dev_close(&d);
}

/* ---- a connected pair ---- */

#define SQ_LOG 4

static void pair_open(struct pair *p, unsigned nqp)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 20, .nqp = nqp,
			    .sq_depth = 1u << SQ_LOG, .rq_depth = 1u << SQ_LOG, .cq_depth = 64,
			    .timeout = 8 /* 1 ms */, .retry_cnt = 7, .rnr_retry = 7 };

	assert_int_equal(h_open(p, &o), 0);
}

static void post_write(struct pair *p, unsigned q, uint32_t off, uint32_t len, uint64_t id)
{
	struct xr_sge s = { (uintptr_t)h_data(&p->a) + off, len, p->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + off;
	w.wr.rdma.rkey = p->b.mr->rkey;
	assert_int_equal(xr_post_send(p->a.qp[q], &w, NULL), 0);
}

static void expect_done(struct pair *p, uint64_t id)
{
	struct xr_wc wc;

	if (!h_wait(p, &p->a, &wc, 5000)) {
		h_dump(p);
		fail_msg("no completion for %llu", (unsigned long long)id);
	}
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, id);
}

static void fill(struct pair *p, uint32_t off, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		h_data(&p->a)[off + i] = (uint8_t)(seed + i * 7);
	memset(h_data(&p->b) + off, 0, len);
}

/* 3. */
static void test_requester_waits_for_memory(void **state)
{
	struct xr_engine *ea;
	struct pair p;

	(void)state;
	pair_open(&p, 1);
	ea = xr_context_engine(p.a.ctx);
	fill(&p, 0, 3000, 1);
	fail_next(test_qp_act_bytes(SQ_LOG), 1);
	post_write(&p, 0, 0, 3000, 7);
	xr_engine_progress(ea);
	assert_int_equal(fail_left, 0);
	assert_int_equal(h_counter(&p.a, XR_CNT_QP_MEM_FAIL), 1);
	assert_int_equal(h_counter(&p.a, XR_CNT_TX_PKTS), 0);   /* it waited */
	expect_done(&p, 7);
	assert_memory_equal(h_data(&p.b), h_data(&p.a), 3000);
	assert_int_equal(h_counter(&p.a, XR_CNT_RETRANSMITS), 0);
	assert_true(h_guards_ok(&p.b));
	h_close(&p);
}

/* 4. */
static void test_responder_drops_without_memory(void **state)
{
	struct xr_engine *ea, *eb;
	struct pair p;

	(void)state;
	pair_open(&p, 1);
	ea = xr_context_engine(p.a.ctx);
	eb = xr_context_engine(p.b.ctx);
	fill(&p, 0, 1000, 3);
	post_write(&p, 0, 0, 1000, 9);
	xr_engine_progress(ea);
	assert_int_equal(h_counter(&p.a, XR_CNT_TX_PKTS), 1);
	fail_next(test_qp_act_bytes(SQ_LOG), 1);
	xr_engine_progress(eb);
	assert_int_equal(fail_left, 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_QP_MEM_FAIL), 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_TX_PKTS), 0);   /* no ACK: not executed */
	assert_int_equal(h_data(&p.b)[1], 0);
	/* The requester's ACK timer sends it again. */
	expect_done(&p, 9);
	assert_memory_equal(h_data(&p.b), h_data(&p.a), 1000);
	assert_true(h_counter(&p.a, XR_CNT_ACK_TIMEOUTS) >= 1);
	h_close(&p);
}

/* 5. */
static void test_idle_again_after_traffic(void **state)
{
	const unsigned n = 4;
	struct xr_engine_qp_mem ma, mb;
	struct xr_sge s;
	struct xr_send_wr w;
	struct pair p;

	(void)state;
	pair_open(&p, n);
	for (unsigned q = 0; q < n; q++) {
		fill(&p, q * 8192, 5000, (uint8_t)q);
		post_write(&p, q, q * 8192, 5000, q);
	}
	/* A READ on the last QP: its responder keeps resources for replay. */
	memset(&w, 0, sizeof(w));
	s = (struct xr_sge){ (uintptr_t)h_data(&p.a) + 65536, 2048, p.a.mr->lkey };
	w.wr_id = 100;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = XR_WR_RDMA_READ;
	w.send_flags = XR_SEND_SIGNALED;
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + 65536;
	w.wr.rdma.rkey = p.b.mr->rkey;
	for (unsigned i = 0; i < 2048; i++)
		h_data(&p.b)[65536 + i] = (uint8_t)(i * 13);
	assert_int_equal(xr_post_send(p.a.qp[n - 1], &w, NULL), 0);
	for (unsigned i = 0; i < n + 1; i++) {
		struct xr_wc wc;
		if (!h_wait(&p, &p.a, &wc, 5000))
			fail_msg("completion %u missing", i);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	for (unsigned q = 0; q < n; q++)
		assert_memory_equal(h_data(&p.b) + q * 8192, h_data(&p.a) + q * 8192, 5000);
	assert_memory_equal(h_data(&p.a) + 65536, h_data(&p.b) + 65536, 2048);
	for (int i = 0; i < 10; i++)
		h_progress(&p);
	xr_engine_qp_mem(xr_context_engine(p.a.ctx), &ma);
	xr_engine_qp_mem(xr_context_engine(p.b.ctx), &mb);
	assert_int_equal(ma.qps, n);
	assert_int_equal(mb.qps, n);
	/* In flight state given back on both sides. */
	assert_int_equal(ma.active, 0);
	assert_int_equal(ma.active_bytes, 0);
	assert_int_equal(mb.active, 0);
	assert_int_equal(mb.active_bytes, 0);
	/* The READ's responder kept its 16 resources; nothing else did. */
	assert_int_equal(ma.res_bytes, 0);
	assert_int_equal(mb.res_bytes, test_qp_res_bytes(16));
	/* The WRITE-only QPs: the slot, within the budget. */
	assert_true(ma.slot_bytes <= 512);
	h_close(&p);
}

/* 6. */
static long engine_thread_wakeups(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	long sum = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[96], line[128];
		pid_t t = (pid_t)atoi(de->d_name);
		FILE *f;
		if (t <= 0 || t == gettid())
			continue;   /* the engines' threads: every thread but this one */
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)t);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += atol(line + 24);
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static void test_no_tick_after_the_ack(void **state)
{
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_1024, .buf_len = 1 << 16, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .sq_depth = 16, .rq_depth = 16, .cq_depth = 64 };
	struct pair p;
	long before, after;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);   /* ACK timer 67 ms */
	fill(&p, 0, 512, 9);
	post_write(&p, 0, 0, 512, 1);
	expect_done(&p, 1);
	usleep(5000);   /* both threads settle */
	before = engine_thread_wakeups();
	usleep(30000);
	after = engine_thread_wakeups();
	if (after - before > 4)
		fail_msg("the engines' threads woke %ld times in 30 ms with nothing to do", after - before);
	assert_memory_equal(h_data(&p.b), h_data(&p.a), 512);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_without_memory),
		cmocka_unit_test(test_refused_create_gives_qpn_back),
		cmocka_unit_test(test_requester_waits_for_memory),
		cmocka_unit_test(test_responder_drops_without_memory),
		cmocka_unit_test(test_idle_again_after_traffic),
		cmocka_unit_test(test_no_tick_after_the_ack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
