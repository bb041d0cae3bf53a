/* SPDX-License-Identifier: MIT */
/*
 * The in-memory link on its own: order and backpressure per direction,
 * frames returning to their owner's pool, the pool in memory before the
 * first frame, the armed wakeup, and two threads streaming both ways at
 * once (ASan/TSan-style races show here as lost, duplicated or reordered
 * frames).
 */
#include <poll.h>
#include <unistd.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"
#include "xroce/link.h"

static void fill(struct xr_frame *f, uint32_t seq)
{
	f->len = 64;
	memcpy(f->data, &seq, 4);
	memset(f->data + 4, (int)(seq & 0xff), 60);
}

static uint32_t seq_of(const struct xr_frame *f)
{
	uint32_t s;
	memcpy(&s, f->data, 4);
	for (int i = 4; i < 64; i++)
		if (f->data[i] != (uint8_t)(s & 0xff))
			return UINT32_MAX;
	return s;
}

/* Every frame of the pool used once, each way, whole: no page of it is
 * faulted in by the traffic (before: one or two per frame, 2,300 and
 * more, each a hypervisor exit on a VM that pages in shadow tables). */
XR_TIMING_TEST static void test_the_pool_is_in_memory_before_traffic(void **state)
{
	struct xr_link *l[2];
	long before;

	(void)state;
	assert_int_equal(xr_link_mem_pair(&l[0], &l[1], 0), 0);
	before = minor_faults();
	for (unsigned k = 0; k < 2 * 1152; k++) {   /* a side's pool: the default depth 1,024 + 128 */
		struct xr_frame *f = xr_link_frame_alloc(l[k & 1]);
		assert_non_null(f);
		f->len = XR_MAX_FRAME;
		memset(f->data, (int)k, XR_MAX_FRAME);
		assert_int_equal(xr_link_send(l[k & 1], &f, 1), 1);
		assert_int_equal(xr_link_recv(l[!(k & 1)], &f, 1), 1);
		assert_int_equal(f->data[XR_MAX_FRAME - 1], (uint8_t)k);
		xr_link_frame_free(l[!(k & 1)], f);
	}
	print_message("%ld minor faults over the pool\n", minor_faults() - before);
	assert_true(minor_faults() - before < 64);
	xr_link_close(l[0]);
	xr_link_close(l[1]);
}

static void test_order_and_backpressure(void **state)
{
	struct xr_link *a, *b;
	struct xr_frame *f[64];
	uint32_t next = 0;
	int sent = 0;

	(void)state;
	assert_int_equal(xr_link_mem_pair(&a, &b, 16), 0);
	/* The queue holds 16 frames: the 17th is refused and stays ours. */
	for (int i = 0; i < 17; i++) {
		f[i] = xr_link_frame_alloc(a);
		assert_non_null(f[i]);
		fill(f[i], (uint32_t)i);
	}
	sent = xr_link_send(a, f, 17);
	assert_int_equal(sent, 16);
	assert_int_equal(xr_link_send(a, &f[16], 1), 0);
	xr_link_frame_free(a, f[16]);
	for (;;) {
		int n = xr_link_recv(b, f, 5);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			assert_int_equal(seq_of(f[i]), next++);
			xr_link_frame_free(b, f[i]);
		}
	}
	assert_int_equal(next, 16);
	assert_int_equal(xr_link_recv(a, f, 8), 0);   /* nothing came back the other way */
	xr_link_close(a);
	xr_link_close(b);
}

/* Frames freed by the receiver go back to the sender's pool: a sender can
 * stream far more frames than its pool holds. */
static void test_pool_returns(void **state)
{
	struct xr_link *a, *b;
	unsigned total = 0;

	(void)state;
	assert_int_equal(xr_link_mem_pair(&a, &b, 8), 0);
	for (int round = 0; round < 1000; round++) {
		struct xr_frame *f[8];
		int n;
		for (int i = 0; i < 8; i++) {
			f[i] = xr_link_frame_alloc(a);
			assert_non_null(f[i]);
			fill(f[i], total + (unsigned)i);
		}
		assert_int_equal(xr_link_send(a, f, 8), 8);
		n = xr_link_recv(b, f, 8);
		assert_int_equal(n, 8);
		for (int i = 0; i < n; i++) {
			assert_int_equal(seq_of(f[i]), total + (unsigned)i);
			xr_link_frame_free(b, f[i]);
		}
		total += 8;
	}
	/* The pool is finite: allocating without freeing runs dry, with NULL. */
	{
		struct xr_frame *held[4096];
		unsigned k = 0;
		while (k < 4096 && (held[k] = xr_link_frame_alloc(a)))
			k++;
		assert_true(k > 8 && k < 4096);
		while (k)
			xr_link_frame_free(a, held[--k]);
	}
	xr_link_close(a);
	xr_link_close(b);
}

static bool readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* The pause's arm (ops->arm) says whether a frame already waits, so the
 * caller takes it rather than leave it to a wakeup. It looks at the next
 * slot, not the producer's tail: check it wherever the head stands,
 * across the ring's wrap. */
static void test_arm_sees_a_queued_frame(void **state)
{
	struct xr_link *a, *b;
	struct xr_frame *f, *got[4];

	(void)state;
	assert_int_equal(xr_link_mem_pair(&a, &b, 16), 0);
	for (unsigned i = 0; i < 70; i++) {
		assert_int_equal(b->ops->arm(b, true), 0);   /* nothing waits */
		f = xr_link_frame_alloc(a);
		assert_non_null(f);
		fill(f, i);
		assert_int_equal(xr_link_send(a, &f, 1), 1);
		assert_int_equal(b->ops->arm(b, true), 1);   /* one waits: take it */
		assert_int_equal(b->ops->arm(b, false), 0);
		assert_int_equal(xr_link_recv(b, got, 4), 1);
		assert_int_equal(seq_of(got[0]), i);
		xr_link_frame_free(b, got[0]);
	}
	assert_int_equal(b->ops->arm(b, true), 0);
	xr_link_close(a);
	xr_link_close(b);
}

/* wait_fd arms the wakeup: a frame after arming makes the fd readable, a
 * frame already queued when arming does too, and an unarmed end is not
 * woken (no syscall per frame on the fast path). */
static void test_armed_wakeup(void **state)
{
	struct xr_link *a, *b;
	struct xr_frame *f, *got[4];
	int fd;

	(void)state;
	assert_int_equal(xr_link_mem_pair(&a, &b, 0), 0);
	fd = b->ops->wait_fd(b);
	assert_true(fd >= 0);
	assert_false(readable(fd));
	f = xr_link_frame_alloc(a);
	fill(f, 1);
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	assert_true(readable(fd));
	assert_int_equal(xr_link_recv(b, got, 4), 1);
	xr_link_frame_free(b, got[0]);

	/* Re-armed: the old wakeup is drained. Not armed again: no wakeup. */
	fd = b->ops->wait_fd(b);
	assert_false(readable(fd));
	f = xr_link_frame_alloc(a);
	fill(f, 2);
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	assert_true(readable(fd));
	assert_int_equal(xr_link_recv(b, got, 4), 1);
	xr_link_frame_free(b, got[0]);
	{
		uint64_t v;
		assert_int_equal(read(fd, &v, sizeof(v)), (ssize_t)sizeof(v));   /* the caller drained it */
	}
	f = xr_link_frame_alloc(a);
	fill(f, 3);
	assert_int_equal(xr_link_send(a, &f, 1), 1);
	assert_false(readable(fd));   /* not armed since the last wakeup */

	/* Arming with a frame already queued wakes at once. */
	fd = b->ops->wait_fd(b);
	assert_true(readable(fd));
	assert_int_equal(xr_link_recv(b, got, 4), 1);
	assert_int_equal(seq_of(got[0]), 3);
	xr_link_frame_free(b, got[0]);
	xr_link_close(a);
	xr_link_close(b);
}

struct streamer {
	struct xr_link *l;
	unsigned count;
	unsigned received, bad;
};

/* Sends count numbered frames and receives count from the other end,
 * interleaved, as an engine does. */
static void *stream(void *arg)
{
	struct streamer *s = arg;
	unsigned sent = 0;

	while (sent < s->count || s->received < s->count) {
		struct xr_frame *f[16];
		unsigned want = s->count - sent < 16 ? s->count - sent : 16, k = 0;
		int n;
		while (k < want && (f[k] = xr_link_frame_alloc(s->l)) != NULL) {
			fill(f[k], sent + k);
			k++;
		}
		if (k) {
			n = xr_link_send(s->l, f, k);
			if (n < 0) {   /* no cmocka asserts off the main thread */
				s->bad++;
				n = 0;
			}
			for (unsigned i = (unsigned)n; i < k; i++)
				xr_link_frame_free(s->l, f[i]);
			sent += (unsigned)n;
		}
		n = xr_link_recv(s->l, f, 16);
		for (int i = 0; i < n; i++) {
			if (seq_of(f[i]) != s->received)
				s->bad++;
			s->received++;
			xr_link_frame_free(s->l, f[i]);
		}
	}
	return NULL;
}

static void test_two_threads_both_ways(void **state)
{
	struct xr_link *a, *b;
	struct streamer sa = { .count = 200000 }, sb = { .count = 200000 };
	pthread_t t;

	(void)state;
	assert_int_equal(xr_link_mem_pair(&a, &b, 64), 0);
	sa.l = a;
	sb.l = b;
	assert_int_equal(pthread_create(&t, NULL, stream, &sb), 0);
	stream(&sa);
	pthread_join(t, NULL);
	assert_int_equal(sa.received, sa.count);
	assert_int_equal(sb.received, sb.count);
	assert_int_equal(sa.bad, 0);
	assert_int_equal(sb.bad, 0);
	assert_int_equal(a->stats.tx_frames, sa.count);
	assert_int_equal(b->stats.rx_frames, sa.count);
	xr_link_close(a);
	xr_link_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_backpressure),
		cmocka_unit_test(test_pool_returns),
#ifndef XR_TSAN   /* timing or page faults (test_util.h) */
		cmocka_unit_test(test_the_pool_is_in_memory_before_traffic),
#endif
		cmocka_unit_test(test_armed_wakeup),
		cmocka_unit_test(test_arm_sees_a_queued_frame),
		cmocka_unit_test(test_two_threads_both_ways),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
