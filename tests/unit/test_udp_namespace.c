/* SPDX-License-Identifier: MIT */
/*
 * The UDP link's sockets live in the network namespace it was opened in,
 * whichever thread drives it. Its per-source-port sockets (rxe's source
 * ports) are made on first use: a thread in another namespace (a program
 * that drives ends in two, as bench-links does) made them there before,
 * where the address was missing, so every packet fell back to port 4791
 * (or, with the address present, would have left through another
 * network). Here a thread in a fresh namespace sends through a link opened
 * on loopback, and a plain socket sees the datagram arrive from the rxe
 * source port. Needs CAP_SYS_ADMIN (unshare): skipped, not passed, without.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "xroce/link.h"
#include "xroce/wire.h"

#define ADDR_A "127.0.0.41"
#define ADDR_B "127.0.0.42"
#define SPORT 0xC321

struct sender {
	struct xr_link *l;
	int unshare_err, sent;
};

/* Sends one RC SEND_ONLY from ADDR_A:SPORT to ADDR_B from a new namespace. */
static void *send_elsewhere(void *arg)
{
	struct sender *s = arg;
	static uint8_t payload[64];
	struct xr_pkt p;
	struct xr_frame *f;
	ssize_t len;

	if (unshare(CLONE_NEWNET)) {
		s->unshare_err = errno;
		return NULL;
	}
	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	xr_gid_parse(&p.sgid, ADDR_A);
	xr_gid_parse(&p.dgid, ADDR_B);
	p.sport = SPORT;
	p.dqpn = 0x11;
	p.payload = payload;
	p.payload_len = sizeof(payload);
	f = xr_link_frame_alloc(s->l);
	if (!f)
		return NULL;
	len = xr_pkt_build(&p, f->data, XR_MAX_FRAME);
	if (len <= 0) {
		xr_link_frame_free(s->l, f);
		return NULL;
	}
	f->len = (uint16_t)len;
	s->sent = xr_link_send(s->l, &f, 1);
	return NULL;
}

static void test_a_source_port_socket_is_made_in_the_links_namespace(void **state)
{
	struct xr_link_udp_opts o = { .no_host_path = true };
	struct sockaddr_in b = { .sin_family = AF_INET, .sin_port = htons(XR_ROCE_UDP_PORT) }, from;
	socklen_t flen = sizeof(from);
	struct sender s = { 0 };
	uint8_t buf[2048];
	struct pollfd pf;
	pthread_t t;
	int rx;

	(void)state;
	s.l = xr_link_udp_ex(ADDR_A, &o);
	assert_non_null(s.l);
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(rx >= 0);
	inet_pton(AF_INET, ADDR_B, &b.sin_addr);
	assert_int_equal(bind(rx, (struct sockaddr *)&b, sizeof(b)), 0);
	assert_int_equal(pthread_create(&t, NULL, send_elsewhere, &s), 0);
	pthread_join(t, NULL);
	if (s.unshare_err == EPERM) {
		close(rx);
		xr_link_close(s.l);
		skip();
	}
	assert_int_equal(s.unshare_err, 0);
	assert_int_equal(s.sent, 1);
	pf = (struct pollfd){ rx, POLLIN, 0 };
	assert_int_equal(poll(&pf, 1, 2000), 1);
	assert_true(recvfrom(rx, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) > 0);
	assert_int_equal(ntohs(from.sin_port), SPORT);   /* not the 4791 fallback */
	{
		struct xr_link_host_stats st;
		assert_int_equal(xr_link_host_stats(s.l, &st), 0);
		assert_int_equal(st.sport_fallbacks, 0);
	}
	close(rx);
	xr_link_close(s.l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_source_port_socket_is_made_in_the_links_namespace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
