/* SPDX-License-Identifier: MIT */
/*
 * PFC (802.1Qbb) and 802.3x PAUSE in the engine, on simulated clocks:
 *  - two engines on a mem pair, the test injecting MAC control frames into
 *    one engine's link: pause length from quanta, caps, XON, PAUSE, a
 *    priority not paused; the watchdog releasing a stuck pause; a storm of
 *    PFC frames and malformed MAC control frames;
 *  - real engines through the switch model (hosts with ignore_pause, so the
 *    engines honour PFC themselves): a lossless incast, and an engine whose
 *    receive backlog sends XOFF/XON that the switch honours and propagates.
 */
#include "fabric_harness.h"
#include "rc_harness.h"

#define PRIO 3
#define TCLASS_PRIO3 (26 << 2)        /* DSCP 26: priority 3 */
#define TCLASS_PRIO0 0

/* ---- registers ---- */

static struct xr_engine *eng(struct xr_context *c)
{
	return xr_context_engine(c);
}

static void reg_w(struct xr_context *c, uint32_t off, uint32_t v)
{
	assert_int_equal(xr_engine_reg_write(eng(c), off, v), XR_AXI_OKAY);
}

static uint32_t reg_r(struct xr_context *c, uint32_t off)
{
	uint32_t v = 0;
	assert_int_equal(xr_engine_reg_read(eng(c), off, &v), XR_AXI_OKAY);
	return v;
}

static uint64_t cnt(struct xr_context *c, enum xr_counter k)
{
	uint64_t v = 0;
	assert_int_equal(xr_regio_read_counter(xr_context_regs(c), k, &v), 0);
	return v;
}

/* Events of this type in the log. */
static unsigned events(struct xr_context *c, enum xr_event_type t)
{
	uint32_t n = reg_r(c, XR_REG_EVLOG_COUNT), from = n > XR_EVLOG_ENTRIES ? n - XR_EVLOG_ENTRIES : 0;
	unsigned k = 0;

	for (uint32_t s = from; s < n; s++) {
		struct xr_event_record ev;
		if (xr_regio_read_event(xr_context_regs(c), s, &ev) == 0 && ev.type == (uint32_t)t)
			k++;
	}
	return k;
}

static uint32_t paused_mask(struct xr_context *c)
{
	return reg_r(c, XR_REG_PFC_STATUS) & 0xFF;
}

/* ---- two engines on a mem pair, a clock of our own ---- */

static uint64_t sim_ns;

static uint64_t sim_clock(void *ctx)
{
	(void)ctx;
	return sim_ns;
}

static void mp_open(struct pair *p, uint8_t tclass)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1 << 20, .timeout = 10,
			    .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1, .traffic_class = tclass };

	sim_ns = 1000000000ull;
	assert_int_equal(h_open(p, &o), 0);
	xr_engine_set_clock(eng(p->a.ctx), sim_clock, NULL);
	xr_engine_set_clock(eng(p->b.ctx), sim_clock, NULL);
	/* A honours PFC for priority 3. */
	reg_w(p->a.ctx, XR_REG_PFC_CTRL, 1u << (8 + PRIO));
}

static void mp_step(struct pair *p, uint64_t dt)
{
	sim_ns += dt;
	h_progress(p);
}

/* A frame into A's receive side: sent on B's end of the wire. */
static void inject(struct pair *p, const uint8_t *frame, uint16_t len)
{
	struct xr_frame *f = xr_link_frame_alloc(p->lb);

	assert_non_null(f);
	memcpy(f->data, frame, len);
	f->len = len;
	assert_int_equal(xr_link_send(p->lb, &f, 1), 1);
}

static void inject_pfc(struct pair *p, uint8_t mask, uint16_t quanta)
{
	uint8_t b[60];
	inject(p, b, xr_build_pfc_frame(b, p->lb->mac, mask, quanta));
}

static void inject_pause(struct pair *p, uint16_t quanta)
{
	uint8_t b[60];
	inject(p, b, xr_build_pause_frame(b, p->lb->mac, quanta));
}

/* n WRITEs of len bytes from A to B, patterned by seed; completions on A. */
static void post_writes(struct pair *p, unsigned n, uint32_t len, unsigned seed)
{
	for (unsigned m = 0; m < n; m++) {
		uint8_t *src = h_data(&p->a) + (size_t)m * len;
		for (uint32_t i = 0; i < len; i++)
			src[i] = (uint8_t)(seed * 13 + m * 7 + i);
		struct xr_sge sg = { (uintptr_t)src, len, p->a.mr->lkey };
		struct xr_send_wr w = { .wr_id = m, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->b) + (size_t)m * len;
		w.wr.rdma.rkey = p->b.mr->rkey;
		assert_int_equal(xr_post_send(p->a.qp[0], &w, NULL), 0);
	}
}

static unsigned poll_a(struct pair *p)
{
	struct xr_wc wc[16];
	int got = xr_poll_cq(p->a.cq, 16, wc);

	for (int i = 0; i < got; i++)
		assert_int_equal(wc[i].status, XR_WC_SUCCESS);
	return got > 0 ? (unsigned)got : 0;
}

static void check_writes(struct pair *p, unsigned n, uint32_t len)
{
	assert_memory_equal(h_data(&p->a), h_data(&p->b), (size_t)n * len);
}

/* Steps of dt until the priority is no longer paused: the time it took. */
static uint64_t time_to_resume(struct pair *p, uint64_t dt, uint64_t max_ns)
{
	uint64_t start = sim_ns;

	while (paused_mask(p->a.ctx) & (1u << PRIO)) {
		assert_true(sim_ns - start <= max_ns);
		mp_step(p, dt);
	}
	return sim_ns - start;
}

/* Pause length from quanta at the link speed, the cap, XON, PAUSE, and a
 * QP on another priority that keeps sending. */
static void test_pfc_receive(void **state)
{
	struct pair p;
	unsigned done = 0;
	(void)state;

	mp_open(&p, TCLASS_PRIO3);
	/* 65535 quanta at 100 Gb/s: 335.54 us. */
	inject_pfc(&p, 1u << PRIO, 0xFFFF);
	mp_step(&p, 1000);
	assert_int_equal(paused_mask(p.a.ctx), 1u << PRIO);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_PFC_PAUSE_RCVD), 1);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_PFC_RX_PRIO3), 1);
	post_writes(&p, 4, 4096, 1);
	uint64_t tx0 = cnt(p.a.ctx, XR_CNT_TX_PKTS);
	for (int i = 0; i < 300; i++) {
		mp_step(&p, 1000);
		done += poll_a(&p);
	}
	/* Paused: nothing of the QP left, nothing completed. */
	assert_int_equal(cnt(p.a.ctx, XR_CNT_TX_PKTS), tx0);
	assert_int_equal(cnt(p.b.ctx, XR_CNT_RX_PKTS), 0);
	assert_int_equal(done, 0);
	/* Counted from the pass that took the frame (1 us after it was sent). */
	uint64_t t = 300000 + time_to_resume(&p, 1000, 100000);
	printf("0xFFFF quanta at 100 Gb/s: paused %.1f us (335.5 expected, 1 us steps)\n", t / 1e3);
	assert_true(t >= 335000 && t <= 337000);
	for (int i = 0; i < 200 && done < 4; i++) {
		mp_step(&p, 1000);
		done += poll_a(&p);
	}
	assert_int_equal(done, 4);
	check_writes(&p, 4, 4096);
	uint64_t us = cnt(p.a.ctx, XR_CNT_PFC_PAUSED_US_PRIO3);
	assert_true(us >= 335 && us <= 336);
	assert_int_equal(events(p.a.ctx, XR_EV_PFC_PAUSED), 1);
	assert_int_equal(events(p.a.ctx, XR_EV_PFC_RESUMED), 1);

	/* 1000 quanta at 10 Gb/s: 51.2 us. */
	reg_w(p.a.ctx, XR_REG_PFC_LINK_MBPS, 10000);
	inject_pfc(&p, 1u << PRIO, 1000);
	mp_step(&p, 100);
	t = 100 + time_to_resume(&p, 100, 60000);
	assert_true(t >= 51200 && t <= 51400);
	/* The cap: 65535 quanta at 10 Gb/s (3.36 ms) held to 50 us. */
	reg_w(p.a.ctx, XR_REG_PFC_MAX_PAUSE_US, 50);
	inject_pfc(&p, 1u << PRIO, 0xFFFF);
	mp_step(&p, 100);
	t = 100 + time_to_resume(&p, 100, 60000);
	assert_true(t >= 50000 && t <= 50200);
	reg_w(p.a.ctx, XR_REG_PFC_MAX_PAUSE_US, 0);
	/* XON (time 0) resumes at once; a new XOFF restarts the timer. */
	inject_pfc(&p, 1u << PRIO, 2000);   /* 102.4 us */
	mp_step(&p, 80000);
	inject_pfc(&p, 1u << PRIO, 2000);
	mp_step(&p, 80000);                 /* 160 us after the first: still paused */
	assert_int_equal(paused_mask(p.a.ctx), 1u << PRIO);
	inject_pfc(&p, 1u << PRIO, 0);
	mp_step(&p, 100);
	assert_int_equal(paused_mask(p.a.ctx), 0);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_PFC_XON_RCVD), 1);

	/* Another priority paused: this QP (priority 3) goes on. */
	reg_w(p.a.ctx, XR_REG_PFC_CTRL, (1u << (8 + PRIO)) | (1u << (8 + 5)));
	inject_pfc(&p, 1u << 5, 0xFFFF);
	mp_step(&p, 100);
	assert_int_equal(paused_mask(p.a.ctx), 1u << 5);
	post_writes(&p, 4, 4096, 2);
	done = 0;
	for (int i = 0; i < 200 && done < 4; i++) {
		mp_step(&p, 1000);
		done += poll_a(&p);
	}
	assert_int_equal(done, 4);
	check_writes(&p, 4, 4096);
	inject_pfc(&p, 1u << 5, 0);
	mp_step(&p, 100);

	/* 802.3x PAUSE: refused while pause_rx is off, then every priority. */
	uint64_t drops = cnt(p.a.ctx, XR_CNT_DROP_MAC_CONTROL);
	inject_pause(&p, 0xFFFF);
	mp_step(&p, 100);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_DROP_MAC_CONTROL), drops + 1);
	assert_int_equal(paused_mask(p.a.ctx), 0);
	reg_w(p.a.ctx, XR_REG_PFC_CTRL, (1u << (8 + PRIO)) | XR_PFC_PAUSE_RX);
	inject_pause(&p, 0xFFFF);
	mp_step(&p, 100);
	assert_int_equal(paused_mask(p.a.ctx), 0xFF);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_PAUSE_RCVD), 1);
	inject_pause(&p, 0);
	mp_step(&p, 100);
	assert_int_equal(paused_mask(p.a.ctx), 0);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_ACK_TIMEOUTS), 0);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_RETRANSMITS), 0);
	h_close(&p);
}

/* A stuck pause (0xFFFF quanta refreshed every 100 us, for ever) is
 * released by the watchdog within PFC_WD_MS (+ one pass), counted, and
 * the traffic completes while the storm goes on; PFC for the priority is
 * honoured again PFC_WD_RESTORE_MS after the last frame. */
static void test_pfc_watchdog(void **state)
{
	struct pair p;
	const uint64_t step = 10000, wd_ns = 100 * 1000000ull;   /* default PFC_WD_MS: 100 */
	unsigned done = 0;
	(void)state;

	mp_open(&p, TCLASS_PRIO3);
	assert_int_equal(reg_r(p.a.ctx, XR_REG_PFC_WD_MS), 100);
	/* Some WRITEs in flight first, then the storm begins. */
	post_writes(&p, 32, 8192, 3);
	mp_step(&p, step);
	done += poll_a(&p);
	inject_pfc(&p, 1u << PRIO, 0xFFFF);
	uint64_t start = sim_ns, tripped = 0;
	for (unsigned i = 0; done < 32; i++) {
		mp_step(&p, step);
		if (i % 10 == 0)
			inject_pfc(&p, 1u << PRIO, 0xFFFF);
		done += poll_a(&p);
		if (!tripped && cnt(p.a.ctx, XR_CNT_PFC_WD_TRIPS))
			tripped = sim_ns;
		if (!tripped)
			assert_true(paused_mask(p.a.ctx) & (1u << PRIO));
		assert_true(sim_ns - start < 2 * wd_ns);
	}
	printf("watchdog: released after %.3f ms (PFC_WD_MS 100); %u WRITEs done %.3f ms after the release\n",
	       (tripped - start) / 1e6, done, (sim_ns - tripped) / 1e6);
	assert_true(tripped - start >= wd_ns && tripped - start <= wd_ns + step);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_PFC_WD_TRIPS), 1);
	assert_true(cnt(p.a.ctx, XR_CNT_PFC_WD_IGNORED) > 0);
	assert_int_equal(reg_r(p.a.ctx, XR_REG_PFC_STATUS), (1u << PRIO) << 16);   /* stormed, not paused */
	assert_int_equal(events(p.a.ctx, XR_EV_PFC_STORM), 1);
	check_writes(&p, 32, 8192);
	/* The pause froze the ACK timer: no timeout, no retransmission. */
	assert_int_equal(cnt(p.a.ctx, XR_CNT_ACK_TIMEOUTS), 0);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_RETRANSMITS), 0);
	uint64_t us = cnt(p.a.ctx, XR_CNT_PFC_PAUSED_US_PRIO3);
	assert_true(us >= 100000 && us <= 100010);

	/* The storm stops: restored after PFC_WD_RESTORE_MS (200) without a frame. */
	uint64_t last = sim_ns;
	inject_pfc(&p, 1u << PRIO, 0xFFFF);
	while (!cnt(p.a.ctx, XR_CNT_PFC_WD_RESTORES)) {
		mp_step(&p, step);
		assert_true(sim_ns - last < 300 * 1000000ull);
	}
	assert_true(sim_ns - last >= 200 * 1000000ull && sim_ns - last <= 200 * 1000000ull + 2 * step);
	assert_int_equal(reg_r(p.a.ctx, XR_REG_PFC_STATUS), 0);
	assert_int_equal(events(p.a.ctx, XR_EV_PFC_RESTORED), 1);
	/* Honoured again. */
	inject_pfc(&p, 1u << PRIO, 0xFFFF);
	mp_step(&p, step);
	assert_int_equal(paused_mask(p.a.ctx), 1u << PRIO);
	h_close(&p);
}

/* Thousands of PFC frames, and malformed MAC control frames: counted, no
 * crash, and afterwards the traffic completes. */
static void test_pfc_storm_malformed(void **state)
{
	struct pair p;
	uint8_t b[128];
	unsigned done = 0, injected = 0;
	uint64_t seed = 12345;
	(void)state;

	mp_open(&p, TCLASS_PRIO3);
	reg_w(p.a.ctx, XR_REG_PFC_WD_MS, 20);
	reg_w(p.a.ctx, XR_REG_PFC_WD_RESTORE_MS, 10);
	post_writes(&p, 64, 4096, 4);
	/* 20000 PFC frames, 40 per 10 us step: pauses of every length for
	 * every priority, XONs (which break the pause: no watchdog), for 5 ms. */
	for (unsigned i = 0; i < 500; i++) {
		for (unsigned k = 0; k < 40; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint16_t q = (seed >> 33) % 4 == 0 ? 0 : (uint16_t)(seed >> 40);
			inject_pfc(&p, (uint8_t)(seed >> 20) | (1u << PRIO), q);
			injected++;
		}
		mp_step(&p, 10000);
		done += poll_a(&p);
	}
	unsigned done_mixed = done, before_trip = 0;
	assert_int_equal(done, 64);
	check_writes(&p, 64, 4096);
	post_writes(&p, 32, 4096, 6);
	done = 0;
	/* Then 30 ms of XOFFs only (long ones, 4 per step, 12000 frames): a
	 * pause without a break, released by the watchdog after 20 ms; the
	 * WRITEs finish while the storm goes on. */
	for (unsigned i = 0; i < 3000; i++) {
		for (unsigned k = 0; k < 4; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			inject_pfc(&p, (uint8_t)(seed >> 20) | (1u << PRIO), (uint16_t)(seed >> 40) | 0x8000);
			injected++;
		}
		mp_step(&p, 10000);
		done += poll_a(&p);
		if (!cnt(p.a.ctx, XR_CNT_PFC_WD_TRIPS))
			before_trip = done;
	}
	uint64_t pause = cnt(p.a.ctx, XR_CNT_PFC_PAUSE_RCVD), xon = cnt(p.a.ctx, XR_CNT_PFC_XON_RCVD);
	printf("storm: %u frames, %llu pausing, %llu resuming, %llu watchdog trips, %llu ignored; "
	       "%u WRITEs done in its mixed part; of 32 posted then, %u before the trip, %u by its end\n",
	       injected, (unsigned long long)pause, (unsigned long long)xon,
	       (unsigned long long)cnt(p.a.ctx, XR_CNT_PFC_WD_TRIPS), (unsigned long long)cnt(p.a.ctx, XR_CNT_PFC_WD_IGNORED),
	       done_mixed, before_trip, done);
	assert_int_equal(injected, 32000);
	/* Every frame named priority 3 (enabled): none dropped, each counted. */
	assert_int_equal(cnt(p.a.ctx, XR_CNT_DROP_MAC_CONTROL), 0);
	assert_int_equal(pause + xon, injected);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_PFC_WD_TRIPS), 1);
	assert_true(cnt(p.a.ctx, XR_CNT_PFC_WD_IGNORED) >= 4 * 900);   /* the last 9+ ms of it */
	assert_int_equal(before_trip, 0);
	assert_int_equal(done, 32);
	check_writes(&p, 32, 4096);

	inject_pfc(&p, 1u << PRIO, 0);   /* what the storm left paused resumes */
	mp_step(&p, 1000);
	assert_int_equal(paused_mask(p.a.ctx), 0);

	/* Malformed and refused MAC control frames: one drop each. */
	static const uint8_t group[6] = { 0x01, 0x80, 0xC2, 0x00, 0x00, 0x01 };
	uint64_t d0 = cnt(p.a.ctx, XR_CNT_DROP_MAC_CONTROL);
	unsigned bad = 0;
	xr_build_pfc_frame(b, p.lb->mac, 1u << PRIO, 0xFFFF);
	inject(&p, b, 16);                            /* opcode only */
	inject(&p, b, 30);                            /* PFC cut in its times */
	bad += 2;
	b[15] = 0x02;                                 /* opcode 0x0102 */
	inject(&p, b, 60);
	b[14] = 0x00;
	b[15] = 0x00;                                 /* opcode 0 */
	inject(&p, b, 60);
	bad += 2;
	xr_build_pfc_frame(b, p.lb->mac, 1u << 6, 0xFFFF);   /* PFC off for priority 6 */
	inject(&p, b, 60);
	xr_build_pfc_frame(b, p.lb->mac, 0, 0xFFFF);         /* an empty vector */
	inject(&p, b, 60);
	bad += 2;
	xr_build_pfc_frame(b, p.lb->mac, 1u << PRIO, 0xFFFF);
	b[0] = 0x02;                                  /* to somebody else's unicast MAC */
	inject(&p, b, 60);
	inject_pause(&p, 0xFFFF);                     /* PAUSE with pause_rx off */
	bad += 2;
	mp_step(&p, 1000);
	assert_int_equal(cnt(p.a.ctx, XR_CNT_DROP_MAC_CONTROL), d0 + bad);
	assert_int_equal(paused_mask(p.a.ctx), 0);
	/* Random bytes after the MAC control header: never a crash. */
	for (unsigned i = 0; i < 2000; i++) {
		uint16_t len = (uint16_t)(14 + i % 100);
		memcpy(b, group, 6);
		memcpy(b + 6, p.lb->mac, 6);
		b[12] = 0x88;
		b[13] = 0x08;
		for (unsigned k = 14; k < sizeof(b); k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			b[k] = (uint8_t)(seed >> 56);
		}
		if (i % 3 == 0) {
			b[14] = 0x01;
			b[15] = 0x01;
		}
		inject(&p, b, len);
		if (i % 32 == 31)
			mp_step(&p, 1000);
	}
	mp_step(&p, 1000);
	assert_true(cnt(p.a.ctx, XR_CNT_DROP_MAC_CONTROL) > d0 + bad);
	/* Whatever it left paused, traffic completes (pauses end, the
	 * watchdog holds at 20 ms). */
	inject_pfc(&p, 0xFF, 0);
	post_writes(&p, 16, 4096, 5);
	done = 0;
	for (int i = 0; i < 100000 && done < 16; i++) {
		mp_step(&p, 10000);
		done += poll_a(&p);
	}
	assert_int_equal(done, 16);
	check_writes(&p, 16, 4096);
	h_close(&p);
}

/* ---- engines through the switch ---- */

#define MAX_DEV 5


struct sim {
	struct net n;
	struct dev d[MAX_DEV];
	int ndev;
	uint64_t dt;
	unsigned steps;
	unsigned slow0;      /* device 0 runs one pass every slow0 steps (0: every step) */
};

static void dev_open(struct sim *s, const struct xr_fabric_port_cfg *pc, size_t len, unsigned nqp, unsigned depth)
{
	/* The host's MAC passes PFC to the engine, which honours it. */
	const struct dev_opts o = { .host = { .ignore_pause = true, .depth = depth }, .len = len, .nqp = nqp,
				    .cq_depth = 4096, .sq_depth = 256, .rq_depth = 256 };
	struct dev *d = &s->d[s->ndev];

	dev_open_on(s->n.fab, pc, &o, d);
	s->n.host[s->n.nhosts++] = NULL;   /* closed with the device */
	reg_w(d->ctx, XR_REG_PFC_LINK_MBPS, 10000);
	s->ndev++;
}

static void sim_step(struct sim *s)
{
	s->n.now += s->dt;
	s->steps++;
	assert_true(xr_fabric_step(s->n.fab, s->n.now) >= 0);
	for (int i = 0; i < s->ndev; i++)
		if (i || !s->slow0 || s->steps % s->slow0 == 0)
			xr_engine_progress(eng(s->d[i].ctx));
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

/* nsend senders, nmsg SENDs of msg bytes each to their own QP on device 0,
 * every message checked byte for byte, completions exactly once in order. */
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
		/* An empty poll runs a pass: a slow receiver is polled only
		 * when it runs. */
		int got = s->slow0 && s->steps % s->slow0 ? 0 : xr_poll_cq(r->cq, 64, wc);
		for (int i = 0; i < got; i++) {
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			unsigned k;
			for (k = 0; k < nsend && xr_qp_num(r->qp[k]) != wc[i].qp_num; k++)
				;
			assert_true(k < nsend);
			assert_int_equal(wc[i].wr_id, done_recv[k]);
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

static void qp_connect(struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx, uint32_t my_psn,
		       uint32_t peer_psn)
{
	const struct h_opts o = { .mtu = XR_MTU_1024, .timeout = 10, .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1, .traffic_class = TCLASS_PRIO3 };

	assert_int_equal(h_connect(q, peer, peer_ctx, &o, my_psn, peer_psn), 0);
}

static void sim_open(struct sim *s, const struct xr_fabric_port_cfg *bottleneck, const struct xr_fabric_port_cfg *edge,
		     unsigned nsend, uint32_t msg, unsigned nmsg, unsigned depth0)
{
	struct xr_fabric_cfg fc = { .seed = 7, .prio_src = XR_FABRIC_PRIO_DSCP };

	memset(s, 0, sizeof(*s));
	s->n.fab = xr_fabric_new(&fc);
	assert_non_null(s->n.fab);
	s->dt = 250;
	dev_open(s, bottleneck, (size_t)nsend * nmsg * msg, nsend, depth0);
	for (unsigned k = 0; k < nsend; k++)
		dev_open(s, edge, (size_t)nmsg * msg, 1, 0);
	for (unsigned k = 0; k < nsend; k++) {
		qp_connect(s->d[0].qp[k], s->d[1 + k].qp[0], s->d[1 + k].ctx, 100 + k, 0xFFFFF0 + k);
		qp_connect(s->d[1 + k].qp[0], s->d[0].qp[k], s->d[0].ctx, 0xFFFFF0 + k, 100 + k);
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

/* (a) 4-to-1 incast into a 12 KiB bottleneck queue, PFC on the edge ports,
 * honoured by the senders' engines (their MACs pass PFC through): zero
 * drops, every XOFF and XON the switch sent counted by an engine. */
static void test_pfc_incast_engines(void **state)
{
	struct xr_fabric_port_cfg edge = {
		.rate_bps = 10 * GBPS,
		.pfc = { .prio_mask = 1u << PRIO, .xoff = 8192, .xon = 4096, .headroom = 16384 },
	};
	struct xr_fabric_port_cfg bottleneck = { .rate_bps = 10 * GBPS, .queue_limit = 12 * 1024 };
	struct sim s;
	(void)state;

	sim_open(&s, &bottleneck, &edge, 4, 16384, 16, 0);
	for (int k = 1; k <= 4; k++)
		reg_w(s.d[k].ctx, XR_REG_PFC_CTRL, 1u << (8 + PRIO));
	incast(&s, 4, 16, 16384, 500000000);
	uint64_t sw_xoff = 0, sw_xon = 0, rcvd = 0, xon_rcvd = 0, rexmit = 0, paused_us = 0, refusals = 0;
	for (unsigned p = 1; p <= 4; p++) {
		struct xr_fabric_port_stats st = pstats(&s.n, p);
		struct xr_fabric_host_stats hs;
		struct xr_context *c = s.d[p].ctx;
		sw_xoff += st.pfc_sent[PRIO];
		sw_xon += st.pfc_xon_sent[PRIO];
		rcvd += cnt(c, XR_CNT_PFC_PAUSE_RCVD);
		xon_rcvd += cnt(c, XR_CNT_PFC_XON_RCVD);
		paused_us += cnt(c, XR_CNT_PFC_PAUSED_US_PRIO3);
		rexmit += cnt(c, XR_CNT_RETRANSMITS);
		assert_int_equal(cnt(c, XR_CNT_DROP_MAC_CONTROL), 0);
		assert_int_equal(cnt(c, XR_CNT_PFC_RX_PRIO3), cnt(c, XR_CNT_PFC_PAUSE_RCVD));
		assert_int_equal(xr_fabric_host_stats(s.d[p].link, &hs), 0);
		refusals += hs.paused_refusals;
	}
	printf("engine PFC: switch sent %llu XOFF, %llu XON; engines took %llu XOFF, %llu XON, paused %llu us in all; "
	       "drops %llu; retransmissions %llu; bottleneck qlen max %llu\n",
	       (unsigned long long)sw_xoff, (unsigned long long)sw_xon, (unsigned long long)rcvd,
	       (unsigned long long)xon_rcvd, (unsigned long long)paused_us, (unsigned long long)drops_total(&s),
	       (unsigned long long)rexmit, (unsigned long long)pstats(&s.n, 0).qlen_max);
	assert_int_equal(drops_total(&s), 0);
	assert_true(sw_xoff > 0);
	assert_int_equal(rcvd, sw_xoff);
	assert_int_equal(xon_rcvd, sw_xon);
	assert_true(paused_us > 0);
	assert_int_equal(refusals, 0);   /* the MACs never held a frame: the engines did */
	assert_int_equal(rexmit, 0);
	sim_free(&s);
}

/* (b) The receiver runs a pass only every 80 us and drains 32 frames per
 * pass, less than 10 Gb/s brings: its 64-frame receive queue crosses 80 %,
 * it sends XOFF (the switch's port counts them and pauses its egress), XON
 * when it has drained to 50 %; the switch's own ingress PFC then pauses the
 * senders' engines: the pause propagates, nothing is dropped. */
static void test_pfc_generation(void **state)
{
	struct xr_fabric_port_cfg edge = {
		.rate_bps = 10 * GBPS,
		.pfc = { .prio_mask = 1u << PRIO, .xoff = 8192, .xon = 4096, .headroom = 16384 },
	};
	struct xr_fabric_port_cfg bottleneck = { .rate_bps = 10 * GBPS, .queue_limit = 256 * 1024 };
	struct sim s;
	(void)state;

	sim_open(&s, &bottleneck, &edge, 2, 16384, 32, 64);
	reg_w(s.d[0].ctx, XR_REG_PFC_CTRL, 1u << PRIO);   /* generate for priority 3 */
	for (int k = 1; k <= 2; k++)
		reg_w(s.d[k].ctx, XR_REG_PFC_CTRL, 1u << (8 + PRIO));
	s.slow0 = 320;   /* 80 us of fabric time */
	incast(&s, 2, 32, 16384, 500000000);
	struct xr_context *r = s.d[0].ctx;
	struct xr_fabric_port_stats p0 = pstats(&s.n, 0);
	uint64_t sent = cnt(r, XR_CNT_PFC_PAUSE_SENT), xon = cnt(r, XR_CNT_PFC_XON_SENT), prop = 0;
	for (int k = 1; k <= 2; k++)
		prop += cnt(s.d[k].ctx, XR_CNT_PFC_PAUSE_RCVD);
	printf("generation: receiver sent %llu XOFF, %llu XON; switch port counted %llu, stood paused %.3f ms; "
	       "senders paused by %llu XOFF; drops %llu\n",
	       (unsigned long long)sent, (unsigned long long)xon, (unsigned long long)p0.pfc_rcvd[PRIO],
	       p0.paused_ns[PRIO] / 1e6, (unsigned long long)prop, (unsigned long long)drops_total(&s));
	assert_true(sent > 0);
	assert_true(xon > 0);
	assert_int_equal(p0.pfc_rcvd[PRIO], sent);
	assert_int_equal(cnt(r, XR_CNT_PFC_TX_PRIO3), sent);
	assert_true(p0.paused_ns[PRIO] > 0);
	assert_true(prop > 0);
	assert_int_equal(drops_total(&s), 0);
	assert_true(events(r, XR_EV_PFC_XOFF) > 0);
	assert_true(events(r, XR_EV_PFC_XON) > 0);
	/* Drained: the last word was an XON. */
	assert_int_equal((reg_r(r, XR_REG_PFC_STATUS) >> 8) & 0xFF, 0);
	sim_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pfc_receive),
		cmocka_unit_test(test_pfc_watchdog),
		cmocka_unit_test(test_pfc_storm_malformed),
		cmocka_unit_test(test_pfc_incast_engines),
		cmocka_unit_test(test_pfc_generation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
