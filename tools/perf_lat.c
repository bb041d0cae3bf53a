/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's latency tests (write_lat, read_lat, send_lat, atomic_lat):
 * one message in flight at a time, ping-pong through memory or receives
 * for WRITE and SEND, round trips for READ and FETCH_ADD; --verify checks
 * every message.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "perf.h"

/* ---- the clock ----
 * perftest's way: one stamp per iteration, just before the post, and a
 * sample is the time from one stamp to the next (halved for a ping-pong),
 * so the clock is read once per round trip, off the peer's half. The TSC
 * where it is invariant (perftest reads it too: here a quarter of the
 * cost of clock_gettime), its rate taken against CLOCK_MONOTONIC over the
 * run; elsewhere the monotonic clock in ns. */
static bool tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d >> 8 & 1);
#else
	return false;
#endif
}

static uint64_t stamp_now(bool tsc)
{
	struct timespec ts;

#if defined(__x86_64__) || defined(__i386__)
	if (tsc)
		return __rdtsc();
#endif
	(void)tsc;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Both clocks at one moment: the monotonic clock read on either side of
 * the stamp, again if something came between (a preemption there would
 * skew the rate of a short run). */
static void clocks_now(bool tsc, double *us, uint64_t *ticks)
{
	for (int i = 0; i < 5; i++) {
		double a = now_us();
		*ticks = stamp_now(tsc);
		double b = now_us();
		*us = (a + b) / 2;
		if (b - a < 2)
			break;
	}
}

/* The TSC's ticks per microsecond between two readings of both clocks
 * taken at start; the end's taken here, at least 20 ms after the start
 * (the readings' error is a microsecond or two: a 0.01 % rate). */
static double tsc_rate(double us0, uint64_t tick0)
{
	double us1;
	uint64_t tick1;

	while (now_us() - us0 < 20000)
		;
	clocks_now(true, &us1, &tick1);
	return (double)(tick1 - tick0) / (us1 - us0);
}

/* The samples of a run whose posts were stamped at at[0..n-1] and which
 * ended at at[n]: n - 1 of them from post to post, perftest's, or the
 * one there is for a single iteration. Returns how many. */
static uint64_t lat_samples(const uint64_t *at, uint64_t n, double ticks_per_us, unsigned rtt_factor,
			    double *t)
{
	uint64_t k = n > 1 ? n - 1 : n;

	for (uint64_t i = 0; i < k; i++)
		t[i] = (double)(at[i + 1] - at[i]) / ticks_per_us / rtt_factor;
	return k;
}

/* ---- latency ---- */

/* The next send (recv false) or receive completion. A completion of the
 * other kind is kept, not dropped: with a lost ACK the peer's next message
 * can complete before our send does (perftest polls two CQs for this). */
static int wait_one(struct side *s, struct xr_wc *wc, bool recv)
{
	double until = now_us() + 10e6;

	for (unsigned k = 0; k < s->early_n; k++)
		if (!!(s->early[k].opcode & XR_WC_RECV) == recv) {
			*wc = s->early[k];
			memmove(&s->early[k], &s->early[k + 1], (s->early_n - k - 1) * sizeof(*wc));
			s->early_n--;
			return 0;
		}
	/* xr_poll_cq runs the engine in inline mode; the clock is read once
	 * every 64 polls (a read costs a quarter of an empty poll). */
	for (unsigned k = 0; (k & 63) || now_us() < until; k++) {
		int n = xr_poll_cq(s->cq, 1, wc);
		if (n == 1) {
			if (check_wc(s, wc))
				return -1;
			if (!!(wc->opcode & XR_WC_RECV) == recv)
				return 0;
			if (s->early_n == sizeof(s->early) / sizeof(s->early[0])) {
				fprintf(stderr, "%s: more completions than messages in flight\n", prog);
				return -1;
			}
			s->early[s->early_n++] = *wc;
		}
	}
	fprintf(stderr, "%s: no %s completion in 10 s\n", prog, recv ? "receive" : "send");
	return -1;
}

/* The message of iteration i, as the peer filled it (its last byte is the stamp). */
static void verify_lat_rx(struct side *s, const uint8_t *rx, uint64_t size, uint64_t i)
{
	if (!s->c->verify || !size)
		return;
	for (uint64_t b = 0; b + 1 < size; b++)
		if (rx[b] != pattern(i, b)) {
			s->verify_errors++;
			break;
		}
	s->verified++;
}

/* send_lat: waits for the peer's message, checks it, posts its buffer again. */
static int lat_recv_one(struct side *s, uint8_t *rx, uint64_t size, uint64_t i)
{
	struct xr_wc wc;

	if (wait_one(s, &wc, true))
		return -1;
	if (wc.byte_len != size + s->grh)
		s->verify_errors += s->c->verify;
	verify_lat_rx(s, rx + s->grh, size, i);
	post_recv_buf(s, 0, rx, (uint32_t)(size ? size : 1), i);
	return 0;
}

int run_lat(struct side *s)
{
	const struct cfg *c = s->c;
	uint64_t size = ud_size(s, c->size), iters = c->iters;
	double *t = calloc(iters, sizeof(double)), us0, ticks_per_us = 1e3;
	uint64_t *posted_at = calloc(iters + 1, sizeof(*posted_at)), nsamples = 0, tick0 = 0;
	bool tsc = tsc_invariant();
	unsigned rtt_factor = c->verb == V_WRITE || c->verb == V_SEND ? 2 : 1;
	uint8_t *rx = s->buf, *tx = s->buf + s->slot * s->slots;
	volatile uint8_t *flag = rx + (size ? size - 1 : 0);
	struct xr_wc wc;
	int rc = 0;
	bool active = !s->server || c->verb == V_WRITE || c->verb == V_SEND;

	if (!t || !posted_at || (proto_of(c).pre_run_hs && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))) {
		free(t);
		free(posted_at);
		return -1;
	}
	if (c->verb == V_SEND)
		for (unsigned i = 0; i < 2 && i < c->rx_depth; i++)
			post_recv_buf(s, 0, rx, (uint32_t)(size ? size : 1), i);
	if (c->verb == V_ATOMIC && !s->server)
		memset(rx, 0, 8);
	if (active) {
		clocks_now(tsc, &us0, &tick0);
		for (uint64_t i = 0; i < iters && !rc; i++) {
			struct xr_sge sg = { (uintptr_t)tx, (uint32_t)size, s->mr->lkey };
			struct xr_send_wr w = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .send_flags = XR_SEND_SIGNALED };
			uint8_t stamp = (uint8_t)(i + 1);   /* perftest's (char)++scnt: consecutive stamps differ */
			/* perftest's write_lat: the server writes first (it skips its
			 * first poll); send_lat: the client sends first. */
			bool my_turn = c->verb == V_WRITE ? s->server : !s->server;
			/* The message the peer checks: only then (perftest sends
			 * what the buffer holds; a fill per message would be timed). */
			for (uint64_t b = 0; c->verify && b < size; b++)
				tx[b] = pattern(i, b);
			if (size)
				tx[size - 1] = stamp;
			w.wr.rdma.remote_addr = s->rem[0].vaddr;
			w.wr.rdma.rkey = s->rem[0].rkey;
			if (size <= c->inline_size && c->verb != V_READ && c->verb != V_ATOMIC)
				w.send_flags |= XR_SEND_INLINE;
			switch (c->verb) {
			case V_WRITE:
				/* Ping-pong through memory: each side waits for the other's
				 * stamp, and checks the message before the next can land. */
				if (!my_turn) {
					while (*flag != stamp && size)
						pump(s);
					verify_lat_rx(s, rx, size, i);
				}
				w.opcode = XR_WR_RDMA_WRITE;
				posted_at[i] = stamp_now(tsc);
				if (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false))
					rc = -1;
				if (my_turn && !rc) {
					while (*flag != stamp && size)
						pump(s);
					verify_lat_rx(s, rx, size, i);
				}
				break;
			case V_SEND: {
				/* Each message is checked before its buffer is posted again. */
				if (!my_turn && lat_recv_one(s, rx, size, i))
					rc = -1;
				w.opcode = XR_WR_SEND;
				set_dest(s, 0, &w);
				posted_at[i] = stamp_now(tsc);
				if (!rc && (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false)))
					rc = -1;
				if (my_turn && !rc && lat_recv_one(s, rx, size, i))
					rc = -1;
				break;
			}
			case V_READ:
				w.opcode = XR_WR_RDMA_READ;
				sg.addr = (uintptr_t)rx;
				posted_at[i] = stamp_now(tsc);
				if (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false))
					rc = -1;
				if (c->verify && !rc) {
					for (uint64_t b = 0; b < size; b++)
						if (rx[b] != pattern(0, b)) {
							s->verify_errors++;
							break;
						}
					s->verified++;
				}
				break;
			case V_ATOMIC:
				w.opcode = XR_WR_ATOMIC_FETCH_AND_ADD;
				sg.addr = (uintptr_t)rx;
				sg.length = 8;
				w.wr.atomic.remote_addr = s->rem[0].vaddr;
				w.wr.atomic.rkey = s->rem[0].rkey;
				w.wr.atomic.compare_add = 1;
				posted_at[i] = stamp_now(tsc);
				if (xr_post_send(s->qp[0], &w, NULL) || wait_one(s, &wc, false))
					rc = -1;
				if (c->verify && !rc) {
					/* Each fetch-add sees the previous one's result plus one. */
					static uint64_t first;
					uint64_t orig;
					memcpy(&orig, rx, 8);
					if (i == 0)
						first = orig;
					if (orig != first + i)
						s->verify_errors++;
					s->verified++;
				}
				break;
			}
		}
		posted_at[iters] = stamp_now(tsc);
		if (tsc)
			ticks_per_us = tsc_rate(us0, tick0);
		if (!rc)
			nsamples = lat_samples(posted_at, iters, ticks_per_us, rtt_factor, t);
	}
	if (!rc && (!s->server || c->verb == V_WRITE || c->verb == V_SEND)) {   /* no table from a failed run */
		if (!s->server) {
			struct lat_result r = lat_stats(t, nsamples);
			fprintf(s->out, RESULT_LINE);
			fprintf(s->out, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
					"t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
			fprintf(s->out, " %-7" PRIu64 " %-10" PRIu64 "    %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
				c->verb == V_ATOMIC ? 8 : size, iters, r.min, r.max, r.typical, r.avg, r.stdev, r.p99, r.p999);
			fprintf(s->out, RESULT_LINE);
			if (!s->quiet_out)
				json_lat(&r, c->verb == V_ATOMIC ? 8 : size, iters);
		}
	}
	if (s->server && !active)
		pump_until_peer(s, PEER_WAIT_MS);
	report_verify(s);
	free(t);
	free(posted_at);
	return rc ? rc : s->rc;
}
