/* SPDX-License-Identifier: MIT */
/*
 * For the gather-frame tests (test_gather, test_gather_icrc): a pair on
 * an XR_MEM_GATHER link, a WRITE of a's buffer to b's sent by reference,
 * and each engine run on its own.
 */
#ifndef XR_TEST_GATHER_HARNESS_H
#define XR_TEST_GATHER_HARNESS_H

#include "rc_harness.h"

#define MSG (16 * 1024)   /* four 4 KiB packets */

static inline struct h_opts gather_opts(void)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_4096, .buf_len = 64 * 1024, .timeout = 16,
			    .retry_cnt = 7, .rnr_retry = 7, .gather = true };
	return o;
}

static inline void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static inline void post_write(struct pair *p, const uint8_t *src, uint32_t lkey, uint32_t len, uint64_t id)
{
	struct xr_sge s = { (uintptr_t)src, len, lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_send_wr *bad;

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b);
	w.wr.rdma.rkey = p->b.mr->rkey;
	assert_int_equal(xr_post_send(p->a.qp[0], &w, &bad), 0);
}

/* a's engine alone: its packets leave, b has not read them. */
static inline void send_only(struct pair *p)
{
	for (int i = 0; i < 4; i++)
		xr_engine_progress(xr_context_engine(p->a.ctx));
}

/* b's engine until it has taken n frames (bounded). */
static inline void receive(struct pair *p, uint64_t n)
{
	uint64_t until = h_now_ms() + 2000;

	while (p->lb->stats.rx_frames < n && h_now_ms() < until)
		xr_engine_progress(xr_context_engine(p->b.ctx));
	assert_true(p->lb->stats.rx_frames >= n);
}

/* A pair, and a WRITE of a's buffer (want: its bytes) to b's posted. */
static inline void start_write(struct pair *p, uint8_t *want, uint8_t seed)
{
	struct h_opts o = gather_opts();

	assert_int_equal(h_open(p, &o), 0);
	fill(h_data(&p->a), MSG, seed);
	memcpy(want, h_data(&p->a), MSG);
	post_write(p, h_data(&p->a), p->a.mr->lkey, MSG, 1);
}

/* ...sent by reference, and not read by b yet. */
static inline void sent_unread(struct pair *p, uint8_t *want, uint8_t seed)
{
	start_write(p, want, seed);
	send_only(p);
	assert_int_equal(p->la->stats.tx_gather, MSG / 4096);
}

/* The buffer was handed back and reused (or freed): b now reads what was
 * sent, every ICRC good. */
static inline void read_as_sent(struct pair *p, const uint8_t *want)
{
	receive(p, MSG / 4096);
	assert_int_equal(h_counter(&p->b, XR_CNT_PARSE_BAD_ICRC), 0);
	assert_memory_equal(h_data(&p->b), want, MSG);
	h_close(p);
}

#endif
