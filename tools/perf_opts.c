/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's command line: the usage text, the test names, and perftest's
 * options (with their defaults per test) plus xroce's own.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perf.h"

/* ---- command line ---- */

static void usage(FILE *o)
{
	fprintf(o,
"Usage: xroce-perf TEST [options] [server-address]\n"
"       xroce-perf pingpong [options] [server-address]   (ibv_rc_pingpong compatible: its\n"
"           flags -p -d -i -s -m -r -n -l -g -c; -e -o -O -P -t -j -N are refused by name)\n"
"       xroce-perf congestion [options]   (an N-to-1 incast through the switch model in\n"
"           this process, DCQCN/ECN/PFC per interval; xroce-perf congestion --help)\n"
"TEST: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat\n"
"Without a server address this is the server; with one, the client (as perftest).\n"
"With --link mem both ends run in this process and no address is needed.\n"
"\n"
"perftest options (same meanings and defaults):\n"
"  -s, --size=SIZE          message size (bw 65536, lat 2)\n"
"  -n, --iters=N            iterations (bw 5000, lat 1000)\n"
"  -D, --duration=SEC       run for SEC seconds (bw), a line per second\n"
"  -a, --all                sizes 2 .. 2^23\n"
"  -q, --qp=N               number of QPs (bw)\n"
"  -m, --mtu=MTU            path MTU 256..4096 (default: from the link)\n"
"  -t, --tx-depth=N         send queue depth (bw 128, lat 1)\n"
"  -l, --post_list=N        WRs per post call, one doorbell each (bw; 1)\n"
"  -Q, --cq-mod=N           a signaled WR (a completion) every N (bw; 100, with -l the list's\n"
"                           length; timed runs signal every WR)\n"
"  -r, --rx-depth=N         receive queue depth (512)\n"
"  -p, --port=PORT          TCP port of the exchange (18515)\n"
"  -d, --ib-dev=NAME        device name (shown; xroce has one device per link)\n"
"  -x, --gid-index=N        GID index (shown; the link's address is the GID)\n"
"  -I, --inline_size=N      largest inline message (write/send)\n"
"  -u, --qp-timeout=N       local ACK timeout exponent (14)\n"
"  -b, --bidirectional      both ends send (write/read/atomic bw)\n"
"  -F, --CPU-freq           accepted (xroce does not read CPU frequency)\n"
"  -c, --connection=RC|UC|UD  connection type (RC; UC: write and send tests,\n"
"                           UD: send tests, messages up to the MTU)\n"
"      --use-srq            the receivers post into one shared receive queue (send tests;\n"
"                           perftest 6.06's spelling, --use_srq too)\n"
"  -g, --mcg                multicast (send tests, UD): the receivers' QPs join a group and\n"
"                           the sender sends to it, at QPN 0xFFFFFF\n"
"  -M, --MGID=GID           the group: perftest's 16 bytes (0:0:...:255:255:239:1:1:1) or an\n"
"                           address (239.1.1.1, ff0e::1); default 239.1.1.1 on an IPv4 link\n"
"                           (ff0e::c985:1 on IPv6), the client's own (send_lat) one more\n"
"      --report_gbits       bandwidth in Gb/sec\n"
"      --run_infinitely     run until interrupted, a line per second\n"
"      --out_json           JSON results to perftest_out.json (--out_json_file=FILE)\n"
"xroce options:\n"
"      --link=mem|udp|raw|xdp|host   the link (default udp; mem: both ends here;\n"
"                           host: processes of this host through shared memory;\n"
"                           xdp: AF_XDP on --ifname, owns its address as raw does)\n"
"      --bind=ADDR          local IPv4 or IPv6 address (udp, raw, xdp, host)\n"
"      --ifname=IF          interface (raw, xdp)   --vlan=VID --pcp=P (raw)\n"
"      --strict-icrc        udp: drop frames whose ICRC matched only with an IPv4 ID\n"
"                           recovered from it (16 of 32 bits checked)\n"
"      --raw-ip-id          udp, IPv4: read the real IPv4 ID (raw socket, CAP_NET_RAW)\n"
"      --no-host-path       udp: reach xroce peers on this host through the kernel too\n"
"                           (default: through shared memory, as --link host)\n"
"      --fault-drop=P --fault-reorder=P --fault-seed=N\n"
"                           inject loss/reordering on this end's sends (P: 0..1)\n"
"      --retry7-forever     retry_cnt 7 (what perftest asks for) retries without end,\n"
"                           as rxe reads it (default: seven retries, as the IBTA)\n"
"      --verify             check every payload end to end\n"
"      --counters           print the engine's counters (and the link's paths) after the run\n"
"      --pcap=FILE          record the first --pcap-frames (100) frames of the link\n"
"      --no-gather          mem: copy every payload into its frame (default: payloads\n"
"                           of 1 KiB or more leave by reference, a gather send)\n"
"      --progress=inline|thread   who runs the engine (default inline)\n"
"  -h, --help\n"
"Exit status: 0 done, 1 failed, 2 bad usage, 3 pingpong done but the peer never\n"
"acknowledged the last message (ibv_rc_pingpong exits without a closing word).\n");
}

static bool parse_test(struct cfg *c, const char *t)
{
	static const struct { const char *name; enum verb v; bool lat; } tests[] = {
		{ "write_bw", V_WRITE, false }, { "read_bw", V_READ, false }, { "send_bw", V_SEND, false },
		{ "atomic_bw", V_ATOMIC, false }, { "write_lat", V_WRITE, true }, { "read_lat", V_READ, true },
		{ "send_lat", V_SEND, true }, { "atomic_lat", V_ATOMIC, true },
	};
	if (!strcmp(t, "pingpong")) {
		c->pingpong = true;
		c->verb = V_SEND;
		return true;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(t, tests[i].name)) {
			c->verb = tests[i].v;
			c->lat = tests[i].lat;
			return true;
		}
	return false;
}

enum { O_GBITS = 256, O_INF, O_JSON, O_JSONF, O_LINK, O_BIND, O_IFNAME, O_VLAN, O_PCP, O_VERIFY, O_COUNTERS,
       O_PCAP, O_PCAPN, O_PROGRESS, O_STRICT_ICRC, O_RAW_IP_ID, O_RETRY7,
       O_NO_HOST, O_FDROP, O_FREORDER, O_FSEED, O_SRQ, O_NO_GATHER };

/* ibv_rc_pingpong's own flags: 0 taken, 1 not one of them (the common
 * parser goes on), 2 refused (the message names the flag). */
static int pingpong_flag(struct cfg *c, int ch)
{
	uint64_t v;

	switch (ch) {
	case 'g':
		if (!cli_u64(prog, "gid-idx", optarg, 255, &v))
			return 2;
		if (v) {
			fprintf(stderr, "%s: -g %s: the device has one GID, index 0\n", prog, optarg);
			return 2;
		}
		c->gid_index = 0;
		return 0;
	case 'i':
		if (!cli_u64(prog, "ib-port", optarg, 255, &v))
			return 2;
		if (v != 1) {
			fprintf(stderr, "%s: -i %s: the device has one port, 1\n", prog, optarg);
			return 2;
		}
		return 0;
	case 'l':
		if (!cli_u64(prog, "sl", optarg, 15, &v))
			return 2;
		if (v) {
			fprintf(stderr, "%s: -l %s: service levels other than 0 are not supported\n", prog, optarg);
			return 2;
		}
		return 0;
	case 'c':
		c->verify = true;   /* ibv_rc_pingpong's -c: check the received data */
		return 0;
	case 'e': fprintf(stderr, "%s: -e (completion events) is not supported by pingpong yet\n", prog); return 2;
	case 'o': fprintf(stderr, "%s: -o (on-demand paging) is not supported\n", prog); return 2;
	case 'O': fprintf(stderr, "%s: -O (implicit on-demand paging) is not supported\n", prog); return 2;
	case 'P': fprintf(stderr, "%s: -P (ODP prefetch) is not supported\n", prog); return 2;
	case 't': fprintf(stderr, "%s: -t (completion timestamps) is not supported\n", prog); return 2;
	case 'j': fprintf(stderr, "%s: -j (device memory) is not supported\n", prog); return 2;
	case 'N': fprintf(stderr, "%s: -N (the new post send API) is not supported\n", prog); return 2;
	default: return 1;
	}
}

/* Reads the test and its options into *c (and the link's kind into
 * *link_kind). Returns -1 to go on, else the exit status: 0 after --help,
 * 2 on bad usage. */
int parse_args(int argc, char **argv, struct cfg *c, const char **link_kind)
{
	static const struct option opts[] = {
		{ "size", required_argument, 0, 's' }, { "iters", required_argument, 0, 'n' },
		{ "duration", required_argument, 0, 'D' }, { "all", no_argument, 0, 'a' },
		{ "qp", required_argument, 0, 'q' }, { "mtu", required_argument, 0, 'm' },
		{ "tx-depth", required_argument, 0, 't' }, { "rx-depth", required_argument, 0, 'r' },
		{ "post_list", required_argument, 0, 'l' }, { "cq-mod", required_argument, 0, 'Q' },
		{ "port", required_argument, 0, 'p' }, { "ib-dev", required_argument, 0, 'd' },
		{ "gid-index", required_argument, 0, 'x' }, { "inline_size", required_argument, 0, 'I' },
		{ "qp-timeout", required_argument, 0, 'u' }, { "bidirectional", no_argument, 0, 'b' },
		{ "CPU-freq", no_argument, 0, 'F' }, { "help", no_argument, 0, 'h' },
		{ "report_gbits", no_argument, 0, O_GBITS }, { "run_infinitely", no_argument, 0, O_INF },
		{ "out_json", no_argument, 0, O_JSON }, { "out_json_file", required_argument, 0, O_JSONF },
		{ "link", required_argument, 0, O_LINK }, { "bind", required_argument, 0, O_BIND },
		{ "ifname", required_argument, 0, O_IFNAME }, { "vlan", required_argument, 0, O_VLAN },
		{ "pcp", required_argument, 0, O_PCP }, { "verify", no_argument, 0, O_VERIFY },
		{ "counters", no_argument, 0, O_COUNTERS }, { "pcap", required_argument, 0, O_PCAP },
		{ "pcap-frames", required_argument, 0, O_PCAPN }, { "progress", required_argument, 0, O_PROGRESS },
		{ "strict-icrc", no_argument, 0, O_STRICT_ICRC }, { "raw-ip-id", no_argument, 0, O_RAW_IP_ID },
		{ "retry7-forever", no_argument, 0, O_RETRY7 }, { "no-host-path", no_argument, 0, O_NO_HOST },
		{ "no-gather", no_argument, 0, O_NO_GATHER },
		{ "fault-drop", required_argument, 0, O_FDROP }, { "fault-reorder", required_argument, 0, O_FREORDER },
		{ "fault-seed", required_argument, 0, O_FSEED },
		{ "connection", required_argument, 0, 'c' }, { "use-srq", no_argument, 0, O_SRQ }, { "use_srq", no_argument, 0, O_SRQ },
		{ "mcg", no_argument, 0, 'g' }, { "MGID", required_argument, 0, 'M' },
		{ 0, 0, 0, 0 },
	};
	bool size_set = false, iters_set = false, tx_set = false, inline_set = false, cq_mod_set = false;
	uint64_t v;
	int ch;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!parse_test(c, argv[1])) {
		fprintf(stderr, "%s: unknown test '%s'\n", prog, argv[1]);
		usage(stderr);
		return 2;
	}
	optind = 2;
#define NUM(opt, max, dst) do { if (!cli_u64(prog, opt, optarg, (max), &v)) return 2; (dst) = v; } while (0)
	/* pingpong takes ibv_rc_pingpong's short options, whose letters mean
	 * other things in perftest's tools. */
	while ((ch = getopt_long(argc, argv, c->pingpong ? "p:d:i:s:m:r:n:l:eg:oOPtcjNh" : "s:n:D:aq:m:t:l:Q:r:p:d:x:I:u:bFc:gM:h",
				 opts, NULL)) != -1) {
		if (c->pingpong) {
			int rc = pingpong_flag(c, ch);
			if (rc == 2)
				return 2;
			if (rc == 0)
				continue;
		}
		switch (ch) {
		case 's': NUM("size", 1u << 30, c->size); size_set = true; break;
		case 'n': NUM("iters", UINT32_MAX, c->iters); iters_set = true; break;
		case 'D': NUM("duration", 86400, c->duration); break;
		case 'a': c->all = true; break;
		case 'q': NUM("qp", MAX_QPS, c->qps); if (!c->qps) { fprintf(stderr, "%s: -q must be 1..%d\n", prog, MAX_QPS); return 2; } break;
		case 'm': NUM("mtu", 4096, c->mtu); if (!mtu_enum_of(c->mtu)) { fprintf(stderr, "%s: -m must be 256, 512, 1024, 2048 or 4096\n", prog); return 2; } break;
		case 't': NUM("tx-depth", 1u << 15, c->tx_depth); tx_set = true; break;
		case 'l': NUM("post_list", MAX_POST_LIST, c->post_list); break;
		case 'Q': NUM("cq-mod", 1u << 15, c->cq_mod); cq_mod_set = true; break;
		case 'r': NUM("rx-depth", 1u << 15, c->rx_depth); break;
		case 'p': NUM("port", 65535, c->port); break;
		case 'd': c->device = optarg; break;
		case 'x': NUM("gid-index", 255, c->gid_index); break;
		case 'I': NUM("inline_size", XR_WQE_MAX_INLINE, c->inline_size); inline_set = true; break;
		case 'u': NUM("qp-timeout", 31, c->qp_timeout); break;
		case 'b': c->bidir = true; break;
		case 'F': break;
		case 'c':
			if (!strcmp(optarg, "RC")) c->conn = XR_QPT_RC;
			else if (!strcmp(optarg, "UC")) c->conn = XR_QPT_UC;
			else if (!strcmp(optarg, "UD")) c->conn = XR_QPT_UD;
			else { fprintf(stderr, "%s: -c %s: xroce offers RC, UC and UD\n", prog, optarg); return 2; }
			break;
		case O_SRQ: c->use_srq = true; break;
		case 'g': c->mcg = true; c->conn = XR_QPT_UD; break;   /* perftest: -g makes it UD */
		case 'M': c->mgid = optarg; break;
		case 'h': usage(stdout); return 0;
		case O_GBITS: c->gbits = true; break;
		case O_INF: c->infinite = true; break;
		case O_JSON: c->json = true; break;
		case O_JSONF: c->json = true; c->json_file = optarg; break;
		case O_LINK: *link_kind = optarg; break;
		case O_BIND: c->link.addr = optarg; break;
		case O_IFNAME: c->link.ifname = optarg; break;
		case O_VLAN: NUM("vlan", 4094, c->link.vid); break;
		case O_PCP: NUM("pcp", 7, c->link.pcp); break;
		case O_VERIFY: c->verify = true; break;
		case O_COUNTERS: c->counters = true; break;
		case O_PCAP: c->pcap = optarg; break;
		case O_PCAPN: NUM("pcap-frames", UINT32_MAX, c->pcap_frames); break;
		case O_STRICT_ICRC: c->link.strict_icrc = true; break;
		case O_RAW_IP_ID: c->link.udp_raw_ip_id = true; break;
		case O_RETRY7: c->retry7_forever = true; break;
		case O_NO_HOST: c->link.udp_no_host_path = true; break;
		case O_NO_GATHER: c->no_gather = true; break;
		case O_FDROP:
		case O_FREORDER: {
			char *end;
			double p = strtod(optarg, &end);
			if (*end || end == optarg || !(p >= 0 && p <= 1)) {
				fprintf(stderr, "%s: --fault-%s is a probability 0..1\n", prog, ch == O_FDROP ? "drop" : "reorder");
				return 2;
			}
			*(ch == O_FDROP ? &c->fault.drop : &c->fault.reorder) = p;
			break;
		}
		case O_FSEED: NUM("fault-seed", UINT64_MAX, c->fault.seed); break;
		case O_PROGRESS:
			if (!strcmp(optarg, "inline")) c->progress = XR_PROGRESS_INLINE;
			else if (!strcmp(optarg, "thread")) c->progress = XR_PROGRESS_THREAD;
			else { fprintf(stderr, "%s: --progress is inline or thread\n", prog); return 2; }
			break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		c->server = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return 2;
	}
	c->mem = !strcmp(*link_kind, "mem");
	c->link.kind = *link_kind;
	if (!size_set)
		c->size = c->pingpong ? 4096 : c->lat ? 2 : 65536;
	if (!iters_set)
		c->iters = c->lat || c->pingpong ? 1000 : 5000;
	if (!tx_set)
		c->tx_depth = c->lat ? 1 : 128;
	if (!inline_set)
		c->inline_size = c->lat && (c->verb == V_WRITE || c->verb == V_SEND) ? XR_WQE_BODY(0) : 0;
	if (c->pingpong && !size_set)
		c->size = 4096;
	if (c->pingpong && c->rx_depth == 512)
		c->rx_depth = 500;
	if (c->verb == V_ATOMIC)
		c->size = 8;
	if (c->lat && (c->all || c->bidir || c->qps > 1 || c->duration || c->post_list || cq_mod_set)) {
		fprintf(stderr, "%s: -a, -b, -q, -D, -l and -Q are bandwidth options in xroce-perf\n", prog);
		return 2;
	}
	if (!c->tx_depth) {
		fprintf(stderr, "%s: -t must be 1 or more\n", prog);
		return 2;
	}
	if (!c->rx_depth) {   /* no receive posted: every SEND an RNR, found late */
		fprintf(stderr, "%s: -r must be 1 or more\n", prog);
		return 2;
	}
	if (cq_mod_set && !c->cq_mod) {
		fprintf(stderr, "%s: -Q must be 1 or more\n", prog);
		return 2;
	}
	if (!c->post_list)
		c->post_list = 1;
	/* As perftest: with a post list and no -Q, a completion per list. */
	if (!c->cq_mod)
		c->cq_mod = c->post_list > 1 ? c->post_list : CQ_MOD;
	if (c->cq_mod > c->tx_depth)
		c->cq_mod = c->tx_depth;   /* a full queue's last WR is signaled anyway: the header says so */
	if (c->post_list > c->tx_depth) {
		fprintf(stderr, "%s: -l %u is more than the send queue holds (-t %u)\n", prog, c->post_list, c->tx_depth);
		return 2;
	}
	if ((uint64_t)c->qps * (c->tx_depth + c->rx_depth) > (1u << 20)) {
		fprintf(stderr, "%s: -q x (-t + -r) is more than a completion queue holds (1048576)\n", prog);
		return 2;
	}
	if ((c->mcg || c->mgid) && (c->verb != V_SEND || c->bidir || !c->mcg)) {
		fprintf(stderr, "%s: -g/-M: multicast is for the send tests, one way, -M with -g (as perftest)\n", prog);
		return 2;
	}
	if (c->mgid && perf_mgid(c->mgid, NULL)) {
		fprintf(stderr, "%s: -M %s: a multicast group (16 bytes as perftest's, or 224.0.0.0/4, ff00::/8)\n",
			prog, c->mgid);
		return 2;
	}
	/* What perftest allows with each connection type. */
	if (c->conn == XR_QPT_UC && (c->verb == V_READ || c->verb == V_ATOMIC)) {
		fprintf(stderr, "%s: -c UC: RDMA READ and atomics need RC (UC offers SEND and WRITE)\n", prog);
		return 2;
	}
	if (c->conn == XR_QPT_UD && c->verb != V_SEND) {
		fprintf(stderr, "%s: -c UD: only the send tests (UD offers SEND only)\n", prog);
		return 2;
	}
	if (c->conn == XR_QPT_UC && c->verify && c->verb == V_WRITE && !c->lat) {
		fprintf(stderr, "%s: -c UC --verify: write_bw checks by reading back, which needs RC\n", prog);
		return 2;
	}
	if (c->use_srq && c->verb != V_SEND) {
		fprintf(stderr, "%s: --use-srq: only the send tests receive\n", prog);
		return 2;
	}
	if ((c->conn != XR_QPT_RC || c->use_srq) && c->pingpong) {
		fprintf(stderr, "%s: pingpong is ibv_rc_pingpong: RC, no SRQ\n", prog);
		return 2;
	}
	if (c->verb == V_SEND && c->size == 0 && c->lat) {
		fprintf(stderr, "%s: send_lat needs -s >= 1\n", prog);
		return 2;
	}
	return -1;
}

/* -M: perftest's form (16 byte values separated by ':', each as strtol
 * reads it) or an address; 0 when it names a group (stored in g if not
 * NULL), else -EINVAL. */
int perf_mgid(const char *text, xr_gid *g)
{
	xr_gid tmp;
	const char *p = text;
	int n = 0;

	if (!g)
		g = &tmp;
	if (xr_gid_parse(g, text)) {
		for (n = 0; n < 16; n++) {
			char *end;
			long v = strtol(p, &end, 0);
			if (end == p || v < 0 || v > 255 || (n < 15 ? *end != ':' : *end != 0))
				return -EINVAL;
			g->raw[n] = (uint8_t)v;
			p = end + 1;
		}
	}
	return xr_gid_is_mcast(g) ? 0 : -EINVAL;
}
