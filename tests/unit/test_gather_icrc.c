/* SPDX-License-Identifier: MIT */
/*
 * A gather frame's ICRC (gather.c): computed over the payload where it
 * lies, and on the receiver checked by the copy that places an RC WRITE's
 * payload (where the CPU folds the CRC into the copy). A packet whose
 * bytes changed after it was sent is dropped as a bad ICRC and nothing
 * else, wherever it is found: no answer, no state, no memory, no other
 * count; its resend arrives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "failing_alloc.h"
#include "gather_harness.h"
#include "xroce/regmap.h"

/* Payloads that end in a pad (and one too short to be checked by its
 * copy): the ICRC over headers, payload and pad holds at the copy, and
 * nothing is sent twice. */
static void test_odd_lengths_arrive_unrepeated(void **state)
{
	static const uint32_t lens[] = { 1027, 4096 + 1025, 2 * 4096 + 2046, 4096 + 100, 1021 };
	struct h_opts o = gather_opts();
	struct pair p;
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		fill(h_data(&p.a), lens[i], (uint8_t)(20 + i));
		post_write(&p, h_data(&p.a), p.a.mr->lkey, lens[i], i);
		assert_int_equal(h_wait(&p, &p.a, &wc, 2000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_memory_equal(h_data(&p.b), h_data(&p.a), lens[i]);
	}
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 0);
	assert_int_equal(h_counter(&p.a, XR_CNT_RETRANSMITS), 0);
	assert_true(h_guards_ok(&p.b));
	h_close(&p);
}

/* The ICRC was computed over the payload as it was sent: bytes changed
 * under a frame before its receiver read them fail it (each packet dropped
 * unanswered: none counts as out of sequence), and the packets come again
 * after the ACK timeout as copies of what is there now. */
static void test_icrc_covers_the_payload_and_retransmissions_are_copies(void **state)
{
	struct pair p;
	uint8_t want[MSG];
	struct xr_wc wc;

	(void)state;
	sent_unread(&p, want, 3);
	fill(h_data(&p.a), MSG, 99);   /* not allowed of a host: it tells the ICRC's reach */
	receive(&p, MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_OUT_OF_SEQ), 0);
	assert_int_equal(h_wait(&p, &p.a, &wc, 3000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
	assert_true(h_counter(&p.a, XR_CNT_RETRANSMITS) >= 1);
	assert_int_equal(p.la->stats.tx_gather, MSG / 4096);   /* the resend copied */
	assert_memory_equal(h_data(&p.b), h_data(&p.a), MSG);
	h_close(&p);
}

/* A WRITE's payload is checked by the copy that places it (gather.c): a
 * packet whose bytes changed after they were sent is found bad there and
 * does nothing (b's PSN stays, no count as received); the next, good but
 * now out of sequence, draws a sequence NAK, and a's retransmission
 * places the bytes as they are now. */
static void test_a_write_packet_found_bad_by_its_copy_does_nothing(void **state)
{
	struct pair p;
	uint8_t want[MSG];
	struct xr_wc wc;

	(void)state;
	sent_unread(&p, want, 3);
	h_data(&p.a)[2 * 4096 + 100] ^= 0x40;   /* the third packet's bytes */
	receive(&p, MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_RX_PKTS), MSG / 4096 - 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_OUT_OF_SEQ), 1);
	assert_memory_equal(h_data(&p.b), want, 2 * 4096);
	/* Where the copy folds the CRC, the check was the copy's: the bytes
	 * are in place (b's memory under a WRITE not yet complete holds
	 * anything); elsewhere the parse's, and they are not. */
	if (xr_crc32_copy_folds())
		assert_int_equal(h_data(&p.b)[2 * 4096 + 100], h_data(&p.a)[2 * 4096 + 100]);
	else
		assert_int_not_equal(h_data(&p.b)[2 * 4096 + 100], h_data(&p.a)[2 * 4096 + 100]);
	assert_int_equal(h_wait(&p, &p.a, &wc, 3000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_true(h_counter(&p.a, XR_CNT_RETRANSMITS) >= 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 1);
	assert_memory_equal(h_data(&p.b), h_data(&p.a), MSG);
	h_close(&p);
}

/* Packets whose bytes changed after they were sent, and which b would
 * refuse on their headers too (its QP in ERR; its QP without remote
 * WRITE): each is dropped as a bad ICRC and nothing else, before any
 * other check counts or answers it. */
static void bad_and_refused(struct xr_qp_attr *b_attr, int mask)
{
	struct pair p;
	uint8_t want[MSG];

	sent_unread(&p, want, 3);
	fill(h_data(&p.a), MSG, 99);
	assert_int_equal(xr_modify_qp(p.b.qp[0], b_attr, mask), 0);
	receive(&p, MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_DROP_BAD_STATE), 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_PERM_VIOLATION), 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_OUT_OF_SEQ), 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_RX_PKTS), 0);
	h_close(&p);
}

static void test_bad_packets_count_once(void **state)
{
	struct xr_qp_attr err = { .qp_state = XR_QPS_ERR };
	struct xr_qp_attr no_write = { .qp_access_flags = XR_ACCESS_REMOTE_READ };
	struct h_opts o = gather_opts();
	struct pair p;

	(void)state;
	bad_and_refused(&err, XR_QP_STATE);
	bad_and_refused(&no_write, XR_QP_ACCESS_FLAGS);
	/* Refused by the responder's own checks (past b's region): checked
	 * before the NAK those would send. */
	{
		struct xr_sge s;
		struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		struct xr_send_wr *bad;
		assert_int_equal(h_open(&p, &o), 0);
		s = (struct xr_sge){ (uintptr_t)h_data(&p.a), MSG, p.a.mr->lkey };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + o.buf_len - 4096;
		w.wr.rdma.rkey = p.b.mr->rkey;
		assert_int_equal(xr_post_send(p.a.qp[0], &w, &bad), 0);
		send_only(&p);
		fill(h_data(&p.a), MSG, 99);
		receive(&p, MSG / 4096);
		assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
		assert_int_equal(h_counter(&p.b, XR_CNT_BOUNDS_VIOLATION), 0);
		h_close(&p);
	}
	/* Two one-packet WRITEs, both changed: the second, behind the
	 * first's PSN, is dropped unanswered too (no sequence NAK). */
	assert_int_equal(h_open(&p, &o), 0);
	post_write(&p, h_data(&p.a), p.a.mr->lkey, 4096, 1);
	post_write(&p, h_data(&p.a) + 4096, p.a.mr->lkey, 4096, 2);
	send_only(&p);
	fill(h_data(&p.a), 2 * 4096, 77);
	receive(&p, 2);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 2);
	assert_int_equal(h_counter(&p.b, XR_CNT_OUT_OF_SEQ), 0);
	h_close(&p);
}

/* A pair, a 256 KiB READ of b's and a WRITE to b behind it sent, the
 * WRITE's bytes changed since: b cannot build the READ's 64 responses at
 * once (A33: the link takes 16), so the WRITE would wait as a copy. */
static void read_then_changed_write(struct pair *p)
{
	struct h_opts o = gather_opts();
	struct xr_sge s;
	struct xr_send_wr r = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_send_wr *bad;

	o.buf_len = 512 * 1024;
	o.link_depth = 16;
	assert_int_equal(h_open(p, &o), 0);
	s = (struct xr_sge){ (uintptr_t)h_data(&p->a) + 256 * 1024, 256 * 1024, p->a.mr->lkey };
	r.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + 256 * 1024;
	r.wr.rdma.rkey = p->b.mr->rkey;
	assert_int_equal(xr_post_send(p->a.qp[0], &r, &bad), 0);
	fill(h_data(&p->a), MSG, 3);
	post_write(p, h_data(&p->a), p->a.mr->lkey, MSG, 2);
	send_only(p);
	fill(h_data(&p->a), MSG, 99);
}

/* Behind a READ whose responses b cannot build at once (A33), a WRITE
 * waits as a copy (xr_resp_hold): its changed packets are checked over
 * that copy and dropped, never run later. */
static void test_a_bad_write_held_behind_a_read_is_dropped(void **state)
{
	struct pair p;
	struct xr_wc wc;

	(void)state;
	read_then_changed_write(&p);
	receive(&p, 1 + MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_OUT_OF_SEQ), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(h_wait(&p, &p.a, &wc, 3000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
	/* Had the bad copy run, the WRITE's resent first packet would be a
	 * duplicate. */
	assert_int_equal(h_counter(&p.b, XR_CNT_DUP_REQUEST), 0);
	assert_memory_equal(h_data(&p.b), h_data(&p.a), MSG);
	h_close(&p);
}

/* Packets that arrive marked CE (ECN): a changed one is dropped as a bad
 * ICRC, not noted as marked (no CNP owed for it); its good resend is. */
static void test_a_bad_ce_marked_packet_is_not_noted(void **state)
{
	struct h_opts o = gather_opts();
	struct pair p;
	struct xr_wc wc;

	(void)state;
	o.traffic_class = 3;   /* CE: the congestion a switch would have marked */
	assert_int_equal(h_open(&p, &o), 0);
	fill(h_data(&p.a), 4096, 3);
	post_write(&p, h_data(&p.a), p.a.mr->lkey, 4096, 1);
	send_only(&p);
	fill(h_data(&p.a), 4096, 99);
	receive(&p, 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_ECN_MARKED), 0);
	assert_int_equal(h_wait(&p, &p.a, &wc, 3000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_true(h_counter(&p.b, XR_CNT_ECN_MARKED) >= 1);
	h_close(&p);
}

/* Out of memory for what a changed packet would need (b's responder
 * block; the held list behind a READ): none is asked for before its
 * check, so the packet counts as a bad ICRC alone, as at the parse. */
static void test_a_bad_packet_takes_no_memory(void **state)
{
	struct h_opts o = gather_opts();
	struct pair p;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	fill(h_data(&p.a), 4096, 3);
	post_write(&p, h_data(&p.a), p.a.mr->lkey, 4096, 1);
	send_only(&p);
	fill(h_data(&p.a), 4096, 99);
	fail_next(test_qp_act_bytes(8), 1);   /* the harness's 256-WR send queue */
	receive(&p, 1);
	fail_next(0, 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_QP_MEM_FAIL), 0);
	h_close(&p);

	read_then_changed_write(&p);
	fail_next(test_resp_held_bytes(), 1);
	receive(&p, 1 + MSG / 4096);
	fail_next(0, 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_QP_MEM_FAIL), 0);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_icrc_covers_the_payload_and_retransmissions_are_copies),
		cmocka_unit_test(test_a_write_packet_found_bad_by_its_copy_does_nothing),
		cmocka_unit_test(test_odd_lengths_arrive_unrepeated),
		cmocka_unit_test(test_bad_packets_count_once),
		cmocka_unit_test(test_a_bad_write_held_behind_a_read_is_dropped),
		cmocka_unit_test(test_a_bad_ce_marked_packet_is_not_noted),
		cmocka_unit_test(test_a_bad_packet_takes_no_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
