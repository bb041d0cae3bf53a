/* SPDX-License-Identifier: MIT */
/*
 * Record mode (conformance_run --record): instead of checking a script's
 * expectations, print what the device under test did after each step, in
 * a form two devices can be compared by (tests/conformance/diff_rxe.py):
 * no addresses, keys or QPNs of the device, payloads as length and hash.
 * Every packet is printed as sent; what two correct devices may do
 * differently (coalesced ACKs, RNR timer values) is the comparison's to
 * normalize, so the transcript keeps it.
 *
 *   @L<line> <the line>
 *     pkt OPCODE psn=N [aeth=ACK|RNR:T|NAK_SEQ|NAK_INV|NAK_ACC|NAK_OP|..] [msn=N]
 *         [reth=REGION+OFF/DLEN] [atomic=REGION+OFF swap=0x.. cmp=0x..] [imm=0x..]
 *         [len=N fnv=H] [orig=0x..]      (a request N sent: where it points, by region)
 *     cqe send|recv id=N STATUS [OPCODE len=N] [imm=0x..|inv=REGION.rkey] [flags=..]
 *     rc WHAT=N
 *     state S                       (when it changed)
 *   @end
 *     region NAME fnv=H changed=[a,b)...
 *     guards ok|bad NAME
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

bool recording;
static char pending[256];   /* rc lines of the step being run, printed under its header */

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void aeth_text(uint8_t syn, char *buf, size_t n)
{
	static const char *const naks[] = { "NAK_SEQ", "NAK_INV", "NAK_ACC", "NAK_OP", "NAK_INV_RD" };
	unsigned v = syn & XR_AETH_VALUE_MASK;

	switch (syn & XR_AETH_TYPE_MASK) {
	case XR_AETH_ACK:
		/* rxe never advertises credits (A23): only a count is news */
		if (v == XR_AETH_VALUE_MASK)
			snprintf(buf, n, "ACK");
		else
			snprintf(buf, n, "ACK:cr%u", v);
		break;
	case XR_AETH_RNR_NAK:
		snprintf(buf, n, "RNR:%u", v);
		break;
	case XR_AETH_NAK:
		if (v < 5)
			snprintf(buf, n, "%s", naks[v]);
		else
			snprintf(buf, n, "NAK:0x%02x", syn);
		break;
	default:
		snprintf(buf, n, "RSVD:0x%02x", syn);
	}
}

/* A remote address by the region it falls in (addresses differ per device). */
static void va_text(struct run *r, uint64_t va, uint32_t rkey, char *buf, size_t n)
{
	for (int i = 0; i < r->nreg; i++) {
		uint64_t base = r->ops->va(r, &r->reg[i]);
		if (r->reg[i].rkey == rkey && va >= base && va - base <= r->reg[i].len) {
			snprintf(buf, n, "%s+%llu", r->reg[i].name, (unsigned long long)(va - base));
			return;
		}
	}
	snprintf(buf, n, "other");
}

static void print_packets(struct run *r)
{
	while (held_count(r)) {
		struct held *h = &r->held[r->held_head++];
		struct xr_pkt p;
		char a[48];

		if (xr_pkt_parse(h->data, h->len, 0, 0, &p) != XR_PARSE_OK) {
			printf("  pkt unparsable len=%u\n", h->len);
			continue;
		}
		printf("  pkt %s psn=%u", peer_opname(p.opcode), p.psn);
		if (p.op->hdrs & XR_H_RETH) {
			va_text(r, p.reth.va, p.reth.rkey, a, sizeof(a));
			printf(" reth=%s/%u", a, p.reth.len);
		}
		if (p.op->hdrs & XR_H_ATMETH) {
			va_text(r, p.atomic.va, p.atomic.rkey, a, sizeof(a));
			printf(" atomic=%s swap=0x%llx cmp=0x%llx", a, (unsigned long long)p.atomic.swap_add,
			       (unsigned long long)p.atomic.compare);
		}
		if (p.op->hdrs & XR_H_IMMDT)
			printf(" imm=0x%x", p.imm);
		if (p.op->hdrs & XR_H_AETH) {
			aeth_text(p.aeth.syndrome, a, sizeof(a));
			printf(" aeth=%s msn=%u", a, p.aeth.msn);
		}
		if (p.payload_len)
			printf(" len=%u fnv=%016llx", p.payload_len, (unsigned long long)fnv(p.payload, p.payload_len));
		if (p.op->hdrs & XR_H_ATMACK)
			printf(" orig=0x%llx", (unsigned long long)p.atomic_orig);
		if (p.dqpn != r->peer_qpn || xr_gid_to_ipv4(&p.dgid) != r->peer_ip)
			printf(" MISADDRESSED");
		putchar('\n');
	}
	drain_held(r);
}

/* An invalidated key by the region it belongs to: keys differ per device. */
static void key_text(struct run *r, uint64_t key, char *buf, size_t n)
{
	for (int i = 0; i < r->nreg; i++) {
		if (r->reg[i].rkey == key) {
			snprintf(buf, n, "%s.rkey", r->reg[i].name);
			return;
		}
		if (r->reg[i].lkey == key) {
			snprintf(buf, n, "%s.lkey", r->reg[i].name);
			return;
		}
	}
	snprintf(buf, n, "other");
}

static void print_cqes(struct run *r)
{
	for (int cq = 0; cq < 2; cq++) {
		struct cqe_got g;
		for (int k = 0; k < 1024 && r->ops->poll(r, cq == 0, &g); k++) {
			const char *st = wc_status_name(g.status);
			printf("  cqe %s id=%llu %s", cq == 0 ? "send" : "recv", (unsigned long long)g.wr_id, st);
			/* verbs: only wr_id, status and qp_num are valid in an error completion */
			if (g.status) {
				putchar('\n');
				continue;
			}
			printf(" %s len=%llu", g.opname ? g.opname : "?", (unsigned long long)g.byte_len);
			if (g.with_imm)
				printf(" imm=0x%llx", (unsigned long long)g.imm);
			if (g.with_inv) {
				char k[32];
				key_text(r, g.imm, k, sizeof(k));
				printf(" inv=%s", k);
			}
			putchar('\n');
		}
	}
}

static void print_state(struct run *r)
{
	int s = r->ops->qp_state(r);

	if (s != r->rec_state)
		printf("  state %s\n", state_name(s));
	r->rec_state = s;
}

/* The local device's side of record mode (dut.c's dut_local). */
bool local_poll(struct run *r, bool send, struct cqe_got *g)
{
	struct xr_wc wc;

	if (xr_poll_cq(send ? r->scq : r->rcq, 1, &wc) <= 0)
		return false;
	*g = (struct cqe_got){ .wr_id = wc.wr_id, .byte_len = wc.byte_len, .imm = wc.imm_data,
			       .src_qp = wc.src_qp, .status = (int)wc.status,
			       .opname = wc_opcode_name((int)wc.opcode),
			       .with_imm = wc.wc_flags & XR_WC_WITH_IMM, .with_inv = wc.wc_flags & XR_WC_WITH_INV };
	return true;
}

int local_qp_state(struct run *r)
{
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;

	return r->qp && !xr_query_qp(r->qp, &a, XR_QP_STATE, &ia) ? (int)a.qp_state : -1;
}

bool local_region_read(struct run *r, const struct region *g, uint8_t *buf)
{
	(void)r;
	memcpy(buf, g->mem, g->len);
	return true;
}

void record_rc(struct run *r, const char *what, int rc)
{
	size_t n = strlen(pending);

	(void)r;
	snprintf(pending + n, sizeof(pending) - n, "  rc %s=%d\n", what, rc);
}

void record_begin(struct run *r, const char *path)
{
	printf("== %s\n", path);
	r->rec_state = -2;
}

void record_step(struct run *r, const char *line)
{
	r->ops->settle(r);
	printf("@L%d %s\n%s", r->line, line, pending);
	pending[0] = '\0';
	print_packets(r);
	print_cqes(r);
	print_state(r);
}

/* The regions' bytes: a hash, and where they differ from how they started
 * (lbuf byte i = 0x40+i, all others zero), as at most 8 ranges. */
static void print_region(struct run *r, struct region *g)
{
	uint8_t *b = malloc(g->len ? g->len : 1);
	int ranges = 0;
	size_t i = 0;
	bool lbuf = !strcmp(g->name, "lbuf");

	if (!b || !r->ops->region_read(r, g, b)) {
		printf("  region %s unreadable\n", g->name);
		free(b);
		return;
	}
	printf("  region %s fnv=%016llx changed=", g->name, (unsigned long long)fnv(b, g->len));
	while (i < g->len) {
		size_t j;
		if (b[i] == (lbuf ? (uint8_t)(0x40 + i) : 0)) {
			i++;
			continue;
		}
		for (j = i; j < g->len && b[j] != (lbuf ? (uint8_t)(0x40 + j) : 0); j++)
			;
		if (ranges++ < 8)
			printf("[0x%zx,0x%zx)", i, j);
		i = j;
	}
	if (ranges > 8)
		printf("+%d", ranges - 8);
	printf("%s\n", ranges ? "" : "none");
	free(b);
}

void record_end(struct run *r)
{
	const char *bad = NULL;

	printf("@end\n");
	print_packets(r);
	print_cqes(r);
	print_state(r);
	for (int i = 0; i < r->nreg; i++)
		if (!r->reg[i].mw)
			print_region(r, &r->reg[i]);
	if (r->ops->guards_ok(r, &bad))
		printf("  guards ok\n");
	else
		printf("  guards bad %s\n", bad ? bad : "?");
	fflush(stdout);
}
