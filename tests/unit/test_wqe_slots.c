/* SPDX-License-Identifier: MIT */
/*
 * Send WQE slots of one, two or four 256-byte blocks (ring.h,
 * QP_SQ_LOG_SIZE.wqe_blocks): a QP that asks for up to 960 bytes of inline
 * data or 60 SGEs gets them, end to end; the engine refuses a slot size it
 * does not know and a change of it on a live QP. And a host that writes a
 * WQE after its doorbell: the engine reads no further than the slot
 * (test_hostile_rings: a WQE rewritten before a resend).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/mman.h>

#include "drv/drv.h"
#include "rc_checks.h"

static struct pair P;

static struct h_opts slot_opts(uint32_t max_send_sge, uint32_t max_inline)
{
	struct h_opts o = base_opts(XR_MTU_256);   /* inline data over several packets */

	o.mode = XR_PROGRESS_INLINE;
	o.max_send_sge = max_send_sge;
	o.max_inline = max_inline;
	return o;
}

static void open_with(struct h_opts o)
{
	assert_int_equal(h_open(&P, &o), 0);
	memset(h_data(&P.a), 0, 1u << 20);
	memset(h_data(&P.b), 0, 1u << 20);
}

static int teardown(void **state)
{
	(void)state;
	h_close(&P);
	return 0;
}

static void wait_ok(struct end *e, enum xr_wc_opcode op, uint32_t len)
{
	struct xr_wc wc;

	assert_int_equal(h_wait(&P, e, &wc, 5000), 1);
	if (wc.status != XR_WC_SUCCESS)
		h_dump(&P);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.opcode, op);
	if (op != XR_WC_RDMA_WRITE)
		assert_int_equal(wc.byte_len, len);
}

/* The slot each QP got, as the engine holds it. */
static unsigned blocks_of(const struct end *e)
{
	return h_qp_read(e).sq_wqe_blocks;
}

static void test_slot_fits_what_was_asked(void **state)
{
	static const struct { uint32_t sge, inl; unsigned blocks; } cases[] = {
		{ 1, 0, 0 }, { 12, 192, 0 }, { 13, 0, 1 }, { 1, 193, 1 }, { 28, 448, 1 },
		{ 29, 0, 2 }, { 1, 449, 2 }, { 60, 960, 2 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		open_with(slot_opts(cases[i].sge, cases[i].inl));
		assert_int_equal(blocks_of(&P.a), cases[i].blocks);
		h_close(&P);
	}
	open_with(slot_opts(0, 0));
}

static void test_beyond_the_largest_slot_is_refused(void **state)
{
	struct xr_qp_init_attr ia = { .send_cq = P.a.cq, .recv_cq = P.a.cq, .qp_type = XR_QPT_RC,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					       .max_recv_sge = 1, .max_inline_data = XR_WQE_MAX_INLINE + 1 } };

	(void)state;
	open_with(slot_opts(0, 0));
	errno = 0;
	assert_null(xr_create_qp(P.a.pd, &ia));
	assert_int_equal(errno, EINVAL);
	ia.cap.max_inline_data = 0;
	ia.cap.max_send_sge = XR_WQE_MAX_SGE + 1;
	errno = 0;
	assert_null(xr_create_qp(P.a.pd, &ia));
	assert_int_equal(errno, EINVAL);
}

/* Inline WRITEs and SENDs of up to 960 bytes (four packets at MTU 256),
 * the bytes checked where they land; one byte more than the QP's
 * max_inline_data is refused at post. */
static void test_large_inline_arrives_whole(void **state)
{
	uint8_t src[XR_WQE_MAX_INLINE + 1];
	struct xr_sge s = { (uintptr_t)src, XR_WQE_MAX_INLINE, 0 };
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_INLINE | XR_SEND_SIGNALED };
	struct xr_sge rs = { 0, 4096, 0 };
	struct xr_recv_wr rw = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 };
	struct xr_send_wr *bad;
	struct xr_recv_wr *rbad;

	(void)state;
	open_with(slot_opts(0, XR_WQE_MAX_INLINE));
	rs.addr = (uintptr_t)h_data(&P.b) + 8192;
	rs.lkey = P.b.mr->lkey;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b) + 100;
	w.wr.rdma.rkey = P.b.mr->rkey;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	memset(src, 0, sizeof(src));   /* copied at post: changing it now changes nothing */
	wait_ok(&P.a, XR_WC_RDMA_WRITE, 0);
	for (size_t i = 0; i < XR_WQE_MAX_INLINE; i++)
		assert_int_equal(h_data(&P.b)[100 + i], (uint8_t)(i * 7 + 3));
	assert_int_equal(h_data(&P.b)[100 + XR_WQE_MAX_INLINE], 0);

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i ^ 0x5A);
	assert_int_equal(xr_post_recv(P.b.qp[0], &rw, &rbad), 0);
	s.length = 700;
	w.opcode = XR_WR_SEND;
	w.wr_id = 3;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	wait_ok(&P.a, XR_WC_SEND, 700);
	wait_ok(&P.b, XR_WC_RECV, 700);
	for (size_t i = 0; i < 700; i++)
		assert_int_equal(h_data(&P.b)[8192 + i], (uint8_t)(i ^ 0x5A));

	s.length = XR_WQE_MAX_INLINE + 1;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), EINVAL);
	assert_ptr_equal(bad, &w);
}

/* A WRITE gathered from 60 SGEs and a READ scattered into 60. */
static void test_sixty_sges_gather_and_scatter(void **state)
{
	struct xr_sge s[XR_WQE_MAX_SGE];
	struct xr_send_wr w = { .wr_id = 1, .sg_list = s, .num_sge = XR_WQE_MAX_SGE,
				.opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED };
	uint32_t total = 0;
	struct xr_send_wr *bad;

	(void)state;
	open_with(slot_opts(XR_WQE_MAX_SGE, 0));
	assert_int_equal(blocks_of(&P.a), XR_WQE_MAX_BLOCKS_LOG);
	for (unsigned i = 0; i < XR_WQE_MAX_SGE; i++) {
		/* Uneven pieces, out of order in the buffer. */
		uint32_t len = 37 + 11 * i, off = 4096 * (XR_WQE_MAX_SGE - i);
		s[i] = (struct xr_sge){ (uintptr_t)h_data(&P.a) + off, len, P.a.mr->lkey };
		for (uint32_t k = 0; k < len; k++)
			h_data(&P.a)[off + k] = (uint8_t)(i + k * 3);
		total += len;
	}
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b);
	w.wr.rdma.rkey = P.b.mr->rkey;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	wait_ok(&P.a, XR_WC_RDMA_WRITE, total);
	for (unsigned i = 0, at = 0; i < XR_WQE_MAX_SGE; at += s[i].length, i++)
		for (uint32_t k = 0; k < s[i].length; k++)
			assert_int_equal(h_data(&P.b)[at + k], (uint8_t)(i + k * 3));

	/* Back again by READ, into the same pieces cleared. */
	for (unsigned i = 0; i < XR_WQE_MAX_SGE; i++)
		memset((void *)(uintptr_t)s[i].addr, 0, s[i].length);
	w.opcode = XR_WR_RDMA_READ;
	w.wr_id = 2;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	wait_ok(&P.a, XR_WC_RDMA_READ, total);
	for (unsigned i = 0; i < XR_WQE_MAX_SGE; i++)
		for (uint32_t k = 0; k < s[i].length; k++)
			assert_int_equal(((uint8_t *)(uintptr_t)s[i].addr)[k], (uint8_t)(i + k * 3));
	w.num_sge = XR_WQE_MAX_SGE + 1;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), EINVAL);
}

/* A QP COMMIT of the fields in mask: the command's status. */
static uint32_t commit(struct xr_regio *regs, uint32_t qpn, const struct xr_qp_ctx *c, uint32_t mask)
{
	uint32_t st = 0xFFFF;

	assert_int_equal(xr_regio_write(regs, XR_REG_QP_COMMIT_MASK, mask), 0);
	(void)xr_regio_qp_commit(regs, qpn, c, &st);   /* an error when refused: st says why */
	return st;
}

/* n receive SGEs of uneven lengths, out of order in e's buffer from
 * byte 1 MiB; their lengths' sum. */
static uint32_t scatter_list(struct end *e, struct xr_sge *s, unsigned n)
{
	uint32_t total = 0;

	for (unsigned i = 0; i < n; i++) {
		s[i] = (struct xr_sge){ (uintptr_t)h_data(e) + (1u << 20) + 2048 * (n - i), 11 + 5 * i, e->mr->lkey };
		total += s[i].length;
	}
	return total;
}

/* The bytes of a message of `total` bytes, byte k = k * 7 + 1, landed in
 * the SGEs in order. */
static void expect_scattered(const struct xr_sge *s, unsigned n)
{
	for (unsigned i = 0, at = 0; i < n; at += s[i].length, i++)
		for (uint32_t k = 0; k < s[i].length; k++)
			assert_int_equal(((uint8_t *)(uintptr_t)s[i].addr)[k], (uint8_t)((at + k) * 7 + 1));
}

static void send_pattern(struct xr_qp *qp, uint32_t len, uint64_t id)
{
	struct xr_sge s = { (uintptr_t)h_data(&P.a), len, P.a.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_SEND,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_send_wr *bad;

	for (uint32_t k = 0; k < len; k++)
		h_data(&P.a)[k] = (uint8_t)(k * 7 + 1);
	assert_int_equal(xr_post_send(qp, &w, &bad), 0);
}

/* A QP on a (sender) and one on b taking its receives from srq,
 * connected to each other with o's path. */
static void srq_pair(const struct h_opts *o, struct xr_srq *srq, struct xr_qp **a2, struct xr_qp **b2)
{
	struct xr_qp_init_attr ia = { .send_cq = P.a.cq, .recv_cq = P.a.cq, .qp_type = XR_QPT_RC,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };

	*a2 = xr_create_qp(P.a.pd, &ia);
	ia.send_cq = ia.recv_cq = P.b.cq;
	ia.srq = srq;
	*b2 = xr_create_qp(P.b.pd, &ia);
	assert_non_null(*a2);
	assert_non_null(*b2);
	assert_int_equal(h_connect(*a2, *b2, P.b.ctx, o, 300, 900), 0);
	assert_int_equal(h_connect(*b2, *a2, P.a.ctx, o, 900, 300), 0);
}

/* A SEND of several packets scattered into 63 receive SGEs: its own
 * receive queue's (four-block slots), then an SRQ's; 64 are refused. */
static void test_sixty_three_receive_sges(void **state)
{
	struct h_opts o = slot_opts(0, 0);
	struct xr_sge s[XR_RWQE_MAX_SGE + 1];
	struct xr_recv_wr r = { .wr_id = 7, .sg_list = s, .num_sge = XR_RWQE_MAX_SGE };
	struct xr_srq_init_attr sa = { { 4, XR_RWQE_MAX_SGE, 0 } };
	struct xr_srq_ctx sc;
	struct xr_qp *a2, *b2;
	struct xr_srq *srq;
	struct xr_recv_wr *rbad;
	uint32_t total;

	(void)state;
	o.max_recv_sge = XR_RWQE_MAX_SGE;
	open_with(o);
	assert_int_equal(h_qp_read(&P.b).rq_wqe_blocks, XR_WQE_MAX_BLOCKS_LOG);
	total = scatter_list(&P.b, s, XR_RWQE_MAX_SGE);
	assert_int_equal(xr_post_recv(P.b.qp[0], &r, &rbad), 0);
	send_pattern(P.a.qp[0], total, 1);
	wait_ok(&P.a, XR_WC_SEND, total);
	wait_ok(&P.b, XR_WC_RECV, total);
	expect_scattered(s, XR_RWQE_MAX_SGE);
	r.num_sge = XR_RWQE_MAX_SGE + 1;
	assert_int_equal(xr_post_recv(P.b.qp[0], &r, &rbad), EINVAL);

	/* The same through an SRQ of four-block slots. */
	srq = xr_create_srq(P.b.pd, &sa);
	assert_non_null(srq);
	assert_int_equal(xr_regio_srq_read(xr_context_regs(P.b.ctx), xr_srq_num(srq), &sc), 0);
	assert_int_equal(sc.wqe_blocks, XR_WQE_MAX_BLOCKS_LOG);
	srq_pair(&o, srq, &a2, &b2);
	memset(h_data(&P.b) + (1u << 20), 0, 1u << 18);
	r.num_sge = XR_RWQE_MAX_SGE;
	r.wr_id = 8;
	assert_int_equal(xr_post_srq_recv(srq, &r, &rbad), 0);
	send_pattern(a2, total, 2);
	wait_ok(&P.a, XR_WC_SEND, total);
	wait_ok(&P.b, XR_WC_RECV, total);
	expect_scattered(s, XR_RWQE_MAX_SGE);
	r.num_sge = XR_RWQE_MAX_SGE + 1;
	assert_int_equal(xr_post_srq_recv(srq, &r, &rbad), EINVAL);
	assert_int_equal(xr_destroy_qp(a2), 0);
	assert_int_equal(xr_destroy_qp(b2), 0);
	assert_int_equal(xr_destroy_srq(srq), 0);
	sa.attr.max_sge = XR_RWQE_MAX_SGE + 1;
	assert_null(xr_create_srq(P.b.pd, &sa));
}

/* Through the registers: a send or receive slot size beyond four blocks is refused, and
 * so is a new slot size for a QP out of RESET (its WQEs would be read at
 * other addresses). */
static void test_engine_checks_the_slot_size(void **state)
{
	struct xr_regio *regs;
	struct xr_qp_ctx c;
	uint32_t qpn;

	(void)state;
	open_with(slot_opts(0, 0));
	regs = xr_context_regs(P.a.ctx);
	qpn = xr_qp_num(P.a.qp[0]);
	c = h_qp_read(&P.a);
	c.sq_wqe_blocks = 1;
	assert_int_equal(commit(regs, qpn, &c, XR_QPM_RINGS), XR_CMD_ST_BAD_STATE);
	c.state = XR_QPS_RESET;
	assert_int_equal(commit(regs, qpn, &c, XR_QPM_STATE), XR_CMD_ST_OK);
	c.sq_wqe_blocks = XR_WQE_MAX_BLOCKS_LOG + 1;
	assert_int_equal(commit(regs, qpn, &c, XR_QPM_RINGS), XR_CMD_ST_BAD_RANGE);
	assert_int_equal(h_qp_read(&P.a).sq_wqe_blocks, 0);
	c.sq_wqe_blocks = 0;
	c.rq_wqe_blocks = XR_WQE_MAX_BLOCKS_LOG + 1;
	assert_int_equal(commit(regs, qpn, &c, XR_QPM_RINGS), XR_CMD_ST_BAD_RANGE);
	c.sq_wqe_blocks = c.rq_wqe_blocks = XR_WQE_MAX_BLOCKS_LOG;
	assert_int_equal(commit(regs, qpn, &c, XR_QPM_RINGS), XR_CMD_ST_OK);
	assert_int_equal(h_qp_read(&P.a).sq_wqe_blocks, XR_WQE_MAX_BLOCKS_LOG);
	assert_int_equal(h_qp_read(&P.a).rq_wqe_blocks, XR_WQE_MAX_BLOCKS_LOG);
}

/* A READ in the ring's last slot whose SGEs the host clears and whose
 * num_sge it sets to 255 once the request has left: the response is
 * placed through no more SGEs than the slot holds, finds no room and fails
 * the READ (the engine read up to 4 KiB past the ring before). */
static void test_scribbled_read_stays_in_its_slot(void **state)
{
	struct h_opts o = slot_opts(0, 0);
	struct xr_sge s = { 0, 512, 0 };
	struct xr_send_wr w = { .sg_list = &s, .num_sge = 1, .send_flags = XR_SEND_SIGNALED };
	struct xr_engine *ea;
	struct xr_send_wr *bad;
	struct xr_hw_wqe *q;
	struct xr_wc wc;

	(void)state;
	o.sq_depth = 2;
	open_with(o);
	ea = xr_context_engine(P.a.ctx);
	s.addr = (uintptr_t)h_data(&P.a);
	s.lkey = P.a.mr->lkey;
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b) + 8192;
	w.wr.rdma.rkey = P.b.mr->rkey;
	w.opcode = XR_WR_RDMA_WRITE;   /* fills slot 0 */
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	wait_ok(&P.a, XR_WC_RDMA_WRITE, 512);
	memset(h_data(&P.b), 0x77, 512);
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b);
	w.opcode = XR_WR_RDMA_READ;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	q = xr_sq_wqe(P.a.qp[0], 1);
	assert_int_equal(q->opcode, XR_WR_RDMA_READ);
	xr_engine_progress(ea);   /* the request leaves; b has not answered */
	memset(xr_wqe_body(q), 0, XR_WQE_BODY(0));
	q->num_sge = 255;
	assert_int_equal(h_wait(&P, &P.a, &wc, 5000), 1);
	assert_int_equal(wc.status, XR_WC_LOC_LEN_ERR);
	for (unsigned i = 0; i < 512; i++)
		assert_int_equal(h_data(&P.a)[i], 0);
	assert_true(h_guards_ok(&P.a));
}

/* SGE lengths whose 32-bit sum wraps to the WQE's length (a host with a
 * region of 4 GiB or more can write them): the engine summed in 32 bits
 * and sent the first bytes of a list it should have refused. */
static void test_sge_lengths_that_wrap_are_refused(void **state)
{
	const size_t big = (4ull << 30) + (1u << 20);
	struct xr_sge s[2] = { { 0, 64, 0 }, { 0, 64, 0 } };
	struct xr_send_wr w = { .wr_id = 6, .sg_list = s, .num_sge = 2, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_send_wr *bad;
	struct xr_hw_wqe *q;
	struct xr_mr *mr;
	struct xr_wc wc;
	uint8_t *mem;

	(void)state;
	open_with(slot_opts(0, 0));
	mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(mem != MAP_FAILED);
	mr = xr_reg_mr(P.a.pd, mem, big, XR_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	s[0].addr = (uintptr_t)mem;
	s[1].addr = (uintptr_t)mem + (2ull << 30) + 4096;
	s[0].lkey = s[1].lkey = mr->lkey;
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b);
	w.wr.rdma.rkey = P.b.mr->rkey;
	memset(h_data(&P.b), 0x5C, 128);
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	q = xr_sq_wqe(P.a.qp[0], 0);
	assert_int_equal(q->length, 128);
	/* 2 x (2^31 + 64) = 2^32 + 128: 128 in 32 bits. */
	((struct xr_sge *)xr_wqe_sges(q))[0].length = 0x80000040u;
	((struct xr_sge *)xr_wqe_sges(q))[1].length = 0x80000040u;
	assert_int_equal(h_wait(&P, &P.a, &wc, 5000), 1);
	assert_int_equal(wc.wr_id, 6);
	assert_int_equal(wc.status, XR_WC_LOC_LEN_ERR);
	for (unsigned i = 0; i < 128; i++)
		assert_int_equal(h_data(&P.b)[i], 0x5C);   /* nothing written */
	xr_dereg_mr(mr);
	munmap(mem, big);
}

/* Rewritten before the engine took it, the WQE is checked as it is then:
 * more SGEs or inline bytes than its slot holds fail it with LOC_LEN_ERR. */
static void test_scribbled_before_start_is_checked(void **state)
{
	struct xr_sge s = { 0, 64, 0 };
	struct xr_send_wr w = { .wr_id = 5, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_send_wr *bad;
	struct xr_wc wc;

	(void)state;
	open_with(slot_opts(0, 0));
	s.addr = (uintptr_t)h_data(&P.a);
	s.lkey = P.a.mr->lkey;
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.b);
	w.wr.rdma.rkey = P.b.mr->rkey;
	assert_int_equal(xr_post_send(P.a.qp[0], &w, &bad), 0);
	xr_sq_wqe(P.a.qp[0], 0)->num_sge = XR_WQE_BLOCK_SGE + 1;
	assert_int_equal(h_wait(&P, &P.a, &wc, 5000), 1);
	assert_int_equal(wc.status, XR_WC_LOC_LEN_ERR);
	assert_true(h_guards_ok(&P.a));
}

/* Receive WQEs in two-block slots (16 SGEs: 512 bytes) around a ring of
 * four more than once: each SEND lands in the WQE posted for it, then the
 * WQEs left are flushed with their own wr_ids (the engine's RQ reads, the
 * flush's included, at the slot's stride). */
static void test_receive_slots_wrap_and_flush(void **state)
{
	struct h_opts o = slot_opts(0, 0);
	enum { N = 16, DEPTH = 4 };
	struct xr_sge s[N];
	struct xr_recv_wr r = { .sg_list = s, .num_sge = N };
	struct xr_recv_wr *rbad;
	struct xr_qp_attr a;
	struct xr_wc wc;
	uint32_t total;

	(void)state;
	o.max_recv_sge = N;
	o.rq_depth = DEPTH;
	open_with(o);
	assert_int_equal(h_qp_read(&P.b).rq_wqe_blocks, 1);
	total = scatter_list(&P.b, s, N);
	for (unsigned i = 0; i < 3 * DEPTH; i++) {
		r.wr_id = 100 + i;
		assert_int_equal(xr_post_recv(P.b.qp[0], &r, &rbad), 0);
		memset(h_data(&P.b) + (1u << 20), 0, 2048 * (N + 1));
		send_pattern(P.a.qp[0], total, i);
		wait_ok(&P.a, XR_WC_SEND, total);
		assert_int_equal(h_wait(&P, &P.b, &wc, 5000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.byte_len, total);
		expect_scattered(s, N);
	}
	for (unsigned i = 0; i < DEPTH; i++) {
		r.wr_id = 200 + i;
		assert_int_equal(xr_post_recv(P.b.qp[0], &r, &rbad), 0);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_ERR;
	assert_int_equal(xr_modify_qp(P.b.qp[0], &a, XR_QP_STATE), 0);
	for (unsigned i = 0; i < DEPTH; i++) {
		assert_int_equal(h_wait(&P, &P.b, &wc, 5000), 1);
		assert_int_equal(wc.status, XR_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.wr_id, 200 + i);
	}
	assert_true(h_guards_ok(&P.b));
}

/* A host that sets num_sge to 255 in a posted receive WQE, in the ring's
 * last slot, of one- and two-block slots (an RQ, an SRQ): the engine
 * reads no SGE past the slot (ASan: the ring is the driver's own
 * allocation) and the message fails the WQE, as its bytes do not fit. */
static void scribbled_receive(unsigned max_recv_sge, bool use_srq)
{
	struct h_opts o = slot_opts(0, 0);
	struct xr_sge s = { 0, 64, 0 };
	struct xr_recv_wr r = { .wr_id = 9, .sg_list = &s, .num_sge = 1 };
	struct xr_srq_init_attr sa = { { 2, max_recv_sge, 0 } };
	struct xr_recv_wr *rbad;
	struct xr_srq *srq = NULL;
	struct xr_qp *sender, *a2 = NULL, *b2 = NULL;
	struct xr_hw_rwqe *w;
	struct xr_wc wc;
	unsigned blocks = max_recv_sge > XR_RWQE_BLOCK_SGE ? 1 : 0;

	o.max_recv_sge = max_recv_sge;
	o.rq_depth = 2;
	open_with(o);
	sender = P.a.qp[0];
	s.addr = (uintptr_t)h_data(&P.b);
	s.lkey = P.b.mr->lkey;
	if (use_srq) {
		srq = xr_create_srq(P.b.pd, &sa);
		assert_non_null(srq);
		srq_pair(&o, srq, &a2, &b2);
		sender = a2;
	}
	/* Slot 0 takes a good message, slot 1 (the last) is scribbled. */
	for (unsigned i = 0; i < 2; i++) {
		r.wr_id = 9 + i;
		if (use_srq)
			assert_int_equal(xr_post_srq_recv(srq, &r, &rbad), 0);
		else
			assert_int_equal(xr_post_recv(P.b.qp[0], &r, &rbad), 0);
	}
	w = use_srq ? xr_rwqe_at(srq->ring, 1, srq->log, srq->blocks_log)
		    : xr_rwqe_at(P.b.qp[0]->rq, 1, P.b.qp[0]->rq_log, P.b.qp[0]->rq_blocks_log);
	assert_int_equal(use_srq ? srq->blocks_log : P.b.qp[0]->rq_blocks_log, blocks);
	assert_int_equal(w->wr_id, 10);
	memset(xr_rwqe_sges(w), 0, XR_RWQE_BODY(blocks));
	w->num_sge = 255;
	w->length = 64;
	send_pattern(sender, 64, 1);
	wait_ok(&P.a, XR_WC_SEND, 64);
	assert_int_equal(h_wait(&P, &P.b, &wc, 5000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	send_pattern(sender, 64, 2);
	assert_int_equal(h_wait(&P, &P.b, &wc, 5000), 1);
	assert_int_equal(wc.wr_id, 10);
	assert_int_not_equal(wc.status, XR_WC_SUCCESS);
	assert_true(h_guards_ok(&P.b));
	if (use_srq) {
		/* the sender's QP saw a NAK: drain what it reports */
		while (h_wait(&P, &P.a, &wc, 200) == 1)
			;
		assert_int_equal(xr_destroy_qp(a2), 0);
		assert_int_equal(xr_destroy_qp(b2), 0);
		assert_int_equal(xr_destroy_srq(srq), 0);
	}
}

static void test_scribbled_receive_stays_in_its_slot(void **state)
{
	(void)state;
	scribbled_receive(XR_RWQE_BLOCK_SGE, false);
}

static void test_scribbled_receive_stays_in_its_slot_2blocks(void **state)
{
	(void)state;
	scribbled_receive(XR_RWQE_BLOCK_SGE + 1, false);
}

static void test_scribbled_srq_receive_stays_in_its_slot(void **state)
{
	(void)state;
	scribbled_receive(XR_RWQE_BLOCK_SGE + 1, true);
}

/* A live QP's receive slot size does not change (its posted WQEs would
 * be read at other addresses); an SRQ's neither: ibv_modify_srq keeps
 * it, a COMMIT of the live SRQ with another is only a limit change, and
 * a new SRQ of a size beyond four blocks is refused. */
static void test_receive_slot_size_stays(void **state)
{
	struct xr_srq_init_attr sa = { { 4, XR_RWQE_BLOCK_SGE + 1, 0 } };
	struct xr_srq_attr ma = { .srq_limit = 2 };
	struct xr_regio *regs;
	struct xr_srq_ctx sc;
	struct xr_qp_ctx c;
	struct xr_srq *srq;
	uint32_t st = 0xFFFF;

	(void)state;
	open_with(slot_opts(0, 0));
	regs = xr_context_regs(P.a.ctx);
	c = h_qp_read(&P.a);
	assert_int_equal(c.rq_wqe_blocks, 0);
	c.rq_wqe_blocks = 2;
	assert_int_equal(commit(regs, xr_qp_num(P.a.qp[0]), &c, XR_QPM_RINGS), XR_CMD_ST_BAD_STATE);
	assert_int_equal(h_qp_read(&P.a).rq_wqe_blocks, 0);

	srq = xr_create_srq(P.a.pd, &sa);
	assert_non_null(srq);
	assert_int_equal(xr_modify_srq(srq, &ma, XR_SRQ_LIMIT), 0);
	assert_int_equal(xr_regio_srq_read(regs, xr_srq_num(srq), &sc), 0);
	assert_int_equal(sc.wqe_blocks, 1);
	assert_int_equal(sc.limit, 2);
	sc.wqe_blocks = 2;
	sc.limit = 1;
	assert_int_equal(xr_regio_srq_commit(regs, xr_srq_num(srq), &sc, &st), 0);
	assert_int_equal(xr_regio_srq_read(regs, xr_srq_num(srq), &sc), 0);
	assert_int_equal(sc.wqe_blocks, 1);
	assert_int_equal(sc.limit, 1);
	assert_int_equal(xr_destroy_srq(srq), 0);
	/* a new SRQ, through the registers: four blocks at most */
	sc.wqe_blocks = XR_WQE_MAX_BLOCKS_LOG + 1;
	sc.limit = 0;
	st = 0xFFFF;
	(void)xr_regio_srq_commit(regs, 1, &sc, &st);
	assert_int_equal(st, XR_CMD_ST_BAD_RANGE);
}

/* A QP on an SRQ never posts to its own receive queue: asking for 63
 * receive SGEs (as programs passing one cap to every QP do) does not give
 * it 1024-byte slots of a ring nobody writes. */
static void test_srq_qp_keeps_one_block_rq(void **state)
{
	struct xr_srq_init_attr sa = { { 4, 1, 0 } };
	struct xr_qp_init_attr ia = { .qp_type = XR_QPT_RC,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 1024, .max_send_sge = 1,
					       .max_recv_sge = XR_RWQE_MAX_SGE } };
	struct xr_srq *srq;
	struct xr_qp *qp;
	struct xr_qp_ctx c;

	(void)state;
	open_with(slot_opts(0, 0));
	srq = xr_create_srq(P.a.pd, &sa);
	assert_non_null(srq);
	ia.send_cq = ia.recv_cq = P.a.cq;
	ia.srq = srq;
	qp = xr_create_qp(P.a.pd, &ia);
	assert_non_null(qp);
	assert_int_equal(xr_regio_qp_read(xr_context_regs(P.a.ctx), xr_qp_num(qp), &c), 0);
	assert_int_equal(c.rq_wqe_blocks, 0);
	assert_int_equal(xr_destroy_qp(qp), 0);
	assert_int_equal(xr_destroy_srq(srq), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_slot_fits_what_was_asked, teardown),
		cmocka_unit_test_teardown(test_beyond_the_largest_slot_is_refused, teardown),
		cmocka_unit_test_teardown(test_large_inline_arrives_whole, teardown),
		cmocka_unit_test_teardown(test_sixty_sges_gather_and_scatter, teardown),
		cmocka_unit_test_teardown(test_sixty_three_receive_sges, teardown),
		cmocka_unit_test_teardown(test_engine_checks_the_slot_size, teardown),
		cmocka_unit_test_teardown(test_scribbled_read_stays_in_its_slot, teardown),
		cmocka_unit_test_teardown(test_scribbled_before_start_is_checked, teardown),
		cmocka_unit_test_teardown(test_sge_lengths_that_wrap_are_refused, teardown),
		cmocka_unit_test_teardown(test_receive_slots_wrap_and_flush, teardown),
		cmocka_unit_test_teardown(test_scribbled_receive_stays_in_its_slot, teardown),
		cmocka_unit_test_teardown(test_scribbled_receive_stays_in_its_slot_2blocks, teardown),
		cmocka_unit_test_teardown(test_scribbled_srq_receive_stays_in_its_slot, teardown),
		cmocka_unit_test_teardown(test_receive_slot_size_stays, teardown),
		cmocka_unit_test_teardown(test_srq_qp_keeps_one_block_rq, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
