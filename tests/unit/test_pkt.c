/* SPDX-License-Identifier: MIT */
/* The opcode table, build -> parse round trips, every rejection reason and
 * every truncation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"
#include "xroce/wire.h"

#define PROPERTY_PACKETS 10000
static const uint32_t mtus[] = { 256, 512, 1024, 2048, 4096 };

/* ---- opcode table ---- */

static void test_opcode_table_is_consistent(void **state)
{
	size_t n;
	const struct xr_opcode_info *t = xr_opcode_all(&n);

	(void)state;
	/* RC 0x00-0x14, 0x16, 0x17 (23); UC 0x20-0x2B (12); UD 2; CNP 1. */
	assert_int_equal(n, 23 + 12 + 2 + 1);
	for (size_t i = 0; i < n; i++) {
		const struct xr_opcode_info *op = &t[i];
		size_t sum = 0;
		assert_ptr_equal(xr_opcode_info(op->opcode), op);
		assert_int_equal(xr_opcode_by_name(op->name), op->opcode);
		/* The constant-folded header length equals the walked one. */
		for (unsigned b = 0; b < XR_EXT_HDR_COUNT; b++)
			if (op->hdrs & (1u << b)) {
				assert_int_equal(xr_ext_hdr_offset(op, 1u << b), (int)sum);
				sum += xr_ext_hdr_size(1u << b);
			}
		assert_int_equal(op->hdr_len, sum);
		/* Exactly one of request / response / CNP. */
		assert_int_equal(!!(op->flags & XR_OPF_REQ) + !!(op->flags & XR_OPF_RESP) +
				 !!(op->flags & XR_OPF_CNP), 1);
		/* Receive WQEs are consumed only by requests. */
		if (op->flags & XR_OPF_RWQE)
			assert_true(op->flags & XR_OPF_REQ);
		/* Immediate data and IETH only where the header is. */
		assert_int_equal(!!(op->flags & XR_OPF_IMM), !!(op->hdrs & XR_H_IMMDT));
		assert_int_equal(!!(op->flags & XR_OPF_INV), !!(op->hdrs & XR_H_IETH));
		/* RETH starts WRITE messages and READs. */
		if ((op->flags & XR_OPF_WRITE) && (op->flags & XR_OPF_FIRST))
			assert_true(op->hdrs & XR_H_RETH);
		/* UC mirrors RC's low bits for SEND/WRITE. */
		if (xr_opcode_transport(op->opcode) == XR_TRANSPORT_UC) {
			const struct xr_opcode_info *rc = xr_opcode_info(op->opcode & 0x1F);
			assert_non_null(rc);
			assert_int_equal(rc->hdrs, op->hdrs);
			assert_int_equal(rc->payload, op->payload);
			assert_int_equal(rc->flags, op->flags);
		}
	}
	/* Spot checks against the reference table. */
	assert_null(xr_opcode_info(0x15));
	assert_null(xr_opcode_info(0x80));
	assert_int_equal(xr_opcode_info(XR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)->hdr_len, 20);
	assert_int_equal(xr_opcode_info(XR_OP_RC_ATOMIC_ACKNOWLEDGE)->hdr_len, 12);
	assert_int_equal(xr_ext_hdr_offset(xr_opcode_info(XR_OP_RC_ATOMIC_ACKNOWLEDGE), XR_H_ATMACK), 4);
	assert_int_equal(xr_ext_hdr_offset(xr_opcode_info(XR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE), XR_H_IMMDT), 16);
	assert_int_equal(xr_opcode_info(XR_OP_RC_RDMA_READ_RESPONSE_MIDDLE)->hdrs, 0);
	assert_int_equal(xr_opcode_info(XR_OP_CNP)->hdr_len, 16);
	assert_int_equal(xr_opcode_by_name("send_only"), 0x04);
	assert_int_equal(xr_opcode_by_name("0x81"), 0x81);
	assert_int_equal(xr_opcode_by_name("0x15"), -1);
	assert_int_equal(xr_opcode_by_name("bogus"), -1);
}

/* ---- random packets ---- */

static uint32_t payload_len_for(const struct xr_opcode_info *op, uint32_t mtu, uint64_t *s)
{
	switch (op->payload) {
	case XR_PAY_NONE:  return 0;
	case XR_PAY_MTU:   return mtu;
	case XR_PAY_1_MTU: return 1 + (uint32_t)(test_rand(s) % mtu);
	case XR_PAY_0_MTU: return (uint32_t)(test_rand(s) % (mtu + 1));
	}
	return 0;
}

static void random_pkt(struct xr_pkt *p, uint8_t *payload, uint32_t mtu, uint64_t *s)
{
	size_t n;
	const struct xr_opcode_info *t = xr_opcode_all(&n);
	const struct xr_opcode_info *op = &t[test_rand(s) % n];

	xr_pkt_init(p, op->opcode);
	for (int i = 0; i < 6; i++) {
		p->dmac[i] = (uint8_t)test_rand(s);
		p->smac[i] = (uint8_t)test_rand(s);
	}
	p->vlan = test_rand(s) & 1;
	if (p->vlan) {
		p->pcp = test_rand(s) & 7;
		p->dei = test_rand(s) & 1;
		p->vid = test_rand(s) & 0xFFF;
	}
	if (test_rand(s) & 1) {
		p->ip_version = 6;
		for (int i = 0; i < 16; i++) {
			p->sgid.raw[i] = (uint8_t)test_rand(s);
			p->dgid.raw[i] = (uint8_t)test_rand(s);
		}
		p->flow_label = test_rand(s) & 0xFFFFF;
	} else {
		xr_gid_from_ipv4(&p->sgid, (uint32_t)test_rand(s));
		xr_gid_from_ipv4(&p->dgid, (uint32_t)test_rand(s));
		p->ip_id = (uint16_t)test_rand(s);
		p->df = test_rand(s) & 1;   /* RoCE sets it; the checksum must hold either way */
	}
	p->traffic_class = (uint8_t)test_rand(s);
	p->hop_limit = (uint8_t)test_rand(s);
	p->sport = (uint16_t)test_rand(s);
	p->udp_csum = (test_rand(s) & 3) == 0;
	p->se = test_rand(s) & 1;
	p->mig = test_rand(s) & 1;
	p->pkey = (uint16_t)test_rand(s);
	p->fecn = test_rand(s) & 1;
	p->becn = test_rand(s) & 1;
	p->dqpn = test_rand(s) & XR_QPN_MASK;
	p->ackreq = test_rand(s) & 1;
	p->psn = test_rand(s) & XR_PSN_MASK;
	p->reth.va = test_rand(s);
	p->reth.rkey = (uint32_t)test_rand(s);
	p->reth.len = (uint32_t)test_rand(s);
	p->aeth.syndrome = (uint8_t)test_rand(s);
	p->aeth.msn = test_rand(s) & 0xFFFFFF;
	p->atomic.va = test_rand(s);
	p->atomic.rkey = (uint32_t)test_rand(s);
	p->atomic.swap_add = test_rand(s);
	p->atomic.compare = test_rand(s);
	p->atomic_orig = test_rand(s);
	p->imm = (uint32_t)test_rand(s);
	p->ieth_rkey = (uint32_t)test_rand(s);
	p->deth.qkey = (uint32_t)test_rand(s);
	p->deth.src_qp = test_rand(s) & XR_QPN_MASK;
	p->payload_len = payload_len_for(op, mtu, s);
	for (uint32_t i = 0; i < p->payload_len; i++)
		payload[i] = (uint8_t)test_rand(s);
	p->payload = payload;
}

/* Every field the builder wrote comes back from the parser. */
static void assert_same_fields(const struct xr_pkt *a, const struct xr_pkt *b)
{
	uint32_t h = a->op->hdrs;

	assert_memory_equal(a->dmac, b->dmac, 6);
	assert_memory_equal(a->smac, b->smac, 6);
	assert_int_equal(a->vlan, b->vlan);
	if (a->vlan) {
		assert_int_equal(a->pcp, b->pcp);
		assert_int_equal(a->dei, b->dei);
		assert_int_equal(a->vid, b->vid);
	}
	assert_int_equal(a->ip_version, b->ip_version);
	assert_memory_equal(a->sgid.raw, b->sgid.raw, 16);
	assert_memory_equal(a->dgid.raw, b->dgid.raw, 16);
	assert_int_equal(a->traffic_class, b->traffic_class);
	assert_int_equal(a->hop_limit, b->hop_limit);
	if (a->ip_version == 4) {
		assert_int_equal(a->ip_id, b->ip_id);
		assert_int_equal(a->df, b->df);
	} else {
		assert_int_equal(a->flow_label, b->flow_label);
	}
	assert_int_equal(a->sport, b->sport);
	assert_int_equal(a->dport, b->dport);
	assert_int_equal(a->udp_csum, b->udp_csum);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->se, b->se);
	assert_int_equal(a->mig, b->mig);
	assert_int_equal(a->pad, b->pad);
	assert_int_equal(a->pkey, b->pkey);
	assert_int_equal(a->fecn, b->fecn);
	assert_int_equal(a->becn, b->becn);
	assert_int_equal(a->dqpn, b->dqpn);
	assert_int_equal(a->ackreq, b->ackreq);
	assert_int_equal(a->psn, b->psn);
	if (h & XR_H_RETH) {
		assert_int_equal(a->reth.va, b->reth.va);
		assert_int_equal(a->reth.rkey, b->reth.rkey);
		assert_int_equal(a->reth.len, b->reth.len);
	}
	if (h & XR_H_AETH) {
		assert_int_equal(a->aeth.syndrome, b->aeth.syndrome);
		assert_int_equal(a->aeth.msn, b->aeth.msn);
	}
	if (h & XR_H_ATMETH) {
		assert_int_equal(a->atomic.va, b->atomic.va);
		assert_int_equal(a->atomic.rkey, b->atomic.rkey);
		assert_int_equal(a->atomic.swap_add, b->atomic.swap_add);
		assert_int_equal(a->atomic.compare, b->atomic.compare);
	}
	if (h & XR_H_ATMACK)
		assert_int_equal(a->atomic_orig, b->atomic_orig);
	if (h & XR_H_IMMDT)
		assert_int_equal(a->imm, b->imm);
	if (h & XR_H_IETH)
		assert_int_equal(a->ieth_rkey, b->ieth_rkey);
	if (h & XR_H_DETH) {
		assert_int_equal(a->deth.qkey, b->deth.qkey);
		assert_int_equal(a->deth.src_qp, b->deth.src_qp);
	}
	assert_int_equal(a->payload_len, b->payload_len);
	if (a->payload_len)
		assert_memory_equal(a->payload, b->payload, a->payload_len);
	assert_int_equal(a->icrc, b->icrc);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->l3_off, b->l3_off);
	assert_int_equal(a->l4_off, b->l4_off);
	assert_int_equal(a->bth_off, b->bth_off);
	assert_int_equal(a->payload_off, b->payload_off);
}

static void test_every_opcode_round_trips(void **state)
{
	size_t n;
	const struct xr_opcode_info *t = xr_opcode_all(&n);
	static uint8_t payload[XR_MAX_MTU], frame[XR_MAX_FRAME];
	uint64_t seed = 42;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		for (size_t m = 0; m < sizeof(mtus) / sizeof(mtus[0]); m++) {
			struct xr_pkt b, p;
			ssize_t len;
			do
				random_pkt(&b, payload, mtus[m], &seed);
			while (b.opcode != t[i].opcode);
			len = xr_pkt_build(&b, frame, sizeof(frame));
			assert_true(len > 0);
			assert_int_equal(xr_pkt_parse(frame, (size_t)len, mtus[m], 0, &p), XR_PARSE_OK);
			assert_same_fields(&b, &p);
			assert_int_equal(xr_icrc_ref(frame + b.l3_off, (size_t)len - b.l3_off - 4), b.icrc);
		}
	}
}

static void test_property_random_packets(void **state)
{
	static uint8_t payload[XR_MAX_MTU], frame[XR_MAX_FRAME];
	uint64_t seed = 0x5EED0001;

	(void)state;
	for (int i = 0; i < PROPERTY_PACKETS; i++) {
		uint32_t mtu = mtus[test_rand(&seed) % 5];
		struct xr_pkt b, p;
		enum xr_parse_err err;
		ssize_t len;

		random_pkt(&b, payload, mtu, &seed);
		len = xr_pkt_build(&b, frame, sizeof(frame));
		if (len <= 0)
			fail_msg("packet %d (seed 0x5EED0001): build failed %zd", i, len);
		err = xr_pkt_parse(frame, (size_t)len, mtu, 0, &p);
		if (err != XR_PARSE_OK)
			fail_msg("packet %d (seed 0x5EED0001) opcode %s: %s", i, b.op->name,
				 xr_parse_err_name(err));
		assert_same_fields(&b, &p);
		/* The IP-level entry point agrees with the frame-level one. */
		assert_int_equal(xr_pkt_parse_ip(frame + b.l3_off, (size_t)len - b.l3_off, mtu, 0, &p),
				 XR_PARSE_OK);
		assert_int_equal(p.psn, b.psn);
	}
}

/* The engine's two-step finish (the pad at commit, the ICRC and UDP
 * checksum at its burst's flush) writes the frame xr_pkt_build writes,
 * byte for byte, whatever the buffer held before. */
static void test_pad_then_seal_is_finish(void **state)
{
	static uint8_t payload[XR_MAX_MTU], whole[XR_MAX_FRAME], steps[XR_MAX_FRAME];
	uint64_t seed = 0x5EED0002;

	(void)state;
	for (int i = 0; i < PROPERTY_PACKETS; i++) {
		uint32_t mtu = mtus[test_rand(&seed) % 5];
		struct xr_pkt b, s;
		ssize_t len;

		random_pkt(&b, payload, mtu, &seed);
		s = b;
		memset(whole, 0x5A, sizeof(whole));
		memset(steps, 0xA5, sizeof(steps));
		len = xr_pkt_build(&b, whole, sizeof(whole));
		assert_true(len > 0);
		assert_int_equal(xr_pkt_build_hdrs(&s, steps, sizeof(steps)), len);
		memcpy(steps + s.payload_off, s.payload, s.payload_len);
		xr_pkt_pad(&s, steps);
		assert_int_equal(xr_pkt_seal(steps, s.l3_off, s.len, s.udp_csum), b.icrc);
		if (memcmp(whole, steps, (size_t)len))
			fail_msg("packet %d (seed 0x5EED0002) opcode %s, udp_csum %d, IPv%u: frames differ", i,
				 b.op->name, b.udp_csum, b.ip_version);
	}
}

/* ---- truncation: every prefix of every opcode's packet is rejected ---- */

static void test_every_truncation_rejected(void **state)
{
	size_t n;
	const struct xr_opcode_info *t = xr_opcode_all(&n);
	uint64_t seed = 7;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		for (int v6 = 0; v6 < 2; v6++) {
			uint8_t payload[XR_MAX_MTU];
			uint8_t full[XR_MAX_FRAME];
			struct xr_pkt b, p;
			ssize_t len;
			do
				random_pkt(&b, payload, 256, &seed);
			while (b.opcode != t[i].opcode || (b.ip_version == 6) != v6);
			len = xr_pkt_build(&b, full, sizeof(full));
			assert_true(len > 0);
			for (ssize_t cut = 0; cut < len; cut++) {
				/* An exact-size heap copy lets ASan catch any over-read. */
				uint8_t *copy = malloc((size_t)cut + 1);
				memcpy(copy, full, (size_t)cut);
				if (xr_pkt_parse(copy, (size_t)cut, 256, 0, &p) == XR_PARSE_OK)
					fail_msg("%s truncated to %zd of %zd bytes was accepted",
						 t[i].name, cut, len);
				free(copy);
			}
		}
	}
}

/* ---- each named rejection ---- */

struct reject_case {
	const char *what;
	uint8_t opcode;
	int ip_version;
	void (*mutate)(uint8_t *f, size_t *len, struct xr_pkt *b);
	enum xr_parse_err want;
	bool fix_icrc;   /* recompute the ICRC after mutating, so the check under test is reached */
	int payload_len; /* 0: a default for the opcode's rule; -1: empty */
};

static void fix_ip_csum(uint8_t *f, const struct xr_pkt *b)
{
	uint8_t *ip = f + b->l3_off;
	if (b->ip_version == 4) {
		uint16_t c = xr_ipv4_csum(ip);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
	}
}

static void set_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static void m_ethertype(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; (void)b; f[12] = 0x88; f[13] = 0x08; }
static void m_ip_version(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->l3_off] = 0x55; fix_ip_csum(f, b); }
static void m_ihl(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->l3_off] = 0x46; fix_ip_csum(f, b); }
static void m_ip_len(uint8_t *f, size_t *l, struct xr_pkt *b)
{
	uint8_t *ip = f + b->l3_off;
	(void)l;
	if (b->ip_version == 4)
		set_be16(ip + 2, (uint16_t)(b->len - b->l3_off + 1));
	else
		set_be16(ip + 4, (uint16_t)(b->len - b->l4_off + 1));
	fix_ip_csum(f, b);
}
static void m_ip_csum(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->l3_off + 11] ^= 0xFF; }
static void m_fragment(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->l3_off + 6] |= 0x20; fix_ip_csum(f, b); }
static void m_not_udp(uint8_t *f, size_t *l, struct xr_pkt *b)
{
	(void)l;
	f[b->l3_off + (b->ip_version == 4 ? 9 : 6)] = 6;
	fix_ip_csum(f, b);
}
static void m_udp_len(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->l4_off + 5] ^= 4; }
static void m_udp_port(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; set_be16(f + b->l4_off + 2, 4792); }
static void m_tver(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->bth_off + 1] |= 1; }
static void m_opcode(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->bth_off] = 0x15; }
static void m_pad_none(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->bth_off + 1] |= 0x10; }
static void m_pad_too_big(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->bth_off + 1] |= 0x30; }
static void m_icrc(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)b; f[*l - 1] ^= 0x80; }
static void m_payload_bit(uint8_t *f, size_t *l, struct xr_pkt *b) { (void)l; f[b->payload_off] ^= 0x01; }

/* Shrinks the UDP payload by 4 bytes while keeping IP/UDP lengths consistent. */
static void shrink4(uint8_t *f, size_t *l, struct xr_pkt *b)
{
	uint8_t *ip = f + b->l3_off;
	*l -= 4;
	if (b->ip_version == 4)
		set_be16(ip + 2, (uint16_t)(*l - b->l3_off));
	else
		set_be16(ip + 4, (uint16_t)(*l - b->l4_off));
	set_be16(f + b->l4_off + 4, (uint16_t)(*l - b->l4_off));
	fix_ip_csum(f, b);
}
static void m_hdrs_short(uint8_t *f, size_t *l, struct xr_pkt *b) { shrink4(f, l, b); }
static void m_mtu_short(uint8_t *f, size_t *l, struct xr_pkt *b) { shrink4(f, l, b); }

static const struct reject_case reject_cases[] = {
	{ "EtherType",     XR_OP_RC_SEND_ONLY, 4, m_ethertype,  XR_PARSE_NOT_IP, false, 0 },
	{ "IP version",    XR_OP_RC_SEND_ONLY, 4, m_ip_version, XR_PARSE_BAD_IP_VERSION, false, 0 },
	{ "IPv6 version",  XR_OP_RC_SEND_ONLY, 6, m_ip_version, XR_PARSE_BAD_IP_VERSION, false, 0 },
	{ "IHL",           XR_OP_RC_SEND_ONLY, 4, m_ihl,        XR_PARSE_BAD_IP_HDR_LEN, false, 0 },
	{ "IP length",     XR_OP_RC_SEND_ONLY, 4, m_ip_len,     XR_PARSE_BAD_IP_LEN, false, 0 },
	{ "IPv6 length",   XR_OP_RC_SEND_ONLY, 6, m_ip_len,     XR_PARSE_BAD_IP_LEN, false, 0 },
	{ "IP checksum",   XR_OP_RC_SEND_ONLY, 4, m_ip_csum,    XR_PARSE_BAD_IP_CSUM, false, 0 },
	{ "fragment",      XR_OP_RC_SEND_ONLY, 4, m_fragment,   XR_PARSE_IP_FRAGMENT, false, 0 },
	{ "not UDP",       XR_OP_RC_SEND_ONLY, 4, m_not_udp,    XR_PARSE_NOT_UDP, false, 0 },
	{ "not UDP v6",    XR_OP_RC_SEND_ONLY, 6, m_not_udp,    XR_PARSE_NOT_UDP, false, 0 },
	{ "UDP length",    XR_OP_RC_SEND_ONLY, 4, m_udp_len,    XR_PARSE_BAD_UDP_LEN, false, 0 },
	{ "UDP port",      XR_OP_RC_SEND_ONLY, 4, m_udp_port,   XR_PARSE_NOT_ROCE_PORT, false, 0 },
	{ "TVer",          XR_OP_RC_SEND_ONLY, 4, m_tver,       XR_PARSE_BAD_TVER, true, 0 },
	{ "opcode 0x15",   XR_OP_RC_SEND_ONLY, 4, m_opcode,     XR_PARSE_UNKNOWN_OPCODE, true, 0 },
	{ "short hdrs",    XR_OP_RC_ACKNOWLEDGE, 4, m_hdrs_short, XR_PARSE_TRUNCATED_HDRS, true, 0 },
	{ "pad on ACK",    XR_OP_RC_ACKNOWLEDGE, 4, m_pad_none, XR_PARSE_BAD_PAD, true, 0 },
	{ "pad > body",    XR_OP_RC_SEND_ONLY, 4, m_pad_too_big, XR_PARSE_BAD_PAD, true, -1 },
	{ "FIRST != MTU",  XR_OP_RC_SEND_FIRST, 4, m_mtu_short, XR_PARSE_BAD_PAYLOAD_LEN, true, 0 },
	{ "ICRC",          XR_OP_RC_SEND_ONLY, 4, m_icrc,       XR_PARSE_BAD_ICRC, false, 0 },
	{ "payload flip",  XR_OP_RC_SEND_ONLY, 6, m_payload_bit, XR_PARSE_BAD_ICRC, false, 0 },
};

static void test_each_rejection_reason(void **state)
{
	uint8_t payload[XR_MAX_MTU];
	bool seen[XR_PARSE_ERR_COUNT] = { false };

	(void)state;
	memset(payload, 0x33, sizeof(payload));
	for (size_t i = 0; i < sizeof(reject_cases) / sizeof(reject_cases[0]); i++) {
		const struct reject_case *c = &reject_cases[i];
		uint8_t f[XR_MAX_FRAME];
		struct xr_pkt b, p;
		size_t len;
		enum xr_parse_err got;

		xr_pkt_init(&b, c->opcode);
		b.ip_version = (uint8_t)c->ip_version;
		if (c->ip_version == 6) {
			xr_gid_parse(&b.sgid, "fd00::1");
			xr_gid_parse(&b.dgid, "fd00::2");
		}
		b.payload = payload;
		b.payload_len = c->payload_len < 0 ? 0 :
				xr_opcode_info(c->opcode)->payload == XR_PAY_NONE ? 0 :
				xr_opcode_info(c->opcode)->payload == XR_PAY_MTU ? 1024 : 13;
		len = (size_t)xr_pkt_build(&b, f, sizeof(f));
		assert_int_equal(xr_pkt_parse(f, len, 1024, 0, &p), XR_PARSE_OK);
		c->mutate(f, &len, &b);
		if (c->fix_icrc) {
			uint32_t icrc = xr_icrc(f + b.l3_off, len - b.l3_off - 4);
			for (int k = 0; k < 4; k++)
				f[len - 4 + k] = (uint8_t)(icrc >> (8 * k));
		}
		got = xr_pkt_parse(f, len, 1024, 0, &p);
		if (got != c->want)
			fail_msg("case '%s': want %s, got %s", c->what,
				 xr_parse_err_name(c->want), xr_parse_err_name(got));
		seen[got] = true;
	}
	/* Truncation reasons come from the truncation test; make sure each
	 * remaining name is reachable from some case here or there. */
	{
		uint8_t f[8] = { 0 };
		struct xr_pkt p;
		seen[xr_pkt_parse(f, 8, 0, 0, &p)] = true;           /* TRUNCATED_L2 */
	}
	for (int e = 1; e < XR_PARSE_ERR_COUNT; e++) {
		if (e == XR_PARSE_TRUNCATED_IP || e == XR_PARSE_TRUNCATED_UDP ||
		    e == XR_PARSE_TRUNCATED_BTH || e == XR_PARSE_BAD_UDP_CSUM)
			continue;  /* covered by the truncation and checksum tests */
		if (!seen[e])
			fail_msg("no test reaches %s", xr_parse_err_name(e));
		assert_string_not_equal(xr_parse_err_desc(e), "?");
	}
}

/* MTU rules: FIRST/MIDDLE must be exactly MTU; LAST/ONLY at most MTU. */
static void test_payload_rules_against_mtu(void **state)
{
	uint8_t payload[XR_MAX_MTU] = { 0 }, f[XR_MAX_FRAME];
	struct xr_pkt b, p;
	ssize_t len;

	(void)state;
	xr_pkt_init(&b, XR_OP_RC_RDMA_WRITE_MIDDLE);
	b.payload = payload;
	b.payload_len = 1024;
	len = xr_pkt_build(&b, f, sizeof(f));
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 1024, 0, &p), XR_PARSE_OK);
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 0, 0, &p), XR_PARSE_OK);
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 2048, 0, &p), XR_PARSE_BAD_PAYLOAD_LEN);
	b.payload_len = 1000;  /* not a valid MTU at all */
	len = xr_pkt_build(&b, f, sizeof(f));
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 0, 0, &p), XR_PARSE_BAD_PAYLOAD_LEN);

	xr_pkt_init(&b, XR_OP_RC_SEND_LAST);
	b.payload = payload;
	b.payload_len = 0;
	len = xr_pkt_build(&b, f, sizeof(f));
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 1024, 0, &p), XR_PARSE_BAD_PAYLOAD_LEN);
	b.payload_len = 1025;
	len = xr_pkt_build(&b, f, sizeof(f));
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 1024, 0, &p), XR_PARSE_BAD_PAYLOAD_LEN);
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 2048, 0, &p), XR_PARSE_OK);

	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	b.payload = payload;
	b.payload_len = 0;
	len = xr_pkt_build(&b, f, sizeof(f));
	assert_int_equal(xr_pkt_parse(f, (size_t)len, 256, 0, &p), XR_PARSE_OK);
	assert_int_equal(p.payload_len, 0);
}

static void test_builder_refuses_bad_fields(void **state)
{
	uint8_t f[XR_MAX_FRAME], payload[XR_MAX_MTU + 1] = { 0 };
	struct xr_pkt b;

	(void)state;
	xr_pkt_init(&b, 0x15);
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EINVAL);
	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	b.psn = 1u << 24;
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EINVAL);
	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	b.dqpn = 1u << 24;
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EINVAL);
	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	b.pcp = 8;
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EINVAL);
	xr_pkt_init(&b, XR_OP_RC_ACKNOWLEDGE);
	b.payload = payload;
	b.payload_len = 4;
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EINVAL);
	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	b.payload = payload;
	b.payload_len = XR_MAX_MTU + 1;
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EMSGSIZE);
	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	assert_int_equal(xr_pkt_build(&b, f, 40), -EMSGSIZE);
	xr_pkt_init(&b, XR_OP_RC_SEND_ONLY);
	xr_gid_parse(&b.dgid, "fd00::2");  /* IPv6 GID on an IPv4 packet */
	assert_int_equal(xr_pkt_build(&b, f, sizeof(f)), -EINVAL);
}

static void test_gid_text(void **state)
{
	xr_gid g;
	char buf[64];

	(void)state;
	assert_int_equal(xr_gid_parse(&g, "192.168.1.1"), 0);
	assert_true(xr_gid_is_ipv4(&g));
	assert_int_equal(xr_gid_to_ipv4(&g), 0xC0A80101);
	{
		uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xc0, 0xa8, 1, 1 };
		assert_memory_equal(g.raw, want, 16);
	}
	assert_string_equal(xr_gid_format(&g, buf, sizeof(buf)), "192.168.1.1");
	assert_int_equal(xr_gid_parse(&g, "fe80::1"), 0);
	assert_false(xr_gid_is_ipv4(&g));
	assert_string_equal(xr_gid_format(&g, buf, sizeof(buf)), "fe80::1");
	assert_int_equal(xr_gid_parse(&g, "not-an-address"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_table_is_consistent),
		cmocka_unit_test(test_every_opcode_round_trips),
		cmocka_unit_test(test_property_random_packets),
		cmocka_unit_test(test_pad_then_seal_is_finish),
		cmocka_unit_test(test_every_truncation_rejected),
		cmocka_unit_test(test_each_rejection_reason),
		cmocka_unit_test(test_payload_rules_against_mtu),
		cmocka_unit_test(test_builder_refuses_bad_fields),
		cmocka_unit_test(test_gid_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
