/* SPDX-License-Identifier: MIT */
/*
 * The switch model (src/fabric) with the test playing the NICs: line rate,
 * PAUSE/PFC honouring on the fabric's clock, RED ECN marking (statistics
 * with bounds), bad and random frames. Engines through the switch are in
 * test_fabric_engines.c.
 */
#include "fabric_harness.h"


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
			xr_build_pause_frame(ctl, n.host[1]->mac, 1000);
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
	xr_build_pfc_frame(ctl, n.host[1]->mac, 1u << 3, 0xFFFF);
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
	xr_build_pfc_frame(ctl, n.host[1]->mac, 1u << 3, 0);
	host_send(&n, 1, ctl, 60);
	for (int i = 0; i < 100; i++) {
		n.now += 10000;
		xr_fabric_step(n.fab, n.now);
	}
	assert_int_equal(xr_fabric_queue_bytes(n.fab, 1, 3), 0);
	assert_int_equal(pstats(&n, 1).pfc_rcvd[3], 1);   /* XON is not counted as a pause */
	/* A truncated PFC frame and an unknown MAC control opcode are counted drops. */
	xr_build_pfc_frame(ctl, n.host[1]->mac, 1u << 3, 5);
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


/* ---- PFC injected by a caller (xr_fabric_send_pfc) ---- */

struct pfc_seen {
	unsigned frames;
	uint8_t mask;
	uint16_t quanta3;
};

static void pfc_check(void *arg, const struct xr_frame *f)
{
	struct pfc_seen *s = arg;

	assert_int_equal(f->len, 60);
	assert_memory_equal(f->data, ((const uint8_t[6]){ 0x01, 0x80, 0xC2, 0, 0, 1 }), 6);
	assert_int_equal(f->data[12] << 8 | f->data[13], 0x8808);
	assert_int_equal(f->data[14] << 8 | f->data[15], 0x0101);
	s->mask = f->data[17];
	s->quanta3 = (uint16_t)(f->data[18 + 6] << 8 | f->data[18 + 7]);
	s->frames++;
}

/* The frame reaches the host on the port (an unpaced host that ignores
 * pauses hands it on, as to an engine), counted as injected, not as the
 * switch's own XOFF; a host MAC that honours pauses holds its sends. */
static void test_pfc_injected(void **state)
{
	struct xr_fabric_cfg fc = { .seed = 1, .prio_src = XR_FABRIC_PRIO_DSCP };
	struct xr_fabric_port_cfg pc = { .rate_bps = 10 * GBPS };
	struct xr_fabric_host_cfg hc = { .ignore_pause = true };
	struct net n = { .fab = xr_fabric_new(&fc) };
	struct pfc_seen seen = { 0 };
	struct xr_fabric_host_stats hs;
	uint8_t frame[XR_MAX_FRAME];
	(void)state;

	assert_non_null(n.fab);
	net_host(&n, &pc, false, NULL);
	assert_int_equal(xr_fabric_attach_host(n.fab, &pc, &hc, &n.host[n.nhosts]), 1);
	n.nhosts++;
	assert_int_equal(xr_fabric_send_pfc(n.fab, 1, 1u << 3, 1000), 0);
	assert_int_equal(xr_fabric_send_pfc(n.fab, 1, 1u << 3, 0), 0);
	assert_int_equal(xr_fabric_send_pfc(n.fab, 2, 1u << 3, 1000), -EINVAL);   /* no such port */
	assert_int_equal(xr_fabric_send_pfc(n.fab, 1, 0, 1000), -EINVAL);         /* no priority */
	assert_int_equal(xr_fabric_send_pfc(NULL, 0, 1, 1), -EINVAL);
	assert_true(xr_fabric_step(n.fab, 1000) >= 0);
	assert_int_equal(host_drain(&n, 1, pfc_check, &seen), 2);   /* handed on: the host ignores pauses */
	assert_int_equal(seen.mask, 1u << 3);
	assert_int_equal(seen.quanta3, 0);                          /* the last one, XON */
	struct xr_fabric_port_stats st = pstats(&n, 1);
	assert_int_equal(st.pfc_injected[3], 1);
	assert_int_equal(st.pfc_xon_injected[3], 1);
	assert_int_equal(st.pfc_sent[3], 0);
	assert_int_equal(xr_fabric_host_stats(n.host[1], &hs), 0);
	assert_int_equal(hs.pfc_rcvd, 2);

	/* Host 0 honours pauses: an XOFF for priority 3 holds its DSCP 24 frames. */
	assert_int_equal(xr_fabric_send_pfc(n.fab, 0, 1u << 3, 0xFFFF), 0);
	assert_true(xr_fabric_step(n.fab, 2000) >= 0);
	assert_int_equal(host_drain(&n, 0, NULL, NULL), 0);   /* the MAC consumes it */
	uint16_t len = roce_frame(&n, 0, 1, 24 << 2, false, 64, frame);
	assert_false(host_try_send(&n, 0, frame, len));
	assert_int_equal(xr_fabric_host_stats(n.host[0], &hs), 0);
	assert_int_equal(hs.pfc_rcvd, 1);
	assert_true(hs.paused_refusals >= 1);
	assert_int_equal(xr_fabric_send_pfc(n.fab, 0, 1u << 3, 0), 0);
	assert_true(xr_fabric_step(n.fab, 3000) >= 0);
	assert_int_equal(host_drain(&n, 0, NULL, NULL), 0);
	assert_true(host_try_send(&n, 0, frame, len));
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
		cmocka_unit_test(test_pfc_injected),
		cmocka_unit_test(test_garbage_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
