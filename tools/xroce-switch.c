/* SPDX-License-Identifier: MIT */
/*
 * xroce-switch: the fabric's switch model (src/fabric) between real
 * interfaces, each joined through a promiscuous AF_PACKET socket: line
 * rate, queue limits, RED ECN marking, PFC generation and honouring, as in
 * the unit tests but on the wall clock. Put it between two NICs (veth or
 * tap ends in namespaces, or real ports) in place of a bridge. Counters
 * print on exit (SIGINT, SIGTERM, --duration) and every --stats-every.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "xroce/fabric.h"

#define MAX_STATIC 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: xroce-switch [options] IFNAME[:RATE] IFNAME[:RATE] [...]\n"
		"\n"
		"An output-queued, shared-buffer Ethernet switch joining the named interfaces\n"
		"(AF_PACKET, promiscuous; needs CAP_NET_RAW). Frames are forwarded by destination\n"
		"MAC (learned, or --static), unknown and group destinations flooded. Per egress\n"
		"port: eight priority queues in strict priority, a line rate, a byte limit per\n"
		"queue (tail drop), RED ECN marking of ECT frames; per ingress port: PFC XOFF/XON\n"
		"toward the sender. docs/fabric.md describes the model.\n"
		"\n"
		"Ports:\n"
		"  IFNAME[:RATE]          a port; RATE overrides --rate for its egress\n"
		"  -r, --rate RATE        egress line rate of every port: bits/s with an optional\n"
		"                         K/M/G/T suffix (decimal), e.g. 1G, 2.5G, 100M; 0 = the\n"
		"                         interface's own pace [0]\n"
		"  -q, --queue BYTES      byte limit of each (port, priority) egress queue; K/M/G\n"
		"                         suffixes are binary [256K]\n"
		"  -b, --buffer BYTES     the shared buffer [4M]\n"
		"      --frames N         frame cells in the shared buffer [4096]\n"
		"Classification:\n"
		"      --prio pcp|dscp    priority from the 802.1Q PCP or from the DSCP (DSCP>>3) [pcp]\n"
		"      --default-prio N   priority of untagged (pcp) or non-IP (dscp) frames [0]\n"
		"      --static MAC@IFNAME  a static forwarding entry (repeatable)\n"
		"      --no-learning      forward by static entries only (the rest floods)\n"
		"ECN (RED on the queue a frame joins):\n"
		"      --ecn KMIN,KMAX,PMAX  mark ECT(0)/ECT(1) IPv4/IPv6 frames CE with probability 0\n"
		"                         up to KMIN bytes, rising to PMAX at KMAX, 1 above; Not-ECT\n"
		"                         frames are never marked (counted as ecn_not_ect)\n"
		"      --ecn-avg W        use RED's average queue, weight W in (0,1] [0: instantaneous]\n"
		"PFC (802.1Qbb, generated from ingress buffer use):\n"
		"      --pfc PRIOS        lossless priorities, e.g. 3 or 3,4 [none]\n"
		"      --xoff BYTES       send XOFF when an ingress priority holds this much [32K]\n"
		"      --xon BYTES        send XON at or below this [16K]\n"
		"      --headroom BYTES   accepted above XOFF before dropping [64K]\n"
		"      --pause-us US      pause asked for in XOFF, as quanta at the port's rate\n"
		"                         (refreshed at half of it) [65535 quanta]\n"
		"      --ignore-pause     do not honour PFC/PAUSE frames received (still counted)\n"
		"Output:\n"
		"      --pcap PREFIX      record every port's frames in PREFIX-IFNAME.pcap\n"
		"      --stats-every SEC  print the counters every SEC seconds\n"
		"      --duration SEC     stop after SEC seconds (default: until SIGINT/SIGTERM)\n"
		"      --seed N           seed of the ECN marking draws [1]\n"
		"  -h, --help             this text\n"
		"\n"
		"Counters print on exit, one line per port (non-zero values only); drops are\n"
		"named by reason. Exit status: 0, 1 on a runtime failure, 2 on bad arguments.\n");
}

static void bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "xroce-switch: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see --help)\n");
	exit(2);
}

/* A decimal number with an optional suffix scaling it; false on garbage. */
static bool parse_scaled(const char *s, double k, double *out)
{
	return cli_scaled(s, k, out);
}

static uint64_t parse_rate(const char *s, const char *what)
{
	double v;
	if (!parse_scaled(s, 1000, &v) || v > 1.6e12)
		bad(what, s);
	return (uint64_t)v;
}

static uint64_t parse_bytes(const char *s, const char *what, uint64_t max)
{
	double v;
	if (!parse_scaled(s, 1024, &v) || v > (double)max || v != floor(v))
		bad(what, s);
	return (uint64_t)v;
}

static double parse_double(const char *s, const char *what, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= lo && v <= hi))
		bad(what, s);
	return v;
}

static uint8_t parse_prios(const char *s)
{
	uint8_t mask = 0;
	const char *p = s;

	while (*p) {
		if (*p < '0' || *p > '7' || (p[1] && p[1] != ','))
			bad("--pfc: '%s' is not a list of priorities 0..7", s);
		mask |= (uint8_t)(1u << (*p - '0'));
		p += p[1] ? 2 : 1;
	}
	if (!mask)
		bad("--pfc: '%s' names no priority", s);
	return mask;
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xFF)
			return false;
		mac[i] = (uint8_t)v[i];
	}
	return !(mac[0] & 1);
}

static uint64_t mono_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum {
	OPT_FRAMES = 256, OPT_PRIO, OPT_DEFAULT_PRIO, OPT_STATIC, OPT_NO_LEARNING, OPT_ECN, OPT_ECN_AVG, OPT_PFC,
	OPT_XOFF, OPT_XON, OPT_HEADROOM, OPT_PAUSE_US, OPT_IGNORE_PAUSE, OPT_PCAP, OPT_STATS_EVERY, OPT_DURATION,
	OPT_SEED,
};

struct static_entry {
	uint8_t mac[6];
	const char *ifname;
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rate", required_argument, NULL, 'r' }, { "queue", required_argument, NULL, 'q' },
		{ "buffer", required_argument, NULL, 'b' }, { "frames", required_argument, NULL, OPT_FRAMES },
		{ "prio", required_argument, NULL, OPT_PRIO }, { "default-prio", required_argument, NULL, OPT_DEFAULT_PRIO },
		{ "static", required_argument, NULL, OPT_STATIC }, { "no-learning", no_argument, NULL, OPT_NO_LEARNING },
		{ "ecn", required_argument, NULL, OPT_ECN }, { "ecn-avg", required_argument, NULL, OPT_ECN_AVG },
		{ "pfc", required_argument, NULL, OPT_PFC }, { "xoff", required_argument, NULL, OPT_XOFF },
		{ "xon", required_argument, NULL, OPT_XON }, { "headroom", required_argument, NULL, OPT_HEADROOM },
		{ "pause-us", required_argument, NULL, OPT_PAUSE_US },
		{ "ignore-pause", no_argument, NULL, OPT_IGNORE_PAUSE }, { "pcap", required_argument, NULL, OPT_PCAP },
		{ "stats-every", required_argument, NULL, OPT_STATS_EVERY },
		{ "duration", required_argument, NULL, OPT_DURATION }, { "seed", required_argument, NULL, OPT_SEED },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct xr_fabric_cfg fc = { .seed = 1 };
	struct xr_fabric_port_cfg pc = { 0 };
	struct static_entry statics[MAX_STATIC];
	unsigned nstatic = 0;
	const char *pcap_prefix = NULL;
	double stats_every = 0, duration = 0;
	bool xoff_set = false, xon_set = false, headroom_set = false;
	int c;

	pc.pfc.xoff = 32 << 10;
	pc.pfc.xon = 16 << 10;
	pc.pfc.headroom = 64 << 10;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "r:q:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': pc.rate_bps = parse_rate(optarg, "--rate: '%s' is not a rate (e.g. 10G, 100M)"); break;
		case 'q': pc.queue_limit = (uint32_t)parse_bytes(optarg, "--queue: '%s' is not a byte count below 4G", UINT32_MAX);
			  if (!pc.queue_limit)
				  bad("--queue: '%s' must be at least 1 byte", optarg);
			  break;
		case 'b': fc.buffer_bytes = parse_bytes(optarg, "--buffer: '%s' is not a byte count", 1ull << 40);
			  if (!fc.buffer_bytes)
				  bad("--buffer: '%s' must be at least 1 byte", optarg);
			  break;
		case OPT_FRAMES: fc.buffer_frames = (unsigned)parse_double(optarg, "--frames: '%s' is not 1..1048576", 1, 1 << 20); break;
		case OPT_PRIO:
			if (!strcmp(optarg, "pcp"))
				fc.prio_src = XR_FABRIC_PRIO_PCP;
			else if (!strcmp(optarg, "dscp"))
				fc.prio_src = XR_FABRIC_PRIO_DSCP;
			else
				bad("--prio: '%s' is neither pcp nor dscp", optarg);
			break;
		case OPT_DEFAULT_PRIO: fc.default_prio = (uint8_t)parse_double(optarg, "--default-prio: '%s' is not 0..7", 0, 7); break;
		case OPT_STATIC: {
			char *at = strchr(optarg, '@');
			if (nstatic == MAX_STATIC)
				bad("--static: more than 64 entries at '%s'", optarg);
			if (!at || !at[1])
				bad("--static: '%s' is not MAC@IFNAME", optarg);
			*at = '\0';
			if (!parse_mac(optarg, statics[nstatic].mac))
				bad("--static: '%s' is not a unicast MAC", optarg);
			statics[nstatic++].ifname = at + 1;
			break;
		}
		case OPT_NO_LEARNING: fc.no_learning = true; break;
		case OPT_ECN: {
			char k1[64], k2[64], extra;
			double pmax;
			if (strlen(optarg) > 60 || sscanf(optarg, "%63[^,],%63[^,],%lf%c", k1, k2, &pmax, &extra) != 3)
				bad("--ecn: '%s' is not KMIN,KMAX,PMAX", optarg);
			pc.ecn.enable = true;
			pc.ecn.kmin = (uint32_t)parse_bytes(k1, "--ecn: KMIN '%s' is not a byte count", UINT32_MAX);
			pc.ecn.kmax = (uint32_t)parse_bytes(k2, "--ecn: KMAX '%s' is not a byte count", UINT32_MAX);
			if (!(pmax >= 0 && pmax <= 1))
				bad("--ecn: PMAX in '%s' is not within 0..1", optarg);
			if (pc.ecn.kmax < pc.ecn.kmin)
				bad("--ecn: KMAX is below KMIN in '%s'", optarg);
			pc.ecn.pmax = pmax;
			break;
		}
		case OPT_ECN_AVG: pc.ecn.avg_weight = parse_double(optarg, "--ecn-avg: '%s' is not within 0..1", 0, 1); break;
		case OPT_PFC: pc.pfc.prio_mask = parse_prios(optarg); break;
		case OPT_XOFF: pc.pfc.xoff = (uint32_t)parse_bytes(optarg, "--xoff: '%s' is not a byte count", UINT32_MAX); xoff_set = true; break;
		case OPT_XON: pc.pfc.xon = (uint32_t)parse_bytes(optarg, "--xon: '%s' is not a byte count", UINT32_MAX); xon_set = true; break;
		case OPT_HEADROOM: pc.pfc.headroom = (uint32_t)parse_bytes(optarg, "--headroom: '%s' is not a byte count", UINT32_MAX); headroom_set = true; break;
		case OPT_PAUSE_US: pc.pfc.pause_ns = (uint32_t)(parse_double(optarg, "--pause-us: '%s' is not 1..4000000", 1, 4000000) * 1000); break;
		case OPT_IGNORE_PAUSE: pc.ignore_pause = true; break;
		case OPT_PCAP: pcap_prefix = optarg; break;
		case OPT_STATS_EVERY: stats_every = parse_double(optarg, "--stats-every: '%s' is not 0.001..86400 seconds", 0.001, 86400); break;
		case OPT_DURATION: duration = parse_double(optarg, "--duration: '%s' is not 0.001..31536000 seconds", 0.001, 31536000); break;
		case OPT_SEED: fc.seed = (uint64_t)parse_double(optarg, "--seed: '%s' is not a number", 0, 1e18); break;
		case 'h': usage(stdout); return 0;
		default:
			if (optopt)
				fprintf(stderr, "xroce-switch: option -%c: unknown or missing its argument (see --help)\n", optopt);
			else
				fprintf(stderr, "xroce-switch: '%s': unknown option or missing its argument (see --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (!pc.pfc.prio_mask && (xoff_set || xon_set || headroom_set))
		bad("%s: PFC thresholds without --pfc", "--xoff/--xon/--headroom");
	if (pc.pfc.prio_mask && (pc.pfc.xon > pc.pfc.xoff || !pc.pfc.xoff))
		bad("%s: XON must be at most XOFF, and XOFF above 0", "--xon/--xoff");
	if (pc.ecn.avg_weight > 0 && !pc.ecn.enable)
		bad("%s: needs --ecn", "--ecn-avg");
	if (argc - optind < 2)
		bad("%s: at least two ports are needed", argc - optind ? argv[optind] : "no port");
	if (argc - optind > XR_FABRIC_MAX_PORTS)
		bad("%s: at most 64 ports", argv[optind]);

	fc.pcap_offset_ns = (int64_t)(mono_ns(CLOCK_REALTIME) - mono_ns(CLOCK_MONOTONIC));
	struct xr_fabric *fab = xr_fabric_new(&fc);
	if (!fab) {
		fprintf(stderr, "xroce-switch: %s\n", strerror(errno));
		return 1;
	}
	struct pollfd pfd[XR_FABRIC_MAX_PORTS];
	int nports = 0;
	for (int i = optind; i < argc; i++) {
		struct xr_fabric_port_cfg p = pc;
		char ifname[64], path[4096];
		char *colon = strchr(argv[i], ':');
		if (strlen(argv[i]) >= sizeof(ifname))
			bad("'%s': interface name too long", argv[i]);
		snprintf(ifname, sizeof(ifname), "%s", argv[i]);
		if (colon) {
			ifname[colon - argv[i]] = '\0';
			p.rate_bps = parse_rate(colon + 1, "port rate: '%s' is not a rate (e.g. 10G, 100M)");
		}
		for (int k = 0; k < nports; k++)
			if (!strcmp(xr_fabric_port_name(fab, (unsigned)k), ifname))
				bad("'%s': port named twice", ifname);
		p.name = ifname;
		if (pcap_prefix) {
			snprintf(path, sizeof(path), "%s-%s.pcap", pcap_prefix, ifname);
			p.pcap = path;
		}
		struct xr_link *l = xr_fabric_ifport(ifname);
		if (!l) {
			int e = errno;
			fprintf(stderr, "xroce-switch: %s: %s%s\n", ifname, strerror(e),
				e == EPERM ? " (AF_PACKET needs CAP_NET_RAW)" : e == ENODEV ? " (no such interface)" : "");
			xr_fabric_free(fab);
			return 1;
		}
		int port = xr_fabric_add_port(fab, l, &p);
		if (port < 0) {
			fprintf(stderr, "xroce-switch: %s: %s%s\n", ifname, strerror(-port), port == -EIO ? " (cannot write the pcap)" : "");
			xr_link_close(l);
			xr_fabric_free(fab);
			return 1;
		}
		pfd[nports].fd = l->ops->wait_fd(l);
		pfd[nports].events = POLLIN;
		nports++;
	}
	for (unsigned i = 0; i < nstatic; i++) {
		int port = -1;
		for (int k = 0; k < nports; k++)
			if (!strcmp(xr_fabric_port_name(fab, (unsigned)k), statics[i].ifname))
				port = k;
		if (port < 0) {
			xr_fabric_free(fab);
			bad("--static: '%s' is not one of the ports", statics[i].ifname);
		}
		xr_fabric_add_mac(fab, statics[i].mac, (unsigned)port);
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	uint64_t t0 = mono_ns(CLOCK_MONOTONIC);
	uint64_t next_stats = stats_every ? t0 + (uint64_t)(stats_every * 1e9) : UINT64_MAX;
	uint64_t end = duration ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
	int rc = 0, moved = 0;
	fprintf(stderr, "xroce-switch: %d ports up\n", nports);
	while (!stop) {
		uint64_t now = mono_ns(CLOCK_MONOTONIC), due = xr_fabric_next_event(fab);
		int64_t wait_ns = 100000000;   /* 100 ms at most: stop, stats and duration checks */
		if (due != UINT64_MAX)
			wait_ns = due > now ? (int64_t)(due - now) : 0;
		if (wait_ns == 0 && moved == 0)
			wait_ns = 50000;   /* due but nothing moved: a port is refusing frames, give it a moment */
		if (wait_ns > 100000000)
			wait_ns = 100000000;
		struct timespec ts = { wait_ns / 1000000000, wait_ns % 1000000000 };
		if (ppoll(pfd, (nfds_t)nports, &ts, NULL) < 0 && errno != EINTR) {
			fprintf(stderr, "xroce-switch: poll: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		now = mono_ns(CLOCK_MONOTONIC);
		moved = xr_fabric_step(fab, now);
		if (moved < 0) {
			fprintf(stderr, "xroce-switch: %s\n", strerror(-moved));
			rc = 1;
			break;
		}
		if (now >= next_stats) {
			printf("-- %.3f s\n", (now - t0) / 1e9);
			xr_fabric_print_stats(fab, stdout);
			fflush(stdout);
			next_stats += (uint64_t)(stats_every * 1e9);
		}
		if (now >= end)
			break;
	}
	printf("-- counters after %.3f s\n", (mono_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	xr_fabric_print_stats(fab, stdout);
	fflush(stdout);
	xr_fabric_free(fab);
	return rc;
}
