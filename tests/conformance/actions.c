/* SPDX-License-Identifier: MIT */
/*
 * The action lines both devices under test serve, parsed once: the fixture's
 * defaults, `qp`, `mr`, `alloc_mw`, `post_recv`, `modify_qp`, `state`, `mem`,
 * `dereg_mr`, `post_send`, and the fields of a `cqe` line checked against a completion.
 * Each parse_* reports a bad line through fail() and returns false; the
 * backends (dut.c, dut_rxe.c) only carry out what was parsed.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "script.h"

#define PEER_QPN 0x000123

static const char *const status_names[] = {
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
	"MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR",
	"REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR",
	"REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR",
	"GENERAL_ERR",
};
#define NSTATUS ((int)(sizeof(status_names) / sizeof(status_names[0])))

const char *wc_status_name(int status)
{
	return status >= 0 && status < NSTATUS ? status_names[status] : "?";
}
static const char *const state_names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

static const struct { const char *name; int v; } wc_opcodes[] = {
	{ "SEND", XR_WC_SEND }, { "RDMA_WRITE", XR_WC_RDMA_WRITE }, { "RDMA_READ", XR_WC_RDMA_READ },
	{ "COMP_SWAP", XR_WC_COMP_SWAP }, { "FETCH_ADD", XR_WC_FETCH_ADD }, { "BIND_MW", XR_WC_BIND_MW },
	{ "LOCAL_INV", XR_WC_LOCAL_INV }, { "RECV", XR_WC_RECV },
	{ "RECV_RDMA_WITH_IMM", XR_WC_RECV_RDMA_WITH_IMM },
};

static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcasecmp(names[i], s))
			return i;
	return -1;
}

int state_by_name(const char *s)
{
	return name_index(state_names, 7, s);
}

const char *state_name(int s)
{
	return s >= 0 && s < 7 ? state_names[s] : "?";
}

const char *wc_opcode_name(int op)
{
	for (size_t j = 0; j < sizeof(wc_opcodes) / sizeof(wc_opcodes[0]); j++)
		if (wc_opcodes[j].v == op)
			return wc_opcodes[j].name;
	return NULL;
}

bool kv(struct run *r, char *tok, char **key, char **val)
{
	if (split_kv(tok, key, val))
		return true;
	fail(r, "'%s' is not key=value", tok);
	return false;
}

/* ---- setup ---- */

void fixture_defaults(struct run *r)
{
	memset(&r->o, 0, sizeof(r->o));
	/* The checklist's default fixture (transport-rules.md). */
	r->o.mtu = XR_MTU_1024;
	r->o.rq_psn = 100;
	r->o.sq_psn = 500;
	r->o.timeout = 14;
	r->o.retry_cnt = 3;
	r->o.rnr_retry = 3;
	r->o.min_rnr_timer = 12;
	r->o.max_rd_atomic = r->o.max_dest_rd_atomic = 4;
	r->o.access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
		      XR_ACCESS_REMOTE_ATOMIC;
	r->o.sq_depth = r->o.rq_depth = 64;
	r->o.scq_depth = r->o.rcq_depth = 256;
	r->o.type = XR_QPT_RC;
	r->o.qkey = 0x1111;
	r->peer_qpn = PEER_QPN;
	r->next_wr_id = 1;
}

/* The next slot of r->reg, named and cleared; NULL (and a failure) if
 * there is none or the name is taken or too long. */
struct region *new_region(struct run *r, const char *name, size_t len, int access, bool other_pd)
{
	struct region *g;

	if (r->nreg == MAX_REGIONS || region_by_name(r, name) || strlen(name) >= sizeof(g->name)) {
		fail(r, "cannot add region '%s'", name);
		return NULL;
	}
	g = &r->reg[r->nreg++];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->len = len;
	g->access = access;
	g->other_pd = other_pd;
	return g;
}

bool default_regions(struct run *r, add_region_fn add)
{
	/* The checklist's 64 KiB MR, and local buffers for sends and receives. */
	return add(r, "mr", 65536, r->o.access, false) &&
	       add(r, "lbuf", 65536, XR_ACCESS_LOCAL_WRITE, false) &&
	       add(r, "rbuf", 262144, XR_ACCESS_LOCAL_WRITE, false);
}

/* qp KEY=VALUE...: the QP's options, into r->o. */
void qp_line(struct run *r, char **tok, int ntok)
{
	for (int i = 1; i < ntok; i++) {
		char *k, *v;
		uint64_t x = 0;
		if (!kv(r, tok[i], &k, &v))
			return;
		if (!strcmp(k, "access")) {
			parse_access(r, v, &r->o.access);
			continue;
		}
		if (!strcmp(k, "type")) {
			if (!strcmp(v, "RC")) r->o.type = XR_QPT_RC;
			else if (!strcmp(v, "UC")) r->o.type = XR_QPT_UC;
			else if (!strcmp(v, "UD")) r->o.type = XR_QPT_UD;
			else fail(r, "type must be RC, UC or UD");
			continue;
		}
		if (!eval(r, v, &x))
			return;
		if (!strcmp(k, "mtu")) {
			int m = 0;
			for (int s = 1; s <= 5; s++)
				if ((128u << s) == x)
					m = s;
			if (!m)
				fail(r, "mtu must be 256..4096");
			r->o.mtu = (enum xr_mtu)m;
		}
		else if (!strcmp(k, "rq_psn")) r->o.rq_psn = (uint32_t)x;
		else if (!strcmp(k, "sq_psn")) r->o.sq_psn = (uint32_t)x;
		else if (!strcmp(k, "timeout")) r->o.timeout = (uint8_t)x;
		else if (!strcmp(k, "retry_cnt")) r->o.retry_cnt = (uint8_t)x;
		else if (!strcmp(k, "rnr_retry")) r->o.rnr_retry = (uint8_t)x;
		else if (!strcmp(k, "min_rnr_timer")) r->o.min_rnr_timer = (uint8_t)x;
		else if (!strcmp(k, "max_rd_atomic")) r->o.max_rd_atomic = (uint8_t)x;
		else if (!strcmp(k, "max_dest_rd_atomic")) r->o.max_dest_rd_atomic = (uint8_t)x;
		else if (!strcmp(k, "sq_depth")) r->o.sq_depth = (unsigned)x;
		else if (!strcmp(k, "rq_depth")) r->o.rq_depth = (unsigned)x;
		else if (!strcmp(k, "scq_depth")) r->o.scq_depth = (unsigned)x;
		else if (!strcmp(k, "rcq_depth")) r->o.rcq_depth = (unsigned)x;
		else if (!strcmp(k, "sig_all")) r->o.sig_all = x != 0;
		else if (!strcmp(k, "retry7_forever")) r->o.retry7_forever = x != 0;
		else if (!strcmp(k, "qkey")) r->o.qkey = (uint32_t)x;
		else
			fail(r, "unknown qp option '%s'", k);
	}
	/* The default MR follows the QP's access unless declared otherwise. */
}

/* A region-like line's options from tok[2]: NUMKEY=N into *num, access=
 * (when access is not NULL) and pd=other. */
static bool region_opts(struct run *r, char **tok, int ntok, const char *what, const char *numkey,
			uint64_t *num, int *access, bool *other_pd)
{
	for (int i = 2; i < ntok; i++) {
		char *k, *v;
		if (!kv(r, tok[i], &k, &v))
			return false;
		if (!strcmp(k, numkey)) {
			if (!eval(r, v, num))
				return false;
		} else if (access && !strcmp(k, "access")) {
			if (!parse_access(r, v, access))
				return false;
		} else if (!strcmp(k, "pd")) {
			*other_pd = !strcmp(v, "other");
		} else {
			fail(r, "unknown %s option '%s'", what, k);
			return false;
		}
	}
	return true;
}

/* Far beyond any script's region (2 MiB at most) and small enough to
 * allocate, guards and all, without the size wrapping. */
#define MAX_REGION_LEN (256u << 20)

/* mr NAME [len=N] [access=..] [pd=other]: the region goes to add(). */
void mr_line(struct run *r, char **tok, int ntok, add_region_fn add)
{
	uint64_t len = 65536;
	int access = r->o.access | XR_ACCESS_LOCAL_WRITE;
	bool other_pd = false;

	if (ntok < 2) {
		fail(r, "mr NAME [len=N] [access=..] [pd=other]");
		return;
	}
	if (!region_opts(r, tok, ntok, "mr", "len", &len, &access, &other_pd))
		return;
	if (len > MAX_REGION_LEN) {
		fail(r, "mr %s: len=0x%llx is more than the runner allocates (at most 0x%x bytes)", tok[1],
		     (unsigned long long)len, MAX_REGION_LEN);
		return;
	}
	add(r, tok[1], (size_t)len, access, other_pd);
}

/* alloc_mw NAME [type=1|2] [pd=other] */
bool parse_alloc_mw(struct run *r, char **tok, int ntok, struct mw_args *m)
{
	if (ntok < 2 || r->nreg == MAX_REGIONS || region_by_name(r, tok[1]) ||
	    strlen(tok[1]) >= sizeof(r->reg[0].name)) {
		fail(r, "alloc_mw NAME [type=1|2] [pd=other] (a new name)");
		return false;
	}
	m->name = tok[1];
	m->type = 2;
	m->other_pd = false;
	return region_opts(r, tok, ntok, "alloc_mw", "type", &m->type, NULL, &m->other_pd);
}

/* ---- verbs ---- */

/* post_recv [sge=REGION] [len=] [off=] [id=] [=> E]: without off=, the
 * next 64-byte-aligned piece of rbuf. */
static const struct { const char *name; int v; } wr_opcodes[] = {
	{ "write", XR_WR_RDMA_WRITE }, { "write_imm", XR_WR_RDMA_WRITE_WITH_IMM }, { "send", XR_WR_SEND },
	{ "send_imm", XR_WR_SEND_WITH_IMM }, { "send_inv", XR_WR_SEND_WITH_INV }, { "read", XR_WR_RDMA_READ },
	{ "cas", XR_WR_ATOMIC_CMP_AND_SWP }, { "faa", XR_WR_ATOMIC_FETCH_AND_ADD },
	{ "local_inv", XR_WR_LOCAL_INV },
};

bool parse_send(struct run *r, char **tok, int ntok, struct send_args *a)
{
	struct region *mr = region_by_name(r, "mr");
	uint64_t v;

	memset(a, 0, sizeof(*a));
	a->want_rc = expected_rc(tok, &ntok);
	a->op = -1;
	for (size_t i = 0; ntok >= 2 && i < sizeof(wr_opcodes) / sizeof(wr_opcodes[0]); i++)
		if (!strcmp(tok[1], wr_opcodes[i].name)) {
			a->op = wr_opcodes[i].v;
			a->opname = wr_opcodes[i].name;
		}
	if (a->op < 0) {
		fail(r, ntok < 2 ? "post_send OP [len= va= rkey= ...]" : "unknown work request '%s'", tok[1]);
		return false;
	}
	a->src = region_by_name(r, "lbuf");
	a->id = r->next_wr_id++;
	a->flags = XR_SEND_SIGNALED;
	a->num_sge = 1;
	a->atomic = a->op == XR_WR_ATOMIC_CMP_AND_SWP || a->op == XR_WR_ATOMIC_FETCH_AND_ADD;
	a->len = a->atomic ? 8 : 0;
	a->va = r->ops->va(r, mr);
	a->rkey = mr->rkey;
	a->qkey = r->o.qkey;
	a->dqpn = r->peer_qpn;
	for (int i = 2; i < ntok; i++) {
		char *k, *val;
		if (!strcmp(tok[i], "fence")) { a->flags |= XR_SEND_FENCE; continue; }
		if (!strcmp(tok[i], "solicited")) { a->flags |= XR_SEND_SOLICITED; continue; }
		if (!strcmp(tok[i], "inline")) { a->flags |= XR_SEND_INLINE; continue; }
		if (!strcmp(tok[i], "unsignaled")) { a->flags &= ~(unsigned)XR_SEND_SIGNALED; continue; }
		if (!kv(r, tok[i], &k, &val))
			return false;
		if (!strcmp(k, "sge")) {
			a->src = region_by_name(r, val);
			if (!a->src) {
				fail(r, "no region '%s'", val);
				return false;
			}
			continue;
		}
		if (!eval(r, val, &v))
			return false;
		if (!strcmp(k, "len")) a->len = (uint32_t)v;
		else if (!strcmp(k, "off")) a->off = v;
		else if (!strcmp(k, "lkey")) { a->lkey = (uint32_t)v; a->lkey_set = true; }
		else if (!strcmp(k, "va")) a->va = v;
		else if (!strcmp(k, "rkey")) a->rkey = (uint32_t)v;
		else if (!strcmp(k, "id")) a->id = v;
		else if (!strcmp(k, "imm")) a->imm = (uint32_t)v;
		else if (!strcmp(k, "inv")) a->inv = (uint32_t)v;
		else if (!strcmp(k, "swap")) a->swap = v;
		else if (!strcmp(k, "cmp") || !strcmp(k, "add")) a->cmp_add = v;
		else if (!strcmp(k, "num_sge")) {
			/* A line gives one SGE. More than the QP takes tests the
			 * refusal (nothing is read); 2..max would read SGEs that
			 * are not there. */
			if (v > 1 && (v <= XR_WQE_BLOCK_SGE || v > INT_MAX)) {
				fail(r, "num_sge=%s: a line gives one SGE (num_sge 0 or 1, or above the QP's %d to test "
					"the refusal)", val, XR_WQE_BLOCK_SGE);
				return false;
			}
			a->num_sge = (int)v;
		}
		else if (!strcmp(k, "qkey")) a->qkey = (uint32_t)v;
		else if (!strcmp(k, "dqpn")) a->dqpn = (uint32_t)v;
		else {
			fail(r, "unknown post_send option '%s'", k);
			return false;
		}
	}
	if (!a->lkey_set)
		a->lkey = a->src->lkey;
	if (a->op == XR_WR_LOCAL_INV)
		a->num_sge = 0;
	return true;
}

bool parse_recv(struct run *r, char **tok, int ntok, struct recv_args *a)
{
	uint64_t v;
	bool off_set = false;   /* not a sentinel value: off=0-1 is a (bad) offset too */

	a->want_rc = expected_rc(tok, &ntok);
	a->region = region_by_name(r, "rbuf");
	a->len = 4096;
	a->off = 0;
	a->id = r->next_wr_id++;
	for (int i = 1; i < ntok; i++) {
		char *k, *val;
		if (!kv(r, tok[i], &k, &val))
			return false;
		if (!strcmp(k, "sge")) {
			a->region = region_by_name(r, val);
			if (!a->region) {
				fail(r, "no region '%s'", val);
				return false;
			}
			continue;
		}
		if (!eval(r, val, &v))
			return false;
		if (!strcmp(k, "len")) a->len = v;
		else if (!strcmp(k, "id")) a->id = v;
		else if (!strcmp(k, "off")) { a->off = v; off_set = true; }
		else {
			fail(r, "unknown post_recv option '%s'", k);
			return false;
		}
	}
	if (!off_set) {
		a->off = r->rbuf_next;
		if (a->len <= a->region->len)   /* else refused below; no wrap */
			r->rbuf_next += (a->len + 63) & ~63ull;
	}
	/* Written so that off + len cannot wrap past 2^64. */
	if (a->len > a->region->len || a->off > a->region->len - a->len) {
		fail(r, "receive buffer beyond region %s", a->region->name);
		return false;
	}
	return true;
}

/* modify_qp state=S timeout= ... [=> E] */
bool parse_modify(struct run *r, char **tok, int ntok, struct modify_args *m)
{
	m->want_rc = expected_rc(tok, &ntok);
	memset(&m->a, 0, sizeof(m->a));
	m->mask = 0;
	for (int i = 1; i < ntok; i++) {
		struct xr_qp_attr *a = &m->a;
		char *k, *v;
		uint64_t x;
		if (!kv(r, tok[i], &k, &v))
			return false;
		if (!strcmp(k, "state")) {
			int s = state_by_name(v);
			if (s < 0) {
				fail(r, "unknown state '%s'", v);
				return false;
			}
			a->qp_state = (enum xr_qp_state)s;
			m->mask |= XR_QP_STATE;
			continue;
		}
		if (!eval(r, v, &x))
			return false;
		if (!strcmp(k, "timeout")) { a->timeout = (uint8_t)x; m->mask |= XR_QP_TIMEOUT; }
		else if (!strcmp(k, "retry_cnt")) { a->retry_cnt = (uint8_t)x; m->mask |= XR_QP_RETRY_CNT; }
		else if (!strcmp(k, "rnr_retry")) { a->rnr_retry = (uint8_t)x; m->mask |= XR_QP_RNR_RETRY; }
		else if (!strcmp(k, "min_rnr_timer")) { a->min_rnr_timer = (uint8_t)x; m->mask |= XR_QP_MIN_RNR_TIMER; }
		else if (!strcmp(k, "sq_psn")) { a->sq_psn = (uint32_t)x; m->mask |= XR_QP_SQ_PSN; }
		else if (!strcmp(k, "rq_psn")) { a->rq_psn = (uint32_t)x; m->mask |= XR_QP_RQ_PSN; }
		else if (!strcmp(k, "max_rd_atomic")) { a->max_rd_atomic = (uint8_t)x; m->mask |= XR_QP_MAX_QP_RD_ATOMIC; }
		else if (!strcmp(k, "max_dest_rd_atomic")) {
			a->max_dest_rd_atomic = (uint8_t)x;
			m->mask |= XR_QP_MAX_DEST_RD_ATOMIC;
		} else {
			fail(r, "unknown modify_qp attribute '%s'", k);
			return false;
		}
	}
	return true;
}

/* dereg_mr NAME [=> E]: a region (registered, on the local device). */
struct region *parse_dereg(struct run *r, char **tok, int ntok, int *want_rc)
{
	struct region *g;

	*want_rc = expected_rc(tok, &ntok);
	g = ntok == 2 ? region_by_name(r, tok[1]) : NULL;
	if (!g || (!r->remote && !g->mr)) {
		fail(r, "dereg_mr NAME [=> EBUSY] (a registered region)");
		return NULL;
	}
	return g;
}

/* ---- expectations ---- */

/* state S: the state's number, or -1 (and a failure). */
int parse_state(struct run *r, char **tok, int ntok)
{
	int s = ntok == 2 ? state_by_name(tok[1]) : -1;

	if (s < 0)
		fail(r, "state RESET|INIT|RTR|RTS|SQD|SQE|ERR");
	return s;
}

/* mem ADDR len=N ==|:= SPEC */
bool parse_mem(struct run *r, char **tok, int ntok, struct mem_args *m)
{
	char *k, *v;

	if (ntok != 5 || !split_kv(tok[2], &k, &v) || strcmp(k, "len") || !eval(r, tok[1], &m->addr) ||
	    !eval(r, v, &m->len)) {
		if (!r->failures)
			fail(r, "mem ADDR len=N ==|:= SPEC");
		return false;
	}
	m->set = !strcmp(tok[3], ":=");
	m->spec = tok[4];
	return true;
}

/* The first region holding [addr, addr+len) at the device's addresses.
 * The test takes no sum that could wrap past 2^64 (`len=0-1` would). */
struct region *region_at(struct run *r, uint64_t addr, uint64_t len)
{
	for (int i = 0; i < r->nreg; i++) {
		uint64_t va = r->ops->va(r, &r->reg[i]), rlen = r->reg[i].len;
		if (addr >= va && len <= rlen && addr - va <= rlen - len)
			return &r->reg[i];
	}
	return NULL;
}

/* cqe send|recv [none | ...]: false (and a failure) on a bad head. */
bool parse_cqe(struct run *r, char **tok, int ntok, struct cqe_args *c)
{
	if (ntok < 2 || (strcmp(tok[1], "send") && strcmp(tok[1], "recv"))) {
		fail(r, "cqe send|recv [none | status= opcode= len= id= imm= flags=]");
		return false;
	}
	c->send = !strcmp(tok[1], "send");
	c->none = ntok >= 3 && !strcmp(tok[2], "none");
	return true;
}

/* A cqe line's fields (tok[2]...) against the completion g, in order:
 * the first that does not hold fails. */
void cqe_check(struct run *r, char **tok, int ntok, const struct cqe_got *g)
{
	const char *status = wc_status_name(g->status);

	for (int i = 2; i < ntok; i++) {
		char *k, *v;
		uint64_t want = 0, got;
		if (!kv(r, tok[i], &k, &v))
			return;
		if (!strcmp(k, "status")) {   /* status=A|B: either reading of the spec */
			char alt[128], *save = NULL;
			bool hit = false;
			snprintf(alt, sizeof(alt), "%s", v);
			for (char *a = strtok_r(alt, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
				if (!g->lax_status && name_index(status_names, NSTATUS, a) < 0) {
					fail(r, "unknown status '%s'", a);
					return;
				}
				hit |= !strcasecmp(a, status);
			}
			if (!hit) {
				fail(r, "completion status is %s, expected %s (wr_id %llu)", status, v,
				     (unsigned long long)g->wr_id);
				return;
			}
			continue;
		}
		if (!strcmp(k, "opcode")) {
			if (!g->opname || strcasecmp(v, g->opname)) {
				fail(r, "completion opcode is %s, expected %s", g->opcode_text, v);
				return;
			}
			continue;
		}
		if (!strcmp(k, "flags")) {
			if ((strstr(v, "WITH_IMM") != NULL) != g->with_imm || (strstr(v, "WITH_INV") != NULL) != g->with_inv) {
				fail(r, "completion flags are %s, expected %s", g->flags_text, v);
				return;
			}
			continue;
		}
		if (!eval(r, v, &want))
			return;
		if (!strcmp(k, "len")) got = g->byte_len;
		else if (!strcmp(k, "id")) got = g->wr_id;
		else if (!strcmp(k, "imm")) got = g->imm;
		else if (!strcmp(k, "src_qp")) got = g->src_qp;
		else {
			fail(r, "unknown completion field '%s'", k);
			return;
		}
		if (got != want) {
			fail(r, "completion %s is 0x%llx, expected 0x%llx", k, (unsigned long long)got,
			     (unsigned long long)want);
			return;
		}
	}
}
