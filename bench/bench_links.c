/* SPDX-License-Identifier: MIT */
/*
 * Goodput of xroce's network links for 64 KiB RDMA WRITEs at 4 KiB MTU,
 * against a plain blaster on the same path in the same run: UDP datagrams
 * of the same size with the same batching (sendmmsg/recvmmsg of 32),
 * AF_PACKET frames of the same size, or for the XDP link the same frames
 * through bare AF_XDP sockets (xdp_blaster.c). Both ends live in this process; each
 * end's sockets are made inside its own network namespace (setns), so
 * traffic crosses the veth pair between them. Each row ends with the
 * link's latency on fresh links (links_lat.c).
 *
 * XROCE_BENCH_GSO=1 adds, for the UDP row, the kernel's best plain path
 * for reference (UDP GSO + GRO, which xroce does not use; see
 * udp_gso_blaster): the ratio stays against the like-for-like blaster.
 *
 *   bench-links udp NS_A ADDR_A NS_B ADDR_B
 *   bench-links raw NS_A IF_A ADDR_A NS_B IF_B ADDR_B
 *   bench-links xdp NS_A IF_A ADDR_A NS_B IF_B ADDR_B
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../tests/unit/rc_harness.h"
#include "links_lat.h"
#include "xdp_blaster.h"

#define SECONDS 2.0
#define PAYLOAD 4096
#define DGRAM (12 + PAYLOAD + 4)            /* BTH + payload + ICRC */
#define FRAME (14 + 20 + 8 + DGRAM)
#define BATCH 32

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int enter_ns(const char *name)
{
	char path[256];
	int fd, rc;
	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

/* ---- xroce ---- */

struct pumper {
	struct xr_engine *e;
	volatile int stop;
};

static void *pump_thread(void *arg)
{
	struct pumper *pu = arg;
	while (!pu->stop)
		xr_engine_progress(pu->e);
	return NULL;
}

/* Which way a link carried frames, cumulative: the kernel path under test
 * (UDP: the socket; raw and XDP: the link's own counts, AF_PACKET or the
 * XDP socket being their only way, and for XDP the filter's hand-overs,
 * counted on arrival, so frames still in the ring are not yet the link's)
 * and any other (the UDP link's host path: shared memory, not the kernel). */
struct path_count {
	uint64_t kernel_tx, kernel_rx, other, filtered;
	bool xdp;
};

static void path_count(struct xr_link *l, struct path_count *c)
{
	struct xr_link_host_stats hs;
	struct xr_link_xdp_info xi;

	memset(c, 0, sizeof(*c));
	if (!xr_link_host_stats(l, &hs) && !strcmp(l->kind, "udp")) {
		c->kernel_tx = hs.tx_net;
		c->kernel_rx = hs.rx_net;
		c->other = hs.tx_host + hs.rx_host;
	} else if (!xr_link_xdp_info(l, &xi)) {
		c->kernel_tx = l->stats.tx_frames;
		c->kernel_rx = l->stats.rx_frames;
		c->filtered = xi.filt_roce;
		c->xdp = true;
	} else {
		c->kernel_tx = l->stats.tx_frames;
		c->kernel_rx = l->stats.rx_frames;
	}
}

/* A figure counts only if every packet each engine sent and received went
 * the way under test: a same-host shortcut must not pass for the kernel's
 * UDP over the veth. -1 with the evidence printed otherwise. */
static int path_verify(struct xr_link *l, const struct path_count *before, struct xr_context *ctx, const char *end)
{
	struct path_count now;
	uint64_t tx = 0, rx = 0, ktx, krx;

	path_count(l, &now);
	xr_regio_read_counter(xr_context_regs(ctx), XR_CNT_TX_PKTS, &tx);
	xr_regio_read_counter(xr_context_regs(ctx), XR_CNT_RX_PKTS, &rx);
	ktx = now.kernel_tx - before->kernel_tx;
	krx = now.kernel_rx - before->kernel_rx;
	if (now.other == before->other && ktx >= tx && krx >= rx && tx && rx &&
	    (!now.xdp || now.filtered > before->filtered))
		return 0;
	fprintf(stderr, "bench-links: end %s did not use the %s link's kernel path alone: engine sent %llu, received "
		"%llu packets; the kernel path carried %llu out, %llu in; another path (host shared memory) %llu "
		"frames. Result refused.\n", end, l->kind, (unsigned long long)tx, (unsigned long long)rx,
		(unsigned long long)ktx, (unsigned long long)krx, (unsigned long long)(now.other - before->other));
	return -1;
}

/* split: each end's engine on its own thread (the poster runs a's, a
 * second thread b's), as the blaster has a sender and a sink thread;
 * otherwise one thread runs both. */
static double xroce_goodput(struct xr_link *la, struct xr_link *lb, const char *aa, const char *ab, bool split)
{
	struct pair p;
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_4096, .buf_len = 64u << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .sq_depth = 256, .cq_depth = 1024 };
	struct pumper pu = { 0 };
	struct path_count ca, cb;
	pthread_t t;
	double bps;

	memset(&p, 0, sizeof(p));
	p.mode = o.mode;
	p.la = la;
	p.lb = lb;
	if (h_end_open(&p.a, la, aa, &o) || h_end_open(&p.b, lb, ab, &o) ||
	    h_connect(p.a.qp[0], p.b.qp[0], p.b.ctx, &o, 1, 2) || h_connect(p.b.qp[0], p.a.qp[0], p.a.ctx, &o, 2, 1)) {
		fprintf(stderr, "bench-links: xroce setup failed: %s\n", strerror(errno));
		return -1;
	}
	path_count(la, &ca);
	path_count(lb, &cb);
	pu.e = xr_context_engine(p.b.ctx);
	if (split) {
		p.b_driven_elsewhere = true;
		pthread_create(&t, NULL, pump_thread, &pu);
	}
	bps = h_write_stream(&p, 64 << 10, 32, 8, SECONDS);
	if (split) {
		pu.stop = 1;
		pthread_join(t, NULL);
	}
	{
		uint64_t retx = 0, drops = 0;
		xr_regio_read_counter(xr_context_regs(p.a.ctx), XR_CNT_RETRANSMITS, &retx);
		xr_regio_read_counter(xr_context_regs(p.b.ctx), XR_CNT_OUT_OF_SEQ, &drops);
		fprintf(stderr, "  (xroce, %s: %llu retransmissions, %llu out-of-sequence arrivals)\n",
			split ? "a thread per end" : "one thread", (unsigned long long)retx, (unsigned long long)drops);
	}
	if (path_verify(la, &ca, p.a.ctx, "a") || path_verify(lb, &cb, p.b.ctx, "b"))
		bps = -1;
	h_end_close(&p.a);
	h_end_close(&p.b);
	return bps;
}

/* ---- plain blasters ---- */

struct sink {
	int fd;
	size_t frame;
	volatile int stop;
	uint64_t frames;
};

static void *sink_thread(void *arg)
{
	struct sink *s = arg;
	static uint8_t bufs[BATCH][FRAME + 64];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];

	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	/* Busy polling, as xroce's receiving end does: a sink that sleeps
	 * would make the sender pay a wakeup per burst. */
	while (!s->stop) {
		int n = recvmmsg(s->fd, m, BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++)
			if (m[i].msg_len >= s->frame)
				s->frames++;
	}
	return NULL;
}

/* Sends BATCH-sized bursts from fd for SECONDS; the sink counts. */
static double blast(int out, struct sink *s, const void *dst, socklen_t dlen, const uint8_t *pkt, size_t len)
{
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	pthread_t t;
	double t0, t1 = 0;

	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = (void *)pkt;
		iov[i].iov_len = len;
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_name = (void *)dst;
		m[i].msg_hdr.msg_namelen = dlen;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	pthread_create(&t, NULL, sink_thread, s);
	t0 = now_s();
	do {
		if (sendmmsg(out, m, BATCH, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
			break;
		t1 = now_s();
	} while (t1 - t0 < SECONDS);
	usleep(50000);
	s->stop = 1;
	pthread_join(t, NULL);
	return (double)s->frames * PAYLOAD / (t1 - t0);
}

static double udp_blaster(const char *nsa, const char *aa, const char *nsb, const char *ab)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(4792) }, b = a;
	static uint8_t pkt[DGRAM];
	struct sink s = { .frame = DGRAM };
	int out, one = 1;

	inet_pton(AF_INET, aa, &a.sin_addr);
	inet_pton(AF_INET, ab, &b.sin_addr);
	enter_ns(nsb);
	s.fd = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4 << 20 }, sizeof(int));
	if (bind(s.fd, (struct sockaddr *)&b, sizeof(b)))
		return -1;
	enter_ns(nsa);
	out = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(out, SOL_SOCKET, SO_SNDBUF, &(int){ 4 << 20 }, sizeof(int));
	setsockopt(out, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one));
	if (bind(out, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	memset(pkt, 0x5A, sizeof(pkt));
	{
		double g = blast(out, &s, &b, sizeof(b), pkt, sizeof(pkt));
		close(out);
		close(s.fd);
		return g;
	}
}

/* For reference (XROCE_BENCH_GSO=1): the kernel's best plain UDP path for
 * the same datagrams, which xroce does not use: UDP GSO on send (one
 * sendmsg carries GSO_SEGS datagrams of DGRAM bytes; Linux refuses GSO with
 * checksums off, so the UDP checksum is on) and UDP GRO on the sink (a
 * read returns up to 64 KiB of them, counted by the segment size). Over a
 * veth the segments are never split on the way. */
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#define GSO_SEGS 15   /* 15 x 4112 bytes: the most under 64 KiB of IP payload */

struct gso_sink {
	int fd;
	volatile int stop;
	uint64_t dgrams;
};

static void *gso_sink_thread(void *arg)
{
	struct gso_sink *s = arg;
	static uint8_t bufs[BATCH][GSO_SEGS * DGRAM + 64];
	static char ctl[BATCH][64];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];

	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
	}
	while (!s->stop) {
		int n;
		for (int i = 0; i < BATCH; i++) {
			memset(&m[i], 0, sizeof(m[i]));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			m[i].msg_hdr.msg_control = ctl[i];
			m[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
		}
		n = recvmmsg(s->fd, m, BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++)
			s->dgrams += m[i].msg_len / DGRAM;
	}
	return NULL;
}

static double udp_gso_blaster(const char *nsa, const char *aa, const char *nsb, const char *ab)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(4792) }, b = a;
	static uint8_t pkt[GSO_SEGS * DGRAM];
	union { char buf[CMSG_SPACE(sizeof(uint16_t))]; struct cmsghdr align; } ctl[2];
	struct mmsghdr m[2];
	struct iovec iov[2];
	struct gso_sink s = { 0 };
	pthread_t t;
	double t0, t1 = 0;
	int out;

	inet_pton(AF_INET, aa, &a.sin_addr);
	inet_pton(AF_INET, ab, &b.sin_addr);
	enter_ns(nsb);
	s.fd = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4 << 20 }, sizeof(int));
	if (setsockopt(s.fd, IPPROTO_UDP, UDP_GRO, &(int){ 1 }, sizeof(int)) || bind(s.fd, (struct sockaddr *)&b, sizeof(b)))
		return -1;
	enter_ns(nsa);
	out = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(out, SOL_SOCKET, SO_SNDBUF, &(int){ 4 << 20 }, sizeof(int));
	if (bind(out, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	memset(pkt, 0x5A, sizeof(pkt));
	/* Two messages of GSO_SEGS datagrams a call: 30, about BATCH, as the others. */
	for (int i = 0; i < 2; i++) {
		struct cmsghdr *c;
		iov[i].iov_base = pkt;
		iov[i].iov_len = sizeof(pkt);
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_name = &b;
		m[i].msg_hdr.msg_namelen = sizeof(b);
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_hdr.msg_control = ctl[i].buf;
		m[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
		c = CMSG_FIRSTHDR(&m[i].msg_hdr);
		c->cmsg_level = IPPROTO_UDP;   /* SOL_UDP */
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		*(uint16_t *)CMSG_DATA(c) = DGRAM;
	}
	pthread_create(&t, NULL, gso_sink_thread, &s);
	t0 = now_s();
	do {
		if (sendmmsg(out, m, 2, 0) < 0 && errno != ENOBUFS && errno != EAGAIN) {
			fprintf(stderr, "bench-links: GSO blaster: %s\n", strerror(errno));
			break;
		}
		t1 = now_s();
	} while (t1 - t0 < SECONDS);
	usleep(50000);
	s.stop = 1;
	pthread_join(t, NULL);
	close(out);
	close(s.fd);
	return (double)s.dgrams * PAYLOAD / (t1 - t0);
}

static int packet_socket(const char *ifname, struct sockaddr_ll *sll, uint8_t mac[6])
{
	struct ifreq ifr;
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	memset(sll, 0, sizeof(*sll));
	sll->sll_family = AF_PACKET;
	sll->sll_protocol = htons(ETH_P_ALL);
	sll->sll_ifindex = (int)if_nametoindex(ifname);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (fd < 0 || bind(fd, (struct sockaddr *)sll, sizeof(*sll)) || ioctl(fd, SIOCGIFHWADDR, &ifr))
		return -1;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4 << 20 }, sizeof(int));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ 4 << 20 }, sizeof(int));
	return fd;
}

/* The blasters' frame is a real RoCE v2 WRITE MIDDLE between the same
 * addresses, so the kernel on the way (which also looks at IPv4 frames
 * for the interface) treats it exactly as it treats xroce's. */
static int blaster_frame(uint8_t *frame, size_t cap, const uint8_t mac_a[6], const uint8_t mac_b[6], const char *aa,
			 const char *ab)
{
	static uint8_t payload[PAYLOAD];
	struct xr_pkt pk;

	memset(payload, 0x5A, sizeof(payload));
	xr_pkt_init(&pk, XR_OP_RC_RDMA_WRITE_MIDDLE);
	memcpy(pk.dmac, mac_b, 6);
	memcpy(pk.smac, mac_a, 6);
	if (xr_gid_parse(&pk.sgid, aa) || xr_gid_parse(&pk.dgid, ab))
		return -1;
	pk.dqpn = 0x11;
	pk.payload = payload;
	pk.payload_len = PAYLOAD;
	if (xr_pkt_build(&pk, frame, cap) != FRAME) {
		fprintf(stderr, "bench-links: the blaster's frame is not %d bytes\n", FRAME);
		return -1;
	}
	return 0;
}

static double raw_blaster(const char *nsa, const char *ifa, const char *aa, const char *nsb, const char *ifb,
			  const char *ab)
{
	struct sockaddr_ll la, lb;
	uint8_t mac_a[6], mac_b[6];
	static uint8_t frame[FRAME + 64];
	struct sink s = { .frame = FRAME };
	int out;

	enter_ns(nsb);
	s.fd = packet_socket(ifb, &lb, mac_b);
	enter_ns(nsa);
	out = packet_socket(ifa, &la, mac_a);
	if (s.fd < 0 || out < 0 || blaster_frame(frame, sizeof(frame), mac_a, mac_b, aa, ab))
		return -1;
	{
		double g = blast(out, &s, NULL, 0, frame, FRAME);
		close(out);
		close(s.fd);
		return g;
	}
}

/* The XDP links, each opened in its namespace; quiet: the mode is printed once. */
static int xdp_links(char **argv, const char *aa, const char *ab, struct xr_link **la, struct xr_link **lb)
{
	struct xr_link_xdp_opts o = { .quiet = true };

	if (enter_ns(argv[2]) || !(*la = xr_link_xdp(argv[3], aa, &o)) || enter_ns(argv[5]) ||
	    !(*lb = xr_link_xdp(argv[6], ab, &o))) {
		fprintf(stderr, "bench-links: xdp links: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* The AF_XDP blaster on fresh sockets bound as the link binds them. */
static double xdp_blast(char **argv, const char *aa, const char *ab, bool one_thread)
{
	static uint8_t frame[FRAME + 64];
	struct xr_link *la, *lb;
	double fps = -1;

	if (xdp_links(argv, aa, ab, &la, &lb))
		return -1;
	if (!blaster_frame(frame, sizeof(frame), la->mac, lb->mac, aa, ab)) {
		struct xr_link_xdp_info in;
		fps = xdp_blaster(la, lb, frame, FRAME, SECONDS, BATCH, one_thread);
		if (fps < 0)
			fprintf(stderr, "bench-links: AF_XDP blaster: %s\n", strerror(errno));
		/* Where the blaster's frames were lost, if they were: the sink's socket. */
		if (!xr_link_xdp_info(lb, &in) && (in.k_rx_dropped || in.k_rx_ring_full || in.k_fill_empty))
			fprintf(stderr, "  (AF_XDP blaster's sink: kernel dropped %llu, rx ring full %llu, fill ring empty %llu)\n",
				(unsigned long long)in.k_rx_dropped, (unsigned long long)in.k_rx_ring_full,
				(unsigned long long)in.k_fill_empty);
	}
	xr_link_close(la);
	xr_link_close(lb);
	return fps < 0 ? -1 : fps * PAYLOAD;
}

#define ROUNDS 3

static double median3(double v[ROUNDS])
{
	double a = v[0], b = v[1], c = v[2];
	if (a > b) { double t = a; a = b; b = t; }
	if (b > c) b = c;
	return a > b ? a : b;
}

enum kind { UDP, RAW, XDP };

/* A fresh pair of links of the kind, each in its namespace; mode (XDP):
 * how the socket attached. */
static int open_links(enum kind k, char **argv, const char *aa, const char *ab, struct xr_link **la,
		      struct xr_link **lb, const char **mode)
{
	xr_gid ga, gb;

	if (k == UDP) {
		/* Both ends are in this process, so the UDP link would take its
		 * host path (shared memory) between them: off, as the row
		 * measures the kernel's UDP over the veth, as its blaster does. */
		struct xr_link_udp_opts uo = { .no_host_path = true };
		if (enter_ns(argv[2]) || !(*la = xr_link_udp_ex(aa, &uo)) || enter_ns(argv[4]) ||
		    !(*lb = xr_link_udp_ex(ab, &uo))) {
			fprintf(stderr, "bench-links: udp links: %s\n", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (k == XDP) {
		struct xr_link_xdp_info in;
		if (xdp_links(argv, aa, ab, la, lb))
			return -1;
		xr_gid_parse(&ga, aa);
		xr_gid_parse(&gb, ab);
		xr_link_xdp_add_neigh(*la, &gb, (*lb)->mac);
		xr_link_xdp_add_neigh(*lb, &ga, (*la)->mac);
		if (!xr_link_xdp_info(*la, &in))
			*mode = in.zerocopy ? (in.attach[0] == 'n' ? " (native XDP, zero-copy)" : " (generic XDP, zero-copy)")
					    : (in.attach[0] == 'n' ? " (native XDP, copy mode)" : " (generic XDP, copy mode)");
		return 0;
	}
	if (enter_ns(argv[2]) || !(*la = xr_link_raw(argv[3], aa, 0, 0)) || enter_ns(argv[5]) ||
	    !(*lb = xr_link_raw(argv[6], ab, 0, 0))) {
		fprintf(stderr, "bench-links: raw links: %s\n", strerror(errno));
		return -1;
	}
	/* Static neighbours (the seed's PEER_MAC way): with inline progress
	 * nobody would answer ARP while the other end resolves. */
	xr_gid_parse(&ga, aa);
	xr_gid_parse(&gb, ab);
	xr_link_raw_add_neigh(*la, &gb, (*lb)->mac);
	xr_link_raw_add_neigh(*lb, &ga, (*la)->mac);
	return 0;
}

int main(int argc, char **argv)
{
	struct xr_link *la, *lb;
	double x[ROUNDS], x1[ROUNDS], plain[ROUNDS], plain1[ROUNDS], gso[ROUNDS], mx, mx1, mp;
	bool want_gso;
	bool udp = argc == 6 && !strcmp(argv[1], "udp"), raw = argc == 8 && !strcmp(argv[1], "raw");
	bool xdp = argc == 8 && !strcmp(argv[1], "xdp");
	const char *mode = "";
	const char *aa = udp ? argv[3] : argv[4], *ab = udp ? argv[5] : argv[7];
	enum kind kind = udp ? UDP : xdp ? XDP : RAW;
	double lat_first[ROUNDS], lat_steady[ROUNDS];
	bool lat_ok = true;

	want_gso = udp && getenv("XROCE_BENCH_GSO") && atoi(getenv("XROCE_BENCH_GSO"));

	if (!udp && !raw && !xdp) {
		fprintf(stderr, "usage: bench-links udp NS_A ADDR_A NS_B ADDR_B\n"
				"       bench-links raw|xdp NS_A IF_A ADDR_A NS_B IF_B ADDR_B\n");
		return 2;
	}
	/* Rounds alternate the three measurements, so a noisy spell on this
	 * shared machine hits all of them; each figure is the median. */
	for (int r = 0; r < ROUNDS; r++) {
		if (open_links(kind, argv, aa, ab, &la, &lb, &mode))
			return 1;
		x1[r] = xroce_goodput(la, lb, aa, ab, false);
		x[r] = xroce_goodput(la, lb, aa, ab, true);
		xr_link_close(la);
		xr_link_close(lb);
		plain[r] = udp ? udp_blaster(argv[2], aa, argv[4], ab)
			 : xdp ? xdp_blast(argv, aa, ab, false) : raw_blaster(argv[2], argv[3], aa, argv[5], argv[6], ab);
		/* The XDP blaster also runs as one thread, like for like with xroce's
		 * one-thread figure (on a loaded 2-core machine two spinning
		 * threads rarely both get a core). */
		plain1[r] = xdp ? xdp_blast(argv, aa, ab, true) : 1;
		gso[r] = want_gso ? udp_gso_blaster(argv[2], aa, argv[4], ab) : 1;
		if (x[r] < 0 || x1[r] < 0 || plain[r] <= 0 || plain1[r] <= 0 || gso[r] <= 0)
			return 1;
	}
	/* Latency on links as fresh as a program's (their first traffic),
	 * the median of rounds on new links; a failed one only loses the row. */
	for (int r = 0; r < ROUNDS && lat_ok; r++) {
		if (open_links(kind, argv, aa, ab, &la, &lb, &mode))
			return 1;
		lat_ok = !links_latency(la, lb, aa, ab, &lat_first[r], &lat_steady[r]);
		xr_link_close(la);
		xr_link_close(lb);
	}
	mx = median3(x);
	mx1 = median3(x1);
	mp = median3(plain);
	/* Like for like: the blaster runs a sender and a sink thread, so the
	 * ratio takes xroce with a thread per end; one thread for both ends is
	 * shown beside it. */
	printf("%s link%s (median of %d rounds): plain %s blaster (%d-byte %s, batches of %d, sender + sink thread) "
	       "%.2f GB/s of payload\n"
	       "  xroce RDMA WRITE 64 KiB @ 4 KiB MTU, a thread per end: %.2f GB/s; ratio %.2f (target >= 0.90)\n"
	       "  xroce, one thread for both ends: %.2f GB/s (%.2f)\n",
	       udp ? "UDP" : xdp ? "XDP" : "raw", mode, ROUNDS, udp ? "UDP" : xdp ? "AF_XDP" : "AF_PACKET",
	       udp ? DGRAM : FRAME, udp ? "datagrams" : "frames", BATCH, mp / 1e9, mx / 1e9, mx / mp,
	       mx1 / 1e9, mx1 / mp);
	if (lat_ok)
		printf("  latency, 8-byte WRITE ping-pong on fresh links, a thread per end (median half round trip, "
		       "median of %d rounds): first 1,000 round trips %.2f us, steady %.2f us (%.2fx)\n", ROUNDS,
		       median3(lat_first), median3(lat_steady), median3(lat_first) / median3(lat_steady));
	else
		printf("  latency: n/a (a round trip failed; see above)\n");
	if (want_gso) {
		double mg = median3(gso);
		printf("  for reference, the kernel's best plain path, not xroce's (UDP GSO of %d x %d bytes + GRO, UDP "
		       "checksum on): %.2f GB/s, %.2fx the blaster; xroce a thread per end: %.2f of it\n",
		       GSO_SEGS, DGRAM, mg / 1e9, mg / mp, mx / mg);
	}
	if (xdp) {
		double mp1 = median3(plain1);
		printf("  plain AF_XDP blaster, one thread for both ends: %.2f GB/s; xroce one thread: ratio %.2f "
		       "(target >= 0.90)\n", mp1 / 1e9, mx1 / mp1);
	}
	return 0;
}
