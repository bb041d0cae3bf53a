/* SPDX-License-Identifier: MIT */
/*
 * The UDP link's receive ring: a batch of pool frames stays armed under
 * recvmmsg between calls and is re-armed only where datagrams landed, and
 * empty reads back off. Datagrams sent with a plain socket to links on
 * loopback addresses show: bursts larger than the ring, read a few at a
 * time, arrive complete and in order with their headers rebuilt; when the
 * pool runs dry the armed frames that are left still carry datagrams (none
 * lost, none out of order) and reading resumes once frames come back; after
 * any number of empty reads a datagram waiting in the socket is read
 * within RX_SKIP_MAX + 1 calls, and at once after the link's wait
 * descriptor is asked for (the engine's way to sleep).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"
#include "udp_datagram.h"
#include "wire/hdr.h"
#include "xroce/link.h"
#include "xroce/wire.h"

#define SRC "127.0.0.1"
#define PAYLOAD 256
#define DGRAM (XR_BTH_LEN + PAYLOAD + XR_ICRC_LEN)
#define SKIP_MAX 4   /* RX_SKIP_MAX in src/link/udp.c */

/* An RC SEND_ONLY with PSN psn (its payload made from it) to dst:4791,
 * ICRC over the headers as the link rebuilds them (ID 0). */
static void send_psn(int fd, uint16_t sport, const char *dst, uint32_t psn)
{
	uint8_t ip[XR_IPV4_HLEN + XR_UDP_HLEN + DGRAM];

	udp_make_send_only(ip, PAYLOAD, SRC, dst, sport, 0, psn, (uint8_t)(psn * 7));
	udp_send_payload(fd, ip, sizeof(ip), dst);
}

/* f is the datagram with PSN psn from SRC:sport, rebuilt and verified. */
static void check_frame(struct xr_frame *f, uint16_t sport, uint32_t psn)
{
	struct xr_pkt p;
	uint8_t src[4];

	assert_int_equal(f->len, XR_ETH_HLEN + XR_IPV4_HLEN + XR_UDP_HLEN + DGRAM);
	assert_int_equal(f->rx_flags, XR_FRAME_ICRC_VERIFIED);
	assert_int_equal(xr_pkt_parse(f->data, f->len, 0, 0, &p), XR_PARSE_OK);
	assert_int_equal(p.psn, psn);
	assert_int_equal(p.payload_len, PAYLOAD);
	for (int i = 0; i < PAYLOAD; i++)
		assert_int_equal(p.payload[i], (uint8_t)(psn * 7 + (uint32_t)i));
	inet_pton(AF_INET, SRC, src);
	assert_memory_equal(f->data + XR_ETH_HLEN + IP4_OFF_SRC, src, 4);
	assert_int_equal(get_be16(f->data + XR_ETH_HLEN + XR_IPV4_HLEN + UDP_OFF_SPORT), sport);
}

/* Reads up to n frames into f, polling a bounded number of times. */
static int recv_some(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	for (int tries = 0; tries < 200; tries++) {
		int got = xr_link_recv(l, f, n);
		if (got)
			return got;
		if (tries % (SKIP_MAX + 1) == SKIP_MAX) {
			struct pollfd p = { .fd = l->ops->wait_fd(l), .events = POLLIN };
			poll(&p, 1, 10);
		}
	}
	return 0;
}

static struct xr_link *open_link(const char *addr)
{
	struct xr_link_udp_opts o = { .no_host_path = true };
	struct xr_link *l = xr_link_udp_ex(addr, &o);

	assert_non_null(l);
	return l;
}

/* 100 datagrams (three ring batches and more), read 7 at a time: all of
 * them, in order, each intact. */
static void test_bursts_in_order(void **state)
{
	struct xr_link *l = open_link("127.0.0.12");
	struct xr_frame *f[7];
	uint16_t sport;
	int fd = udp_sender(SRC, &sport);
	uint32_t next = 0;

	(void)state;
	for (uint32_t i = 0; i < 100; i++)
		send_psn(fd, sport, "127.0.0.12", i);
	while (next < 100) {
		int got = recv_some(l, f, 7);
		assert_true(got > 0 && got <= 7);
		for (int i = 0; i < got; i++) {
			check_frame(f[i], sport, next++);
			xr_link_frame_free(l, f[i]);
		}
	}
	assert_int_equal(xr_link_recv(l, f, 7), 0);
	close(fd);
	xr_link_close(l);
}

/* The pool runs dry with the ring armed: the armed frames still take
 * datagrams, then reading stops (no frame, nothing lost) and resumes when
 * frames come back; every datagram arrives once, in order. */
static void test_pool_dry(void **state)
{
	enum { N = 60, HOLD = 8192 };
	struct xr_link *l = open_link("127.0.0.13");
	struct xr_frame *f[32], **held = calloc(HOLD, sizeof(*held));
	unsigned nheld = 0;
	uint16_t sport;
	int fd = udp_sender(SRC, &sport), got;
	uint32_t next = 0;

	(void)state;
	assert_non_null(held);
	for (uint32_t i = 0; i < N; i++)
		send_psn(fd, sport, "127.0.0.13", i);
	/* One datagram arms the ring; then the pool is emptied. */
	assert_int_equal(recv_some(l, f, 1), 1);
	check_frame(f[0], sport, next++);
	xr_link_frame_free(l, f[0]);
	while (nheld < HOLD && (held[nheld] = xr_link_frame_alloc(l)))
		nheld++;
	assert_true(nheld > 0 && nheld < HOLD);
	/* 5 then the rest of what is armed: no fresh frames, so the ring
	 * shrinks (its remaining frames moved down) and then runs out. */
	got = recv_some(l, f, 5);
	assert_int_equal(got, 5);
	for (int i = 0; i < got; i++)
		check_frame(f[i], sport, next++);
	for (int i = 0; i < got; i++)
		held[nheld++] = f[i];   /* kept: the pool stays dry */
	while ((got = xr_link_recv(l, f, 32)) > 0) {
		for (int i = 0; i < got; i++) {
			check_frame(f[i], sport, next++);
			held[nheld++] = f[i];
		}
	}
	assert_true(next < N);   /* datagrams wait in the socket, not read */
	assert_true(next >= 32);  /* the armed frames were all used */
	for (int i = 0; i < 2 * (SKIP_MAX + 1); i++)
		assert_int_equal(xr_link_recv(l, f, 32), 0);
	while (nheld)
		xr_link_frame_free(l, held[--nheld]);
	while (next < N) {
		got = recv_some(l, f, 32);
		assert_true(got > 0);
		for (int i = 0; i < got; i++) {
			check_frame(f[i], sport, next++);
			xr_link_frame_free(l, f[i]);
		}
	}
	assert_int_equal(next, N);
	assert_int_equal(xr_link_recv(l, f, 32), 0);
	free(held);
	close(fd);
	xr_link_close(l);
}

/* Empty reads back off, boundedly: after many, a waiting datagram is read
 * within SKIP_MAX + 1 calls; asking for the wait descriptor (the engine
 * about to sleep) makes the next call read. */
static void test_backoff_bounded(void **state)
{
	struct xr_link *l = open_link("127.0.0.14");
	struct xr_frame *f[4];
	uint16_t sport;
	int fd = udp_sender(SRC, &sport), calls, got = 0;

	(void)state;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 50; i++)
			assert_int_equal(xr_link_recv(l, f, 4), 0);
		send_psn(fd, sport, "127.0.0.14", (uint32_t)round);
		/* Loopback queues the datagram before sendto returns. */
		for (calls = 1; calls <= SKIP_MAX + 1; calls++)
			if ((got = xr_link_recv(l, f, 4)) > 0)
				break;
		assert_int_equal(got, 1);
		assert_true(calls <= SKIP_MAX + 1);
		check_frame(f[0], sport, (uint32_t)round);
		xr_link_frame_free(l, f[0]);
	}
	for (int i = 0; i < 50; i++)
		assert_int_equal(xr_link_recv(l, f, 4), 0);
	send_psn(fd, sport, "127.0.0.14", 9);
	(void)l->ops->wait_fd(l);
	assert_int_equal(xr_link_recv(l, f, 4), 1);
	check_frame(f[0], sport, 9);
	xr_link_frame_free(l, f[0]);
	close(fd);
	xr_link_close(l);
}

/* The link's MTU is its interface's: 127.0.0.15 is not an address of lo
 * but lies in lo's 127.0.0.1/8, so it gets lo's MTU (it got the 1500
 * guess, and a path MTU of 4096 between two processes on loopback was
 * refused as above the port's active MTU). */
static void test_mtu_of_the_subnet(void **state)
{
	FILE *f = fopen("/sys/class/net/lo/mtu", "r");
	unsigned lo_mtu = 0;
	struct xr_link *l;
	(void)state;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &lo_mtu), 1);
	fclose(f);
	l = open_link("127.0.0.15");   /* an address of its own: tests run side by side */
	assert_int_equal(l->mtu, lo_mtu);
	xr_link_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bursts_in_order),
		cmocka_unit_test(test_pool_dry),
		cmocka_unit_test(test_backoff_bounded),
		cmocka_unit_test(test_mtu_of_the_subnet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
