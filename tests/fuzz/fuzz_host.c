/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry: a buggy or hostile host against two live engines on an
 * in-memory link. Each side has an RC QP, an RC QP on an SRQ, a UC and a
 * UD QP, connected to the other side's, and two regions (one the peer may
 * write, one read-only). Each input is a script of what a host can do
 * through its rings and doorbells: post valid WRs and receives, scribble
 * bytes of any slot of a send, receive or SRQ ring (a WQE may be one the
 * engine owns), ring any doorbell (send, receive, CQ consumer index, CQ
 * arm, SRQ) with an arbitrary index near the engine's own, move a QP to
 * ERR or SQD, and run the engines one side at a time on a fuzzed clock,
 * so WQEs are resent (ACK timers) while being scribbled.
 * Checked: every completion names a QP of its side with a known status;
 * at the end of each input nothing was written outside the regions
 * (guard bytes) nor into the read-only ones; once every QP is in ERR the
 * engines go idle (nothing left busy for good); and the sanitizers'
 * checks throughout. Each input starts from fresh QPs, SRQs and CQs, the
 * link drained, so a crash's input replays alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/engine.h"
#include "xroce/link.h"
#include "xroce/regio.h"
#include "xroce/regmap.h"
#include "xroce/ring.h"
#include "xroce/verbs.h"

#include "fuzz_util.h"

enum { QP_RC, QP_RC_SRQ, QP_UC, QP_UD, NQP };
enum { REG_ALL, REG_RO, NREG };
#define QKEY      0x11111111u
#define DEPTH     16
#define MAX_STEPS 64
#define ALL_ACCESS (XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | \
		    XR_ACCESS_REMOTE_ATOMIC)

struct side {
	struct xr_link *link;
	struct xr_context *ctx;
	struct xr_engine *eng;
	struct xr_regio *regs;
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_srq *srq;
	struct xr_ah *ah;            /* toward the other side */
	struct xr_qp *qp[NQP];
	struct region reg[NREG];
	xr_gid gid;
};

static struct {
	struct side s[2];
	uint64_t now;
	bool ready;
} F;

static void init_once(void)
{
	static const char *addr[2] = { "10.0.0.1", "10.0.0.2" };

	check(!xr_link_mem_pair(&F.s[0].link, &F.s[1].link, 0), "mem link");
	F.now = 1000000000ull;
	for (int k = 0; k < 2; k++) {
		struct side *s = &F.s[k];
		s->ctx = xr_open_device(s->link, &(struct xr_device_opts){ .addr = addr[k],
									   .progress = XR_PROGRESS_INLINE });
		check(s->ctx, "open_device");
		s->eng = xr_context_engine(s->ctx);
		s->regs = xr_context_regs(s->ctx);
		xr_engine_set_clock(s->eng, fuzz_clock, &F.now);
		xr_query_gid(s->ctx, &s->gid);
		s->pd = xr_alloc_pd(s->ctx);
		check(s->pd, "pd");
		region_open(&s->reg[REG_ALL], s->pd, 16384, ALL_ACCESS);
		region_open(&s->reg[REG_RO], s->pd, 4096, XR_ACCESS_REMOTE_READ);
	}
	for (int k = 0; k < 2; k++) {
		struct xr_ah_attr ah = { .is_global = 1, .port_num = 1 };
		ah.grh.dgid = F.s[!k].gid;
		ah.grh.hop_limit = 64;
		F.s[k].ah = xr_create_ah(F.s[k].pd, &ah);
		check(F.s[k].ah, "create_ah");
	}
}

static struct xr_qp *qp_create(struct side *s, enum xr_qp_type type, struct xr_srq *srq)
{
	struct xr_qp_init_attr ia = { .send_cq = s->cq, .recv_cq = s->cq, .qp_type = type, .srq = srq };
	struct xr_qp *qp;

	ia.cap.max_send_wr = DEPTH;
	ia.cap.max_recv_wr = DEPTH;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	qp = xr_create_qp(s->pd, &ia);
	check(qp, "create_qp failed");
	return qp;
}

static void recv_one(struct side *s, int q, uint64_t id, uint32_t off, uint32_t len)
{
	struct region *g = &s->reg[REG_ALL];
	struct xr_sge sg = { (uintptr_t)g->mem + off % g->len, len, g->mr->lkey };
	struct xr_recv_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	if (sg.addr + sg.length > (uintptr_t)g->mem + g->len)
		sg.length = (uint32_t)((uintptr_t)g->mem + g->len - sg.addr);
	if (q == QP_RC_SRQ)
		xr_post_srq_recv(s->srq, &w, NULL);
	else
		xr_post_recv(s->qp[q], &w, NULL);   /* a full ring refuses: fine */
}

/* QP q of side k to RTS toward the other side's, PSNs 0. */
static void bring_up(int k, int q)
{
	struct side *s = &F.s[k], *o = &F.s[!k];
	struct xr_qp_attr a = { .qp_state = XR_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (q == QP_UD) {
		check(!xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY),
		      "UD INIT");
		a.qp_state = XR_QPS_RTR;
		check(!xr_modify_qp(s->qp[q], &a, XR_QP_STATE), "UD RTR");
		a.qp_state = XR_QPS_RTS;
		a.sq_psn = 0;
		check(!xr_modify_qp(s->qp[q], &a, XR_QP_STATE | XR_QP_SQ_PSN), "UD RTS");
	} else {
		struct xr_connect_attr c;
		xr_connect_attr_init(&c);
		c.dest_qp_num = xr_qp_num(o->qp[q]);
		c.dgid = o->gid;
		c.path_mtu = XR_MTU_1024;
		c.max_rd_atomic = c.max_dest_rd_atomic = 4;
		c.timeout = 10;   /* about 4 ms of the fuzzed clock */
		c.retry_cnt = 3;
		c.rnr_retry = 3;
		c.min_rnr_timer = 1;
		check(!xr_qp_connect(s->qp[q], &c), "connect");
	}
}

/* Frames still in the link: gone before the next input's QPs exist. */
static void drain_links(void)
{
	struct xr_frame *f[32];
	int n;

	for (int k = 0; k < 2; k++)
		while ((n = xr_link_recv(F.s[k].link, f, 32)) > 0)
			for (int i = 0; i < n; i++)
				xr_link_frame_free(F.s[k].link, f[i]);
}

static void drain_cq(struct side *s)
{
	struct xr_wc wc[16];
	int n;

	while ((n = xr_poll_cq(s->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			bool ours = false;
			for (int q = 0; q < NQP; q++)
				ours |= wc[i].qp_num == xr_qp_num(s->qp[q]);
			check(ours, "a completion of QP %u, not ours", wc[i].qp_num);
			check(wc[i].status <= XR_WC_GENERAL_ERR, "completion status %u", wc[i].status);
		}
}

/* Fresh QPs, SRQ and CQ on both sides (the last input may have left
 * any of them scribbled, refused or overrun), connected, receives
 * posted, the regions' bytes restored. */
static void start_input(void)
{
	struct xr_srq_init_attr sa = { .attr = { .max_wr = DEPTH, .max_sge = 4 } };

	for (int k = 0; k < 2; k++) {
		struct side *s = &F.s[k];
		if (!F.ready)
			break;
		for (int q = 0; q < NQP; q++)
			check(!xr_destroy_qp(s->qp[q]), "destroy_qp");
		check(!xr_destroy_srq(s->srq), "destroy_srq");
		check(!xr_destroy_cq(s->cq), "destroy_cq");
	}
	drain_links();
	for (int k = 0; k < 2; k++) {
		struct side *s = &F.s[k];
		s->cq = xr_create_cq(s->ctx, 256);
		s->srq = xr_create_srq(s->pd, &sa);
		check(s->cq && s->srq, "cq, srq");
		s->qp[QP_RC] = qp_create(s, XR_QPT_RC, NULL);
		s->qp[QP_RC_SRQ] = qp_create(s, XR_QPT_RC, s->srq);
		s->qp[QP_UC] = qp_create(s, XR_QPT_UC, NULL);
		s->qp[QP_UD] = qp_create(s, XR_QPT_UD, NULL);
		for (int r = 0; r < NREG; r++)
			for (size_t i = 0; i < s->reg[r].len; i++)
				s->reg[r].mem[i] = pattern(i);
	}
	F.ready = true;
	for (int k = 0; k < 2; k++)
		for (int q = 0; q < NQP; q++) {
			bring_up(k, q);
			for (int i = 0; i < 4; i++)
				recv_one(&F.s[k], q, (uint64_t)q << 56 | (uint64_t)i, 8192u + 1024u * (unsigned)i, 1100);
		}
}

/* A valid WR of any kind the QP's transport takes, between the sides'
 * REG_ALL regions. */
static void host_post(struct in *in, uint64_t id)
{
	static const enum xr_wr_opcode ops[] = {
		XR_WR_RDMA_WRITE, XR_WR_RDMA_WRITE_WITH_IMM, XR_WR_SEND, XR_WR_SEND_WITH_IMM,
		XR_WR_RDMA_READ, XR_WR_ATOMIC_CMP_AND_SWP, XR_WR_ATOMIC_FETCH_AND_ADD,
	};
	uint8_t how = (uint8_t)rd(in, 1);
	struct side *s = &F.s[how & 1], *o = &F.s[!(how & 1)];
	int q = (how >> 1) % NQP;
	struct region *g = &s->reg[REG_ALL], *rg = &o->reg[REG_ALL];
	uint32_t off = (uint32_t)rd(in, 2) % 8192, len = (uint32_t)rd(in, 2) % 4096, roff = (uint32_t)rd(in, 2) % 8192;
	struct xr_sge sg[3];
	struct xr_send_wr w = { .wr_id = id, .sg_list = sg, .num_sge = 1 + (how >> 6) % 3,
				.send_flags = (how & 8) ? 0 : XR_SEND_SIGNALED };
	uint32_t part = len / (uint32_t)w.num_sge;

	w.opcode = ops[rd(in, 1) % (sizeof(ops) / sizeof(ops[0]))];
	for (int i = 0; i < w.num_sge; i++)
		sg[i] = (struct xr_sge){ (uintptr_t)g->mem + off + part * (uint32_t)i,
					 i == w.num_sge - 1 ? len - part * (uint32_t)i : part, g->mr->lkey };
	if (w.opcode == XR_WR_ATOMIC_CMP_AND_SWP || w.opcode == XR_WR_ATOMIC_FETCH_AND_ADD) {
		w.num_sge = 1;
		sg[0].length = 8;
		sg[0].addr &= ~(uint64_t)7;
		roff &= ~7u;
	}
	if ((how & 16) && len <= 64 && w.opcode != XR_WR_RDMA_READ && w.opcode != XR_WR_ATOMIC_CMP_AND_SWP &&
	    w.opcode != XR_WR_ATOMIC_FETCH_AND_ADD)
		w.send_flags |= XR_SEND_INLINE;
	w.wr.rdma.remote_addr = (uintptr_t)rg->mem + roff;
	w.wr.rdma.rkey = rg->mr->rkey;
	w.wr.atomic.remote_addr = w.wr.rdma.remote_addr;
	w.wr.atomic.rkey = w.wr.rdma.rkey;
	w.wr.atomic.compare_add = rd(in, 1);
	w.imm_data = 0x12345678;
	if (q == QP_UD) {
		w.opcode = (w.opcode & 1) ? XR_WR_SEND_WITH_IMM : XR_WR_SEND;
		w.wr.ud.ah = s->ah;
		w.wr.ud.remote_qpn = xr_qp_num(o->qp[QP_UD]);
		w.wr.ud.remote_qkey = QKEY;
	}
	xr_post_send(s->qp[q], &w, NULL);   /* refusals (UC READ, a full ring) are fine */
}

/* The host writes bytes of a ring slot it handed to the engine. */
static void scribble(struct in *in)
{
	uint8_t how = (uint8_t)rd(in, 1), slot = (uint8_t)rd(in, 1), at = (uint8_t)rd(in, 1);
	uint8_t n = 1 + (uint8_t)(how >> 5), val = (uint8_t)rd(in, 1);
	struct side *s = &F.s[how & 1];
	int q = (how >> 1) % NQP;
	uint64_t base, stride = XR_RWQE_SIZE;
	uint8_t log;

	if ((how & 16) && q == QP_RC_SRQ) {   /* the SRQ's ring */
		struct xr_srq_ctx c;
		if (xr_regio_srq_read(s->regs, xr_srq_num(s->srq), &c))
			return;
		base = c.base;
		log = c.log_size;
		stride = (uint64_t)XR_RWQE_SIZE << c.wqe_blocks;
	} else {
		struct xr_qp_ctx c;
		if (xr_regio_qp_read(s->regs, xr_qp_num(s->qp[q]), &c))
			return;
		base = (how & 16) ? c.rq_base : c.sq_base;
		log = (how & 16) ? c.rq_log_size : c.sq_log_size;
		stride = (how & 16) ? (uint64_t)XR_RWQE_SIZE << c.rq_wqe_blocks : (uint64_t)XR_WQE_SIZE << c.sq_wqe_blocks;
	}
	if (!base || !log)
		return;
	{
		uint8_t *p = (uint8_t *)(uintptr_t)(base + (uint64_t)(slot & ((1u << log) - 1)) * stride);
		/* The bytes land in the slot's first block, a WQE's header and first SGEs. */
		_Static_assert(XR_WQE_SIZE == XR_RWQE_SIZE, "blocks of one size in both rings");
		for (unsigned i = 0; i < n; i++)
			p[(at + i) % XR_WQE_SIZE] = (uint8_t)(val + i * (uint8_t)rd(in, 1));
	}
}

/* Any doorbell of this side's queues, near the index the engine holds
 * (a raw 16-bit value is almost always refused at once). */
static void doorbell(struct in *in)
{
	uint8_t how = (uint8_t)rd(in, 1);
	struct side *s = &F.s[how & 1];
	int q = (how >> 1) % NQP;
	int32_t delta = (int8_t)rd(in, 1);
	uint32_t raw = (uint32_t)rd(in, 4), val, addr;
	struct xr_qp_ctx qc;
	struct xr_cq_ctx cc;
	struct xr_srq_ctx sc;

	switch ((how >> 3) % 5) {
	case 0:
		if (xr_regio_qp_read(s->regs, xr_qp_num(s->qp[q]), &qc))
			return;
		addr = XR_REG_DB_SQ + 8 * xr_qp_num(s->qp[q]);
		val = (uint16_t)(qc.sq_ci + delta);
		break;
	case 1:
		if (xr_regio_qp_read(s->regs, xr_qp_num(s->qp[q]), &qc))
			return;
		addr = XR_REG_DB_RQ + 8 * xr_qp_num(s->qp[q]);
		val = (uint16_t)(qc.rq_ci + delta);
		break;
	case 2:
		if (xr_regio_cq_read(s->regs, xr_cq_num(s->cq), &cc))
			return;
		addr = XR_REG_DB_CQ_CI + 8 * xr_cq_num(s->cq);
		val = cc.pi + (uint32_t)delta;
		break;
	case 3:
		addr = XR_REG_DB_CQ_ARM + 8 * xr_cq_num(s->cq);
		val = raw & 7;
		break;
	default:
		if (xr_regio_srq_read(s->regs, xr_srq_num(s->srq), &sc))
			return;
		addr = XR_REG_SRQ_DB;
		val = xr_srq_num(s->srq) << 16 | (uint16_t)(sc.ci + delta);
		break;
	}
	if (how & 0x80)
		val = raw;   /* sometimes anything at all */
	xr_engine_reg_write(s->eng, addr, val);
}

static void run_side(int k, unsigned passes)
{
	for (unsigned i = 0; i < passes && xr_engine_progress(F.s[k].eng) > 0; i++)
		;
}

/* Only REG_ALL may change, and nothing around either region. */
static void check_regions(void)
{
	for (int k = 0; k < 2; k++)
		for (int r = 0; r < NREG; r++) {
			struct region *g = &F.s[k].reg[r];
			for (size_t i = 0; i < GUARD; i++)
				check(g->alloc[i] == GUARD_VAL && g->mem[g->len + i] == GUARD_VAL,
				      "side %d region %d: a byte %s it changed", k, r,
				      g->alloc[i] != GUARD_VAL ? "before" : "after");
			for (size_t i = 0; r != REG_ALL && i < g->len; i++)
				check(g->mem[i] == pattern(i), "side %d read-only region: byte %zu changed", k, i);
		}
}

/* Every QP to ERR: the flushes run and both engines go idle, whatever
 * the input left in the rings. */
static void wind_down(void)
{
	struct xr_qp_attr a = { .qp_state = XR_QPS_ERR };

	for (int k = 0; k < 2; k++)
		for (int q = 0; q < NQP; q++)
			xr_modify_qp(F.s[k].qp[q], &a, XR_QP_STATE);
	for (int round = 0; round < 4; round++) {
		F.now += 100000000ull;
		for (int k = 0; k < 2; k++) {
			run_side(k, 64);
			drain_cq(&F.s[k]);
		}
	}
	drain_links();
	for (int k = 0; k < 2; k++) {
		struct xr_engine_qp_mem m;
		run_side(k, 64);
		drain_cq(&F.s[k]);
		xr_engine_qp_mem(F.s[k].eng, &m);
		check(m.active == 0, "side %d: %llu QPs still active once all are in ERR", k,
		      (unsigned long long)m.active);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	uint64_t id = 1;

	if (!F.s[0].ctx)
		init_once();
	start_input();
	for (int step = 0; step < MAX_STEPS && in.n; step++) {
		uint8_t kind = (uint8_t)rd(&in, 1);
		switch (kind % 10) {
		case 0: case 1:
			host_post(&in, id++);
			break;
		case 2: {
			uint8_t how = (uint8_t)rd(&in, 1);
			recv_one(&F.s[how & 1], (how >> 1) % NQP, id++, (uint32_t)rd(&in, 2), (uint32_t)rd(&in, 2) % 4096);
			break;
		}
		case 3: case 4:
			scribble(&in);
			break;
		case 5:
			doorbell(&in);
			break;
		case 6: {   /* one side alone (the other silent: its peer's timers fire), or both */
			uint8_t how = (uint8_t)rd(&in, 1);
			if (how & 1)
				run_side(0, 1 + (how >> 3) % 16);
			if (how & 2)
				run_side(1, 1 + (how >> 3) % 16);
			break;
		}
		case 7:   /* time passes: up to ~65 ms, the ACK and RNR timers fire */
			F.now += rd(&in, 2) * 1000u;
			break;
		case 8:
			drain_cq(&F.s[0]);
			drain_cq(&F.s[1]);
			break;
		case 9: {   /* the host moves a QP to ERR or SQD */
			uint8_t how = (uint8_t)rd(&in, 1);
			struct xr_qp_attr a = { .qp_state = (how & 16) ? XR_QPS_ERR : XR_QPS_SQD };
			xr_modify_qp(F.s[how & 1].qp[(how >> 1) % NQP], &a, XR_QP_STATE);
			break;
		}
		}
	}
	wind_down();
	check_regions();
	return 0;
}
