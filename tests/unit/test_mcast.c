/* SPDX-License-Identifier: MIT */
/* Multicast groups (transport-rules D8) on the mem link: fan-out to every
 * attached UD QP, each checked alone (Q_Key, state); the frame a group
 * send puts on the wire; unknown groups and wrong MACs dropped and
 * counted; attach and detach rules (UD only, groups only, twice is once,
 * the table's bounds, no destroy while attached); the link joined on a
 * group's first attach and left on its last detach. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "dgram_harness.h"
#include "drv/drv.h"
#include "xroce/regmap.h"
#include "xroce/wire.h"

#define QKEY 0x1111u
#define SLOT 2048

/* ---- a link that records what its end sends and which groups it joins ---- */

#define SPY_KEEP 16
struct spy {
	struct xr_link link, *inner;
	uint8_t sent[SPY_KEEP][256];   /* the first bytes of the last frames sent */
	unsigned nsent;
	int joins, leaves;
	xr_gid last_group;
	bool break_group_mac;          /* sends a group frame with a unicast MAC */
	int join_rc;                   /* what a join answers (0: joined) */
};

static int spy_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct spy *s = l->priv;
	for (unsigned i = 0; i < n; i++) {
		if (s->break_group_mac && f[i]->data[0] == 0x01)
			f[i]->data[0] = 0x02;
		memcpy(s->sent[s->nsent++ % SPY_KEEP], f[i]->data, f[i]->len < 256 ? f[i]->len : 256);
	}
	return xr_link_send(s->inner, f, n);
}
static int spy_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	return xr_link_recv(((struct spy *)l->priv)->inner, f, n);
}
static int spy_wait_fd(struct xr_link *l)
{
	struct spy *s = l->priv;
	return s->inner->ops->wait_fd(s->inner);
}
static struct xr_frame *spy_alloc(struct xr_link *l)
{
	return xr_link_frame_alloc(((struct spy *)l->priv)->inner);
}
static void spy_free(struct xr_link *l, struct xr_frame *f)
{
	xr_link_frame_free(((struct spy *)l->priv)->inner, f);
}
static bool spy_up(struct xr_link *l)
{
	struct spy *s = l->priv;
	return s->inner->ops->is_up(s->inner);
}
static void spy_close(struct xr_link *l)
{
	struct spy *s = l->priv;
	xr_link_close(s->inner);
	free(s);
}
static int spy_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	return xr_link_resolve(((struct spy *)l->priv)->inner, gid, mac);
}
static int spy_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	struct spy *s = l->priv;
	s->last_group = *group;
	if (join && s->join_rc)
		return s->join_rc;
	if (join)
		s->joins++;
	else
		s->leaves++;
	return 0;
}
static const struct xr_link_ops spy_ops = {
	.send_burst = spy_send, .recv_burst = spy_recv, .wait_fd = spy_wait_fd, .frame_alloc = spy_alloc,
	.frame_free = spy_free, .is_up = spy_up, .close = spy_close, .resolve = spy_resolve, .mcast = spy_mcast,
};

static struct spy *spy_wrap(struct xr_link *inner)
{
	struct spy *s = calloc(1, sizeof(*s));
	s->inner = inner;
	s->link = *inner;
	s->link.ops = &spy_ops;
	s->link.kind = "spy";
	s->link.gather = false;
	s->link.priv = s;
	return s;
}

struct mpair {
	struct pair p;
	struct spy *sa, *sb;
};

static void m_open(struct mpair *m, bool ipv6)
{
	struct h_opts o = d_opts(ipv6);

	memset(m, 0, sizeof(*m));
	m->p.mode = o.mode;
	assert_int_equal(xr_link_mem_pair(&m->p.la, &m->p.lb, 0), 0);
	m->sa = spy_wrap(m->p.la);
	m->sb = spy_wrap(m->p.lb);
	m->p.la = &m->sa->link;
	m->p.lb = &m->sb->link;
	assert_int_equal(h_end_open(&m->p.a, m->p.la, ipv6 ? "fd00::1" : "10.0.0.1", &o), 0);
	assert_int_equal(h_end_open(&m->p.b, m->p.lb, ipv6 ? "fd00::2" : "10.0.0.2", &o), 0);
}

/* The end of a test: its QPs (detached), its AH, the pair. */
static void m_close(struct mpair *m, struct xr_ah *ah, struct xr_qp *const *qps, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(xr_destroy_qp(qps[i]), 0);
	if (ah)
		xr_destroy_ah(ah);
	h_close(&m->p);
}

static struct xr_ah *group_ah(struct end *from, const char *group)
{
	struct xr_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 1;
	if (xr_gid_parse(&aa.grh.dgid, group))
		return NULL;
	return xr_create_ah(from->pd, &aa);
}

static xr_gid gid_of(const char *text)
{
	xr_gid g;
	assert_int_equal(xr_gid_parse(&g, text), 0);
	return g;
}

/* Receive completions on e's CQ within ms, by QP: counts[i] for qps[i]. */
static void recvs_by_qp(struct pair *p, struct end *e, struct xr_qp **qps, unsigned n, unsigned *counts,
			unsigned ms)
{
	uint64_t until = h_now_ms() + ms;
	struct xr_wc wc;

	memset(counts, 0, n * sizeof(*counts));
	while (h_now_ms() < until) {
		h_progress(p);
		if (xr_poll_cq(e->cq, 1, &wc) != 1)
			continue;
		assert_int_equal(wc.status, XR_WC_SUCCESS);
		if (wc.opcode != XR_WC_RECV)
			continue;
		for (unsigned i = 0; i < n; i++)
			if (wc.qp_num == xr_qp_num(qps[i]))
				counts[i]++;
	}
}

static void post_recvs(struct xr_qp *qp, struct end *e, unsigned slot0, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(d_post_recv(qp, e, (slot0 + i) * SLOT, SLOT, slot0 + i), 0);
}

/* D8's test: QPs attached with the right Q_Key each get the datagram,
 * one with a wrong Q_Key and one not attached get nothing. */
static void test_fan_out_checks_each_qp(void **state)
{
	struct mpair m;
	struct xr_qp *q[4], *src;
	struct xr_ah *ah;
	unsigned got[4];
	xr_gid g = gid_of("239.1.1.1");

	(void)state;
	m_open(&m, false);
	q[0] = d_ud_qp(&m.p.b, QKEY, NULL);
	q[1] = d_ud_qp(&m.p.b, QKEY, NULL);
	q[2] = d_ud_qp(&m.p.b, 0x2222, NULL);
	q[3] = d_ud_qp(&m.p.b, QKEY, NULL);
	src = d_ud_qp(&m.p.a, QKEY, NULL);
	ah = group_ah(&m.p.a, "239.1.1.1");
	assert_non_null(ah);
	for (unsigned i = 0; i < 4; i++) {
		assert_non_null(q[i]);
		post_recvs(q[i], &m.p.b, 4 * i, 4);
		if (i < 3)
			assert_int_equal(xr_attach_mcast(q[i], &g), 0);
	}
	assert_int_equal(m.sb->joins, 1);   /* once per group, not per QP */
	assert_memory_equal(m.sb->last_group.raw, g.raw, 16);

	for (uint32_t i = 0; i < 100; i++)
		h_data(&m.p.a)[i] = (uint8_t)(i * 3 + 1);
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 100, 0, 7), 0);
	recvs_by_qp(&m.p, &m.p.b, q, 4, got, 300);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 1);
	assert_int_equal(got[2], 0);   /* its Q_Key differs */
	assert_int_equal(got[3], 0);   /* not attached */
	assert_int_equal(d_counter(&m.p.b, XR_CNT_RX_MCAST), 1);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_DROP_BAD_QKEY), 1);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_RDMA_RECVS), 2);
	/* Each copy whole, behind its 40 GRH bytes: slots 0 and 4. */
	for (unsigned s = 0; s < 2; s++)
		for (uint32_t i = 0; i < 100; i++)
			assert_int_equal(h_data(&m.p.b)[s * 4 * SLOT + 40 + i], (uint8_t)(i * 3 + 1));

	/* The sender's frame: the group's MAC and address, DestQP 0xFFFFFF. */
	{
		struct xr_pkt pk;
		const uint8_t *f = m.sa->sent[(m.sa->nsent - 1) % SPY_KEEP];
		static const uint8_t mac[6] = { 0x01, 0x00, 0x5E, 0x01, 0x01, 0x01 };
		assert_int_equal(xr_pkt_parse(f, 14 + 20 + 8 + 12 + 8 + 100 + 4, 0, 0, &pk), XR_PARSE_OK);
		assert_memory_equal(pk.dmac, mac, 6);
		assert_memory_equal(pk.dgid.raw, g.raw, 16);
		assert_int_equal(pk.dqpn, XR_QPN_MCAST);
		assert_int_equal(pk.deth.qkey, QKEY);
		assert_int_equal(pk.deth.src_qp, xr_qp_num(src));
	}
	assert_true(h_guards_ok(&m.p.b));
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(xr_detach_mcast(q[i], &g), 0);
	assert_int_equal(m.sb->leaves, 1);
	m_close(&m, ah, (struct xr_qp *[]){ q[0], q[1], q[2], q[3], src }, 5);
}

/* Only QPs that receive (RTR and on) take a group's datagram; a group
 * nobody attached to, and a group frame under a unicast MAC, are dropped
 * and counted; after a detach the QP gets nothing more. */
static void test_states_unknown_groups_and_detach(void **state)
{
	struct mpair m;
	struct xr_qp *q[2], *src;
	struct xr_qp_attr a;
	struct xr_ah *ah, *other;
	struct xr_qp_init_attr ia;
	unsigned got[2];
	xr_gid g = gid_of("239.1.1.1");

	(void)state;
	m_open(&m, false);
	q[0] = d_ud_qp(&m.p.b, QKEY, NULL);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = m.p.b.cq;
	ia.qp_type = XR_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	q[1] = xr_create_qp(m.p.b.pd, &ia);   /* stays in RESET, then INIT */
	src = d_ud_qp(&m.p.a, QKEY, NULL);
	ah = group_ah(&m.p.a, "239.1.1.1");
	other = group_ah(&m.p.a, "239.1.1.2");
	assert_non_null(q[0]);
	assert_non_null(q[1]);
	assert_non_null(ah);
	assert_non_null(other);
	post_recvs(q[0], &m.p.b, 0, 8);
	assert_int_equal(xr_attach_mcast(q[0], &g), 0);
	assert_int_equal(xr_attach_mcast(q[1], &g), 0);   /* a QP in RESET may attach */
	memset(&a, 0, sizeof(a));
	a.qp_state = XR_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	assert_int_equal(xr_modify_qp(q[1], &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY), 0);
	post_recvs(q[1], &m.p.b, 8, 8);

	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 32, 0, 1), 0);
	recvs_by_qp(&m.p, &m.p.b, q, 2, got, 200);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 0);   /* INIT does not receive */
	assert_int_equal(d_counter(&m.p.b, XR_CNT_DROP_BAD_STATE), 1);

	/* A group no QP joined. */
	assert_int_equal(d_ud_send(src, &m.p.a, other, XR_QPN_MCAST, QKEY, 0, 32, 0, 2), 0);
	recvs_by_qp(&m.p, &m.p.b, q, 2, got, 100);
	assert_int_equal(got[0] + got[1], 0);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_DROP_NO_MCG), 1);

	/* The group's address under a MAC that is not the group's. */
	m.sa->break_group_mac = true;
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 32, 0, 3), 0);
	recvs_by_qp(&m.p, &m.p.b, q, 2, got, 100);
	assert_int_equal(got[0] + got[1], 0);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_DROP_NO_MCG), 2);
	m.sa->break_group_mac = false;

	/* Detached, q[0] gets nothing; q[1] keeps the group open. */
	assert_int_equal(xr_detach_mcast(q[0], &g), 0);
	assert_int_equal(xr_detach_mcast(q[0], &g), EINVAL);   /* not attached any more */
	assert_int_equal(m.sb->leaves, 0);
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 32, 0, 4), 0);
	recvs_by_qp(&m.p, &m.p.b, q, 2, got, 100);
	assert_int_equal(got[0], 0);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_RX_MCAST), 2);   /* the group is still there */
	assert_int_equal(xr_detach_mcast(q[1], &g), 0);
	assert_int_equal(m.sb->leaves, 1);
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 32, 0, 5), 0);
	recvs_by_qp(&m.p, &m.p.b, q, 2, got, 100);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_DROP_NO_MCG), 3);
	xr_destroy_ah(other);
	m_close(&m, ah, (struct xr_qp *[]){ q[0], q[1], src }, 3);
}

/* The verbs' rules: UD only, groups only, twice is once, no destroy while
 * attached, and the table's bounds (CAP_MCG). */
static void test_attach_rules_and_bounds(void **state)
{
	struct mpair m;
	struct xr_qp *ud, *qps[XR_MCG_MAX_QP + 1], *src;
	struct xr_ah *ah;
	uint32_t cap = 0, st = 0;
	unsigned got[1];
	xr_gid g = gid_of("239.2.2.2"), uni = gid_of("10.0.0.2");
	char text[64];

	(void)state;
	m_open(&m, false);
	assert_int_equal(xr_regio_read(xr_context_regs(m.p.b.ctx), XR_REG_CAP_MCG, &cap), 0);
	assert_int_equal(cap, XR_MAX_MCG | XR_MCG_MAX_QP << 16);
	ud = d_ud_qp(&m.p.b, QKEY, NULL);
	assert_non_null(ud);
	assert_int_equal(xr_attach_mcast(m.p.b.qp[0], &g), EINVAL);   /* the harness's RC QP */
	assert_int_equal(xr_attach_mcast(ud, &uni), EINVAL);          /* not a group */
	assert_int_equal(xr_attach_mcast(ud, &g), 0);
	assert_int_equal(xr_attach_mcast(ud, &g), 0);                 /* no change */
	assert_int_equal(m.sb->joins, 1);
	assert_int_equal(xr_destroy_qp(ud), EBUSY);
	/* Still whole after the refusal: one datagram, one completion. */
	src = d_ud_qp(&m.p.a, QKEY, NULL);
	ah = group_ah(&m.p.a, "239.2.2.2");
	assert_non_null(ah);
	post_recvs(ud, &m.p.b, 0, 4);
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 16, 0, 1), 0);
	recvs_by_qp(&m.p, &m.p.b, &ud, 1, got, 200);
	assert_int_equal(got[0], 1);
	assert_int_equal(xr_detach_mcast(ud, &g), 0);
	assert_int_equal(xr_destroy_qp(ud), 0);

	/* XR_MCG_MAX_QP QPs in one group, then no more. */
	for (unsigned i = 0; i <= XR_MCG_MAX_QP; i++) {
		qps[i] = d_ud_qp(&m.p.b, QKEY, NULL);
		assert_non_null(qps[i]);
		assert_int_equal(xr_attach_mcast(qps[i], &g), i < XR_MCG_MAX_QP ? 0 : ENOMEM);
	}
	/* XR_MAX_MCG groups in all, then no more. */
	for (unsigned i = 1; i <= XR_MAX_MCG; i++) {
		xr_gid gi;
		snprintf(text, sizeof(text), "ff0e::%x", i);
		gi = gid_of(text);
		assert_int_equal(xr_attach_mcast(qps[XR_MCG_MAX_QP], &gi), i < XR_MAX_MCG ? 0 : ENOMEM);
	}
	assert_int_equal(xr_regio_read(xr_context_regs(m.p.b.ctx), XR_REG_MCG_STATUS, &st), 0);
	assert_int_equal(st & 0xFFFF, XR_MAX_MCG);
	assert_int_equal(st >> 16, XR_MCG_MAX_QP + XR_MAX_MCG - 1);
	for (unsigned i = 1; i < XR_MAX_MCG; i++) {
		xr_gid gi;
		snprintf(text, sizeof(text), "ff0e::%x", i);
		gi = gid_of(text);
		assert_int_equal(xr_detach_mcast(qps[XR_MCG_MAX_QP], &gi), 0);
	}
	for (unsigned i = 0; i <= XR_MCG_MAX_QP; i++) {
		if (i < XR_MCG_MAX_QP)
			assert_int_equal(xr_detach_mcast(qps[i], &g), 0);
		assert_int_equal(xr_destroy_qp(qps[i]), 0);
	}
	assert_int_equal(m.sb->joins, m.sb->leaves);   /* every group left */
	m_close(&m, ah, &src, 1);
}

/* An IPv6 group: 33:33 and its last four bytes on the wire, delivered. */
static void test_ipv6_group(void **state)
{
	struct mpair m;
	struct xr_qp *q, *src;
	struct xr_ah *ah;
	unsigned got[1];
	xr_gid g = gid_of("ff0e::1234:5678");
	static const uint8_t mac[6] = { 0x33, 0x33, 0x12, 0x34, 0x56, 0x78 };

	(void)state;
	m_open(&m, true);
	q = d_ud_qp(&m.p.b, QKEY, NULL);
	src = d_ud_qp(&m.p.a, QKEY, NULL);
	ah = group_ah(&m.p.a, "ff0e::1234:5678");
	assert_non_null(q);
	assert_non_null(ah);
	post_recvs(q, &m.p.b, 0, 2);
	assert_int_equal(xr_attach_mcast(q, &g), 0);
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 20, 0, 1), 0);
	recvs_by_qp(&m.p, &m.p.b, &q, 1, got, 200);
	assert_int_equal(got[0], 1);
	assert_memory_equal(m.sa->sent[(m.sa->nsent - 1) % SPY_KEEP], mac, 6);
	assert_int_equal(xr_detach_mcast(q, &g), 0);
	m_close(&m, ah, (struct xr_qp *[]){ q, src }, 2);
}

/* Attach and detach while datagrams to the group stream in, with the
 * engines in their own threads (TSan's case): every completion is a good
 * one on a QP of the group, none beyond what was sent, and once all are
 * attached again each gets the next datagram. */
static void test_attach_churn_under_traffic(void **state)
{
	enum { QPS = 4, SENDS = 200, RECVS = 256 };
	struct mpair m;
	struct h_opts o = d_opts(false);
	struct xr_qp *q[QPS], *src;
	struct xr_ah *ah;
	unsigned got[QPS], total = 0, sent = 0, done = 0, round = 0;
	bool on[QPS] = { false };
	xr_gid g = gid_of("239.3.3.3");
	struct xr_wc wc[16];

	(void)state;
	memset(&m, 0, sizeof(m));
	o.mode = XR_PROGRESS_THREAD;
	m.p.mode = o.mode;
	assert_int_equal(xr_link_mem_pair(&m.p.la, &m.p.lb, 0), 0);
	m.sa = spy_wrap(m.p.la);
	m.sb = spy_wrap(m.p.lb);
	m.p.la = &m.sa->link;
	m.p.lb = &m.sb->link;
	assert_int_equal(h_end_open(&m.p.a, m.p.la, "10.0.0.1", &o), 0);
	assert_int_equal(h_end_open(&m.p.b, m.p.lb, "10.0.0.2", &o), 0);
	for (unsigned i = 0; i < QPS; i++) {
		q[i] = d_ud_qp(&m.p.b, QKEY, NULL);
		assert_non_null(q[i]);
		post_recvs(q[i], &m.p.b, 0, RECVS - 1);   /* slots shared: only counts matter */
	}
	src = d_ud_qp(&m.p.a, QKEY, NULL);
	ah = group_ah(&m.p.a, "239.3.3.3");
	assert_non_null(src);
	assert_non_null(ah);
	memset(got, 0, sizeof(got));
	for (uint64_t until = h_now_ms() + 10000; done < SENDS && h_now_ms() < until; round++) {
		unsigned k = round % QPS;
		int n;
		if (sent < SENDS && sent - done < 64 &&
		    !d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 64, 0, sent))
			sent++;
		/* QP k flips between attached and not, each round another. */
		assert_int_equal(on[k] ? xr_detach_mcast(q[k], &g) : xr_attach_mcast(q[k], &g), 0);
		on[k] = !on[k];
		n = xr_poll_cq(m.p.a.cq, 16, wc);
		for (int i = 0; i < n; i++)
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
		done += (unsigned)(n > 0 ? n : 0);
		n = xr_poll_cq(m.p.b.cq, 16, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, XR_WC_SUCCESS);
			assert_int_equal(wc[i].byte_len, 40 + 64);
			total++;
			for (unsigned j = 0; j < QPS; j++)
				got[j] += wc[i].qp_num == xr_qp_num(q[j]);
		}
	}
	assert_int_equal(done, SENDS);
	for (uint64_t until = h_now_ms() + 200; h_now_ms() < until;) {
		int n = xr_poll_cq(m.p.b.cq, 16, wc);
		for (int i = 0; i < n; i++) {
			total++;
			for (unsigned j = 0; j < QPS; j++)
				got[j] += wc[i].qp_num == xr_qp_num(q[j]);
		}
	}
	assert_int_equal(got[0] + got[1] + got[2] + got[3], total);   /* only the group's QPs */
	for (unsigned j = 0; j < QPS; j++)
		assert_true(got[j] <= SENDS);
	assert_true(total <= QPS * SENDS);
	assert_true(total > 0);
	/* All attached now (attach is idempotent): the next datagram reaches each. */
	for (unsigned j = 0; j < QPS; j++)
		assert_int_equal(xr_attach_mcast(q[j], &g), 0);
	{
		uint64_t before = d_counter(&m.p.b, XR_CNT_RDMA_RECVS);
		unsigned last = 0;
		assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 64, 0, SENDS), 0);
		for (uint64_t until = h_now_ms() + 2000; last < QPS && h_now_ms() < until;) {
			int n = xr_poll_cq(m.p.b.cq, 16, wc);
			last += (unsigned)(n > 0 ? n : 0);
		}
		assert_int_equal(last, QPS);
		assert_int_equal(d_counter(&m.p.b, XR_CNT_RDMA_RECVS) - before, QPS);
	}
	for (unsigned j = 0; j < QPS; j++) {
		assert_int_equal(xr_detach_mcast(q[j], &g), 0);
		xr_destroy_qp(q[j]);
	}
	assert_int_equal(m.sb->joins, m.sb->leaves);
	m_close(&m, ah, &src, 1);
}


/* The group MACs of RFC 1112 (23 bits: the top bit of the second byte
 * masked) and RFC 2464 (the last four bytes). */
static void test_group_macs(void **state)
{
	static const uint8_t v4[6] = { 0x01, 0x00, 0x5E, 0x01, 0x02, 0x03 };
	static const uint8_t v6[6] = { 0x33, 0x33, 0xFF, 0x00, 0x12, 0x34 };
	uint8_t mac[6];
	xr_gid g;

	(void)state;
	g = gid_of("239.129.2.3");
	assert_true(xr_gid_is_mcast(&g));
	xr_gid_mcast_mac(&g, mac);
	assert_memory_equal(mac, v4, 6);
	g = gid_of("ff02::1:ff00:1234");
	assert_true(xr_gid_is_mcast(&g));
	xr_gid_mcast_mac(&g, mac);
	assert_memory_equal(mac, v6, 6);
	g = gid_of("223.255.255.255");
	assert_false(xr_gid_is_mcast(&g));
	g = gid_of("240.0.0.1");
	assert_false(xr_gid_is_mcast(&g));
	g = gid_of("fe80::1");
	assert_false(xr_gid_is_mcast(&g));
}

/* What the engine does on its own, whatever the host wrote: a group send
 * goes to the group's MAC even when its address vector names another; a
 * CE-marked group datagram is counted as marked once and on each QP; a
 * disabled engine drops group frames as any. */
static void test_engine_side_rules(void **state)
{
	struct mpair m;
	struct xr_qp *q, *src;
	struct xr_ah *ah;
	unsigned got[1];
	uint32_t ctrl = 0;
	struct xr_regio *rb;
	xr_gid g = gid_of("239.4.4.4");
	static const uint8_t mac[6] = { 0x01, 0x00, 0x5E, 0x04, 0x04, 0x04 };

	(void)state;
	m_open(&m, false);
	rb = xr_context_regs(m.p.b.ctx);
	q = d_ud_qp(&m.p.b, QKEY, NULL);
	src = d_ud_qp(&m.p.a, QKEY, NULL);
	ah = group_ah(&m.p.a, "239.4.4.4");
	assert_non_null(q);
	assert_non_null(ah);
	post_recvs(q, &m.p.b, 0, 8);
	assert_int_equal(xr_attach_mcast(q, &g), 0);
	memcpy(ah->av.dmac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x09 }, 6);
	ah->av.traffic_class = 3;   /* ECN CE, as a congested switch leaves it */
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 16, 0, 1), 0);
	recvs_by_qp(&m.p, &m.p.b, &q, 1, got, 200);
	assert_int_equal(got[0], 1);
	assert_memory_equal(m.sa->sent[(m.sa->nsent - 1) % SPY_KEEP], mac, 6);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_ECN_MARKED), 1);
	{
		struct xr_qp_ctx c;
		assert_int_equal(xr_regio_qp_read(rb, xr_qp_num(q), &c), 0);
		assert_int_equal(c.ce_rcvd, 1);
	}

	assert_int_equal(xr_regio_read(rb, XR_REG_CTRL, &ctrl), 0);
	assert_int_equal(xr_regio_write(rb, XR_REG_CTRL, ctrl & ~XR_CTRL_ENABLE), 0);
	assert_int_equal(d_ud_send(src, &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 16, 0, 2), 0);
	recvs_by_qp(&m.p, &m.p.b, &q, 1, got, 100);
	assert_int_equal(got[0], 0);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_DROP_DISABLED), 1);
	assert_int_equal(d_counter(&m.p.b, XR_CNT_RX_MCAST), 1);
	assert_int_equal(xr_regio_write(rb, XR_REG_CTRL, ctrl), 0);
	assert_int_equal(xr_detach_mcast(q, &g), 0);
	m_close(&m, ah, (struct xr_qp *[]){ q, src }, 2);
}

/* A link that cannot join: the attach fails (EADDRNOTAVAIL) and nothing
 * changes; one that says it joined already (-EEXIST) has joined. A group
 * AH of the other IP family than the device's address is refused: it
 * would leave from 0.0.0.0 or ::. A soft reset leaves every group. */
static void test_link_refusals_family_and_reset(void **state)
{
	struct mpair m;
	struct xr_qp *q;
	struct xr_ah_attr aa;
	uint32_t st = 1, ctrl = 0;
	struct xr_regio *rb;
	xr_gid g = gid_of("239.5.5.5");

	(void)state;
	m_open(&m, false);
	rb = xr_context_regs(m.p.b.ctx);
	q = d_ud_qp(&m.p.b, QKEY, NULL);
	assert_non_null(q);
	m.sb->join_rc = -ENOBUFS;
	assert_int_equal(xr_attach_mcast(q, &g), EADDRNOTAVAIL);
	assert_int_equal(xr_regio_read(rb, XR_REG_MCG_STATUS, &st), 0);
	assert_int_equal(st, 0);
	assert_int_equal(xr_destroy_qp(q), 0);   /* not attached: it may go */
	q = d_ud_qp(&m.p.b, QKEY, NULL);
	m.sb->join_rc = -EEXIST;
	assert_int_equal(xr_attach_mcast(q, &g), 0);
	assert_int_equal(xr_regio_read(rb, XR_REG_MCG_STATUS, &st), 0);
	assert_int_equal(st, 1u | 1u << 16);
	m.sb->join_rc = 0;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = gid_of("ff0e::1");
	assert_null(xr_create_ah(m.p.a.pd, &aa));
	assert_int_equal(errno, EHOSTUNREACH);

	/* Soft reset: the table empties and the link leaves the group. */
	assert_int_equal(xr_regio_read(rb, XR_REG_CTRL, &ctrl), 0);
	assert_int_equal(xr_regio_write(rb, XR_REG_CTRL, (ctrl & ~XR_CTRL_ENABLE) | XR_CTRL_SOFT_RESET), 0);
	assert_int_equal(xr_regio_read(rb, XR_REG_MCG_STATUS, &st), 0);
	assert_int_equal(st, 0);
	assert_int_equal(m.sb->leaves, 1);
	assert_int_equal(xr_destroy_qp(q), 0);   /* nothing attached any more */
	h_close(&m.p);
}

/* Loopback, as an HCA's: the sending device's own QPs attached to the
 * group get the datagram too, the sender's included; its QPs not
 * attached do not; the link carries one copy to the peer. */
static void test_local_members_get_their_own(void **state)
{
	struct mpair m;
	struct xr_qp *qa[3], *qb;
	struct xr_ah *ah;
	unsigned got[3], gotb[1];
	xr_gid g = gid_of("239.6.6.6");

	(void)state;
	m_open(&m, false);
	for (unsigned i = 0; i < 3; i++) {
		qa[i] = d_ud_qp(&m.p.a, QKEY, NULL);
		assert_non_null(qa[i]);
		post_recvs(qa[i], &m.p.a, 16 + 4 * i, 4);
	}
	qb = d_ud_qp(&m.p.b, QKEY, NULL);
	assert_non_null(qb);
	post_recvs(qb, &m.p.b, 0, 4);
	assert_int_equal(xr_attach_mcast(qa[0], &g), 0);   /* the sender */
	assert_int_equal(xr_attach_mcast(qa[1], &g), 0);
	assert_int_equal(xr_attach_mcast(qb, &g), 0);
	ah = group_ah(&m.p.a, "239.6.6.6");
	assert_non_null(ah);
	for (uint32_t i = 0; i < 48; i++)
		h_data(&m.p.a)[i] = (uint8_t)(0x30 + i);
	assert_int_equal(d_ud_send(qa[0], &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 48, 0, 1), 0);
	recvs_by_qp(&m.p, &m.p.a, qa, 3, got, 300);
	recvs_by_qp(&m.p, &m.p.b, &qb, 1, gotb, 100);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 1);
	assert_int_equal(got[2], 0);
	assert_int_equal(gotb[0], 1);
	assert_int_equal(d_counter(&m.p.a, XR_CNT_MCAST_LOOPED), 1);
	assert_int_equal(d_counter(&m.p.a, XR_CNT_RX_MCAST), 1);
	assert_int_equal(d_counter(&m.p.a, XR_CNT_TX_PKTS), 1);   /* one frame on the wire */
	for (unsigned i = 0; i < 2; i++)
		assert_memory_equal(h_data(&m.p.a) + (16 + 4 * i) * SLOT + 40, h_data(&m.p.a), 48);
	assert_true(h_guards_ok(&m.p.a));
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(xr_detach_mcast(qa[i], &g), 0);
	assert_int_equal(xr_detach_mcast(qb, &g), 0);
	/* Detached, nothing comes back. */
	assert_int_equal(d_ud_send(qa[0], &m.p.a, ah, XR_QPN_MCAST, QKEY, 0, 48, 0, 2), 0);
	recvs_by_qp(&m.p, &m.p.a, qa, 3, got, 100);
	assert_int_equal(got[0] + got[1] + got[2], 0);
	assert_int_equal(d_counter(&m.p.a, XR_CNT_MCAST_LOOPED), 1);
	m_close(&m, ah, (struct xr_qp *[]){ qa[0], qa[1], qa[2], qb }, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fan_out_checks_each_qp),
		cmocka_unit_test(test_states_unknown_groups_and_detach),
		cmocka_unit_test(test_attach_rules_and_bounds),
		cmocka_unit_test(test_ipv6_group),
		cmocka_unit_test(test_attach_churn_under_traffic),
		cmocka_unit_test(test_group_macs),
		cmocka_unit_test(test_engine_side_rules),
		cmocka_unit_test(test_link_refusals_family_and_reset),
		cmocka_unit_test(test_local_members_get_their_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
