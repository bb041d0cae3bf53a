/* SPDX-License-Identifier: MIT */
/* UD QPs on the mem link (transport-rules D1-D7): many peer QPs to one
 * QP, Q_Key checks and the privileged Q_Key, oversize both ways, the GRH
 * bytes of IPv4 and IPv6 receives, src_qp and immediate data, no WQE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "wire/bytes.h"
#include "dgram_harness.h"
#include "drv/drv.h"

#define QKEY 0x1111u
#define SLOT 2048   /* receive buffer stride in b's region */

static void fill(struct end *e, size_t off, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		h_data(e)[off + i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

static bool same(const uint8_t *got, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (got[i] != (uint8_t)(seed * 31 + i * 7 + 1))
			return false;
	return true;
}

/* Waits for the next completion of opcode op on e (skipping send ones). */
static bool next_recv(struct pair *p, struct end *e, struct xr_wc *out, unsigned ms)
{
	uint64_t until = h_now_ms() + ms;
	struct xr_wc wc;

	while (h_now_ms() < until) {
		h_progress(p);
		if (xr_poll_cq(e->cq, 1, &wc) == 1) {
			if (wc.opcode == XR_WC_RECV) {
				*out = wc;
				return true;
			}
			assert_int_equal(wc.status, XR_WC_SUCCESS);   /* a send completion */
		}
	}
	return false;
}

static void test_many_peers_to_one(void **state)
{
	enum { PEERS = 8, EACH = 6 };
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *dst, *src[PEERS];
	struct xr_ah *ah;
	unsigned seen[PEERS] = { 0 };
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp(&p.b, QKEY, NULL);
	assert_non_null(dst);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(ah);
	for (unsigned i = 0; i < PEERS * EACH; i++)
		assert_int_equal(d_post_recv(dst, &p.b, i * SLOT, SLOT, 1000 + i), 0);
	for (unsigned q = 0; q < PEERS; q++) {
		src[q] = d_ud_qp(&p.a, QKEY, NULL);
		assert_non_null(src[q]);
	}
	/* Each peer's message k is 100 + 37*q + k bytes, seeded by (q, k). */
	for (unsigned k = 0; k < EACH; k++)
		for (unsigned q = 0; q < PEERS; q++) {
			size_t off = (q * EACH + k) * SLOT;
			uint32_t len = 100 + 37 * q + k;
			fill(&p.a, off, len, q * 16 + k);
			assert_int_equal(d_ud_send(src[q], &p.a, ah, xr_qp_num(dst), QKEY, off, len, 0, q), 0);
		}
	for (unsigned n = 0; n < PEERS * EACH; n++) {
		unsigned q;
		uint32_t slot, len;
		assert_true(next_recv(&p, &p.b, &wc, 2000));
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.qp_num, xr_qp_num(dst));
		assert_true(wc.wc_flags & XR_WC_GRH);
		for (q = 0; q < PEERS && xr_qp_num(src[q]) != wc.src_qp; q++)
			;
		assert_true(q < PEERS);   /* src_qp names a sender */
		/* One peer's datagrams arrive in its order, each whole. */
		len = 100 + 37 * q + seen[q];
		assert_int_equal(wc.byte_len, 40 + len);
		slot = (uint32_t)(wc.wr_id - 1000);
		assert_true(same(h_data(&p.b) + slot * SLOT + 40, len, q * 16 + seen[q]));
		seen[q]++;
	}
	for (unsigned q = 0; q < PEERS; q++)
		assert_int_equal(seen[q], EACH);
	assert_int_equal(d_counter(&p.b, XR_CNT_TX_ACK), 0);   /* UD is never acknowledged */
	assert_true(h_guards_ok(&p.b));
	xr_destroy_ah(ah);
	for (unsigned q = 0; q < PEERS; q++)
		xr_destroy_qp(src[q]);
	xr_destroy_qp(dst);
	h_close(&p);
}

static void test_qkey(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *dst, *src, *other;
	struct xr_ah *ah;
	struct xr_qp_attr a;
	struct xr_wc wc;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp(&p.b, QKEY, NULL);
	src = d_ud_qp(&p.a, QKEY, NULL);
	other = d_ud_qp(&p.a, 0x3333, NULL);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(dst);
	assert_non_null(src);
	assert_non_null(other);
	assert_non_null(ah);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(d_post_recv(dst, &p.b, i * SLOT, SLOT, i), 0);
	fill(&p.a, 0, 64, 1);

	/* D3: a wrong Q_Key is dropped silently and counted. */
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), 0x2222, 0, 64, 0, 1), 0);
	assert_false(next_recv(&p, &p.b, &wc, 100));
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_BAD_QKEY), 1);

	/* C10-15: bit 31 of the WR's Q_Key sends the QP's own: src has the
	 * right one, other a wrong one. */
	assert_int_equal(d_ud_send(other, &p.a, ah, xr_qp_num(dst), 0x80000000u, 0, 64, 0, 2), 0);
	assert_false(next_recv(&p, &p.b, &wc, 100));
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_BAD_QKEY), 2);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), 0x80000000u, 0, 64, 0, 3), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 0);   /* the dropped ones took no WQE */
	assert_int_equal(wc.src_qp, xr_qp_num(src));

	/* The right Q_Key itself. */
	assert_int_equal(d_ud_send(other, &p.a, ah, xr_qp_num(dst), QKEY, 0, 64, 0, 4), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.src_qp, xr_qp_num(other));
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_BAD_QKEY), 2);

	/* Setting a privileged Q_Key needs privilege (D2): EPERM. */
	memset(&a, 0, sizeof(a));
	a.qkey = 0x80010000u;
	assert_int_equal(xr_modify_qp(dst, &a, XR_QP_QKEY), EPERM);
	assert_int_equal(xr_query_qp(dst, &a, 0, NULL), 0);
	assert_int_equal(a.qkey, QKEY);
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(other);
	xr_destroy_qp(dst);
	h_close(&p);
}

/* A send doorbell the host could not have rung fails a UD QP's send
 * queue only (SQE); a second one read while in SQE leaves it there, its
 * receive side working on. */
static void test_bad_doorbell_keeps_receiving(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *a_qp, *b_qp;
	struct xr_ah *to_a;
	struct xr_qp_attr attr;
	struct xr_wc wc;
	struct xr_engine *ea;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	ea = xr_context_engine(p.a.ctx);
	a_qp = d_ud_qp(&p.a, QKEY, NULL);
	b_qp = d_ud_qp(&p.b, QKEY, NULL);
	to_a = d_ah(&p.b, &p.a, 64, 0);
	assert_non_null(a_qp);
	assert_non_null(b_qp);
	assert_non_null(to_a);
	assert_int_equal(d_post_recv(a_qp, &p.a, 8 * SLOT, SLOT, 50), 0);
	assert_int_equal(xr_engine_reg_write(ea, XR_REG_DB_SQ + 8 * xr_qp_num(a_qp), 0xFFFF), XR_AXI_OKAY);
	assert_int_equal(d_quiet(&p, &p.a, 50), 0);
	assert_int_equal(xr_query_qp(a_qp, &attr, 0, NULL), 0);
	assert_int_equal(attr.qp_state, XR_QPS_SQE);
	assert_int_equal(xr_engine_reg_write(ea, XR_REG_DB_SQ + 8 * xr_qp_num(a_qp), 0xFFF0), XR_AXI_OKAY);
	assert_int_equal(d_quiet(&p, &p.a, 50), 0);
	assert_int_equal(xr_query_qp(a_qp, &attr, 0, NULL), 0);
	assert_int_equal(attr.qp_state, XR_QPS_SQE);
	assert_int_equal(h_counter(&p.a, XR_CNT_SQ_DOORBELL_REFUSED), 2);

	fill(&p.b, 4 * SLOT, 32, 4);
	assert_int_equal(d_ud_send(b_qp, &p.b, to_a, xr_qp_num(a_qp), QKEY, 4 * SLOT, 32, 0, 61), 0);
	assert_true(next_recv(&p, &p.a, &wc, 2000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 50);
	assert_true(same(h_data(&p.a) + 8 * SLOT + 40, 32, 4));
	xr_destroy_ah(to_a);
	xr_destroy_qp(a_qp);
	xr_destroy_qp(b_qp);
	h_close(&p);
}
/* G4, IBTA 10.3.1 (rxe departs: it moves the QP to ERR): a send that
 * fails locally (a bad L_Key) moves a UD QP to SQE, not ERR. Its receive
 * side works on; what it posts to send meanwhile is flushed; SQE -> RTS
 * (CUR_STATE SQE accepted) makes it send again. */
static void test_send_error_keeps_receiving(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *a_qp, *b_qp;
	struct xr_ah *to_b, *to_a;
	struct xr_qp_attr attr;
	struct xr_wc wc;
	struct xr_sge bad;
	struct xr_send_wr wr;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	a_qp = d_ud_qp(&p.a, QKEY, NULL);
	b_qp = d_ud_qp(&p.b, QKEY, NULL);
	to_b = d_ah(&p.a, &p.b, 64, 0);
	to_a = d_ah(&p.b, &p.a, 64, 0);
	assert_non_null(a_qp);
	assert_non_null(b_qp);
	assert_non_null(to_b);
	assert_non_null(to_a);
	assert_int_equal(d_post_recv(a_qp, &p.a, 8 * SLOT, SLOT, 50), 0);
	assert_int_equal(d_post_recv(b_qp, &p.b, 0, SLOT, 60), 0);

	bad = (struct xr_sge){ (uintptr_t)h_data(&p.a), 64, p.a.mr->lkey ^ 0x5A };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &bad;
	wr.num_sge = 1;
	wr.opcode = XR_WR_SEND;
	wr.send_flags = XR_SEND_SIGNALED;
	wr.wr.ud.ah = to_b;
	wr.wr.ud.remote_qpn = xr_qp_num(b_qp);
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(xr_post_send(a_qp, &wr, NULL), 0);
	assert_int_equal(d_collect(&p, &p.a, &wc, 1, 2000), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, XR_WC_LOC_PROT_ERR);
	assert_int_equal(xr_query_qp(a_qp, &attr, 0, NULL), 0);
	assert_int_equal(attr.qp_state, XR_QPS_SQE);

	/* Sends posted in SQE are flushed, nothing leaves. */
	fill(&p.a, 0, 64, 3);
	assert_int_equal(d_ud_send(a_qp, &p.a, to_b, xr_qp_num(b_qp), QKEY, 0, 64, 0, 2), 0);
	assert_int_equal(d_collect(&p, &p.a, &wc, 1, 2000), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, XR_WC_WR_FLUSH_ERR);
	assert_int_equal(d_quiet(&p, &p.b, 50), 0);

	/* The receive side works on. */
	fill(&p.b, 4 * SLOT, 32, 4);
	assert_int_equal(d_ud_send(b_qp, &p.b, to_a, xr_qp_num(a_qp), QKEY, 4 * SLOT, 32, 0, 61), 0);
	assert_true(next_recv(&p, &p.a, &wc, 2000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.byte_len, 40 + 32);
	assert_true(same(h_data(&p.a) + 8 * SLOT + 40, 32, 4));

	/* SQE -> RTS, as the QP really is (the driver asks the engine). */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = XR_QPS_RTS;
	attr.cur_qp_state = XR_QPS_SQE;
	assert_int_equal(xr_modify_qp(a_qp, &attr, XR_QP_STATE | XR_QP_CUR_STATE), 0);
	assert_int_equal(d_ud_send(a_qp, &p.a, to_b, xr_qp_num(b_qp), QKEY, 0, 64, 0, 3), 0);
	assert_true(next_recv(&p, &p.b, &wc, 2000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 60);
	assert_true(same(h_data(&p.b) + 40, 64, 3));
	xr_destroy_ah(to_b);
	xr_destroy_ah(to_a);
	xr_destroy_qp(a_qp);
	xr_destroy_qp(b_qp);
	h_close(&p);
}

static void test_oversize(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *dst, *src;
	struct xr_ah *ah;
	struct xr_wc wc;
	uint64_t rx_before;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp(&p.b, QKEY, NULL);
	src = d_ud_qp(&p.a, QKEY, NULL);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(dst);
	assert_non_null(src);
	assert_non_null(ah);
	/* D7: a 100-byte buffer holds 40 GRH bytes and 60 of payload. */
	assert_int_equal(d_post_recv(dst, &p.b, 0, 100, 7), 0);
	fill(&p.a, 0, 4096, 3);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, 61, 0, 1), 0);
	assert_false(next_recv(&p, &p.b, &wc, 100));
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_UD_OVERSIZE), 1);
	/* The WQE stayed posted: the next datagram that fits takes it. */
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, 60, 0, 2), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 100);
	assert_true(same(h_data(&p.b) + 40, 60, 3));

	/* D1: longer than the MTU (4096 on this 9000-byte link) sends nothing,
	 * yet completes SUCCESS; counted on the sender. */
	assert_int_equal(d_post_recv(dst, &p.b, SLOT, 8192, 8), 0);
	rx_before = d_counter(&p.b, XR_CNT_RX_PKTS);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, 4097, 0, 3), 0);
	assert_int_equal(h_wait(&p, &p.a, &wc, 1000), 1);
	while (wc.wr_id != 3) {   /* the earlier sends' completions */
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(h_wait(&p, &p.a, &wc, 1000), 1);
	}
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.opcode, XR_WC_SEND);
	assert_int_equal(d_counter(&p.a, XR_CNT_UD_SEND_OVERSIZE), 1);
	assert_false(next_recv(&p, &p.b, &wc, 100));
	assert_int_equal(d_counter(&p.b, XR_CNT_RX_PKTS), rx_before);
	/* The largest that fits does arrive. */
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, 4096, 0, 4), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.byte_len, 40 + 4096);
	assert_true(same(h_data(&p.b) + SLOT + 40, 4096, 3));
	assert_true(h_guards_ok(&p.b));
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	h_close(&p);
}

/* D4 and D5 for one address family: the 40 bytes before the payload, byte
 * by byte, and the completion's fields. */
static void grh_case(bool ipv6)
{
	struct h_opts o = d_opts(ipv6);
	struct pair p;
	struct xr_qp *dst, *src;
	struct xr_ah *ah;
	struct xr_wc wc;
	xr_gid ga, gb;
	const uint8_t *g;
	const uint32_t len = 100;   /* 4-byte multiple: no pad */
	const uint32_t wire = 8 + 12 + 8 + 4 + len + 4;   /* UDP BTH DETH ImmDt payload ICRC */

	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp(&p.b, QKEY, NULL);
	src = d_ud_qp(&p.a, QKEY, NULL);
	ah = d_ah(&p.a, &p.b, 7, 0x48);
	assert_non_null(dst);
	assert_non_null(src);
	assert_non_null(ah);
	memset(h_data(&p.b), 0xCC, 40);   /* the GRH's bytes must all be written */
	assert_int_equal(d_post_recv(dst, &p.b, 0, SLOT, 9), 0);
	fill(&p.a, 0, len, 5);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, len, 0x01020304u, 1), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.opcode, XR_WC_RECV);
	assert_int_equal(wc.byte_len, 40 + len);
	assert_int_equal(wc.src_qp, xr_qp_num(src));
	assert_int_equal(wc.qp_num, xr_qp_num(dst));
	assert_int_equal(wc.wc_flags, XR_WC_GRH | XR_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0x01020304u);
	xr_query_gid(p.a.ctx, &ga);
	xr_query_gid(p.b.ctx, &gb);
	g = h_data(&p.b);
	if (!ipv6) {
		for (int i = 0; i < 20; i++)
			assert_int_equal(g[i], 0);   /* undefined by the annex; zero, as rxe */
		g += 20;
		assert_int_equal(g[0], 0x45);
		assert_int_equal(g[1], 0x48 | 2);               /* TOS: the AH's traffic class, ECT(0) added (CC_CTRL) */
		assert_int_equal(get_be16(g + 2), 20 + wire);   /* total length */
		assert_int_equal(get_be16(g + 6), 0x4000);      /* DF, no fragment */
		assert_int_equal(g[8], 7);                      /* TTL: the AH's hop limit */
		assert_int_equal(g[9], 17);                     /* UDP */
		assert_int_equal(get_be16(g + 10), xr_ipv4_csum(g));   /* as received, checksum and all */
		assert_memory_equal(g + 12, ga.raw + 12, 4);    /* source */
		assert_memory_equal(g + 16, gb.raw + 12, 4);    /* destination */
	} else {
		assert_int_equal(g[0] >> 4, 6);
		assert_int_equal(((g[0] & 0xF) << 4) | (g[1] >> 4), 0x48 | 2);   /* traffic class, ECT(0) added */
		assert_int_equal(get_be16(g + 4), wire);        /* payload length */
		assert_int_equal(g[6], 17);                     /* next header */
		assert_int_equal(g[7], 7);                      /* hop limit */
		assert_memory_equal(g + 8, ga.raw, 16);
		assert_memory_equal(g + 24, gb.raw, 16);
	}
	assert_true(same(h_data(&p.b) + 40, len, 5));
	assert_int_equal(h_data(&p.b)[40 + len], GUARD_BYTE);   /* nothing beyond the datagram */
	assert_true(h_guards_ok(&p.b));
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	h_close(&p);
}

static void test_grh_ipv4(void **state)
{
	(void)state;
	grh_case(false);
}

static void test_grh_ipv6(void **state)
{
	(void)state;
	grh_case(true);
}

/* A datagram b's link hands over as if a to b's MAC: IPv4 to b's own
 * address, or IPv6 to :: (b has no IPv6 address: its registers are 0). */
static void inject_to_b(struct pair *p, struct xr_qp *dst, bool ipv6_unset)
{
	static const uint8_t payload[16] = { 1, 2, 3, 4 };
	struct xr_frame *f = xr_link_frame_alloc(p->la);
	struct xr_pkt k;
	ssize_t len;

	assert_non_null(f);
	xr_pkt_init(&k, 0x64);   /* UD SEND_ONLY */
	memcpy(k.dmac, p->lb->mac, 6);
	memcpy(k.smac, p->la->mac, 6);
	if (ipv6_unset) {
		k.ip_version = 6;
		memset(&k.sgid, 0, sizeof(k.sgid));
		k.sgid.raw[0] = 0xfd;
		k.sgid.raw[15] = 1;
		memset(&k.dgid, 0, sizeof(k.dgid));
	} else {
		xr_query_gid(p->a.ctx, &k.sgid);
		xr_query_gid(p->b.ctx, &k.dgid);
	}
	k.dqpn = xr_qp_num(dst);
	k.deth.qkey = QKEY;
	k.deth.src_qp = 0x99;
	k.payload = payload;
	k.payload_len = sizeof(payload);
	len = xr_pkt_build(&k, f->data, XR_MAX_FRAME);
	assert_true(len > 0);
	f->len = (uint16_t)len;
	assert_int_equal(xr_link_send(p->la, &f, 1), 1);
}

/* The address family the device has no address for is not ours: an IPv6
 * datagram to :: reached an IPv4 device's UD QP (the unset IPv6 registers
 * "matched"), and the reply address made from it was nonsense. */
static void test_unset_family_is_not_ours(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *dst;
	struct xr_wc wc;
	uint64_t before;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp(&p.b, QKEY, NULL);
	assert_non_null(dst);
	assert_int_equal(d_post_recv(dst, &p.b, 0, SLOT, 1), 0);
	before = d_counter(&p.b, XR_CNT_DROP_NOT_FOR_US);
	inject_to_b(&p, dst, true);
	assert_false(next_recv(&p, &p.b, &wc, 200));
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_NOT_FOR_US), before + 1);
	inject_to_b(&p, dst, false);   /* the same datagram to b's IPv4 address arrives */
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.src_qp, 0x99);
	xr_destroy_qp(dst);
	h_close(&p);
}

static void test_no_wqe_and_refusals(void **state)
{
	struct h_opts o = d_opts(false);
	struct pair p;
	struct xr_qp *dst, *src;
	struct xr_ah *ah;
	struct xr_qp_attr a;
	struct xr_wc wc;
	struct xr_sge sge;
	struct xr_send_wr wr, *bad;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp(&p.b, QKEY, NULL);
	src = d_ud_qp(&p.a, QKEY, NULL);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(dst);
	assert_non_null(src);
	assert_non_null(ah);
	/* D6: no WQE, no RNR: dropped, counted, the QP stays in RTS. */
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, 8, 0, 1), 0);
	assert_false(next_recv(&p, &p.b, &wc, 100));
	assert_int_equal(d_counter(&p.b, XR_CNT_DROP_NO_RWQE), 1);
	assert_int_equal(d_counter(&p.b, XR_CNT_TX_RNR_NAK), 0);
	assert_int_equal(xr_query_qp(dst, &a, 0, NULL), 0);
	assert_int_equal(a.qp_state, XR_QPS_RTS);
	assert_int_equal(d_post_recv(dst, &p.b, 0, SLOT, 5), 0);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, 8, 0, 2), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.wr_id, 5);

	/* B30: UD posts SEND and SEND_WITH_IMM only, with an address. */
	memset(&wr, 0, sizeof(wr));
	sge = (struct xr_sge){ (uintptr_t)h_data(&p.a), 8, p.a.mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.opcode = XR_WR_RDMA_WRITE;
	assert_int_equal(xr_post_send(src, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	wr.opcode = XR_WR_RDMA_READ;
	assert_int_equal(xr_post_send(src, &wr, &bad), EINVAL);
	wr.opcode = XR_WR_SEND;
	wr.wr.ud.ah = NULL;
	assert_int_equal(xr_post_send(src, &wr, &bad), EINVAL);
	/* A UD modify takes no address or path (G1). */
	memset(&a, 0, sizeof(a));
	a.path_mtu = XR_MTU_1024;
	assert_int_equal(xr_modify_qp(dst, &a, XR_QP_PATH_MTU), EINVAL);
	/* The sender's completions: the two datagrams, nothing of the refused WRs. */
	{
		struct xr_wc w[8];
		assert_int_equal(d_collect(&p, &p.a, w, 8, 100), 2);
		assert_int_equal(w[0].wr_id, 1);
		assert_int_equal(w[1].wr_id, 2);
		assert_int_equal(w[0].status, XR_WC_SUCCESS);
		assert_int_equal(w[1].status, XR_WC_SUCCESS);
	}
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	h_close(&p);
}

/* A UD receive WQE of 63 SGEs (a four-block slot): the GRH into the
 * first, the payload scattered over the other 62. Then a host that sets
 * num_sge to 255 in the last slot of a one-block ring: the engine reads
 * no SGE past the slot (ASan) and the datagram fails the WQE. */
static void test_ud_receive_slots(void **state)
{
	struct h_opts o = d_opts(false);
	struct xr_sge s[XR_RWQE_MAX_SGE];
	struct xr_recv_wr r = { .wr_id = 40, .sg_list = s, .num_sge = XR_RWQE_MAX_SGE };
	struct pair p;
	struct xr_qp *dst, *dst1, *src;
	struct xr_ah *ah;
	struct xr_hw_rwqe *w;
	struct xr_wc wc;
	uint32_t len = 0, at = 0;

	(void)state;
	assert_int_equal(h_open(&p, &o), 0);
	dst = d_ud_qp_sge(&p.b, QKEY, NULL, XR_RWQE_MAX_SGE);
	dst1 = d_ud_qp_sge(&p.b, QKEY, NULL, 1);
	src = d_ud_qp(&p.a, QKEY, NULL);
	ah = d_ah(&p.a, &p.b, 64, 0);
	assert_non_null(dst);
	assert_non_null(dst1);
	assert_non_null(src);
	assert_non_null(ah);
	assert_int_equal(dst->rq_blocks_log, XR_WQE_MAX_BLOCKS_LOG);
	s[0] = (struct xr_sge){ (uintptr_t)h_data(&p.b), 40, p.b.mr->lkey };
	for (unsigned i = 1; i < XR_RWQE_MAX_SGE; i++) {
		s[i] = (struct xr_sge){ (uintptr_t)h_data(&p.b) + 4096 + 64 * (XR_RWQE_MAX_SGE - i), 1 + i % 13,
					p.b.mr->lkey };
		len += s[i].length;
	}
	assert_true(len <= 1024);
	fill(&p.a, 0, len, 3);
	assert_int_equal(xr_post_recv(dst, &r, NULL), 0);
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst), QKEY, 0, len, 0, 1), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 40);
	assert_int_equal(wc.byte_len, 40 + len);
	for (unsigned i = 1; i < XR_RWQE_MAX_SGE; at += s[i].length, i++)
		for (uint32_t k = 0; k < s[i].length; k++)
			assert_int_equal(((uint8_t *)(uintptr_t)s[i].addr)[k], (uint8_t)(3 * 31 + (at + k) * 7 + 1));

	/* one-block slots: the ring's last slot scribbled */
	for (unsigned i = 0; i < (1u << dst1->rq_log); i++)
		assert_int_equal(d_post_recv(dst1, &p.b, 65536 + SLOT * i, SLOT, 50 + i), 0);
	for (unsigned i = 0; i + 1 < (1u << dst1->rq_log); i++) {
		assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst1), QKEY, 0, 8, 0, 2), 0);
		assert_true(next_recv(&p, &p.b, &wc, 1000));
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 50 + i);
		while (xr_poll_cq(p.a.cq, 1, &wc) == 1)   /* the sender's */
			assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	w = xr_rwqe_at(dst1->rq, (1u << dst1->rq_log) - 1, dst1->rq_log, dst1->rq_blocks_log);
	assert_int_equal(dst1->rq_blocks_log, 0);
	memset(xr_rwqe_sges(w), 0, XR_RWQE_BODY(0));
	w->num_sge = 255;
	assert_int_equal(d_ud_send(src, &p.a, ah, xr_qp_num(dst1), QKEY, 0, 8, 0, 3), 0);
	assert_true(next_recv(&p, &p.b, &wc, 1000));
	assert_int_not_equal(wc.status, XR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 50 + (1u << dst1->rq_log) - 1);
	assert_true(h_guards_ok(&p.b));
	xr_destroy_ah(ah);
	xr_destroy_qp(src);
	xr_destroy_qp(dst);
	xr_destroy_qp(dst1);
	h_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_peers_to_one),
		cmocka_unit_test(test_qkey),
		cmocka_unit_test(test_send_error_keeps_receiving),
		cmocka_unit_test(test_bad_doorbell_keeps_receiving),
		cmocka_unit_test(test_unset_family_is_not_ours),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_grh_ipv4),
		cmocka_unit_test(test_grh_ipv6),
		cmocka_unit_test(test_no_wqe_and_refusals),
		cmocka_unit_test(test_ud_receive_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
