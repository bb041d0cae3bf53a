/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's resources: the clock, the payload pattern and the engine pump;
 * the device, PD, CQ, MR and QPs of one side, their connection (INIT, RTR,
 * RTS) and their release; and perftest's exchange up to the run itself.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 167 + i * 31 + (i >> 9) + 1);
}

/* The engine moves only when someone runs it (inline progress). */
void pump(struct side *s)
{
	if (s->c->progress == XR_PROGRESS_INLINE)
		xr_engine_poll(xr_context_engine(s->ctx));   /* called in tight loops */
}

static void pump_hook(void *arg)
{
	pump(arg);
}

/* Waits (up to ms) for the OOB socket to turn readable, or to end, while
 * keeping the engine going. */
void pump_until_peer(struct side *s, unsigned ms)
{
	double end = now_us() + ms * 1e3;

	while (now_us() < end) {
		struct pollfd p = { s->oob.fd, POLLIN, 0 };
		if (poll(&p, 1, 0) > 0)
			return;
		if (s->c->progress == XR_PROGRESS_THREAD) {
			poll(&p, 1, 10);
			continue;
		}
		/* The engine between looks at the socket: a poll per pass would
		 * leave the passive end (the one moving the data in) more time
		 * in the kernel than in its engine. The peer's "done" waits at
		 * most this long. */
		for (double next = now_us() + PEER_CHECK_US; now_us() < next;)
			for (int i = 0; i < 64; i++)
				pump(s);
	}
}

int mtu_enum_of(int bytes)
{
	switch (bytes) {
	case 256: return 1;
	case 512: return 2;
	case 1024: return 3;
	case 2048: return 4;
	case 4096: return 5;
	default: return 0;
	}
}

/* As rxe: the largest IB MTU that fits the link's MTU minus RoCE's overhead. */
/* -g (perftest's multicast): this end's QPs join the group and the peer
 * learns the group's GID and QPN 0xFFFFFF in their place, so its AH and
 * sends go to the group. Without -M the group is 239.1.1.1 (ff0e::c985:1
 * on an IPv6 link; perftest's own default is an IPv6 group, which an IPv4
 * RoCE port cannot reach), the client's one more (send_lat: each end
 * joins its own). */
static int join_group(struct side *s)
{
	xr_gid own;

	xr_query_gid(s->ctx, &own);
	if (s->c->mgid)
		perf_mgid(s->c->mgid, &s->mgid);
	else
		xr_gid_parse(&s->mgid, xr_gid_is_ipv4(&own) ? "239.1.1.1" : "ff0e::c985:1");
	if (!s->c->mgid && !s->server)
		s->mgid.raw[15]++;
	for (unsigned q = 0; q < s->c->qps; q++) {
		int err = xr_attach_mcast(s->qp[q], &s->mgid);
		if (err) {
			fprintf(stderr, "%s: cannot attach QP %u to the group: %s\n", prog, q, strerror(err));
			return -1;
		}
		s->mcg_attached = true;
		s->my[q].qpn = XR_QPN_MCAST;
		s->my[q].gid = s->mgid;
	}
	return 0;
}

/* ---- setup ---- */

int open_side(struct side *s)
{
	const struct cfg *c = s->c;
	struct xr_device_opts d = { .addr = c->link.addr, .progress = c->progress,
				    .retry7_forever = c->retry7_forever };
	struct xr_qp_init_attr ia;
	uint64_t max_size = c->all ? (1u << 23) : c->size;

	s->ctx = xr_open_device(s->link, &d);
	if (!s->ctx) {
		fprintf(stderr, "%s: cannot open the device on %s: %s\n", prog, c->link.addr, strerror(errno));
		return -1;
	}
	/* A peer resolves our address (ARP) while we wait on the exchange. */
	if (c->progress == XR_PROGRESS_INLINE) {
		s->oob.idle = pump_hook;
		s->oob.idle_arg = s;
	}
	s->pd = xr_alloc_pd(s->ctx);
	/* Room for every completion the QPs can owe at once (as perftest:
	 * -r receives and -t sends per QP): an engine thread completes
	 * receives while this end is not polling. */
	s->cq = xr_create_cq(s->ctx, (int)(c->qps * (c->tx_depth + c->rx_depth) < 8192 ? 8192 :
					    c->qps * (c->tx_depth + c->rx_depth)));
	s->grh = c->conn == XR_QPT_UD ? PERF_UD_GRH : 0;
	s->slot = max_size + s->grh < 64 ? 64 : (size_t)(max_size + s->grh);
	s->slots = s->slot >= (1u << 20) ? 2 : 16;
	s->buf_len = s->slot * s->slots * 2 + 4096;
	s->buf = aligned_alloc(4096, (s->buf_len + 4095) & ~(size_t)4095);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	memset(s->buf, 0, s->buf_len);
	/* READ sources hold a known pattern: the reader checks it. */
	for (unsigned k = 0; k < s->slots; k++)
		for (size_t i = 0; i < s->slot; i++)
			s->buf[k * s->slot + i] = pattern(k, i);
	s->mr = xr_reg_mr(s->pd, s->buf, s->buf_len, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
							XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC);
	if (!s->mr) {
		fprintf(stderr, "%s: cannot register %zu bytes: %s\n", prog, s->buf_len, strerror(errno));
		return -1;
	}
	if (c->use_srq) {
		struct xr_srq_init_attr sa = { { c->rx_depth, 1, 0 } };
		s->srq = xr_create_srq(s->pd, &sa);
		if (!s->srq) {
			fprintf(stderr, "%s: cannot create the SRQ: %s\n", prog, strerror(errno));
			return -1;
		}
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = s->cq;
	ia.qp_type = c->conn;
	ia.srq = s->srq;
	ia.cap.max_send_wr = c->tx_depth < 2 ? 2 : c->tx_depth;
	ia.cap.max_recv_wr = c->rx_depth;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = c->inline_size;
	for (unsigned q = 0; q < c->qps; q++) {
		s->qp[q] = xr_create_qp(s->pd, &ia);
		if (!s->qp[q]) {
			fprintf(stderr, "%s: cannot create QP %u: %s\n", prog, q, strerror(errno));
			return -1;
		}
		s->my[q].qpn = xr_qp_num(s->qp[q]);
		s->my[q].psn = (uint32_t)lrand48() & 0xFFFFFF;
		s->my[q].rkey = s->mr->rkey;
		s->my[q].vaddr = (uintptr_t)s->buf;
		s->my[q].out_reads = XR_MAX_RD_ATOMIC;
		xr_query_gid(s->ctx, &s->my[q].gid);
	}
	if (c->mcg && (s->server || c->lat) && join_group(s))
		return -1;
	/* pingpong exchanges no MTU (as ibv_rc_pingpong): both ends take its
	 * default, 1024, not each its own link's, which may differ. */
	{
		int active = (int)xr_active_mtu(s->ctx), pp = mtu_enum_of(1024);
		if (c->mtu && mtu_enum_of(c->mtu) > active) {
			fprintf(stderr, "%s: -m %u is above the link's active MTU, %u (its IP MTU is %u)\n", prog,
				(unsigned)c->mtu, 128u << active, s->link->mtu);
			return -1;
		}
		s->mtu = c->mtu ? mtu_enum_of(c->mtu) : c->pingpong ? (pp < active ? pp : active) : active;
	}
	return 0;
}

/* UD (G1): a Q_Key instead of a path; the peer's address goes into an AH. */
static int connect_ud(struct side *s, unsigned q)
{
	struct xr_qp_attr a;
	struct xr_ah_attr aa;

	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.qkey = PERF_UD_QKEY;
	if (xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY))
		return -1;
	a.qp_state = XR_QPS_RTR;
	if (xr_modify_qp(s->qp[q], &a, XR_QP_STATE))
		return -1;
	a.qp_state = XR_QPS_RTS;
	a.sq_psn = s->my[q].psn;
	if (xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_SQ_PSN))
		return -1;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 0xFF;
	aa.grh.dgid = s->rem[q].gid;
	s->ah[q] = xr_create_ah(s->pd, &aa);
	if (!s->ah[q]) {
		fprintf(stderr, "%s: cannot create the address handle (peer unreachable?): %s\n", prog, strerror(errno));
		return -1;
	}
	return 0;
}

int post_recv_buf(struct side *s, unsigned q, uint8_t *buf, uint32_t len, uint64_t id)
{
	struct xr_sge sg = { (uintptr_t)buf, len + s->grh, s->mr->lkey };
	struct xr_recv_wr r = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	return s->srq ? xr_post_srq_recv(s->srq, &r, NULL) : xr_post_recv(s->qp[q], &r, NULL);
}

void set_dest(struct side *s, unsigned q, struct xr_send_wr *w)
{
	if (s->c->conn != XR_QPT_UD)
		return;
	w->wr.ud.ah = s->ah[q];
	w->wr.ud.remote_qpn = s->rem[q].qpn;
	w->wr.ud.remote_qkey = PERF_UD_QKEY;
}

uint64_t ud_size(struct side *s, uint64_t size)
{
	static bool said;
	uint64_t mtu = 128u << s->mtu;

	if (s->c->conn != XR_QPT_UD || size <= mtu)
		return size;
	if (!said && !s->quiet_out) {
		fprintf(stderr, " Max msg size in UD is MTU %" PRIu64 "\n Changing to this MTU\n", mtu);
		said = true;
	}
	return mtu;
}

int connect_qp(struct side *s, unsigned q)
{
	const struct cfg *c = s->c;
	struct xr_connect_attr a;

	if (c->conn == XR_QPT_UD)
		return connect_ud(s, q);
	xr_connect_attr_init(&a);
	a.dest_qp_num = s->rem[q].qpn;
	a.rq_psn = s->rem[q].psn;
	a.sq_psn = s->my[q].psn;
	a.dgid = s->rem[q].gid;
	a.path_mtu = (enum xr_mtu)s->mtu;
	a.hop_limit = 0xFF;
	if (c->conn == XR_QPT_UC) {
		/* UC (G1): RC's path without READ/atomic resources or timers. */
		a.access = XR_ACCESS_REMOTE_WRITE;
	} else {
		a.max_dest_rd_atomic = (uint8_t)(s->my[q].out_reads > XR_MAX_RD_ATOMIC ? XR_MAX_RD_ATOMIC : s->my[q].out_reads);
		a.max_rd_atomic = (uint8_t)(s->rem[q].out_reads > XR_MAX_RD_ATOMIC ? XR_MAX_RD_ATOMIC : s->rem[q].out_reads);
		a.timeout = (uint8_t)c->qp_timeout;
	}
	/* INIT and RTS cannot fail with these values: a failure is RTR's. */
	if (xr_qp_connect(s->qp[q], &a)) {
		fprintf(stderr, "%s: cannot move QP to RTR (peer unreachable?)\n", prog);
		return -1;
	}
	return 0;
}

int check_wc(struct side *s, const struct xr_wc *wc)
{
	if (wc->status != XR_WC_SUCCESS) {
		fprintf(stderr, "%s: completion with error: %s (wr_id %" PRIu64 ", QP %#x)\n", prog,
			xr_wc_status_str(wc->status), wc->wr_id, wc->qp_num);
		s->rc = -1;
		return -1;
	}
	return 0;
}

void close_side(struct side *s)
{
	for (unsigned q = 0; q < MAX_QPS; q++) {
		if (s->ah[q])
			xr_destroy_ah(s->ah[q]);
		if (s->qp[q] && s->mcg_attached)
			xr_detach_mcast(s->qp[q], &s->mgid);   /* an attached QP is not destroyed */
		if (s->qp[q])
			xr_destroy_qp(s->qp[q]);
	}
	if (s->srq)
		xr_destroy_srq(s->srq);
	if (s->mr)
		xr_dereg_mr(s->mr);
	if (s->cq)
		xr_destroy_cq(s->cq);
	if (s->pd)
		xr_dealloc_pd(s->pd);
	if (s->ctx)
		xr_close_device(s->ctx);
	free(s->buf);
}

struct proto proto_of(const struct cfg *c)
{
	if (!c->lat)
		return c->verb == V_SEND ? (struct proto){ true, false, false, true, true }
					 : (struct proto){ false, true, true, true, false };
	switch (c->verb) {
	case V_WRITE: return (struct proto){ false, false, false, false, false };
	case V_SEND: return (struct proto){ false, false, false, true, true };
	default: return (struct proto){ false, false, false, true, false };
	}
}

/* perftest's sequence up to the test itself. */
int prologue(struct side *s)
{
	const struct cfg *c = s->c;

	if (oob_perftest_preamble(&s->oob, &s->mtu))
		return -1;
	if (c->lat && oob_handshake(&s->oob, &s->my[0], &s->rem[0]))
		return -1;
	for (unsigned q = 0; q < c->qps; q++)
		if (oob_handshake(&s->oob, &s->my[q], &s->rem[q]))
			return -1;
	for (unsigned q = 0; q < c->qps; q++)
		if (connect_qp(s, q))
			return -1;
	for (unsigned q = 0; q < c->qps; q++)
		if (oob_handshake(&s->oob, &s->my[q], &s->rem[q]))
			return -1;
	/* One more after RTR, so neither side sends before the other can receive. */
	return oob_handshake(&s->oob, &s->my[0], &s->rem[0]);
}
