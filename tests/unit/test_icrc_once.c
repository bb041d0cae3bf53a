/* SPDX-License-Identifier: MIT */
/*
 * The UDP link's receive path computes each packet's ICRC once (issue 13,
 * goal 6): the link computes it anyway (to try IPv4 ID 0 and recover
 * another ID), marks a match XR_FRAME_ICRC_VERIFIED, and the engine's parse
 * then skips its own pass. Every xr_icrc call is counted (the test links
 * with --wrap=xr_icrc): after RC traffic between two engines on UDP links
 * over loopback, the calls are exactly one per packet sent plus one per
 * packet received (before: two per packet received). A datagram with a
 * corrupted ICRC is still dropped and counted (rx_drop_bad_icrc).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "wire/hdr.h"
#include "xroce/link.h"
#include "xroce/wire.h"

#define ADDR_A "127.0.0.21"
#define ADDR_B "127.0.0.22"
#define WRITES 32
#define MSG (16u << 10)

uint32_t __real_xr_icrc(const uint8_t *ip, size_t len);
uint32_t __wrap_xr_icrc(const uint8_t *ip, size_t len);

static uint64_t icrc_calls;

/* Inline progress: every call is on this thread. */
uint32_t __wrap_xr_icrc(const uint8_t *ip, size_t len)
{
	icrc_calls++;
	return __real_xr_icrc(ip, len);
}

static void open_pair(struct pair *p, const struct h_opts *o)
{
	struct xr_link_udp_opts uo = { .no_host_path = true };   /* the kernel's UDP, not shared memory */

	memset(p, 0, sizeof(*p));
	p->mode = o->mode;
	p->la = xr_link_udp_ex(ADDR_A, &uo);
	p->lb = xr_link_udp_ex(ADDR_B, &uo);
	assert_non_null(p->la);
	assert_non_null(p->lb);
	assert_int_equal(h_end_open(&p->a, p->la, ADDR_A, o), 0);
	assert_int_equal(h_end_open(&p->b, p->lb, ADDR_B, o), 0);
	assert_int_equal(h_connect(p->a.qp[0], p->b.qp[0], p->b.ctx, o, 100, 200), 0);
	assert_int_equal(h_connect(p->b.qp[0], p->a.qp[0], p->a.ctx, o, 200, 100), 0);
}

static void close_pair(struct pair *p)
{
	h_end_close(&p->a);
	h_end_close(&p->b);
	xr_link_close(p->la);
	xr_link_close(p->lb);
}

/* WRITES writes from A to B; with take_sport, A's QP's rxe source port is
 * taken first, so A's link sends from 4791 and patches port and ICRC. */
static void one_icrc_per_packet(bool take_sport)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1u << 20, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7 };
	struct pair p;
	struct xr_wc wc;
	uint64_t tx, rx;
	int taker = -1;

	open_pair(&p, &o);
	if (take_sport) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		a.sin_port = htons(xr_rxe_udp_sport(xr_qp_num(p.a.qp[0]), xr_qp_num(p.b.qp[0])));
		inet_pton(AF_INET, ADDR_A, &a.sin_addr);
		taker = socket(AF_INET, SOCK_DGRAM, 0);
		assert_true(taker >= 0);
		assert_int_equal(bind(taker, (struct sockaddr *)&a, sizeof(a)), 0);
	}
	icrc_calls = 0;
	for (unsigned i = 0; i < WRITES; i++) {
		struct xr_sge s = { (uintptr_t)h_data(&p.a) + i * MSG, MSG, p.a.mr->lkey };
		struct xr_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
					.send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&p.b) + i * MSG;
		w.wr.rdma.rkey = p.b.mr->rkey;
		assert_int_equal(xr_post_send(p.a.qp[0], &w, NULL), 0);
	}
	for (unsigned i = 0; i < WRITES; i++) {
		assert_int_equal(h_wait(&p, &p.a, &wc, 2000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	tx = h_counter(&p.a, XR_CNT_TX_PKTS) + h_counter(&p.b, XR_CNT_TX_PKTS);
	rx = h_counter(&p.a, XR_CNT_RX_PKTS) + h_counter(&p.b, XR_CNT_RX_PKTS);
	assert_true(rx >= WRITES * (MSG / 1024));   /* every data packet arrived, and their ACKs */
	assert_int_equal(h_counter(&p.b, xr_counter_of_parse_err(XR_PARSE_BAD_ICRC)), 0);
	/* One build per packet sent, one check per packet received: a
	 * patched source port updates the ICRC without a second pass. */
	assert_int_equal(icrc_calls, tx + rx);
	{
		struct xr_link_host_stats st;
		assert_int_equal(xr_link_host_stats(p.la, &st), 0);
		assert_int_equal(st.sport_fallbacks, take_sport ? 1 : 0);   /* the case is what it claims */
	}
	if (taker >= 0)
		close(taker);
	close_pair(&p);
}

static void test_one_icrc_per_packet(void **state)
{
	(void)state;
	one_icrc_per_packet(false);
}

/* A's rxe source port is taken: every packet leaves from 4791, its ICRC
 * updated for the new port. All arrive intact (B counts no ICRC error)
 * and no packet's ICRC is computed twice (before: a second full pass per
 * packet, and a wrong ICRC for any payload not in the frame). */
static void test_a_taken_source_port_is_patched_in_place(void **state)
{
	(void)state;
	one_icrc_per_packet(true);
}

/* A RoCE datagram to B's QP whose ICRC is wrong by one bit: the link's
 * pass does not verify it, so the engine's parse checks it and drops it. */
static void test_corrupt_dropped(void **state)
{
	struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 1u << 16 };
	static uint8_t payload[256], frame[1024];
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET,
								      .sin_port = htons(XR_ROCE_UDP_PORT) };
	struct pair p;
	struct xr_pkt pk;
	size_t len, l4;
	uint64_t before_rx, until;
	int fd;

	(void)state;
	open_pair(&p, &o);
	xr_pkt_init(&pk, XR_OP_RC_SEND_ONLY);
	assert_int_equal(xr_gid_parse(&pk.sgid, ADDR_A), 0);
	assert_int_equal(xr_gid_parse(&pk.dgid, ADDR_B), 0);
	pk.dqpn = xr_qp_num(p.b.qp[0]);
	pk.psn = 200;
	pk.payload = payload;
	pk.payload_len = sizeof(payload);
	len = xr_pkt_build(&pk, frame, sizeof(frame));
	assert_true(len > 0);
	frame[len - 1] ^= 0x10;   /* the ICRC's last byte */
	l4 = XR_ETH_HLEN + XR_IPV4_HLEN + XR_UDP_HLEN;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &src.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	inet_pton(AF_INET, ADDR_B, &dst.sin_addr);
	before_rx = h_counter(&p.b, XR_CNT_RX_PKTS);
	icrc_calls = 0;
	assert_int_equal(sendto(fd, frame + l4, len - l4, 0, (struct sockaddr *)&dst, sizeof(dst)),
			 (ssize_t)(len - l4));
	until = h_now_ms() + 2000;
	while (h_counter(&p.b, xr_counter_of_parse_err(XR_PARSE_BAD_ICRC)) == 0 && h_now_ms() < until)
		xr_engine_progress(xr_context_engine(p.b.ctx));
	assert_int_equal(h_counter(&p.b, xr_counter_of_parse_err(XR_PARSE_BAD_ICRC)), 1);
	assert_int_equal(h_counter(&p.b, XR_CNT_RX_PKTS), before_rx);
	/* The link's pass, the recovery reusing it (no ID explains a flipped
	 * ICRC bit), the engine's own check: two, as the frame was not verified. */
	assert_int_equal(icrc_calls, 2);
	close(fd);
	close_pair(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_icrc_per_packet),
		cmocka_unit_test(test_a_taken_source_port_is_patched_in_place),
		cmocka_unit_test(test_corrupt_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
