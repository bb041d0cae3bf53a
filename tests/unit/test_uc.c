/* SPDX-License-Identifier: MIT */
/* UC QPs on the mem link (transport-rules E1-E7): SEND and WRITE with
 * immediate completing without ACKs, READ/atomic refused at post, and a
 * lossy, corrupting link under which every message is delivered whole or
 * not at all (checked by content), never merged with another. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "dgram_harness.h"

#define MTU_BYTES 1024
#define SLOT (8 * 1024)
#define NSLOT 64

/* Message seq of len bytes: every byte names the message and its place. */
static uint8_t pattern(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8) + 3);
}

static void fill(struct end *e, size_t off, uint32_t len, uint32_t seq)
{
	uint8_t *d = h_data(e) + off;

	memcpy(d, &seq, 4);   /* the message's number leads it */
	for (uint32_t i = 4; i < len; i++)
		d[i] = pattern(seq, i);
}

static uint32_t len_of(uint32_t seq)
{
	/* 1 to 5 packets, often exactly on an MTU boundary */
	static const uint32_t sizes[] = { 8, 1024, 1500, 2048, 3000, 4096, 5000, 700 };
	return sizes[seq % 8] + (seq % 3);
}

static int post_op(struct xr_qp *qp, struct end *e, enum xr_wr_opcode op, size_t off, uint32_t len,
		   uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t id)
{
	struct xr_sge sge = { (uintptr_t)(h_data(e) + off), len, e->mr->lkey };
	struct xr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.imm_data = imm;
	wr.send_flags = XR_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	return xr_post_send(qp, &wr, NULL);
}

struct uc_pair {
	struct pair p;
	struct xr_qp *a, *b;
};

static void open_uc(struct uc_pair *u, const struct xr_fault_cfg *fault)
{
	struct h_opts o = d_opts(false);

	o.fault = fault;
	o.buf_len = 2u << 20;
	assert_int_equal(h_open(&u->p, &o), 0);
	u->a = d_uc_qp(&u->p.a, NULL, 256);
	u->b = d_uc_qp(&u->p.b, NULL, 256);
	assert_non_null(u->a);
	assert_non_null(u->b);
	assert_int_equal(d_uc_connect(u->a, u->b, u->p.b.ctx, XR_MTU_1024, 300, 900), 0);
	assert_int_equal(d_uc_connect(u->b, u->a, u->p.a.ctx, XR_MTU_1024, 900, 300), 0);
}

static void close_uc(struct uc_pair *u)
{
	xr_destroy_qp(u->a);
	xr_destroy_qp(u->b);
	h_close(&u->p);
}

static void test_send_write_no_acks(void **state)
{
	struct uc_pair u;
	struct xr_wc wc[8];
	uint64_t dst;
	int n;

	(void)state;
	open_uc(&u, NULL);
	dst = (uintptr_t)(h_data(&u.p.b) + 1024 * 1024);
	assert_int_equal(d_post_recv(u.b, &u.p.b, 0, SLOT, 77), 0);
	assert_int_equal(d_post_recv(u.b, &u.p.b, SLOT, SLOT, 78), 0);
	fill(&u.p.a, 0, 3 * MTU_BYTES + 5, 1);
	fill(&u.p.a, SLOT, 2 * MTU_BYTES, 2);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_SEND, 0, 3 * MTU_BYTES + 5, 0, 0, 0, 1), 0);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_RDMA_WRITE_WITH_IMM, SLOT, 2 * MTU_BYTES, dst,
				 u.p.b.mr->rkey, 0xA1B2C3D4u, 2), 0);
	/* E1: the sender completes with nothing coming back. */
	n = d_collect(&u.p, &u.p.a, wc, 8, 1000);
	assert_int_equal(n, 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].opcode, XR_WC_SEND);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].opcode, XR_WC_RDMA_WRITE);
	assert_int_equal(wc[1].status, XR_WC_SUCCESS);
	n = d_collect(&u.p, &u.p.b, wc, 8, 500);
	assert_int_equal(n, 2);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(wc[0].opcode, XR_WC_RECV);
	assert_int_equal(wc[0].byte_len, 3 * MTU_BYTES + 5);
	assert_int_equal(wc[0].wc_flags, 0);   /* no GRH on UC (ibv_poll_cq(3); rxe sets it, A20) */
	assert_memory_equal(h_data(&u.p.b), h_data(&u.p.a), 3 * MTU_BYTES + 5);
	assert_int_equal(wc[1].wr_id, 78);
	assert_int_equal(wc[1].opcode, XR_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc[1].byte_len, 2 * MTU_BYTES);
	assert_int_equal(wc[1].imm_data, 0xA1B2C3D4u);
	assert_memory_equal(h_data(&u.p.b) + 1024 * 1024, h_data(&u.p.a) + SLOT, 2 * MTU_BYTES);
	/* E2: the responder sent nothing; the requester asked for nothing. */
	assert_int_equal(d_counter(&u.p.b, XR_CNT_TX_PKTS), 0);
	assert_int_equal(d_counter(&u.p.b, XR_CNT_TX_ACK), 0);
	/* E7: READ and atomics are refused at post. */
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_RDMA_READ, 0, 8, dst, u.p.b.mr->rkey, 0, 3), EINVAL);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_ATOMIC_FETCH_AND_ADD, 0, 8, dst, u.p.b.mr->rkey, 0, 4), EINVAL);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_ATOMIC_CMP_AND_SWP, 0, 8, dst, u.p.b.mr->rkey, 0, 5), EINVAL);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_SEND_WITH_INV, 0, 8, 0, 0, 0, 6), EINVAL);
	assert_int_equal(d_collect(&u.p, &u.p.a, wc, 8, 50), 0);
	assert_true(h_guards_ok(&u.p.b));
	close_uc(&u);
}

/* E6: a WRITE with a bad R_Key is dropped silently; the QP stays in RTS
 * and the next message gets through. */
static void test_bad_rkey_silent(void **state)
{
	struct uc_pair u;
	struct xr_wc wc[4];
	struct xr_qp_attr a;
	uint64_t dst;

	(void)state;
	open_uc(&u, NULL);
	dst = (uintptr_t)(h_data(&u.p.b) + 4096);
	assert_int_equal(d_post_recv(u.b, &u.p.b, 0, SLOT, 1), 0);
	fill(&u.p.a, 0, 64, 9);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_RDMA_WRITE_WITH_IMM, 0, 64, dst, u.p.b.mr->rkey + 1, 5, 1), 0);
	assert_int_equal(d_collect(&u.p, &u.p.a, wc, 4, 200), 1);   /* sent, so done */
	assert_int_equal(d_collect(&u.p, &u.p.b, wc, 4, 100), 0);
	assert_int_equal(d_counter(&u.p.b, XR_CNT_DROP_UC_INVALID), 1);
	assert_int_equal(d_counter(&u.p.b, XR_CNT_RKEY_VIOLATION), 1);
	assert_int_equal(d_counter(&u.p.b, XR_CNT_TX_PKTS), 0);
	assert_int_equal(xr_query_qp(u.b, &a, 0, NULL), 0);
	assert_int_equal(a.qp_state, XR_QPS_RTS);
	assert_int_equal(h_data(&u.p.b)[4096], GUARD_BYTE);   /* nothing written */
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_RDMA_WRITE_WITH_IMM, 0, 64, dst, u.p.b.mr->rkey, 6, 2), 0);
	assert_int_equal(d_collect(&u.p, &u.p.b, wc, 4, 500), 1);
	assert_int_equal(wc[0].imm_data, 6);
	assert_memory_equal(h_data(&u.p.b) + 4096, h_data(&u.p.a), 64);
	close_uc(&u);
}

/* G4 (IBTA 10.3.1; rxe uses ERR): a WRITE that fails locally (a bad
 * L_Key) moves the UC QP to SQE: the WQE completes LOC_PROT_ERR, nothing
 * leaves, its receive side still takes b's message, and SQE -> RTS makes
 * it send again. */
static void test_send_error_to_sqe(void **state)
{
	struct uc_pair u;
	struct xr_wc wc[4];
	struct xr_qp_attr a;
	uint32_t lkey;
	uint64_t dst;

	(void)state;
	open_uc(&u, NULL);
	dst = (uintptr_t)(h_data(&u.p.b) + 4096);
	lkey = u.p.a.mr->lkey;
	u.p.a.mr->lkey ^= 0x5A;   /* the WR's SGE carries a key a does not have */
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_RDMA_WRITE, 0, 64, dst, u.p.b.mr->rkey, 0, 1), 0);
	u.p.a.mr->lkey = lkey;
	assert_int_equal(d_collect(&u.p, &u.p.a, wc, 4, 500), 1);
	assert_int_equal(wc[0].status, XR_WC_LOC_PROT_ERR);
	assert_int_equal(d_counter(&u.p.a, XR_CNT_TX_PKTS), 0);
	assert_int_equal(xr_query_qp(u.a, &a, 0, NULL), 0);
	assert_int_equal(a.qp_state, XR_QPS_SQE);
	/* b's message still lands in a */
	assert_int_equal(d_post_recv(u.a, &u.p.a, 8192, SLOT, 7), 0);
	fill(&u.p.b, 0, 48, 5);
	assert_int_equal(post_op(u.b, &u.p.b, XR_WR_SEND, 0, 48, 0, 0, 0, 8), 0);
	assert_int_equal(d_collect(&u.p, &u.p.a, wc, 4, 500), 1);
	assert_int_equal(wc[0].status, XR_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 7);
	assert_memory_equal(h_data(&u.p.a) + 8192, h_data(&u.p.b), 48);
	/* back to RTS: the WRITE goes through */
	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_RTS;
	assert_int_equal(xr_modify_qp(u.a, &a, XR_QP_STATE), 0);
	fill(&u.p.a, 0, 64, 9);
	assert_int_equal(post_op(u.a, &u.p.a, XR_WR_RDMA_WRITE, 0, 64, dst, u.p.b.mr->rkey, 0, 2), 0);
	assert_int_equal(d_collect(&u.p, &u.p.a, wc, 4, 500), 1);
	assert_int_equal(wc[0].status, XR_WC_SUCCESS);
	d_quiet(&u.p, &u.p.b, 50);
	assert_memory_equal(h_data(&u.p.b) + 4096, h_data(&u.p.a), 64);
	close_uc(&u);
}

/* Under loss and corruption: what arrives is exactly some message, whole,
 * in order, each at most once; what is lost is lost whole. */
static void test_loss_whole_messages(void **state)
{
	enum { MSGS = 400 };
	struct xr_fault_cfg fault = { .seed = 14, .drop = 0.04, .corrupt = 0.01 };
	struct uc_pair u;
	struct xr_wc wc[32];
	uint32_t posted = 0, sent = 0, sent_done = 0, got = 0, last_seq = 0;
	bool any = false;
	uint64_t until;

	(void)state;
	open_uc(&u, &fault);
	for (unsigned i = 0; i < NSLOT; i++, posted++)
		assert_int_equal(d_post_recv(u.b, &u.p.b, (size_t)i * SLOT, SLOT, i), 0);
	until = h_now_ms() + 20000;
	while (sent_done < MSGS && h_now_ms() < until) {
		int n;
		/* keep a few messages in flight */
		while (sent < MSGS && sent - sent_done < 16) {
			size_t off = (size_t)(sent % 32) * SLOT;
			fill(&u.p.a, off, len_of(sent), sent);
			assert_int_equal(post_op(u.a, &u.p.a, XR_WR_SEND, off, len_of(sent), 0, 0, 0, sent), 0);
			sent++;
		}
		h_progress(&u.p);
		n = xr_poll_cq(u.p.a.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			sent_done++;
		}
		n = xr_poll_cq(u.p.b.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			const uint8_t *d = h_data(&u.p.b) + (size_t)wc[i].wr_id * SLOT;
			uint32_t seq, len;
			memcpy(&seq, d, 4);
			len = len_of(seq);
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			assert_true(seq < MSGS);
			assert_true(!any || seq > last_seq);   /* in order, never twice */
			assert_int_equal(wc[i].byte_len, len);   /* never merged or cut */
			for (uint32_t k = 4; k < len; k++)
				if (d[k] != pattern(seq, k))
					fail_msg("message %u corrupted at byte %u", seq, k);
			last_seq = seq;
			any = true;
			got++;
			assert_int_equal(d_post_recv(u.b, &u.p.b, (size_t)wc[i].wr_id * SLOT, SLOT, wc[i].wr_id), 0);
		}
	}
	/* drain what is still on its way */
	for (int n; (n = d_collect(&u.p, &u.p.b, wc, 32, 200)) > 0;) {
		for (int i = 0; i < n; i++) {
			const uint8_t *d = h_data(&u.p.b) + (size_t)wc[i].wr_id * SLOT;
			uint32_t seq, len;
			memcpy(&seq, d, 4);
			len = len_of(seq);
			assert_true(seq > last_seq && seq < MSGS);
			assert_int_equal(wc[i].byte_len, len);
			for (uint32_t k = 4; k < len; k++)
				if (d[k] != pattern(seq, k))
					fail_msg("message %u corrupted at byte %u", seq, k);
			last_seq = seq;
			got++;
		}
	}
	assert_int_equal(sent_done, MSGS);
	/* some got through, some were lost, and the loss was seen as such */
	assert_true(got > MSGS / 2);
	assert_true(got < MSGS);
	assert_true(d_counter(&u.p.b, XR_CNT_DROP_UC_MSG) > 0);
	assert_int_equal(d_counter(&u.p.b, XR_CNT_TX_PKTS), 0);
	assert_true(h_guards_ok(&u.p.b));
	close_uc(&u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_write_no_acks),
		cmocka_unit_test(test_bad_rkey_silent),
		cmocka_unit_test(test_send_error_to_sqe),
		cmocka_unit_test(test_loss_whole_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
