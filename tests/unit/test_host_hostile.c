/* SPDX-License-Identifier: MIT */
/*
 * The host link against local processes that are hostile, or only stuck
 * (found by review, each case failed before its fix):
 *  - a process of another user squats a device's rendezvous name with a
 *    full listen backlog: our first frame there blocked in connect() for
 *    good; now refused at once;
 *  - a peer stopped (SIGSTOP) stalls each handshake for its timeout: the
 *    wait before the next attempt was counted from the attempt's start,
 *    so every frame stalled again; now from its end, and longer after
 *    each stall;
 *  - a peer hands over a pipe as its eventfd: our first wakeup of it
 *    raised SIGPIPE; now the handshake is refused;
 *  - a peer hands over a blocking eventfd held at its maximum: our wakeup
 *    blocked the data path; now written without blocking;
 *  - peers that scribble their ring's tail and exit were never freed
 *    (HOST_MAX_CONNS of them locked everyone out), and a live one kept
 *    our engine from ever sleeping.
 * Addresses 10.252.1.x and 10.252.2.x are this file's only.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "host_rogue.h"
#include "xroce/link.h"

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One 64-byte IPv4 frame from src to dst through l. */
static void send_one(struct xr_link *l, const char *src, const char *dst)
{
	struct xr_frame *f = xr_link_frame_alloc(l);

	assert_non_null(f);
	memset(f->data, 0, 64);
	f->data[12] = 0x08;
	f->data[14] = 0x45;
	inet_pton(AF_INET, src, f->data + 26);
	inet_pton(AF_INET, dst, f->data + 30);
	f->len = 64;
	xr_link_send(l, &f, 1);
}

/* Runs fn in a child: its exit status, or -1 when it had not ended after
 * ms (killed then). */
static int in_child(int (*fn)(void), int ms)
{
	pid_t pid = fork();
	int st = 0;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn());
	for (uint64_t t0 = ms_now(); ms_now() - t0 < (uint64_t)ms;) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static int squatted_body(void)
{
	struct xr_link *a = xr_link_host("10.252.1.1");
	struct xr_link_host_stats st;

	if (!a)
		return 90;
	send_one(a, "10.252.1.1", "10.252.1.2");
	xr_link_host_stats(a, &st);
	return st.tx_drop_no_peer == 1 ? 0 : 91;
}

static void test_a_squatted_rendezvous_refuses_at_once(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "xroce-host/10.252.1.2");
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	int p[2], st;
	char c;
	pid_t squatter;

	(void)state;
	if (getuid() != 0)
		skip();   /* another user is needed: skipped, not passed */
	assert_int_equal(pipe(p), 0);
	squatter = fork();
	assert_true(squatter >= 0);
	if (squatter == 0) {   /* nobody: another user, who never accepts */
		int l, s;
		if (setgid(65534) || setuid(65534))
			_exit(80);
		l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (bind(l, (struct sockaddr *)&sa, len) || listen(l, 0))
			_exit(81);
		s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
		if (connect(s, (struct sockaddr *)&sa, len))   /* the backlog is full */
			_exit(82);
		if (write(p[1], "r", 1) != 1)
			_exit(83);
		pause();
		_exit(0);
	}
	close(p[1]);
	p[1] = -1;
	assert_int_equal(read(p[0], &c, 1), 1);   /* 0: the squatter could not squat */
	st = in_child(squatted_body, 3000);
	kill(squatter, SIGKILL);   /* first: a failed check must not leave it behind */
	waitpid(squatter, NULL, 0);
	close(p[0]);
	assert_int_equal(st, 0);   /* -1 before: blocked in connect() */
}

static void test_a_stopped_peer_stalls_one_attempt_not_every_frame(void **state)
{
	struct xr_link *a;
	int p[2];
	char c;
	pid_t peer;
	uint64_t t0, first, second;

	(void)state;
	assert_int_equal(pipe(p), 0);
	peer = fork();
	assert_true(peer >= 0);
	if (peer == 0) {
		struct xr_link *l = xr_link_host("10.252.1.4");
		if (!l || write(p[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	kill(peer, SIGSTOP);
	a = xr_link_host("10.252.1.3");
	assert_non_null(a);
	t0 = ms_now();
	send_one(a, "10.252.1.3", "10.252.1.4");   /* the handshake's timeout */
	first = ms_now() - t0;
	t0 = ms_now();
	send_one(a, "10.252.1.3", "10.252.1.4");
	second = ms_now() - t0;
	xr_link_close(a);
	kill(peer, SIGKILL);
	waitpid(peer, NULL, 0);
	close(p[0]);
	assert_true(first >= 100);   /* it did stall: the case is what it claims */
	assert_true(second < 50);    /* before: a second full stall */
}

static void test_a_pipe_for_an_eventfd_is_refused(void **state)
{
	struct xr_link *a = xr_link_host("10.252.1.5");
	struct xr_link_host_stats st;
	struct rogue r;
	int p[2];

	(void)state;
	assert_non_null(a);
	assert_int_equal(pipe(p), 0);
	close(p[0]);   /* a write would raise SIGPIPE */
	assert_int_not_equal(rogue_connect_with(&r, "10.252.1.5", "10.252.1.6", p[1]), 0);
	assert_int_equal(xr_link_host_stats(a, &st), 0);
	assert_int_equal(st.refused_hello, 1);
	assert_int_equal(st.peers_accepted, 0);
	close(p[1]);
	close(r.sock);
	xr_link_close(a);
}

static int full_eventfd_body(void)
{
	struct xr_link *a = xr_link_host("10.252.1.7");
	struct xr_link_host_stats st;
	struct rogue r;
	int efd = eventfd(0, 0);   /* blocking */
	uint64_t v = 0xfffffffffffffffeull;

	if (!a || efd < 0 || write(efd, &v, sizeof(v)) != sizeof(v))
		return 90;
	if (rogue_connect_with(&r, "10.252.1.7", "10.252.1.8", efd))
		return 91;
	atomic_store(&r.mine->sleeps, 1);   /* "asleep": we must wake it */
	for (int i = 0; i < 200; i++) {     /* the control thread hands the connection over */
		send_one(a, "10.252.1.7", "10.252.1.8");
		xr_link_host_stats(a, &st);
		if (st.tx_host)
			return 0;
		usleep(1000);
	}
	return 92;
}

static void test_a_full_blocking_eventfd_does_not_block_us(void **state)
{
	(void)state;
	assert_int_equal(in_child(full_eventfd_body, 3000), 0);   /* -1 before: blocked in write() */
}

/* A live peer's scribbled tail: nothing to read, nothing to stay awake for. */
static void test_a_scribbled_tail_keeps_no_one_awake(void **state)
{
	struct xr_link *a = xr_link_host("10.252.1.11");
	struct xr_link_host_stats st;
	struct xr_frame *f[4];
	struct rogue live;

	(void)state;
	assert_non_null(a);
	rogue_connect(&live, "10.252.1.11", "10.252.2.200");
	atomic_store(&live.mine->tail, 0x80000000u);
	for (int i = 0; i < 200; i++) {
		xr_link_recv(a, f, 4);   /* adopts the connection */
		xr_link_host_stats(a, &st);
		if (st.peers_accepted == 1)
			break;
		usleep(1000);
	}
	assert_int_equal(xr_link_recv(a, f, 4), 0);
	assert_int_equal(a->ops->arm(a, true), 0);   /* 1 before: never asleep */
	a->ops->arm(a, false);
	close(live.sock);
	xr_link_close(a);
}

/* HOST_MAX_CONNS peers scribble their tails and exit: they are freed, and
 * an honest peer still gets in. */
static void test_dead_peers_with_scribbled_tails_are_freed(void **state)
{
	struct xr_link *a = xr_link_host("10.252.1.9"), *b;
	struct xr_link_host_stats st, sb;
	struct xr_frame *f[4];

	(void)state;
	assert_non_null(a);
	for (int i = 0; i < HOST_MAX_CONNS; i++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct rogue r;
			char me[32];
			snprintf(me, sizeof(me), "10.252.2.%d", i + 1);
			if (rogue_connect_with(&r, "10.252.1.9", me, -1))
				_exit(1);
			atomic_store(&r.mine->tail, 0x80000000u);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	for (uint64_t t0 = ms_now(); ms_now() - t0 < 3000;) {
		xr_link_recv(a, f, 4);   /* adopts, reaps */
		xr_link_host_stats(a, &st);
		if (st.peers_gone == HOST_MAX_CONNS)
			break;
		usleep(1000);
	}
	xr_link_recv(a, f, 4);
	assert_int_equal(st.peers_accepted, HOST_MAX_CONNS);
	assert_int_equal(st.peers_gone, HOST_MAX_CONNS);
	b = xr_link_host("10.252.1.10");
	assert_non_null(b);
	send_one(b, "10.252.1.10", "10.252.1.9");
	assert_int_equal(xr_link_host_stats(b, &sb), 0);
	assert_int_equal(xr_link_host_stats(a, &st), 0);
	assert_int_equal(st.refused_full, 0);   /* 1 before: the table stayed full */
	assert_int_equal(sb.tx_host, 1);
	xr_link_close(b);
	xr_link_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_squatted_rendezvous_refuses_at_once),
		cmocka_unit_test(test_a_stopped_peer_stalls_one_attempt_not_every_frame),
		cmocka_unit_test(test_a_pipe_for_an_eventfd_is_refused),
		cmocka_unit_test(test_a_full_blocking_eventfd_does_not_block_us),
		cmocka_unit_test(test_a_scribbled_tail_keeps_no_one_awake),
		cmocka_unit_test(test_dead_peers_with_scribbled_tails_are_freed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
