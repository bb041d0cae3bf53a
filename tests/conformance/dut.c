/* SPDX-License-Identifier: MIT */
/*
 * The device under test, driven through xroce's verbs: the QP and regions
 * a script declares, and the script's verbs actions and expectations
 * (post_send, post_recv, modify_qp, dereg_mr, cqe, state, counter, mem,
 * time).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

#define T0_NS    1000000000ull

static uint64_t script_clock(void *ctx)
{
	return ((struct run *)ctx)->now_ns;
}

static bool add_region(struct run *r, const char *name, size_t len, int access, bool other_pd)
{
	struct region *g;

	g = new_region(r, name, len, access, other_pd);
	if (!g)
		return false;
	g->alloc = malloc(len + 2 * GUARD_LEN);
	if (!g->alloc) {
		fail(r, "out of memory");
		return false;
	}
	memset(g->alloc, GUARD_VAL, len + 2 * GUARD_LEN);
	g->mem = g->alloc + GUARD_LEN;
	memset(g->mem, 0, len);
	g->mr = xr_reg_mr(other_pd ? r->pd2 : r->pd, g->mem, len, access);
	if (!g->mr) {
		fail(r, "reg_mr of region '%s' failed", name);
		return false;
	}
	g->lkey = g->mr->lkey;
	g->rkey = g->mr->rkey;
	return true;
}

/* N's end of the link, in front of the mem pair: `hold frames=N` makes
 * it push back after N more frames (the engine keeps the rest, in order). */
struct gate {
	struct xr_link link;
	struct xr_link *inner;
	struct run *r;
};

static int gate_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct gate *g = l->priv;
	int sent;

	if (g->r->hold && g->r->hold_room >= 0 && n > (unsigned long)g->r->hold_room)
		n = (unsigned)g->r->hold_room;
	if (!n)
		return 0;
	sent = xr_link_send(g->inner, f, n);
	if (sent > 0 && g->r->hold && g->r->hold_room >= 0)
		g->r->hold_room -= sent;
	return sent;
}

static int gate_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	return xr_link_recv(((struct gate *)l->priv)->inner, f, n);
}

static int gate_wait_fd(struct xr_link *l)
{
	struct xr_link *in = ((struct gate *)l->priv)->inner;
	return in->ops->wait_fd ? in->ops->wait_fd(in) : -1;
}

static struct xr_frame *gate_alloc(struct xr_link *l)
{
	return xr_link_frame_alloc(((struct gate *)l->priv)->inner);
}

static void gate_free(struct xr_link *l, struct xr_frame *f)
{
	xr_link_frame_free(((struct gate *)l->priv)->inner, f);
}

static bool gate_up(struct xr_link *l)
{
	struct xr_link *in = ((struct gate *)l->priv)->inner;
	return !in->ops->is_up || in->ops->is_up(in);
}

static int gate_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	return xr_link_resolve(((struct gate *)l->priv)->inner, gid, mac);
}

static void gate_close(struct xr_link *l)
{
	struct gate *g = l->priv;
	xr_link_close(g->inner);
	free(g);
}

static const struct xr_link_ops gate_ops = {
	.send_burst = gate_send, .recv_burst = gate_recv, .wait_fd = gate_wait_fd, .frame_alloc = gate_alloc,
	.frame_free = gate_free, .is_up = gate_up, .close = gate_close, .resolve = gate_resolve,
};

static struct xr_link *gate_open(struct run *r, struct xr_link *inner)
{
	struct gate *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->inner = inner;
	g->r = r;
	g->link = *inner;   /* kind, mtu, mac */
	g->link.ops = &gate_ops;
	g->link.priv = g;
	return &g->link;
}

bool dut_open(struct run *r)
{
	r->dut_ip = 0x0A000001;
	r->peer_ip = 0x0A000002;
	fixture_defaults(r);
	r->now_ns = T0_NS;
	r->held = calloc(MAX_HELD, sizeof(*r->held));
	if (!r->held || xr_link_mem_pair(&r->dut_link, &r->peer_link, 0)) {
		fail(r, "cannot make the in-memory link");
		return false;
	}
	{
		struct xr_link *g = gate_open(r, r->dut_link);
		if (!g) {
			xr_link_close(r->dut_link);
			r->dut_link = NULL;
			fail(r, "cannot make the in-memory link");
			return false;
		}
		r->dut_link = g;
	}
	r->dev = xr_open_device(r->dut_link, &(struct xr_device_opts){ .addr = "10.0.0.1",
								     .progress = XR_PROGRESS_INLINE });
	if (!r->dev) {
		fail(r, "cannot open the device");
		return false;
	}
	r->eng = xr_context_engine(r->dev);
	xr_engine_set_clock(r->eng, script_clock, r);
	r->pd = xr_alloc_pd(r->dev);
	r->pd2 = xr_alloc_pd(r->dev);
	if (!r->pd || !r->pd2) {
		fail(r, "cannot allocate PDs");
		return false;
	}
	return default_regions(r, add_region);
}

void dut_close(struct run *r)
{
	if (r->qp)
		xr_destroy_qp(r->qp);
	if (r->ah)
		xr_destroy_ah(r->ah);
	if (r->scq)
		xr_destroy_cq(r->scq);
	if (r->rcq)
		xr_destroy_cq(r->rcq);
	for (int i = 0; i < r->nreg; i++)   /* windows first: they hold regions */
		if (r->reg[i].mw)
			xr_dealloc_mw(r->reg[i].mw);
	for (int i = 0; i < r->nreg; i++) {
		if (r->reg[i].mr)
			xr_dereg_mr(r->reg[i].mr);
		free(r->reg[i].alloc);
	}
	if (r->pd)
		xr_dealloc_pd(r->pd);
	if (r->pd2)
		xr_dealloc_pd(r->pd2);
	if (r->dev)
		xr_close_device(r->dev);
	if (r->dut_link)
		xr_link_close(r->dut_link);
	if (r->peer_link)
		xr_link_close(r->peer_link);
	free(r->held);
}

bool dut_connect(struct run *r)
{
	struct xr_qp_init_attr ia;

	for (int i = 0; i < r->nreg; i++)   /* lbuf starts with a known pattern */
		if (!strcmp(r->reg[i].name, "lbuf"))
			for (size_t k = 0; k < r->reg[i].len; k++)
				r->reg[i].mem[k] = (uint8_t)(0x40 + k);
	if (r->o.retry7_forever) {
		struct xr_regio *io = xr_context_regs(r->dev);
		uint32_t ctrl = 0;
		if (xr_regio_read(io, XR_REG_CTRL, &ctrl) || xr_regio_write(io, XR_REG_CTRL, ctrl | XR_CTRL_RETRY7_FOREVER)) {
			fail(r, "cannot set CTRL.retry7_forever");
			return false;
		}
	}
	r->scq = xr_create_cq(r->dev, (int)r->o.scq_depth);
	r->rcq = xr_create_cq(r->dev, (int)r->o.rcq_depth);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = r->scq;
	ia.recv_cq = r->rcq;
	ia.qp_type = (enum xr_qp_type)r->o.type;
	ia.sq_sig_all = r->o.sig_all;
	ia.cap.max_send_wr = r->o.sq_depth;
	ia.cap.max_recv_wr = r->o.rq_depth;
	ia.cap.max_send_sge = XR_WQE_BLOCK_SGE;
	ia.cap.max_recv_sge = XR_RWQE_BLOCK_SGE;   /* one-block slots, as the send side's: a line posts one SGE */
	ia.cap.max_inline_data = XR_WQE_BODY(0);
	r->qp = r->scq && r->rcq ? xr_create_qp(r->pd, &ia) : NULL;
	if (!r->qp) {
		fail(r, "cannot create the CQs and QP");
		return false;
	}
	if (!qp_bring_up(r, r->stop_state))
		return false;
	r->connected = true;
	return true;
}

/* ---- actions ---- */

static void check_rc(struct run *r, const char *what, int rc, int want)
{
	if (recording)
		record_rc(r, what, rc);
	else if (want == -2)
		fail(r, "unknown return code after =>");
	else if (rc != want)
		fail(r, "%s returned %d (%s), expected %d", what, rc, rc ? strerror(rc) : "ok", want);
}

static void act_mr(struct run *r, char **tok, int ntok)
{
	mr_line(r, tok, ntok, add_region);
}

static void act_post_send(struct run *r, char **tok, int ntok)
{
	struct xr_send_wr wr, *bad = NULL;
	struct xr_sge sge;
	struct send_args a;

	if (!parse_send(r, tok, ntok, &a))
		return;
	memset(&wr, 0, sizeof(wr));
	memset(&sge, 0, sizeof(sge));
	wr.opcode = (enum xr_wr_opcode)a.op;
	wr.wr_id = a.id;
	wr.send_flags = a.flags;
	wr.sg_list = &sge;
	wr.num_sge = a.num_sge;
	sge.addr = (uint64_t)(uintptr_t)a.src->mem + a.off;
	sge.length = a.len;
	sge.lkey = a.lkey;
	wr.imm_data = a.imm;
	wr.invalidate_rkey = a.inv;
	if (a.atomic) {
		wr.wr.atomic.remote_addr = a.va;
		wr.wr.atomic.rkey = a.rkey;
		wr.wr.atomic.compare_add = a.cmp_add;
		wr.wr.atomic.swap = a.swap;
	} else {
		wr.wr.rdma.remote_addr = a.va;
		wr.wr.rdma.rkey = a.rkey;
	}
	if (r->o.type == XR_QPT_UD) {
		/* UD: to P through an address handle (made once) */
		if (!r->ah) {
			struct xr_ah_attr aa = { .is_global = 1, .port_num = 1 };
			aa.grh.hop_limit = 64;
			xr_gid_from_ipv4(&aa.grh.dgid, r->peer_ip);
			r->ah = xr_create_ah(r->pd, &aa);
			if (!r->ah) {
				fail(r, "cannot create the address handle: %s", strerror(errno));
				return;
			}
		}
		wr.wr.ud.ah = r->ah;
		wr.wr.ud.remote_qpn = a.dqpn;
		wr.wr.ud.remote_qkey = a.qkey;
	}
	check_rc(r, "post_send", xr_post_send(r->qp, &wr, &bad), a.want_rc);
	settle(r);
}

static void act_post_recv(struct run *r, char **tok, int ntok)
{
	struct xr_recv_wr wr, *bad = NULL;
	struct xr_sge sge;
	struct recv_args a;

	if (!parse_recv(r, tok, ntok, &a))
		return;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = a.id;
	sge.addr = (uint64_t)(uintptr_t)a.region->mem + a.off;
	sge.length = (uint32_t)a.len;
	sge.lkey = a.region->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	check_rc(r, "post_recv", xr_post_recv(r->qp, &wr, &bad), a.want_rc);
	settle(r);
}

static void act_modify(struct run *r, char **tok, int ntok)
{
	struct modify_args m;

	if (!parse_modify(r, tok, ntok, &m))
		return;
	check_rc(r, "modify_qp", xr_modify_qp(r->qp, &m.a, m.mask), m.want_rc);
	settle(r);
}

static void act_cqe(struct run *r, char **tok, int ntok)
{
	struct xr_wc wc;
	struct cqe_args c;
	struct cqe_got g;
	char op[16], flags[16];
	int n;

	if (!parse_cqe(r, tok, ntok, &c))
		return;
	settle(r);
	n = xr_poll_cq(c.send ? r->scq : r->rcq, 1, &wc);
	if (c.none) {
		if (n > 0)
			fail(r, "expected no %s completion, got wr_id %llu status %s", tok[1],
			     (unsigned long long)wc.wr_id, xr_wc_status_str(wc.status));
		return;
	}
	if (n <= 0) {
		fail(r, "expected a %s completion, there is none", tok[1]);
		return;
	}
	snprintf(op, sizeof(op), "%d", wc.opcode);
	snprintf(flags, sizeof(flags), "0x%x", wc.wc_flags);
	g = (struct cqe_got){ .wr_id = wc.wr_id, .byte_len = wc.byte_len, .imm = wc.imm_data,
			      .src_qp = wc.src_qp, .status = (int)wc.status,
			      .opname = wc_opcode_name((int)wc.opcode), .opcode_text = op, .flags_text = flags,
			      .with_imm = wc.wc_flags & XR_WC_WITH_IMM, .with_inv = wc.wc_flags & XR_WC_WITH_INV };
	cqe_check(r, tok, ntok, &g);
}

static void act_state(struct run *r, char **tok, int ntok)
{
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;
	int s = parse_state(r, tok, ntok);

	if (s < 0)
		return;
	settle(r);
	if (xr_query_qp(r->qp, &a, XR_QP_STATE, &ia) || (int)a.qp_state != s)
		fail(r, "QP state is %s, expected %s", state_name((int)a.qp_state), tok[1]);
}

static void act_counter(struct run *r, char **tok, int ntok)
{
	uint64_t want, got = 0;
	int c = -1;

	if (ntok != 4) {
		fail(r, "counter NAME ==|>=|<= VALUE");
		return;
	}
	for (int i = 0; i < XR_CNT_COUNT; i++)
		if (!strcmp(xr_counter_name((enum xr_counter)i), tok[1]))
			c = i;
	if (c < 0) {
		fail(r, "no counter '%s'", tok[1]);
		return;
	}
	if (!eval(r, tok[3], &want))
		return;
	settle(r);
	xr_regio_read_counter(xr_context_regs(r->dev), (enum xr_counter)c, &got);
	if (!strcmp(tok[2], "==") ? got != want : !strcmp(tok[2], ">=") ? got < want :
	    !strcmp(tok[2], "<=") ? got > want : true)
		fail(r, "counter %s is %llu, expected %s %llu", tok[1], (unsigned long long)got, tok[2],
		     (unsigned long long)want);
}

/* mem ADDR len=N == SPEC, or mem ADDR len=N := SPEC to set it. */
static void act_mem(struct run *r, char **tok, int ntok)
{
	struct mem_args m;
	struct region *g;
	uint8_t *p, *want;

	if (!parse_mem(r, tok, ntok, &m))
		return;
	g = region_at(r, m.addr, m.len);
	if (!g) {
		fail(r, "address range is in no region");
		return;
	}
	p = (uint8_t *)(uintptr_t)m.addr;
	settle(r);
	if (m.set) {
		bytes_fill(r, m.spec, p, (size_t)m.len);
		return;
	}
	want = malloc(m.len ? m.len : 1);
	if (want && bytes_fill(r, m.spec, want, (size_t)m.len)) {
		for (uint64_t j = 0; j < m.len; j++)
			if (p[j] != want[j]) {
				fail(r, "%s+%llu is 0x%02x, expected 0x%02x", g->name,
				     (unsigned long long)(p + j - g->mem), p[j], want[j]);
				break;
			}
	}
	free(want);
}

static void act_dereg(struct run *r, char **tok, int ntok)
{
	int want, rc;
	struct region *g = parse_dereg(r, tok, ntok, &want);

	if (!g)
		return;
	rc = xr_dereg_mr(g->mr);
	check_rc(r, "dereg_mr", rc, want);
	if (!rc)
		g->mr = NULL;
	settle(r);
}

/* attach|detach GID [=> E...]: the QP joins or leaves a multicast group. */
static void act_mcast(struct run *r, char **tok, int ntok)
{
	int want = expected_rc(tok, &ntok);
	xr_gid g;

	if (ntok != 2 || xr_gid_parse(&g, tok[1])) {
		fail(r, "%s GID [=> E...] (a dotted IPv4 or an IPv6 address)", tok[0]);
		return;
	}
	check_rc(r, tok[0], tok[0][0] == 'a' ? xr_attach_mcast(r->qp, &g) : xr_detach_mcast(r->qp, &g), want);
	settle(r);
}

/* reg_mr NAME: registers a deregistered region again, over the same memory
 * with the same access and PD; NAME.rkey/.lkey are the new keys, the
 * previous ones stay as NAME.old_rkey/.old_lkey. */
static void act_reg(struct run *r, char **tok, int ntok)
{
	struct region *g = ntok == 2 ? region_by_name(r, tok[1]) : NULL;

	if (!g || g->mr || g->mw || !g->mem) {
		fail(r, "reg_mr NAME (a deregistered region)");
		return;
	}
	g->mr = xr_reg_mr(g->other_pd ? r->pd2 : r->pd, g->mem, g->len, g->access);
	if (!g->mr) {
		fail(r, "reg_mr of region '%s' failed", g->name);
		return;
	}
	g->old_lkey = g->lkey;
	g->old_rkey = g->rkey;
	g->lkey = g->mr->lkey;
	g->rkey = g->mr->rkey;
	settle(r);
}

/* ---- memory windows ---- */

/* alloc_mw NAME [type=1|2] [pd=other]: NAME.rkey is the window's key. */
static void act_alloc_mw(struct run *r, char **tok, int ntok)
{
	struct mw_args m;
	struct region *g;

	if (!parse_alloc_mw(r, tok, ntok, &m))
		return;
	g = &r->reg[r->nreg];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", m.name);
	g->other_pd = m.other_pd;
	/* No memory of its own: only guard bytes, so the end-of-script check holds. */
	g->alloc = malloc(2 * GUARD_LEN);
	if (!g->alloc) {
		fail(r, "out of memory");
		return;
	}
	memset(g->alloc, GUARD_VAL, 2 * GUARD_LEN);
	g->mem = g->alloc + GUARD_LEN;
	r->nreg++;
	g->mw = xr_alloc_mw(m.other_pd ? r->pd2 : r->pd, (enum xr_mw_type)m.type);
	if (!g->mw) {
		fail(r, "alloc_mw of '%s' failed: %s", g->name, strerror(errno));
		return;
	}
	g->lkey = g->rkey = g->mw->rkey;
}

/* bind_mw NAME [mr=REGION] [off=] [len=] [access=RW,RR,RA] [rkey=] [id=]
 * [fence] [unsignaled] [=> E]: type 2 posts a BIND_MW WR, type 1 calls
 * xr_bind_mw; NAME.rkey becomes the new key (as libibverbs hands it). */
static void act_bind_mw(struct run *r, char **tok, int ntok)
{
	int want = expected_rc(tok, &ntok), access = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ, rc;
	struct region *g = ntok >= 2 ? region_by_name(r, tok[1]) : NULL, *mr = region_by_name(r, "mr");
	uint64_t off = 0, len = 4096, v, id = r->next_wr_id++, rkey;
	unsigned flags = XR_SEND_SIGNALED;
	bool rkey_set = false, no_mr = false;
	struct xr_mw_bind_info bi;

	if (!g || !g->mw) {
		fail(r, "bind_mw NAME (a window from alloc_mw) [mr= off= len= access= rkey= id=]");
		return;
	}
	for (int i = 2; i < ntok; i++) {
		char *k, *val;
		if (!strcmp(tok[i], "fence")) { flags |= XR_SEND_FENCE; continue; }
		if (!strcmp(tok[i], "unsignaled")) { flags &= ~(unsigned)XR_SEND_SIGNALED; continue; }
		if (!kv(r, tok[i], &k, &val))
			return;
		if (!strcmp(k, "mr")) {
			no_mr = !strcmp(val, "none");
			mr = no_mr ? NULL : region_by_name(r, val);
			if (!no_mr && (!mr || !mr->mr)) {
				fail(r, "no registered region '%s'", val);
				return;
			}
			continue;
		}
		if (!strcmp(k, "access")) {
			if (!parse_access(r, val, &access))
				return;
			continue;
		}
		if (!eval(r, val, &v))
			return;
		if (!strcmp(k, "off")) off = v;
		else if (!strcmp(k, "len")) len = v;
		else if (!strcmp(k, "rkey")) { rkey = v; rkey_set = true; }
		else if (!strcmp(k, "id")) id = v;
		else {
			fail(r, "unknown bind_mw option '%s'", k);
			return;
		}
	}
	memset(&bi, 0, sizeof(bi));
	bi.mr = mr ? mr->mr : NULL;
	bi.addr = mr ? (uint64_t)(uintptr_t)mr->mem + off : 0;
	bi.length = len;
	bi.mw_access_flags = (unsigned)access;
	if (g->mw->type == XR_MW_TYPE_1) {
		struct xr_mw_bind b = { .wr_id = id, .send_flags = flags, .bind_info = bi };
		rc = xr_bind_mw(r->qp, g->mw, &b);
	} else {
		struct xr_send_wr wr, *bad = NULL;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = id;
		wr.opcode = XR_WR_BIND_MW;
		wr.send_flags = flags;
		wr.bind_mw.mw = g->mw;
		wr.bind_mw.rkey = rkey_set ? (uint32_t)rkey : xr_inc_rkey(g->mw->rkey);
		wr.bind_mw.bind_info = bi;
		rc = xr_post_send(r->qp, &wr, &bad);
	}
	check_rc(r, "bind_mw", rc, want);
	/* A window is never an L_Key: NAME.lkey keeps the key before this
	 * bind, for stale-key tests. */
	g->lkey = g->rkey;
	g->rkey = g->mw->rkey;
	settle(r);
}

static void act_dealloc_mw(struct run *r, char **tok, int ntok)
{
	struct region *g = ntok == 2 ? region_by_name(r, tok[1]) : NULL;

	if (!g || !g->mw) {
		fail(r, "dealloc_mw NAME (a window)");
		return;
	}
	check_rc(r, "dealloc_mw", xr_dealloc_mw(g->mw), 0);
	g->mw = NULL;
	settle(r);
}

static void act_time(struct run *r, const char *t)
{
	char *end;
	double v = strtod(t + 1, &end);
	double scale = !strcmp(end, "ns") ? 1 : !strcmp(end, "us") ? 1e3 : !strcmp(end, "ms") ? 1e6 :
		       !strcmp(end, "s") ? 1e9 : -1;

	if (end == t + 1 || scale < 0 || v < 0) {
		fail(r, "time step is +N(ns|us|ms|s): '%s'", t);
		return;
	}
	r->now_ns += (uint64_t)(v * scale);
	settle(r);
}

/* async CQ_ERR|SQ_DRAINED|none: the next asynchronous event. */
static void act_async(struct run *r, char **tok, int ntok)
{
	struct xr_async_event ev;
	int rc, want;

	if (ntok != 2 || (strcmp(tok[1], "CQ_ERR") && strcmp(tok[1], "SQ_DRAINED") && strcmp(tok[1], "none"))) {
		fail(r, "async CQ_ERR|SQ_DRAINED|none");
		return;
	}
	settle(r);
	rc = xr_get_async_event(r->dev, &ev, 0);
	if (!strcmp(tok[1], "none")) {
		if (rc == 0)
			fail(r, "expected no asynchronous event, got type %d (qp 0x%x)", ev.type, ev.qp_num);
		return;
	}
	want = !strcmp(tok[1], "CQ_ERR") ? XR_EVENT_CQ_ERR : XR_EVENT_SQ_DRAINED;
	if (rc)
		fail(r, "expected asynchronous event %s, there is none", tok[1]);
	else if ((int)ev.type != want || ev.qp_num != xr_qp_num(r->qp))
		fail(r, "asynchronous event is type %d for QP 0x%x, expected %s for QP 0x%x", ev.type, ev.qp_num,
		     tok[1], xr_qp_num(r->qp));
}

bool dut_action(struct run *r, char **tok, int ntok)
{
	const char *c = tok[0];
	int before = r->failures;

	if (!strcmp(c, "qp")) qp_line(r, tok, ntok);
	else if (!strcmp(c, "mr")) act_mr(r, tok, ntok);
	else if (!strcmp(c, "post_send")) act_post_send(r, tok, ntok);
	else if (!strcmp(c, "post_recv")) act_post_recv(r, tok, ntok);
	else if (!strcmp(c, "modify_qp")) act_modify(r, tok, ntok);
	else if (!strcmp(c, "cqe")) act_cqe(r, tok, ntok);
	else if (!strcmp(c, "state")) act_state(r, tok, ntok);
	else if (!strcmp(c, "counter")) act_counter(r, tok, ntok);
	else if (!strcmp(c, "mem")) act_mem(r, tok, ntok);
	else if (!strcmp(c, "dereg_mr")) act_dereg(r, tok, ntok);
	else if (!strcmp(c, "reg_mr")) act_reg(r, tok, ntok);
	else if (!strcmp(c, "alloc_mw")) act_alloc_mw(r, tok, ntok);
	else if (!strcmp(c, "bind_mw")) act_bind_mw(r, tok, ntok);
	else if (!strcmp(c, "dealloc_mw")) act_dealloc_mw(r, tok, ntok);
	else if (!strcmp(c, "attach") || !strcmp(c, "detach")) act_mcast(r, tok, ntok);
	else if (!strcmp(c, "drain")) { settle(r); drain_held(r); }
	else if (!strcmp(c, "hold")) {
		uint64_t room = 0;
		settle(r);
		r->hold = true;
		r->hold_room = -1;
		if (ntok > 1 && (strncmp(tok[1], "frames=", 7) || !eval(r, tok[1] + 7, &room)))
			fail(r, "hold takes frames=N");
		else if (ntok > 1)
			r->hold_room = (long)room;
	}
	else if (!strcmp(c, "release")) {
		/* Read (and forget, unless kept for the lines after it)
		 * everything until N is quiet again. */
		bool keep = ntok > 1 && !strcmp(tok[1], "keep");
		if (ntok > 1 && !keep)
			fail(r, "release takes keep");
		r->hold = false;
		r->discard = !keep;
		settle(r);
		r->discard = false;
		if (!keep)
			drain_held(r);
	}
	else if (!strcmp(c, "async")) act_async(r, tok, ntok);
	else if (c[0] == '+') act_time(r, c);
	else fail(r, "unknown command '%s'", c);
	return r->failures == before;
}

/* ---- the local device's interface ---- */

static uint32_t local_epsn(struct run *r)
{
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;

	if (xr_query_qp(r->qp, &a, XR_QP_RQ_PSN, &ia))
		return 0;
	return a.rq_psn;
}

static uint32_t local_qpn(struct run *r)
{
	return xr_qp_num(r->qp);
}

static uint64_t local_va(struct run *r, const struct region *g)
{
	(void)r;
	return (uint64_t)(uintptr_t)g->mem;
}

static void local_await(struct run *r, bool want_packet)
{
	(void)want_packet;
	settle_local(r);
}

const struct dut_ops dut_local = {
	.name = "xroce",
	.open = dut_open,
	.close = dut_close,
	.connect = dut_connect,
	.action = dut_action,
	.epsn = local_epsn,
	.qpn = local_qpn,
	.va = local_va,
	.settle = settle_local,
	.await = local_await,
	.guards_ok = local_guards_ok,
	.poll = local_poll,
	.qp_state = local_qp_state,
	.region_read = local_region_read,
};
