/* SPDX-License-Identifier: MIT */
/*
 * The UDP link's receive cost per packet: xr_link_recv (the kernel's
 * recvmmsg, the rebuilt headers, the link's ICRC pass) plus the parse the
 * engine runs (rx_one: ICRC skipped when the link marked the frame
 * XR_FRAME_ICRC_VERIFIED), for RoCE WRITE MIDDLE datagrams with 4 KiB of
 * payload sent over loopback in batches of 32. Two senders: a UDP socket
 * with DF set (IPv4 ID 0, as xroce sends) and a raw IP_HDRINCL socket
 * sending ID 0x1234 (rxe sends non-zero IDs: the link recovers them; needs
 * root, else that line is skipped). Each is measured as the engine
 * reads the flag now and as it did before (its own ICRC check again), in
 * alternating rounds; every xr_icrc call on the receive side is counted
 * (linked with --wrap=xr_icrc). Only the receive side is timed.
 *
 *   bench-udp-rx [--quick]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xroce/link.h"
#include "xroce/wire.h"

#define ADDR "127.0.0.31"
#define PAYLOAD 4096
#define BATCH 32

uint32_t __real_xr_icrc(const uint8_t *ip, size_t len);
uint32_t __wrap_xr_icrc(const uint8_t *ip, size_t len);

static uint64_t icrc_calls;

uint32_t __wrap_xr_icrc(const uint8_t *ip, size_t len)
{
	icrc_calls++;
	return __real_xr_icrc(ip, len);
}

/* IPv4 ID 0x1234 in the IP packet ip (len bytes, ICRC last), its checksum and ICRC updated. */
static void put_id(uint8_t *ip, size_t len)
{
	uint32_t c;

	ip[4] = 0x12;
	ip[5] = 0x34;
	ip[10] = ip[11] = 0;
	c = xr_ipv4_csum(ip);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	c = xr_icrc(ip, len - XR_ICRC_LEN);
	for (int i = 0; i < 4; i++)
		ip[len - XR_ICRC_LEN + (size_t)i] = (uint8_t)(c >> (8 * i));   /* LSB first */
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct result {
	double ns;          /* per packet, receive side */
	double passes;      /* ICRC passes per packet, receive side */
	uint64_t bad;       /* packets the parse refused (must be 0) */
	uint64_t recovered; /* frames whose IPv4 ID the link recovered */
};

/* packets datagrams through l; the parse honours the flag or not (before). */
static int run(struct xr_link *l, int fd, const uint8_t *dgram, size_t dlen, unsigned packets, bool honour,
	       struct result *r)
{
	struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons(XR_ROCE_UDP_PORT) };
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	double t = 0;
	uint64_t calls = 0, got = 0;

	inet_pton(AF_INET, ADDR, &d.sin_addr);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = (void *)dgram;
		iov[i].iov_len = dlen;
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_name = &d;
		m[i].msg_hdr.msg_namelen = sizeof(d);
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	memset(r, 0, sizeof(*r));
	for (unsigned sent = 0; sent < packets; sent += BATCH) {
		struct xr_frame *f[BATCH];
		int n, want;
		double t0;
		uint64_t c0;

		want = sendmmsg(fd, m, BATCH, 0);
		if (want <= 0)
			return -1;
		t0 = now_s();
		c0 = icrc_calls;
		/* Bounded: loopback has queued them all before sendmmsg returned. */
		for (int have = 0, tries = 0; have < want && tries < 1000; tries++) {
			n = xr_link_recv(l, f, (unsigned)(want - have));
			for (int i = 0; i < n; i++) {
				struct xr_pkt p;
				unsigned flags = XR_PARSE_TRANSPORT_LENGTHS;
				if (honour && (f[i]->rx_flags & XR_FRAME_ICRC_VERIFIED))
					flags |= XR_PARSE_NO_ICRC;
				enum xr_parse_err e = xr_pkt_parse(f[i]->data, f[i]->len, 0, flags, &p);
				if (e != XR_PARSE_OK && !r->bad++)
					fprintf(stderr, "bench-udp-rx: parse error %d, len %u, flags %x\n", e, f[i]->len, f[i]->rx_flags);
				r->recovered += (f[i]->rx_flags & XR_FRAME_ICRC_ID_RECOVERED) != 0;
				xr_link_frame_free(l, f[i]);
			}
			have += n > 0 ? n : 0;
			got += (uint64_t)(n > 0 ? n : 0);
		}
		t += now_s() - t0;
		calls += icrc_calls - c0;
	}
	if (!got)
		return -1;
	r->ns = t * 1e9 / (double)got;
	r->passes = (double)calls / (double)got;
	return 0;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	unsigned packets = quick ? 256 : 20000, rounds = quick ? 1 : 9;
	struct xr_link_udp_opts uo = { .no_host_path = true };
	static uint8_t payload[PAYLOAD], frame[2][XR_MAX_FRAME];
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct xr_link *l = xr_link_udp_ex(ADDR, &uo);
	struct xr_pkt pk;
	size_t len, l4 = 14 + 20 + 8;
	struct result best[2][2];
	double pass_ns;
	int fd[2];

	if (!l) {
		perror("bench-udp-rx: udp link on " ADDR);
		return 1;
	}
	memset(payload, 0x5A, sizeof(payload));
	xr_pkt_init(&pk, XR_OP_RC_RDMA_WRITE_MIDDLE);
	xr_gid_parse(&pk.sgid, "127.0.0.1");
	xr_gid_parse(&pk.dgid, ADDR);
	pk.dqpn = 0x11;
	pk.payload = payload;
	pk.payload_len = PAYLOAD;
	/* fd[0]: a DF UDP socket, so ID 0 (xroce). The ICRC covers the source
	 * port: its frame says the socket's. */
	pk.sport = 0xC3A0;
	len = xr_pkt_build(&pk, frame[0], sizeof(frame[0]));
	fd[0] = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &src.sin_addr);
	src.sin_port = htons(pk.sport);
	setsockopt(fd[0], SOL_SOCKET, SO_NO_CHECK, &(int){ 1 }, sizeof(int));
	setsockopt(fd[0], IPPROTO_IP, IP_MTU_DISCOVER, &(int){ IP_PMTUDISC_DO }, sizeof(int));
	if (fd[0] < 0 || bind(fd[0], (struct sockaddr *)&src, sizeof(src))) {
		perror("bench-udp-rx: sender");
		return 1;
	}
	/* fd[1]: whole IPv4 packets with ID 0x1234, header checksum and ICRC to match (rxe). */
	memcpy(frame[1], frame[0], len);
	put_id(frame[1] + 14, len - 14);
	fd[1] = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	for (int s = 0; s < 2; s++)
		for (int h = 0; h < 2; h++)
			best[s][h].ns = 1e30;
	for (unsigned r = 0; r < rounds; r++)
		for (int s = 0; s < 2; s++)
			for (int h = 0; h < 2; h++) {
				struct result x;
				size_t off = s ? 14 : l4;
				if (s && fd[1] < 0)
					continue;
				if (run(l, fd[s], frame[s] + off, len - off, packets, h, &x) || x.bad) {
					fprintf(stderr, "bench-udp-rx: a round failed (%llu packets refused)\n",
						(unsigned long long)x.bad);
					return 1;
				}
				if (x.ns < best[s][h].ns)
					best[s][h] = x;
			}
	{
		/* One ICRC pass over the packet alone, for scale. */
		const uint8_t *ip = frame[0] + 14;
		double t0 = now_s();
		unsigned n = quick ? 1000 : 200000;
		volatile uint32_t sink = 0;
		for (unsigned i = 0; i < n; i++)
			sink ^= xr_icrc(ip, len - 14 - XR_ICRC_LEN);
		pass_ns = (now_s() - t0) * 1e9 / n;
		(void)sink;
	}
	printf("UDP link receive + engine parse, %d-byte RoCE datagrams over loopback (best of %u rounds of %u)\n",
	       (int)(len - l4), rounds, packets);
	for (int s = 0; s < (fd[1] < 0 ? 1 : 2); s++)
		printf("  %s: now %.0f ns/packet, %.2f ICRC passes; engine checking again (before) %.0f ns/packet, "
		       "%.2f passes; saved %.0f ns\n",
		       s ? "IPv4 ID recovered (rxe's IDs)" : "IPv4 ID 0 (xroce's)", best[s][1].ns, best[s][1].passes,
		       best[s][0].ns, best[s][0].passes, best[s][0].ns - best[s][1].ns);
	printf("  frames with the ID recovered: %llu of %u (ID 0), %llu of %u (rxe's IDs); one ICRC pass over the "
	       "packet alone: %.0f ns (before, rxe's IDs took a third: the recovery's own)\n",
	       (unsigned long long)best[0][1].recovered, packets, (unsigned long long)best[1][1].recovered, packets,
	       pass_ns);
	close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	xr_link_close(l);
	return 0;
}
