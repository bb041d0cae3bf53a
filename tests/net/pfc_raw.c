/* SPDX-License-Identifier: MIT */
/*
 * PFC on the raw link, over a real veth pair (tests/net/veth_pair.sh makes it
 * in a namespace): two engines in this process, A on IFA (10.0.0.1) and B
 * on IFB (10.0.0.2), RC QPs at DSCP 26 (priority 3), driven inline on the
 * real clock. A honours PFC for priority 3 at PFC_LINK_MBPS 1000 (65535
 * quanta: 33.6 ms, long enough to see in wall-clock time, shorter than the
 * watchdog's 100 ms):
 *  1. a PFC frame from B's raw link (xr_link_raw_send_pfc) holds A's WRITE
 *     until the pause runs out;
 *  2. an XON (time 0) lets it go at once;
 *  3. the test frame of docs (congestion.md section 5), written byte by
 *     byte on a plain AF_PACKET socket, pauses A; a PAUSE frame with
 *     pause_rx off is a counted drop;
 *  4. generation: A not progressed while B writes 2 MiB to it; A's
 *     receive ring fills past PFC_XOFF (6 % here), A sends XOFF (B's raw
 *     link counts it), then XON once drained, and the WRITE completes.
 * Exit 0 when every check holds; each line says what was measured.
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../unit/rc_harness.h"
#include "xroce/engine.h"
#include "xroce/regio.h"
#include "xroce/regmap.h"
#include "net_check.h"

#define PRIO 3

static uint64_t cnt(struct end *e, enum xr_counter c)
{
	uint64_t v = 0;
	xr_regio_read_counter(xr_context_regs(e->ctx), c, &v);
	return v;
}

static uint32_t reg(struct end *e, uint32_t off)
{
	uint32_t v = 0;
	xr_engine_reg_read(xr_context_engine(e->ctx), off, &v);
	return v;
}

static void progress(struct end *a, struct end *b)
{
	if (a)
		xr_engine_progress(xr_context_engine(a->ctx));
	if (b)
		xr_engine_progress(xr_context_engine(b->ctx));
}

static void post_write(struct end *from, struct end *to, uint32_t len, uint64_t id)
{
	struct xr_sge sg = { (uintptr_t)h_data(from), len, from->mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };

	w.wr.rdma.remote_addr = (uintptr_t)h_data(to);
	w.wr.rdma.rkey = to->mr->rkey;
	if (xr_post_send(from->qp[0], &w, NULL)) {
		printf("FAIL post\n");
		exit(1);
	}
}

/* Progresses both until from's CQ has a completion or ms pass: the ms it
 * took, or -1. */
static long wait_done(struct end *a, struct end *b, struct end *from, long ms)
{
	uint64_t start = h_now_ns();
	struct xr_wc wc;

	while (h_now_ns() - start < (uint64_t)ms * 1000000u) {
		progress(a, b);
		if (xr_poll_cq(from->cq, 1, &wc) == 1) {
			if (wc.status != XR_WC_SUCCESS) {
				printf("FAIL completion status %d\n", wc.status);
				exit(1);
			}
			return (long)((h_now_ns() - start) / 1000000u);
		}
		usleep(50);
	}
	return -1;
}

static bool wait_counter(struct end *a, struct end *b, struct end *e, enum xr_counter c, uint64_t want, long ms)
{
	uint64_t start = h_now_ns();

	while (h_now_ns() - start < (uint64_t)ms * 1000000u) {
		progress(a, b);
		if (cnt(e, c) >= want)
			return true;
		usleep(50);
	}
	return false;
}

static int send_bytes(const char *ifname, const uint8_t *frame, size_t len)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(ifname),
				   .sll_halen = 6 };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	ssize_t n;

	if (fd < 0)
		return -1;
	memcpy(sll.sll_addr, frame, 6);
	n = sendto(fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll));
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 4 << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1, .traffic_class = 26 << 2 };
	struct end a = { 0 }, b = { 0 };
	struct xr_link *la, *lb;
	xr_gid ga, gb;
	long t;

	if (argc != 3) {
		fprintf(stderr, "usage: pfc_raw IFA IFB\n");
		return 2;
	}
	la = xr_link_raw(argv[1], "10.0.0.1", 0, 0);
	lb = xr_link_raw(argv[2], "10.0.0.2", 0, 0);
	if (!la || !lb) {
		printf("FAIL raw links: %s\n", strerror(errno));
		return 1;
	}
	xr_gid_parse(&ga, "10.0.0.1");
	xr_gid_parse(&gb, "10.0.0.2");
	xr_link_raw_add_neigh(la, &gb, lb->mac);
	xr_link_raw_add_neigh(lb, &ga, la->mac);
	if (h_end_open(&a, la, "10.0.0.1", &o) || h_end_open(&b, lb, "10.0.0.2", &o) ||
	    h_connect(a.qp[0], b.qp[0], b.ctx, &o, 100, 200) || h_connect(b.qp[0], a.qp[0], a.ctx, &o, 200, 100)) {
		printf("FAIL devices\n");
		return 1;
	}
	xr_engine_reg_write(xr_context_engine(a.ctx), XR_REG_PFC_CTRL, 1u << (8 + PRIO));
	xr_engine_reg_write(xr_context_engine(a.ctx), XR_REG_PFC_LINK_MBPS, 1000);

	post_write(&a, &b, 65536, 1);
	t = wait_done(&a, &b, &a, 2000);
	CHECK(t >= 0, "a 64 KiB WRITE over the veth without a pause: %ld ms", t);

	/* 1. A pause from B's link, 65535 quanta at 1 Gb/s: 33.6 ms. */
	xr_link_raw_send_pfc(lb, 1u << PRIO, 0xFFFF);
	CHECK(wait_counter(&a, &b, &a, XR_CNT_PFC_PAUSE_RCVD, 1, 1000), "A took the PFC frame (pfc_pause_rcvd %llu)",
	      (unsigned long long)cnt(&a, XR_CNT_PFC_PAUSE_RCVD));
	uint64_t t0 = h_now_ns();
	CHECK((reg(&a, XR_REG_PFC_STATUS) & 0xFF) == 1u << PRIO, "PFC_STATUS paused 0x%02x",
	      reg(&a, XR_REG_PFC_STATUS) & 0xFF);
	post_write(&a, &b, 65536, 2);
	t = wait_done(&a, &b, &a, 1500);
	t = t < 0 ? -1 : (long)((h_now_ns() - t0) / 1000000u);
	CHECK(t >= 30 && t <= 90, "the WRITE waited %ld ms for the pause to run out (33.6 expected)", t);
	CHECK(cnt(&a, XR_CNT_PFC_PAUSED_US_PRIO3) >= 33000 && !cnt(&a, XR_CNT_PFC_WD_TRIPS), "pfc_paused_us_prio3 %llu",
	      (unsigned long long)cnt(&a, XR_CNT_PFC_PAUSED_US_PRIO3));

	/* 2. Paused again, then XON after 50 ms: the WRITE goes at once. */
	xr_link_raw_send_pfc(lb, 1u << PRIO, 0xFFFF);
	wait_counter(&a, &b, &a, XR_CNT_PFC_PAUSE_RCVD, 2, 1000);
	post_write(&a, &b, 65536, 3);
	t = wait_done(&a, &b, &a, 10);
	CHECK(t < 0, "paused: nothing completed in 10 ms");
	xr_link_raw_send_pfc(lb, 1u << PRIO, 0);
	t = wait_done(&a, &b, &a, 200);
	CHECK(t >= 0 && t < 15, "after the XON the WRITE completed in %ld ms (xon_rcvd %llu)", t,
	      (unsigned long long)cnt(&a, XR_CNT_PFC_XON_RCVD));

	/* 3. The docs' test frame, written by hand, and a PAUSE A refuses. */
	static const uint8_t spec[60] = {
		0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x08, 0x01, 0x01,
		0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
	};
	static const uint8_t pause[60] = {
		0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x08, 0x00, 0x01,
		0xff, 0xff,
	};
	uint64_t drops = cnt(&a, XR_CNT_DROP_MAC_CONTROL);
	CHECK(send_bytes(argv[2], spec, sizeof(spec)) == 0 &&
	      wait_counter(&a, &b, &a, XR_CNT_PFC_PAUSE_RCVD, 3, 1000) &&
	      (reg(&a, XR_REG_PFC_STATUS) & 0xFF) == 1u << PRIO,
	      "the hand-built test frame (priority 3, 0xFFFF) paused A");
	xr_link_raw_send_pfc(lb, 1u << PRIO, 0);
	CHECK(send_bytes(argv[2], pause, sizeof(pause)) == 0 &&
	      wait_counter(&a, &b, &a, XR_CNT_DROP_MAC_CONTROL, drops + 1, 1000),
	      "a PAUSE frame with pause_rx off: rx_drop_mac_control %llu",
	      (unsigned long long)cnt(&a, XR_CNT_DROP_MAC_CONTROL));
	wait_counter(&a, &b, &a, XR_CNT_PFC_XON_RCVD, 2, 1000);

	/* 4. Generation: B writes 2 MiB while A sleeps; A's ring fills. */
	xr_engine_reg_write(xr_context_engine(a.ctx), XR_REG_PFC_CTRL, (1u << (8 + PRIO)) | (1u << PRIO));
	/* 6 % of the ring (4096 slots at this MTU: 245 frames): a burst into a veth
	 * loses frames in the kernel's backlog queue (netdev_max_backlog, 1000)
	 * long before the ring is full; 2 MiB is 512 frames. */
	xr_engine_reg_write(xr_context_engine(a.ctx), XR_REG_PFC_XOFF, 6);
	xr_engine_reg_write(xr_context_engine(a.ctx), XR_REG_PFC_XON, 1);
	uint64_t seen = xr_link_raw_pfc_rcvd(lb);
	post_write(&b, &a, 2 << 20, 4);
	for (int i = 0; i < 2000; i++) {
		progress(NULL, &b);
		usleep(20);
	}
	{
		uint32_t q = 0, cap = 0;
		int rc = xr_link_rx_backlog(la, &q, &cap);
		printf("     A's receive backlog after B's burst: %u of %u (rc %d)\n", q, cap, rc);
	}
	progress(&a, NULL);   /* one pass: the backlog as it stands */
	printf("     after B's burst: A sent %llu XOFF\n", (unsigned long long)cnt(&a, XR_CNT_PFC_PAUSE_SENT));
	t = wait_done(&a, &b, &b, 10000);
	CHECK(cnt(&a, XR_CNT_PFC_PAUSE_SENT) >= 1 && xr_link_raw_pfc_rcvd(lb) > seen,
	      "A's receive ring crossed PFC_XOFF: %llu XOFF sent, B's raw link counted %llu PFC frames",
	      (unsigned long long)cnt(&a, XR_CNT_PFC_PAUSE_SENT), (unsigned long long)(xr_link_raw_pfc_rcvd(lb) - seen));
	CHECK(cnt(&a, XR_CNT_PFC_XON_SENT) >= 1 && ((reg(&a, XR_REG_PFC_STATUS) >> 8) & 0xFF) == 0,
	      "XON followed: %llu sent, no XOFF out", (unsigned long long)cnt(&a, XR_CNT_PFC_XON_SENT));
	CHECK(t >= 0, "B's 2 MiB WRITE completed (%ld ms; B retransmissions %llu)", t,
	      (unsigned long long)cnt(&b, XR_CNT_RETRANSMITS));

	h_end_close(&a);
	h_end_close(&b);
	xr_link_close(la);
	xr_link_close(lb);
	printf("%s: %d failed\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
