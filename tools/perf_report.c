/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's output: perftest's header and address blocks, the bandwidth
 * and latency result lines and statistics, the JSON report (--out_json),
 * the verification summary (--verify) and the engine's counters (--counters).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char *const verb_title[] = { "RDMA_Write", "RDMA_Read", "Send", "Atomic FETCH_AND_ADD" };

static void print_dest(FILE *o, const char *side, const struct perf_dest *d, enum verb v)
{
	fprintf(o, " %s address: LID %#04x QPN %#06x PSN %#06x", side, d->lid, d->qpn, d->psn);
	if (v == V_READ)
		fprintf(o, " OUT %#04x", d->out_reads);
	if (v != V_SEND)
		fprintf(o, " RKey %#08x VAddr %#016" PRIx64, d->rkey, d->vaddr);
	fprintf(o, "\n GID: ");
	for (int i = 0; i < 16; i++)
		fprintf(o, "%02d%s", d->gid.raw[i], i < 15 ? ":" : "\n");
}

void print_header(struct side *s)
{
	const struct cfg *c = s->c;
	FILE *o = s->out;

	fprintf(o, RESULT_LINE);
	fprintf(o, "                    %s %s Test\n", verb_title[c->verb], c->lat ? "Latency" : "BW");
	fprintf(o, " Dual-port       : OFF\t\tDevice         : %s\n", c->device);
	fprintf(o, " Number of qps   : %u\t\tTransport type : IB\n", c->qps);
	fprintf(o, " Connection type : %s\t\tUsing SRQ      : %s\n",
		c->conn == XR_QPT_UD ? "UD" : c->conn == XR_QPT_UC ? "UC" : "RC", c->use_srq ? "ON" : "OFF");
	fprintf(o, " PCIe relax order: OFF\n");
	if (!c->lat || c->verb != V_WRITE)
		fprintf(o, " TX depth        : %u\n", c->tx_depth);
	if (c->verb == V_READ || c->verb == V_ATOMIC)
		fprintf(o, " Outstand reads  : %u\n", s->rem[0].out_reads);
	if (c->verb == V_SEND)
		fprintf(o, " RX depth        : %u\n", c->rx_depth);
	if (!c->lat && !c->pingpong)
		fprintf(o, " CQ Moderation   : %u\n", c->cq_mod);
	if (c->post_list > 1)
		fprintf(o, " Post List       : %u\n", c->post_list);
	fprintf(o, " Mtu             : %u[B]\n", 128u << s->mtu);
	fprintf(o, " Link type       : Ethernet (xroce %s link)\n", c->mem ? "mem" : c->link.kind);
	fprintf(o, " GID index       : %d\n", c->gid_index);
	if (c->verb == V_WRITE || c->verb == V_SEND)
		fprintf(o, " Max inline data : %u[B]\n", c->inline_size);
	fprintf(o, " rdma_cm QPs\t : OFF\n");
	fprintf(o, " Data ex. method : Ethernet\n");
	if (c->verify)
		fprintf(o, " Data validation : ON (xroce --verify)\n");
	fprintf(o, RESULT_LINE);
	for (unsigned q = 0; q < c->qps; q++)
		print_dest(o, "local", &s->my[q], c->verb);
	for (unsigned q = 0; q < c->qps; q++)
		print_dest(o, "remote", &s->rem[q], c->verb);
	fprintf(o, RESULT_LINE);
}

/* ---- results ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct lat_result lat_stats(double *t, uint64_t n)
{
	struct lat_result r = { 0 };
	double sum = 0, sq = 0;

	if (!n)
		return r;
	qsort(t, n, sizeof(double), cmp_double);
	for (uint64_t i = 0; i < n; i++)
		sum += t[i];
	r.avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++)
		sq += (t[i] - r.avg) * (t[i] - r.avg);
	r.stdev = sqrt(sq / (double)n);
	r.min = t[0];
	r.max = t[n - 1];
	r.typical = t[n / 2];
	r.p99 = t[(uint64_t)((double)(n - 1) * 0.99)];
	r.p999 = t[(uint64_t)((double)(n - 1) * 0.999)];
	return r;
}

FILE *json_out;
static bool json_first = true;

void json_bw(const struct cfg *c, const struct bw_report *r)
{
	if (!json_out)
		return;
	fprintf(json_out, "%s\n    {\"MsgSize\": %" PRIu64 ", \"n_iterations\": %" PRIu64 ", \"BW_peak\": %.6f, "
		"\"BW_average\": %.6f, \"MsgRate\": %.6f, \"unit\": \"%s\"}", json_first ? "" : ",", r->size, r->iters,
		r->bw_peak, r->bw_avg, r->msg_rate, c->gbits ? "Gb/sec" : "MiB/sec");
	json_first = false;
}

void json_lat(const struct lat_result *r, uint64_t size, uint64_t iters)
{
	if (!json_out)
		return;
	fprintf(json_out, "%s\n    {\"MsgSize\": %" PRIu64 ", \"n_iterations\": %" PRIu64 ", \"t_min\": %.3f, \"t_max\": %.3f, "
		"\"t_typical\": %.3f, \"t_avg\": %.3f, \"t_stdev\": %.3f, \"percentile_99\": %.3f, "
		"\"percentile_99_9\": %.3f, \"unit\": \"usec\"}", json_first ? "" : ",", size, iters, r->min, r->max,
		r->typical, r->avg, r->stdev, r->p99, r->p999);
	json_first = false;
}

void print_bw_line(FILE *o, const struct bw_report *r)
{
	fprintf(o, " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t     %-7.6f\n", r->size, r->iters,
		r->bw_peak, r->bw_avg, r->msg_rate);
}

double bw_unit(const struct cfg *c, double bytes_per_us)
{
	return c->gbits ? bytes_per_us * 8 / 1e3 : bytes_per_us * 1e6 / (1 << 20);
}

void report_verify(struct side *s)
{
	if (!s->c->verify || (!s->verified && !s->verify_errors))
		return;   /* the passive end of a test checks nothing itself */
	fprintf(s->out, " Data verification: %" PRIu64 " messages checked, %" PRIu64 " errors%s\n", s->verified,
		s->verify_errors, s->verify_errors ? "  <-- FAILED" : "");
	if (s->verify_errors)
		s->rc = -1;
}

void print_counters(struct side *s)
{
	fprintf(s->out, " Engine counters (%s, read through the register file):\n", s->server ? "server" : "client");
	for (unsigned i = 0; i < XR_CNT_COUNT; i++) {
		uint64_t v = 0;
		xr_regio_read_counter(xr_context_regs(s->ctx), (enum xr_counter)i, &v);
		if (v)
			fprintf(s->out, "   %-26s %" PRIu64 "\n", xr_counter_name((enum xr_counter)i), v);
	}
	/* The mem link: payloads sent by reference, and copied in by a settle. */
	if (s->link && !strcmp(s->link->kind, "mem"))
		fprintf(s->out, "   %-26s %" PRIu64 "\n   %-26s %" PRIu64 "\n", "link_tx_gather", s->link->stats.tx_gather,
			"link_gather_settled", s->link->stats.gather_settled);
	print_link_paths(s);
}

/* Which way frames went: shared memory to local devices, or the network. */
void print_link_paths(struct side *s)
{
	struct xr_link_host_stats h;

	if (!s->base_link || xr_link_host_stats(s->base_link, &h))
		return;
	fprintf(s->out, " Link paths (%s link%s):\n", s->base_link->kind,
		!strcmp(s->base_link->kind, "udp") && !h.host_path ? ", host path off" : "");
	fprintf(s->out, "   %-26s %" PRIu64 " sent, %" PRIu64 " received\n", "host (shared memory)", h.tx_host, h.rx_host);
	if (!strcmp(s->base_link->kind, "udp")) {
		fprintf(s->out, "   %-26s %" PRIu64 " sent, %" PRIu64 " received\n", "network (UDP)", h.tx_net, h.rx_net);
		if (h.sport_fallbacks)   /* the rxe port could not be had: ECMP saw one flow meanwhile */
			fprintf(s->out, "   %-26s %" PRIu64 " (sent from 4791 until tried again)\n", "source port tries failed", h.sport_fallbacks);
	}
	if (h.tx_drop_no_peer || h.tx_drop_peer_gone || h.tx_drop_stalled || h.tx_drop_not_ip || h.rx_drop_bad_len ||
	    h.rx_drop_bad_index)
		fprintf(s->out, "   drops: no_peer %" PRIu64 " peer_gone %" PRIu64 " stalled %" PRIu64 " not_ip %" PRIu64
			" bad_len %" PRIu64 " bad_index %" PRIu64 "\n", h.tx_drop_no_peer, h.tx_drop_peer_gone,
			h.tx_drop_stalled, h.tx_drop_not_ip, h.rx_drop_bad_len, h.rx_drop_bad_index);
	fprintf(s->out, "   %-26s %" PRIu64 " connected, %" PRIu64 " accepted, %" PRIu64 " gone\n", "peers",
		h.peers_connected, h.peers_accepted, h.peers_gone);
}
