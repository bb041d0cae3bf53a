/* SPDX-License-Identifier: MIT */
/*
 * The switch model (src/fabric): line rate, PAUSE/PFC honouring on the
 * fabric's clock, RED ECN marking (statistics with bounds), and real
 * xroce engines talking through it: data verified, a 4-to-1 incast with
 * tail drops and go-back-N recovery, and the same incast lossless under
 * PFC. Everything runs on one thread and a simulated clock: the engines'
 * timers read the fabric's clock, so runs are deterministic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/engine.h"
#include "xroce/fabric.h"
#include "xroce/opcodes.h"
#include "xroce/regio.h"
#include "xroce/verbs.h"
#include "xroce/wire.h"

#define GBPS 1000000000ull

/* ---- synthetic hosts: the test plays the NIC ---- */

struct net {
	struct xr_fabric *fab;
	struct xr_link *host[8];
	int nhosts;
	uint64_t now;
};

static int net_host(struct net *n, const struct xr_fabric_port_cfg *pc, bool unpaced, const char *addr)
{
	struct xr_fabric_host_cfg hc = { .unpaced = unpaced, .addr = addr, .depth = 1024 };
	int port = xr_fabric_attach_host(n->fab, pc, &hc, &n->host[n->nhosts]);

	assert_true(port == n->nhosts);
	return n->nhosts++;
}

static void net_free(struct net *n)
{
	for (int i = 0; i < n->nhosts; i++)
		xr_link_close(n->host[i]);
	xr_fabric_free(n->fab);
}

/* A RoCE SEND frame from host a to host b (IPv4 or IPv6) with the given
 * traffic class; payload bytes make it len long at least roughly. */
static uint16_t roce_frame(struct net *n, int a, int b, uint8_t tclass, bool ipv6, uint32_t payload, uint8_t *buf)
{
	static uint8_t pay[4096];
	struct xr_pkt p;
	ssize_t len;

	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	memcpy(p.smac, n->host[a]->mac, 6);
	memcpy(p.dmac, n->host[b]->mac, 6);
	p.ip_version = ipv6 ? 6 : 4;
	xr_gid_parse(&p.sgid, ipv6 ? "fd00::1" : "10.0.0.1");
	xr_gid_parse(&p.dgid, ipv6 ? "fd00::2" : "10.0.0.2");
	p.traffic_class = tclass;
	p.dqpn = 0x11;
	p.payload = pay;
	p.payload_len = payload;
	len = xr_pkt_build(&p, buf, XR_MAX_FRAME);
	assert_true(len > 0);
	return (uint16_t)len;
}

static void host_send(struct net *n, int h, const uint8_t *d, uint16_t len)
{
	struct xr_frame *f = xr_link_frame_alloc(n->host[h]);

	assert_non_null(f);
	memcpy(f->data, d, len);
	f->len = len;
	assert_int_equal(xr_link_send(n->host[h], &f, 1), 1);
}

/* The same, when the host's MAC may refuse (paused by the switch's PFC). */
static bool host_try_send(struct net *n, int h, const uint8_t *d, uint16_t len)
{
	struct xr_frame *f = xr_link_frame_alloc(n->host[h]);

	assert_non_null(f);
	memcpy(f->data, d, len);
	f->len = len;
	if (xr_link_send(n->host[h], &f, 1) == 1)
		return true;
	xr_link_frame_free(n->host[h], f);
	return false;
}

/* Drains what host h received; calls fn on each frame when given. */
static unsigned host_drain(struct net *n, int h, void (*fn)(void *, const struct xr_frame *), void *arg)
{
	struct xr_frame *f[64];
	unsigned total = 0;
	int got;

	while ((got = xr_link_recv(n->host[h], f, 64)) > 0) {
		for (int i = 0; i < got; i++) {
			if (fn)
				fn(arg, f[i]);
			xr_link_frame_free(n->host[h], f[i]);
		}
		total += (unsigned)got;
	}
	return total;
}

static struct xr_fabric_port_stats pstats(struct net *n, unsigned port)
{
	struct xr_fabric_port_stats s;
	assert_int_equal(xr_fabric_port_stats(n->fab, port, &s), 0);
	return s;
}

static uint64_t xr_fab_test_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 16;
}

/* ---- line rate ---- */

/* A 1 Gb/s port passes 1 Gb/s of wire bytes over 10 ms of fabric time,
 * however unevenly the clock is advanced. */
static void test_line_rate(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 1 };
	struct xr_fabric_port_cfg fast = { .rate_bps = 10 * GBPS }, slow = { .rate_bps = GBPS };
	struct net n = { .fab = xr_fabric_new(&fc) };
	uint8_t frame[XR_MAX_FRAME];
	uint64_t rng = 7, wire0, end = 10000000;
	(void)state;

	assert_non_null(n.fab);
	net_host(&n, &fast, true, NULL);
	net_host(&n, &slow, false, NULL);
	uint16_t len = roce_frame(&n, 0, 1, 0, false, 1000, frame);
	for (n.now = 0; n.now <= end;) {
		/* Keep the bottleneck's queue busy (the rest is tail-dropped). */
		for (int i = 0; i < 4; i++)
			host_send(&n, 0, frame, len);
		assert_true(xr_fabric_step(n.fab, n.now) >= 0);
		host_drain(&n, 1, NULL, NULL);
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		n.now += 300 + (rng >> 33) % 7000;   /* 0.3 .. 7.3 us */
	}
	wire0 = pstats(&n, 1).tx_wire_bytes;
	double want = 10e-3 * 1e9 / 8;
	printf("1 Gb/s port, 10 ms: %llu wire bytes (%.4f of line rate)\n", (unsigned long long)wire0, wire0 / want);
	assert_true(fabs((double)wire0 - want) <= 0.01 * want);
	assert_true(pstats(&n, 1).drops[XR_FABRIC_DROP_QUEUE_FULL] > 0);
	assert_true(pstats(&n, 1).qlen_p99 > 0);
	/* Unlimited ports send at once. */
	net_free(&n);
}

/* ---- PAUSE and PFC received ---- */

static void test_pause_honoured(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 1, .prio_src = XR_FABRIC_PRIO_DSCP };
	struct xr_fabric_port_cfg fast = { .rate_bps = 10 * GBPS }, slow = { .rate_bps = GBPS };
	struct net n = { .fab = xr_fabric_new(&fc) };
	uint8_t frame[XR_MAX_FRAME], frame3[XR_MAX_FRAME], ctl[64];
	uint64_t t_pause = 100000, pause = xr_fabric_quanta_ns(1000, GBPS);
	(void)state;

	assert_int_equal(pause, 512000);   /* 1000 x 512 bit times at 1 Gb/s */
	assert_int_equal(xr_fabric_ns_quanta(512000, GBPS), 1000);
	assert_int_equal(xr_fabric_quanta_ns(0xFFFF, 10 * GBPS), 3355392);
	net_host(&n, &fast, true, NULL);
	net_host(&n, &slow, true, NULL);
	uint16_t len = roce_frame(&n, 0, 1, 0, false, 200, frame);
	for (int i = 0; i < 400; i++)
		host_send(&n, 0, frame, len);
	xr_fabric_step(n.fab, 0);
	/* 802.3x PAUSE from the receiving host at t_pause: every priority. */
	for (n.now = 1000; n.now <= 2000000; n.now += 1000) {
		if (n.now == t_pause) {
			xr_fabric_build_pause(ctl, n.host[1]->mac, 1000);
			host_send(&n, 1, ctl, 60);
		}
		uint64_t before = pstats(&n, 1).tx_frames;
		xr_fabric_step(n.fab, n.now);
		uint64_t sent = pstats(&n, 1).tx_frames - before;
		host_drain(&n, 1, NULL, NULL);
		if (n.now >= t_pause && n.now < t_pause + pause)
			assert_int_equal(sent, 0);
		if (n.now == t_pause + pause)
			assert_true(sent == 1);   /* resumes exactly when the pause ends */
	}
	struct xr_fabric_port_stats s = pstats(&n, 1);
	assert_int_equal(s.pause_rcvd, 1);
	assert_int_equal(s.paused_ns[0], pause);
	assert_int_equal(s.paused_ns[7], pause);
	assert_int_equal(s.drops[XR_FABRIC_DROP_BAD_MAC_CTRL], 0);

	/* PFC for priority 3 only: DSCP 26 frames stop, DSCP 0 frames go on;
	 * then a zero time resumes priority 3 before its time is up. */
	uint16_t len3 = roce_frame(&n, 0, 1, 26 << 2, false, 200, frame3);
	xr_fabric_build_pfc(ctl, n.host[1]->mac, 1u << 3, 0xFFFF);
	host_send(&n, 1, ctl, 60);
	n.now += 1000;
	xr_fabric_step(n.fab, n.now);
	for (int i = 0; i < 10; i++) {
		host_send(&n, 0, frame3, len3);
		host_send(&n, 0, frame, len);
	}
	n.now += 1000;
	xr_fabric_step(n.fab, n.now);
	for (int i = 0; i < 100; i++) {
		n.now += 10000;
		xr_fabric_step(n.fab, n.now);
	}
	host_drain(&n, 1, NULL, NULL);
	assert_int_equal(xr_fabric_queue_bytes(n.fab, 1, 0), 0);
	assert_int_equal(xr_fabric_queue_bytes(n.fab, 1, 3), 10u * len3);
	assert_int_equal(pstats(&n, 1).pfc_rcvd[3], 1);
	xr_fabric_build_pfc(ctl, n.host[1]->mac, 1u << 3, 0);
	host_send(&n, 1, ctl, 60);
	for (int i = 0; i < 100; i++) {
		n.now += 10000;
		xr_fabric_step(n.fab, n.now);
	}
	assert_int_equal(xr_fabric_queue_bytes(n.fab, 1, 3), 0);
	assert_int_equal(pstats(&n, 1).pfc_rcvd[3], 1);   /* XON is not counted as a pause */
	/* A truncated PFC frame and an unknown MAC control opcode are counted drops. */
	xr_fabric_build_pfc(ctl, n.host[1]->mac, 1u << 3, 5);
	host_send(&n, 1, ctl, 20);
	ctl[15] = 0x77;
	host_send(&n, 1, ctl, 60);
	xr_fabric_step(n.fab, ++n.now);
	assert_int_equal(pstats(&n, 1).drops[XR_FABRIC_DROP_BAD_MAC_CTRL], 2);
	net_free(&n);
}

/* ---- ECN ---- */

#ifndef ECN_ROUNDS
#define ECN_ROUNDS 300
#endif
#define ECN_BURST 40

struct marks {
	unsigned pos;
	unsigned ce[ECN_BURST];
	unsigned bad;      /* frames that no longer parse (checksum, ICRC) */
};

static void count_mark(void *arg, const struct xr_frame *f)
{
	struct marks *m = arg;
	struct xr_pkt p;

	if (xr_pkt_parse(f->data, f->len, 0, 0, &p) != XR_PARSE_OK)
		m->bad++;
	else if ((p.traffic_class & 3) == 3)
		m->ce[m->pos]++;
	m->pos++;
}

/* Bursts of ECN_BURST frames into a port too slow to send a second one
 * within the burst: frame i finds i frames ahead of it. */
static void ecn_rounds(struct net *n, uint8_t tclass, bool ipv6, uint32_t payload, struct marks *m)
{
	uint8_t frame[XR_MAX_FRAME];
	uint16_t len = roce_frame(n, 0, 1, tclass, ipv6, payload, frame);

	memset(m, 0, sizeof(*m));
	for (int r = 0; r < ECN_ROUNDS; r++) {
		for (int i = 0; i < ECN_BURST; i++)
			host_send(n, 0, frame, len);
		xr_fabric_step(n->fab, n->now);
		m->pos = 0;
		for (int k = 0; k < 10 && xr_fabric_queue_bytes(n->fab, 1, -1); k++) {
			n->now += 1000000000;
			xr_fabric_step(n->fab, n->now);
			host_drain(n, 1, count_mark, m);
		}
		host_drain(n, 1, count_mark, m);
		assert_int_equal(m->pos, ECN_BURST);
	}
}

static void test_ecn_marking(void **state)
{
	struct xr_fabric_ecn_cfg e = { .enable = true, .kmin = 1000, .kmax = 3000, .pmax = 0.2 };
	(void)state;

	/* The curve itself. */
	assert_true(xr_fabric_ecn_prob(&e, 1000) == 0);
	assert_true(fabs(xr_fabric_ecn_prob(&e, 2000) - 0.1) < 1e-12);
	assert_true(fabs(xr_fabric_ecn_prob(&e, 3000) - 0.2) < 1e-12);
	assert_true(xr_fabric_ecn_prob(&e, 3001) == 1);

	for (int v6 = 0; v6 < 2; v6++) {
		struct xr_fabric_cfg fc = { .seed = 42 + (uint64_t)v6 };
		struct xr_fabric_port_cfg fast = { .rate_bps = 10 * GBPS }, slow = { .rate_bps = 1000000 };
		struct net n = { .fab = xr_fabric_new(&fc) };
		uint8_t probe[XR_MAX_FRAME];
		struct marks m;

		net_host(&n, &fast, true, NULL);
		uint16_t L = roce_frame(&n, 0, 0, 0, v6, 100, probe);
		slow.ecn = (struct xr_fabric_ecn_cfg){ .enable = true, .kmin = 10 * L, .kmax = 30 * L, .pmax = 0.2 };
		net_host(&n, &slow, true, NULL);

		/* ECT(0) over IPv4, ECT(1) over IPv6. */
		ecn_rounds(&n, v6 ? 0x01 : 0x02, v6, 100, &m);
		assert_int_equal(m.bad, 0);
		double expect = 0, var = 0;
		for (int i = 0; i < ECN_BURST; i++) {
			double p = xr_fabric_ecn_prob(&slow.ecn, (double)i * L);
			if (i <= 10)
				assert_int_equal(m.ce[i], 0);            /* at or below Kmin: never */
			else if (i > 30)
				assert_int_equal(m.ce[i], ECN_ROUNDS);   /* above Kmax: always */
			else {
				expect += p * ECN_ROUNDS;
				var += p * (1 - p) * ECN_ROUNDS;
			}
		}
		unsigned ramp = 0, low = 0, high = 0;
		for (int i = 11; i <= 30; i++)
			ramp += m.ce[i];
		for (int i = 11; i <= 20; i++)
			low += m.ce[i];
		for (int i = 21; i <= 30; i++)
			high += m.ce[i];
		/* At Kmax: Pmax, within 5 sigma; the ramp as a whole within 5 sigma. */
		double s30 = sqrt(ECN_ROUNDS * 0.2 * 0.8);
		printf("ECN %s: at Kmax %u/%d marked (Pmax 0.2), ramp %u (expected %.1f)\n", v6 ? "IPv6" : "IPv4",
		       m.ce[30], ECN_ROUNDS, ramp, expect);
		assert_true(fabs(m.ce[30] - 0.2 * ECN_ROUNDS) <= 5 * s30);
		assert_true(fabs(ramp - expect) <= 5 * sqrt(var));
		assert_true(low < high);
		struct xr_fabric_port_stats s = pstats(&n, 1);
		assert_int_equal(s.ecn_marked, ramp + 9u * ECN_ROUNDS);

		/* Not-ECT frames are never marked, however long the queue. */
		ecn_rounds(&n, 26 << 2, v6, 100, &m);
		for (int i = 0; i < ECN_BURST; i++)
			assert_int_equal(m.ce[i], 0);
		assert_int_equal(pstats(&n, 1).ecn_marked, s.ecn_marked);
		assert_true(pstats(&n, 1).ecn_not_ect >= 9u * ECN_ROUNDS);
		net_free(&n);
	}

	/* RED's average (weight 0.05): it lags the queue, so marks start later
	 * and frames above Kmax are not all marked; it decays while the queue
	 * is idle, so every burst starts from an average near 0. */
	struct xr_fabric_cfg fc = { .seed = 77 };
	struct xr_fabric_port_cfg fast = { .rate_bps = 10 * GBPS }, slow = { .rate_bps = 1000000 };
	struct net n = { .fab = xr_fabric_new(&fc) };
	uint8_t probe[XR_MAX_FRAME];
	struct marks m;
	const double w = 0.05;

	net_host(&n, &fast, true, NULL);
	uint16_t L = roce_frame(&n, 0, 0, 0, false, 100, probe);
	slow.ecn = (struct xr_fabric_ecn_cfg){ .enable = true, .kmin = 10 * L, .kmax = 30 * L, .pmax = 0.2, .avg_weight = w };
	net_host(&n, &slow, true, NULL);
	ecn_rounds(&n, 0x02, false, 100, &m);
	double avg = 0, expect = 0, var = 0;
	unsigned total = 0;
	for (int i = 0; i < ECN_BURST; i++) {
		avg = (1 - w) * avg + w * i * L;
		double p = xr_fabric_ecn_prob(&slow.ecn, avg);
		expect += p * ECN_ROUNDS;
		var += p * (1 - p) * ECN_ROUNDS;
		total += m.ce[i];
		if (p == 0)
			assert_int_equal(m.ce[i], 0);
	}
	printf("ECN averaged (w %.2f): %u marked, expected %.1f; at the last position %u/%d\n", w, total, expect,
	       m.ce[ECN_BURST - 1], ECN_ROUNDS);
	assert_true(fabs(total - expect) <= 5 * sqrt(var) + 1);
	assert_true(m.ce[ECN_BURST - 1] < ECN_ROUNDS);
	net_free(&n);
}

/* ---- engines through the switch ---- */

#define MAX_DEV 5

struct dev {
	struct xr_link *link;
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	uint8_t *buf;
	size_t len;
	struct xr_mr *mr;
	struct xr_qp *qp[4];
	unsigned nqp;
};

struct sim {
	struct net n;
	struct dev d[MAX_DEV];
	int ndev;
	uint64_t dt;
};

static void dev_open(struct sim *s, const struct xr_fabric_port_cfg *pc, size_t len, unsigned nqp)
{
	struct dev *d = &s->d[s->ndev];
	char addr[32];
	struct xr_fabric_host_cfg hc = { .addr = addr };
	struct xr_device_opts o = { .addr = addr, .progress = XR_PROGRESS_INLINE };
	struct xr_qp_init_attr ia = { 0 };

	snprintf(addr, sizeof(addr), "10.0.0.%d", s->ndev + 1);
	assert_int_equal(xr_fabric_attach_host(s->n.fab, pc, &hc, &d->link), s->ndev);
	s->n.host[s->n.nhosts++] = NULL;   /* closed with the device, not by net_free */
	d->ctx = xr_open_device(d->link, &o);
	assert_non_null(d->ctx);
	/* The engine's timers run on the fabric's clock. */
	xr_engine_set_clock(xr_context_engine(d->ctx), xr_fabric_clock, s->n.fab);
	d->pd = xr_alloc_pd(d->ctx);
	d->cq = xr_create_cq(d->ctx, 4096);
	d->len = len;
	d->buf = calloc(1, len);
	assert_non_null(d->buf);
	d->mr = xr_reg_mr(d->pd, d->buf, len, 0xF | XR_ACCESS_LOCAL_WRITE);
	assert_non_null(d->mr);
	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = 256;
	ia.cap.max_recv_wr = 256;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	d->nqp = nqp;
	for (unsigned i = 0; i < nqp; i++) {
		d->qp[i] = xr_create_qp(d->pd, &ia);
		assert_non_null(d->qp[i]);
	}
	s->ndev++;
}

static void qp_connect(struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx, uint8_t tclass,
		       uint32_t my_psn, uint32_t peer_psn)
{
	struct xr_qp_attr a = { 0 };

	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = 0xE;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS), 0);
	a.qp_state = XR_QPS_RTR;
	a.path_mtu = XR_MTU_1024;
	a.dest_qp_num = xr_qp_num(peer);
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = tclass;
	xr_query_gid(peer_ctx, &a.ah_attr.grh.dgid);
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
					     XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER), 0);
	a.qp_state = XR_QPS_RTS;
	a.timeout = 10;        /* 4.2 ms of fabric time */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 16;
	assert_int_equal(xr_modify_qp(q, &a, XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
					     XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC), 0);
}

static void sim_step(struct sim *s)
{
	s->n.now += s->dt;
	assert_true(xr_fabric_step(s->n.fab, s->n.now) >= 0);
	for (int i = 0; i < s->ndev; i++)
		xr_engine_progress(xr_context_engine(s->d[i].ctx));
}

static uint64_t counter(struct dev *d, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(d->ctx), c, &v);
	return v;
}

static void sim_free(struct sim *s)
{
	for (int i = 0; i < s->ndev; i++) {
		struct dev *d = &s->d[i];
		for (unsigned k = 0; k < d->nqp; k++)
			xr_destroy_qp(d->qp[k]);
		xr_dereg_mr(d->mr);
		xr_destroy_cq(d->cq);
		xr_dealloc_pd(d->pd);
		xr_close_device(d->ctx);
		xr_link_close(d->link);
		free(d->buf);
	}
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
	assert_int_equal(counter(&s.d[1], XR_CNT_RETRANSMITS), 0);

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
		rexmit += counter(&s.d[k], XR_CNT_RETRANSMITS);
	printf("tail drops %llu, retransmissions %llu, ECN marks %llu (receiver counted %llu), qlen max %llu p99 %llu\n",
	       (unsigned long long)st.drops[XR_FABRIC_DROP_QUEUE_FULL], (unsigned long long)rexmit,
	       (unsigned long long)st.ecn_marked, (unsigned long long)counter(&s.d[0], XR_CNT_ECN_MARKED),
	       (unsigned long long)st.qlen_max, (unsigned long long)st.qlen_p99);
	assert_true(st.drops[XR_FABRIC_DROP_QUEUE_FULL] > 0);
	assert_true(rexmit > 0);
	assert_true(st.qlen_max <= 12 * 1024);
	assert_true(st.ecn_marked > 0);
	assert_int_equal(counter(&s.d[0], XR_CNT_ECN_MARKED), st.ecn_marked);
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
		rexmit += counter(&s.d[p], XR_CNT_RETRANSMITS);
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

/* ---- bad input ---- */

static void test_bad_input(void **state)
{
	struct xr_fabric_cfg bad = { .default_prio = 9 };
	struct xr_fabric_port_cfg pc = { 0 };
	struct net n = { 0 };
	uint8_t frame[XR_MAX_FRAME];
	(void)state;

	assert_null(xr_fabric_new(&bad));
	n.fab = xr_fabric_new(NULL);
	assert_non_null(n.fab);
	pc.ecn = (struct xr_fabric_ecn_cfg){ .enable = true, .kmin = 10, .kmax = 5 };
	struct xr_link *h;
	assert_int_equal(xr_fabric_attach_host(n.fab, &pc, NULL, &h), -EINVAL);
	pc.ecn.enable = false;
	pc.pfc = (struct xr_fabric_pfc_cfg){ .prio_mask = 1, .xoff = 100, .xon = 200 };
	assert_int_equal(xr_fabric_attach_host(n.fab, &pc, NULL, &h), -EINVAL);
	memset(&pc, 0, sizeof(pc));
	net_host(&n, &pc, true, NULL);
	net_host(&n, &pc, true, NULL);
	assert_int_equal(xr_fabric_add_mac(n.fab, (const uint8_t[6]){ 1, 2, 3, 4, 5, 6 }, 0), -EINVAL);
	assert_int_equal(xr_fabric_add_mac(n.fab, (const uint8_t[6]){ 2, 2, 3, 4, 5, 6 }, 9), -EINVAL);

	uint16_t len = roce_frame(&n, 0, 1, 0, false, 64, frame);
	host_send(&n, 0, frame, 10);                 /* runt */
	frame[6] = 0x01;
	host_send(&n, 0, frame, len);                /* multicast source */
	frame[6] = 0x02;
	memcpy(frame, (const uint8_t[6]){ 0x01, 0x80, 0xC2, 0, 0, 0x0E }, 6);
	host_send(&n, 0, frame, len);                /* LLDP's group: link-local */
	memcpy(frame, n.host[0]->mac, 6);
	host_send(&n, 0, frame, len);                /* to itself: hairpin */
	memset(frame, 0xFF, 6);
	host_send(&n, 0, frame, len);                /* broadcast: flooded to the other port */
	xr_fabric_step(n.fab, 1);
	struct xr_fabric_port_stats s = pstats(&n, 0);
	assert_int_equal(s.drops[XR_FABRIC_DROP_RUNT], 1);
	assert_int_equal(s.drops[XR_FABRIC_DROP_BAD_SRC_MAC], 1);
	assert_int_equal(s.drops[XR_FABRIC_DROP_LINK_LOCAL], 1);
	assert_int_equal(s.drops[XR_FABRIC_DROP_HAIRPIN], 1);
	assert_int_equal(s.flooded, 1);
	assert_int_equal(host_drain(&n, 1, NULL, NULL), 1);
	for (int d = 0; d < XR_FABRIC_DROP_COUNT; d++)
		assert_non_null(xr_fabric_drop_name((enum xr_fabric_drop)d));
	xr_fabric_print_stats(n.fab, stdout);
	net_free(&n);
}


/* Random and half-formed frames (tags with nothing behind, IP headers cut
 * short, MAC control of every length) never crash the switch, and every
 * frame is either dropped for a named reason or forwarded: once all is
 * sent the buffer is empty. */
static void test_garbage_frames(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 9, .prio_src = XR_FABRIC_PRIO_DSCP };
	struct xr_fabric_port_cfg pc = { .rate_bps = 10 * GBPS, .queue_limit = 64 * 1024,
					 .ecn = { .enable = true, .kmin = 0, .kmax = 1, .pmax = 1 },
					 .pfc = { .prio_mask = 0x0F, .xoff = 16384, .xon = 8192, .headroom = 8192 } };
	struct net n = { .fab = xr_fabric_new(&fc) };
	uint8_t frame[XR_MAX_FRAME];
	uint64_t rng = 12345;
	static const uint16_t types[] = { 0x0800, 0x86DD, 0x8100, 0x88A8, 0x8808, 0x0806, 0x1234 };
	unsigned refused = 0;
	(void)state;

	for (int i = 0; i < 3; i++)
		net_host(&n, &pc, true, NULL);
	for (int round = 0; round < 200; round++) {
		for (int k = 0; k < 50; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			uint16_t len = (uint16_t)((rng >> 40) % (k & 1 ? 80 : XR_MAX_FRAME + 1));
			for (uint16_t b = 0; b < len; b++)
				frame[b] = (uint8_t)(xr_fab_test_rand(&rng) >> 24);
			if (len >= 14) {
				memcpy(frame, n.host[(rng >> 20) % 3]->mac, 6);
				if (rng & 0x100)
					frame[0] |= 1;   /* group: flooded */
				frame[6] = 0x02;
				frame[12] = (uint8_t)(types[(rng >> 8) % 7] >> 8);
				frame[13] = (uint8_t)types[(rng >> 8) % 7];
				if (len >= 18 && (frame[12] << 8 | frame[13]) == 0x8100) {
					frame[16] = 0x08;
					frame[17] = (rng & 0x200) ? 0x00 : 0xDD;
				}
				if (len >= 15 && frame[12] == 0x08 && frame[13] == 0x00)
					frame[14] = (uint8_t)(0x40 | ((rng >> 12) & 0xF));
			}
			refused += !host_try_send(&n, (int)((rng >> 30) % 3), frame, len);
		}
		n.now += 5000;
		assert_true(xr_fabric_step(n.fab, n.now) >= 0);
		for (int h = 0; h < 3; h++)
			host_drain(&n, h, NULL, NULL);
	}
	for (int k = 0; k < 100; k++) {
		n.now += 1000000;
		xr_fabric_step(n.fab, n.now);
		for (int h = 0; h < 3; h++)
			host_drain(&n, h, NULL, NULL);
	}
	for (unsigned p = 0; p < 3; p++)
		assert_int_equal(xr_fabric_queue_bytes(n.fab, p, -1), 0);
	printf("%u frames refused by paused host MACs\n", refused);
	xr_fabric_print_stats(n.fab, stdout);
	net_free(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_rate),
		cmocka_unit_test(test_pause_honoured),
		cmocka_unit_test(test_ecn_marking),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_garbage_frames),
		cmocka_unit_test(test_engines_through_switch),
		cmocka_unit_test(test_incast_tail_drop),
		cmocka_unit_test(test_incast_pfc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
