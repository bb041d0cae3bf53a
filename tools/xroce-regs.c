/* SPDX-License-Identifier: MIT */
/*
 * xroce-regs: the register file from the command line. Works on a fresh
 * in-process engine, on a running engine's debug socket (--attach), or on
 * memory-mapped registers (--mmio: a UIO/VFIO BAR of real hardware).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "xroce/engine.h"
#include "xroce/regio.h"

static const char *prog = "xroce-regs";

static void usage(FILE *out)
{
	fprintf(out,
"Usage: xroce-regs [--attach SOCKET | --mmio PATH[@OFFSET]] COMMAND [ARGS]\n"
"Reads and writes xroce's register file. Without --attach or --mmio it uses a\n"
"fresh in-process engine (power-on values).\n"
"\n"
"Commands:\n"
"  dump [--golden]          every register by name with decoded fields, then the\n"
"                           counters; --golden writes the golden-file format\n"
"  read REG|OFFSET          one register (a counter name reads all 64 bits)\n"
"  write REG|OFFSET VALUE   one register; prints the AXI response\n"
"  log                      the event log entries still in the ring\n"
"  watch [-i SEC] [-n N] [--cc] [--qp QPN[,QPN..]]\n"
"                           counters that change, per second (N rounds; 0 = forever);\n"
"                           --cc: the congestion view: every ECN/CNP/DCQCN/pacer/PFC\n"
"                           counter each round, changed or not (per-priority PFC ones\n"
"                           once non-zero), and PFC_STATUS; --qp: each QP's\n"
"                           QP_CC_RATE/TARGET/ALPHA, QP_CE_RCVD, QP_CNP_SENT/RCVD\n"
"                           per round (a QP READ command: it uses the QP window, so\n"
"                           not while a driver edits a QP there)\n"
"  check GOLDEN [--config-only]\n"
"                           read back every register and compare with a golden file\n"
"                           (from dump --golden); prints a diff, exit 1 on mismatch.\n"
"                           --config-only skips counters and the event log.\n"
"  doc                      the register reference (docs/registers.md)\n"
"  serve SOCKET [--link-up] run a fresh engine serving its registers on SOCKET\n"
"                           until interrupted (a register model for FPGA teams)\n"
"\n"
"Options:\n"
"  -a, --attach SOCKET      a running engine's debug socket\n"
"  -m, --mmio PATH[@OFF]    a mappable register region (size 0x1000000)\n"
"  -h, --help\n"
"Exit status: 0 ok, 1 mismatch or refused access, 2 usage or connection error.\n");
}

static struct xr_engine *local_engine;

/* A mapping or socket that is not xroce's register file (a wrong BAR, a
 * file of 0xFF bytes) would feed every command garbage: refuse it. */
static struct xr_regio *identified(struct xr_regio *r, const char *what)
{
	uint32_t id = 0;
	int rc;

	if (!r)
		return NULL;
	rc = xr_regio_read(r, XR_REG_ID, &id);
	if (rc)
		fprintf(stderr, "%s: %s: cannot read the ID register: %s\n", prog, what,
			rc < 0 ? strerror(-rc) : xr_axi_resp_name(rc));
	else if (id != XR_REG_ID_MAGIC)
		fprintf(stderr, "%s: %s does not identify as xroce: ID (0x%03x) reads 0x%08x, not 0x%08x\n", prog,
			what, XR_REG_ID, id, XR_REG_ID_MAGIC);
	if (rc || id != XR_REG_ID_MAGIC) {
		xr_regio_close(r);
		return NULL;
	}
	return r;
}

static struct xr_regio *open_regs(const char *attach, const char *mmio)
{
	struct xr_regio *r;

	if (attach) {
		r = xr_regio_socket(attach);
		if (!r)
			fprintf(stderr, "%s: cannot attach to %s: %s\n", prog, attach, strerror(errno));
		return identified(r, attach);
	}
	if (mmio) {
		char path[4096];
		uint64_t off = 0;
		const char *at = strrchr(mmio, '@');
		snprintf(path, sizeof(path), "%.*s", at ? (int)(at - mmio) : (int)strlen(mmio), mmio);
		if (at && !cli_u64(prog, "mmio offset", at + 1, UINT64_MAX, &off))
			return NULL;
		r = xr_regio_mmio(path, off, XR_REG_SPACE);
		if (!r)
			fprintf(stderr, "%s: cannot map %s: %s\n", prog, path, strerror(errno));
		return identified(r, path);
	}
	local_engine = xr_engine_create();
	if (!local_engine) {
		fprintf(stderr, "%s: cannot create an engine: %s\n", prog, strerror(errno));
		return NULL;
	}
	return xr_regio_engine(local_engine);
}

static bool is_counter(const struct xr_reg_desc *d)
{
	return d->offset >= XR_COUNTER_BASE && d->offset < XR_COUNTER_END;
}

static bool is_volatile(const struct xr_reg_desc *d)
{
	/* Time-stamped: differs on every run by nature. */
	return d->offset == XR_REG_EVLOG_TS_LO || d->offset == XR_REG_EVLOG_TS_HI;
}

static bool is_evlog(const struct xr_reg_desc *d)
{
	return d->offset >= XR_REG_EVLOG_COUNT && d->offset <= XR_REG_EVLOG_ARG1;
}

static void print_fields(const struct xr_reg_desc *d, uint32_t v)
{
	const char *p = d->fields;

	while (*p) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[64];
		unsigned lo = 0, width = 1;
		char *c1, *c2;
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		c1 = strchr(item, ':');
		if (c1) {
			*c1 = '\0';
			lo = (unsigned)atoi(c1 + 1);
			c2 = strchr(c1 + 1, ':');
			if (c2)
				width = (unsigned)atoi(c2 + 1);
		}
		printf(" %s=%" PRIu64, item, (uint64_t)(((uint64_t)v >> lo) & ((UINT64_C(1) << width) - 1)));
		p += len;
		if (*p)
			p++;
	}
}

static int cmd_dump(struct xr_regio *r, bool golden)
{
	size_t n;
	const struct xr_reg_desc *d = xr_reg_descs(&n);
	int bad = 0;

	if (golden)
		printf("# xroce register golden file v1: OFFSET NAME VALUE\n");
	for (size_t i = 0; i < n; i++) {
		uint32_t v;
		int rc;
		if (d[i].count > 1 || d[i].access == XR_WO || (golden && is_volatile(&d[i])))
			continue;
		if (is_counter(&d[i]) && !golden) {
			uint64_t c;
			if (d[i].offset & 4)
				continue;
			rc = xr_regio_read_counter(r, (enum xr_counter)((d[i].offset - XR_COUNTER_BASE) / 8), &c);
			if (rc) {
				fprintf(stderr, "%s: %s: %s\n", prog, d[i].name, xr_axi_resp_name(rc));
				bad = 1;
				continue;
			}
			printf("0x%04x %-24.*s %" PRIu64 "\n", d[i].offset, (int)strlen(d[i].name) - 3, d[i].name, c);
			continue;
		}
		rc = xr_regio_read(r, d[i].offset, &v);
		if (rc) {
			fprintf(stderr, "%s: %s: %s\n", prog, d[i].name, xr_axi_resp_name(rc));
			bad = 1;
			continue;
		}
		if (golden) {
			printf("0x%04x %s 0x%08x\n", d[i].offset, d[i].name, v);
		} else {
			printf("0x%04x %-24s 0x%08x", d[i].offset, d[i].name, v);
			print_fields(&d[i], v);
			printf("\n");
		}
	}
	return bad;
}

/* A register by name, counter name, or offset into *d (NULL for an offset
 * with no register: still tried, the device answers). False, with a
 * message, when s is none of these. Every 32-bit offset is valid input. */
static bool find_reg(const char *s, const struct xr_reg_desc **d, uint32_t *off, int *counter)
{
	char *end;
	unsigned long long v;

	*counter = -1;
	*d = xr_reg_by_name(s);
	if (*d) {
		*off = (*d)->offset;
		return true;
	}
	for (unsigned c = 0; c < XR_CNT_COUNT; c++)
		if (!strcasecmp(xr_counter_name(c), s)) {
			*counter = (int)c;
			*off = XR_COUNTER_BASE + 8 * c;
			*d = xr_reg_by_offset(*off);
			return true;
		}
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*s && *s != '-' && !*end && !errno && v <= UINT32_MAX) {
		*off = (uint32_t)v;
		*d = xr_reg_by_offset(*off);
		return true;
	}
	fprintf(stderr, "%s: no register named '%s', and not an offset 0..0xffffffff\n", prog, s);
	return false;
}

/* Why an access to an offset with no register failed, for the message. */
static const char *no_reg_why(uint32_t off)
{
	if (off >= XR_REG_SPACE)
		return " (beyond the register space, 0x0..0xffffff)";
	if (off & 3)
		return " (not 4-byte aligned)";
	return " (no register at this offset)";
}

static int cmd_read(struct xr_regio *r, const char *what)
{
	uint32_t off, v;
	int counter, rc;
	const struct xr_reg_desc *d;

	if (!find_reg(what, &d, &off, &counter))
		return 2;
	if (counter >= 0) {
		uint64_t c;
		rc = xr_regio_read_counter(r, (enum xr_counter)counter, &c);
		if (!rc)
			printf("%s = %" PRIu64 "\n", xr_counter_name((enum xr_counter)counter), c);
	} else {
		rc = xr_regio_read(r, off, &v);
		if (!rc) {
			printf("0x%04x %s = 0x%08x", off, d ? d->name : "?", v);
			if (d)
				print_fields(d, v);
			printf("\n");
		}
	}
	if (rc) {
		printf("0x%04x %s: %s%s\n", off, d ? d->name : "?", xr_axi_resp_name(rc), d ? "" : no_reg_why(off));
		return rc < 0 ? 2 : 1;
	}
	return 0;
}

static int cmd_write(struct xr_regio *r, const char *what, const char *value)
{
	uint32_t off;
	uint64_t v;
	int counter, rc;
	const struct xr_reg_desc *d;

	if (!find_reg(what, &d, &off, &counter))
		return 2;
	if (!cli_u64(prog, "value", value, UINT32_MAX, &v))
		return 2;
	rc = xr_regio_write(r, off, (uint32_t)v);
	printf("0x%04x %s <- 0x%08x: %s%s\n", off, d ? d->name : "?", (uint32_t)v, xr_axi_resp_name(rc),
	       rc && !d ? no_reg_why(off) : "");
	return rc == 0 ? 0 : rc < 0 ? 2 : 1;
}

/* No sane event ring is larger (this model's holds XR_EVLOG_ENTRIES;
 * hardware may size its own): a bigger EVLOG_CAP is a register reading
 * garbage, and the loop below would run for hours. */
#define EVLOG_CAP_MAX 65536u

static int cmd_log(struct xr_regio *r)
{
	uint32_t count, cap, first;
	int rc = xr_regio_read(r, XR_REG_EVLOG_COUNT, &count);

	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_CAP, &cap);
	if (rc) {
		fprintf(stderr, "%s: event log: %s\n", prog, xr_axi_resp_name(rc));
		return 1;
	}
	if (cap > EVLOG_CAP_MAX) {
		fprintf(stderr, "%s: event log: EVLOG_CAP reads %u, beyond any ring (at most %u): not reading it\n",
			prog, cap, EVLOG_CAP_MAX);
		return 1;
	}
	first = count > cap ? count - cap : 0;
	printf("%-8s %-16s %-14s %-8s %-10s %s\n", "seq", "time(ns)", "event", "qpn", "arg0", "arg1");
	for (uint32_t s = first; s < count; s++) {
		struct xr_event_record ev;
		int e = xr_regio_read_event(r, s, &ev);
		if (e == -ENOENT)
			continue;   /* overwritten while we read */
		if (e)
			return 1;
		printf("%-8u %-16" PRIu64 " %-14s 0x%06x 0x%08x 0x%08x\n", s, ev.ts,
		       xr_event_name((enum xr_event_type)ev.type), ev.qpn, ev.arg0, ev.arg1);
	}
	return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Counters of congestion control and PFC: the --cc view shows them every
 * round. Chosen by name, so counters added to those families join. */
static bool is_cc_counter(enum xr_counter c)
{
	static const char *const prefix[] = { "cnp_", "ecn_", "dcqcn_", "pacer_", "pfc_", "pause_", "rx_drop_cnp" };
	const char *n = xr_counter_name(c);

	for (size_t i = 0; n && i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(n, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

/* pfc_tx_prio3 and the like: shown once non-zero. */
static bool is_per_prio(enum xr_counter c)
{
	const char *n = xr_counter_name(c);
	size_t l = n ? strlen(n) : 0;
	return l > 5 && !strncmp(n + l - 5, "prio", 4);
}

#define WATCH_MAX_QPS 32

struct watch_qp {
	uint32_t qpn;
	struct xr_qp_ctx prev;
	bool have;
};

/* QPN[,QPN..] for --qp: 1..32 QPNs of 24 bits. */
static int parse_qps(const char *s, struct watch_qp *q, unsigned *n)
{
	char buf[512];
	char *save = NULL;
	uint64_t v;

	if (strlen(s) >= sizeof(buf)) {
		fprintf(stderr, "%s: --qp '%s': too long\n", prog, s);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n == WATCH_MAX_QPS) {
			fprintf(stderr, "%s: --qp: at most %d QPs\n", prog, WATCH_MAX_QPS);
			return -EINVAL;
		}
		if (!cli_u64(prog, "qp", t, 0xFFFFFF, &v))
			return -EINVAL;
		q[(*n)++].qpn = (uint32_t)v;
	}
	if (!*n) {
		fprintf(stderr, "%s: --qp '%s': no QP number\n", prog, s);
		return -EINVAL;
	}
	return 0;
}

static void watch_qp(struct xr_regio *r, struct watch_qp *w, double interval)
{
	struct xr_qp_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = xr_regio_qp_read(r, w->qpn, &c);
	if (rc) {
		uint32_t st = 0;
		xr_regio_read(r, XR_REG_QP_CMD_STATUS, &st);
		printf("qp 0x%06x  READ: %s (status %u)\n", w->qpn, rc > 0 ? xr_axi_resp_name(rc) : strerror(-rc), st);
		w->have = false;
		return;
	}
	printf("qp 0x%06x  rate %7u Mb/s%s target %7u Mb/s alpha %4u/1024  ce %10u cnp_sent %8u cnp_rcvd %8u",
	       w->qpn, c.cc_rate, c.cc_rate ? "" : " (unpaced)", c.cc_target, c.cc_alpha, c.ce_rcvd, c.cnp_sent,
	       c.cnp_rcvd);
	if (w->have)
		printf("  (+%.1f ce/s, +%.1f cnp/s)", (double)(uint32_t)(c.ce_rcvd - w->prev.ce_rcvd) / interval,
		       (double)(uint32_t)(c.cnp_rcvd + c.cnp_sent - w->prev.cnp_rcvd - w->prev.cnp_sent) / interval);
	if (c.rate_limit)
		printf("  cap %u Mb/s", c.rate_limit);
	printf("\n");
	w->prev = c;
	w->have = true;
}

static int cmd_watch(struct xr_regio *r, double interval, uint64_t rounds, bool cc, const char *qps)
{
	uint64_t prev[XR_CNT_COUNT], cur;
	struct timespec ts = { (time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9) };
	struct watch_qp wq[WATCH_MAX_QPS];
	unsigned nq = 0;

	memset(wq, 0, sizeof(wq));
	if (qps && parse_qps(qps, wq, &nq))
		return 2;
	for (unsigned c = 0; c < XR_CNT_COUNT; c++)
		if (xr_regio_read_counter(r, (enum xr_counter)c, &prev[c]))
			return 1;
	signal(SIGINT, on_signal);
	for (uint64_t round = 0; !stop && (rounds == 0 || round < rounds); round++) {
		bool any = false;
		nanosleep(&ts, NULL);
		printf("-- %.1f s --\n", (double)(round + 1) * interval);
		for (unsigned c = 0; c < XR_CNT_COUNT; c++) {
			bool show;
			if (xr_regio_read_counter(r, (enum xr_counter)c, &cur))
				return 1;
			show = cur != prev[c];
			if (cc && is_cc_counter((enum xr_counter)c) && (cur || !is_per_prio((enum xr_counter)c)))
				show = true;
			if (show) {
				printf("%-26s %14" PRIu64 " %14.1f/s\n", xr_counter_name((enum xr_counter)c), cur,
				       (double)(cur - prev[c]) / interval);
				any = true;
			}
			prev[c] = cur;
		}
		if (cc) {
			uint32_t st;
			if (!xr_regio_read(r, XR_REG_PFC_STATUS, &st))
				printf("%-26s 0x%08x paused=0x%02x xoff_sent=0x%02x stormed=0x%02x\n", "PFC_STATUS", st,
				       st & 0xFF, (st >> 8) & 0xFF, (st >> 16) & 0xFF);
		}
		for (unsigned i = 0; i < nq; i++)
			watch_qp(r, &wq[i], interval);
		if (!any && !cc && !nq)
			printf("(no counter changed)\n");
		if (fflush(stdout) || ferror(stdout))
			return 1;   /* nobody reads this any more (main says why) */
	}
	return 0;
}

static int cmd_check(struct xr_regio *r, const char *path, bool config_only)
{
	FILE *f = fopen(path, "r");
	char line[256];
	unsigned lineno = 0, checked = 0, diffs = 0;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[96];
		unsigned off, want, got;
		const struct xr_reg_desc *d;
		int rc;
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%x %95s %x", &off, name, &want) != 3) {
			fprintf(stderr, "%s: %s:%u: not 'OFFSET NAME VALUE'\n", prog, path, lineno);
			fclose(f);
			return 2;
		}
		d = xr_reg_by_offset(off);
		if (!d || strcasecmp(d->name, name)) {
			printf("- 0x%04x %s: not in this register map (map changed?)\n", off, name);
			diffs++;
			continue;
		}
		if (config_only && (is_counter(d) || is_evlog(d)))
			continue;
		rc = xr_regio_read(r, off, &got);
		checked++;
		if (rc) {
			printf("! 0x%04x %-24s read failed: %s\n", off, name, xr_axi_resp_name(rc));
			diffs++;
		} else if (got != want) {
			printf("- 0x%04x %-24s 0x%08x (golden)\n+ 0x%04x %-24s 0x%08x (read)\n", off, name, want, off, name, got);
			diffs++;
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		fclose(f);
		return 2;
	}
	fclose(f);
	if (!checked && !diffs) {
		/* An empty file would otherwise pass: "OK: 0 registers match". */
		fprintf(stderr, "%s: %s: no register to check (not a golden file from dump --golden?)\n", prog, path);
		return 2;
	}
	if (diffs) {
		printf("FAIL: %u of %u registers differ from %s\n", diffs, checked, path);
		return 1;
	}
	printf("OK: %u registers match %s\n", checked, path);
	return 0;
}

static int cmd_serve(const char *path, bool link_up)
{
	int rc;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (link_up)
		xr_engine_set_link_up(local_engine, true);
	rc = xr_engine_serve_debug(local_engine, path);
	if (rc) {
		fprintf(stderr, "%s: cannot serve on %s: %s\n", prog, path, strerror(-rc));
		return 2;
	}
	printf("serving registers on %s\n", path);
	fflush(stdout);
	while (!stop)
		pause();
	xr_engine_stop_debug(local_engine);
	return 0;
}

/* The program; main then checks that stdout took all it wrote. */
static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "attach", required_argument, 0, 'a' }, { "mmio", required_argument, 0, 'm' },
		{ "golden", no_argument, 0, 'g' }, { "config-only", no_argument, 0, 'c' },
		{ "interval", required_argument, 0, 'i' }, { "count", required_argument, 0, 'n' },
		{ "link-up", no_argument, 0, 'l' }, { "help", no_argument, 0, 'h' },
		{ "cc", no_argument, 0, 'C' }, { "qp", required_argument, 0, 'Q' }, { 0, 0, 0, 0 },
	};
	const char *attach = NULL, *mmio = NULL, *cmd, *qps = NULL;
	bool golden = false, config_only = false, link_up = false, cc = false;
	double interval = 1.0;
	uint64_t rounds = 0;
	struct xr_regio *r;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+a:m:hi:n:", opts, NULL)) != -1) {
		switch (c) {
		case 'a': attach = optarg; break;
		case 'm': mmio = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	/* Options after the command: parse the rest as a fresh argument list
	 * (argv[0] stands in for the program name), so they may come anywhere. */
	argc -= optind;
	argv += optind;
	optind = 0;
	while ((c = getopt_long(argc, argv, "gci:n:l", opts, NULL)) != -1) {
		switch (c) {
		case 'g': golden = true; break;
		case 'c': config_only = true; break;
		case 'l': link_up = true; break;
		case 'C': cc = true; break;
		case 'Q': qps = optarg; break;
		case 'i': {
			char *end;
			interval = strtod(optarg, &end);
			/* Written so NaN fails it too (NaN compares false). */
			if (end == optarg || *end || !(interval >= 0.01 && interval <= 3600)) {
				fprintf(stderr, "%s: bad --interval '%s' (0.01..3600 seconds)\n", prog, optarg);
				return 2;
			}
			break;
		}
		case 'n': if (!cli_u64(prog, "count", optarg, UINT32_MAX, &rounds)) return 2; break;
		default: usage(stderr); return 2;
		}
	}
	if ((cc || qps) && strcmp(cmd, "watch")) {
		fprintf(stderr, "%s: --cc and --qp are options of watch\n", prog);
		return 2;
	}
	if (!strcmp(cmd, "doc"))
		return xr_regmap_write_doc(stdout) ? 1 : 0;
	if (!strcmp(cmd, "serve") && (attach || mmio)) {
		fprintf(stderr, "%s: serve runs its own engine; drop --attach/--mmio\n", prog);
		return 2;
	}
	r = open_regs(attach, mmio);
	if (!r)
		return 2;
	if (!strcmp(cmd, "dump") && optind == argc)
		rc = cmd_dump(r, golden);
	else if (!strcmp(cmd, "read") && optind == argc - 1)
		rc = cmd_read(r, argv[optind]);
	else if (!strcmp(cmd, "write") && optind == argc - 2)
		rc = cmd_write(r, argv[optind], argv[optind + 1]);
	else if (!strcmp(cmd, "log") && optind == argc)
		rc = cmd_log(r);
	else if (!strcmp(cmd, "watch") && optind == argc)
		rc = cmd_watch(r, interval, rounds, cc, qps);
	else if (!strcmp(cmd, "check") && optind == argc - 1)
		rc = cmd_check(r, argv[optind], config_only);
	else if (!strcmp(cmd, "serve") && optind == argc - 1)
		rc = cmd_serve(argv[optind], link_up);
	else {
		fprintf(stderr, "%s: unknown command or wrong arguments: %s\n", prog, cmd);
		usage(stderr);
		rc = 2;
	}
	xr_regio_close(r);
	xr_engine_destroy(local_engine);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	if (!cli_stdout_ok(prog) && !rc)
		rc = 1;
	return rc;
}
