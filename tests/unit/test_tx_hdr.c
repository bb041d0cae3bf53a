/* SPDX-License-Identifier: MIT */
/*
 * A connection's header template (src/nic/tx_hdr.c, xr_pkt_build_hdrs_tmpl):
 * it builds byte for byte what the fields build, and what is written to
 * the registers or the QP table shows in the next packet, not in the one
 * after a template that went stale.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <unistd.h>

#include "nic/test_hooks.h"
#include "rc_checks.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"
#include "xroce/wire.h"

/* ---- the wire layer: the template against the fields ---- */

static const uint8_t opcodes[] = {
	XR_OP_RC_SEND_ONLY, XR_OP_RC_SEND_FIRST, XR_OP_RC_SEND_LAST_WITH_IMMEDIATE, XR_OP_RC_RDMA_WRITE_ONLY,
	XR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, XR_OP_RC_RDMA_READ_REQUEST, XR_OP_RC_RDMA_READ_RESPONSE_ONLY,
	XR_OP_RC_ACKNOWLEDGE, XR_OP_RC_ATOMIC_ACKNOWLEDGE, XR_OP_RC_COMPARE_SWAP, XR_OP_RC_SEND_ONLY_WITH_INVALIDATE,
	XR_OP_UC_RDMA_WRITE_ONLY,
};

static void random_addresses(struct xr_pkt *p, uint64_t *seed)
{
	p->ip_version = ((uint32_t)test_rand(seed) & 1) ? 6 : 4;
	fill(p->dmac, 6, (uint32_t)test_rand(seed));
	fill(p->smac, 6, (uint32_t)test_rand(seed));
	p->vlan = (uint32_t)test_rand(seed) & 1;
	p->pcp = (uint8_t)((uint32_t)test_rand(seed) & 7);
	p->dei = (uint32_t)test_rand(seed) & 1;
	p->vid = (uint16_t)((uint32_t)test_rand(seed) & 0xFFF);
	if (p->ip_version == 4) {
		xr_gid_from_ipv4(&p->sgid, (uint32_t)test_rand(seed));
		xr_gid_from_ipv4(&p->dgid, (uint32_t)test_rand(seed));
		p->ip_id = (uint16_t)(uint32_t)test_rand(seed);
		p->df = (uint32_t)test_rand(seed) & 1;
	} else {
		fill(p->sgid.raw, 16, (uint32_t)test_rand(seed));
		fill(p->dgid.raw, 16, (uint32_t)test_rand(seed));
		p->sgid.raw[0] = p->dgid.raw[0] = 0xFD;   /* not IPv4-mapped */
		p->flow_label = (uint32_t)test_rand(seed) & 0xFFFFF;
	}
	p->traffic_class = (uint8_t)(uint32_t)test_rand(seed);
	p->hop_limit = (uint8_t)(uint32_t)test_rand(seed);
	p->sport = (uint16_t)(uint32_t)test_rand(seed);
	p->dport = (uint16_t)(uint32_t)test_rand(seed);
}

static void random_transport(struct xr_pkt *p, uint64_t *seed)
{
	const struct xr_opcode_info *op;

	p->opcode = opcodes[(uint32_t)test_rand(seed) % sizeof(opcodes)];
	op = xr_opcode_info(p->opcode);
	p->se = (uint32_t)test_rand(seed) & 1;
	p->pkey = (uint16_t)(uint32_t)test_rand(seed);
	p->dqpn = (uint32_t)test_rand(seed) & XR_QPN_MASK;
	p->psn = (uint32_t)test_rand(seed) & XR_PSN_MASK;
	p->ackreq = (uint32_t)test_rand(seed) & 1;
	p->reth.va = test_rand(seed);
	p->reth.rkey = (uint32_t)test_rand(seed);
	p->reth.len = (uint32_t)test_rand(seed);
	p->aeth.syndrome = (uint8_t)(uint32_t)test_rand(seed);
	p->aeth.msn = (uint32_t)test_rand(seed) & 0xFFFFFF;
	p->atomic.va = (uint32_t)test_rand(seed);
	p->atomic.swap_add = (uint32_t)test_rand(seed);
	p->atomic_orig = (uint32_t)test_rand(seed);
	p->imm = (uint32_t)test_rand(seed);
	p->ieth_rkey = (uint32_t)test_rand(seed);
	p->payload_len = op->payload == XR_PAY_NONE ? 0 : (uint32_t)test_rand(seed) % 4097;
}

/* 20,000 random packets, IPv4 and IPv6, tagged or not, every header
 * shape: the template's frame is the fields' frame, its layout the same,
 * and what the fields refuse it refuses too. */
static void test_template_builds_what_the_fields_build(void **state)
{
	static uint8_t a[XR_MAX_FRAME], b[XR_MAX_FRAME];
	uint64_t seed = 0x7e3a11u;

	(void)state;
	for (unsigned i = 0; i < 20000; i++) {
		struct xr_pkt fields, tp;
		struct xr_hdr_tmpl t;
		size_t cap = (i % 7 == 0) ? 58 + (uint32_t)test_rand(&seed) % 80 : sizeof(a);
		ssize_t la, lb;

		xr_pkt_init(&fields, 0);
		random_addresses(&fields, &seed);
		assert_int_equal(xr_hdr_tmpl_init(&t, &fields), 0);
		random_transport(&fields, &seed);
		tp = fields;
		memset(a, 0xA5, sizeof(a));
		memset(b, 0xA5, sizeof(b));
		la = xr_pkt_build_hdrs(&fields, a, cap);
		lb = xr_pkt_build_hdrs_tmpl(&tp, &t, b, cap);
		assert_int_equal(lb, la);
		if (la < 0)
			continue;
		/* Up to the payload: what follows is the caller's to write. */
		assert_memory_equal(a, b, fields.payload_off);
		assert_int_equal(tp.payload_off, fields.payload_off);
		assert_int_equal(tp.bth_off, fields.bth_off);
		assert_int_equal(tp.l3_off, fields.l3_off);
		assert_int_equal(tp.l4_off, fields.l4_off);
		assert_int_equal(tp.len, fields.len);
		assert_int_equal(tp.pad, fields.pad);
		assert_ptr_equal(tp.op, fields.op);
		/* Never a byte past cap, even where the template is longer. */
		for (size_t k = cap; k < sizeof(b) && k < cap + 80; k++)
			assert_int_equal(b[k], 0xA5);
	}
}

static void test_template_refuses_bad_addresses(void **state)
{
	struct xr_pkt p;
	struct xr_hdr_tmpl t;

	(void)state;
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	p.vid = 0x1000;
	assert_int_equal(xr_hdr_tmpl_init(&t, &p), -EINVAL);
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	p.ip_version = 5;
	assert_int_equal(xr_hdr_tmpl_init(&t, &p), -EINVAL);
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	p.ip_version = 6;
	p.flow_label = 0x100000;
	assert_int_equal(xr_hdr_tmpl_init(&t, &p), -EINVAL);
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	assert_int_equal(xr_hdr_tmpl_init(&t, &p), 0);
	p.opcode = 0x1F;   /* reserved */
	assert_int_equal(xr_pkt_build_hdrs_tmpl(&p, &t, (uint8_t[128]){ 0 }, 128), -EINVAL);
}

/* ---- the engine: a template never outlives what it was built from ---- */

struct tapped {
	struct pair p;
	char path[64];
};

static void tapped_open(struct tapped *t, const struct h_opts *o)
{
	snprintf(t->path, sizeof(t->path), "/tmp/xroce-txhdr-%d.pcap", (int)getpid());
	memset(&t->p, 0, sizeof(t->p));
	t->p.mode = o->mode;
	assert_int_equal(xr_link_mem_pair(&t->p.la, &t->p.lb, 0), 0);
	t->p.la = xr_link_pcap_tap(t->p.la, t->path);
	assert_non_null(t->p.la);
	assert_int_equal(h_end_open(&t->p.a, t->p.la, "10.0.0.1", o), 0);
	assert_int_equal(h_end_open(&t->p.b, t->p.lb, "10.0.0.2", o), 0);
}

static void connect_both(struct tapped *t, const struct h_opts *o, uint32_t psn)
{
	assert_int_equal(h_connect(t->p.a.qp[0], t->p.b.qp[0], t->p.b.ctx, o, psn, psn + 100), 0);
	assert_int_equal(h_connect(t->p.b.qp[0], t->p.a.qp[0], t->p.a.ctx, o, psn + 100, psn), 0);
}

static void reset_both(struct tapped *t)
{
	struct xr_qp_attr at = { .qp_state = XR_QPS_RESET };

	assert_int_equal(xr_modify_qp(t->p.a.qp[0], &at, XR_QP_STATE), 0);
	assert_int_equal(xr_modify_qp(t->p.b.qp[0], &at, XR_QP_STATE), 0);
}

static void write_one(struct tapped *t, uint64_t id)
{
	struct xr_sge s = { (uintptr_t)h_data(&t->p.a), 64, t->p.a.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&t->p.b);
	w.wr.rdma.rkey = t->p.b.mr->rkey;
	assert_int_equal(xr_post_send(t->p.a.qp[0], &w, NULL), 0);
	expect_wc(&t->p, &t->p.a, id, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "write");
}

/* The traffic class of each WRITE of A's and of each ACK of B's. */
struct classes {
	uint8_t *wr_tc, *ack_tc;
	unsigned writes, acks, max;
};

static void note_class(const struct xr_pkt *pk, void *arg)
{
	struct classes *c = arg;
	bool from_a = xr_gid_to_ipv4(&pk->sgid) == 0x0A000001;

	if ((pk->op->flags & XR_OPF_WRITE) && from_a && c->writes < c->max)
		c->wr_tc[c->writes++] = pk->traffic_class;
	else if ((pk->op->flags & XR_OPF_ACK) && !from_a && c->acks < c->max)
		c->ack_tc[c->acks++] = pk->traffic_class;
}

/* What the tap saw, in order; every frame must parse. Returns A's WRITEs. */
static unsigned tapped_read(struct tapped *t, uint8_t *wr_tc, uint8_t *ack_tc, unsigned max)
{
	struct classes c = { wr_tc, ack_tc, 0, 0, max };

	h_close(&t->p);   /* closes the tap: the file is complete */
	h_tapped_frames(t->path, note_class, &c);
	return c.writes;
}

/* The ECT bits of a packet under CC_CTRL value cc, for a QP that chose none. */
static uint8_t ect_under(uint32_t cc)
{
	if (!(cc & XR_CC_ECN_ENABLE))
		return 0;
	return (cc & XR_CC_ECT1) ? 1 : 2;
}

/* ECN switched (CC_CTRL) between two WRITEs: the second WRITE and its ACK
 * carry the new ECN bits, the first and its ACK the old. A template kept
 * past the register write would send the second as the first. */
static void test_a_register_written_shows_in_the_next_packet(void **state)
{
	struct h_opts o = base_opts(XR_MTU_1024);
	uint8_t wtc[4], atc[4];
	struct tapped t;
	uint32_t cc, now = 0;

	(void)state;
	o.timeout = 18;   /* a late ACK would send a WRITE twice */
	tapped_open(&t, &o);
	connect_both(&t, &o, 1);
	write_one(&t, 1);
	for (int side = 0; side < 2; side++) {
		struct xr_engine *e = xr_context_engine(side ? t.p.b.ctx : t.p.a.ctx);
		assert_int_equal(xr_engine_reg_read(e, XR_REG_CC_CTRL, &cc), XR_AXI_OKAY);
		now = cc ^ XR_CC_ECN_ENABLE;
		assert_int_equal(xr_engine_reg_write(e, XR_REG_CC_CTRL, now), XR_AXI_OKAY);
	}
	write_one(&t, 2);
	assert_int_equal(tapped_read(&t, wtc, atc, 4), 2);
	assert_int_not_equal(ect_under(cc), ect_under(now));
	assert_int_equal(wtc[0] & 3, ect_under(cc));
	assert_int_equal(atc[0] & 3, ect_under(cc));
	assert_int_equal(wtc[1] & 3, ect_under(now));
	assert_int_equal(atc[1] & 3, ect_under(now));
}

/* A QP taken back to RESET and connected again with another traffic
 * class and hop limit: its next WRITE carries them, though the QP may
 * take back the very block (and template) it gave up at rest. */
static void test_a_reconnected_qp_sends_its_new_path(void **state)
{
	struct h_opts o = base_opts(XR_MTU_1024);
	uint8_t wtc[4], atc[4];
	struct tapped t;

	(void)state;
	o.timeout = 18;
	o.traffic_class = 0x20;
	tapped_open(&t, &o);
	connect_both(&t, &o, 1);
	write_one(&t, 1);
	reset_both(&t);
	o.traffic_class = 0x48;
	connect_both(&t, &o, 5000);
	write_one(&t, 2);
	assert_int_equal(tapped_read(&t, wtc, atc, 4), 2);
	/* The DSCP the QP chose; the ECN bits are CC_CTRL's. */
	assert_int_equal(wtc[0] & 0xFC, 0x20);
	assert_int_equal(atc[0] & 0xFC, 0x20);
	assert_int_equal(wtc[1] & 0xFC, 0x48);
	assert_int_equal(atc[1] & 0xFC, 0x48);
}

/* The commit and the packets after it agree. A pass that ran between a
 * QP commit's release of the QP and the generation's move used a template
 * built from the context before the commit: here a pass run from the
 * commit's hook (right after it releases the QP, as a pass of another
 * thread may run) sent the WRITE the commit released with the old DSCP
 * (0x20, not 0x48). The generation now moves inside the commit, under
 * the QP's lock. Inline mode: the pass is ours to run. */
static void pass_after_commit(void *arg)
{
	xr_engine_progress(arg);
}

static void test_a_commit_and_its_next_packet_agree(void **state)
{
	struct h_opts o = base_opts(XR_MTU_1024);
	struct xr_qp_attr at = { .qp_state = XR_QPS_SQD };
	uint32_t off[XR_QP_SHADOW_WORDS], val[XR_QP_SHADOW_WORDS];
	uint8_t wtc[4], atc[4];
	struct xr_sge s;
	struct xr_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };
	struct xr_wc wc;
	struct xr_qp_ctx c;
	struct xr_regio *r;
	struct tapped t;
	uint32_t qpn;
	int n;

	(void)state;
	o.mode = XR_PROGRESS_INLINE;
	o.timeout = 18;
	o.traffic_class = 0x20;
	tapped_open(&t, &o);
	connect_both(&t, &o, 1);
	write_one(&t, 1);
	r = xr_context_regs(t.p.a.ctx);
	qpn = xr_qp_num(t.p.a.qp[0]);

	/* A's QP drained (SQD): its next WRITE waits for the commit. */
	assert_int_equal(xr_modify_qp(t.p.a.qp[0], &at, XR_QP_STATE), 0);
	s = (struct xr_sge){ (uintptr_t)h_data(&t.p.a), 64, t.p.a.mr->lkey };
	w.wr.rdma.remote_addr = (uintptr_t)h_data(&t.p.b);
	w.wr.rdma.rkey = t.p.b.mr->rkey;
	assert_int_equal(xr_post_send(t.p.a.qp[0], &w, NULL), 0);

	/* The commit's shadow: back to RTS with DSCP 0x48, only STATE and AV. */
	assert_int_equal(xr_regio_qp_read(r, qpn, &c), 0);
	c.state = XR_QPS_RTS;
	c.traffic_class = 0x48;
	n = xr_qp_ctx_encode(&c, off, val);
	assert_true(n > 0);
	assert_int_equal(xr_regio_write(r, XR_REG_QP_SEL, qpn), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(xr_regio_write(r, off[i], val[i]), 0);
	assert_int_equal(xr_regio_write(r, XR_REG_QP_COMMIT_MASK, XR_QPM_STATE | XR_QPM_AV), 0);

	/* B WRITEs to A: A's ACK builds A's template at today's generation,
	 * from the context still in force. */
	{
		struct xr_sge sb = { (uintptr_t)h_data(&t.p.b), 64, t.p.b.mr->lkey };
		struct xr_send_wr wb = { .wr_id = 7, .sg_list = &sb, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					 .send_flags = XR_SEND_SIGNALED };
		wb.wr.rdma.remote_addr = (uintptr_t)h_data(&t.p.a) + 4096;
		wb.wr.rdma.rkey = t.p.a.mr->rkey;
		assert_int_equal(xr_post_send(t.p.b.qp[0], &wb, NULL), 0);
		expect_wc(&t.p, &t.p.b, 7, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, "B's write");
	}

	xr_qp_commit_hook_arg = xr_context_engine(t.p.a.ctx);
	xr_qp_commit_hook = pass_after_commit;
	assert_int_equal(xr_regio_write(r, XR_REG_QP_CMD, XR_CMD_COMMIT), 0);
	xr_qp_commit_hook = NULL;
	assert_true(h_wait(&t.p, &t.p.a, &wc, 5000));
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, XR_WC_SUCCESS);

	/* A's WRITEs: the first before the commit, the second after it. */
	assert_int_equal(tapped_read(&t, wtc, atc, 4), 2);
	assert_int_equal(wtc[0] & 0xFC, 0x20);
	assert_int_equal(wtc[1] & 0xFC, 0x48);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_builds_what_the_fields_build),
		cmocka_unit_test(test_template_refuses_bad_addresses),
		BOTH(test_a_register_written_shows_in_the_next_packet),
		BOTH(test_a_reconnected_qp_sends_its_new_path),
		cmocka_unit_test(test_a_commit_and_its_next_packet_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
