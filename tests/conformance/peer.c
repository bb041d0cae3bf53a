/* SPDX-License-Identifier: MIT */
/*
 * The scripted peer: builds the packets a `<` line injects and checks the
 * packets xroce sends against `>` lines. Every frame xroce sends must
 * parse, carry a correct ICRC and be addressed to the peer's QP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

/* Short names as the rule checklist writes them, and the opcodes they mean. */
static const struct { const char *name; uint8_t op; } aliases[] = {
	{ "SEND_FIRST", XR_OP_RC_SEND_FIRST }, { "SEND_MIDDLE", XR_OP_RC_SEND_MIDDLE },
	{ "SEND_LAST", XR_OP_RC_SEND_LAST }, { "SEND_LAST_IMM", XR_OP_RC_SEND_LAST_WITH_IMMEDIATE },
	{ "SEND_ONLY", XR_OP_RC_SEND_ONLY }, { "SEND_ONLY_IMM", XR_OP_RC_SEND_ONLY_WITH_IMMEDIATE },
	{ "SEND_LAST_INV", XR_OP_RC_SEND_LAST_WITH_INVALIDATE },
	{ "SEND_ONLY_INV", XR_OP_RC_SEND_ONLY_WITH_INVALIDATE },
	{ "WRITE_FIRST", XR_OP_RC_RDMA_WRITE_FIRST }, { "WRITE_MIDDLE", XR_OP_RC_RDMA_WRITE_MIDDLE },
	{ "WRITE_LAST", XR_OP_RC_RDMA_WRITE_LAST },
	{ "WRITE_LAST_IMM", XR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE },
	{ "WRITE_ONLY", XR_OP_RC_RDMA_WRITE_ONLY },
	{ "WRITE_ONLY_IMM", XR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE },
	{ "READ", XR_OP_RC_RDMA_READ_REQUEST },
	{ "RESP_FIRST", XR_OP_RC_RDMA_READ_RESPONSE_FIRST },
	{ "RESP_MIDDLE", XR_OP_RC_RDMA_READ_RESPONSE_MIDDLE },
	{ "RESP_LAST", XR_OP_RC_RDMA_READ_RESPONSE_LAST },
	{ "RESP_ONLY", XR_OP_RC_RDMA_READ_RESPONSE_ONLY },
	{ "ACK", XR_OP_RC_ACKNOWLEDGE }, { "AACK", XR_OP_RC_ATOMIC_ACKNOWLEDGE },
	{ "CAS", XR_OP_RC_COMPARE_SWAP }, { "FA", XR_OP_RC_FETCH_ADD },
};

static int opcode_of(const char *name)
{
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcasecmp(aliases[i].name, name))
			return aliases[i].op;
	return xr_opcode_by_name(name);
}

static const char *short_name(uint8_t op)
{
	const struct xr_opcode_info *info;

	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (aliases[i].op == op)
			return aliases[i].name;
	info = xr_opcode_info(op);
	return info ? info->name : "?";
}

const char *peer_opname(uint8_t op)
{
	return short_name(op);
}

/* AETH syndromes by name: ack, nak_seq, nak_inv, nak_acc, nak_op, rnr:T. */
static bool syndrome_of(struct run *r, const char *v, uint64_t *out)
{
	static const struct { const char *n; uint8_t s; } names[] = {
		{ "ack", XR_AETH_ACK_UNLIMITED }, { "nak_seq", XR_AETH_NAK_PSN_SEQ },
		{ "nak_inv", XR_AETH_NAK_INV_REQ }, { "nak_acc", XR_AETH_NAK_REM_ACCESS },
		{ "nak_op", XR_AETH_NAK_REM_OP }, { "nak_inv_rd", XR_AETH_NAK_INV_RD_REQ },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(v, names[i].n)) {
			*out = names[i].s;
			return true;
		}
	if (!strncasecmp(v, "rnr:", 4)) {
		if (!eval(r, v + 4, out))
			return false;
		*out = XR_AETH_RNR_NAK | (*out & XR_AETH_VALUE_MASK);
		return true;
	}
	return eval(r, v, out);
}

/* ---- what xroce sent ---- */

unsigned held_count(const struct run *r)
{
	return r->nheld - r->held_head;
}

void drain_held(struct run *r)
{
	r->nheld = r->held_head = 0;
}

void collect(struct run *r)
{
	struct xr_frame *f[32];
	int n;

	if (r->hold)
		return;
	while ((n = xr_link_recv(r->peer_link, f, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			if (r->discard) {
				xr_link_frame_free(r->peer_link, f[i]);
				continue;
			}
			if (r->held_head && r->held_head == r->nheld)
				r->nheld = r->held_head = 0;
			if (r->nheld == MAX_HELD) {
				fail(r, "%s sent more than %d packets without the script reading them", r->ops->name, MAX_HELD);
			} else {
				memcpy(r->held[r->nheld].data, f[i]->data, f[i]->len);
				r->held[r->nheld++].len = f[i]->len;
			}
			xr_link_frame_free(r->peer_link, f[i]);
		}
	}
}

void settle(struct run *r)
{
	r->ops->settle(r);
}

void settle_local(struct run *r)
{
	int quiet = 0;

	for (int i = 0; i < 100000 && quiet < 4; i++) {
		int w = xr_engine_progress(r->eng);
		collect(r);
		quiet = w ? 0 : quiet + 1;
	}
	collect(r);
}

void held_describe(const uint8_t *data, uint16_t len, char *buf, size_t n)
{
	struct xr_pkt p;
	enum xr_parse_err err = xr_pkt_parse(data, len, 0, 0, &p);
	int k;

	if (err != XR_PARSE_OK) {
		snprintf(buf, n, "unparsable frame of %u bytes (%s)", len, xr_parse_err_name(err));
		return;
	}
	k = snprintf(buf, n, "%s psn=%u", short_name(p.opcode), p.psn);
	if (p.op->hdrs & XR_H_AETH)
		k += snprintf(buf + k, n - (size_t)k, " syn=0x%02x msn=%u", p.aeth.syndrome, p.aeth.msn);
	if (p.op->hdrs & XR_H_RETH)
		k += snprintf(buf + k, n - (size_t)k, " va=0x%llx rkey=0x%x dlen=%u",
			      (unsigned long long)p.reth.va, p.reth.rkey, p.reth.len);
	if (p.op->hdrs & XR_H_ATMACK)
		k += snprintf(buf + k, n - (size_t)k, " orig=0x%llx", (unsigned long long)p.atomic_orig);
	snprintf(buf + k, n - (size_t)k, " len=%u%s%s qpn=0x%x", p.payload_len, p.ackreq ? " ackreq" : "",
		 p.se ? " se" : "", p.dqpn);
}

/* ---- injecting ---- */

void peer_inject(struct run *r, char **tok, int ntok)
{
	struct xr_pkt p;
	struct xr_frame *f;
	uint8_t payload[XR_MAX_MTU + 64];
	const char *data = NULL;
	bool bad_icrc = false, len_set = false, ackreq_set = false, burst = false;
	uint64_t v;
	int op;
	ssize_t n;

	if (ntok < 1 || (op = opcode_of(tok[0])) < 0) {
		fail(r, "< needs an opcode (SEND_ONLY, WRITE_FIRST, READ, ACK, ...): '%s'", ntok ? tok[0] : "");
		return;
	}
	xr_pkt_init(&p, (uint8_t)op);
	memcpy(p.smac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x02 }, 6);
	if (r->dut_link)
		memcpy(p.dmac, r->dut_link->mac, 6);
	xr_gid_from_ipv4(&p.sgid, r->peer_ip);
	xr_gid_from_ipv4(&p.dgid, r->dut_ip);
	p.sport = xr_rxe_udp_sport(r->peer_qpn, r->ops->qpn(r));
	p.dqpn = r->ops->qpn(r);
	p.psn = qp_epsn(r);
	p.op = xr_opcode_info((uint8_t)op);
	p.aeth.syndrome = XR_AETH_ACK_UNLIMITED;
	p.deth.qkey = r->o.qkey;      /* UD: the fixture's Q_Key, from P's QP */
	p.deth.src_qp = r->peer_qpn;
	if ((p.op->flags & (XR_OPF_FIRST | XR_OPF_MIDDLE)) && !(p.op->flags & XR_OPF_LAST) &&
	    p.op->payload == XR_PAY_MTU)
		p.payload_len = 128u << r->o.mtu;
	for (int i = 1; i < ntok; i++) {
		char *key, *val;
		if (!strcmp(tok[i], "badicrc")) {
			bad_icrc = true;
			continue;
		}
		if (!strcmp(tok[i], "burst")) {   /* queue it; the engine runs at the next line */
			burst = true;
			continue;
		}
		if (!split_kv(tok[i], &key, &val)) {
			fail(r, "'%s' is not key=value", tok[i]);
			return;
		}
		if (!strcmp(key, "data")) {
			data = val;
			continue;
		}
		if (!strcmp(key, "sip")) {
			if (xr_gid_parse(&p.sgid, val)) {
				fail(r, "bad address '%s'", val);
				return;
			}
			continue;
		}
		if (!strcmp(key, "dip")) {   /* a group's frame goes to the group's MAC (dmac= after it overrides) */
			if (xr_gid_parse(&p.dgid, val)) {
				fail(r, "bad address '%s'", val);
				return;
			}
			if (xr_gid_is_mcast(&p.dgid))
				xr_gid_mcast_mac(&p.dgid, p.dmac);
			continue;
		}
		if (!strcmp(key, "dmac")) {
			unsigned m[6];
			if (sscanf(val, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
				fail(r, "bad MAC '%s'", val);
				return;
			}
			for (int j = 0; j < 6; j++)
				p.dmac[j] = (uint8_t)m[j];
			continue;
		}
		if (!strcmp(key, "syn") ? !syndrome_of(r, val, &v) : !eval(r, val, &v))
			return;
		if (!strcmp(key, "psn")) p.psn = (uint32_t)v & XR_PSN_MASK;
		else if (!strcmp(key, "ackreq")) { p.ackreq = v != 0; ackreq_set = true; }
		else if (!strcmp(key, "se")) p.se = v != 0;
		else if (!strcmp(key, "va")) { p.reth.va = v; p.atomic.va = v; }
		else if (!strcmp(key, "rkey")) { p.reth.rkey = (uint32_t)v; p.atomic.rkey = (uint32_t)v; }
		else if (!strcmp(key, "dlen")) p.reth.len = (uint32_t)v;
		else if (!strcmp(key, "len")) { p.payload_len = (uint32_t)v; len_set = true; }
		else if (!strcmp(key, "imm")) p.imm = (uint32_t)v;
		else if (!strcmp(key, "inv")) p.ieth_rkey = (uint32_t)v;
		else if (!strcmp(key, "swap") || !strcmp(key, "add")) p.atomic.swap_add = v;
		else if (!strcmp(key, "cmp")) p.atomic.compare = v;
		else if (!strcmp(key, "syn")) p.aeth.syndrome = (uint8_t)v;
		else if (!strcmp(key, "msn")) p.aeth.msn = (uint32_t)v & 0xFFFFFF;
		else if (!strcmp(key, "orig")) p.atomic_orig = v;
		else if (!strcmp(key, "qpn")) p.dqpn = (uint32_t)v & XR_QPN_MASK;
		else if (!strcmp(key, "pkey")) p.pkey = (uint16_t)v;
		else if (!strcmp(key, "tver")) p.tver = (uint8_t)v;
		else if (!strcmp(key, "qkey")) p.deth.qkey = (uint32_t)v;
		else if (!strcmp(key, "src_qp")) p.deth.src_qp = (uint32_t)v & XR_QPN_MASK;
		else if (!strcmp(key, "ttl")) p.hop_limit = (uint8_t)v;
		else {
			fail(r, "unknown packet field '%s'", key);
			return;
		}
	}
	(void)len_set;
	if (!ackreq_set && (p.op->flags & XR_OPF_REQ) && (p.op->flags & XR_OPF_LAST))
		p.ackreq = true;
	if (p.payload_len > sizeof(payload)) {
		fail(r, "payload of %u bytes is more than a frame holds", p.payload_len);
		return;
	}
	if (!bytes_fill(r, data ? data : "pat:0", payload, p.payload_len))
		return;
	if (!data)
		for (uint32_t i = 0; i < p.payload_len; i++)
			payload[i] = (uint8_t)(p.psn + i);
	p.payload = payload;
	f = xr_link_frame_alloc(r->peer_link);
	if (!f) {
		fail(r, "the peer's link has no free frame");
		return;
	}
	n = xr_pkt_build(&p, f->data, sizeof(f->data));
	if (n < 0) {
		xr_link_frame_free(r->peer_link, f);
		fail(r, "cannot build that packet (%zd)", n);
		return;
	}
	f->len = (uint16_t)n;
	if (bad_icrc)
		f->data[n - 1] ^= 0x5A;
	if (xr_link_send(r->peer_link, &f, 1) != 1) {
		xr_link_frame_free(r->peer_link, f);
		fail(r, "the link refused the frame");
		return;
	}
	if (!burst)
		settle(r);
}

/* ---- expecting ---- */

static bool match_field(struct run *r, const struct xr_pkt *p, const char *key, const char *val, char *why,
			size_t wn)
{
	uint64_t v, got;

	if (!strcmp(key, "data")) {
		uint8_t want[XR_MAX_MTU + 64];
		if (p->payload_len > sizeof(want) || !bytes_fill(r, val, want, p->payload_len))
			return false;
		if (memcmp(want, p->payload, p->payload_len)) {
			for (uint32_t i = 0; i < p->payload_len; i++)
				if (want[i] != p->payload[i]) {
					snprintf(why, wn, "payload byte %u is 0x%02x, expected 0x%02x", i, p->payload[i],
						 want[i]);
					break;
				}
			return false;
		}
		return true;
	}
	if (!strcmp(key, "syn") ? !syndrome_of(r, val, &v) : !eval(r, val, &v))
		return false;
	if (!strcmp(key, "pad")) {   /* the BTH PadCnt, and the pad bytes must be zero */
		for (unsigned i = 0; i < p->pad; i++)
			if (p->payload[p->payload_len + i]) {
				snprintf(why, wn, "pad byte %u is 0x%02x, not zero", i, p->payload[p->payload_len + i]);
				return false;
			}
		got = p->pad;
	}
	else if (!strcmp(key, "psn")) { v &= XR_PSN_MASK; got = p->psn; }
	else if (!strcmp(key, "syn")) got = p->aeth.syndrome;
	else if (!strcmp(key, "msn")) { v &= 0xFFFFFF; got = p->aeth.msn; }
	else if (!strcmp(key, "len")) got = p->payload_len;
	else if (!strcmp(key, "va")) got = (p->op->hdrs & XR_H_RETH) ? p->reth.va : p->atomic.va;
	else if (!strcmp(key, "rkey")) got = (p->op->hdrs & XR_H_RETH) ? p->reth.rkey : p->atomic.rkey;
	else if (!strcmp(key, "dlen")) got = p->reth.len;
	else if (!strcmp(key, "orig")) got = p->atomic_orig;
	else if (!strcmp(key, "ackreq")) { v = v != 0; got = p->ackreq; }
	else if (!strcmp(key, "se")) { v = v != 0; got = p->se; }
	else if (!strcmp(key, "imm")) got = p->imm;
	else if (!strcmp(key, "inv")) got = p->ieth_rkey;
	else if (!strcmp(key, "swap") || !strcmp(key, "add")) got = p->atomic.swap_add;
	else if (!strcmp(key, "cmp")) got = p->atomic.compare;
	else if (!strcmp(key, "qkey")) got = p->deth.qkey;
	else if (!strcmp(key, "src_qp")) got = p->deth.src_qp;
	else {
		snprintf(why, wn, "unknown packet field '%s'", key);
		return false;
	}
	if (v != got) {
		snprintf(why, wn, "%s is 0x%llx, expected 0x%llx", key, (unsigned long long)got,
			 (unsigned long long)v);
		return false;
	}
	return true;
}

void peer_expect(struct run *r, char **tok, int ntok)
{
	struct held *h;
	struct xr_pkt p;
	enum xr_parse_err err;
	char got[256], why[160] = "";
	int op;

	r->ops->await(r, !(ntok >= 1 && !strcmp(tok[0], "none")));
	if (ntok >= 1 && !strcmp(tok[0], "none")) {
		if (held_count(r)) {
			h = &r->held[r->held_head];
			held_describe(h->data, h->len, got, sizeof(got));
			fail(r, "expected nothing, %s sent: %s", r->ops->name, got);
		}
		return;
	}
	if (ntok < 1 || ((op = opcode_of(tok[0])) < 0 && strcasecmp(tok[0], "any"))) {
		fail(r, "> needs an opcode, 'any' or 'none': '%s'", ntok ? tok[0] : "");
		return;
	}
	if (!held_count(r)) {
		fail(r, "expected %s, %s sent nothing", tok[0], r->ops->name);
		return;
	}
	h = &r->held[r->held_head++];
	held_describe(h->data, h->len, got, sizeof(got));
	err = xr_pkt_parse(h->data, h->len, 0, 0, &p);
	if (err != XR_PARSE_OK) {
		fail(r, "expected %s, %s sent a frame the parser refuses: %s", tok[0], r->ops->name, got);
		return;
	}
	if (!strcasecmp(tok[0], "any"))
		return;
	if (p.opcode != op) {
		fail(r, "expected %s, got: %s", tok[0], got);
		return;
	}
	if (p.dqpn != r->peer_qpn || xr_gid_to_ipv4(&p.dgid) != r->peer_ip || p.pkey != XR_DEFAULT_PKEY) {
		fail(r, "packet not addressed to the peer QP 0x%x at %u.%u.%u.%u: %s", r->peer_qpn, r->peer_ip >> 24,
		     (r->peer_ip >> 16) & 0xFF, (r->peer_ip >> 8) & 0xFF, r->peer_ip & 0xFF, got);
		return;
	}
	for (int i = 1; i < ntok; i++) {
		char *key, *val;
		if (!split_kv(tok[i], &key, &val)) {
			fail(r, "'%s' is not key=value", tok[i]);
			return;
		}
		if (!match_field(r, &p, key, val, why, sizeof(why))) {
			if (!r->failures)
				fail(r, "expected %s %s=%s: %s; got: %s", tok[0], key, val, why, got);
			return;
		}
	}
}
