/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf congestion's command line: the usage text, the options with
 * their defaults, and the checks that refuse a bad combination with a
 * message naming it (exit status 2).
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "perf.h"
#include "perf_congestion.h"
#include "xroce/regmap.h"

static void usage(FILE *o)
{
	fprintf(o,
"Usage: xroce-perf congestion [options]      (also: xroce-perf -m congestion [options])\n"
"An N-to-1 incast through the switch model, in this process: N sender engines and\n"
"one receiver on ports of an in-process fabric, the receiver's port the bottleneck\n"
"(tail-drop queue, RED ECN marking). Every QP streams RDMA WRITEs (or SENDs). One\n"
"thread steps the fabric's clock and every engine: times are simulated fabric time,\n"
"and a run is deterministic for its options and --seed.\n"
"\n"
"  -N, --senders=N          sender engines, 1..%d (2)\n"
"  -q, --qps=Q              QPs per sender, 1..%d (1)\n"
"  -b, --bottleneck=RATE    the receiver's port, bits/s: 10G, 2.5G, 100M (10G)\n"
"  -e, --edge=RATE          the senders' ports and NICs (the bottleneck's rate)\n"
"  -s, --size=B             message size, 1..1M bytes (16384)\n"
"  -m, --mtu=MTU            path MTU 256..4096 (1024)\n"
"  -t, --tx-depth=N         messages in flight per QP, 1..64 (8)\n"
"  -D, --duration=S         fabric time to run, seconds (0.02); a unit may follow: 20ms, 500us\n"
"  -i, --interval=MS        report every MS ms of fabric time (a tenth of the run)\n"
"      --queue=BYTES        the bottleneck's egress queue limit, K/M binary (128K)\n"
"      --ecn=KMIN,KMAX,PMAX RED marking at the bottleneck, bytes and 0..1 (20K,80K,0.2)\n"
"      --no-ecn             no marking; the engines send Not-ECT\n"
"      --no-dcqcn           CC_CTRL dcqcn_enable cleared on the senders: CNPs arrive,\n"
"                           rates stay at line rate\n"
"      --pfc                priority --prio lossless: the switch sends XOFF/XON toward\n"
"                           the senders from their ingress buffer use (--xoff BYTES, 32K)\n"
"      --prio=P             the data's priority 0..7 (DSCP P*8; 3)\n"
"  -p, --pfc-prio=PRIO      inject PFC XOFF for PRIO toward every sender ...\n"
"  -d, --pfc-ms=MS          ... for MS ms of fabric time (refreshed, then XON)\n"
"      --pfc-at=MS          ... starting at MS ms (a third of the run)\n"
"      --mac-pause          the senders' MAC models honour PFC/PAUSE (default: the\n"
"                           frames are handed to the engines, whose PFC_CTRL rx_enable\n"
"                           bit for the priority is set)\n"
"      --send               SENDs instead of RDMA WRITEs\n"
"      --set=REG=VALUE      write an engine register by name on every engine after\n"
"                           setup (e.g. DCQCN_RATE_AI=80, CC_CNP_INTERVAL_US=4); repeatable\n"
"      --qp-timeout=N       local ACK timeout exponent, 4.096 us * 2^N of fabric time (10)\n"
"      --seed=N             the switch's ECN draws (1)\n"
"      --step-ns=NS         the clock's step, 50..10000 ns (250)\n"
"      --wall-limit=S       give up after S seconds of wall time, 0 = none (300)\n"
"      --regs-socket=PREFIX serve each engine's registers on PREFIX-recv, PREFIX-s0 ..\n"
"                           (xroce-regs --attach PREFIX-s0 watch --cc --qp 0x11)\n"
"      --no-per-qp          leave out the per-QP lines\n"
"      --fabric-stats       every switch port's counters at the end\n"
"  -h, --help\n"
"Per interval: goodput (ACKed payload), the bottleneck's utilisation (wire bytes out\n"
"over its rate), queue mean/p99/max, drops, retransmissions, ECN marks, CNPs sent\n"
"(receiver) and received (senders), PFC frames (switch and injected) and Jain's\n"
"index; per QP its goodput and DCQCN state read through the register window (QP\n"
"READ, then QP_CC_RATE/TARGET/ALPHA). At the end totals and a RESULT line.\n"
"Exit status: 0 done, 1 the run could not be set up, 2 bad usage.\n",
		CG_MAX_SENDERS, CG_MAX_QPS);
}

static bool bad(const char *opt, const char *arg, const char *what)
{
	fprintf(stderr, "%s congestion: --%s '%s': %s (see --help)\n", prog, opt, arg, what);
	return false;
}

static bool rate_arg(const char *opt, const char *s, uint64_t *out)
{
	double v;

	if (!cli_scaled(s, 1000, &v) || v < 1e6 || v > 4e11)
		return bad(opt, s, "not a rate from 1M to 400G bits/s (e.g. 10G, 2.5G, 100M)");
	*out = (uint64_t)v;
	return true;
}

static bool bytes_arg(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint32_t *out)
{
	double v;

	if (!cli_scaled(s, 1024, &v) || v != floor(v) || v < (double)lo || v > (double)hi) {
		char what[96];
		snprintf(what, sizeof(what), "not a byte count %llu..%llu (K/M binary)", (unsigned long long)lo,
			 (unsigned long long)hi);
		return bad(opt, s, what);
	}
	*out = (uint32_t)v;
	return true;
}

static bool double_arg(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = s ? strtod(s, &end) : 0;
	if (!s || end == s || *end || errno || !(v >= lo && v <= hi)) {
		char what[96];
		snprintf(what, sizeof(what), "not a number %g..%g", lo, hi);
		return bad(opt, s ? s : "", what);
	}
	*out = v;
	return true;
}

/* Seconds, or a value with a unit: s, ms, us, ns. */
static bool time_arg(const char *opt, const char *s, double *ms)
{
	char *end;
	double v, k = 1000;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && !errno) {
		if (!strcmp(end, "ms"))
			k = 1, end += 2;
		else if (!strcmp(end, "us"))
			k = 1e-3, end += 2;
		else if (!strcmp(end, "ns"))
			k = 1e-6, end += 2;
		else if (!strcmp(end, "s"))
			end++;
	}
	if (end == s || errno || *end || !(v > 0) || v * k > 60000)
		return bad(opt, s, "not a time above 0 up to 60 s (seconds, or with a unit: 20ms, 500us)");
	*ms = v * k;
	return true;
}

static bool set_arg(const char *s, struct cg_cfg *c)
{
	char name[64];
	const char *eq = strchr(s, '=');
	const struct xr_reg_desc *d;
	uint64_t v;

	if (c->nsets == CG_MAX_SETS)
		return bad("set", s, "too many --set options (16)");
	if (!eq || eq == s || (size_t)(eq - s) >= sizeof(name))
		return bad("set", s, "not REG=VALUE");
	snprintf(name, sizeof(name), "%.*s", (int)(eq - s), s);
	d = xr_reg_by_name(name);
	if (!d || d->access != XR_RW || d->count > 1)
		return bad("set", s, "no writable engine register of that name (see xroce-regs dump)");
	if (!cli_u64(prog, "set", eq + 1, UINT32_MAX, &v))
		return false;
	c->sets[c->nsets].reg = d->offset;
	c->sets[c->nsets++].value = (uint32_t)v;
	return true;
}

/* v < lo, for the NUM macro (a literal 0 bound would warn there). */
static bool below(uint64_t v, uint64_t lo)
{
	return v < lo;
}

enum { O_QUEUE = 256, O_ECN, O_NO_ECN, O_NO_DCQCN, O_PFC, O_XOFF, O_PRIO, O_PFC_AT, O_MAC_PAUSE, O_SEND,
       O_SET, O_QP_TIMEOUT, O_SEED, O_STEP, O_WALL, O_NO_PER_QP, O_FABRIC_STATS, O_REGS };

int cg_parse(int argc, char **argv, struct cg_cfg *c)
{
	static const struct option opts[] = {
		{ "senders", required_argument, 0, 'N' }, { "qps", required_argument, 0, 'q' },
		{ "qp", required_argument, 0, 'q' },
		{ "bottleneck", required_argument, 0, 'b' }, { "edge", required_argument, 0, 'e' },
		{ "size", required_argument, 0, 's' }, { "mtu", required_argument, 0, 'm' },
		{ "tx-depth", required_argument, 0, 't' }, { "duration", required_argument, 0, 'D' },
		{ "interval", required_argument, 0, 'i' }, { "queue", required_argument, 0, O_QUEUE },
		{ "ecn", required_argument, 0, O_ECN }, { "no-ecn", no_argument, 0, O_NO_ECN },
		{ "no-dcqcn", no_argument, 0, O_NO_DCQCN }, { "pfc", no_argument, 0, O_PFC },
		{ "xoff", required_argument, 0, O_XOFF }, { "prio", required_argument, 0, O_PRIO },
		{ "pfc-prio", required_argument, 0, 'p' }, { "pfc-ms", required_argument, 0, 'd' },
		{ "pfc-at", required_argument, 0, O_PFC_AT }, { "mac-pause", no_argument, 0, O_MAC_PAUSE },
		{ "send", no_argument, 0, O_SEND }, { "set", required_argument, 0, O_SET },
		{ "qp-timeout", required_argument, 0, O_QP_TIMEOUT }, { "seed", required_argument, 0, O_SEED },
		{ "step-ns", required_argument, 0, O_STEP }, { "wall-limit", required_argument, 0, O_WALL },
		{ "no-per-qp", no_argument, 0, O_NO_PER_QP }, { "fabric-stats", no_argument, 0, O_FABRIC_STATS },
		{ "regs-socket", required_argument, 0, O_REGS },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	bool edge_set = false, interval_set = false, at_set = false, xoff_set = false, ecn_set = false;
	uint64_t v;
	uint32_t b;
	int ch;

	*c = (struct cg_cfg){ .senders = 2, .qps = 1, .bottleneck_bps = 10000000000ull, .size = 16384, .mtu = 1024,
			      .depth = 8, .queue = 512 * 1024, .duration_ms = 20, .ecn = true, .kmin = 20 * 1024,
			      .kmax = 80 * 1024, .pmax = 0.2, .dcqcn = true, .per_qp = true, .xoff = 32 * 1024,
			      .prio = 3, .inject_prio = -1, .qp_timeout = 10, .seed = 1, .step_ns = 250,
			      .wall_limit_s = 300, .out = stdout };
	c->inject_ms = -1;
	optind = 1;
	opterr = 0;
#define NUM(opt, lo, max, dst) do { \
		if (!cli_u64(prog, opt, optarg, (max), &v)) return 2; \
		if (below(v, (lo))) { fprintf(stderr, "%s congestion: --%s must be at least %d\n", prog, opt, (int)(lo)); return 2; } \
		(dst) = v; } while (0)
	while ((ch = getopt_long(argc, argv, "N:q:b:e:s:m:t:D:i:p:d:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'N': NUM("senders", 1, CG_MAX_SENDERS, c->senders); break;
		case 'q': NUM("qps", 1, CG_MAX_QPS, c->qps); break;
		case 'b': if (!rate_arg("bottleneck", optarg, &c->bottleneck_bps)) return 2; break;
		case 'e': if (!rate_arg("edge", optarg, &c->edge_bps)) return 2; edge_set = true; break;
		case 's': if (!bytes_arg("size", optarg, 1, 1u << 20, &c->size)) return 2; break;
		case 'm':
			NUM("mtu", 256, 4096, c->mtu);
			if (!mtu_enum_of((int)c->mtu)) {
				fprintf(stderr, "%s congestion: --mtu must be 256, 512, 1024, 2048 or 4096\n", prog);
				return 2;
			}
			break;
		case 't': NUM("tx-depth", 1, 64, c->depth); break;
		case 'D': if (!time_arg("duration", optarg, &c->duration_ms)) return 2; break;
		case 'i': if (!double_arg("interval", optarg, 0.01, 60000, &c->interval_ms)) return 2; interval_set = true; break;
		case O_QUEUE: if (!bytes_arg("queue", optarg, 2048, 64u << 20, &c->queue)) return 2; break;
		case O_ECN: {
			char k1[32], k2[32], extra;
			double pmax;
			if (strlen(optarg) > 60 || sscanf(optarg, "%31[^,],%31[^,],%lf%c", k1, k2, &pmax, &extra) != 3)
				return bad("ecn", optarg, "not KMIN,KMAX,PMAX (e.g. 20K,80K,0.2)"), 2;
			if (!bytes_arg("ecn", k1, 0, 64u << 20, &c->kmin) || !bytes_arg("ecn", k2, 0, 64u << 20, &c->kmax))
				return 2;
			if (!(pmax >= 0 && pmax <= 1))
				return bad("ecn", optarg, "PMAX is not within 0..1"), 2;
			if (c->kmax < c->kmin)
				return bad("ecn", optarg, "KMAX is below KMIN"), 2;
			c->pmax = pmax;
			ecn_set = true;
			break;
		}
		case O_NO_ECN: c->ecn = false; break;
		case O_NO_DCQCN: c->dcqcn = false; break;
		case O_PFC: c->pfc = true; break;
		case O_XOFF: if (!bytes_arg("xoff", optarg, 2048, 16u << 20, &c->xoff)) return 2; xoff_set = true; break;
		case O_PRIO: NUM("prio", 0, 7, c->prio); break;
		case 'p': NUM("pfc-prio", 0, 7, b); c->inject_prio = (int)b; break;
		case 'd': if (!double_arg("pfc-ms", optarg, 0.001, 60000, &c->inject_ms)) return 2; break;
		case O_PFC_AT: if (!double_arg("pfc-at", optarg, 0, 60000, &c->inject_at_ms)) return 2; at_set = true; break;
		case O_MAC_PAUSE: c->mac_pause = true; break;
		case O_SEND: c->send = true; break;
		case O_SET: if (!set_arg(optarg, c)) return 2; break;
		case O_QP_TIMEOUT: NUM("qp-timeout", 1, 31, c->qp_timeout); break;
		case O_SEED: NUM("seed", 0, UINT64_MAX, c->seed); break;
		case O_STEP: NUM("step-ns", 50, 10000, c->step_ns); break;
		case O_WALL: if (!double_arg("wall-limit", optarg, 0, 86400, &c->wall_limit_s)) return 2; break;
		case O_NO_PER_QP: c->per_qp = false; break;
		case O_FABRIC_STATS: c->fabric_stats = true; break;
		case O_REGS: c->regs_prefix = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			if (optopt && optopt < 256)
				fprintf(stderr, "%s congestion: option -%c: unknown or missing its argument (see --help)\n", prog,
					optopt);
			else
				fprintf(stderr, "%s congestion: '%s': unknown option or missing its argument (see --help)\n", prog,
					argv[optind - 1]);
			return 2;
		}
	}
#undef NUM
	if (optind < argc) {
		fprintf(stderr, "%s congestion: unexpected argument '%s' (the run is all in this process)\n", prog,
			argv[optind]);
		return 2;
	}
	if (!edge_set)
		c->edge_bps = c->bottleneck_bps;
	if (!interval_set)
		c->interval_ms = c->duration_ms / 10;
	if (c->interval_ms > c->duration_ms) {
		fprintf(stderr, "%s congestion: --interval %.3f ms is longer than the run (%.3f ms)\n", prog, c->interval_ms,
			c->duration_ms);
		return 2;
	}
	if (c->duration_ms / c->interval_ms > 100000) {
		fprintf(stderr, "%s congestion: --interval: more than 100000 reports in the run\n", prog);
		return 2;
	}
	if (c->interval_ms * 1e6 < (double)c->step_ns) {
		fprintf(stderr, "%s congestion: --interval is shorter than the clock's step (%" PRIu64 " ns)\n", prog,
			c->step_ns);
		return 2;
	}
	if (!c->ecn && ecn_set) {
		fprintf(stderr, "%s congestion: --ecn and --no-ecn together\n", prog);
		return 2;
	}
	if (xoff_set && !c->pfc) {
		fprintf(stderr, "%s congestion: --xoff needs --pfc\n", prog);
		return 2;
	}
	if ((c->inject_prio >= 0) != (c->inject_ms > 0)) {
		fprintf(stderr, "%s congestion: PFC injection needs both -p PRIO and -d MS\n", prog);
		return 2;
	}
	if (at_set && c->inject_prio < 0) {
		fprintf(stderr, "%s congestion: --pfc-at needs -p PRIO -d MS\n", prog);
		return 2;
	}
	if (c->mac_pause && c->inject_prio < 0 && !c->pfc) {
		fprintf(stderr, "%s congestion: --mac-pause without --pfc or -p PRIO -d MS has nothing to honour\n", prog);
		return 2;
	}
	if (c->inject_prio >= 0) {
		if (!at_set)
			c->inject_at_ms = c->duration_ms / 3;
		if (c->inject_at_ms >= c->duration_ms) {
			fprintf(stderr, "%s congestion: --pfc-at %.3f ms is not within the run (%.3f ms)\n", prog,
				c->inject_at_ms, c->duration_ms);
			return 2;
		}
	}
	/* sun_path holds 108 bytes: PREFIX-recv, PREFIX-s15 and a NUL. */
	if (c->regs_prefix && strlen(c->regs_prefix) + sizeof("-recv") > 108) {
		fprintf(stderr, "%s congestion: --regs-socket '%s': path too long for a UNIX socket\n", prog, c->regs_prefix);
		return 2;
	}
	if (c->send && c->size > 1u << 20) {
		fprintf(stderr, "%s congestion: --size: SENDs up to 1 MiB\n", prog);
		return 2;
	}
	return -1;
}

int run_congestion(int argc, char **argv)
{
	struct cg_cfg c;
	int rc = cg_parse(argc, argv, &c);

	return rc >= 0 ? rc : cg_run(&c);
}
