/* SPDX-License-Identifier: MIT */
/*
 * xroce-decode: runs xroce's parser over every frame of a pcap file and
 * prints one line per frame: the fields, or the named rejection reason.
 * Exit status 0 when every frame parsed, 1 when any was rejected.
 */
#include <getopt.h>
#include <pcap/pcap.h>
#include <string.h>

#include "cli.h"
#include "xroce/wire.h"

static const char *prog = "xroce-decode";

static void usage(FILE *out)
{
	fprintf(out,
"Usage: xroce-decode [--mtu N] [--engine] FILE.pcap\n"
"Parses each frame with xroce's RoCE v2 parser and prints, per frame:\n"
"  INDEX ok OPCODE NAME qpn=.. psn=.. ackreq=.. se=.. pad=.. payload=LEN icrc=0x..\n"
"          [reth=VA,RKEY,LEN] [aeth=SYN,MSN] [atomic=VA,RKEY,SWAP,CMP] [orig=..]\n"
"          [imm=..] [ieth=..] [deth=QKEY,SRCQP] ip=4|6 src=.. dst=.. sport=..\n"
"  INDEX reject REASON\n"
"  --mtu N   check payload lengths against this path MTU (default: any valid MTU)\n"
"  --engine  parse as the engine's receive path does: path-MTU length rules are\n"
"            left to the responder, which answers them with a NAK\n");
}

static void print_pkt(size_t idx, const struct xr_pkt *p)
{
	char s[64], d[64];
	uint32_t h = p->op->hdrs;

	printf("%zu ok 0x%02x %s qpn=0x%06x psn=0x%06x ackreq=%d se=%d pad=%u payload=%u icrc=0x%08x",
	       idx, p->opcode, p->op->name, p->dqpn, p->psn, p->ackreq, p->se, p->pad,
	       p->payload_len, p->icrc);
	if (h & XR_H_RETH)
		printf(" reth=0x%llx,0x%08x,%u", (unsigned long long)p->reth.va, p->reth.rkey, p->reth.len);
	if (h & XR_H_AETH)
		printf(" aeth=0x%02x,%u", p->aeth.syndrome, p->aeth.msn);
	if (h & XR_H_ATMETH)
		printf(" atomic=0x%llx,0x%08x,0x%llx,0x%llx", (unsigned long long)p->atomic.va,
		       p->atomic.rkey, (unsigned long long)p->atomic.swap_add,
		       (unsigned long long)p->atomic.compare);
	if (h & XR_H_ATMACK)
		printf(" orig=0x%llx", (unsigned long long)p->atomic_orig);
	if (h & XR_H_IMMDT)
		printf(" imm=0x%08x", p->imm);
	if (h & XR_H_IETH)
		printf(" ieth=0x%08x", p->ieth_rkey);
	if (h & XR_H_DETH)
		printf(" deth=0x%08x,0x%06x", p->deth.qkey, p->deth.src_qp);
	printf(" ip=%u src=%s dst=%s sport=%u\n", p->ip_version,
	       xr_gid_format(&p->sgid, s, sizeof(s)), xr_gid_format(&p->dgid, d, sizeof(d)), p->sport);
}

/* The program; main then checks that stdout took all it wrote. */
static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mtu", required_argument, 0, 'm' }, { "engine", no_argument, 0, 'e' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	char errbuf[PCAP_ERRBUF_SIZE];
	uint64_t mtu = 0;
	struct pcap_pkthdr *hdr;
	const u_char *data;
	size_t idx = 0, bad = 0;
	pcap_t *pc;
	int c, r;
	unsigned flags = 0;

	while ((c = getopt_long(argc, argv, "m:eh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!cli_u64(prog, "mtu", optarg, XR_MAX_MTU, &mtu))
				return 2;
			break;
		case 'e': flags |= XR_PARSE_TRANSPORT_LENGTHS; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	pc = pcap_open_offline(argv[optind], errbuf);
	if (!pc) {
		fprintf(stderr, "%s: %s\n", prog, errbuf);
		return 2;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "%s: %s: not an Ethernet capture\n", prog, argv[optind]);
		pcap_close(pc);
		return 2;
	}
	while ((r = pcap_next_ex(pc, &hdr, &data)) == 1) {
		struct xr_pkt p;
		enum xr_parse_err e = xr_pkt_parse(data, hdr->caplen, (uint32_t)mtu, flags, &p);
		if (e == XR_PARSE_OK) {
			print_pkt(idx, &p);
		} else {
			printf("%zu reject %s\n", idx, xr_parse_err_name(e));
			bad++;
		}
		idx++;
	}
	if (r == PCAP_ERROR)
		fprintf(stderr, "%s: %s\n", prog, pcap_geterr(pc));
	pcap_close(pc);
	return (bad || r == PCAP_ERROR) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	if (!cli_stdout_ok(prog) && !rc)
		rc = 1;
	return rc;
}
