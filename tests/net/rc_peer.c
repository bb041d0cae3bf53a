/* SPDX-License-Identifier: MIT */
/*
 * rc_peer: one end of a two-process RC test over a real network. The
 * server registers a buffer and serves; the client runs every RC
 * operation at several sizes against it and verifies every byte:
 * WRITEs are read back, READs come from a pattern both sides know, SENDs
 * are echoed back by the server, atomics are checked against their chain.
 * QP numbers, PSNs, GIDs and keys are exchanged over TCP.
 *
 *   rc_peer --link udp|raw --addr ADDR [--ifname IF] [--vlan VID] [--pcp P]
 *           [--mtu 256..4096] [--tcp PORT] [--iters N] [--max-size BYTES]
 *           [--peer-mac MAC] [--timeout-ms MS] (--server | --client TCP_ADDR)
 * Exit 0 when every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xroce/verbs.h"

#define BUF_LEN (8u << 20)
#define PATTERN_OFF (4u << 20)   /* server: READ source, never written */
#define ATOMIC_OFF (BUF_LEN - 64)

struct info {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

static const char *prog = "rc_peer";
static unsigned timeout_ms = 20000;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint8_t pat(uint32_t i, uint32_t salt)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + salt);
}

static int xfer(int fd, void *buf, size_t n, bool out)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t k = out ? write(fd, p, n) : read(fd, p, n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int tcp_exchange(bool server, const char *host, int port, const struct info *mine, struct info *peer)
{
	int fd, rc;

	if (server) {
		struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
		int ls = socket(AF_INET6, SOCK_STREAM, 0), one = 1, zero = 0;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
			fprintf(stderr, "%s: tcp listen %d: %s\n", prog, port, strerror(errno));
			return -1;
		}
		fd = accept(ls, NULL, NULL);
		close(ls);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		char ps[16];
		uint64_t until = now_ms() + 10000;
		snprintf(ps, sizeof(ps), "%d", port);
		if (getaddrinfo(host, ps, &hints, &ai)) {
			fprintf(stderr, "%s: bad host %s\n", prog, host);
			return -1;
		}
		for (;;) {
			fd = socket(ai->ai_family, SOCK_STREAM, 0);
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			close(fd);
			fd = -1;
			if (now_ms() > until)
				break;
			usleep(100000);
		}
		freeaddrinfo(ai);
	}
	if (fd < 0) {
		fprintf(stderr, "%s: tcp connect failed\n", prog);
		return -1;
	}
	rc = server ? (xfer(fd, peer, sizeof(*peer), false) || xfer(fd, (void *)mine, sizeof(*mine), true))
		    : (xfer(fd, (void *)mine, sizeof(*mine), true) || xfer(fd, peer, sizeof(*peer), false));
	if (rc) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_qp(struct xr_qp *qp, struct xr_context *ctx, const struct info *mine, const struct info *peer,
		      enum xr_mtu mtu)
{
	struct xr_connect_attr c;
	(void)ctx;
	xr_connect_attr_init(&c);
	c.dest_qp_num = peer->qpn;
	c.rq_psn = peer->psn;
	c.sq_psn = mine->psn;
	memcpy(c.dgid.raw, peer->gid, 16);
	c.path_mtu = mtu;
	c.timeout = 10;    /* 4 ms: netem delays stay below it */
	if (xr_qp_connect(qp, &c)) {
		fprintf(stderr, "%s: RTR failed (neighbour not resolved?)\n", prog);
		return -1;
	}
	return 0;
}

static int wait_wc(struct xr_cq *cq, struct xr_wc *wc, const char *what)
{
	uint64_t until = now_ms() + timeout_ms;
	while (now_ms() < until) {
		int n = xr_poll_cq(cq, 1, wc);
		if (n == 1) {
			if (wc->status != XR_WC_SUCCESS) {
				fprintf(stderr, "%s: %s: completion %s\n", prog, what, xr_wc_status_str(wc->status));
				return -1;
			}
			return 0;
		}
	}
	fprintf(stderr, "%s: %s: no completion in %u ms\n", prog, what, timeout_ms);
	return -1;
}

enum { MSG_ECHO = 1, MSG_DONE = 2 };

static int serve(struct xr_context *ctx, struct xr_qp *qp, struct xr_cq *cq, struct xr_mr *mr, uint8_t *buf)
{
	for (uint64_t n = 0;; n++) {
		struct xr_sge s = { (uintptr_t)buf, PATTERN_OFF, mr->lkey };
		struct xr_recv_wr r = { .wr_id = n, .sg_list = &s, .num_sge = 1 };
		struct xr_wc wc;
		uint64_t until = now_ms() + 600000;
		int got = 0;
		(void)ctx;
		if (xr_post_recv(qp, &r, NULL))
			return -1;
		while (!got && now_ms() < until)
			got = xr_poll_cq(cq, 1, &wc);
		if (!got || wc.status != XR_WC_SUCCESS) {
			fprintf(stderr, "%s: server receive failed\n", prog);
			return -1;
		}
		if (ntohl(wc.imm_data) == MSG_DONE)
			return 0;
		/* Echo the message back: the client checks every byte. */
		{
			struct xr_sge e = { (uintptr_t)buf, wc.byte_len, mr->lkey };
			struct xr_send_wr w = { .wr_id = n, .sg_list = &e, .num_sge = 1, .opcode = XR_WR_SEND,
						.send_flags = XR_SEND_SIGNALED };
			if (xr_post_send(qp, &w, NULL) || wait_wc(cq, &wc, "echo"))
				return -1;
		}
	}
}

static int client(struct xr_qp *qp, struct xr_cq *cq, struct xr_mr *mr, uint8_t *buf, const struct info *peer,
		  uint32_t max_size, unsigned iters, uint32_t mtu)
{
	uint32_t sizes[] = { 0, 1, 3, mtu - 1, mtu, mtu + 1, 3 * mtu + 5, 65536, 1u << 20 };
	uint64_t chain = 0, sum = 0;
	unsigned checks = 0;
	struct xr_wc wc;

	for (unsigned it = 0; it < iters; it++) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			uint32_t len = sizes[k], salt = it * 17 + (uint32_t)k;
			struct xr_sge s = { (uintptr_t)buf, len, mr->lkey };
			struct xr_send_wr w = { .sg_list = &s, .num_sge = 1, .send_flags = XR_SEND_SIGNALED };
			if (len > max_size)
				continue;
			w.wr.rdma.rkey = peer->rkey;
			/* WRITE, then READ it back into the second half. */
			for (uint32_t i = 0; i < len; i++)
				buf[i] = pat(i, salt);
			w.opcode = XR_WR_RDMA_WRITE;
			w.wr.rdma.remote_addr = peer->addr + (1u << 20);
			if (xr_post_send(qp, &w, NULL) || wait_wc(cq, &wc, "write"))
				return -1;
			s.addr = (uintptr_t)buf + (2u << 20);
			memset(buf + (2u << 20), 0, len);
			w.opcode = XR_WR_RDMA_READ;
			if (xr_post_send(qp, &w, NULL) || wait_wc(cq, &wc, "read back"))
				return -1;
			if (memcmp(buf, buf + (2u << 20), len)) {
				fprintf(stderr, "%s: WRITE of %u bytes: read back differs\n", prog, len);
				return -1;
			}
			/* READ of the server's fixed pattern. */
			w.wr.rdma.remote_addr = peer->addr + PATTERN_OFF + salt;
			memset(buf + (2u << 20), 0, len);
			if (xr_post_send(qp, &w, NULL) || wait_wc(cq, &wc, "read"))
				return -1;
			for (uint32_t i = 0; i < len; i++)
				if (buf[(2u << 20) + i] != pat(i + salt, 0)) {
					fprintf(stderr, "%s: READ of %u bytes: byte %u differs\n", prog, len, i);
					return -1;
				}
			/* SEND with immediate, echoed back. */
			{
				struct xr_sge rs = { (uintptr_t)buf + (3u << 20), 1u << 20, mr->lkey };
				struct xr_recv_wr r = { .wr_id = 7, .sg_list = &rs, .num_sge = 1 };
				struct xr_wc rwc;
				s.addr = (uintptr_t)buf;
				w.opcode = XR_WR_SEND_WITH_IMM;
				w.imm_data = htonl(MSG_ECHO);
				if (xr_post_recv(qp, &r, NULL) || xr_post_send(qp, &w, NULL) || wait_wc(cq, &wc, "send"))
					return -1;
				if (wc.opcode == XR_WC_RECV) {
					rwc = wc;
					if (wait_wc(cq, &wc, "send"))
						return -1;
				} else if (wait_wc(cq, &rwc, "echo")) {
					return -1;
				}
				if (rwc.byte_len != len || memcmp(buf, buf + (3u << 20), len)) {
					fprintf(stderr, "%s: SEND of %u bytes: echo differs\n", prog, len);
					return -1;
				}
			}
			/* Atomics: a fetch-add running sum and a compare-swap chain. */
			{
				uint64_t orig;
				struct xr_sge as = { (uintptr_t)buf + (2u << 20), 8, mr->lkey };
				struct xr_send_wr a = { .sg_list = &as, .num_sge = 1, .send_flags = XR_SEND_SIGNALED,
							.opcode = XR_WR_ATOMIC_FETCH_AND_ADD };
				a.wr.atomic.remote_addr = peer->addr + ATOMIC_OFF;
				a.wr.atomic.rkey = peer->rkey;
				a.wr.atomic.compare_add = len + 1;
				if (xr_post_send(qp, &a, NULL) || wait_wc(cq, &wc, "fetch-add"))
					return -1;
				memcpy(&orig, buf + (2u << 20), 8);
				if (orig != sum) {
					fprintf(stderr, "%s: FETCH_ADD original %llu, expected %llu\n", prog,
						(unsigned long long)orig, (unsigned long long)sum);
					return -1;
				}
				sum += len + 1;
				a.opcode = XR_WR_ATOMIC_CMP_AND_SWP;
				a.wr.atomic.remote_addr = peer->addr + ATOMIC_OFF + 8;
				a.wr.atomic.compare_add = chain;
				a.wr.atomic.swap = chain + 1;
				if (xr_post_send(qp, &a, NULL) || wait_wc(cq, &wc, "cmp-swap"))
					return -1;
				memcpy(&orig, buf + (2u << 20), 8);
				if (orig != chain) {
					fprintf(stderr, "%s: CMP_SWAP original %llu, expected %llu\n", prog,
						(unsigned long long)orig, (unsigned long long)chain);
					return -1;
				}
				chain++;
			}
			checks += 5;
		}
	}
	{
		struct xr_send_wr w = { .opcode = XR_WR_SEND_WITH_IMM, .send_flags = XR_SEND_SIGNALED,
					.imm_data = htonl(MSG_DONE) };
		if (xr_post_send(qp, &w, NULL) || wait_wc(cq, &wc, "done"))
			return -1;
	}
	printf("%s: %u checks passed\n", prog, checks);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "link", required_argument, 0, 'l' }, { "addr", required_argument, 0, 'a' },
		{ "ifname", required_argument, 0, 'i' }, { "vlan", required_argument, 0, 'v' },
		{ "pcp", required_argument, 0, 'p' }, { "mtu", required_argument, 0, 'm' },
		{ "tcp", required_argument, 0, 't' }, { "iters", required_argument, 0, 'n' },
		{ "max-size", required_argument, 0, 's' }, { "server", no_argument, 0, 'S' },
		{ "client", required_argument, 0, 'C' }, { "timeout-ms", required_argument, 0, 'T' },
		{ "pcap", required_argument, 0, 'w' }, { 0, 0, 0, 0 },
	};
	const char *link_kind = "udp", *addr = NULL, *ifname = NULL, *server_host = NULL, *pcap = NULL;
	int vlan = 0, pcp = 0, mtu = 1024, tcp = 18515, c, rc = 1, fd;
	unsigned iters = 1;
	uint32_t max_size = 1u << 20;
	bool server = false;
	struct xr_link *link;
	struct xr_context *ctx;
	struct xr_device_opts d = { 0 };
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_qp *qp;
	struct xr_mr *mr;
	struct xr_qp_init_attr ia = { 0 };
	struct info mine = { 0 }, peer = { 0 };
	uint8_t *buf;
	xr_gid gid;
	enum xr_mtu mtu_enum;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': link_kind = optarg; break;
		case 'a': addr = optarg; break;
		case 'i': ifname = optarg; break;
		case 'v': vlan = atoi(optarg); break;
		case 'p': pcp = atoi(optarg); break;
		case 'm': mtu = atoi(optarg); break;
		case 't': tcp = atoi(optarg); break;
		case 'n': iters = (unsigned)atoi(optarg); break;
		case 's': max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': server = true; break;
		case 'C': server_host = optarg; break;
		case 'T': timeout_ms = (unsigned)atoi(optarg); break;
		case 'w': pcap = optarg; break;
		default: return 2;
		}
	}
	if (!addr || (!server && !server_host)) {
		fprintf(stderr, "usage: see the comment at the top of rc_peer.c\n");
		return 2;
	}
	switch (mtu) {
	case 256: mtu_enum = XR_MTU_256; break;
	case 512: mtu_enum = XR_MTU_512; break;
	case 1024: mtu_enum = XR_MTU_1024; break;
	case 2048: mtu_enum = XR_MTU_2048; break;
	case 4096: mtu_enum = XR_MTU_4096; break;
	default: fprintf(stderr, "%s: bad --mtu\n", prog); return 2;
	}
	{
		struct xr_link_spec spec = { .kind = link_kind, .addr = addr, .ifname = ifname,
					     .vid = (uint16_t)vlan, .pcp = (uint8_t)pcp };
		char msg[256];
		link = xr_link_open(&spec, msg, sizeof(msg));
		if (!link) {
			fprintf(stderr, "%s: %s\n", prog, msg);
			return 1;
		}
	}
	if (pcap) {
		link = xr_link_pcap_tap(link, pcap);
		if (!link)
			return 1;
	}
	d.addr = addr;
	d.retry7_forever = true;   /* impaired links: never give up, as rxe */
	d.progress = XR_PROGRESS_THREAD;
	ctx = xr_open_device(link, &d);
	if (!ctx) {
		fprintf(stderr, "%s: open device: %s\n", prog, strerror(errno));
		return 1;
	}
	pd = xr_alloc_pd(ctx);
	cq = xr_create_cq(ctx, 256);
	buf = aligned_alloc(4096, BUF_LEN);
	memset(buf, 0, BUF_LEN);
	for (uint32_t i = 0; i < (2u << 20); i++)
		buf[PATTERN_OFF + i] = pat(i, 0);
	mr = xr_reg_mr(pd, buf, BUF_LEN, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
					   XR_ACCESS_REMOTE_ATOMIC);
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp = xr_create_qp(pd, &ia);
	if (!pd || !cq || !mr || !qp) {
		fprintf(stderr, "%s: resources: %s\n", prog, strerror(errno));
		return 1;
	}
	srand((unsigned)getpid());
	mine.qpn = xr_qp_num(qp);
	mine.psn = (uint32_t)rand() & 0xFFFFFF;
	mine.rkey = mr->rkey;
	mine.addr = (uintptr_t)buf;
	xr_query_gid(ctx, &gid);
	memcpy(mine.gid, gid.raw, 16);
	fd = tcp_exchange(server, server_host, tcp, &mine, &peer);
	if (fd < 0 || connect_qp(qp, ctx, &mine, &peer, mtu_enum))
		goto out;
	{
		/* Both QPs are ready before any RDMA flows. */
		char sync = 1;
		if (xfer(fd, &sync, 1, true) || xfer(fd, &sync, 1, false))
			goto out;
	}
	rc = server ? serve(ctx, qp, cq, mr, buf) : client(qp, cq, mr, buf, &peer, max_size, iters, (uint32_t)mtu);
	if (!rc) {
		/* Let the last ACKs leave before tearing down. */
		char sync = 2;
		xfer(fd, &sync, 1, true);
		xfer(fd, &sync, 1, false);
	}
	close(fd);
out:
	{
		uint64_t icrc = 0, retx = 0;
		xr_regio_read_counter(xr_context_regs(ctx), XR_CNT_PARSE_BAD_ICRC, &icrc);
		xr_regio_read_counter(xr_context_regs(ctx), XR_CNT_RETRANSMITS, &retx);
		printf("%s: %s %s: %s (icrc errors %llu, retransmissions %llu)\n", prog, server ? "server" : "client",
		       link_kind, rc ? "FAILED" : "ok", (unsigned long long)icrc, (unsigned long long)retx);
	}
	xr_destroy_qp(qp);
	xr_dereg_mr(mr);
	xr_destroy_cq(cq);
	xr_dealloc_pd(pd);
	xr_close_device(ctx);
	xr_link_close(link);
	free(buf);
	return rc ? 1 : 0;
}
