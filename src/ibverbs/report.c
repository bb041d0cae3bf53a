/* SPDX-License-Identifier: MIT */
/*
 * XROCE_EXIT_REPORT=1: when the device closes, or when the program exits
 * with it still open (ibv_rc_pingpong returns from main on a failed
 * completion without closing anything), the engine's non-zero counters,
 * the link's frame counts and the last events go to stderr. A program
 * that fails once in a hundred runs then leaves the evidence behind.
 * SIGUSR1 (`timeout -s USR1`) prints it too, and then ends the program
 * as the signal would have: a hung program leaves its evidence as well.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <unistd.h>

#include "xrv.h"
#include "xroce/regio.h"
#include "xroce/regmap.h"

#define REPORT_EVENTS 48

static struct {
	pthread_mutex_t lock;
	struct xr_context *xr;
	struct xr_link *link;
	bool hooked;
	int wake[2];   /* SIGUSR1's handler to the reporting thread */
} armed = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = { -1, -1 } };

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

/* The XDP link: its pool and drops (a pool run dry stops all receipt). */
static void print_xdp(struct xr_link *l)
{
	struct xr_link_xdp_info i;

	if (xr_link_xdp_info(l, &i))
		return;
	fprintf(stderr, "xroce:   xdp: pool %u free of %u, %u pending; drops rx no_frame %" PRIu64 " pending_full %" PRIu64
		" oversize %" PRIu64 " not_ours %" PRIu64 "; kernel rx_dropped %" PRIu64 " ring_full %" PRIu64
		" fill_empty %" PRIu64 " tx_empty %" PRIu64 "; filter roce %" PRIu64 " pass %" PRIu64 "\n",
		i.pool_free, i.pool_frames, i.pending, i.rx_drop_no_frame, i.rx_drop_pending_full, i.rx_drop_oversize,
		i.rx_drop_not_ours, i.k_rx_dropped, i.k_rx_ring_full, i.k_fill_empty, i.k_tx_ring_empty, i.filt_roce,
		i.filt_pass);
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
	print_xdp(armed.link);   /* last: it takes the link's locks, which a hung link may hold */
}

static void report_at_exit(void)
{
	pthread_mutex_lock(&armed.lock);
	report_locked("exit");
	armed.xr = NULL;
	pthread_mutex_unlock(&armed.lock);
}

static pid_t usr1_owner;   /* the process whose thread reports */

static void on_usr1(int sig)
{
	int saved = errno;

	if (getpid() != usr1_owner) {
		/* A child forked without exec has the handler but not the
		 * thread: it dies of the signal, as it would have. */
		signal(sig, SIG_DFL);
		raise(sig);
	} else if (write(armed.wake[1], "r", 1) < 0) {
		/* the pipe full: a report is owed already */
	}
	errno = saved;
}

/* Reports outside the handler (it may have interrupted the engine with
 * its locks held), then dies of the signal as without the handler. The
 * default comes back first: a report stuck behind a hung engine's lock
 * still lets a second SIGUSR1 (or timeout's -k) end the program. */
static void *report_on_signal(void *arg)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, was;
	char c;
	ssize_t r;

	(void)arg;
	while ((r = read(armed.wake[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (r != 1)
		return NULL;   /* the program closed our pipe: no signal came */
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGUSR1, &dfl, &was);
	if (was.sa_handler != on_usr1) {
		sigaction(SIGUSR1, &was, NULL);   /* the program's own handler now: its signal */
		return NULL;
	}
	pthread_mutex_lock(&armed.lock);
	report_locked("SIGUSR1");
	pthread_mutex_unlock(&armed.lock);
	kill(getpid(), SIGUSR1);   /* to the process: this thread blocks it */
	return NULL;
}

/* Only where the program left SIGUSR1 alone. Called with armed.lock. */
static void hook_usr1(void)
{
	struct sigaction old, sa = { .sa_handler = on_usr1 };
	sigset_t all, prev;
	pthread_t t;

	if (sigaction(SIGUSR1, NULL, &old) || old.sa_handler != SIG_DFL || pipe2(armed.wake, O_CLOEXEC))
		return;
	fcntl(armed.wake[1], F_SETFL, O_NONBLOCK);   /* the handler never blocks */
	usr1_owner = getpid();
	/* The reporting thread takes no signals of its own. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &prev);
	if (pthread_create(&t, NULL, report_on_signal, NULL) == 0) {
		pthread_setname_np(t, "xroce-report");
		pthread_detach(t);
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
	}
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
}

void xrv_report_open(struct xr_context *xr, struct xr_link *link)
{
	const char *v = getenv("XROCE_EXIT_REPORT");

	if (!v || !*v || !strcmp(v, "0"))
		return;
	pthread_mutex_lock(&armed.lock);
	armed.xr = xr;
	armed.link = link;
	if (!armed.hooked && atexit(report_at_exit) == 0) {
		armed.hooked = true;
		hook_usr1();
	}
	pthread_mutex_unlock(&armed.lock);
}

void xrv_report_close(void)
{
	pthread_mutex_lock(&armed.lock);
	report_locked("close");
	armed.xr = NULL;
	pthread_mutex_unlock(&armed.lock);
}
