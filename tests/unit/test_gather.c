/* SPDX-License-Identifier: MIT */
/*
 * Gather frames (link.h): payloads sent by reference on an XR_MEM_GATHER
 * pair. What arrives is what was sent, the ICRC covers the payload where
 * it lies, retransmissions are copies, and once the host may reuse a
 * buffer (a failed or flushed send, a success acknowledged ahead of the
 * reads, a region deregistered, a QP destroyed, a soft reset, the engine
 * closed) no frame reads it any more: its payload was copied in first, or
 * its reader was waited for. A frame that read the reused buffer instead
 * would fail its ICRC (computed over the bytes sent), and b's data or its
 * ICRC counter shows it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "gather_harness.h"
#include "xroce/engine.h"
#include "xroce/fabric.h"
#include "xroce/regmap.h"

static void test_payload_by_reference_arrives(void **state)
{
	struct pair p;
	uint8_t want[MSG];
	struct xr_wc wc;

	(void)state;
	start_write(&p, want, 3);
	assert_int_equal(h_wait(&p, &p.a, &wc, 2000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_memory_equal(h_data(&p.b), want, MSG);
	assert_int_equal(p.la->stats.tx_gather, MSG / 4096);
	assert_int_equal(p.la->stats.gather_settled, 0);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 0);
	assert_int_equal(h_counter(&p.a, XR_CNT_RETRANSMITS), 0);
	assert_true(h_guards_ok(&p.b));
	h_close(&p);
}

/* The host moved a's QP to ERR: its flushed WRs hand the buffer back. */
static void test_a_failed_qp_settles_its_frames(void **state)
{
	struct pair p;
	struct xr_qp_attr err = { .qp_state = XR_QPS_ERR };
	uint8_t want[MSG];
	struct xr_wc wc;

	(void)state;
	sent_unread(&p, want, 5);
	assert_int_equal(xr_modify_qp(p.a.qp[0], &err, XR_QP_STATE), 0);
	assert_int_equal(p.la->stats.gather_settled, MSG / 4096);
	assert_int_equal(h_wait(&p, &p.a, &wc, 2000), 1);
	assert_int_equal(wc.status, XR_WC_WR_FLUSH_ERR);
	memset(h_data(&p.a), 0x5A, MSG);   /* the host reuses its buffer */
	read_as_sent(&p, want);
}

/* A buffer of its own, sent from, then deregistered and freed (ASan
 * aborts on a read after that) or destroyed with its QP first. */
static void freed_after(bool destroy_qp, void **state)
{
	struct pair p;
	struct h_opts o = gather_opts();
	uint8_t *buf = malloc(MSG), want[MSG];
	struct xr_mr *mr;

	(void)state;
	assert_non_null(buf);
	assert_int_equal(h_open(&p, &o), 0);
	mr = xr_reg_mr(p.a.pd, buf, MSG, XR_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fill(buf, MSG, 11);
	memcpy(want, buf, MSG);
	post_write(&p, buf, mr->lkey, MSG, 1);
	send_only(&p);
	assert_int_equal(p.la->stats.tx_gather, MSG / 4096);
	if (destroy_qp) {
		assert_int_equal(xr_destroy_qp(p.a.qp[0]), 0);
		p.a.qp[0] = NULL;
		assert_int_equal(p.la->stats.gather_settled, MSG / 4096);
	}
	assert_int_equal(xr_dereg_mr(mr), 0);
	assert_int_equal(p.la->stats.gather_settled, MSG / 4096);
	memset(buf, 0xA5, MSG);
	free(buf);
	read_as_sent(&p, want);
}

static void test_a_deregistered_region_settles_its_frames(void **state)
{
	freed_after(false, state);
}

static void test_a_destroyed_qp_settles_its_frames(void **state)
{
	freed_after(true, state);
}

/* The peer's ePSN is ahead of a's PSN (connected so by mistake): it takes
 * a's first packet for a duplicate and acknowledges the whole message
 * while three packets wait unread behind it. The success hands the buffer
 * back: they must have been copied in first. */
static void test_an_ack_ahead_of_the_reads_settles(void **state)
{
	struct pair p;
	struct h_opts o = gather_opts();
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };
	struct xr_wc wc;
	int got = 0;

	(void)state;
	o.link_depth = 1;
	assert_int_equal(h_open(&p, &o), 0);
	assert_int_equal(xr_modify_qp(p.b.qp[0], &rst, XR_QP_STATE), 0);
	assert_int_equal(h_connect(p.b.qp[0], p.a.qp[0], p.a.ctx, &o, 0xABC00u, 0xFFFF04u), 0);
	fill(h_data(&p.a), MSG, 13);
	post_write(&p, h_data(&p.a), p.a.mr->lkey, MSG, 1);
	for (int i = 0; i < 200 && !got; i++) {
		xr_engine_progress(xr_context_engine(p.a.ctx));
		got = xr_poll_cq(p.a.cq, 1, &wc) == 1;
		if (!got)
			xr_engine_progress(xr_context_engine(p.b.ctx));
	}
	assert_true(got);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_true(p.lb->stats.rx_frames < MSG / 4096);    /* completed ahead of the reads */
	memset(h_data(&p.a), 0x5A, MSG);                    /* the host reuses its buffer */
	for (int i = 0; i < 50; i++)
		h_progress(&p);
	/* b took the rest as duplicates: had it read them where the host's
	 * buffer is, their ICRCs (of the bytes sent) would have failed. */
	assert_int_equal(p.lb->stats.rx_frames, MSG / 4096);
	assert_int_equal(h_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), 0);
	h_close(&p);
}

/* The same early ACK completes an unsignaled WRITE silently: its frames
 * are still unread when the host may learn that its buffer is free. */
static void early_ack_silent_write(struct pair *p)
{
	struct h_opts o = gather_opts();
	struct xr_qp_attr rst = { .qp_state = XR_QPS_RESET };
	struct xr_sge s;
	struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE }, *bad;

	o.link_depth = 1;
	assert_int_equal(h_open(p, &o), 0);
	assert_int_equal(xr_modify_qp(p->b.qp[0], &rst, XR_QP_STATE), 0);
	assert_int_equal(h_connect(p->b.qp[0], p->a.qp[0], p->a.ctx, &o, 0xABC00u, 0xFFFF04u), 0);
	fill(h_data(&p->a), MSG, 13);
	s = (struct xr_sge){ (uintptr_t)h_data(&p->a), MSG, p->a.mr->lkey };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b);
	w.wr.rdma.rkey = p->b.mr->rkey;
	assert_int_equal(xr_post_send(p->a.qp[0], &w, &bad), 0);   /* unsignaled */
	xr_engine_progress(xr_context_engine(p->a.ctx));           /* one frame in the ring */
	for (int i = 0; i < 3; i++)
		xr_engine_progress(xr_context_engine(p->b.ctx));   /* a duplicate to b: ACK of ePSN-1 */
	for (int i = 0; i < 2; i++)
		xr_engine_progress(xr_context_engine(p->a.ctx));   /* the WRITE completes silently */
}

/* The host reuses the WRITE's buffer: b still reads what was sent. */
static void reuse_and_read_as_sent(struct pair *p)
{
	assert_true(p->lb->stats.rx_frames < MSG / 4096);          /* the WRITE's frames still unread */
	memset(h_data(&p->a), 0x5A, MSG);
	for (int i = 0; i < 50; i++)
		h_progress(p);
	assert_int_equal(p->lb->stats.rx_frames, MSG / 4096);
	assert_int_equal(h_counter(&p->b, XR_CNT_PARSE_BAD_ICRC), 0);
}

/* A signaled BIND_MW after the silent WRITE succeeds, and its success
 * hands the WRITE's buffer back too (found by review). */
static void test_a_local_op_after_an_early_ack_settles(void **state)
{
	struct pair p;
	struct xr_send_wr bw = { .wr_id = 77, .opcode = XR_WR_BIND_MW, .send_flags = XR_SEND_SIGNALED };
	struct xr_mr *mr;
	struct xr_mw *mw;
	struct xr_wc wc;
	int got = 0;

	(void)state;
	early_ack_silent_write(&p);
	mr = xr_reg_mr(p.a.pd, h_data(&p.a) + MSG, 4096,
		       XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_MW_BIND);
	mw = xr_alloc_mw(p.a.pd, XR_MW_TYPE_2);
	assert_non_null(mr);
	assert_non_null(mw);
	bw.bind_mw.mw = mw;
	bw.bind_mw.rkey = xr_inc_rkey(mw->rkey);
	bw.bind_mw.bind_info = (struct xr_mw_bind_info){ mr, (uintptr_t)h_data(&p.a) + MSG, 4096, XR_ACCESS_REMOTE_READ };
	assert_int_equal(xr_post_send(p.a.qp[0], &bw, NULL), 0);
	for (int i = 0; i < 20 && !got; i++) {
		xr_engine_progress(xr_context_engine(p.a.ctx));
		got = xr_poll_cq(p.a.cq, 1, &wc) == 1;
		if (!got)
			xr_engine_progress(xr_context_engine(p.b.ctx));
	}
	assert_true(got);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	reuse_and_read_as_sent(&p);
	assert_int_equal(xr_dealloc_mw(mw), 0);
	assert_int_equal(xr_dereg_mr(mr), 0);
	h_close(&p);
}

/* SQD after the silent WRITE: the SQ drained event tells the host that
 * every WR is done, the WRITE's buffer too. */
static void test_an_sq_drained_event_after_an_early_ack_settles(void **state)
{
	struct pair p;
	struct xr_qp_attr a = { .qp_state = XR_QPS_SQD };
	struct xr_async_event ev;
	bool got = false;

	(void)state;
	early_ack_silent_write(&p);
	assert_int_equal(xr_modify_qp(p.a.qp[0], &a, XR_QP_STATE), 0);
	/* The event waits for the last frame to leave (the link holds one):
	 * a's engine twice for each frame b takes, so the last stays unread. */
	for (int i = 0; i < 40 && !got; i++) {
		got = xr_get_async_event(p.a.ctx, &ev, 0) == 0;   /* runs a's engine */
		if (!got && i % 2)
			xr_engine_progress(xr_context_engine(p.b.ctx));
	}
	assert_true(got);
	assert_int_equal(ev.type, XR_EVENT_SQ_DRAINED);
	reuse_and_read_as_sent(&p);
	h_close(&p);
}

/* The peer never answers: the retries run out, and the error completion
 * alone (no host command) hands the buffer back. */
static void test_retries_exhausted_settle(void **state)
{
	struct pair p;
	struct h_opts o = gather_opts();
	uint8_t want[MSG];
	struct xr_wc wc;
	uint64_t until;
	int got = 0;

	(void)state;
	o.timeout = 1;
	o.retry_cnt = 1;
	assert_int_equal(h_open(&p, &o), 0);
	fill(h_data(&p.a), MSG, 17);
	memcpy(want, h_data(&p.a), MSG);
	post_write(&p, h_data(&p.a), p.a.mr->lkey, MSG, 1);
	until = h_now_ms() + 3000;
	while (!got && h_now_ms() < until) {
		xr_engine_progress(xr_context_engine(p.a.ctx));
		got = xr_poll_cq(p.a.cq, 1, &wc) == 1;
	}
	assert_true(got);
	assert_int_equal(wc.status, XR_WC_RETRY_EXC_ERR);
	assert_int_equal(p.la->stats.gather_settled, MSG / 4096);
	memset(h_data(&p.a), 0x5A, MSG);
	read_as_sent(&p, want);
}

/* A SEND's payload by reference lands in the receive buffer whole. */
static void test_a_send_by_reference_arrives(void **state)
{
	struct pair p;
	struct h_opts o = gather_opts();
	struct xr_sge rs, ss;
	struct xr_recv_wr r = { .wr_id = 5, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct xr_send_wr w = { .wr_id = 6, .sg_list = &ss, .num_sge = 1, .opcode = XR_WR_SEND,
				.send_flags = XR_SEND_SIGNALED }, *bad;
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	rs = (struct xr_sge){ (uintptr_t)h_data(&p.b), MSG, p.b.mr->lkey };
	ss = (struct xr_sge){ (uintptr_t)h_data(&p.a), MSG, p.a.mr->lkey };
	assert_int_equal(xr_post_recv(p.b.qp[0], &r, &rbad), 0);
	fill(h_data(&p.a), MSG, 21);
	assert_int_equal(xr_post_send(p.a.qp[0], &w, &bad), 0);
	assert_int_equal(h_wait(&p, &p.b, &wc, 2000), 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, MSG);
	assert_memory_equal(h_data(&p.b), h_data(&p.a), MSG);
	assert_int_equal(p.la->stats.tx_gather, MSG / 4096);
	h_close(&p);
}

/* a's device closes with its packets unread: the engine's end settles. */
static void test_a_closed_engine_settles_its_frames(void **state)
{
	struct pair p;
	uint8_t want[MSG];

	(void)state;
	sent_unread(&p, want, 23);
	h_end_close(&p.a);   /* QPs, region, device, and the buffer freed */
	memset(&p.a, 0, sizeof(p.a));
	assert_int_equal(p.la->stats.gather_settled, MSG / 4096);
	read_as_sent(&p, want);
}

/* CTRL.soft_reset: every QP and region of a's gone at once. */
static void test_a_soft_reset_settles_its_frames(void **state)
{
	struct pair p;
	uint8_t want[MSG];

	(void)state;
	sent_unread(&p, want, 9);
	assert_int_equal(xr_regio_write(xr_context_regs(p.a.ctx), XR_REG_CTRL, XR_CTRL_SOFT_RESET), 0);
	assert_int_equal(p.la->stats.gather_settled, MSG / 4096);
	memset(h_data(&p.a), 0x3C, MSG);
	read_as_sent(&p, want);
}

/* ---- the link alone ---- */

struct settler {
	struct xr_link *l;
	_Atomic bool done;
};

static void *settle_thread(void *arg)
{
	struct settler *s = arg;

	xr_link_settle(s->l);
	atomic_store(&s->done, true);
	return NULL;
}

/* Two gather frames: one claimed by its receiver, one not. A settle
 * copies the second's payload in at once and waits for the first's
 * reader to free it. */
static void test_settle_copies_unclaimed_and_waits_for_a_reader(void **state)
{
	struct xr_link *a, *b;
	struct xr_frame *f[2], *got[2];
	uint8_t src[2][256];
	struct settler s;
	pthread_t t;

	(void)state;
	assert_int_equal(xr_link_mem_pair_ex(&a, &b, 0, XR_MEM_GATHER), 0);
	for (int i = 0; i < 2; i++) {
		fill(src[i], sizeof(src[i]), (uint8_t)(40 + i));
		f[i] = xr_link_frame_alloc(a);
		assert_non_null(f[i]);
		memset(f[i]->data, 0, 64);
		f[i]->len = 64 + sizeof(src[i]);
		xr_frame_set_gather(f[i], 64, src[i], sizeof(src[i]));
	}
	assert_int_equal(xr_link_send(a, f, 2), 2);
	assert_int_equal(a->stats.tx_gather, 2);
	assert_int_equal(xr_link_recv(b, got, 2), 2);
	assert_ptr_equal(xr_frame_claim(got[0]), src[0]);   /* being read */

	s.l = a;
	atomic_init(&s.done, false);
	assert_int_equal(pthread_create(&t, NULL, settle_thread, &s), 0);
	/* The settle's first step, however late its thread runs (a fixed
	 * 50 ms failed now and then on a loaded machine). Its frame state,
	 * not the link's counter: that is the settling thread's own. */
	for (int i = 0; i < 5000 && __atomic_load_n(&got[1]->gather_state, __ATOMIC_ACQUIRE) != XR_GATHER_COPIED; i++)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&got[1]->gather_state, __ATOMIC_ACQUIRE), XR_GATHER_COPIED);   /* the other copied in */
	usleep(50 * 1000);
	assert_false(atomic_load(&s.done));                 /* waits for the reader */
	xr_link_frame_free(b, got[0]);
	for (int i = 0; i < 2000 && !atomic_load(&s.done); i++)
		usleep(1000);
	assert_true(atomic_load(&s.done));
	pthread_join(t, NULL);
	assert_int_equal(a->stats.gather_settled, 1);

	memset(src[1], 0, sizeof(src[1]));                  /* the host's buffer is gone */
	assert_null(xr_frame_claim(got[1]));                /* its bytes are in the frame */
	fill(src[1], sizeof(src[1]), 41);
	assert_memory_equal(got[1]->data + 64, src[1], sizeof(src[1]));
	xr_link_frame_free(b, got[1]);
	xr_link_close(a);
	xr_link_close(b);
}

/* The list of frames sent by reference is pruned only when full (the
 * oldest is most often the frame being read: a look per send took its
 * line from the reader). Full, with its oldest still claimed, a frame
 * goes whole, its payload in data[]; once the reader lets the oldest go,
 * frames go by reference again. Every frame arrives with its bytes. */
static void test_a_full_out_list_sends_whole_then_by_reference_again(void **state)
{
	struct xr_link *a, *b;
	struct xr_frame *f, *got, *held = NULL;
	static uint8_t src[300][64];
	uint64_t by_ref = 0;
	unsigned whole = 0, i;

	(void)state;
	/* 16 frames a direction: each end owns 144, the list holds 255. */
	assert_int_equal(xr_link_mem_pair_ex(&a, &b, 16, XR_MEM_GATHER), 0);
	for (i = 0; i < 300; i++) {
		fill(src[i], sizeof(src[i]), (uint8_t)i);
		f = xr_link_frame_alloc(a);
		assert_non_null(f);
		memset(f->data, 0, 64);
		f->len = 128;
		xr_frame_set_gather(f, 64, src[i], sizeof(src[i]));
		assert_int_equal(xr_link_send(a, &f, 1), 1);
		assert_int_equal(xr_link_recv(b, &got, 1), 1);
		if (a->stats.tx_gather == by_ref) {
			assert_null(got->gather);   /* whole: nothing to claim */
			whole++;
		} else {
			assert_ptr_equal(xr_frame_claim(got), src[i]);
		}
		by_ref = a->stats.tx_gather;
		assert_memory_equal(got->gather ? got->gather : got->data + 64, src[i], sizeof(src[i]));
		if (i == 0)
			held = got;              /* claimed and kept: the list's oldest */
		else
			xr_link_frame_free(b, got);
		if (i == 280) {
			xr_link_frame_free(b, held);   /* let the oldest go */
			held = NULL;
		}
	}
	assert_int_equal(whole, 281 - 255);  /* frames 255..280 went whole */
	assert_int_equal(by_ref, 300 - whole);
	xr_link_settle(a);
	xr_link_close(a);
	xr_link_close(b);
}

/* A fault or capture wrapper would see frames without their payload. */
static void test_wrappers_refuse_a_gather_link(void **state)
{
	struct xr_link *a, *b;
	struct xr_fault_cfg cfg = { .seed = 1, .drop = 0.1 };

	(void)state;
	assert_int_equal(xr_link_mem_pair_ex(&a, &b, 0, 0x80), -EINVAL);
	assert_int_equal(xr_link_mem_pair_ex(&a, &b, 0, XR_MEM_GATHER), 0);
	errno = 0;
	assert_null(xr_link_fault(a, &cfg));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(xr_link_pcap_tap(b, "/dev/null"));
	assert_int_equal(errno, EINVAL);
	{
		struct xr_fabric *fab = xr_fabric_new(NULL);
		assert_non_null(fab);
		assert_int_equal(xr_fabric_add_port(fab, a, NULL), -EINVAL);
		xr_fabric_free(fab);
	}
	xr_link_close(a);
	xr_link_close(b);
}

/* On a link without gather frames a frame's gather fields are not the
 * link's truth: the host link's frames lie in memory its peer process
 * writes. A peer that marks its frame sent by reference, pointing at our
 * memory (here: a page nobody may read), must get an ordinary frame
 * checked as it is, never its pointer followed. Before the fix the engine
 * claimed it and read the page (SIGSEGV). */
static void test_a_peers_gather_fields_are_never_followed(void **state)
{
	struct h_opts o = gather_opts();
	static uint8_t payload[256];
	struct pair p;
	struct xr_pkt pk;
	struct xr_frame *f;
	uint8_t *page;
	ssize_t len;
	uint64_t until;

	(void)state;
	o.gather = false;
	assert_int_equal(h_open(&p, &o), 0);
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(page != MAP_FAILED);
	xr_pkt_init(&pk, XR_OP_RC_SEND_ONLY);
	assert_int_equal(xr_gid_parse(&pk.sgid, "10.0.0.2"), 0);
	assert_int_equal(xr_gid_parse(&pk.dgid, "10.0.0.1"), 0);
	pk.dqpn = xr_qp_num(p.a.qp[0]);
	pk.payload = payload;
	pk.payload_len = sizeof(payload);
	f = xr_link_frame_alloc(p.lb);
	assert_non_null(f);
	len = xr_pkt_build(&pk, f->data, XR_MAX_FRAME);
	assert_true(len > 0);
	f->len = (uint16_t)len;
	assert_int_equal(xr_link_send(p.lb, &f, 1), 1);
	/* The peer writes its frame after sending it, as a host link peer can. */
	f->gather_off = (uint16_t)pk.payload_off;
	f->gather_len = pk.payload_len;
	f->gather = page;
	__atomic_store_n(&f->gather_state, XR_GATHER_OUT, __ATOMIC_RELEASE);
	until = h_now_ms() + 2000;
	while (p.la->stats.rx_frames < 1 && h_now_ms() < until)
		xr_engine_progress(xr_context_engine(p.a.ctx));
	assert_int_equal(p.la->stats.rx_frames, 1);
	assert_int_equal(h_counter(&p.a, XR_CNT_PARSE_BAD_ICRC), 0);   /* checked as it is: intact */
	assert_int_equal(h_counter(&p.a, XR_CNT_RX_PKTS), 1);
	h_close(&p);
	munmap(page, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_payload_by_reference_arrives),
		cmocka_unit_test(test_a_failed_qp_settles_its_frames),
		cmocka_unit_test(test_a_deregistered_region_settles_its_frames),
		cmocka_unit_test(test_a_destroyed_qp_settles_its_frames),
		cmocka_unit_test(test_a_soft_reset_settles_its_frames),
		cmocka_unit_test(test_an_ack_ahead_of_the_reads_settles),
		cmocka_unit_test(test_a_local_op_after_an_early_ack_settles),
		cmocka_unit_test(test_an_sq_drained_event_after_an_early_ack_settles),
		cmocka_unit_test(test_retries_exhausted_settle),
		cmocka_unit_test(test_a_send_by_reference_arrives),
		cmocka_unit_test(test_a_closed_engine_settles_its_frames),
		cmocka_unit_test(test_settle_copies_unclaimed_and_waits_for_a_reader),
		cmocka_unit_test(test_a_full_out_list_sends_whole_then_by_reference_again),
		cmocka_unit_test(test_wrappers_refuse_a_gather_link),
		cmocka_unit_test(test_a_peers_gather_fields_are_never_followed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
