/* SPDX-License-Identifier: MIT */
/*
 * xroce-gen: a RoCE v2 packet generator for tests and FPGA testbenches.
 * Every header field is a flag; packets go to a pcap file, a $readmemh hex
 * file, or stdout.
 */
#include <getopt.h>
#include <pcap/pcap.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xroce/wire.h"

static const char *prog = "xroce-gen";

static void usage(FILE *out)
{
	fprintf(out,
"Usage: xroce-gen [options]\n"
"Builds byte-exact RoCE v2 frames (Ethernet/IP/UDP 4791/BTH/.../ICRC).\n"
"\n"
"What to build:\n"
"  -o, --opcode OP        opcode name (RC_SEND_ONLY, send_only = RC, UD_SEND_ONLY,\n"
"                         CNP, ...) or number (0x04); default RC_SEND_ONLY\n"
"  -a, --all              one packet of every opcode in the table\n"
"  -n, --count N          N packets per opcode, PSN incrementing (mod 2^24); default 1\n"
"  -l, --list             list the opcode table and exit\n"
"\n"
"Output (any combination; stdout summary when none is given):\n"
"  -w, --pcap FILE        write a pcap (Ethernet link type)\n"
"      --append           append to an existing pcap instead of replacing it\n"
"  -x, --hex FILE         write hex, one byte per line, '//' comment per packet\n"
"                         (Verilog $readmemh)\n"
"  -q, --quiet            no summary on stdout\n"
"\n"
"Ethernet:  --dmac MAC  --smac MAC  --vlan VID  --pcp 0-7  --dei\n"
"IP:        --src ADDR  --dst ADDR (IPv4 dotted, or IPv6: selects IPv6)\n"
"           --tos N (IPv4 TOS / IPv6 traffic class)  --ttl N (TTL / hop limit)\n"
"           --ip-id N  --no-df  --flow-label N (IPv6)\n"
"UDP:       --sport N (default: rxe's port for QPNs --sqpn/--qpn)  --dport N (4791)\n"
"           --udp-csum (compute the UDP checksum; default 0 as rxe)\n"
"BTH:       --qpn N (dest QP)  --psn N  --ackreq  --se  --mig  --pkey N\n"
"           --fecn  --becn  --tver N  --sqpn N (local QPN, for the source port)\n"
"RETH:      --va N  --rkey N  --dma-len N (default: the payload size)\n"
"AETH:      --syndrome N (default 0x1F on ACKs)  --msn N\n"
"AtomicETH: --va N  --rkey N  --swap N (swap / add)  --compare N\n"
"AtomicAck: --orig N      ImmDt: --imm N      IETH: --inv-rkey N\n"
"DETH:      --qkey N (default 0x80010000)  --src-qp N\n"
"Payload:   -s, --size N (default 64; FIRST/MIDDLE carry exactly --mtu)\n"
"           --mtu N (256|512|1024|2048|4096; default 1024)\n"
"           --pattern zero|inc|random|0xNN (default inc)  --seed N\n"
"\n"
"  -h, --help             this text\n"
"\n"
"Examples:\n"
"  xroce-gen --all --pcap all.pcap\n"
"  xroce-gen -o rdma_write_first --mtu 4096 --count 8 --psn 0xfffffe --hex tb.hex\n"
"  xroce-gen -o CNP --qpn 0x118 --becn --tos 0xc2 --pcap cnp.pcap\n");
}

enum {
	OPT_DMAC = 256, OPT_SMAC, OPT_VLAN, OPT_PCP, OPT_DEI, OPT_SRC, OPT_DST, OPT_TOS,
	OPT_TTL, OPT_IPID, OPT_NODF, OPT_FLOW, OPT_SPORT, OPT_DPORT, OPT_UDPCSUM,
	OPT_QPN, OPT_PSN, OPT_ACKREQ, OPT_SE, OPT_MIG, OPT_PKEY, OPT_FECN, OPT_BECN,
	OPT_TVER, OPT_SQPN, OPT_VA, OPT_RKEY, OPT_DMALEN, OPT_SYN, OPT_MSN, OPT_SWAP,
	OPT_CMP, OPT_ORIG, OPT_IMM, OPT_INVRKEY, OPT_QKEY, OPT_SRCQP, OPT_MTU,
	OPT_PATTERN, OPT_SEED, OPT_APPEND,
};

static const struct option long_opts[] = {
	{ "opcode", required_argument, 0, 'o' }, { "all", no_argument, 0, 'a' },
	{ "count", required_argument, 0, 'n' },  { "list", no_argument, 0, 'l' },
	{ "pcap", required_argument, 0, 'w' },   { "append", no_argument, 0, OPT_APPEND },
	{ "hex", required_argument, 0, 'x' },    { "quiet", no_argument, 0, 'q' },
	{ "help", no_argument, 0, 'h' },         { "size", required_argument, 0, 's' },
	{ "dmac", required_argument, 0, OPT_DMAC }, { "smac", required_argument, 0, OPT_SMAC },
	{ "vlan", required_argument, 0, OPT_VLAN }, { "pcp", required_argument, 0, OPT_PCP },
	{ "dei", no_argument, 0, OPT_DEI },
	{ "src", required_argument, 0, OPT_SRC }, { "dst", required_argument, 0, OPT_DST },
	{ "tos", required_argument, 0, OPT_TOS }, { "ttl", required_argument, 0, OPT_TTL },
	{ "ip-id", required_argument, 0, OPT_IPID }, { "no-df", no_argument, 0, OPT_NODF },
	{ "flow-label", required_argument, 0, OPT_FLOW },
	{ "sport", required_argument, 0, OPT_SPORT }, { "dport", required_argument, 0, OPT_DPORT },
	{ "udp-csum", no_argument, 0, OPT_UDPCSUM },
	{ "qpn", required_argument, 0, OPT_QPN }, { "psn", required_argument, 0, OPT_PSN },
	{ "ackreq", no_argument, 0, OPT_ACKREQ }, { "se", no_argument, 0, OPT_SE },
	{ "mig", no_argument, 0, OPT_MIG }, { "pkey", required_argument, 0, OPT_PKEY },
	{ "fecn", no_argument, 0, OPT_FECN }, { "becn", no_argument, 0, OPT_BECN },
	{ "tver", required_argument, 0, OPT_TVER }, { "sqpn", required_argument, 0, OPT_SQPN },
	{ "va", required_argument, 0, OPT_VA }, { "rkey", required_argument, 0, OPT_RKEY },
	{ "dma-len", required_argument, 0, OPT_DMALEN },
	{ "syndrome", required_argument, 0, OPT_SYN }, { "msn", required_argument, 0, OPT_MSN },
	{ "swap", required_argument, 0, OPT_SWAP }, { "compare", required_argument, 0, OPT_CMP },
	{ "orig", required_argument, 0, OPT_ORIG }, { "imm", required_argument, 0, OPT_IMM },
	{ "inv-rkey", required_argument, 0, OPT_INVRKEY },
	{ "qkey", required_argument, 0, OPT_QKEY }, { "src-qp", required_argument, 0, OPT_SRCQP },
	{ "mtu", required_argument, 0, OPT_MTU }, { "pattern", required_argument, 0, OPT_PATTERN },
	{ "seed", required_argument, 0, OPT_SEED },
	{ 0, 0, 0, 0 },
};

enum pattern { PAT_INC, PAT_ZERO, PAT_RANDOM, PAT_BYTE };

struct gen {
	struct xr_pkt tmpl;          /* fields from the command line */
	int opcode;                  /* -1 with --all */
	uint64_t count, size, mtu, seed, sqpn;
	bool size_set, sport_set, syn_set, qkey_set, dmalen_set, quiet, append;
	enum pattern pattern;
	uint8_t pattern_byte;
	const char *pcap_path, *hex_path;
	pcap_dumper_t *pcap;
	pcap_t *pcap_dead;
	FILE *hex;
	uint64_t written;
};

static bool parse_pattern(struct gen *g, const char *s)
{
	uint64_t v;

	if (!strcmp(s, "inc"))         g->pattern = PAT_INC;
	else if (!strcmp(s, "zero"))   g->pattern = PAT_ZERO;
	else if (!strcmp(s, "random")) g->pattern = PAT_RANDOM;
	else if (cli_u64(prog, "pattern", s, 0xFF, &v)) {
		g->pattern = PAT_BYTE;
		g->pattern_byte = (uint8_t)v;
	} else
		return false;
	return true;
}

static void fill_payload(const struct gen *g, uint8_t *buf, uint32_t len, uint64_t pkt_index)
{
	uint64_t s = g->seed ^ (pkt_index * 0x9E3779B97F4A7C15ULL) ^ 0xA5A5A5A5ULL;

	for (uint32_t i = 0; i < len; i++) {
		switch (g->pattern) {
		case PAT_INC:  buf[i] = (uint8_t)(i + pkt_index); break;
		case PAT_ZERO: buf[i] = 0; break;
		case PAT_BYTE: buf[i] = g->pattern_byte; break;
		case PAT_RANDOM:
			s ^= s << 13; s ^= s >> 7; s ^= s << 17;
			buf[i] = (uint8_t)s;
			break;
		}
	}
}

/* Payload size for an opcode from --size and --mtu; -1 when they conflict. */
static long payload_size(const struct gen *g, const struct xr_opcode_info *op, bool strict)
{
	uint64_t size = g->size;

	switch (op->payload) {
	case XR_PAY_NONE:
		if (strict && g->size_set && g->size) {
			fprintf(stderr, "%s: %s carries no payload (--size %llu)\n", prog, op->name,
				(unsigned long long)g->size);
			return -1;
		}
		return 0;
	case XR_PAY_MTU:
		if (strict && g->size_set && g->size != g->mtu) {
			fprintf(stderr, "%s: %s carries exactly the MTU (%llu bytes); use --mtu\n",
				prog, op->name, (unsigned long long)g->mtu);
			return -1;
		}
		return (long)g->mtu;
	case XR_PAY_1_MTU:
	case XR_PAY_0_MTU:
		if (size > g->mtu || (op->payload == XR_PAY_1_MTU && size == 0)) {
			if (strict) {
				fprintf(stderr, "%s: %s needs %s..MTU (%llu) payload bytes, not %llu\n",
					prog, op->name, op->payload == XR_PAY_1_MTU ? "1" : "0",
					(unsigned long long)g->mtu, (unsigned long long)size);
				return -1;
			}
			size = size > g->mtu ? g->mtu : 1;
		}
		return (long)size;
	}
	return -1;
}

static int emit(struct gen *g, const uint8_t *frame, size_t len, const struct xr_pkt *p)
{
	if (g->pcap) {
		struct pcap_pkthdr h = { .caplen = (bpf_u_int32)len, .len = (bpf_u_int32)len };
		h.ts.tv_sec = (time_t)(g->written / 1000000);
		h.ts.tv_usec = (suseconds_t)(g->written % 1000000);
		pcap_dump((u_char *)g->pcap, &h, frame);
	}
	if (g->hex) {
		fprintf(g->hex, "// packet %llu %s psn 0x%06x len %zu\n",
			(unsigned long long)g->written, p->op->name, p->psn, len);
		for (size_t i = 0; i < len; i++)
			fprintf(g->hex, "%02x\n", frame[i]);
	}
	if (!g->quiet) {
		printf("%-36s qpn 0x%06x psn 0x%06x payload %4u pad %u len %4zu icrc %02x %02x %02x %02x\n",
		       p->op->name, p->dqpn, p->psn, p->payload_len, p->pad, len,
		       frame[len - 4], frame[len - 3], frame[len - 2], frame[len - 1]);
	}
	g->written++;
	return 0;
}

static int gen_opcode(struct gen *g, const struct xr_opcode_info *op, bool strict)
{
	static uint8_t payload[XR_MAX_MTU], frame[XR_MAX_FRAME];
	long size = payload_size(g, op, strict);

	if (size < 0)
		return -1;
	for (uint64_t i = 0; i < g->count; i++) {
		struct xr_pkt p = g->tmpl;
		ssize_t len;

		p.opcode = op->opcode;
		p.psn = (uint32_t)((g->tmpl.psn + i) & XR_PSN_MASK);
		p.payload_len = (uint32_t)size;
		p.payload = payload;
		fill_payload(g, payload, (uint32_t)size, g->written);
		if (!g->dmalen_set)
			p.reth.len = (uint32_t)(op->flags & XR_OPF_READ ? g->size : (uint64_t)size);
		if (!g->syn_set && (op->hdrs & XR_H_AETH))
			p.aeth.syndrome = XR_AETH_ACK_UNLIMITED;
		if (!g->qkey_set && (op->hdrs & XR_H_DETH))
			p.deth.qkey = XR_GSI_QKEY;
		if (op->opcode == XR_OP_CNP && !g->sport_set)
			p.sport = 0;
		len = xr_pkt_build(&p, frame, sizeof(frame));
		if (len < 0) {
			fprintf(stderr, "%s: cannot build %s: %s\n", prog, op->name, strerror((int)-len));
			return -1;
		}
		emit(g, frame, (size_t)len, &p);
	}
	return 0;
}

static int open_outputs(struct gen *g)
{
	if (g->pcap_path) {
		g->pcap_dead = pcap_open_dead(DLT_EN10MB, 65535);
		if (!g->pcap_dead)
			return -1;
		g->pcap = g->append ? pcap_dump_open_append(g->pcap_dead, g->pcap_path)
				    : pcap_dump_open(g->pcap_dead, g->pcap_path);
		if (!g->pcap) {
			fprintf(stderr, "%s: %s: %s\n", prog, g->pcap_path, pcap_geterr(g->pcap_dead));
			return -1;
		}
	}
	if (g->hex_path) {
		g->hex = fopen(g->hex_path, "w");
		if (!g->hex) {
			fprintf(stderr, "%s: %s: %s\n", prog, g->hex_path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int close_outputs(struct gen *g)
{
	int rc = 0;

	/* ferror too: a write that failed before the last flush (the buffer
	 * then empty) leaves the flush itself successful. */
	if (g->pcap) {
		if (pcap_dump_flush(g->pcap) != 0 || ferror(pcap_dump_file(g->pcap))) {
			fprintf(stderr, "%s: error writing %s\n", prog, g->pcap_path);
			rc = -1;
		}
		pcap_dump_close(g->pcap);
	}
	if (g->pcap_dead)
		pcap_close(g->pcap_dead);
	if (g->hex) {
		bool bad = ferror(g->hex);
		if (fclose(g->hex) != 0 || bad) {
			fprintf(stderr, "%s: error writing %s\n", prog, g->hex_path);
			rc = -1;
		}
	}
	return rc;
}

static void list_opcodes(void)
{
	size_t n;
	const struct xr_opcode_info *t = xr_opcode_all(&n);
	static const char *pay[] = { "none", "=MTU", "1..MTU", "0..MTU" };

	printf("%-6s %-34s %-7s %-5s %-4s %s\n", "opcode", "name", "payload", "kind", "rwqe", "headers");
	for (size_t i = 0; i < n; i++) {
		printf("0x%02x   %-34s %-7s %-5s %-4s", t[i].opcode, t[i].name, pay[t[i].payload],
		       t[i].flags & XR_OPF_REQ ? "req" : t[i].flags & XR_OPF_RESP ? "resp" : "cnp",
		       t[i].flags & XR_OPF_RWQE ? "yes" : "no");
		for (unsigned b = 0; b < XR_EXT_HDR_COUNT; b++)
			if (t[i].hdrs & (1u << b))
				printf(" %s", xr_ext_hdr_name(1u << b));
		printf("\n");
	}
}

#define U(opt, max, dst) do { uint64_t v_; if (!cli_u64(prog, opt, optarg, (max), &v_)) return 2; (dst) = v_; } while (0)

/* The program; main then checks that stdout took all it wrote. */
static int run(int argc, char **argv)
{
	struct gen g = { .opcode = XR_OP_RC_SEND_ONLY, .count = 1, .size = 64, .mtu = 1024, .seed = 1 };
	struct xr_pkt *t = &g.tmpl;
	bool all = false, src6 = false, dst6 = false;
	int c, rc = 0;

	xr_pkt_init(t, XR_OP_RC_SEND_ONLY);
	static const uint8_t dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 }, smac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	memcpy(t->dmac, dmac, 6);
	memcpy(t->smac, smac, 6);
	xr_gid_from_ipv4(&t->sgid, 0xC0A80101);
	xr_gid_from_ipv4(&t->dgid, 0xC0A80102);
	t->dqpn = 0x12;
	g.sqpn = 0x11;

	while ((c = getopt_long(argc, argv, "o:an:lw:x:qhs:", long_opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			g.opcode = xr_opcode_by_name(optarg);
			if (g.opcode < 0) {
				fprintf(stderr, "%s: unknown opcode '%s' (see --list)\n", prog, optarg);
				return 2;
			}
			break;
		case 'a': all = true; break;
		case 'n': U("count", 1000000, g.count); break;
		case 'l': list_opcodes(); return 0;
		case 'w': g.pcap_path = optarg; break;
		case 'x': g.hex_path = optarg; break;
		case 'q': g.quiet = true; break;
		case 'h': usage(stdout); return 0;
		case 's': U("size", XR_MAX_MTU, g.size); g.size_set = true; break;
		case OPT_APPEND: g.append = true; break;
		case OPT_DMAC: if (!cli_mac(prog, "dmac", optarg, t->dmac)) return 2; break;
		case OPT_SMAC: if (!cli_mac(prog, "smac", optarg, t->smac)) return 2; break;
		case OPT_VLAN: U("vlan", 0xFFF, t->vid); t->vlan = true; break;
		case OPT_PCP: U("pcp", 7, t->pcp); t->vlan = true; break;
		case OPT_DEI: t->dei = true; t->vlan = true; break;
		case OPT_SRC:
		case OPT_DST: {
			xr_gid *gid = c == OPT_SRC ? &t->sgid : &t->dgid;
			if (xr_gid_parse(gid, optarg)) {
				fprintf(stderr, "%s: bad address '%s' for --%s\n", prog, optarg,
					c == OPT_SRC ? "src" : "dst");
				return 2;
			}
			*(c == OPT_SRC ? &src6 : &dst6) = !xr_gid_is_ipv4(gid);
			break;
		}
		case OPT_TOS: U("tos", 0xFF, t->traffic_class); break;
		case OPT_TTL: U("ttl", 0xFF, t->hop_limit); break;
		case OPT_IPID: U("ip-id", 0xFFFF, t->ip_id); break;
		case OPT_NODF: t->df = false; break;
		case OPT_FLOW: U("flow-label", 0xFFFFF, t->flow_label); break;
		case OPT_SPORT: U("sport", 0xFFFF, t->sport); g.sport_set = true; break;
		case OPT_DPORT: U("dport", 0xFFFF, t->dport); break;
		case OPT_UDPCSUM: t->udp_csum = true; break;
		case OPT_QPN: U("qpn", XR_QPN_MASK, t->dqpn); break;
		case OPT_PSN: U("psn", XR_PSN_MASK, t->psn); break;
		case OPT_ACKREQ: t->ackreq = true; break;
		case OPT_SE: t->se = true; break;
		case OPT_MIG: t->mig = true; break;
		case OPT_PKEY: U("pkey", 0xFFFF, t->pkey); break;
		case OPT_FECN: t->fecn = true; break;
		case OPT_BECN: t->becn = true; break;
		case OPT_TVER: U("tver", 0xF, t->tver); break;
		case OPT_SQPN: U("sqpn", XR_QPN_MASK, g.sqpn); break;
		case OPT_VA: U("va", UINT64_MAX, t->reth.va); t->atomic.va = t->reth.va; break;
		case OPT_RKEY: U("rkey", UINT32_MAX, t->reth.rkey); t->atomic.rkey = t->reth.rkey; break;
		case OPT_DMALEN: U("dma-len", UINT32_MAX, t->reth.len); g.dmalen_set = true; break;
		case OPT_SYN: U("syndrome", 0xFF, t->aeth.syndrome); g.syn_set = true; break;
		case OPT_MSN: U("msn", 0xFFFFFF, t->aeth.msn); break;
		case OPT_SWAP: U("swap", UINT64_MAX, t->atomic.swap_add); break;
		case OPT_CMP: U("compare", UINT64_MAX, t->atomic.compare); break;
		case OPT_ORIG: U("orig", UINT64_MAX, t->atomic_orig); break;
		case OPT_IMM: U("imm", UINT32_MAX, t->imm); break;
		case OPT_INVRKEY: U("inv-rkey", UINT32_MAX, t->ieth_rkey); break;
		case OPT_QKEY: U("qkey", UINT32_MAX, t->deth.qkey); g.qkey_set = true; break;
		case OPT_SRCQP: U("src-qp", XR_QPN_MASK, t->deth.src_qp); break;
		case OPT_MTU:
			U("mtu", XR_MAX_MTU, g.mtu);
			if (g.mtu < XR_MIN_MTU || (g.mtu & (g.mtu - 1))) {
				fprintf(stderr, "%s: --mtu must be 256, 512, 1024, 2048 or 4096\n", prog);
				return 2;
			}
			break;
		case OPT_PATTERN: if (!parse_pattern(&g, optarg)) return 2; break;
		case OPT_SEED: U("seed", UINT64_MAX, g.seed); break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return 2;
	}
	if (src6 != dst6) {
		/* Mixed families: promote the IPv4 side only if the user gave both. */
		fprintf(stderr, "%s: --src and --dst must both be IPv4 or both IPv6\n", prog);
		return 2;
	}
	t->ip_version = src6 ? 6 : 4;
	if (!g.sport_set)
		t->sport = xr_rxe_udp_sport((uint32_t)g.sqpn, t->dqpn);
	if (g.count == 0) {
		fprintf(stderr, "%s: --count must be at least 1\n", prog);
		return 2;
	}
	if (open_outputs(&g)) {
		close_outputs(&g);   /* what did open (the pcap handle at least) */
		return 1;
	}
	if (all) {
		size_t n;
		const struct xr_opcode_info *ops = xr_opcode_all(&n);
		for (size_t i = 0; i < n && !rc; i++)
			rc = gen_opcode(&g, &ops[i], false);
	} else {
		rc = gen_opcode(&g, xr_opcode_info((uint8_t)g.opcode), true);
	}
	if (close_outputs(&g))
		rc = -1;
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	if (!cli_stdout_ok(prog) && !rc)
		rc = 1;
	return rc;
}
