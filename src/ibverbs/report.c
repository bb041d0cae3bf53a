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

static void print_events(struct xr_regio *r)
{
	uint32_t count, cap, first;

	if (xr_regio_read(r, XR_REG_EVLOG_COUNT, &count) || xr_regio_read(r, XR_REG_EVLOG_CAP, &cap))
		return;
	first = count > REPORT_EVENTS ? count - REPORT_EVENTS : 0;
	if (count > cap && first < count - cap)
		first = count - cap;
	fprintf(stderr, "xroce: last %u of %u events (time ns, event, qpn, arg0, arg1):\n", count - first, count);
	for (uint32_t s = first; s < count; s++) {
		uint32_t lo, hi, type, qpn, a0, a1;
		if (xr_regio_write(r, XR_REG_EVLOG_SEL, s) || xr_regio_read(r, XR_REG_EVLOG_TS_LO, &lo) ||
		    xr_regio_read(r, XR_REG_EVLOG_TS_HI, &hi) || xr_regio_read(r, XR_REG_EVLOG_TYPE, &type) ||
		    xr_regio_read(r, XR_REG_EVLOG_QPN, &qpn) || xr_regio_read(r, XR_REG_EVLOG_ARG0, &a0) ||
		    xr_regio_read(r, XR_REG_EVLOG_ARG1, &a1))
			return;
		if (type >> 31)
			fprintf(stderr, "xroce:   %" PRIu64 " %s 0x%06x 0x%08x 0x%08x\n", (uint64_t)hi << 32 | lo,
				xr_event_name((enum xr_event_type)(type & 0xFF)), qpn, a0, a1);
	}
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
