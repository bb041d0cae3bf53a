/* SPDX-License-Identifier: MIT */
/*
 * Real xroce engines talking through the switch model: data verified, a
 * 4-to-1 incast with tail drops and go-back-N recovery, and the same incast
 * lossless under PFC. One thread and a simulated clock: the engines' timers
 * read the fabric's clock, so runs are deterministic.
 */
#include "fabric_harness.h"
#include "rc_harness.h"

/* ---- engines through the switch ---- */

#define MAX_DEV 5


struct sim {
	struct net n;
	struct dev d[MAX_DEV];
	int ndev;
	uint64_t dt;
};

static void dev_open(struct sim *s, const struct xr_fabric_port_cfg *pc, size_t len, unsigned nqp)
{
	const struct dev_opts o = { .len = len, .nqp = nqp, .cq_depth = 4096, .sq_depth = 256, .rq_depth = 256 };

	dev_open_on(s->n.fab, pc, &o, &s->d[s->ndev]);
	s->n.host[s->n.nhosts++] = NULL;   /* closed with the device, not by net_free */
	s->ndev++;
}

/* RC QPs as the RC tests connect them (rc_harness.h), on the fabric's
 * timing: MTU 1024, a 4.2 ms ACK timeout of fabric time. */
static void qp_connect(struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx, uint8_t tclass,
		       uint32_t my_psn, uint32_t peer_psn)
{
	const struct h_opts o = { .mtu = XR_MTU_1024, .timeout = 10, .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1, .traffic_class = tclass };

	assert_int_equal(h_connect(q, peer, peer_ctx, &o, my_psn, peer_psn), 0);
}

static void sim_step(struct sim *s)
{
	s->n.now += s->dt;
	assert_true(xr_fabric_step(s->n.fab, s->n.now) >= 0);
	for (int i = 0; i < s->ndev; i++)
		xr_engine_progress(xr_context_engine(s->d[i].ctx));
}


static void sim_free(struct sim *s)
{
	for (int i = 0; i < s->ndev; i++)
		dev_close(&s->d[i]);
	s->n.nhosts = 0;
	net_free(&s->n);
}

static uint8_t pattern(unsigned sender, unsigned msg, size_t i)
{
	return (uint8_t)(sender * 73 + msg * 31 + i * 7 + (i >> 8));
}

/*
 * nsend senders, each sending nmsg SENDs of msg bytes to its own QP on the
 * receiver (device 0); every message lands in its own receive slot and is
 * checked byte for byte; completions must be exactly nmsg per QP, in order.
 */
static void incast(struct sim *s, unsigned nsend, unsigned nmsg, uint32_t msg, uint64_t max_ns)
{
	struct dev *r = &s->d[0];
	unsigned done_send[4] = { 0 }, done_recv[4] = { 0 };
	struct xr_wc wc[64];

	for (unsigned k = 0; k < nsend; k++)
		for (unsigned m = 0; m < nmsg; m++) {
			struct xr_sge sg = { (uintptr_t)r->buf + (size_t)(k * nmsg + m) * msg, msg, r->mr->lkey };
			struct xr_recv_wr w = { .wr_id = m, .sg_list = &sg, .num_sge = 1 };
			assert_int_equal(xr_post_recv(r->qp[k], &w, NULL), 0);
		}
	for (unsigned k = 0; k < nsend; k++) {
		struct dev *d = &s->d[1 + k];
		for (unsigned m = 0; m < nmsg; m++) {
			uint8_t *src = d->buf + (size_t)m * msg;
			for (size_t i = 0; i < msg; i++)
				src[i] = pattern(k, m, i);
			struct xr_sge sg = { (uintptr_t)src, msg, d->mr->lkey };
			struct xr_send_wr w = { .wr_id = m, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_SEND,
						.send_flags = XR_SEND_SIGNALED };
			assert_int_equal(xr_post_send(d->qp[0], &w, NULL), 0);
		}
	}
	uint64_t start = s->n.now;
	for (;;) {
		unsigned all = 0;
		sim_step(s);
		int got = xr_poll_cq(r->cq, 64, wc);
		for (int i = 0; i < got; i++) {
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			unsigned k;
			for (k = 0; k < nsend && xr_qp_num(r->qp[k]) != wc[i].qp_num; k++)
				;
			assert_true(k < nsend);
			assert_int_equal(wc[i].wr_id, done_recv[k]);   /* each message once, in order */
			assert_int_equal(wc[i].byte_len, msg);
			done_recv[k]++;
		}
		for (unsigned k = 0; k < nsend; k++) {
			got = xr_poll_cq(s->d[1 + k].cq, 64, wc);
			for (int i = 0; i < got; i++) {
				assert_int_equal(wc[i].status, XR_WC_SUCCESS);
				done_send[k]++;
			}
			all += done_send[k] + done_recv[k];
		}
		if (all == 2 * nsend * nmsg)
			break;
		if (s->n.now - start > max_ns) {
			for (unsigned k = 0; k < nsend; k++)
				fprintf(stderr, "sender %u: %u sent, %u received\n", k, done_send[k], done_recv[k]);
			xr_fabric_print_stats(s->n.fab, stderr);
			fail_msg("incast did not finish in %llu ns of fabric time", (unsigned long long)max_ns);
		}
	}
	/* Settle: nothing more arrives (no duplicate deliveries). */
	for (int i = 0; i < 2000; i++)
		sim_step(s);
	assert_int_equal(xr_poll_cq(r->cq, 64, wc), 0);
	for (unsigned k = 0; k < nsend; k++)
		for (unsigned m = 0; m < nmsg; m++) {
			const uint8_t *dst = r->buf + (size_t)(k * nmsg + m) * msg;
			for (size_t i = 0; i < msg; i++)
				if (dst[i] != pattern(k, m, i))
					fail_msg("sender %u message %u byte %zu: 0x%02x, want 0x%02x", k, m, i, dst[i],
						 pattern(k, m, i));
		}
	printf("incast %ux%ux%u B: %.3f ms of fabric time\n", nsend, nmsg, msg, (s->n.now - start) / 1e6);
}

static void sim_open(struct sim *s, const struct xr_fabric_cfg *fc, const struct xr_fabric_port_cfg *bottleneck,
		     const struct xr_fabric_port_cfg *edge, unsigned nsend, uint32_t msg, unsigned nmsg, uint8_t tclass)
{
	memset(s, 0, sizeof(*s));
	s->n.fab = xr_fabric_new(fc);
	assert_non_null(s->n.fab);
	s->dt = 250;
	dev_open(s, bottleneck, (size_t)nsend * nmsg * msg, nsend);
	for (unsigned k = 0; k < nsend; k++)
		dev_open(s, edge, (size_t)nmsg * msg, 1);
	for (unsigned k = 0; k < nsend; k++) {
		qp_connect(s->d[0].qp[k], s->d[1 + k].qp[0], s->d[1 + k].ctx, tclass, 100 + k, 0xFFFFF0 + k);
		qp_connect(s->d[1 + k].qp[0], s->d[0].qp[k], s->d[0].ctx, tclass, 0xFFFFF0 + k, 100 + k);
	}
}

static uint64_t drops_total(struct sim *s)
{
	uint64_t t = 0;
	for (unsigned p = 0; p < xr_fabric_nports(s->n.fab); p++) {
		struct xr_fabric_port_stats st = pstats(&s->n, p);
		for (int d = 0; d < XR_FABRIC_DROP_COUNT; d++)
			t += st.drops[d];
	}
	return t;
}

/* Two engines through the switch: a SEND stream and a READ back, verified. */
static void test_engines_through_switch(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 3 };
	struct xr_fabric_port_cfg pc = { .rate_bps = 10 * GBPS };
	struct sim s;
	(void)state;

	sim_open(&s, &fc, &pc, &pc, 1, 8192, 32, 0);
	incast(&s, 1, 32, 8192, 50000000);
	assert_int_equal(drops_total(&s), 0);
	struct xr_fabric_port_stats st = pstats(&s.n, 0);
	assert_true(st.tx_bytes > 32 * 8192);
	assert_int_equal(st.flooded, 0);
	assert_int_equal(dev_counter(&s.d[1], XR_CNT_RETRANSMITS), 0);

	/* READ the receiver's buffer back into the sender and compare. */
	struct dev *a = &s.d[1], *b = &s.d[0];
	memset(a->buf, 0, a->len);
	struct xr_sge sg = { (uintptr_t)a->buf, (uint32_t)a->len, a->mr->lkey };
	struct xr_send_wr w = { .wr_id = 77, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
				.send_flags = XR_SEND_SIGNALED };
	w.wr.rdma.remote_addr = (uintptr_t)b->buf;
	w.wr.rdma.rkey = b->mr->rkey;
	assert_int_equal(xr_post_send(a->qp[0], &w, NULL), 0);
	struct xr_wc wc;
	int got = 0;
	for (int i = 0; i < 200000 && !got; i++) {
		sim_step(&s);
		got = xr_poll_cq(a->cq, 1, &wc);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, XR_WC_SUCCESS);
	assert_memory_equal(a->buf, b->buf, a->len);
	sim_free(&s);
}

/* 4 senders into one port with a small queue, no PFC: tail drops and
 * go-back-N retransmissions, yet every message arrives exactly once. ECT(0)
 * traffic is marked on the way, and the receiver counts every mark. */
static void test_incast_tail_drop(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 4 };
	struct xr_fabric_port_cfg edge = { .rate_bps = 10 * GBPS };
	struct xr_fabric_port_cfg bottleneck = {
		.rate_bps = 10 * GBPS, .queue_limit = 12 * 1024,
		.ecn = { .enable = true, .kmin = 2048, .kmax = 8192, .pmax = 0.2 },
	};
	struct sim s;
	(void)state;

	sim_open(&s, &fc, &bottleneck, &edge, 4, 16384, 16, 0x02);
	incast(&s, 4, 16, 16384, 500000000);
	struct xr_fabric_port_stats st = pstats(&s.n, 0);
	uint64_t rexmit = 0;
	for (int k = 1; k <= 4; k++)
		rexmit += dev_counter(&s.d[k], XR_CNT_RETRANSMITS);
	printf("tail drops %llu, retransmissions %llu, ECN marks %llu (receiver counted %llu), qlen max %llu p99 %llu\n",
	       (unsigned long long)st.drops[XR_FABRIC_DROP_QUEUE_FULL], (unsigned long long)rexmit,
	       (unsigned long long)st.ecn_marked, (unsigned long long)dev_counter(&s.d[0], XR_CNT_ECN_MARKED),
	       (unsigned long long)st.qlen_max, (unsigned long long)st.qlen_p99);
	assert_true(st.drops[XR_FABRIC_DROP_QUEUE_FULL] > 0);
	assert_true(rexmit > 0);
	assert_true(st.qlen_max <= 12 * 1024);
	assert_true(st.ecn_marked > 0);
	assert_int_equal(dev_counter(&s.d[0], XR_CNT_ECN_MARKED), st.ecn_marked);
	sim_free(&s);
}

/* The same incast with PFC on the senders' ports: no drop anywhere, PFC
 * frames sent toward the senders and honoured by their MACs. */
static void test_incast_pfc(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 5, .prio_src = XR_FABRIC_PRIO_DSCP };
	struct xr_fabric_port_cfg edge = {
		.rate_bps = 10 * GBPS,
		.pfc = { .prio_mask = 1u << 3, .xoff = 8192, .xon = 4096, .headroom = 16384 },
	};
	struct xr_fabric_port_cfg bottleneck = { .rate_bps = 10 * GBPS, .queue_limit = 12 * 1024 };
	struct sim s;
	(void)state;

	sim_open(&s, &fc, &bottleneck, &edge, 4, 16384, 16, 26 << 2);
	incast(&s, 4, 16, 16384, 500000000);
	uint64_t pfc = 0, xon = 0, rexmit = 0, host_pfc = 0;
	for (unsigned p = 1; p <= 4; p++) {
		struct xr_fabric_port_stats st = pstats(&s.n, p);
		struct xr_fabric_host_stats hs;
		pfc += st.pfc_sent[3];
		xon += st.pfc_xon_sent[3];
		assert_int_equal(xr_fabric_host_stats(s.d[p].link, &hs), 0);
		host_pfc += hs.pfc_rcvd;
		rexmit += dev_counter(&s.d[p], XR_CNT_RETRANSMITS);
	}
	printf("PFC: %llu XOFF, %llu XON sent; hosts took %llu; drops %llu; retransmissions %llu; qlen max %llu\n",
	       (unsigned long long)pfc, (unsigned long long)xon, (unsigned long long)host_pfc,
	       (unsigned long long)drops_total(&s), (unsigned long long)rexmit,
	       (unsigned long long)pstats(&s.n, 0).qlen_max);
	assert_int_equal(drops_total(&s), 0);
	assert_true(pfc > 0);
	assert_true(xon > 0);
	assert_int_equal(host_pfc, pfc + xon);
	assert_int_equal(rexmit, 0);
	sim_free(&s);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engines_through_switch),
		cmocka_unit_test(test_incast_tail_drop),
		cmocka_unit_test(test_incast_pfc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
