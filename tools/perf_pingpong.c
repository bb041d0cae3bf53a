/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf pingpong: ibv_rc_pingpong's exchange ("LID:QPN:PSN:GID" over
 * TCP), its echo loop and figures, and the linger that answers a peer's
 * retransmissions after the run.
 */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* ---- ibv_rc_pingpong-compatible mode ---- */

/* rc_pingpong sends from the buffer it receives into, so each side echoes
 * what it got. We do the same through two slots: receives land in slot 0,
 * sends leave from slot 1, copied from slot 0 when the send is posted.
 * With --verify slot 0 is poisoned before it can receive again, and every
 * message must equal the one we sent last (the peer's echo): a lost,
 * stale or corrupted message shows. The server's first message is the
 * client's own, so it has nothing to be compared with. */
#define PP_POISON 0xa5
#define XR_STR_(x) #x
#define XR_STR(x) XR_STR_(x)
#define PP_FINAL_ACK_MS 3000  /* the last send's ACK, from a peer that may have left */
#define PP_QUIET_MS 1000      /* linger ends after this long without a frame from the peer */

static int pp_post_recv(struct side *s, uint64_t size)
{
	struct xr_sge sg = { (uintptr_t)s->buf, (uint32_t)size, s->mr->lkey };
	struct xr_recv_wr r = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };
	return xr_post_recv(s->qp[0], &r, NULL);
}

static int pp_post_send(struct side *s, uint64_t size)
{
	struct xr_sge sg = { (uintptr_t)s->buf + s->slot, (uint32_t)size, s->mr->lkey };
	struct xr_send_wr w = { .wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_SEND,
				.send_flags = XR_SEND_SIGNALED };
	return xr_post_send(s->qp[0], &w, NULL);
}

/* Echo what slot 0 holds (after the first client send). */
static int pp_echo(struct side *s, uint64_t size)
{
	memcpy(s->buf + s->slot, s->buf, size);
	if (s->c->verify)
		memset(s->buf, PP_POISON, size);
	return pp_post_send(s, size);
}

static void pp_check(struct side *s, const struct xr_wc *wc, uint64_t size, uint64_t rcnt)
{
	if (!s->c->verify || (s->server && rcnt == 1))
		return;
	s->verified++;
	if (wc->byte_len != size || memcmp(s->buf, s->buf + s->slot, size)) {
		if (!s->verify_errors)
			fprintf(stderr, "%s: message %" PRIu64 " is not the echo of the one sent before it\n", prog, rcnt);
		s->verify_errors++;
	}
}

/* rc_pingpong closes its TCP connection before the first message, so
 * there is no hang-up to wait for: answer the peer's retransmissions
 * (our last ACK may have been lost) until it has been quiet a while. */
void pp_linger(struct side *s)
{
	uint64_t seen = 0, now_seen = 0;
	double t0 = now_us(), quiet_since = t0;

	xr_regio_read_counter(xr_context_regs(s->ctx), XR_CNT_RX_PKTS, &seen);
	while (now_us() - t0 < LINGER_MS * 1e3 && now_us() - quiet_since < PP_QUIET_MS * 1e3) {
		pump(s);
		xr_regio_read_counter(xr_context_regs(s->ctx), XR_CNT_RX_PKTS, &now_seen);
		if (now_seen != seen) {
			seen = now_seen;
			quiet_since = now_us();
		}
		if (s->c->progress == XR_PROGRESS_THREAD)
			usleep(1000);
	}
}

static int pp_connect(struct side *s)
{
	char done[5] = "done", g[64];

	/* rc_pingpong: the client writes first; the server answers after RTR/RTS. */
	if (s->server ? oob_pingpong_read(&s->oob, &s->rem[0]) || connect_qp(s, 0) ||
				oob_pingpong_write(&s->oob, &s->my[0])
		      : oob_pingpong_write(&s->oob, &s->my[0]) || oob_pingpong_read(&s->oob, &s->rem[0]) ||
				connect_qp(s, 0)) {
		fprintf(stderr, "%s: pingpong exchange failed\n", prog);
		return -1;
	}
	if (s->server ? oob_recv_raw(&s->oob, done, sizeof(done)) : oob_send_raw(&s->oob, done, sizeof(done))) {
		fprintf(stderr, "%s: pingpong 'done' exchange failed\n", prog);
		return -1;
	}
	fprintf(s->out, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", s->my[0].lid, s->my[0].qpn,
		s->my[0].psn, xr_gid_format(&s->my[0].gid, g, sizeof(g)));
	fprintf(s->out, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", s->rem[0].lid,
		s->rem[0].qpn, s->rem[0].psn, xr_gid_format(&s->rem[0].gid, g, sizeof(g)));
	return 0;
}

int run_pingpong(struct side *s)
{
	const struct cfg *c = s->c;
	uint64_t size = c->size, iters = c->iters, rcnt = 0, scnt = 0, sdone = 0;
	bool echo_due = false, final_unacked = false;
	struct xr_wc wc[16];
	double t0, t_end, last_post = 0;

	if (pp_connect(s))
		return -1;
	for (unsigned i = 0; i < c->rx_depth; i++)
		if (pp_post_recv(s, size)) {
			fprintf(stderr, "%s: cannot post %u receives\n", prog, c->rx_depth);
			return -1;
		}
	t0 = t_end = now_us();
	if (!s->server) {
		/* A pattern, with each 4 KiB page's first byte zero: what an
		 * ibv_rc_pingpong server with -c checks for at its end. */
		for (uint64_t i = 0; i < size; i++)
			s->buf[s->slot + i] = i % 4096 ? pattern(7, i) : 0;
		if (pp_post_send(s, size)) {
			fprintf(stderr, "%s: cannot post the first send\n", prog);
			return -1;
		}
		scnt++;
		last_post = now_us();
	}
	/* As rc_pingpong: the next send waits for both the peer's message and
	 * our previous send's completion (its slot is about to be reused). */
	while (rcnt < iters || scnt < iters || sdone < scnt) {
		int n;
		pump(s);
		n = xr_poll_cq(s->cq, 16, wc);
		if (n > 0)
			t_end = now_us();   /* the figures end at the last completion */
		for (int i = 0; i < n; i++) {
			/* The last send's retries can run out before the wait below
			 * does: the same lost ACK, the same verdict. */
			if (wc[i].status == XR_WC_RETRY_EXC_ERR && wc[i].wr_id == 2 && rcnt == iters &&
			    scnt == iters && sdone + 1 == scnt) {
				final_unacked = true;
				break;
			}
			if (check_wc(s, &wc[i]))
				return -1;
			if (!(wc[i].opcode & XR_WC_RECV)) {
				sdone++;
				continue;
			}
			rcnt++;
			pp_check(s, &wc[i], size, rcnt);
			if (pp_post_recv(s, size)) {
				fprintf(stderr, "%s: cannot repost a receive\n", prog);
				return -1;
			}
			echo_due = scnt < iters;
		}
		if (echo_due && sdone == scnt) {
			if (pp_echo(s, size)) {
				fprintf(stderr, "%s: send queue full\n", prog);
				return -1;
			}
			echo_due = false;
			scnt++;
			last_post = now_us();
		}
		/* rc_pingpong leaves once its last send completed and its last
		 * message arrived, without a closing word: if the ACK for our last
		 * message is lost, nobody is left to repeat it. A client knows its
		 * message arrived (the server's last one answers it); a server has
		 * only the client's own report. */
		if (rcnt == iters && scnt == iters && sdone + 1 == scnt &&
		    (final_unacked || now_us() - last_post > PP_FINAL_ACK_MS * 1e3)) {
			fprintf(stderr, "%s: the peer did not acknowledge our last message (%s) and has left; %s\n", prog,
				final_unacked ? "retries exhausted" : "no ACK within " XR_STR(PP_FINAL_ACK_MS) " ms", s->server ? "only its exit status tells whether the message arrived"
								 : "its answer to that message proves it arrived");
			break;
		}
		if (now_us() - t0 > 60e6) {
			fprintf(stderr, "%s: pingpong stalled at %" PRIu64 "/%" PRIu64 "\n", prog, rcnt, scnt);
			return -1;
		}
	}
	{
		double usec = t_end - t0;
		uint64_t bytes = size * iters * 2;
		fprintf(s->out, "%" PRIu64 " bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
			(double)bytes * 8 / usec);
		fprintf(s->out, "%" PRIu64 " iters in %.2f seconds = %.2f usec/iter\n", iters, usec / 1e6, usec / (double)iters);
	}
	report_verify(s);
	if (s->rc)
		return s->rc;
	return sdone < scnt && s->server ? PP_EXIT_UNACKED : 0;
}
