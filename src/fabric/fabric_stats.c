/* SPDX-License-Identifier: MIT */
/*
 * What the switch tells: per-port counters, egress queue-length statistics
 * (maximum exact at every change; mean and p99 from samples taken every
 * sample_ns of the fabric's clock, so they weigh time, not frames), and a
 * pcap per port stamped with the fabric's clock (the link pcap tap stamps
 * wall time, which says nothing on a simulated clock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"

int xr_fab_stats_open(struct xr_fabric *fab, struct port *p)
{
	(void)fab;
	p->qhist = calloc(QHIST_BUCKETS, sizeof(*p->qhist));
	if (!p->qhist)
		return -ENOMEM;
	if (p->cfg.pcap) {
		p->pcap_dead = pcap_open_dead(DLT_EN10MB, 65535);
		p->pcap = p->pcap_dead ? pcap_dump_open(p->pcap_dead, p->cfg.pcap) : NULL;
		if (!p->pcap) {
			if (p->pcap_dead)
				pcap_close(p->pcap_dead);
			free(p->qhist);
			return -EIO;
		}
	}
	return 0;
}

void xr_fab_stats_close(struct port *p)
{
	if (p->pcap) {
		pcap_dump_close(p->pcap);
		pcap_close(p->pcap_dead);
	}
	free(p->qhist);
}

void xr_fab_pcap(struct xr_fabric *fab, struct port *p, const uint8_t *d, uint16_t len, uint64_t t)
{
	struct pcap_pkthdr h = { .caplen = len, .len = len };
	int64_t ts = (int64_t)t + fab->cfg.pcap_offset_ns;

	if (!p->pcap)
		return;
	if (ts < 0)
		ts = 0;
	h.ts.tv_sec = ts / 1000000000;
	h.ts.tv_usec = (ts % 1000000000) / 1000;
	pcap_dump((u_char *)p->pcap, &h, d);
}

void xr_fab_qlen_changed(struct port *p)
{
	if (p->qbytes > p->st.qlen_max)
		p->st.qlen_max = p->qbytes;
}

void xr_fab_sample(struct xr_fabric *fab, uint64_t now)
{
	uint64_t n;

	if (now < fab->next_sample_ns)
		return;
	/* Every sampling instant since the last step saw the queue as it is now. */
	n = (now - fab->next_sample_ns) / fab->cfg.sample_ns + 1;
	fab->next_sample_ns += n * fab->cfg.sample_ns;
	for (unsigned i = 0; i < fab->nports; i++) {
		struct port *p = fab->ports[i];
		uint64_t b = p->qbytes >> 10;
		p->qhist[b < QHIST_BUCKETS ? b : QHIST_BUCKETS - 1] += n;
		p->qsum += (double)p->qbytes * (double)n;
		p->st.samples += n;
	}
}

static uint64_t p99(const struct port *p)
{
	uint64_t want, seen = 0;

	if (!p->st.samples)
		return 0;
	want = (p->st.samples * 99 + 99) / 100;   /* the sample ranked at 99 % */
	for (unsigned b = 0; b < QHIST_BUCKETS; b++) {
		seen += p->qhist[b];
		if (seen >= want) {   /* the bucket's upper edge, never above what was seen */
			uint64_t edge = ((uint64_t)b + 1) << 10;
			return edge < p->st.qlen_max ? edge : p->st.qlen_max;
		}
	}
	return p->st.qlen_max;
}

int xr_fabric_port_stats(const struct xr_fabric *fab, unsigned port, struct xr_fabric_port_stats *out)
{
	const struct port *p;
	uint64_t now;

	if (!fab || !out || port >= fab->nports)
		return -EINVAL;
	p = fab->ports[port];
	now = xr_fabric_now(fab);
	*out = p->st;
	for (int i = 0; i < XR_FABRIC_PRIOS; i++) {
		/* The pause in progress counts up to now, one that ran out whole. */
		uint64_t end = p->pause_until[i] < now ? p->pause_until[i] : now;
		if (end > p->pause_from[i])
			out->paused_ns[i] += end - p->pause_from[i];
	}
	out->qlen = p->qbytes;
	out->qlen_mean = p->st.samples ? p->qsum / (double)p->st.samples : 0;
	out->qlen_p99 = p99(p);
	return 0;
}

static void field(FILE *out, const char *name, uint64_t v)
{
	if (v)
		fprintf(out, " %s=%llu", name, (unsigned long long)v);
}

static void per_prio(FILE *out, const char *name, const uint64_t *v)
{
	for (int i = 0; i < XR_FABRIC_PRIOS; i++)
		if (v[i])
			fprintf(out, " %s[%d]=%llu", name, i, (unsigned long long)v[i]);
}

void xr_fabric_print_stats(const struct xr_fabric *fab, FILE *out)
{
	for (unsigned i = 0; fab && i < fab->nports; i++) {
		struct xr_fabric_port_stats s;
		xr_fabric_port_stats(fab, i, &s);
		fprintf(out, "%s:", fab->ports[i]->name);
		field(out, "rx_frames", s.rx_frames);
		field(out, "rx_bytes", s.rx_bytes);
		field(out, "tx_frames", s.tx_frames);
		field(out, "tx_bytes", s.tx_bytes);
		field(out, "flooded", s.flooded);
		for (int d = 0; d < XR_FABRIC_DROP_COUNT; d++)
			if (s.drops[d])
				fprintf(out, " drop_%s=%llu", xr_fabric_drop_name((enum xr_fabric_drop)d),
					(unsigned long long)s.drops[d]);
		field(out, "ecn_marked", s.ecn_marked);
		field(out, "ecn_not_ect", s.ecn_not_ect);
		field(out, "ecn_already_ce", s.ecn_already_ce);
		per_prio(out, "pfc_sent", s.pfc_sent);
		per_prio(out, "pfc_xon_sent", s.pfc_xon_sent);
		per_prio(out, "pfc_rcvd", s.pfc_rcvd);
		per_prio(out, "pfc_injected", s.pfc_injected);
		per_prio(out, "pfc_xon_injected", s.pfc_xon_injected);
		field(out, "pause_rcvd", s.pause_rcvd);
		per_prio(out, "paused_ns", s.paused_ns);
		field(out, "tx_stalls", s.tx_stalls);
		fprintf(out, " qlen_max=%llu qlen_mean=%.0f qlen_p99=%llu\n", (unsigned long long)s.qlen_max,
			s.qlen_mean, (unsigned long long)s.qlen_p99);
	}
}
