/* SPDX-License-Identifier: MIT */
/*
 * RED-style ECN marking at the egress queue, decided when a frame is
 * queued, on the queue it joins (bytes ahead of it; or RED's average).
 * Only ECT(0)/ECT(1) frames are set to CE; Not-ECT frames pass unchanged
 * (counted: a RED queue would drop them, a RoCE fabric wants them kept).
 * The RoCE ICRC masks the whole TOS / traffic class, so CE keeps it valid;
 * the IPv4 header checksum is updated (RFC 1624), IPv6 has none, and the
 * UDP checksum does not cover the TOS.
 */
#include "../wire/bytes.h"
#include "fabric_int.h"

#define ECN_MASK 3
#define ECN_NOT_ECT 0
#define ECN_CE 3

double xr_fabric_ecn_prob(const struct xr_fabric_ecn_cfg *cfg, double q)
{
	if (!cfg->enable || q <= cfg->kmin)
		return 0;
	if (q > cfg->kmax)
		return 1;
	if (cfg->kmax <= cfg->kmin)
		return cfg->pmax;
	return cfg->pmax * (q - cfg->kmin) / (double)(cfg->kmax - cfg->kmin);
}

/* One's complement update of a header checksum when one 16-bit word
 * changes from old to new (RFC 1624 eqn 3): a wrong checksum stays wrong. */
static uint16_t csum_update(uint16_t hc, uint16_t old, uint16_t new_)
{
	uint32_t s = (uint16_t)~hc + (uint32_t)(uint16_t)~old + new_;
	s = (s & 0xFFFF) + (s >> 16);
	s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

static void set_ce(uint8_t *d, const struct frame_info *fi)
{
	uint8_t *ip = d + fi->l3_off;

	if (fi->ip_version == 4) {
		uint16_t old = get_be16(ip);
		ip[1] |= ECN_CE;
		put_be16(ip + 10, csum_update(get_be16(ip + 10), old, get_be16(ip)));
	} else {
		/* Traffic class straddles bytes 0-1; ECN is its low 2 bits: byte 1 bits 5:4. */
		ip[1] |= ECN_CE << 4;
	}
}

/* x^n by squaring (the library does without libm). */
static double power(double x, uint64_t n)
{
	double r = 1;

	for (; n && r > 1e-12; n >>= 1, x *= x)
		if (n & 1)
			r *= x;
	return n ? 0 : r;
}

/* RED's idle rule: an empty queue's average decays as if m small frames
 * had arrived to it, m being how many the port could have sent meanwhile. */
static void idle_decay(struct xr_fabric *fab, struct port *eg, struct queue *q, double w)
{
	uint64_t now = atomic_load_explicit(&fab->now, memory_order_relaxed);
	uint64_t slot = xr_fab_ser_ns(64 + XR_FABRIC_WIRE_OVERHEAD, eg->cfg.rate_bps);

	if (q->bytes || q->avg == 0 || now <= q->idle_since)
		return;
	q->avg = slot ? q->avg * power(1 - w, (now - q->idle_since) / slot) : 0;
}

void xr_fab_ecn_enqueue(struct xr_fabric *fab, struct port *eg, struct queue *q, struct cell *c)
{
	const struct xr_fabric_ecn_cfg *cfg = &eg->cfg.ecn;
	struct frame_info fi;
	double len, p;
	uint8_t ecn;

	if (!cfg->enable)
		return;
	if (cfg->avg_weight > 0) {
		idle_decay(fab, eg, q, cfg->avg_weight);
		q->avg = (1 - cfg->avg_weight) * q->avg + cfg->avg_weight * (double)q->bytes;
		len = q->avg;
	} else {
		len = (double)q->bytes;
	}
	xr_fab_frame_info(c->data, c->len, &fi);
	if (!fi.ip_version)
		return;
	ecn = fi.tclass & ECN_MASK;
	if (ecn == ECN_CE) {
		eg->st.ecn_already_ce++;
		return;
	}
	p = xr_fabric_ecn_prob(cfg, len);
	if (p <= 0)
		return;
	/* p >= 1 marks without a draw; otherwise a 53-bit uniform draw. */
	if (p < 1 && (double)(xr_fab_rand(&fab->rng) >> 11) * 0x1.0p-53 >= p)
		return;
	if (ecn == ECN_NOT_ECT) {
		eg->st.ecn_not_ect++;
		return;
	}
	set_ce(c->data, &fi);
	eg->st.ecn_marked++;
}
