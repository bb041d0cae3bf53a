/* SPDX-License-Identifier: MIT */
/* The fault-injection soak with RC, UC and UD traffic at once on one
 * device pair: over a link that drops, duplicates, reorders and corrupts,
 * RC delivers every message once, in order; UC and UD deliver only whole,
 * intact messages (UC and UD promise neither order nor uniqueness under
 * reordering and duplication, but never a corrupt or merged message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "dgram_harness.h"

#define SLOT (8 * 1024)
#define RX_SLOTS 48
#define MSGS 150
#define INFLIGHT 12

enum kind { K_RC, K_UC, K_UD, K_COUNT };

struct flow {
	struct xr_qp *tx, *rx;
	uint32_t sent, done, got, last;
	size_t tx_base, rx_base;   /* slot areas in a's and b's regions */
};

static uint32_t len_of(enum kind k, uint32_t seq)
{
	static const uint32_t sizes[] = { 16, 1024, 1500, 3000, 4096, 5000, 777, 2048 };
	uint32_t n = sizes[seq % 8] + seq % 5;
	return k == K_UD ? (n > 2000 ? n / 3 : n) : n;   /* UD: one packet (MTU 4096 here) */
}

static uint8_t byte_of(enum kind k, uint32_t seq, uint32_t i)
{
	return (uint8_t)(k * 89 + seq * 13 + i * 5 + (i >> 7));
}

static void fill(uint8_t *d, enum kind k, uint32_t seq)
{
	uint32_t len = len_of(k, seq);

	memcpy(d, &seq, 4);
	for (uint32_t i = 4; i < len; i++)
		d[i] = byte_of(k, seq, i);
}

/* A received message is some message, whole and intact. */
static uint32_t check(const uint8_t *d, enum kind k, uint32_t byte_len)
{
	uint32_t seq, len;

	memcpy(&seq, d, 4);
	if (seq >= MSGS)
		fail_msg("kind %d: no message %u was sent", k, seq);
	len = len_of(k, seq);
	if (byte_len != len)
		fail_msg("kind %d message %u: %u bytes, sent %u (merged or cut)", k, seq, byte_len, len);
	for (uint32_t i = 4; i < len; i++)
		if (d[i] != byte_of(k, seq, i))
			fail_msg("kind %d message %u corrupted at byte %u", k, seq, i);
	return seq;
}

static void test_mixed_soak(void **state)
{
	struct xr_fault_cfg fault = { .seed = 1414, .drop = 0.02, .duplicate = 0.01, .reorder = 0.02,
				      .corrupt = 0.01 };
	struct h_opts o = d_opts(false);
	struct pair p;
	struct flow f[K_COUNT];
	struct xr_ah *ah;
	struct xr_wc wc[32];
	uint64_t until;

	(void)state;
	o.fault = &fault;
	o.buf_len = 4u << 20;
	o.timeout = 10;    /* 4 ms: RC recovers quickly */
	o.retry_cnt = 7;
	o.retry7_forever = true;
	assert_int_equal(h_open(&p, &o), 0);
	memset(f, 0, sizeof(f));
	f[K_RC].tx = p.a.qp[0];
	f[K_RC].rx = p.b.qp[0];
	f[K_UC].tx = d_uc_qp(&p.a, NULL, 64);
	f[K_UC].rx = d_uc_qp(&p.b, NULL, 64);
	assert_non_null(f[K_UC].tx);
	assert_non_null(f[K_UC].rx);
	assert_int_equal(d_uc_connect(f[K_UC].tx, f[K_UC].rx, p.b.ctx, XR_MTU_1024, 10, 20), 0);
	assert_int_equal(d_uc_connect(f[K_UC].rx, f[K_UC].tx, p.a.ctx, XR_MTU_1024, 20, 10), 0);
	f[K_UD].tx = d_ud_qp(&p.a, 0x77, NULL);
	f[K_UD].rx = d_ud_qp(&p.b, 0x77, NULL);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(f[K_UD].tx);
	assert_non_null(f[K_UD].rx);
	assert_non_null(ah);
	for (int k = 0; k < K_COUNT; k++) {
		f[k].tx_base = (size_t)k * 32 * SLOT;
		f[k].rx_base = (size_t)k * RX_SLOTS * SLOT;
		for (uint32_t i = 0; i < RX_SLOTS; i++)
			assert_int_equal(d_post_recv(f[k].rx, &p.b, f[k].rx_base + i * SLOT, SLOT, (uint64_t)k << 32 | i), 0);
	}
	/* Until every send completed and RC delivered everything: the last
	 * RC completion may come a pass after the last delivery (its ACK). */
	until = h_now_ms() + 60000;
	while (h_now_ms() < until &&
	       (f[K_RC].got < MSGS || f[K_RC].done < MSGS || f[K_UC].done < MSGS || f[K_UD].done < MSGS)) {
		int n;
		for (int k = 0; k < K_COUNT; k++)
			while (f[k].sent < MSGS && f[k].sent - f[k].done < INFLIGHT) {
				size_t off = f[k].tx_base + (size_t)(f[k].sent % 32) * SLOT;
				uint32_t len = len_of((enum kind)k, f[k].sent);
				fill(h_data(&p.a) + off, (enum kind)k, f[k].sent);
				if (k == K_UD) {
					assert_int_equal(d_ud_send(f[k].tx, &p.a, ah, xr_qp_num(f[k].rx), 0x77, off, len, 0,
								   (uint64_t)k << 32 | f[k].sent), 0);
				} else {
					struct xr_sge sge = { (uintptr_t)(h_data(&p.a) + off), len, p.a.mr->lkey };
					struct xr_send_wr wr = { .wr_id = (uint64_t)k << 32 | f[k].sent, .sg_list = &sge,
								 .num_sge = 1, .opcode = XR_WR_SEND,
								 .send_flags = XR_SEND_SIGNALED };
					assert_int_equal(xr_post_send(f[k].tx, &wr, NULL), 0);
				}
				f[k].sent++;
			}
		h_progress(&p);
		n = xr_poll_cq(p.a.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != XR_WC_SUCCESS) {
				h_dump(&p);
				fail_msg("send of kind %d: %s", (int)(wc[i].wr_id >> 32), xr_wc_status_str(wc[i].status));
			}
			f[wc[i].wr_id >> 32].done++;
		}
		n = xr_poll_cq(p.b.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			enum kind k = (enum kind)(wc[i].wr_id >> 32);
			uint32_t slot = (uint32_t)wc[i].wr_id, seq;
			const uint8_t *d = h_data(&p.b) + f[k].rx_base + (size_t)slot * SLOT + (k == K_UD ? 40 : 0);
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			assert_int_equal(wc[i].qp_num, xr_qp_num(f[k].rx));
			seq = check(d, k, wc[i].byte_len - (k == K_UD ? 40 : 0));
			if (k == K_RC) {
				assert_int_equal(seq, f[k].got);   /* RC: each once, in order */
			}
			f[k].got++;
			assert_int_equal(d_post_recv(f[k].rx, &p.b, f[k].rx_base + (size_t)slot * SLOT, SLOT, wc[i].wr_id), 0);
		}
	}
	/* what UC and UD still have on the way */
	for (int n; (n = d_collect(&p, &p.b, wc, 32, 100)) > 0;)
		for (int i = 0; i < n; i++) {
			enum kind k = (enum kind)(wc[i].wr_id >> 32);
			const uint8_t *d = h_data(&p.b) + f[k].rx_base + (size_t)(uint32_t)wc[i].wr_id * SLOT +
					   (k == K_UD ? 40 : 0);
			assert_true(k != K_RC);
			check(d, k, wc[i].byte_len - (k == K_UD ? 40 : 0));
			f[k].got++;
		}
	if (getenv("XR_TEST_VERBOSE"))
		fprintf(stderr, "rc %u uc %u ud %u of %u; uc drops %llu, icrc drops %llu, retransmits %llu\n", f[K_RC].got, f[K_UC].got,
			f[K_UD].got, MSGS, (unsigned long long)d_counter(&p.b, XR_CNT_DROP_UC_MSG),
			(unsigned long long)d_counter(&p.b, XR_CNT_PARSE_BAD_ICRC), (unsigned long long)d_counter(&p.a, XR_CNT_RETRANSMITS));
	assert_int_equal(f[K_RC].got, MSGS);
	assert_int_equal(f[K_RC].done, MSGS);
	assert_int_equal(f[K_UC].done, MSGS);
	assert_int_equal(f[K_UD].done, MSGS);
	/* the unreliable ones lost some and delivered most */
	assert_true(f[K_UC].got > MSGS / 2);
	assert_true(f[K_UD].got > MSGS / 2);
	assert_true(d_counter(&p.b, XR_CNT_DROP_UC_MSG) + d_counter(&p.b, XR_CNT_PARSE_BAD_ICRC) > 0);
	assert_true(h_guards_ok(&p.b));
	xr_destroy_ah(ah);
	for (int k = K_UC; k < K_COUNT; k++) {
		xr_destroy_qp(f[k].tx);
		xr_destroy_qp(f[k].rx);
	}
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixed_soak),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
