/* SPDX-License-Identifier: MIT */
/*
 * The host link between processes (fork): frames arrive byte-exact and in
 * order through the shared rings with sleeping receivers woken, one
 * device per address, a missing peer and a killed peer dropped and
 * counted with the rendezvous gone with it, a stopped peer's full ring
 * pushing back and then dropping, a malformed handshake refused, a
 * hand-made peer that scribbles on its shared memory counted and never
 * trusted, and unable to write ours (frames built in place in our slots,
 * which it only reads), a ping-pong kept to a few slots, and a 16-process
 * mesh. Addresses 10.250.9.x/10.250.8.x are this file's only.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"
#include "link/host.h"
#include "host_rogue.h"
#include "xroce/link.h"

#define LEN_OFF 34   /* after Ethernet + IPv4: source index, sequence */

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An Ethernet/IPv4 frame from src to dst carrying (who, seq) and a pattern. */
static void make_frame(struct xr_frame *f, const char *src, const char *dst, uint32_t who, uint32_t seq)
{
	uint16_t len = (uint16_t)(LEN_OFF + 8 + (seq * 97 + who * 13) % (XR_MAX_FRAME - LEN_OFF - 8));

	memset(f->data, 0, LEN_OFF);
	f->data[12] = 0x08;
	f->data[14] = 0x45;
	inet_pton(AF_INET, src, f->data + 26);
	inet_pton(AF_INET, dst, f->data + 30);
	memcpy(f->data + LEN_OFF, &who, 4);
	memcpy(f->data + LEN_OFF + 4, &seq, 4);
	for (uint16_t i = LEN_OFF + 8; i < len; i++)
		f->data[i] = (uint8_t)(i * 7 + seq + who);
	f->len = len;
}

/* Whether f is exactly make_frame(src, dst, who, seq). */
static bool frame_is(const struct xr_frame *f, const char *src, const char *dst, uint32_t who, uint32_t seq)
{
	static struct xr_frame want;

	make_frame(&want, src, dst, who, seq);
	return f->len == want.len && !memcmp(f->data + 12, want.data + 12, want.len - 12u);
}

static void send_all(struct xr_link *l, struct xr_frame *f)
{
	uint64_t t0 = ms_now();

	while (xr_link_send(l, &f, 1) != 1 && ms_now() - t0 < 5000)
		usleep(100);
}

/* Sleeps on the link's fd as the engine does: arm, look again, poll. */
static int recv_wait(struct xr_link *l, struct xr_frame **f, unsigned n, int ms)
{
	struct pollfd p = { l->ops->wait_fd(l), POLLIN, 0 };
	int got = xr_link_recv(l, f, n);

	if (got)
		return got;
	poll(&p, 1, ms);
	return xr_link_recv(l, f, n);
}

/* A child process with its own host link at addr; the parent learns it is
 * ready from the pipe. body returns the child's exit status. */
static pid_t spawn(const char *addr, int (*body)(struct xr_link *, void *), void *arg)
{
	int p[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct xr_link *l = xr_link_host(addr);
		close(p[0]);
		if (!l)
			_exit(90);
		if (write(p[1], "r", 1) != 1)
			_exit(91);
		_exit(body(l, arg));
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static int wait_status(pid_t pid)
{
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_one_device_per_address(void **state)
{
	struct xr_link *a = xr_link_host("10.250.9.1"), *b;
	struct xr_link_spec spec = { .kind = "host", .addr = "10.250.9.1" };
	char msg[200];

	(void)state;
	assert_non_null(a);
	assert_string_equal(a->kind, "host");
	b = xr_link_host("10.250.9.1");
	assert_null(b);
	assert_int_equal(errno, EADDRINUSE);
	assert_null(xr_link_open(&spec, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "already holds"));
	assert_null(xr_link_host("not-an-address"));
	assert_int_equal(errno, EINVAL);
	xr_link_close(a);
	b = xr_link_open(&spec, msg, sizeof(msg));   /* the rendezvous went with a */
	assert_non_null(b);
	xr_link_close(b);
}

/* A UDP link reaches local peers through the host path under its address:
 * while a host link holds that address, local peers would reach that
 * device instead, so the UDP link refuses it (it ran without the path,
 * and its peers' frames went to the other device). */
static void test_udp_link_refuses_an_address_a_host_link_holds(void **state)
{
	struct xr_link *h = xr_link_host("127.0.9.1"), *u;
	struct xr_link_spec spec = { .kind = "udp", .addr = "127.0.9.1" };
	char msg[200] = "";

	(void)state;
	assert_non_null(h);
	assert_null(xr_link_open(&spec, msg, sizeof(msg)));
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(msg, "already holds 127.0.9.1"));
	spec.udp_no_host_path = true;   /* the kernel path only: nothing to clash */
	u = xr_link_open(&spec, msg, sizeof(msg));
	assert_non_null(u);
	xr_link_close(u);
	xr_link_close(h);
	spec.udp_no_host_path = false;
	u = xr_link_open(&spec, msg, sizeof(msg));
	assert_non_null(u);
	xr_link_close(u);
}

static void test_no_peer_is_dropped_and_counted(void **state)
{
	struct xr_link *a = xr_link_host("10.250.9.1");
	struct xr_frame *f = xr_link_frame_alloc(a);
	struct xr_link_host_stats st;

	(void)state;
	make_frame(f, "10.250.9.1", "10.250.9.99", 0, 0);
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	assert_int_equal(xr_link_host_stats(a, &st), 0);
	assert_int_equal(st.tx_drop_no_peer, 1);
	assert_int_equal(st.tx_host, 0);
	xr_link_close(a);
}

#define ECHO_FRAMES 3000

/* Sends every frame back with source and destination swapped. */
static int echo_body(struct xr_link *l, void *arg)
{
	uint64_t t0 = ms_now();
	unsigned done = 0;

	(void)arg;
	while (done < ECHO_FRAMES && ms_now() - t0 < 20000) {
		struct xr_frame *in[32];
		int got = recv_wait(l, in, 32, 100);
		for (int i = 0; i < got; i++) {
			struct xr_frame *o = xr_link_frame_alloc(l);
			if (!o)
				return 2;
			memcpy(o->data, in[i]->data, in[i]->len);
			o->len = in[i]->len;
			memcpy(o->data + 26, in[i]->data + 30, 4);
			memcpy(o->data + 30, in[i]->data + 26, 4);
			xr_link_frame_free(l, in[i]);
			send_all(l, o);
			done++;
		}
	}
	usleep(100000);   /* let the last echoes be read before the rings go */
	xr_link_close(l);
	return done == ECHO_FRAMES ? 0 : 3;
}

static void test_frames_cross_exact_and_in_order(void **state)
{
	pid_t pid = spawn("10.250.9.3", echo_body, NULL);
	struct xr_link *a = xr_link_host("10.250.9.2");
	struct xr_link_host_stats st;
	uint32_t sent = 0, back = 0;
	uint64_t t0 = ms_now();

	(void)state;
	assert_non_null(a);
	while (back < ECHO_FRAMES && ms_now() - t0 < 20000) {
		struct xr_frame *in[32];
		int got;
		/* A window of 64 in flight, so the echo's ring never blocks it. */
		while (sent < ECHO_FRAMES && sent - back < 64) {
			struct xr_frame *f = xr_link_frame_alloc(a);
			assert_non_null(f);
			make_frame(f, "10.250.9.2", "10.250.9.3", 2, sent++);
			send_all(a, f);
		}
		got = recv_wait(a, in, 32, 100);
		for (int i = 0; i < got; i++) {
			assert_true(frame_is(in[i], "10.250.9.3", "10.250.9.2", 2, back));
			back++;
			xr_link_frame_free(a, in[i]);
		}
	}
	assert_int_equal(back, ECHO_FRAMES);
	assert_int_equal(wait_status(pid), 0);
	assert_int_equal(xr_link_host_stats(a, &st), 0);
	assert_int_equal(st.tx_host, ECHO_FRAMES);
	assert_int_equal(st.rx_host, ECHO_FRAMES);
	assert_int_equal(st.peers_connected, 1);
	xr_link_close(a);
}

/* One frame in flight at a time, 3,000 times: after the first hundred
 * the traffic keeps to slots it has touched (ours written, the peer's
 * read) and faults in no page. Before, every slot of the 512 was used in
 * turn, each one's first use a fault (on a VM that pages in shadow
 * tables, 12 us each, which a latency test's first round trips paid). */
static void test_a_ping_pong_keeps_to_a_few_slots(void **state)
{
	pid_t pid = spawn("10.250.9.21", echo_body, NULL);
	struct xr_link *a = xr_link_host("10.250.9.20");
	uint64_t t0 = ms_now();
	long before = 0;

	(void)state;
	assert_non_null(a);
	for (uint32_t seq = 0; seq < ECHO_FRAMES && ms_now() - t0 < 20000; seq++) {
		struct xr_frame *f = xr_link_frame_alloc(a);
		int got = 0;
		if (seq == 100)
			before = minor_faults();
		assert_non_null(f);
		make_frame(f, "10.250.9.20", "10.250.9.21", 20, seq);
		send_all(a, f);
		while (!got && ms_now() - t0 < 20000)
			got = recv_wait(a, &f, 1, 100);
		assert_int_equal(got, 1);
		assert_true(frame_is(f, "10.250.9.21", "10.250.9.20", 20, seq));
		xr_link_frame_free(a, f);
	}
	print_message("%ld minor faults over 2,900 round trips\n", minor_faults() - before);
	assert_true(minor_faults() - before < 32);
	assert_int_equal(wait_status(pid), 0);
	xr_link_close(a);
}

static int reply_once_body(struct xr_link *l, void *arg)
{
	struct xr_frame *in[4], *f;
	uint64_t t0 = ms_now();
	int got = 0;

	(void)arg;
	while (!got && ms_now() - t0 < 5000)
		got = recv_wait(l, in, 4, 100);
	if (got != 1 || !frame_is(in[0], "10.250.9.4", "10.250.9.5", 4, 0))
		return 3;
	xr_link_frame_free(l, in[0]);
	f = xr_link_frame_alloc(l);
	if (!f)
		return 4;
	make_frame(f, "10.250.9.5", "10.250.9.4", 5, 0);
	send_all(l, f);
	usleep(2000000);   /* stay past the parent's poll: leaving would wake it too */
	xr_link_close(l);
	return 0;
}

/* The engine's thread armed its wakeup and went to sleep; then another
 * thread (a program posting) sent the first frame to a new peer, which
 * made the connection. The peer's reply must wake the sleeper: a new
 * connection counts as armed until its owner arms it itself (a UC
 * ib_write_lat through the library hung for good: the reply was in the
 * ring, the engine asleep, and UC sends nothing again). */
static void test_reply_on_a_new_connection_wakes_a_sleeper(void **state)
{
	pid_t pid = spawn("10.250.9.5", reply_once_body, NULL);
	struct xr_link *a = xr_link_host("10.250.9.4");
	struct xr_frame *f, *in[4];
	struct pollfd p;
	int got;

	(void)state;
	assert_non_null(a);
	p.fd = a->ops->wait_fd(a);   /* armed with no connection yet */
	p.events = POLLIN;
	assert_int_equal(xr_link_recv(a, in, 4), 0);
	f = xr_link_frame_alloc(a);
	assert_non_null(f);
	make_frame(f, "10.250.9.4", "10.250.9.5", 4, 0);
	send_all(a, f);   /* connects */
	assert_int_equal(poll(&p, 1, 1000), 1);   /* no arming since */
	got = xr_link_recv(a, in, 4);
	assert_int_equal(got, 1);
	assert_true(frame_is(in[0], "10.250.9.5", "10.250.9.4", 5, 0));
	xr_link_frame_free(a, in[0]);
	assert_int_equal(wait_status(pid), 0);
	xr_link_close(a);
}

static int idle_body(struct xr_link *l, void *arg)
{
	(void)l;
	(void)arg;
	for (int i = 0; i < 300; i++)   /* bounded: the parent kills it first */
		usleep(100000);
	return 0;
}

static void test_killed_peer_is_noticed(void **state)
{
	pid_t pid = spawn("10.250.9.5", idle_body, NULL);
	struct xr_link *a = xr_link_host("10.250.9.4"), *again;
	struct xr_link_host_stats st;
	struct xr_frame *f;
	uint64_t t0;

	(void)state;
	f = xr_link_frame_alloc(a);
	make_frame(f, "10.250.9.4", "10.250.9.5", 4, 0);
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	xr_link_host_stats(a, &st);
	assert_int_equal(st.tx_host, 1);
	kill(pid, SIGKILL);
	assert_int_equal(wait_status(pid), 128 + SIGKILL);
	t0 = ms_now();
	do {
		struct xr_frame *in[4];
		recv_wait(a, in, 4, 50);
		xr_link_host_stats(a, &st);
	} while (!st.peers_gone && ms_now() - t0 < 5000);
	assert_int_equal(st.peers_gone, 1);
	f = xr_link_frame_alloc(a);
	make_frame(f, "10.250.9.4", "10.250.9.5", 4, 1);
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	xr_link_host_stats(a, &st);
	assert_int_equal(st.tx_host, 1);
	assert_int_equal(st.tx_drop_peer_gone + st.tx_drop_no_peer, 1);
	/* The kernel removed the dead process's rendezvous: the address is free. */
	again = xr_link_host("10.250.9.5");
	assert_non_null(again);
	xr_link_close(again);
	xr_link_close(a);
}

static void test_stopped_peer_pushes_back_then_drops(void **state)
{
	pid_t pid = spawn("10.250.9.7", idle_body, NULL);
	struct xr_link *a = xr_link_host("10.250.9.6");
	struct xr_link_host_stats st;
	unsigned taken = 0;
	struct xr_frame *f = NULL;

	(void)state;
	/* Nobody reads: the ring fills and the link stops taking frames. */
	for (unsigned i = 0; i < 4096; i++) {
		if (!f) {
			f = xr_link_frame_alloc(a);
			make_frame(f, "10.250.9.6", "10.250.9.7", 6, i);
		}
		if (xr_link_send(a, &f, 1) != 1)
			break;
		f = NULL;
		taken++;
	}
	assert_true(taken > 0 && taken < 4096);
	assert_int_equal(xr_link_send(a, &f, 1), 0);
	usleep(80000);   /* past HOST_STALL_NS: the peer is stuck, its frames are dropped */
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	xr_link_host_stats(a, &st);
	assert_int_equal(st.tx_host, taken);
	assert_int_equal(st.tx_drop_stalled, 1);
	kill(pid, SIGKILL);
	wait_status(pid);
	xr_link_close(a);
}

static void test_bad_handshake_refused(void **state)
{
	struct xr_link *a = xr_link_host("10.250.9.8");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *name = "xroce-host/10.250.9.8";
	struct xr_link_host_stats st;
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	uint64_t t0 = ms_now();

	(void)state;
	memcpy(sa.sun_path + 1, name, strlen(name));
	assert_int_equal(connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))), 0);
	assert_int_equal(send(s, "hello?", 6, 0), 6);
	do {
		usleep(2000);
		xr_link_host_stats(a, &st);
	} while (!st.refused_hello && ms_now() - t0 < 5000);
	assert_int_equal(st.refused_hello, 1);
	assert_int_equal(st.peers_accepted, 0);
	close(s);
	xr_link_close(a);
}


static void test_rogue_peer_counted_not_trusted(void **state)
{
	struct xr_link *a = xr_link_host("10.250.9.10");
	struct xr_link_host_stats st;
	struct rogue r;
	struct xr_frame *f[8], *o, *stuck = NULL;
	const uint32_t idx[] = { 0, 999, 0, 1, 2 };   /* bad, already held, bad length */
	uint32_t first, sent = 0, in_place = HOST_SLOTS;
	int got;

	(void)state;
	rogue_connect(&r, "10.250.9.10", "10.250.9.11");
	make_frame(&r.to_dev[0], "10.250.9.11", "10.250.9.10", 11, 0);
	r.to_dev[1].len = 5;
	make_frame(&r.to_dev[2], "10.250.9.11", "10.250.9.10", 11, 1);
	for (unsigned k = 0; k < 5; k++)
		atomic_store(&r.mine->sent[k], idx[k]);
	atomic_store(&r.mine->tail, 5);
	got = recv_wait(a, f, 8, 1000);
	assert_int_equal(got, 2);
	assert_true(frame_is(f[0], "10.250.9.11", "10.250.9.10", 11, 0));
	assert_true(frame_is(f[1], "10.250.9.11", "10.250.9.10", 11, 1));
	xr_link_host_stats(a, &st);
	assert_int_equal(st.rx_host, 2);
	assert_int_equal(st.rx_drop_bad_index, 2);
	assert_int_equal(st.rx_drop_bad_len, 1);
	/* The bad length's slot came back at once, the others once freed. */
	assert_int_equal(atomic_load(&r.dev->ret_tail), 1);
	assert_int_equal(atomic_load(&r.dev->ret[0]), 1);
	xr_link_frame_free(a, f[0]);
	xr_link_frame_free(a, f[1]);
	assert_int_equal(atomic_load(&r.dev->ret_tail), 3);
	/* A tail that is no count: nothing taken. */
	atomic_store(&r.mine->tail, 5 + 1000);
	assert_int_equal(xr_link_recv(a, f, 8), 0);
	atomic_store(&r.mine->tail, 5);

	/* Before any frame to it the device builds in its own pool (copied on send)... */
	o = xr_link_frame_alloc(a);
	make_frame(o, "10.250.9.10", "10.250.9.11", 10, sent++);
	assert_int_equal(xr_link_send(a, &o, 1), 1);
	assert_int_equal(atomic_load(&r.dev->tail), 1);
	first = atomic_load(&r.dev->sent[0]);
	assert_true(first < HOST_SLOTS);
	assert_true(frame_is(&r.from_dev[first], "10.250.9.10", "10.250.9.11", 10, 0));
	/* ...then in a slot we can see before it is even sent: no copy. */
	o = xr_link_frame_alloc(a);
	make_frame(o, "10.250.9.10", "10.250.9.11", 10, sent);
	for (uint32_t i = 0; i < HOST_SLOTS; i++)
		if (frame_is(&r.from_dev[i], "10.250.9.10", "10.250.9.11", 10, sent))
			in_place = i;
	assert_true(in_place < HOST_SLOTS);
	assert_int_equal(xr_link_send(a, &o, 1), 1);
	assert_int_equal(atomic_load(&r.dev->sent[sent++]), in_place);
	/* We give nothing back: once we hold every slot, the device pushes back. */
	while (sent < 2 * HOST_SLOTS) {
		o = xr_link_frame_alloc(a);
		make_frame(o, "10.250.9.10", "10.250.9.11", 10, sent);
		if (xr_link_send(a, &o, 1) != 1) {
			stuck = o;
			break;
		}
		sent++;
	}
	assert_non_null(stuck);
	assert_int_equal(sent, HOST_SLOTS);
	/* One good return, then one twice and one out of range: counted, ignored. */
	atomic_store(&r.mine->ret[0], first);
	atomic_store(&r.mine->ret[1], first);
	atomic_store(&r.mine->ret[2], 4242);
	atomic_store(&r.mine->ret_tail, 3);
	assert_int_equal(xr_link_send(a, &stuck, 1), 1);
	assert_int_equal(atomic_load(&r.dev->sent[sent & (HOST_SLOTS - 1)]), first);
	assert_true(frame_is(&r.from_dev[first], "10.250.9.10", "10.250.9.11", 10, sent));
	xr_link_host_stats(a, &st);
	assert_int_equal(st.rx_drop_bad_index, 4);
	assert_int_equal(st.tx_host, HOST_SLOTS + 1);
	/* A return count that is no count: counted, the device goes on. */
	atomic_store(&r.mine->ret_tail, 3 + 100000);
	o = xr_link_frame_alloc(a);
	assert_non_null(o);
	xr_link_frame_free(a, o);
	xr_link_host_stats(a, &st);
	assert_int_equal(st.rx_drop_bad_index, 5);

	/* The peer goes: noticed, and its mapping freed once drained. */
	close(r.sock);
	for (uint64_t t0 = ms_now(); !st.peers_gone && ms_now() - t0 < 5000;) {
		recv_wait(a, f, 8, 20);
		xr_link_host_stats(a, &st);
	}
	assert_int_equal(st.peers_gone, 1);
	close(r.efd);
	close(r.dev_efd);
	close(r.dev_mfd);
	munmap(r.mine, host_out_size());
	munmap((void *)r.dev, host_out_size());
	xr_link_close(a);
}

#define MESH 16
#define MESH_FRAMES 100

static char mesh_addr[MESH][32];
static int mesh_go[2];   /* all members start when every one is registered */

/* Each member sends MESH_FRAMES to every other and checks what it gets:
 * exact, and in order per sender. */
static int mesh_body(struct xr_link *l, void *arg)
{
	int me = (int)(intptr_t)arg;
	uint32_t next[MESH] = { 0 }, got_all = 0, want = (MESH - 1) * MESH_FRAMES;
	uint64_t t0;
	unsigned sent = 0;
	char c;

	close(mesh_go[1]);
	if (read(mesh_go[0], &c, 1) != 1)
		return 6;
	t0 = ms_now();
	while ((got_all < want || sent < want) && ms_now() - t0 < 30000) {
		struct xr_frame *in[32];
		int got;
		if (sent < want) {
			int to = (int)(sent % (MESH - 1));
			struct xr_frame *f = xr_link_frame_alloc(l);
			to += to >= me;
			if (!f)
				return 2;
			make_frame(f, mesh_addr[me], mesh_addr[to], (uint32_t)me, sent / (MESH - 1));
			send_all(l, f);
			sent++;
		}
		got = sent < want ? xr_link_recv(l, in, 32) : recv_wait(l, in, 32, 50);
		for (int i = 0; i < got; i++) {
			uint32_t who;
			memcpy(&who, in[i]->data + LEN_OFF, 4);
			if (who >= MESH || who == (uint32_t)me ||
			    !frame_is(in[i], mesh_addr[who], mesh_addr[me], who, next[who])) {
				fprintf(stderr, "mesh %d: frame %u from %u is not the one expected\n", me, next[who < MESH ? who : 0], who);
				return 4;
			}
			next[who]++;
			got_all++;
			xr_link_frame_free(l, in[i]);
		}
	}
	usleep(200000);   /* others may still read from our rings */
	if (got_all != want) {
		struct xr_link_host_stats st;
		xr_link_host_stats(l, &st);
		fprintf(stderr, "mesh %d: %u of %u frames; sent %" PRIu64 ", dropped no_peer %" PRIu64 " gone %" PRIu64
			" stalled %" PRIu64 "; peers %" PRIu64 "+%" PRIu64 "\n", me, got_all, want, st.tx_host,
			st.tx_drop_no_peer, st.tx_drop_peer_gone, st.tx_drop_stalled, st.peers_connected, st.peers_accepted);
		for (int w = 0; w < MESH; w++)
			if (w != me && next[w] != MESH_FRAMES)
				fprintf(stderr, "  from %d: %u\n", w, next[w]);
	}
	xr_link_close(l);
	return got_all == want ? 0 : 5;
}

static void test_mesh_of_16_processes(void **state)
{
	pid_t pid[MESH];
	int status[MESH];

	(void)state;
	for (int i = 0; i < MESH; i++)
		snprintf(mesh_addr[i], sizeof(mesh_addr[i]), "10.250.8.%d", i + 1);
	assert_int_equal(pipe(mesh_go), 0);
	for (int i = 0; i < MESH; i++)
		pid[i] = spawn(mesh_addr[i], mesh_body, (void *)(intptr_t)i);
	close(mesh_go[0]);
	assert_int_equal(write(mesh_go[1], "gggggggggggggggg", MESH), MESH);
	close(mesh_go[1]);
	for (int i = 0; i < MESH; i++)
		status[i] = wait_status(pid[i]);
	for (int i = 0; i < MESH; i++)
		if (status[i])
			fprintf(stderr, "mesh %d: exit status %d\n", i, status[i]);
	for (int i = 0; i < MESH; i++)
		assert_int_equal(status[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_device_per_address),
		cmocka_unit_test(test_udp_link_refuses_an_address_a_host_link_holds),
		cmocka_unit_test(test_no_peer_is_dropped_and_counted),
		cmocka_unit_test(test_frames_cross_exact_and_in_order),
		cmocka_unit_test(test_a_ping_pong_keeps_to_a_few_slots),
		cmocka_unit_test(test_reply_on_a_new_connection_wakes_a_sleeper),
		cmocka_unit_test(test_killed_peer_is_noticed),
		cmocka_unit_test(test_stopped_peer_pushes_back_then_drops),
		cmocka_unit_test(test_bad_handshake_refused),
		cmocka_unit_test(test_rogue_peer_counted_not_trusted),
		cmocka_unit_test(test_mesh_of_16_processes),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
