/* SPDX-License-Identifier: MIT */
/* The event log, written without a lock by several threads at once (the
 * program's posts and the engine's completions): every event that reads
 * as valid is whole, none is lost, a slot being rewritten reads invalid. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <cmocka.h>

#include "nic/engine.h"
#include "xroce/engine.h"
#include "xroce/regmap.h"

enum { WRITERS = 3, PER_WRITER = 200000 };

struct run {
	struct xr_engine *e;
	atomic_uint finished;        /* writers done: the reader's loop ends even if events went missing */
	atomic_uint writer;
};

/* Each event carries its writer and index twice (arg0 and arg1 ^ ~0), so a
 * torn read shows. */
static void *writer(void *arg)
{
	struct run *r = arg;
	unsigned w = atomic_fetch_add(&r->writer, 1);

	for (uint32_t i = 0; i < PER_WRITER; i++)
		xr_evlog_add(r->e, XR_EV_NAK_SENT, w, i, ~i);
	atomic_fetch_add(&r->finished, 1);
	return NULL;
}

static void test_concurrent_writers_and_a_reader(void **state)
{
	struct run r = { .e = xr_engine_create() };
	pthread_t t[WRITERS];
	uint64_t checked = 0, base;

	(void)state;
	assert_non_null(r.e);
	base = xr_evlog_count(r.e);
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, &r), 0);
	/* Read the newest events while they are written. */
	while (xr_evlog_count(r.e) < base + (uint64_t)WRITERS * PER_WRITER && atomic_load(&r.finished) < WRITERS) {
		uint64_t n = xr_evlog_count(r.e);
		for (uint64_t s = n > 64 ? n - 64 : 0; s < n; s++) {
			struct xr_evlog_entry ev;
			bool valid;
			xr_evlog_read(r.e, s, &ev, &valid);
			if (!valid || ev.type != XR_EV_NAK_SENT)
				continue;
			if (ev.arg1 != ~ev.arg0 || ev.qpn >= WRITERS)
				fail_msg("event %llu torn: qpn %u arg0 %u arg1 %u", (unsigned long long)s, ev.qpn,
					 ev.arg0, ev.arg1);
			checked++;
		}
	}
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(xr_evlog_count(r.e), base + (uint64_t)WRITERS * PER_WRITER);
	assert_true(checked > 0);
	/* Quiet now: the last ring's worth reads valid, one of each index per
	 * writer at most, and anything older or newer does not. */
	{
		uint64_t n = xr_evlog_count(r.e);
		struct xr_evlog_entry ev;
		bool valid;
		for (uint64_t s = n - XR_EVLOG_ENTRIES; s < n; s++) {
			xr_evlog_read(r.e, s, &ev, &valid);
			assert_true(valid);
			assert_int_equal(ev.arg1, ~ev.arg0);
		}
		xr_evlog_read(r.e, n - XR_EVLOG_ENTRIES - 1, &ev, &valid);
		assert_false(valid);
		xr_evlog_read(r.e, n, &ev, &valid);
		assert_false(valid);
	}
	xr_engine_destroy(r.e);
}

static uint32_t reg(struct xr_engine *e, uint32_t off)
{
	uint32_t v = 0;

	assert_int_equal(xr_engine_reg_read(e, off, &v), XR_AXI_OKAY);
	return v;
}

/* Through the registers, an event is read field by field: selecting it
 * latches it, so the ring wrapping over it between two field reads does
 * not mix it with zeros or with the event that took its slot. */
static void test_selected_event_reads_whole_across_overwrite(void **state)
{
	struct xr_engine *e = xr_engine_create();
	uint32_t seq;

	(void)state;
	assert_non_null(e);
	xr_evlog_add(e, XR_EV_NAK_SENT, 0x1234, 0xAAAA0001, 0xBBBB0002);
	seq = reg(e, XR_REG_EVLOG_COUNT) - 1;
	assert_int_equal(xr_engine_reg_write(e, XR_REG_EVLOG_SEL, seq), XR_AXI_OKAY);
	assert_int_equal(reg(e, XR_REG_EVLOG_TYPE), (1u << 31) | XR_EV_NAK_SENT);
	/* The ring wraps over it before the rest is read. */
	for (uint32_t i = 0; i < XR_EVLOG_ENTRIES + 1; i++)
		xr_evlog_add(e, XR_EV_RETRANSMIT, 7, i, i);
	assert_int_equal(reg(e, XR_REG_EVLOG_QPN), 0x1234);
	assert_int_equal(reg(e, XR_REG_EVLOG_ARG0), 0xAAAA0001);
	assert_int_equal(reg(e, XR_REG_EVLOG_ARG1), 0xBBBB0002);
	assert_int_equal(reg(e, XR_REG_EVLOG_TYPE), (1u << 31) | XR_EV_NAK_SENT);
	/* Selected again, it is gone. */
	assert_int_equal(xr_engine_reg_write(e, XR_REG_EVLOG_SEL, seq), XR_AXI_OKAY);
	assert_int_equal(reg(e, XR_REG_EVLOG_TYPE) >> 31, 0);
	assert_int_equal(reg(e, XR_REG_EVLOG_ARG0), 0);
	xr_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_writers_and_a_reader),
		cmocka_unit_test(test_selected_event_reads_whole_across_overwrite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
