/* SPDX-License-Identifier: MIT */
/*
 * XROCE_EXIT_REPORT=1: when the device closes, or when the program exits
 * with it still open (ibv_rc_pingpong returns from main on a failed
 * completion without closing anything), the engine's non-zero counters,
 * the link's frame counts and the last events go to stderr. A program
 * that fails once in a hundred runs then leaves the evidence behind.
 */
#include <inttypes.h>

#include "xrv.h"
#include "xroce/regio.h"
#include "xroce/regmap.h"

#define REPORT_EVENTS 48

static struct {
	pthread_mutex_t lock;
	struct xr_context *xr;
	struct xr_link *link;
	bool hooked;
} armed = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Posting and successful completions are most of a healthy log: the
 * report keeps the rest (timeouts, retransmissions, NAKs, state changes). */
static bool routine(const struct xr_event_record *ev)
{
	return ev->type == XR_EV_WQE_POSTED || (ev->type == XR_EV_WQE_COMPLETED && ev->arg0 == 0);
}

static void print_events(struct xr_regio *r)
{
	struct xr_event_record kept[REPORT_EVENTS];
	uint32_t count, cap, first, n = 0, skipped = 0;

	if (xr_regio_read(r, XR_REG_EVLOG_COUNT, &count) || xr_regio_read(r, XR_REG_EVLOG_CAP, &cap))
		return;
	first = count > cap ? count - cap : 0;
	for (uint32_t s = count; s-- > first && n < REPORT_EVENTS;) {
		struct xr_event_record ev;
		if (xr_regio_read_event(r, s, &ev))
			continue;
		if (routine(&ev))
			skipped++;
		else
			kept[n++] = ev;
	}
	fprintf(stderr, "xroce: last %u of %u events, %u postings and successful completions among them left out"
		" (time ns, event, qpn, arg0, arg1):\n", n, count, skipped);
	while (n--)
		fprintf(stderr, "xroce:   %" PRIu64 " %s 0x%06x 0x%08x 0x%08x\n", kept[n].ts,
			xr_event_name((enum xr_event_type)kept[n].type), kept[n].qpn, kept[n].arg0, kept[n].arg1);
}

/* The host and UDP links: which way frames went, and their drops. */
static void print_paths(struct xr_link *l)
{
	struct xr_link_host_stats h;

	if (xr_link_host_stats(l, &h))
		return;
	fprintf(stderr, "xroce:   paths: host %" PRIu64 " sent %" PRIu64 " received, network %" PRIu64 " sent %" PRIu64
		" received; drops no_peer %" PRIu64 " peer_gone %" PRIu64 " stalled %" PRIu64 " bad_len %" PRIu64
		" bad_index %" PRIu64 "; peers %" PRIu64 " connected %" PRIu64 " accepted %" PRIu64 " gone\n",
		h.tx_host, h.rx_host, h.tx_net, h.rx_net, h.tx_drop_no_peer, h.tx_drop_peer_gone, h.tx_drop_stalled,
		h.rx_drop_bad_len, h.rx_drop_bad_index, h.peers_connected, h.peers_accepted, h.peers_gone);
}

static void report_locked(const char *when)
{
	struct xr_regio *r;

	if (!armed.xr)
		return;
	r = xr_context_regs(armed.xr);
	fprintf(stderr, "xroce: report at %s: link tx %" PRIu64 " rx %" PRIu64 " tx_drops %" PRIu64 " rx_drops %" PRIu64 "\n",
		when, armed.link->stats.tx_frames, armed.link->stats.rx_frames, armed.link->stats.tx_drops,
		armed.link->stats.rx_drops);
	print_paths(armed.link);
	for (int i = 0; i < XR_CNT_COUNT; i++) {
		uint64_t v = 0;
		if (!xr_regio_read_counter(r, (enum xr_counter)i, &v) && v)
			fprintf(stderr, "xroce:   %-26s %" PRIu64 "\n", xr_counter_name((enum xr_counter)i), v);
	}
	print_events(r);
}

static void report_at_exit(void)
{
	pthread_mutex_lock(&armed.lock);
	report_locked("exit");
	armed.xr = NULL;
	pthread_mutex_unlock(&armed.lock);
}

void xrv_report_open(struct xr_context *xr, struct xr_link *link)
{
	const char *v = getenv("XROCE_EXIT_REPORT");

	if (!v || !*v || !strcmp(v, "0"))
		return;
	pthread_mutex_lock(&armed.lock);
	armed.xr = xr;
	armed.link = link;
	if (!armed.hooked && atexit(report_at_exit) == 0)
		armed.hooked = true;
	pthread_mutex_unlock(&armed.lock);
}

void xrv_report_close(void)
{
	pthread_mutex_lock(&armed.lock);
	report_locked("close");
	armed.xr = NULL;
	pthread_mutex_unlock(&armed.lock);
}
