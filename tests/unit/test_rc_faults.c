/* SPDX-License-Identifier: MIT */
/*
 * 10,000 mixed messages over several QPs through a faulty link (loss,
 * reordering, duplication, corruption, delay) at 1%, 5% and 10%: every
 * message must arrive exactly once, in order, with its bytes intact, and
 * every completion must be right. Atomics prove exactly-once execution
 * (a replayed fetch-add would shift every later original value). The
 * seed of a failing run is printed: XROCE_FAULT_SEED reproduces it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "test_util.h"

#define NQP        4
#define MESSAGES   10000
#define SLOT       (64u << 10)
#define SLOTS      64
#define SQ_DEPTH   32
#define RQ_DEPTH   64
#define RECV_OFF   (NQP * SLOTS * SLOT)            /* B: receive buffers, apart from WRITE targets */
#define STATIC_OFF (RECV_OFF + NQP * RQ_DEPTH * SLOT) /* B: pattern for READs */
#define ATOMIC_OFF (STATIC_OFF + (1u << 20))       /* B: two words per QP */
#define BUF_LEN    (ATOMIC_OFF + 4096)

static enum xr_progress_mode MODE;

enum kind { K_SEND, K_WRITE_IMM, K_WRITE, K_READ, K_FADD, K_CSWAP, K_COUNT };

struct qp_state {
	uint32_t next_seq;        /* next message to post */
	uint32_t done_seq;        /* next requester completion expected */
	uint32_t recv_seq;        /* next SEND/WRITE_IMM seq the receiver expects */
	uint32_t posted_recv;
	uint32_t last_recv_msg;   /* receives are matched to messages in order from here */
	uint64_t fadd_sum, cswap_val, cswaps_posted;
	uint8_t kind[SQ_DEPTH * 4];   /* by seq % len: what each in-flight seq was */
	uint32_t len[SQ_DEPTH * 4];
};

static uint32_t msg_len(uint64_t seed, uint32_t q, uint32_t seq)
{
	uint64_t s = seed ^ ((uint64_t)q << 40) ^ seq ^ 0x5bd1e995u;
	uint64_t r = test_rand(&s);
	if (r % 16 == 0)
		return (uint32_t)(test_rand(&s) % SLOT);       /* up to 64 KiB */
	return (uint32_t)(test_rand(&s) % 9000);               /* mostly a few packets */
}

static uint8_t pat(uint32_t q, uint32_t seq, uint32_t i)
{
	return (uint8_t)(q * 31 + seq * 7 + i * 13 + (i >> 8));
}

static enum kind msg_kind(uint64_t seed, uint32_t q, uint32_t seq)
{
	uint64_t s = seed * 3 + ((uint64_t)q << 32) + seq;
	return (enum kind)(test_rand(&s) % K_COUNT);
}

static void post_recvs(struct pair *p, uint32_t q, struct qp_state *st)
{
	while (st->posted_recv - st->recv_seq < RQ_DEPTH) {
		uint32_t slot = st->posted_recv % RQ_DEPTH;
		struct xr_sge s = { (uintptr_t)h_data(&p->b) + RECV_OFF + (q * RQ_DEPTH + slot) * SLOT, SLOT, p->b.mr->lkey };
		struct xr_recv_wr r = { .wr_id = ((uint64_t)q << 32) | st->posted_recv, .sg_list = &s, .num_sge = 1 };
		assert_int_equal(xr_post_recv(p->b.qp[q], &r, NULL), 0);
		st->posted_recv++;
	}
}

/* Posts message seq on QP q; false if the SQ is full. */
static bool post_one(struct pair *p, uint64_t seed, uint32_t q, struct qp_state *st)
{
	uint32_t seq = st->next_seq, len = msg_len(seed, q, seq);
	enum kind k = msg_kind(seed, q, seq);
	uint8_t *src = h_data(&p->a) + (q * SLOTS + seq % SLOTS) * SLOT;
	struct xr_sge s = { (uintptr_t)src, len, p->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = ((uint64_t)q << 32) | seq, .sg_list = &s, .num_sge = 1,
				.send_flags = XR_SEND_SIGNALED };
	uint64_t *words = (uint64_t *)(void *)(h_data(&p->b) + ATOMIC_OFF + q * 16);

	if (st->next_seq - st->done_seq >= SQ_DEPTH)
		return false;
	w.wr.rdma.rkey = p->b.mr->rkey;
	switch (k) {
	case K_SEND:
	case K_WRITE_IMM:
		if (len < 4)
			len = 4;
		s.length = len;
		for (uint32_t i = 0; i < len; i++)
			src[i] = pat(q, seq, i);
		w.opcode = k == K_SEND ? XR_WR_SEND : XR_WR_RDMA_WRITE_WITH_IMM;
		w.imm_data = seq;
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + (q * SLOTS + seq % SLOTS) * SLOT;
		break;
	case K_WRITE:
		for (uint32_t i = 0; i < len; i++)
			src[i] = pat(q, seq, i);
		w.opcode = XR_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + (q * SLOTS + seq % SLOTS) * SLOT;
		break;
	case K_READ:
		if (len > (1u << 20) - 4096)
			len = (1u << 20) - 4096;
		s.length = len;
		memset(src, 0, len);
		w.opcode = XR_WR_RDMA_READ;
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + STATIC_OFF + (seq % 4096);
		break;
	case K_FADD:
	case K_CSWAP:
		len = 8;
		s.length = 8;
		w.opcode = k == K_FADD ? XR_WR_ATOMIC_FETCH_AND_ADD : XR_WR_ATOMIC_CMP_AND_SWP;
		w.wr.atomic.remote_addr = (uintptr_t)&words[k == K_FADD ? 0 : 1];
		w.wr.atomic.rkey = p->b.mr->rkey;
		w.wr.atomic.compare_add = k == K_FADD ? seq + 1 : 0;   /* CSWAP: filled at completion check */
		if (k == K_CSWAP) {
			/* A chain: each swap expects the count of swaps before it and
			 * adds one, so a swap executed twice breaks every later one. */
			w.wr.atomic.compare_add = st->cswaps_posted;
			w.wr.atomic.swap = st->cswaps_posted + 1;
			st->cswaps_posted++;
		}
		break;
	default:
		break;
	}
	st->kind[seq % (SQ_DEPTH * 4)] = (uint8_t)k;
	st->len[seq % (SQ_DEPTH * 4)] = s.length;
	assert_int_equal(xr_post_send(p->a.qp[q], &w, NULL), 0);
	st->next_seq++;
	return true;
}

static void run(double rate)
{
	const char *env = getenv("XROCE_FAULT_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0xF00D0000u + (uint64_t)(rate * 1000) + MODE;
	struct xr_fault_cfg fc = { .seed = seed, .drop = rate, .duplicate = rate / 2, .reorder = rate,
				   .corrupt = rate / 2, .delay = rate / 4, .delay_us = 200 };
	struct h_opts o = { .mode = MODE, .mtu = XR_MTU_1024, .buf_len = BUF_LEN, .nqp = NQP,
			    .sq_depth = SQ_DEPTH, .rq_depth = RQ_DEPTH, .cq_depth = 4096, .timeout = 7,
			    .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1, .fault = &fc,
			    /* loss must never fail a transfer, however long it lasts */
			    .retry7_forever = true };
	struct qp_state st[NQP];
	struct pair p;
	uint32_t total_done = 0, posted = 0;
	uint64_t deadline;
	struct xr_wc wc[32];

	memset(st, 0, sizeof(st));
	assert_int_equal(h_open(&p, &o), 0);
	for (uint32_t i = 0; i < (1u << 20); i++)
		h_data(&p.b)[STATIC_OFF + i] = (uint8_t)(i * 5 + (i >> 9));
	for (uint32_t q = 0; q < NQP; q++) {
		uint64_t *words = (uint64_t *)(void *)(h_data(&p.b) + ATOMIC_OFF + q * 16);
		words[0] = 0;
		words[1] = 0;
		post_recvs(&p, q, &st[q]);
	}
	deadline = h_now_ms() + (getenv("XROCE_STALL_MS") ? strtoull(getenv("XROCE_STALL_MS"), NULL, 0) : 120000);
	while (total_done < MESSAGES) {
		int n;
		if (h_now_ms() > deadline) {
			h_dump(&p);
			for (uint32_t q = 0; q < NQP; q++)
				printf("QP %u: next %u done %u recv %u\n", q, st[q].next_seq, st[q].done_seq, st[q].recv_seq);
		}
		if (h_now_ms() > deadline)
			fail_msg("stalled at %u of %u messages (seed 0x%llx, rate %.2f)", total_done, MESSAGES,
				 (unsigned long long)seed, rate);
		for (uint32_t q = 0; q < NQP && posted < MESSAGES; q++)
			while (posted < MESSAGES && post_one(&p, seed, q, &st[q]))
				posted++;
		h_progress(&p);
		/* Requester completions: in order per QP, all successful, data right. */
		n = xr_poll_cq(p.a.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id >> 32), seq = (uint32_t)wc[i].wr_id;
			struct qp_state *s = &st[q];
			enum kind k = (enum kind)s->kind[seq % (SQ_DEPTH * 4)];
			uint8_t *buf = h_data(&p.a) + (q * SLOTS + seq % SLOTS) * SLOT;
			uint32_t len = s->len[seq % (SQ_DEPTH * 4)];
			if (wc[i].status != XR_WC_SUCCESS || q >= NQP || seq != s->done_seq) {
				h_dump(&p);
				printf("kind %d len %u\n", k, len);
			}
			if (wc[i].status != XR_WC_SUCCESS || q >= NQP || seq != s->done_seq)
				fail_msg("QP %u completion seq %u (expected %u) status %s (seed 0x%llx, rate %.2f)",
					 q, seq, s->done_seq, xr_wc_status_str(wc[i].status), (unsigned long long)seed, rate);
			if (k == K_WRITE && memcmp(h_data(&p.b) + (q * SLOTS + seq % SLOTS) * SLOT, buf, len))
				fail_msg("QP %u WRITE %u: data differs (seed 0x%llx)", q, seq, (unsigned long long)seed);
			if (k == K_READ && memcmp(buf, h_data(&p.b) + STATIC_OFF + (seq % 4096), len))
				fail_msg("QP %u READ %u: data differs (seed 0x%llx)", q, seq, (unsigned long long)seed);
			if (k == K_FADD) {
				uint64_t orig;
				memcpy(&orig, buf, 8);
				if (orig != s->fadd_sum)
					fail_msg("QP %u FETCH_ADD %u: original %llu, expected %llu: executed twice? (seed 0x%llx)",
						 q, seq, (unsigned long long)orig, (unsigned long long)s->fadd_sum,
						 (unsigned long long)seed);
				s->fadd_sum += seq + 1;
			}
			if (k == K_CSWAP) {
				uint64_t orig;
				memcpy(&orig, buf, 8);
				if (orig != s->cswap_val)
					fail_msg("QP %u CMP_SWAP %u: original %llu, expected %llu (seed 0x%llx)", q, seq,
						 (unsigned long long)orig, (unsigned long long)s->cswap_val,
						 (unsigned long long)seed);
				s->cswap_val++;
			}
			s->done_seq++;
			total_done++;
		}
		/* Receiver completions: exactly once, in order, bytes intact. */
		n = xr_poll_cq(p.b.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id >> 32), rseq = (uint32_t)wc[i].wr_id;
			struct qp_state *s = &st[q];
			uint32_t seq = wc[i].imm_data, slot = rseq % RQ_DEPTH;
			uint8_t *buf = h_data(&p.b) + RECV_OFF + (q * RQ_DEPTH + slot) * SLOT;
			if (wc[i].status != XR_WC_SUCCESS || rseq != s->recv_seq)
				fail_msg("QP %u receive %u (expected %u) status %s (seed 0x%llx, rate %.2f)", q, rseq,
					 s->recv_seq, xr_wc_status_str(wc[i].status), (unsigned long long)seed, rate);
			if (wc[i].opcode == XR_WC_RECV) {
				/* The SEND's seq is recovered from its pattern's first byte chain. */
				uint32_t len = wc[i].byte_len;
				bool found = false;
				for (uint32_t cand = s->last_recv_msg; cand < s->next_seq && !found; cand++) {
					if (msg_kind(seed, q, cand) != K_SEND || (msg_len(seed, q, cand) < 4 ? 4 : msg_len(seed, q, cand)) != len)
						continue;
					uint32_t j;
					for (j = 0; j < len && buf[j] == pat(q, cand, j); j++)
						;
					if (j == len) {
						found = true;
						s->last_recv_msg = cand + 1;
					}
				}
				if (!found)
					fail_msg("QP %u receive %u: SEND payload matches no message in order (seed 0x%llx)",
						 q, rseq, (unsigned long long)seed);
			} else {
				if (seq < s->last_recv_msg || msg_kind(seed, q, seq) != K_WRITE_IMM)
					fail_msg("QP %u WRITE_IMM seq %u out of order (seed 0x%llx)", q, seq,
						 (unsigned long long)seed);
				s->last_recv_msg = seq + 1;
			}
			s->recv_seq++;
		}
		for (uint32_t q = 0; q < NQP; q++)
			post_recvs(&p, q, &st[q]);
	}
	/* Every SEND/WRITE_IMM posted was received. */
	for (uint32_t q = 0; q < NQP; q++) {
		uint32_t want = 0;
		for (uint32_t seq = 0; seq < st[q].next_seq; seq++) {
			enum kind k = msg_kind(seed, q, seq);
			want += k == K_SEND || k == K_WRITE_IMM;
		}
		deadline = h_now_ms() + 5000;
		while (st[q].recv_seq < want && h_now_ms() < deadline) {
			int n;
			h_progress(&p);
			n = xr_poll_cq(p.b.cq, 32, wc);
			for (int i = 0; i < n; i++)
				st[(uint32_t)(wc[i].wr_id >> 32)].recv_seq++;
		}
		if (st[q].recv_seq != want)
			fail_msg("QP %u: %u receives for %u messages (seed 0x%llx)", q, st[q].recv_seq, want,
				 (unsigned long long)seed);
	}
	{
		struct xr_fault_stats fs;
		uint64_t icrc = 0;
		xr_link_fault_stats(p.la, &fs);
		xr_regio_read_counter(xr_context_regs(p.b.ctx), XR_CNT_PARSE_BAD_ICRC, &icrc);
		print_message("rate %.2f: %u messages; a->b dropped %llu dup %llu reordered %llu corrupted %llu; "
			      "b saw %llu ICRC errors\n", rate, MESSAGES, (unsigned long long)fs.dropped,
			      (unsigned long long)fs.duplicated, (unsigned long long)fs.reordered,
			      (unsigned long long)fs.corrupted, (unsigned long long)icrc);
		if (rate > 0)
			assert_true(fs.dropped > 0 && fs.corrupted > 0);
	}
	assert_true(h_guards_ok(&p.a) && h_guards_ok(&p.b));
	h_close(&p);
}

static void test_loss_1(void **s) { (void)s; run(0.01); }
static void test_loss_5(void **s) { (void)s; run(0.05); }
static void test_loss_10(void **s) { (void)s; run(0.10); }

static int set_thread(void **s) { (void)s; MODE = XR_PROGRESS_THREAD; return 0; }
static int set_inline(void **s) { (void)s; MODE = XR_PROGRESS_INLINE; return 0; }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_loss_1, set_inline), cmocka_unit_test_setup(test_loss_5, set_inline),
		cmocka_unit_test_setup(test_loss_10, set_inline), cmocka_unit_test_setup(test_loss_1, set_thread),
		cmocka_unit_test_setup(test_loss_5, set_thread), cmocka_unit_test_setup(test_loss_10, set_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
