/* SPDX-License-Identifier: MIT */
/*
 * QP, MR and CQ contexts <-> the words of their shadow windows. The bit
 * positions come from the field strings of the register table, so the map
 * in regmap.h is the only place they are written down.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../nic/regmap_internal.h"
#include "../wire/bytes.h"

struct field {
	uint32_t reg;
	const char *name;
	unsigned lo, width;
	bool read_only;
};

/* X(member, REG, "field") */
#define QP_FIELDS(X) \
	X(state, QP_STATE, "state") X(type, QP_STATE, "type") X(path_mtu, QP_STATE, "path_mtu") \
	X(ipv6, QP_STATE, "ipv6") X(dest_qpn, QP_DEST_QPN, "qpn") X(sq_psn, QP_SQ_PSN, "psn") \
	X(rq_psn, QP_RQ_PSN, "psn") X(msn, QP_MSN, "msn") X(timeout, QP_TIMERS, "timeout") \
	X(retry_cnt, QP_TIMERS, "retry_cnt") X(rnr_retry, QP_TIMERS, "rnr_retry") \
	X(min_rnr_timer, QP_TIMERS, "min_rnr_timer") X(max_rd_atomic, QP_RD_ATOMIC, "max_rd_atomic") \
	X(max_dest_rd_atomic, QP_RD_ATOMIC, "max_dest_rd_atomic") X(access, QP_ACCESS, "access") \
	X(pkey, QP_ACCESS, "pkey") X(flow_label, QP_FLOW, "flow_label") X(src_port, QP_PORTS, "src_port") \
	X(dst_port, QP_PORTS, "dst_port") X(traffic_class, QP_NET, "traffic_class") \
	X(hop_limit, QP_NET, "hop_limit") X(pcp, QP_NET, "pcp") X(vlan, QP_NET, "vlan") \
	X(vid, QP_NET, "vid") X(sq_cqn, QP_SQ_CQN, "cqn") X(rq_cqn, QP_RQ_CQN, "cqn") X(pd, QP_PD, "pd") \
	X(sq_log_size, QP_SQ_LOG_SIZE, "log_entries") X(rq_log_size, QP_RQ_LOG_SIZE, "log_entries") \
	X(sq_wqe_blocks, QP_SQ_LOG_SIZE, "wqe_blocks") X(rq_wqe_blocks, QP_RQ_LOG_SIZE, "wqe_blocks") \
	X(sq_ci, QP_SQ_CI, "index") X(rq_ci, QP_RQ_CI, "index") X(srqn, QP_SRQN, "srqn") \
	X(rate_limit, QP_RATE_LIMIT, "mbps") X(cc_rate, QP_CC_RATE, "mbps") X(cc_target, QP_CC_TARGET, "mbps") \
	X(cc_alpha, QP_CC_ALPHA, "alpha") X(ce_rcvd, QP_CE_RCVD, "count") X(cnp_sent, QP_CNP_SENT, "count") \
	X(cnp_rcvd, QP_CNP_RCVD, "count")
#define MR_FIELDS(X) \
	X(access, MR_ACCESS, "access") X(valid, MR_ACCESS, "valid") X(pd, MR_PD, "pd") \
	X(page_shift, MR_PAGE_SHIFT, "shift") X(mw, MR_KIND, "mw") X(mw_type, MR_KIND, "mw_type") \
	X(bound, MR_MW_BIND, "bound") X(parent, MR_MW_BIND, "parent") X(mw_qpn, MR_MW_QPN, "qpn") \
	X(mw_count, MR_MW_COUNT, "count")
#define CQ_FIELDS(X) \
	X(log_size, CQ_LOG_SIZE, "log_entries") X(pi, CQ_PI, "index") X(valid, CQ_STATE, "valid") \
	X(armed, CQ_STATE, "armed") X(solicited_only, CQ_STATE, "solicited_only") \
	X(overflow, CQ_STATE, "overflow")

#define SRQ_FIELDS(X) \
	X(log_size, SRQ_LOG_SIZE, "log_entries") X(wqe_blocks, SRQ_LOG_SIZE, "wqe_blocks") \
	X(limit, SRQ_LIMIT, "limit") X(pd, SRQ_PD, "pd") \
	X(valid, SRQ_STATE, "valid") X(nqps, SRQ_STATE, "qps") X(ci, SRQ_CI, "index")

#define FIELD_ENTRY(member, reg, fname) { XR_REG_##reg, fname, 0, 0, false },
static struct field qp_fields[] = { QP_FIELDS(FIELD_ENTRY) };
static struct field mr_fields[] = { MR_FIELDS(FIELD_ENTRY) };
static struct field cq_fields[] = { CQ_FIELDS(FIELD_ENTRY) };
static struct field srq_fields[] = { SRQ_FIELDS(FIELD_ENTRY) };
#undef FIELD_ENTRY
#define NFIELDS(a) (sizeof(a) / sizeof(a[0]))

static void resolve(struct field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct xr_reg_desc *d = xr_reg_by_offset(f[i].reg);
		if (!d || xr_reg_field(d, f[i].name, &f[i].lo, &f[i].width)) {
			fprintf(stderr, "xroce: register field %s of 0x%x missing from the map\n",
				f[i].name, f[i].reg);
			abort();
		}
		f[i].read_only = d->access == XR_RO;
	}
}

__attribute__((constructor(102)))
static void context_init(void)
{
	resolve(qp_fields, NFIELDS(qp_fields));
	resolve(mr_fields, NFIELDS(mr_fields));
	resolve(cq_fields, NFIELDS(cq_fields));
	resolve(srq_fields, NFIELDS(srq_fields));
}

/* Accumulates words register by register, in ascending offset order. */
struct words {
	uint32_t *off, *val;
	int n;
	bool overflow;
};

static uint32_t *word_for(struct words *w, uint32_t reg)
{
	for (int i = 0; i < w->n; i++)
		if (w->off[i] == reg)
			return &w->val[i];
	w->off[w->n] = reg;
	w->val[w->n] = 0;
	return &w->val[w->n++];
}

static void put_field(struct words *w, const struct field *f, uint64_t v)
{
	uint64_t max = f->width >= 32 ? 0xFFFFFFFFull : (1ull << f->width) - 1;

	if (f->read_only)
		return;
	if (v > max)
		w->overflow = true;
	*word_for(w, f->reg) |= (uint32_t)((v & max) << f->lo);
}

static uint64_t get_field(const struct field *f, uint32_t word)
{
	uint64_t max = f->width >= 32 ? 0xFFFFFFFFull : (1ull << f->width) - 1;
	return (word >> f->lo) & max;
}

static void put_u64(struct words *w, uint32_t lo_reg, uint64_t v)
{
	*word_for(w, lo_reg) = (uint32_t)v;
	*word_for(w, lo_reg + 4) = (uint32_t)(v >> 32);
}

static uint64_t get_u64(uint32_t (*get)(void *, uint32_t), void *arg, uint32_t lo_reg)
{
	return (uint64_t)get(arg, lo_reg + 4) << 32 | get(arg, lo_reg);
}

/* MAC: LOW holds bytes 2-5, HIGH bytes 0-1, as the seed's registers. */
void xr_mac_to_regs(const uint8_t mac[6], uint32_t *low, uint32_t *high)
{
	*high = (uint32_t)mac[0] << 8 | mac[1];
	*low = get_be32(mac + 2);
}

void xr_mac_from_regs(uint8_t mac[6], uint32_t low, uint32_t high)
{
	mac[0] = (uint8_t)(high >> 8);
	mac[1] = (uint8_t)high;
	put_be32(mac + 2, low);
}

static void sort_words(struct words *w)
{
	for (int i = 1; i < w->n; i++)
		for (int j = i; j > 0 && w->off[j - 1] > w->off[j]; j--) {
			uint32_t o = w->off[j], v = w->val[j];
			w->off[j] = w->off[j - 1];
			w->val[j] = w->val[j - 1];
			w->off[j - 1] = o;
			w->val[j - 1] = v;
		}
}

int xr_qp_ctx_encode(const struct xr_qp_ctx *c, uint32_t off[], uint32_t val[])
{
	struct words w = { off, val, 0, false };
	const struct field *f = qp_fields;
	uint32_t lo, hi;

#define PUT(member, r_, fname) put_field(&w, f++, (uint64_t)c->member);
	QP_FIELDS(PUT)
#undef PUT
	for (int i = 0; i < 4; i++)
		*word_for(&w, XR_REG_QP_PEER_GID_0 + 4u * (unsigned)i) = get_be32(c->peer_gid.raw + 4 * i);
	xr_mac_to_regs(c->peer_mac, &lo, &hi);
	*word_for(&w, XR_REG_QP_PEER_MAC_LOW) = lo;
	*word_for(&w, XR_REG_QP_PEER_MAC_HIGH) = hi;
	put_u64(&w, XR_REG_QP_SQ_BASE_LO, c->sq_base);
	put_u64(&w, XR_REG_QP_RQ_BASE_LO, c->rq_base);
	*word_for(&w, XR_REG_QP_QKEY) = c->qkey;   /* a whole register: no field */
	sort_words(&w);
	return w.overflow ? -EINVAL : w.n;
}

void xr_qp_ctx_decode(struct xr_qp_ctx *c, uint32_t (*get)(void *, uint32_t), void *arg)
{
	const struct field *f = qp_fields;

	memset(c, 0, sizeof(*c));
#define GET(member, r_, fname) c->member = (__typeof__(c->member))get_field(f, get(arg, f->reg)); f++;
	QP_FIELDS(GET)
#undef GET
	for (int i = 0; i < 4; i++)
		put_be32(c->peer_gid.raw + 4 * i, get(arg, XR_REG_QP_PEER_GID_0 + 4u * (unsigned)i));
	xr_mac_from_regs(c->peer_mac, get(arg, XR_REG_QP_PEER_MAC_LOW), get(arg, XR_REG_QP_PEER_MAC_HIGH));
	c->sq_base = get_u64(get, arg, XR_REG_QP_SQ_BASE_LO);
	c->rq_base = get_u64(get, arg, XR_REG_QP_RQ_BASE_LO);
	c->qkey = get(arg, XR_REG_QP_QKEY);
}

int xr_mr_ctx_encode(const struct xr_mr_ctx *c, uint32_t off[], uint32_t val[])
{
	struct words w = { off, val, 0, false };
	const struct field *f = mr_fields;

#define PUT(member, r_, fname) put_field(&w, f++, (uint64_t)c->member);
	MR_FIELDS(PUT)
#undef PUT
	/* valid is the engine's to set; the driver never writes it. */
	*word_for(&w, XR_REG_MR_ACCESS) &= ~XR_MR_VALID;
	put_u64(&w, XR_REG_MR_VA_LO, c->va);
	put_u64(&w, XR_REG_MR_LEN_LO, c->len);
	put_u64(&w, XR_REG_MR_MTT_LO, c->mtt);
	*word_for(&w, XR_REG_MR_MTT_COUNT) = c->mtt_count;
	sort_words(&w);
	return w.overflow ? -EINVAL : w.n;
}

void xr_mr_ctx_decode(struct xr_mr_ctx *c, uint32_t (*get)(void *, uint32_t), void *arg)
{
	const struct field *f = mr_fields;

	memset(c, 0, sizeof(*c));
#define GET(member, r_, fname) c->member = (__typeof__(c->member))get_field(f, get(arg, f->reg)); f++;
	MR_FIELDS(GET)
#undef GET
	c->va = get_u64(get, arg, XR_REG_MR_VA_LO);
	c->len = get_u64(get, arg, XR_REG_MR_LEN_LO);
	c->mtt = get_u64(get, arg, XR_REG_MR_MTT_LO);
	c->mtt_count = get(arg, XR_REG_MR_MTT_COUNT);
	c->lkey = get(arg, XR_REG_MR_LKEY);
	c->rkey = get(arg, XR_REG_MR_RKEY);
}

int xr_cq_ctx_encode(const struct xr_cq_ctx *c, uint32_t off[], uint32_t val[])
{
	struct words w = { off, val, 0, false };
	const struct field *f = cq_fields;

#define PUT(member, r_, fname) put_field(&w, f++, (uint64_t)c->member);
	CQ_FIELDS(PUT)
#undef PUT
	put_u64(&w, XR_REG_CQ_BASE_LO, c->base);
	sort_words(&w);
	return w.overflow ? -EINVAL : w.n;
}

void xr_cq_ctx_decode(struct xr_cq_ctx *c, uint32_t (*get)(void *, uint32_t), void *arg)
{
	const struct field *f = cq_fields;

	memset(c, 0, sizeof(*c));
#define GET(member, r_, fname) c->member = (__typeof__(c->member))get_field(f, get(arg, f->reg)); f++;
	CQ_FIELDS(GET)
#undef GET
	c->base = get_u64(get, arg, XR_REG_CQ_BASE_LO);
}

int xr_srq_ctx_encode(const struct xr_srq_ctx *c, uint32_t off[], uint32_t val[])
{
	struct words w = { off, val, 0, false };
	const struct field *f = srq_fields;

#define PUT(member, r_, fname) put_field(&w, f++, (uint64_t)c->member);
	SRQ_FIELDS(PUT)
#undef PUT
	put_u64(&w, XR_REG_SRQ_BASE_LO, c->base);
	sort_words(&w);
	return w.overflow ? -EINVAL : w.n;
}

void xr_srq_ctx_decode(struct xr_srq_ctx *c, uint32_t (*get)(void *, uint32_t), void *arg)
{
	const struct field *f = srq_fields;

	memset(c, 0, sizeof(*c));
#define GET(member, r_, fname) c->member = (__typeof__(c->member))get_field(f, get(arg, f->reg)); f++;
	SRQ_FIELDS(GET)
#undef GET
	c->base = get_u64(get, arg, XR_REG_SRQ_BASE_LO);
}
