/* SPDX-License-Identifier: MIT */
/* Shared receive queues on the mem link (transport-rules F1-F4): the
 * limit event, WQEs in post order for whichever QP comes first, RNR when
 * empty, refusals, a QP in ERR leaving the SRQ to the others, UD on an
 * SRQ, and 16 RC QPs sharing one SRQ under load with the limit event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "dgram_harness.h"
#include "drv/drv.h"
#include "refusing_regio.h"

#define SLOT 4096

struct srq_pair {
	struct pair p;
	struct xr_srq *srq;
	unsigned n;
	struct xr_qp *a[16], *b[16];   /* a[i] -> b[i]; every b on the SRQ */
};

static struct xr_qp *rc_qp(struct end *e, struct xr_srq *srq)
{
	struct xr_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = e->cq;
	ia.qp_type = XR_QPT_RC;
	ia.srq = srq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 2;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	return xr_create_qp(e->pd, &ia);
}

static void open_srq(struct srq_pair *s, unsigned n, uint32_t max_wr)
{
	struct h_opts o = d_opts(false);
	struct xr_srq_init_attr sa = { { max_wr, 2, 0 } };

	o.buf_len = 4u << 20;
	o.min_rnr_timer = 1;   /* 10 us: RNR retries come quickly */
	assert_int_equal(h_open(&s->p, &o), 0);
	s->srq = xr_create_srq(s->p.b.pd, &sa);
	assert_non_null(s->srq);
	assert_int_equal(sa.attr.max_wr, max_wr);
	s->n = n;
	for (unsigned i = 0; i < n; i++) {
		s->a[i] = rc_qp(&s->p.a, NULL);
		s->b[i] = rc_qp(&s->p.b, s->srq);
		assert_non_null(s->a[i]);
		assert_non_null(s->b[i]);
		assert_int_equal(h_connect(s->a[i], s->b[i], s->p.b.ctx, &o, 100 + i, 7000 + i), 0);
		assert_int_equal(h_connect(s->b[i], s->a[i], s->p.a.ctx, &o, 7000 + i, 100 + i), 0);
	}
}

static void close_srq(struct srq_pair *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		xr_destroy_qp(s->a[i]);
		xr_destroy_qp(s->b[i]);
	}
	assert_int_equal(xr_destroy_srq(s->srq), 0);
	h_close(&s->p);
}

static int send_msg(struct xr_qp *qp, struct end *e, size_t off, uint32_t len, uint64_t id)
{
	struct xr_sge sge = { (uintptr_t)(h_data(e) + off), len, e->mr->lkey };
	struct xr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = XR_WR_SEND;
	wr.send_flags = XR_SEND_SIGNALED;
	return xr_post_send(qp, &wr, NULL);
}

/* The next receive completion on b (send completions on a are drained). */
static bool recv_one(struct srq_pair *s, struct xr_wc *out, unsigned ms)
{
	uint64_t until = h_now_ms() + ms;
	struct xr_wc w;

	while (h_now_ms() < until) {
		h_progress(&s->p);
		while (xr_poll_cq(s->p.a.cq, 1, &w) == 1)
			assert_int_equal(w.status, XR_WC_SUCCESS);
		if (xr_poll_cq(s->p.b.cq, 1, out) == 1)
			return true;
	}
	return false;
}

static bool limit_event(struct srq_pair *s, int ms, struct xr_async_event *ev)
{
	return xr_get_async_event(s->p.b.ctx, ev, ms) == 0;
}

/* F1: armed through modify, fires once when a take leaves fewer than the
 * limit posted, then reads back 0. */
static void test_limit_event(void **state)
{
	struct srq_pair s;
	struct xr_srq_attr at;
	struct xr_async_event ev;
	struct xr_wc wc;

	(void)state;
	open_srq(&s, 1, 16);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(d_post_srq(s.srq, &s.p.b, i * SLOT, SLOT, i), 0);
	at.srq_limit = 17;
	assert_int_equal(xr_modify_srq(s.srq, &at, XR_SRQ_LIMIT), EINVAL);   /* above max_wr */
	at.max_wr = 32;
	assert_int_equal(xr_modify_srq(s.srq, &at, XR_SRQ_MAX_WR), EINVAL);  /* no resize */
	at.srq_limit = 2;
	assert_int_equal(xr_modify_srq(s.srq, &at, XR_SRQ_LIMIT), 0);
	assert_int_equal(xr_query_srq(s.srq, &at), 0);
	assert_int_equal(at.srq_limit, 2);
	for (unsigned k = 0; k < 4; k++) {
		assert_int_equal(send_msg(s.a[0], &s.p.a, 0, 32, k), 0);
		assert_true(recv_one(&s, &wc, 1000));
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.wr_id, k);   /* post order */
		if (k == 2) {
			/* the 3rd left 1 posted: below 2 */
			assert_true(limit_event(&s, 500, &ev));
			assert_int_equal(ev.type, XR_EVENT_SRQ_LIMIT_REACHED);
			assert_int_equal(ev.srq_num, xr_srq_num(s.srq));
		} else {
			assert_false(limit_event(&s, 20, &ev));
		}
	}
	assert_int_equal(xr_query_srq(s.srq, &at), 0);
	assert_int_equal(at.srq_limit, 0);
	assert_int_equal(d_counter(&s.p.b, XR_CNT_SRQ_LIMIT_REACHED), 1);
	close_srq(&s);
}

/* F2, F3: empty -> RNR NAK (the sender retries); WQEs go in post order to
 * whichever QP needs one first, the CQE names that QP. */
static void test_rnr_and_sharing(void **state)
{
	struct srq_pair s;
	struct xr_wc wc;

	(void)state;
	open_srq(&s, 2, 16);
	assert_int_equal(send_msg(s.a[0], &s.p.a, 0, 100, 1), 0);
	assert_false(recv_one(&s, &wc, 50));
	assert_true(d_counter(&s.p.b, XR_CNT_TX_RNR_NAK) >= 1);
	assert_int_equal(d_post_srq(s.srq, &s.p.b, 0, SLOT, 11), 0);
	assert_true(recv_one(&s, &wc, 2000));   /* the RNR retry finds it */
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.qp_num, xr_qp_num(s.b[0]));
	assert_int_equal(wc.byte_len, 100);

	assert_int_equal(d_post_srq(s.srq, &s.p.b, SLOT, SLOT, 21), 0);
	assert_int_equal(d_post_srq(s.srq, &s.p.b, 2 * SLOT, SLOT, 22), 0);
	assert_int_equal(send_msg(s.a[1], &s.p.a, 0, 10, 2), 0);
	assert_true(recv_one(&s, &wc, 1000));
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(wc.qp_num, xr_qp_num(s.b[1]));
	assert_int_equal(send_msg(s.a[0], &s.p.a, 0, 10, 3), 0);
	assert_true(recv_one(&s, &wc, 1000));
	assert_int_equal(wc.wr_id, 22);
	assert_int_equal(wc.qp_num, xr_qp_num(s.b[0]));
	close_srq(&s);
}

/* F3, F4: post_recv on an SRQ's QP is refused; destroy is refused while
 * QPs use it; a QP in ERR says LAST_WQE_REACHED and the SRQ stays. */
static void test_refusals_and_error(void **state)
{
	struct srq_pair s;
	struct xr_qp_attr a;
	struct xr_async_event ev;
	struct xr_wc wc;

	(void)state;
	open_srq(&s, 2, 16);
	assert_int_equal(d_post_recv(s.b[0], &s.p.b, 0, SLOT, 1), EINVAL);
	assert_int_equal(xr_destroy_srq(s.srq), EBUSY);
	{
		/* The engine refuses what the driver would never ring: a QP's
		 * own RQ doorbell, an SRQ that does not exist, more WQEs than
		 * the ring holds. */
		struct xr_regio *io = xr_context_regs(s.p.b.ctx);
		uint64_t before = d_counter(&s.p.b, XR_CNT_REG_SLVERR);
		assert_int_equal(xr_regio_write(io, XR_REG_DB_RQ + 8 * xr_qp_num(s.b[0]), 1), XR_AXI_SLVERR);
		assert_int_equal(xr_regio_write(io, XR_REG_SRQ_DB, (XR_MAX_SRQ - 1) << 16 | 1), XR_AXI_SLVERR);
		assert_int_equal(xr_regio_write(io, XR_REG_SRQ_DB, xr_srq_num(s.srq) << 16 | 17), XR_AXI_SLVERR);
		assert_int_equal(d_counter(&s.p.b, XR_CNT_REG_SLVERR), before + 3);
	}
	assert_int_equal(d_post_srq(s.srq, &s.p.b, 0, SLOT, 31), 0);
	assert_int_equal(d_post_srq(s.srq, &s.p.b, SLOT, SLOT, 32), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_ERR;
	assert_int_equal(xr_modify_qp(s.b[0], &a, XR_QP_STATE), 0);
	assert_true(xr_get_async_event(s.p.b.ctx, &ev, 1000) == 0);
	assert_int_equal(ev.type, XR_EVENT_QP_LAST_WQE_REACHED);
	assert_int_equal(ev.qp_num, xr_qp_num(s.b[0]));
	assert_int_equal(ev.srq_num, xr_srq_num(s.srq));
	/* not flushed: no CQE, and the other QP still takes the first WQE */
	assert_false(recv_one(&s, &wc, 50));
	assert_int_equal(send_msg(s.a[1], &s.p.a, 0, 16, 4), 0);
	assert_true(recv_one(&s, &wc, 1000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.qp_num, xr_qp_num(s.b[1]));
	close_srq(&s);
}

/* A QP on an SRQ takes its receive WQEs from the SRQ: its own receive
 * caps are ignored (ibv_create_qp(3); rxe), not refused, and read back as
 * 0; and it gets no receive ring of their size (it was up to 32 MiB). */
static void test_receive_caps_ignored_on_an_srq(void **state)
{
	struct srq_pair s;
	struct xr_qp_init_attr ia;
	struct xr_qp *qp;

	(void)state;
	open_srq(&s, 1, 16);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = s.p.b.cq;
	ia.qp_type = XR_QPT_RC;
	ia.srq = s.srq;
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_wr = 1u << 20;     /* above what a receive queue may hold */
	ia.cap.max_recv_sge = 200;         /* above XR_RWQE_MAX_SGE */
	qp = xr_create_qp(s.p.b.pd, &ia);
	assert_non_null(qp);
	assert_int_equal(ia.cap.max_recv_wr, 0);
	assert_int_equal(ia.cap.max_recv_sge, 0);
	assert_true(qp->rq_log <= 1);
	assert_int_equal(qp->rq_blocks_log, 0);
	assert_int_equal(xr_destroy_qp(qp), 0);
	/* Without an SRQ the same caps are refused. */
	ia.srq = NULL;
	ia.cap.max_recv_wr = 1u << 20;
	ia.cap.max_recv_sge = 200;
	assert_null(xr_create_qp(s.p.b.pd, &ia));
	assert_int_equal(errno, EINVAL);
	close_srq(&s);
}

/* An SRQ doorbell the device refuses: its WRs were never the device's,
 * so the post fails and takes none (it reported success, and the
 * driver's index ran ahead of the engine's). */
static void test_a_refused_srq_doorbell_fails_the_post(void **state)
{
	struct srq_pair s;
	struct xr_wc wc;

	(void)state;
	open_srq(&s, 1, 16);
	int rc;

	refuse(&s.p.b, XR_REG_SRQ_DB, ~0u, XR_AXI_SLVERR);
	rc = d_post_srq(s.srq, &s.p.b, 0, SLOT, 40);
	refuse_no_more();
	assert_int_equal(rc, EIO);
	assert_int_equal(RF.refused, 1);
	assert_int_equal(d_post_srq(s.srq, &s.p.b, SLOT, SLOT, 41), 0);
	assert_int_equal(send_msg(s.a[0], &s.p.a, 0, 16, 5), 0);
	assert_true(recv_one(&s, &wc, 1000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 41);
	assert_false(recv_one(&s, &wc, 50));
	close_srq(&s);
}

/* A UD QP on an SRQ: the GRH and payload land in the SRQ's buffer, and a
 * buffer too small stays in the SRQ for the next datagram. */
static void test_ud_on_srq(void **state)
{
	struct h_opts o = d_opts(false);
	struct xr_srq_init_attr sa = { { 8, 1, 0 } };
	struct pair p;
	struct xr_srq *srq;
	struct xr_qp *dst, *src;
	struct xr_ah *ah;
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	srq = xr_create_srq(p.b.pd, &sa);
	assert_non_null(srq);
	dst = d_ud_qp(&p.b, 5, srq);
	src = d_ud_qp(&p.a, 5, NULL);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(dst);
	assert_non_null(src);
	assert_non_null(ah);
	assert_int_equal(d_post_srq(srq, &p.b, 0, 60, 1), 0);
	for (int i = 0; i < 40; i++)
		h_data(&p.a)[i] = (uint8_t)(i + 1);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), 5, 0, 40, 0, 1), 0);
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 100), 0);
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_UD_OVERSIZE), 1);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), 5, 0, 20, 0, 2), 0);
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 60);
	assert_int_equal(wc.src_qp, xr_qp_num(src));
	assert_memory_equal(h_data(&p.b) + 40, h_data(&p.a), 20);
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	assert_int_equal(xr_destroy_srq(srq), 0);
	h_close(&p);
}

/* A UC SEND or WRITE of len bytes at off (with immediate when imm). */
static void uc_post(struct xr_qp *qp, struct end *e, enum xr_wr_opcode op, uint32_t len, uint32_t imm,
		    uint64_t raddr, uint32_t rkey)
{
	struct xr_sge sge = { (uintptr_t)h_data(e), len, e->mr->lkey };
	struct xr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(xr_post_send(qp, &wr, NULL), 0);
}

/* A connected UC pair: src on a (a's CQ), dst on b taking its receive
 * WQEs from srq, its completions on b_cq; first PSNs src_psn and dst_psn. */
static void uc_pair_on_srq(struct pair *p, const struct h_opts *o, struct xr_srq *srq, struct xr_cq *b_cq,
			   uint32_t src_psn, uint32_t dst_psn, struct xr_qp **src, struct xr_qp **dst)
{
	struct xr_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = XR_QPT_UC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 2;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.send_cq = ia.recv_cq = p->a.cq;
	*src = xr_create_qp(p->a.pd, &ia);
	ia.send_cq = ia.recv_cq = b_cq;
	ia.srq = srq;
	*dst = xr_create_qp(p->b.pd, &ia);
	assert_non_null(*src);
	assert_non_null(*dst);
	assert_int_equal(h_connect(*src, *dst, p->b.ctx, o, src_psn, dst_psn), 0);
	assert_int_equal(h_connect(*dst, *src, p->a.ctx, o, dst_psn, src_psn), 0);
}

/* A UC QP on a (src) connected to one on b (dst) that takes its receive
 * WQEs from srq (8 deep), with WQEs 1 to 4 posted, wqe_len bytes each,
 * back to back from the start of b's buffer. */
static void uc_on_srq_open(struct pair *p, const struct h_opts *o, uint32_t wqe_len, struct xr_srq **srq,
			   struct xr_qp **src, struct xr_qp **dst)
{
	struct xr_srq_init_attr sa = { { 8, 1, 0 } };

	assert_int_equal(h_open(p, o), 0);
	*srq = xr_create_srq(p->b.pd, &sa);
	assert_non_null(*srq);
	uc_pair_on_srq(p, o, *srq, p->b.cq, 100, 700, src, dst);
	for (uint64_t id = 1; id <= 4; id++)
		assert_int_equal(d_post_srq(*srq, &p->b, (id - 1) * wqe_len, wqe_len, id), 0);
}

/* E4/E6 with an SRQ: a UC message dropped for its length or its R_Key
 * completes the SRQ WQE it had taken, with REM_INV_REQ_ERR or
 * REM_ACCESS_ERR, and the QP stays in RTS; the next message takes the
 * next WQE. Before, the WQE stayed in the QP for the next message: it
 * completed under the wrong message, or, the QP reset or destroyed
 * without an error state, never (the program lost its buffer). */
static void test_uc_on_srq_errors_complete_the_wqe(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_srq *srq;
	struct xr_qp *dst, *src;
	struct xr_wc wc;
	uint64_t rbuf;

	(void)state;
	uc_on_srq_open(&p, &o, 64, &srq, &src, &dst);
	rbuf = (uintptr_t)h_data(&p.b) + 8192;

	uc_post(src, &p.a, XR_WR_SEND, 2048, 0, 0, 0);   /* longer than the 64-byte WQE */
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, XR_WC_REM_INV_REQ_ERR);
	uc_post(src, &p.a, XR_WR_RDMA_WRITE_WITH_IMM, 8, 7, rbuf, p.b.mr->rkey + 1);   /* no such R_Key */
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, XR_WC_REM_ACCESS_ERR);
	uc_post(src, &p.a, XR_WR_SEND, 8, 0, 0, 0);   /* the QP works on: the next WQE */
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8);
	assert_int_equal(d_quiet(&p, &p.b, 20), 0);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	assert_int_equal(xr_destroy_srq(srq), 0);
	h_close(&p);
}

/* Runs a's engine alone until `want` frames wait at b's end of the link,
 * and takes them: the test then decides which ones b gets. */
static int frames_from_a(struct pair *p, struct xr_frame **f, int want)
{
	struct xr_wc wc;
	uint64_t t0 = h_now_ms();
	int got = 0;

	while (got < want && h_now_ms() - t0 < 1000) {
		(void)xr_poll_cq(p->a.cq, 1, &wc);   /* UC: the send completes at once */
		int n = xr_link_recv(p->lb, f + got, (unsigned)(want - got));
		got += n > 0 ? n : 0;
	}
	return got;
}

/* A 3-packet UC SEND of which b gets the packets in keep (a bit each). */
static void uc_send_cut(struct pair *p, struct xr_qp *src, uint32_t len, unsigned keep)
{
	struct xr_frame *f[3], *kept[3];
	unsigned n = 0;

	uc_post(src, &p->a, XR_WR_SEND, len, 0, 0, 0);
	assert_int_equal(frames_from_a(p, f, 3), 3);
	for (unsigned i = 0; i < 3; i++) {
		if (keep & (1u << i))
			kept[n++] = f[i];
		else
			xr_link_frame_free(p->lb, f[i]);
	}
	assert_int_equal(xr_link_send(p->la, kept, n), (int)n);   /* on to b, as if never held */
}

/* E3/E4 with an SRQ: a UC SEND cut short, by a gap (its MIDDLE lost) or
 * by the next message's FIRST (its LAST lost), completes the SRQ WQE it
 * had taken with REM_INV_REQ_ERR; the QP stays in RTS and the next
 * message lands whole in the next WQE, none of the cut one's bytes in it. */
static void test_uc_on_srq_cut_messages_complete_the_wqe(void **state)
{
	enum { LEN = 2500, WQE = 4096 };   /* FIRST, MIDDLE, LAST at MTU 1024 */
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_srq *srq;
	struct xr_qp *dst, *src;
	struct xr_wc wc;
	uint64_t cut_before;

	(void)state;
	uc_on_srq_open(&p, &o, WQE, &srq, &src, &dst);
	for (uint32_t i = 0; i < LEN; i++)
		h_data(&p.a)[i] = (uint8_t)(i * 7 + 3);
	memset(h_data(&p.b), 0, 4 * WQE);
	cut_before = d_counter(&p.b, XR_CNT_DROP_UC_MSG);

	uc_send_cut(&p, src, LEN, 1u | 4u);   /* the MIDDLE lost: a gap */
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, XR_WC_REM_INV_REQ_ERR);
	assert_int_equal(d_quiet(&p, &p.b, 20), 0);
	uc_post(src, &p.a, XR_WR_SEND, 8, 0, 0, 0);
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8);
	assert_memory_equal(h_data(&p.b) + WQE, h_data(&p.a), 8);

	uc_send_cut(&p, src, LEN, 1u | 2u);   /* the LAST lost: cut by the next FIRST */
	uc_post(src, &p.a, XR_WR_SEND, LEN, 0, 0, 0);
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, XR_WC_REM_INV_REQ_ERR);
	assert_int_equal(d_collect(&p, &p.b, &wc, 1, 1000), 1);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, LEN);
	assert_memory_equal(h_data(&p.b) + 3 * WQE, h_data(&p.a), LEN);
	assert_true(d_counter(&p.b, XR_CNT_DROP_UC_MSG) >= cut_before + 2);
	assert_int_equal(d_quiet(&p, &p.b, 20), 0);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	assert_int_equal(xr_destroy_srq(srq), 0);
	h_close(&p);
}

/* A UC message on an SRQ cut by the next message's FIRST, when the cut
 * one's error completion overruns the receive CQ: the QP goes to ERR and
 * the new message takes no SRQ WQE (other QPs share them). The next WQE
 * stays in the SRQ, untouched, and the next QP on it gets it. */
static void test_uc_on_srq_overrun_takes_no_wqe(void **state)
{
	enum { LEN = 2500, WQE = 4096 };
	struct h_opts o = d_opts(false);
	struct xr_qp_attr at;
	struct xr_qp_init_attr init;
	struct xr_qp *dst, *src, *dst2, *src2;
	struct xr_srq *srq;
	struct xr_cq *cq2;
	struct xr_wc wc;
	struct pair p;
	uint64_t until;
	int got = 0;

	(void)state;
	o.cq_depth = 2;
	uc_on_srq_open(&p, &o, WQE, &srq, &src, &dst);
	cq2 = xr_create_cq(p.b.ctx, 16);
	assert_non_null(cq2);
	uc_pair_on_srq(&p, &o, srq, cq2, 300, 900, &src2, &dst2);
	memset(h_data(&p.b), 0, 4 * WQE);

	uc_post(src, &p.a, XR_WR_SEND, 8, 0, 0, 0);   /* WQEs 1 and 2: the CQ (2 CQEs) is full */
	uc_post(src, &p.a, XR_WR_SEND, 8, 0, 0, 0);
	for (int i = 0; i < 20; i++)
		h_progress(&p);
	uc_send_cut(&p, src, LEN, 1u | 2u);           /* WQE 3 taken, its LAST lost */
	uc_post(src, &p.a, XR_WR_SEND, LEN, 0, 0, 0); /* its FIRST cuts WQE 3: the CQE overruns */
	for (int i = 0; i < 20; i++)
		h_progress(&p);
	assert_int_equal(xr_query_qp(dst, &at, XR_QP_STATE, &init), 0);
	assert_int_equal(at.qp_state, XR_QPS_ERR);
	assert_true(d_counter(&p.b, XR_CNT_CQ_OVERFLOW) >= 1);
	for (uint32_t i = 0; i < WQE; i++)
		assert_int_equal(h_data(&p.b)[3 * WQE + i], 0);   /* WQE 4: no byte of the new message */

	uc_post(src2, &p.a, XR_WR_SEND, 8, 0, 0, 0);  /* the SRQ's last WQE is still there */
	for (until = h_now_ms() + 1000; !got && h_now_ms() < until;) {
		h_progress(&p);
		got = xr_poll_cq(cq2, 1, &wc);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8);
	assert_memory_equal(h_data(&p.b) + 3 * WQE, h_data(&p.a), 8);
	xr_destroy_qp(src2);
	xr_destroy_qp(dst2);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	assert_int_equal(xr_destroy_srq(srq), 0);
	assert_int_equal(xr_destroy_cq(cq2), 0);
	h_close(&p);
}

/* 16 RC QPs on one SRQ under load: every message arrives once, whole, in
 * its QP's order, on the QP its sender is connected to; the SRQ runs dry
 * (RNR retries recover) and the limit event fires once. */
static void test_sixteen_qps_under_load(void **state)
{
	enum { NQP = 16, EACH = 24, DEPTH = 32 };
	struct srq_pair s;
	struct xr_srq_attr at = { .srq_limit = 8 };
	struct xr_async_event ev;
	unsigned next[NQP] = { 0 }, got = 0, events = 0;
	bool refill = false;
	uint32_t held[DEPTH], nheld = 0;
	uint64_t until;

	(void)state;
	open_srq(&s, NQP, DEPTH);
	for (unsigned i = 0; i < DEPTH; i++)
		assert_int_equal(d_post_srq(s.srq, &s.p.b, (size_t)i * SLOT, SLOT, i), 0);
	assert_int_equal(xr_modify_srq(s.srq, &at, XR_SRQ_LIMIT), 0);
	/* message k of QP q: 1 + (q*7 + k*13) % 3000 bytes, bytes seeded by both */
	for (unsigned k = 0; k < EACH; k++)
		for (unsigned q = 0; q < NQP; q++) {
			size_t off = ((size_t)q * EACH + k) * SLOT;
			uint32_t len = 1 + (q * 7 + k * 13) % 3000;
			uint8_t *d = h_data(&s.p.a) + off;
			for (uint32_t i = 0; i < len; i++)
				d[i] = (uint8_t)(q * 17 + k * 5 + i);
			assert_int_equal(send_msg(s.a[q], &s.p.a, off, len, q), 0);
		}
	until = h_now_ms() + 30000;
	while (got < NQP * EACH && h_now_ms() < until) {
		struct xr_wc wc;
		if (!events && limit_event(&s, 0, &ev)) {
			assert_int_equal(ev.type, XR_EVENT_SRQ_LIMIT_REACHED);
			assert_int_equal(ev.srq_num, xr_srq_num(s.srq));
			events++;
		}
		if (events && !refill && got >= DEPTH) {
			/* Dry: let the senders meet RNR NAKs a while, then refill. */
			for (uint64_t t = h_now_ms() + 20; h_now_ms() < t;)
				h_progress(&s.p);
			refill = true;
			for (uint32_t i = 0; i < nheld; i++)
				assert_int_equal(d_post_srq(s.srq, &s.p.b, (size_t)held[i] * SLOT, SLOT, held[i]), 0);
			nheld = 0;
		}
		if (!recv_one(&s, &wc, 5))
			continue;
		{
			unsigned q, k;
			uint32_t len;
			const uint8_t *d = h_data(&s.p.b) + (size_t)wc.wr_id * SLOT;
			assert_int_equal(wc.status, XR_WC_SUCCESS);
			for (q = 0; q < NQP && xr_qp_num(s.b[q]) != wc.qp_num; q++)
				;
			assert_true(q < NQP);
			k = next[q]++;
			len = 1 + (q * 7 + k * 13) % 3000;
			assert_int_equal(wc.byte_len, len);
			for (uint32_t i = 0; i < len; i++)
				if (d[i] != (uint8_t)(q * 17 + k * 5 + i))
					fail_msg("QP %u message %u corrupted at %u", q, k, i);
			got++;
		}
		/* Until the SRQ ran dry, buffers are held back. */
		if (refill)
			assert_int_equal(d_post_srq(s.srq, &s.p.b, (size_t)wc.wr_id * SLOT, SLOT, wc.wr_id), 0);
		else
			held[nheld++] = (uint32_t)wc.wr_id;
	}
	assert_int_equal(got, NQP * EACH);
	for (unsigned q = 0; q < NQP; q++)
		assert_int_equal(next[q], EACH);
	assert_int_equal(events, 1);
	assert_false(limit_event(&s, 20, &ev));   /* once: disarmed after */
	assert_true(d_counter(&s.p.b, XR_CNT_TX_RNR_NAK) > 0);   /* it ran dry */
	assert_true(h_guards_ok(&s.p.b));
	close_srq(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_event),
		cmocka_unit_test(test_rnr_and_sharing),
		cmocka_unit_test(test_refusals_and_error),
		cmocka_unit_test(test_a_refused_srq_doorbell_fails_the_post),
		cmocka_unit_test(test_receive_caps_ignored_on_an_srq),
		cmocka_unit_test(test_ud_on_srq),
		cmocka_unit_test(test_uc_on_srq_errors_complete_the_wqe),
		cmocka_unit_test(test_uc_on_srq_cut_messages_complete_the_wqe),
		cmocka_unit_test(test_uc_on_srq_overrun_takes_no_wqe),
		cmocka_unit_test(test_sixteen_qps_under_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
