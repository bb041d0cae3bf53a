/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry: a hostile peer's frames into a live engine. One device
 * on an in-memory link with an RC QP, an RC QP on an SRQ, a UC and a UD
 * QP, and regions of each kind of access; the peer's end of the link is
 * the fuzzer's. Each input is a script of steps: packets built from
 * fuzzed fields (a good ICRC, so they reach the transport), raw bytes
 * after the UDP header (sealed with a good ICRC too), and the host's own
 * moves (posts of every kind toward the peer, a clock step that fires the
 * timers, a QP moved to ERR or restarted, a region registered again).
 * Checked at every step: each frame the engine sends parses, ICRC
 * included; each READ response holds the bytes its READ named, inside a
 * region; each completion is of a QP of ours with a known status. At the
 * end of each input: nothing written outside the regions (guard bytes),
 * nor into the regions a peer may not write (read-only, local-only,
 * another PD's); and the sanitizers' checks throughout. Each input starts
 * from the same state (start_input), so a crash's input replays alone
 * (R_Key values aside: registering again moves them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/engine.h"
#include "xroce/opcodes.h"
#include "xroce/link.h"
#include "xroce/verbs.h"
#include "xroce/wire.h"

#include "fuzz_util.h"

enum { QP_RC, QP_RC_SRQ, QP_UC, QP_UD, NQP };
enum { REG_ALL, REG_READ_ONLY, REG_LOCAL, REG_OTHER_PD, NREG };
#define PEER_QPN  0x100
#define QKEY      0x11111111u
#define MTU_BYTES 1024u
#define MAX_STEPS 64
#define ALL_ACCESS (XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | \
		    XR_ACCESS_REMOTE_ATOMIC)

static struct {
	struct xr_link *dut, *peer;
	struct xr_context *ctx;
	struct xr_engine *eng;
	struct xr_pd *pd, *pd2;
	struct xr_cq *cq;
	struct xr_srq *srq;
	struct xr_ah *ah;
	struct xr_qp *qp[NQP];
	struct region reg[NREG];
	uint64_t now;
	xr_gid dut_gid, peer_gid, group;
	/* The PSNs a well-behaved peer would use, per QP (reset per input):
	 * its next request's, and those of the engine's newest request, READ
	 * and atomic, which the peer's answers default to. */
	uint32_t req_psn[NQP], last_req[NQP], read_next[NQP], last_atomic[NQP];
	/* The READs injected lately, per QP: what their responses must hold. */
	struct injected_read { uint32_t psn, n; uint64_t va; } reads[NQP][8];
	unsigned nreads[NQP];
	unsigned touched;            /* QPs an input may have changed: brought up again */
	bool reregistered;           /* REG_ALL's key changed: the SRQ's WQEs name the old */
} F;

static struct xr_qp *qp_create(enum xr_qp_type type, struct xr_srq *srq)
{
	struct xr_qp_init_attr ia = { .send_cq = F.cq, .recv_cq = F.cq, .qp_type = type, .srq = srq };
	struct xr_qp *qp;

	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	qp = xr_create_qp(F.pd, &ia);
	check(qp, "create_qp failed");
	return qp;
}

static void init_once(void)
{
	struct xr_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 4 } };
	struct xr_ah_attr ah = { .is_global = 1, .port_num = 1 };

	check(!xr_link_mem_pair(&F.dut, &F.peer, 0), "mem link");
	F.ctx = xr_open_device(F.dut, &(struct xr_device_opts){ .addr = "10.0.0.1",
								 .progress = XR_PROGRESS_INLINE });
	check(F.ctx, "open_device");
	F.eng = xr_context_engine(F.ctx);
	F.now = 1000000000ull;
	xr_engine_set_clock(F.eng, fuzz_clock, &F.now);
	xr_gid_from_ipv4(&F.dut_gid, 0x0A000001);
	xr_gid_from_ipv4(&F.peer_gid, 0x0A000002);
	F.pd = xr_alloc_pd(F.ctx);
	F.pd2 = xr_alloc_pd(F.ctx);
	F.cq = xr_create_cq(F.ctx, 4096);
	check(F.pd && F.pd2 && F.cq, "pd, cq");
	region_open(&F.reg[REG_ALL], F.pd, 16384, ALL_ACCESS);
	region_open(&F.reg[REG_READ_ONLY], F.pd, 4096, XR_ACCESS_REMOTE_READ);
	region_open(&F.reg[REG_LOCAL], F.pd, 4096, XR_ACCESS_LOCAL_WRITE);
	region_open(&F.reg[REG_OTHER_PD], F.pd2, 4096, ALL_ACCESS);
	F.srq = xr_create_srq(F.pd, &sa);
	check(F.srq, "create_srq");
	ah.grh.dgid = F.peer_gid;
	ah.grh.hop_limit = 64;
	F.ah = xr_create_ah(F.pd, &ah);
	check(F.ah, "create_ah");
	F.qp[QP_RC] = qp_create(XR_QPT_RC, NULL);
	F.qp[QP_RC_SRQ] = qp_create(XR_QPT_RC, F.srq);
	F.qp[QP_UC] = qp_create(XR_QPT_UC, NULL);
	F.qp[QP_UD] = qp_create(XR_QPT_UD, NULL);
	/* The UD QP is in a multicast group too: datagrams to DestQP
	 * 0xFFFFFF reach it through the group's fan-out (mcast.c). */
	check(!xr_gid_parse(&F.group, "239.7.7.7") && !xr_attach_mcast(F.qp[QP_UD], &F.group), "attach_mcast");
	F.touched = ~0u;
}

static void recv_one(int q, uint64_t id, uint32_t off, uint32_t len)
{
	struct region *g = &F.reg[REG_ALL];
	struct xr_sge sg = { (uintptr_t)g->mem + off % g->len, len, g->mr->lkey };
	struct xr_recv_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	if (sg.addr + sg.length > (uintptr_t)g->mem + g->len)
		sg.length = (uint32_t)((uintptr_t)g->mem + g->len - sg.addr);
	if (q == QP_RC_SRQ)
		xr_post_srq_recv(F.srq, &w, NULL);
	else
		xr_post_recv(F.qp[q], &w, NULL);
}

/* QP q from RESET to RTS toward the peer, its PSNs 0 both ways, a few
 * receives posted (each input starts so; a step may restart one). */
static void bring_up(int q)
{
	struct xr_qp_attr a = { .qp_state = XR_QPS_RESET };

	check(!xr_modify_qp(F.qp[q], &a, XR_QP_STATE), "to RESET");
	F.req_psn[q] = F.last_req[q] = F.read_next[q] = F.last_atomic[q] = 0;
	if (q == QP_UD) {
		a.qp_state = XR_QPS_INIT;
		a.port_num = 1;
		a.qkey = QKEY;
		check(!xr_modify_qp(F.qp[q], &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY),
		      "UD INIT");
		a.qp_state = XR_QPS_RTR;
		check(!xr_modify_qp(F.qp[q], &a, XR_QP_STATE), "UD RTR");
		a.qp_state = XR_QPS_RTS;
		a.sq_psn = 0;
		check(!xr_modify_qp(F.qp[q], &a, XR_QP_STATE | XR_QP_SQ_PSN), "UD RTS");
	} else {
		struct xr_connect_attr c;
		xr_connect_attr_init(&c);
		c.dest_qp_num = PEER_QPN + (uint32_t)q;
		c.dgid = F.peer_gid;
		c.path_mtu = XR_MTU_1024;
		c.max_rd_atomic = c.max_dest_rd_atomic = 4;
		c.timeout = 10;
		c.retry_cnt = 2;
		c.rnr_retry = 2;
		c.min_rnr_timer = 1;
		check(!xr_qp_connect(F.qp[q], &c), "connect");
	}
	for (int i = 0; i < 4; i++)
		recv_one(q, (uint64_t)q << 56 | i, (uint32_t)(8192 + 1024 * i), 1024);
}

/* A region registered again: a new R_Key, the old one dead, while the
 * peer's packets may still name it. */
static void register_again(struct region *g, struct xr_pd *pd, int access)
{
	F.reregistered = true;
	check(!xr_dereg_mr(g->mr), "dereg_mr");
	g->mr = xr_reg_mr(pd, g->mem, g->len, access);
	check(g->mr, "reg_mr again");
}

/* What a request the engine sent says the peer's answers would carry. */
static void note_request(const struct xr_pkt *p)
{
	uint32_t q = p->dqpn - PEER_QPN;

	if (q >= QP_UD || !(p->op->flags & XR_OPF_REQ))
		return;
	F.last_req[q] = p->psn;
	if (p->op->flags & XR_OPF_READ) {
		uint32_t n = (p->reth.len + MTU_BYTES - 1) / MTU_BYTES;
		F.read_next[q] = p->psn;
		F.last_req[q] = (p->psn + (n ? n - 1 : 0)) & XR_PSN_MASK;
	}
	if (p->op->flags & XR_OPF_ATOMIC)
		F.last_atomic[q] = p->psn;
}

/* A READ response the engine sent holds the bytes its READ named, all
 * inside a region: memory has not changed since (one packet per step,
 * the engine run and drained after each). */
static void check_read_response(const struct xr_pkt *p)
{
	uint32_t q = p->dqpn - PEER_QPN;

	if (q >= NQP || !(p->op->flags & XR_OPF_READ_RESP) || !p->payload_len)
		return;
	for (unsigned i = F.nreads[q]; i-- > 0 && F.nreads[q] - i <= 8;) {
		const struct injected_read *r = &F.reads[q][i % 8];
		uint32_t k = (p->psn - r->psn) & XR_PSN_MASK;
		uint64_t va;
		if (k >= r->n)
			continue;
		va = r->va + (uint64_t)k * MTU_BYTES;
		for (int g = 0; g < NREG; g++) {
			const struct region *m = &F.reg[g];
			uint64_t base = (uint64_t)(uintptr_t)m->mem;
			if (va >= base && va < base + m->len) {
				check(va + p->payload_len <= base + m->len, "a READ response reads past region %d", g);
				check(!memcmp(p->payload, m->mem + (va - base), p->payload_len),
				      "a READ response's bytes are not region %d's", g);
				return;
			}
		}
		check(0, "a READ response from outside every region");
	}
}

/* Every frame the engine sent must parse, its ICRC good. */
static void drain_peer(void)
{
	struct xr_frame *f[32];
	int n;

	while ((n = xr_link_recv(F.peer, f, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			struct xr_pkt p;
			const uint8_t *d = f[i]->data;   /* not a gather link: every byte is here */
			enum xr_parse_err e = xr_pkt_parse(d, f[i]->len, 0, 0, &p);
			check(e == XR_PARSE_OK, "the engine sent a frame that does not parse: %s", xr_parse_err_name(e));
			note_request(&p);
			check_read_response(&p);
			xr_link_frame_free(F.peer, f[i]);
		}
	}
}

static void drain_cq(void)
{
	struct xr_wc wc[16];
	int n;

	while ((n = xr_poll_cq(F.cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			bool ours = false;
			for (int q = 0; q < NQP; q++)
				ours |= wc[i].qp_num == xr_qp_num(F.qp[q]);
			check(ours, "a completion of QP %u, not ours", wc[i].qp_num);
			check(wc[i].status <= XR_WC_GENERAL_ERR, "completion status %u", wc[i].status);
		}
}

static void run_engine(void)
{
	for (int i = 0; i < 16 && xr_engine_progress(F.eng) > 0; i++)
		;
	drain_peer();
	drain_cq();
}

static void send_frame(const uint8_t *buf, size_t len)
{
	struct xr_frame *f = xr_link_frame_alloc(F.peer);

	if (!f)
		return;
	memcpy(f->data, buf, len);
	f->len = (uint16_t)len;
	if (xr_link_send(F.peer, &f, 1) != 1)
		xr_link_frame_free(F.peer, f);
}

/* The addresses of a packet from the peer to QP q. */
static void addressed(struct xr_pkt *p, uint8_t opcode, int q)
{
	xr_pkt_init(p, opcode);
	memcpy(p->smac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x02 }, 6);
	memcpy(p->dmac, F.dut->mac, 6);
	p->sgid = F.peer_gid;
	p->dgid = F.dut_gid;
	p->dqpn = xr_qp_num(F.qp[q]);
	p->sport = xr_rxe_udp_sport(PEER_QPN + (uint32_t)q, p->dqpn);
}

/* A packet to QPN n may change that QP: the next input brings it up. */
static void touch_qpn(uint32_t n)
{
	for (int q = 0; q < NQP; q++)
		if (xr_qp_num(F.qp[q]) == n)
			F.touched |= 1u << q;
}

/* The PSN a well-behaved peer would put on a packet of these flags. */
static uint32_t default_psn(int q, uint32_t fl)
{
	if (fl & XR_OPF_REQ)
		return F.req_psn[q];
	if (fl & XR_OPF_READ_RESP)
		return F.read_next[q];
	if (fl & XR_OPF_ATOMIC_ACK)
		return F.last_atomic[q];
	return F.last_req[q];
}

/* Byte b as an index into the opcodes xroce knows; past their count, b
 * itself (most of those no table has). */
static uint8_t known_opcode(uint8_t b)
{
	size_t n;
	const struct xr_opcode_info *all = xr_opcode_all(&n);

	return b < n ? all[b].opcode : b;
}

/* An address in region g for len bytes, where bugs live: at its start or
 * its end, a few bytes either side, or inside. */
static uint64_t edge_va(const struct region *g, uint8_t where, uint32_t len)
{
	uint64_t base = (uint64_t)(uintptr_t)g->mem;
	int64_t delta = (int64_t)(where >> 4) - 8;

	switch ((where >> 2) & 3) {
	case 0: return base + (where >> 4) * 8u;
	case 1: return base + g->len - len + (uint64_t)delta;
	case 2: return base + (uint64_t)delta;
	default: return base + (where >> 4) * 256u;
	}
}

/* A packet from fuzzed fields. What a valid request has is the default
 * (lengths that agree, an address inside a region and its key), so that
 * the fuzzer reaches the checks past them; each bit of `odd` makes one of
 * them any value instead. */
static void inject_built(struct in *in)
{
	static uint8_t payload[XR_MAX_MTU + 64], buf[XR_MAX_FRAME];
	uint8_t opcode = known_opcode((uint8_t)rd(in, 1)), flags = (uint8_t)rd(in, 1), odd = (uint8_t)rd(in, 1);
	uint8_t where = (uint8_t)rd(in, 1);
	struct region *g = &F.reg[where % NREG];
	int q = (int)(rd(in, 1) % NQP);
	struct xr_pkt p;
	ssize_t n;

	const struct xr_opcode_info *op = xr_opcode_info(opcode);
	uint32_t fl = op ? op->flags : 0;

	addressed(&p, opcode, q);   /* an opcode no table has: build refuses it */
	p.psn = (odd & 1) ? (uint32_t)rd(in, 3) & XR_PSN_MASK : default_psn(q, fl);
	p.ackreq = flags & 1;
	p.se = flags & 2;
	p.fecn = flags & 4;
	p.becn = flags & 8;
	if (odd & 2)
		p.dqpn = (uint32_t)rd(in, 3);
	if (q == QP_UD && (flags & 64)) {   /* to the group it joined (with odd & 2, at any QPN) */
		p.dgid = F.group;
		xr_gid_mcast_mac(&F.group, p.dmac);
		if (!(odd & 2))
			p.dqpn = XR_QPN_MCAST;
		F.touched |= 1u << QP_UD;
	}
	touch_qpn(p.dqpn);
	if (odd & 4)
		p.payload_len = (uint32_t)rd(in, 2) % (MTU_BYTES + 64);
	else if (op && op->payload == XR_PAY_MTU)
		p.payload_len = MTU_BYTES;
	else
		p.payload_len = (uint32_t)rd(in, 1) * 4 % (MTU_BYTES + 1);
	/* A message of one packet, or of a few for a FIRST or a READ. */
	if (odd & 8)
		p.reth.len = (uint32_t)rd(in, 4);
	else if ((fl & XR_OPF_READ) || ((fl & XR_OPF_FIRST) && !(fl & XR_OPF_LAST)))
		p.reth.len = MTU_BYTES * (1 + (uint32_t)rd(in, 1) % 4) + (uint32_t)rd(in, 1) * 4;
	else
		p.reth.len = p.payload_len;
	p.reth.va = edge_va(g, where, p.reth.len);
	if (odd & 16)
		p.reth.va += (uint64_t)(int64_t)((int32_t)(uint32_t)rd(in, 2) - 32768);
	if (odd & 32)
		p.reth.va = rd(in, 8);
	p.reth.rkey = (odd & 64) ? (uint32_t)rd(in, 4) : g->mr->rkey;
	p.atomic.va = p.reth.va;
	p.atomic.rkey = p.reth.rkey;
	p.atomic.swap_add = rd(in, 8);
	p.atomic.compare = rd(in, 8);
	p.imm = (uint32_t)rd(in, 4);
	p.ieth_rkey = (flags & 16) ? (uint32_t)rd(in, 4) : g->mr->rkey;
	p.aeth.syndrome = (uint8_t)rd(in, 1);
	p.aeth.msn = (uint32_t)rd(in, 3) & 0xFFFFFF;
	p.atomic_orig = rd(in, 8);
	p.deth.qkey = (flags & 32) ? (uint32_t)rd(in, 4) : QKEY;
	p.deth.src_qp = PEER_QPN + QP_UD;
	for (uint32_t i = 0; i < p.payload_len; i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	p.payload = payload;
	n = xr_pkt_build(&p, buf, sizeof(buf));
	if (n <= 0)
		return;
	if (!(odd & 1) && (fl & XR_OPF_REQ))   /* the next request follows it */
		F.req_psn[q] = (p.psn + ((fl & XR_OPF_READ) ? (p.reth.len + MTU_BYTES - 1) / MTU_BYTES : 1)) &
			       XR_PSN_MASK;
	if (!(odd & 1) && (fl & XR_OPF_READ_RESP))
		F.read_next[q] = (p.psn + 1) & XR_PSN_MASK;
	if (fl & XR_OPF_READ) {   /* its responses are checked against memory */
		unsigned k = F.nreads[q]++ % 8;
		F.reads[q][k].psn = p.psn;
		F.reads[q][k].n = p.reth.len ? (p.reth.len + MTU_BYTES - 1) / MTU_BYTES : 1;
		F.reads[q][k].va = p.reth.va;
	}
	if (odd & 128)   /* a bad ICRC */
		buf[n - 1] ^= 0x5A;
	send_frame(buf, (size_t)n);
}

/* Raw bytes as the BTH and all after it, behind good Ethernet, IPv4 and
 * UDP headers, sealed with a good ICRC. */
static void inject_raw(struct in *in)
{
	static uint8_t buf[XR_MAX_FRAME];
	struct xr_pkt p;
	size_t len = (size_t)rd(in, 2) % (MTU_BYTES + 128), total;
	ssize_t h;

	addressed(&p, 0x04 /* RC SEND_ONLY */, (int)(rd(in, 1) % NQP));
	p.payload_len = 0;
	h = xr_pkt_build_hdrs(&p, buf, sizeof(buf));
	if (h <= 0)
		return;
	total = p.bth_off + len + XR_ICRC_LEN;
	if (total > sizeof(buf))
		return;
	for (size_t i = 0; i < len; i++)
		buf[p.bth_off + i] = (uint8_t)rd(in, 1);
	if (len >= 8)   /* the QP the raw BTH names */
		touch_qpn((uint32_t)buf[p.bth_off + 5] << 16 | (uint32_t)buf[p.bth_off + 6] << 8 | buf[p.bth_off + 7]);
	/* IPv4 total length, its checksum, the UDP length. */
	buf[p.l3_off + 2] = (uint8_t)((total - p.l3_off) >> 8);
	buf[p.l3_off + 3] = (uint8_t)(total - p.l3_off);
	buf[p.l3_off + 10] = buf[p.l3_off + 11] = 0;
	{
		uint16_t s = xr_ipv4_csum(buf + p.l3_off);
		buf[p.l3_off + 10] = (uint8_t)(s >> 8);
		buf[p.l3_off + 11] = (uint8_t)s;
	}
	buf[p.l4_off + 4] = (uint8_t)((total - p.l4_off) >> 8);
	buf[p.l4_off + 5] = (uint8_t)(total - p.l4_off);
	xr_pkt_seal(buf, p.l3_off, total, false);
	send_frame(buf, total);
}

/* The host posts toward the peer: the peer's answers are then the fuzzer's. */
static void host_post(struct in *in, uint64_t id)
{
	static const enum xr_wr_opcode ops[] = {
		XR_WR_RDMA_WRITE, XR_WR_RDMA_WRITE_WITH_IMM, XR_WR_SEND, XR_WR_SEND_WITH_IMM,
		XR_WR_RDMA_READ, XR_WR_ATOMIC_CMP_AND_SWP, XR_WR_ATOMIC_FETCH_AND_ADD, XR_WR_SEND_WITH_INV,
	};
	int q = (int)(rd(in, 1) % NQP);
	struct region *g = &F.reg[REG_ALL];
	uint32_t off = (uint32_t)rd(in, 2) % 8192, len = (uint32_t)rd(in, 2) % 4096;
	struct xr_sge sg = { (uintptr_t)g->mem + off, len, g->mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .send_flags = XR_SEND_SIGNALED };

	F.touched |= 1u << q;
	w.opcode = ops[rd(in, 1) % (sizeof(ops) / sizeof(ops[0]))];
	if (w.opcode == XR_WR_ATOMIC_CMP_AND_SWP || w.opcode == XR_WR_ATOMIC_FETCH_AND_ADD) {
		sg.length = 8;
		sg.addr &= ~(uint64_t)7;
	}
	w.wr.rdma.remote_addr = rd(in, 8) & ~(uint64_t)7;
	w.wr.rdma.rkey = (uint32_t)rd(in, 4);
	w.wr.atomic.remote_addr = w.wr.rdma.remote_addr;
	w.wr.atomic.rkey = w.wr.rdma.rkey;
	w.imm_data = (uint32_t)rd(in, 4);
	w.invalidate_rkey = w.wr.rdma.rkey;
	if (q == QP_UD) {
		w.opcode = (w.opcode & 1) ? XR_WR_SEND_WITH_IMM : XR_WR_SEND;
		if (sg.length > MTU_BYTES)
			sg.length = MTU_BYTES;
		w.wr.ud.ah = F.ah;
		w.wr.ud.remote_qpn = PEER_QPN + QP_UD;
		w.wr.ud.remote_qkey = QKEY;
	}
	xr_post_send(F.qp[q], &w, NULL);   /* refusals (UC READ, a full ring) are fine */
}

/* Only REG_ALL may change (the peer's WRITEs and atomics, the host's
 * receives and READs land there). */
static void check_regions(void)
{
	for (int r = 0; r < NREG; r++) {
		struct region *g = &F.reg[r];
		for (size_t i = 0; i < GUARD; i++)
			check(g->alloc[i] == GUARD_VAL && g->mem[g->len + i] == GUARD_VAL,
			      "region %d: a byte %s it changed", r, g->alloc[i] != GUARD_VAL ? "before" : "after");
		for (size_t i = 0; r != REG_ALL && i < g->len; i++)
			check(g->mem[i] == pattern(i), "region %d, which no peer may write: byte %zu changed", r, i);
	}
}

/* Every input starts from the same place: the QPs the last one may have
 * changed brought up again (the SRQ made anew with its QP, as it cannot
 * be emptied), REG_ALL's bytes restored. */
static void start_input(void)
{
	struct region *g = &F.reg[REG_ALL];

	if (F.touched & (1u << QP_RC_SRQ) || F.reregistered) {
		struct xr_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 4 } };
		check(!xr_destroy_qp(F.qp[QP_RC_SRQ]) && !xr_destroy_srq(F.srq), "destroy the SRQ");
		F.srq = xr_create_srq(F.pd, &sa);
		check(F.srq, "create_srq");
		F.qp[QP_RC_SRQ] = qp_create(XR_QPT_RC, F.srq);
		F.touched |= 1u << QP_RC_SRQ;
	}
	if (F.reregistered)
		F.touched = ~0u;   /* receives posted with the old key */
	for (int q = 0; q < NQP; q++)
		if (F.touched & (1u << q))
			bring_up(q);
	for (size_t i = 0; i < g->len; i++)
		g->mem[i] = pattern(i);
	memset(F.nreads, 0, sizeof(F.nreads));
	F.touched = 0;
	F.reregistered = false;
	run_engine();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	uint64_t id = 1;

	if (!F.ctx)
		init_once();
	start_input();
	for (int step = 0; step < MAX_STEPS && in.n; step++) {
		uint8_t kind = (uint8_t)rd(&in, 1);
		switch (kind % 8) {
		case 0: case 1: case 2:
			inject_built(&in);
			break;
		case 3:
			inject_raw(&in);
			break;
		case 4:
			host_post(&in, id++);
			break;
		case 5: {
			int q = (int)(rd(&in, 1) % NQP);
			F.touched |= 1u << q;
			recv_one(q, id++, (uint32_t)rd(&in, 2), (uint32_t)rd(&in, 2) % 4096);
			break;
		}
		case 6:   /* time passes: up to ~65 ms, the ACK and RNR timers fire */
			F.now += rd(&in, 2) * 1000u;
			break;
		case 7: {   /* the host moves a QP: to ERR or SQD, or restarts it */
			uint8_t how = (uint8_t)rd(&in, 1);
			int q = (int)(rd(&in, 1) % NQP);
			struct xr_qp_attr a = { .qp_state = (how & 1) ? XR_QPS_ERR : XR_QPS_SQD };
			F.touched |= 1u << q;
			if (how & 2)
				bring_up(q);
			else if (how & 4)
				register_again(&F.reg[REG_ALL], F.pd, ALL_ACCESS);
			else
				xr_modify_qp(F.qp[q], &a, XR_QP_STATE);
			break;
		}
		}
		run_engine();
	}
	/* The rest of the timers, then the flush of whatever is left. */
	for (int i = 0; i < 3; i++) {
		F.now += 100000000ull;
		run_engine();
	}
	check_regions();
	return 0;
}
