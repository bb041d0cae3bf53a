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
 * A port that could not be had for a moment is tried again a second later.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/resource.h>
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

/* Sends one RC SEND_ONLY from ADDR_A:SPORT to ADDR_B, from this thread. */
static int send_one(struct xr_link *l)
{
	static uint8_t payload[64];
	struct xr_pkt p;
	struct xr_frame *f;
	ssize_t len;

	xr_pkt_init(&p, XR_OP_RC_SEND_ONLY);
	xr_gid_parse(&p.sgid, ADDR_A);
	xr_gid_parse(&p.dgid, ADDR_B);
	p.sport = SPORT;
	p.dqpn = 0x11;
	p.payload = payload;
	p.payload_len = sizeof(payload);
	f = xr_link_frame_alloc(l);
	if (!f)
		return -1;
	len = xr_pkt_build(&p, f->data, XR_MAX_FRAME);
	if (len <= 0) {
		xr_link_frame_free(l, f);
		return -1;
	}
	f->len = (uint16_t)len;
	return xr_link_send(l, &f, 1);
}

/* The same from a new namespace. */
static void *send_elsewhere(void *arg)
{
	struct sender *s = arg;

	if (unshare(CLONE_NEWNET)) {
		s->unshare_err = errno;
		return NULL;
	}
	s->sent = send_one(s->l);
	return NULL;
}

/* The source port of the next datagram rx receives. */
static uint16_t arrives_from(int rx)
{
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct pollfd pf = { rx, POLLIN, 0 };
	uint8_t buf[2048];

	assert_int_equal(poll(&pf, 1, 2000), 1);
	assert_true(recvfrom(rx, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) > 0);
	return ntohs(from.sin_port);
}

static int receiver_at_b(void)
{
	struct sockaddr_in b = { .sin_family = AF_INET, .sin_port = htons(XR_ROCE_UDP_PORT) };
	int rx = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(rx >= 0);
	inet_pton(AF_INET, ADDR_B, &b.sin_addr);
	assert_int_equal(bind(rx, (struct sockaddr *)&b, sizeof(b)), 0);
	return rx;
}

static uint64_t fallbacks(struct xr_link *l)
{
	struct xr_link_host_stats st;

	assert_int_equal(xr_link_host_stats(l, &st), 0);
	return st.sport_fallbacks;
}

static void test_a_source_port_socket_is_made_in_the_links_namespace(void **state)
{
	struct xr_link_udp_opts o = { .no_host_path = true };
	struct sender s = { 0 };
	pthread_t t;
	int rx;

	(void)state;
	s.l = xr_link_udp_ex(ADDR_A, &o);
	assert_non_null(s.l);
	rx = receiver_at_b();
	assert_int_equal(pthread_create(&t, NULL, send_elsewhere, &s), 0);
	pthread_join(t, NULL);
	if (s.unshare_err == EPERM) {
		close(rx);
		xr_link_close(s.l);
		skip();
	}
	assert_int_equal(s.unshare_err, 0);
	assert_int_equal(s.sent, 1);
	assert_int_equal(arrives_from(rx), SPORT);   /* not the 4791 fallback */
	assert_int_equal(fallbacks(s.l), 0);
	close(rx);
	xr_link_close(s.l);
}

/* The process is out of descriptors when the link first needs the rxe
 * port's socket: that packet leaves from 4791, as do those of the next
 * second; then the port is tried again and had. Before, a port that could
 * not be had once was never tried again. */
static void test_a_port_not_had_for_a_moment_is_tried_again(void **state)
{
	struct xr_link_udp_opts o = { .no_host_path = true };
	struct rlimit was, none;
	struct xr_link *l;
	int rx, lowest;

	(void)state;
	l = xr_link_udp_ex(ADDR_A, &o);
	assert_non_null(l);
	rx = receiver_at_b();
	/* Every descriptor below the lowest free one is taken: a limit there
	 * leaves none. */
	lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(lowest >= 0);
	close(lowest);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	none = was;
	none.rlim_cur = (rlim_t)lowest;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
	assert_int_equal(send_one(l), 1);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
	assert_int_equal(arrives_from(rx), XR_ROCE_UDP_PORT);
	assert_int_equal(fallbacks(l), 1);

	assert_int_equal(send_one(l), 1);            /* within the second: not tried */
	assert_int_equal(arrives_from(rx), XR_ROCE_UDP_PORT);
	assert_int_equal(fallbacks(l), 1);

	usleep(1100 * 1000);
	assert_int_equal(send_one(l), 1);
	assert_int_equal(arrives_from(rx), SPORT);  /* tried again, and had */
	assert_int_equal(fallbacks(l), 1);
	close(rx);
	xr_link_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_source_port_socket_is_made_in_the_links_namespace),
		cmocka_unit_test(test_a_port_not_had_for_a_moment_is_tried_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
