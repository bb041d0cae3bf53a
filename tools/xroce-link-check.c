/* SPDX-License-Identifier: MIT */
/*
 * xroce-link-check: "link up but no traffic" diagnosed step by step (seed
 * 001 §5.1). For a link and a peer running a perftest-style server
 * (ib_write_bw, or xroce-perf write_bw), it checks the interface, MTU and
 * address, reaches the peer, connects an RC QP through perftest's exchange,
 * sends a probe WRITE that must draw an ACK, and checks that both ends
 * agree on the ICRC. Each line is PASS or FAIL with a hint; exit 1 on any
 * failure.
 *
 *   xroce-link-check --link udp|raw --bind ADDR [--ifname IF] --peer HOST [-p PORT]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "perf_oob.h"
#include "xroce/verbs.h"

static const char *prog = "xroce-link-check";
static int failures;

static void result(bool ok, const char *what, const char *detail, const char *hint)
{
	printf("[%s] %-34s %s\n", ok ? "PASS" : "FAIL", what, detail);
	if (!ok) {
		failures++;
		if (hint)
			printf("       hint: %s\n", hint);
	}
	fflush(stdout);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Does the kernel hold addr on some interface? Returns its name or NULL. */
static const char *kernel_owner(const xr_gid *g, char *name, size_t len)
{
	struct ifaddrs *ifs, *i;
	const char *found = NULL;

	if (getifaddrs(&ifs))
		return NULL;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET && xr_gid_is_ipv4(g) &&
		    !memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, g->raw + 12, 4))
			found = i->ifa_name;
		if (i->ifa_addr->sa_family == AF_INET6 && !xr_gid_is_ipv4(g) &&
		    !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, g->raw, 16))
			found = i->ifa_name;
	}
	if (found)
		snprintf(name, len, "%s", found);
	freeifaddrs(ifs);
	return found ? name : NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "link", required_argument, 0, 'l' }, { "bind", required_argument, 0, 'b' },
		{ "ifname", required_argument, 0, 'i' }, { "peer", required_argument, 0, 'P' },
		{ "port", required_argument, 0, 'p' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct xr_link_spec spec = { .kind = "udp" };
	const char *peer = NULL;
	uint64_t port = PERFTEST_PORT;
	char msg[256], detail[256], owner[IF_NAMESIZE];
	struct xr_link *link;
	struct xr_context *ctx = NULL;
	struct xr_pd *pd = NULL;
	struct xr_cq *cq = NULL;
	struct xr_qp *qp = NULL;
	struct xr_mr *mr = NULL;
	uint8_t *buf = NULL;
	struct oob oob = { .fd = -1 };
	xr_gid gid;
	int c, mtu;

	while ((c = getopt_long(argc, argv, "l:b:i:P:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': spec.kind = optarg; break;
		case 'b': spec.addr = optarg; break;
		case 'i': spec.ifname = optarg; break;
		case 'P': peer = optarg; break;
		case 'p': if (!cli_u64(prog, "port", optarg, 65535, &port)) return 2; break;
		case 'h':
			printf("Usage: %s --link udp|raw --bind ADDR [--ifname IF] --peer HOST [-p PORT]\n"
			       "The peer runs a perftest-style server: ib_write_bw, or xroce-perf write_bw.\n", prog);
			return 0;
		default: return 2;
		}
	}
	if (!spec.addr || !peer || xr_gid_parse(&gid, spec.addr)) {
		fprintf(stderr, "%s: --bind ADDR (this host's RoCE address) and --peer HOST are needed\n", prog);
		return 2;
	}

	/* 1. the address and the link */
	if (!strcmp(spec.kind, "raw")) {
		bool kernel_has = kernel_owner(&gid, owner, sizeof(owner)) != NULL;
		snprintf(detail, sizeof(detail), kernel_has ? "the kernel also holds %s (on %s)" : "%s is the link's own",
			 spec.addr, owner);
		result(!kernel_has, "address configured", detail,
		       "the raw link owns its address: remove it from the kernel (ip addr del), or both will answer ARP");
	} else {
		bool kernel_has = kernel_owner(&gid, owner, sizeof(owner)) != NULL;
		snprintf(detail, sizeof(detail), kernel_has ? "%s on %s" : "%s is on no interface", spec.addr, owner);
		result(kernel_has, "address configured", detail, "the UDP link needs the address on an interface (ip addr add)");
	}
	link = xr_link_open(&spec, msg, sizeof(msg));
	if (!link) {
		result(false, "link opens", msg, NULL);
		return 1;
	}
	result(true, "link opens", spec.kind, NULL);
	{
		bool up = false;
		for (int i = 0; i < 40 && !(up = link->ops->is_up(link)); i++)
			usleep(50000);
		result(up, "interface up", up ? "carrier" : "no carrier", "ip link set <if> up; check the cable or the peer end");
	}
	mtu = 5;
	while (mtu > 1 && (128u << mtu) > link->mtu - 80)
		mtu--;
	snprintf(detail, sizeof(detail), "interface MTU %u: RoCE path MTU up to %u", link->mtu, 128u << mtu);
	result(link->mtu >= 256 + 80, "MTU versus RoCE path MTU", detail,
	       "RoCE needs the path MTU plus 80 bytes of headers: raise the interface MTU (9000 for 4096)");

	/* 2. the peer: TCP first (the exchange), then RoCE itself */
	{
		int err = oob_open(&oob, peer, (int)port, true, 5000);
		snprintf(detail, sizeof(detail), err ? "TCP %s:%d: %s" : "TCP %s:%d answers", peer, (int)port, strerror(-err));
		result(!err, "peer reachable", detail, "is a perftest server running there (ib_write_bw, xroce-perf write_bw)? a firewall on TCP?");
		if (err)
			goto out;
	}
	{
		struct xr_device_opts d = { .addr = spec.addr, .progress = XR_PROGRESS_INLINE };
		struct xr_qp_init_attr ia = { 0 };
		struct perf_dest my = { 0 }, rem = { 0 };
		struct xr_connect_attr a;
		double until;
		struct xr_wc wc;
		int got = 0;
		uint64_t icrc = 0, rx = 0;

		ctx = xr_open_device(link, &d);
		pd = ctx ? xr_alloc_pd(ctx) : NULL;
		cq = ctx ? xr_create_cq(ctx, 16) : NULL;
		buf = aligned_alloc(4096, 1 << 20);
		mr = pd && buf ? xr_reg_mr(pd, buf, 1 << 20, 0xF) : NULL;
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = XR_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		qp = mr && cq ? xr_create_qp(pd, &ia) : NULL;
		if (!qp) {
			result(false, "device", strerror(errno), NULL);
			goto out;
		}
		my.qpn = xr_qp_num(qp);
		my.psn = (uint32_t)getpid() & 0xFFFFFF;
		my.rkey = mr->rkey;
		my.vaddr = (uintptr_t)buf;
		my.out_reads = 16;
		xr_query_gid(ctx, &my.gid);
		if (oob_perftest_preamble(&oob, &mtu) || oob_handshake(&oob, &my, &rem)) {
			result(false, "perftest exchange", "the peer did not complete it", "the peer must be a perftest >= 5.70 server");
			goto out;
		}
		result(true, "perftest exchange", "versions, MTU and keys exchanged", NULL);
		xr_connect_attr_init(&a);
		a.dest_qp_num = rem.qpn;
		a.rq_psn = rem.psn;
		a.sq_psn = my.psn;
		a.dgid = rem.gid;
		a.path_mtu = (enum xr_mtu)mtu;
		a.access = 0xE;
		a.retry_cnt = 3;
		a.rnr_retry = 3;
		a.max_rd_atomic = 1;
		{
			/* With these values only RTR can fail: the peer's address (or
			 * an MTU the peer sent out of range), as before. */
			int rc = xr_qp_connect(qp, &a);
			char g[64];
			snprintf(detail, sizeof(detail), rc ? "cannot resolve %s" : "%s resolved", xr_gid_format(&rem.gid, g, sizeof(g)));
			result(!rc, "peer's RoCE address resolved", detail, "ARP/ND got no answer: is the peer on this L2 segment, VLAN right?");
			if (rc)
				goto out;
		}
		oob_handshake(&oob, &my, &rem);
		oob_handshake(&oob, &my, &rem);
		/* 3. the probe: a WRITE with AckReq must draw an ACK (or a NAK) */
		{
			struct xr_sge s = { (uintptr_t)buf, 64, mr->lkey };
			struct xr_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
						.send_flags = XR_SEND_SIGNALED };
			w.wr.rdma.remote_addr = rem.vaddr;
			w.wr.rdma.rkey = rem.rkey;
			xr_post_send(qp, &w, NULL);
			until = now_ms() + 2000;
			while (!got && now_ms() < until)
				got = xr_poll_cq(cq, 1, &wc);
		}
		xr_regio_read_counter(xr_context_regs(ctx), XR_CNT_PARSE_BAD_ICRC, &icrc);
		xr_regio_read_counter(xr_context_regs(ctx), XR_CNT_RX_PKTS, &rx);
		snprintf(detail, sizeof(detail), got ? "the probe's answer arrived" : "nothing came back in 2 s");
		result(got || rx, "UDP 4791 reachable, not filtered", detail,
		       "iptables -I INPUT -p udp --dport 4791 -j ACCEPT (both ends); no NAT between them");
		snprintf(detail, sizeof(detail), got ? "probe WRITE answered: %s" : "no ACK or NAK", got ? xr_wc_status_str(wc.status) : "");
		result(got && wc.status == XR_WC_SUCCESS, "peer answers RoCE", detail,
		       "the peer's QP may not be ready, or it drops our packets (see the ICRC line)");
		snprintf(detail, sizeof(detail), "%" PRIu64 " packets received, %" PRIu64 " ICRC errors here", rx, icrc);
		result(icrc == 0 && got, "ICRC agreement", detail,
		       "ICRC mismatches: frames damaged on the way, or a peer that computes the ICRC otherwise "
		       "(non-zero IPv4 IDs, as rxe's, are recovered and pass); compare a capture with tshark");
		oob_handshake(&oob, &my, &rem);   /* perftest's end of test */
	}
out:
	oob_close(&oob);
	if (qp)
		xr_destroy_qp(qp);
	if (mr)
		xr_dereg_mr(mr);
	if (cq)
		xr_destroy_cq(cq);
	if (pd)
		xr_dealloc_pd(pd);
	if (ctx)
		xr_close_device(ctx);
	free(buf);
	xr_link_close(link);
	printf("%s\n", failures ? "link check FAILED" : "link check passed");
	return failures ? 1 : 0;
}
