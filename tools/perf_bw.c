/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's bandwidth tests (write_bw, read_bw, send_bw, atomic_bw): the
 * sender's posting loop, send_bw's receiving end, the --verify read-backs
 * after WRITE and FETCH_ADD runs, and the per-size run with perftest's
 * exchanges and result lines.
 */
#include <inttypes.h>
#include <poll.h>
#include <string.h>

#include "perf.h"

/* ---- bandwidth ---- */

/* A message that says which slot it came from, so a receiver can check it
 * whatever order several QPs deliver in: the slot number, then a pattern. */
static void fill_message(uint8_t *p, uint64_t size, uint64_t slot)
{
	for (uint64_t i = 0; i < size; i++)
		p[i] = pattern(size >= 8 ? slot + 1000 : 1000, i);
	if (size >= 8)
		memcpy(p, &slot, 8);
}

static bool check_message(const uint8_t *p, uint64_t size)
{
	uint64_t slot = 0;

	if (size >= 8)
		memcpy(&slot, p, 8);
	for (uint64_t i = size >= 8 ? 8 : 0; i < size; i++)
		if (p[i] != pattern(size >= 8 ? slot + 1000 : 1000, i))
			return false;
	return true;
}

/* QP q's WR as every message of it starts (perftest builds its WRs once,
 * too): the loop copies it and sets what changes per message. */
static void base_wr(struct side *s, unsigned q, uint64_t size, struct xr_send_wr *w)
{
	const struct cfg *c = s->c;

	*w = (struct xr_send_wr){ .num_sge = 1 };
	switch (c->verb) {
	case V_WRITE: w->opcode = XR_WR_RDMA_WRITE; break;
	case V_READ: w->opcode = XR_WR_RDMA_READ; break;
	case V_SEND: w->opcode = XR_WR_SEND; break;
	case V_ATOMIC: w->opcode = XR_WR_ATOMIC_FETCH_AND_ADD; break;
	}
	if (c->verb == V_ATOMIC) {
		w->wr.atomic.remote_addr = s->rem[q].vaddr + 8 * q;
		w->wr.atomic.rkey = s->rem[q].rkey;
		w->wr.atomic.compare_add = 1;
	} else {
		w->wr.rdma.rkey = s->rem[q].rkey;
		if (c->verb != V_READ && size <= c->inline_size)
			w->send_flags |= XR_SEND_INLINE;
	}
	set_dest(s, q, w);   /* last: UD's address shares the union with the RDMA fields */
}

/* Message k of QP q (the second half of the buffer holds the sources). */
static void fill_wr(struct side *s, const struct xr_send_wr *base, unsigned q, uint64_t seq, unsigned k,
		    uint64_t size, bool signaled, struct xr_send_wr *w, struct xr_sge *sg)
{
	const struct cfg *c = s->c;
	uint8_t *local = s->buf + s->slot * s->slots;

	*sg = (struct xr_sge){ (uintptr_t)local + k * s->slot, c->verb == V_ATOMIC ? 8 : (uint32_t)size,
			       s->mr->lkey };
	*w = *base;
	w->wr_id = (uint64_t)q << 48 | seq;
	w->sg_list = sg;
	if (signaled)
		w->send_flags |= XR_SEND_SIGNALED;
	/* perftest peers expose one message's worth of buffer: their start.
	 * --verify (an xroce peer) spreads messages over its slots. */
	if (c->verb == V_WRITE || c->verb == V_READ)   /* a SEND's union holds UD's address */
		w->wr.rdma.remote_addr = s->rem[q].vaddr + (c->verify ? k * s->slot : 0);
}

/* A timed run (-D) stops posting when its time is up: what is still out
 * after each QP's last signaled WR never completes (-Q leaves it
 * unsignaled), so the run ends when the signaled ones have. */
static bool all_signaled_done(unsigned qps, const uint64_t *qdone, const uint64_t *qsig_end)
{
	for (unsigned q = 0; q < qps; q++)
		if (qdone[q] < qsig_end[q])
			return false;
	return true;
}

/* Posts READs/WRITEs/SENDs/atomics as fast as each QP's depth allows.
 * wr_id = (QP << 48) | that QP's sequence; completions are in order per QP,
 * so a signaled one completes everything before it on its QP. */
static int run_bw_sender(struct side *s, uint64_t size, struct bw_report *rep)
{
	const struct cfg *c = s->c;
	uint64_t iters = c->iters, posted = 0, done = 0, window_done = 0;
	uint64_t qposted[MAX_QPS] = { 0 }, qdone[MAX_QPS] = { 0 };
	uint64_t qsig_end[MAX_QPS] = { 0 };   /* after each QP's last signaled WR */
	double t0, t_end, window_t0, peak = 0, next_interval;
	struct xr_wc wc[64];
	uint8_t *local = s->buf + s->slot * s->slots;   /* second half: sources and landing areas */
	bool timed = c->duration || c->infinite;
	struct xr_send_wr base[MAX_QPS];   /* one per QP, not shared: -b runs two senders */

	if (c->verb == V_WRITE || c->verb == V_SEND)
		for (unsigned k = 0; k < s->slots; k++)
			fill_message(local + k * s->slot, size, k);
	for (unsigned q = 0; q < c->qps; q++)
		base_wr(s, q, size, &base[q]);
	t0 = window_t0 = now_us();
	next_interval = t0 + 1e6;
	/* A clock read costs as much as a quarter of this loop at 64 bytes:
	 * it is read once a turn when timed, else only when a figure needs it. */
	double t = t0;
	for (;;) {
		bool stop_posting = timed ? (c->duration && t - t0 >= c->duration * 1e6) : posted >= iters;
		for (unsigned q = 0; q < c->qps && !stop_posting; q++) {
			bool ended = false;
			while (!ended && (timed || posted < iters) && qposted[q] - qdone[q] < c->tx_depth) {
				/* -l: a list of WRs, one post call and one doorbell. */
				struct xr_sge sg[MAX_POST_LIST];
				struct xr_send_wr w[MAX_POST_LIST], *bad = NULL;
				unsigned n = 0;
				while (n < c->post_list && (timed || posted + n < iters) && qposted[q] + n - qdone[q] < c->tx_depth) {
					uint64_t seq = qposted[q] + n, at = posted + n;
					/* Near the end every WR is signaled, so each QP's tail completes;
					 * and the one that fills a QP's queue: the loop may not come
					 * back to that QP (UC/UD complete at once, so another QP can
					 * take every remaining iteration), and unsignaled WRs after
					 * its last signaled one would never complete. */
					bool tail = !timed && at + (uint64_t)c->qps * c->tx_depth >= iters;
					bool fills = seq - qdone[q] + 1 >= c->tx_depth;
					bool signaled = seq % c->cq_mod == c->cq_mod - 1 || tail || fills;   /* -Q, at most -t (perf_opts.c) */
					if (signaled)
						qsig_end[q] = seq + 1;
					fill_wr(s, &base[q], q, seq, (unsigned)(at % s->slots), size, signaled, &w[n], &sg[n]);
					if (n)
						w[n - 1].next = &w[n];
					n++;
					if (!timed && at + 1 >= iters) {
						ended = true;
						break;
					}
				}
				if (xr_post_send(s->qp[q], w, &bad)) {
					/* The WRs before the refused one were posted. */
					unsigned ok = bad ? (unsigned)(bad - w) : 0;
					qposted[q] += ok;
					posted += ok;
					break;
				}
				qposted[q] += n;
				posted += n;
			}
		}
		{
			int n = xr_poll_cq(s->cq, 64, wc);   /* runs the engine in inline mode */
			for (int i = 0; i < n; i++) {
				unsigned q = (unsigned)(wc[i].wr_id >> 48);
				uint64_t seq = wc[i].wr_id & ((1ull << 48) - 1);
				if (check_wc(s, &wc[i]))
					return -1;
				if ((wc[i].opcode & XR_WC_RECV) || q >= c->qps || seq < qdone[q])
					continue;
				/* READs land in slots holding the peer's fixed pattern (a reused
				 * slot receives the same bytes): check what each one brought. */
				done += seq + 1 - qdone[q];
				qdone[q] = seq + 1;
				if (c->verify && c->verb == V_READ) {
					for (unsigned k = 0; k < s->slots && k < done; k++)
						for (uint64_t b = 0; b < size; b++)
							if (local[k * s->slot + b] != pattern(k, b)) {
								s->verify_errors++;
								break;
							}
					s->verified = done;
				}
			}
		}
		if (timed || done - window_done >= (uint64_t)c->cq_mod * 4 || (done == posted && done > window_done))
			t = now_us();
		if (done - window_done >= (uint64_t)c->cq_mod * 4 || (done == posted && done > window_done && t - window_t0 > 1000)) {
			double r = (double)(done - window_done) * (double)size / (t - window_t0);
			if (r > peak)
				peak = r;
			window_done = done;
			window_t0 = t;
		}
		if (timed && t >= next_interval && (c->duration > 1 || c->infinite)) {
			struct bw_report iv = { size, done, bw_unit(c, peak), bw_unit(c, (double)done * size / (t - t0)),
						(double)done / (t - t0) };
			print_bw_line(s->out, &iv);
			fflush(s->out);
			next_interval += 1e6;
		}
		if (timed ? stop_posting && all_signaled_done(c->qps, qdone, qsig_end) : posted >= iters && done >= posted)
			break;
	}
	t_end = now_us();
	rep->size = size;
	rep->iters = done;
	rep->bw_avg = bw_unit(c, (double)done * (double)size / (t_end - t0));
	rep->bw_peak = bw_unit(c, peak > 0 ? peak : (double)done * size / (t_end - t0));
	if (rep->bw_peak < rep->bw_avg)
		rep->bw_peak = rep->bw_avg;
	rep->msg_rate = (double)done / (t_end - t0);
	return 0;
}

/* The receiving end of send_bw: posts receives, counts and checks them,
 * until the peer reaches the next exchange; it measures what it received,
 * from the first message to the last, as perftest's server does. With
 * --verify a slot holds one posted receive at a time (wr_id names it), so
 * no message is checked after another landed over it, whatever order
 * several QPs or an SRQ complete in; otherwise up to rx_depth are posted
 * over the slots, on each QP (as perftest: -r is per QP; an SRQ holds
 * rx_depth in all), a completed receive replaced on its own QP. */
struct rx_slots {
	bool exact;          /* completions may come out of post order: one per slot */
	bool busy[64];
	unsigned nbusy, next, rr;
	int refill_q;        /* >= 0: the QP whose receive completed gets the next */
	uint32_t out[MAX_QPS];   /* not exact, no SRQ: receives outstanding per QP */
};

static bool post_one(struct side *s, struct rx_slots *r, uint64_t size, uint64_t *posted, uint64_t got)
{
	unsigned k = (unsigned)(*posted % s->slots), q = (unsigned)(*posted % s->c->qps);

	if (r->exact) {
		if (r->nbusy >= s->slots || r->nbusy >= s->c->rx_depth)
			return false;
		while (r->busy[r->next % s->slots])
			r->next++;
		k = r->next++ % s->slots;
		/* Each QP keeps its share: a freed receive goes back to its QP
		 * (a sender may use some QPs far more than others). */
		q = r->refill_q >= 0 ? (unsigned)r->refill_q : r->rr++ % s->c->qps;
	} else if (s->c->use_srq) {
		if (*posted - got >= s->c->rx_depth)
			return false;
	} else {
		/* Without the refill's QP, the next one with room, in turn. */
		unsigned tries = 0;
		q = r->refill_q >= 0 ? (unsigned)r->refill_q : r->rr % s->c->qps;
		while (r->out[q] >= s->c->rx_depth && r->refill_q < 0 && ++tries < s->c->qps)
			q = ++r->rr % s->c->qps;
		if (r->out[q] >= s->c->rx_depth)
			return false;
		r->rr++;
	}
	/* Room for the largest size of the run (as perftest with -a): a receive
	 * posted during one size may take a message of the next. */
	(void)size;
	if (post_recv_buf(s, q, s->buf + k * s->slot, (uint32_t)(s->slot - s->grh), k))
		return false;
	if (r->exact) {
		r->busy[k] = true;
		r->nbusy++;
	} else if (!s->c->use_srq) {
		r->out[q]++;
	}
	(*posted)++;
	return true;
}

/* Receives posted before the run's handshake: a UD (or UC) sender that
 * finds none has its messages dropped, with no RNR to hold it back. */
static uint64_t prepost(struct side *s, struct rx_slots *r, uint64_t size)
{
	uint64_t posted = 0;

	while (post_one(s, r, size, &posted, 0))
		;
	return posted;
}

/* After the peer's word: a receiver the scheduler held back still has
 * messages in its link; it takes them until none came for this long. */
#define RX_DRAIN_QUIET_US 2000.0
#define RX_DRAIN_MAX_US 200000.0

static int run_bw_receiver(struct side *s, struct rx_slots *slots, uint64_t size, uint64_t posted,
			   struct bw_report *rep)
{
	uint64_t got = 0;
	struct xr_wc wc[64];
	uint8_t *rx = s->buf;
	double t_first = 0, t_last = 0, t_empty = now_us(), t_peer_look = 0;
	uint64_t got_first = 0;   /* messages in the first batch, at t_first */
	double drain_until = 0, drain_cap = 0;   /* set once the peer said it is done */
	uint64_t got_at_drain = 0;

	unsigned idle = 0;   /* polls in a row that found nothing */

	for (;;) {
		uint64_t got_before = got;
		int n;

		while (post_one(s, slots, size, &posted, got))
			;
		{
			n = xr_poll_cq(s->cq, 64, wc);   /* runs the engine in inline mode */
			for (int i = 0; i < n; i++) {
				if (check_wc(s, &wc[i]))
					return -1;
				if (!(wc[i].opcode & XR_WC_RECV))
					continue;
				if (s->c->verify) {
					unsigned k = (unsigned)(wc[i].wr_id % s->slots);
					uint64_t len = wc[i].byte_len - s->grh;
					/* UC/UD: a straggler of the size before may land in this
					 * run; it must still be whole and intact. */
					if (wc[i].byte_len < s->grh || (len != size && s->c->conn == XR_QPT_RC) ||
					    !check_message(rx + k * s->slot + s->grh, len))
						s->verify_errors++;
					s->verified++;
				}
				/* A freed receive goes back to its own QP (each keeps its
				 * share; in exact mode, its slot is free again). */
				bool exact_slot = slots->exact && slots->busy[wc[i].wr_id % s->slots];
				if (exact_slot || (!slots->exact && !s->c->use_srq)) {
					unsigned q = 0;
					while (q + 1 < s->c->qps && xr_qp_num(s->qp[q]) != wc[i].qp_num)
						q++;
					if (exact_slot) {
						slots->busy[wc[i].wr_id % s->slots] = false;
						slots->nbusy--;
					} else if (slots->out[q]) {
						slots->out[q]--;
					}
					slots->refill_q = (int)q;
					post_one(s, slots, size, &posted, got);
					slots->refill_q = -1;
				}
				got++;
			}
		}
		/* The clock once per batch, not per message. */
		if (got != got_before) {
			t_last = now_us();
			if (!got_before) {
				t_first = t_last;
				got_first = got;
			}
		} else if (!got) {
			t_empty = now_us();   /* the last look before anything came */
		}
		idle = n ? 0 : idle + 1;
		if (drain_until) {
			/* What already reached us is not lost: take it in until the
			 * link has been quiet for a while. */
			double t = now_us();
			if (got != got_at_drain) {
				got_at_drain = got;
				drain_until = t + RX_DRAIN_QUIET_US;
			}
			if (t > drain_until || t > drain_cap)
				break;
		} else if (idle && idle % 16 == 1 && now_us() - t_peer_look >= PEER_CHECK_US) {
			/* A system call per poll was the receiver's biggest cost at
			 * 64 bytes: the peer's word is looked for only when the CQ
			 * runs dry (it has stopped sending by then), and at most
			 * every PEER_CHECK_US (with 8 QPs the CQ runs dry between
			 * bursts, and the poll was a fifth of the receiver). */
			struct pollfd p = { s->oob.fd, POLLIN, 0 };
			t_peer_look = now_us();
			/* UC and UD may lose messages: the peer's word ends the run. */
			if (poll(&p, 1, 0) > 0 && (s->c->qps > 1 || !s->c->verify || got >= s->c->iters || s->c->duration ||
						   s->c->conn != XR_QPT_RC)) {
				double t = now_us();
				got_at_drain = got;
				drain_until = t + RX_DRAIN_QUIET_US;
				drain_cap = t + RX_DRAIN_MAX_US;
			}
		}
	}
	rep->iters = got;
	/* The messages after the first batch, over the time since it; when
	 * all came in one batch, all of them since the last empty poll. */
	if (got && got == got_first) {
		got_first = 0;
		t_first = t_empty;
	}
	if (got > got_first && t_last > t_first) {
		double us = t_last - t_first;
		rep->bw_avg = rep->bw_peak = bw_unit(s->c, (double)(got - got_first) * (double)size / us);
		rep->msg_rate = (double)(got - got_first) / us;
	}
	return 0;
}

/* After a WRITE run: read every written slot back and compare. */
static int verify_writes(struct side *s, uint64_t size)
{
	uint8_t *back = s->buf + s->slot * s->slots;   /* the source patterns live here too */
	unsigned slots = s->slots;
	struct xr_wc wc;

	for (unsigned k = 0; k < slots; k++) {
		uint8_t *landing = s->buf + k * s->slot;   /* our own READ-source half is free to reuse now */
		struct xr_sge sg = { (uintptr_t)landing, (uint32_t)size, s->mr->lkey };
		struct xr_send_wr w = { .wr_id = 1u << 30, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
					.send_flags = XR_SEND_SIGNALED };
		double until = now_us() + 5e6;
		int n = 0;
		if (!size)
			break;
		w.wr.rdma.remote_addr = s->rem[0].vaddr + k * s->slot;
		w.wr.rdma.rkey = s->rem[0].rkey;
		if (xr_post_send(s->qp[0], &w, NULL))
			return -1;
		while (!n && now_us() < until) {
			pump(s);
			n = xr_poll_cq(s->cq, 1, &wc);
			if (n && wc.wr_id != (1u << 30))
				n = 0;   /* a late completion of the run */
		}
		if (!n || check_wc(s, &wc))
			return -1;
		if (memcmp(landing, back + k * s->slot, size))
			s->verify_errors++;
		s->verified++;
	}
	/* Our READ sources were overwritten: restore them for the next size. */
	for (unsigned k = 0; k < slots; k++)
		for (size_t i = 0; i < s->slot; i++)
			s->buf[k * s->slot + i] = pattern(k, i);
	return 0;
}

/* The sum of the peer's fetch-add targets (one word per QP at its buffer's start). */
static int remote_counter_sum(struct side *s, uint64_t *sum);

/* After FETCH_ADD +1 runs: the peer's counters grew by the operations done. */
static int verify_atomics(struct side *s, uint64_t ops, uint64_t before)
{
	uint64_t total = 0;

	if (remote_counter_sum(s, &total))
		return -1;
	s->verified += ops;
	if (total - before != ops) {
		fprintf(stderr, "%s: the peer's counters grew by %" PRIu64 " after %" PRIu64 " fetch-adds\n", prog,
			total - before, ops);
		s->verify_errors++;
	}
	return 0;
}

static int remote_counter_sum(struct side *s, uint64_t *sum)
{
	uint64_t total = 0;
	struct xr_wc wc;

	for (unsigned q = 0; q < s->c->qps; q++) {
		uint8_t *landing = s->buf + 8 * q;
		struct xr_sge sg = { (uintptr_t)landing, 8, s->mr->lkey };
		struct xr_send_wr w = { .wr_id = 1u << 30, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_READ,
					.send_flags = XR_SEND_SIGNALED };
		double until = now_us() + 5e6;
		int n = 0;
		uint64_t v;
		w.wr.rdma.remote_addr = s->rem[q].vaddr + 8 * q;
		w.wr.rdma.rkey = s->rem[q].rkey;
		if (xr_post_send(s->qp[q], &w, NULL))
			return -1;
		while (!n && now_us() < until) {
			pump(s);
			n = xr_poll_cq(s->cq, 1, &wc);
			if (n && wc.wr_id != (1u << 30))
				n = 0;
		}
		if (!n || check_wc(s, &wc))
			return -1;
		memcpy(&v, landing, 8);
		total += v;
	}
	for (unsigned k = 0; k < s->slots; k++)   /* restore our READ sources */
		for (size_t i = 0; i < s->slot; i++)
			s->buf[k * s->slot + i] = pattern(k, i);
	*sum = total;
	return 0;
}

int run_bw(struct side *s)
{
	const struct cfg *c = s->c;
	struct proto pr = proto_of(c);
	bool sender = !s->server || c->bidir;
	bool receiver = c->verb == V_SEND && (s->server || c->bidir);

	fprintf(s->out, RESULT_LINE);
	fprintf(s->out, c->gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
				 : " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n");
	/* Kept across sizes: receives still posted from one size are used by the next. */
	struct rx_slots slots = { .exact = c->verify && (c->qps > 1 || c->use_srq), .refill_q = -1 };

	for (uint64_t size = c->all ? 2 : c->size; size <= (c->all ? (1u << 23) : c->size); size *= 2) {
		struct bw_report mine = { size, 0, 0, 0, 0 }, theirs;
		if (c->verb == V_ATOMIC)
			size = mine.size = 8;
		if (c->all && ud_size(s, size) != size)
			break;   /* -a on UD: sizes up to the MTU */
		size = mine.size = ud_size(s, size);
		uint64_t preposted = receiver && !sender ? prepost(s, &slots, size) : 0;
		if (pr.pre_run_hs && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))
			return -1;
		if (sender && receiver) {
			fprintf(stderr, "%s: bidirectional send_bw is not supported; use write/read\n", prog);
			return -1;
		}
		if (sender) {
			uint64_t before = 0;
			if (c->verify && c->verb == V_ATOMIC && !c->bidir && remote_counter_sum(s, &before))
				return -1;
			if (run_bw_sender(s, size, &mine))
				return -1;
			if (c->verify && c->verb == V_WRITE && !c->bidir && verify_writes(s, size))
				return -1;
			if (c->verify && c->verb == V_ATOMIC && !c->bidir && verify_atomics(s, mine.iters, before))
				return -1;
		} else if (receiver) {
			if (run_bw_receiver(s, &slots, size, preposted, &mine))
				return -1;
		}
		/* The passive end keeps its engine answering until the peer is
		 * done. With both ends sending, each does: the client says it is
		 * done first (the handshake's first half), or each would wait for
		 * the other's word until PEER_WAIT_MS ran out. */
		bool said = c->bidir && pr.post_run_hs && s->oob.client;
		if (said && oob_handshake_send(&s->oob, &s->my[0]))
			return -1;
		if (!sender || c->bidir || receiver)
			pump_until_peer(s, PEER_WAIT_MS);
		if (pr.post_run_hs && (said ? oob_handshake_recv(&s->oob, &s->rem[0])
					    : oob_handshake(&s->oob, &s->my[0], &s->rem[0])))
			return -1;
		if (pr.reports) {
			if (oob_bw_reports(&s->oob, &mine, &theirs))
				return -1;
		} else {
			theirs = mine;   /* each end prints its own figures (perftest's send_bw) */
		}
		if (c->bidir) {
			theirs.bw_avg += mine.bw_avg;
			theirs.bw_peak += mine.bw_peak;
			theirs.msg_rate += mine.msg_rate;
		}
		{
			/* The server prints what the client measured, as perftest does
			 * (where the reports are exchanged). */
			struct bw_report *r = (s->server && pr.reports) || c->bidir ? &theirs : &mine;
			print_bw_line(s->out, r);
			if (!s->quiet_out)   /* in one process only the client reports */
				json_bw(c, r);
		}
		if (c->verb == V_ATOMIC || !c->all)
			break;
	}
	fprintf(s->out, RESULT_LINE);
	report_verify(s);
	return s->rc;
}
