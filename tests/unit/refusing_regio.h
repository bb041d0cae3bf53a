/* SPDX-License-Identifier: MIT */
/*
 * For tests: an end's register path made to refuse one kind of write (an
 * address, and one value or any), as a device answering SLVERR or a debug
 * socket gone away would, until refuse_no_more; every other access passes
 * through to the engine. One end at a time.
 */
#ifndef XR_TEST_REFUSING_REGIO_H
#define XR_TEST_REFUSING_REGIO_H

#include <stdint.h>

#include "rc_harness.h"
#include "xroce/regio.h"

static struct refusing {
	struct xr_regio *r;               /* the path refusing now, or NULL */
	const struct xr_regio_ops *real;
	void *real_ctx;
	uint32_t addr, val;               /* the write refused; val ~0u: any value */
	int answer;
	unsigned refused;                 /* writes refused since refuse() */
} RF;

static inline int refusing_read(void *ctx, uint32_t addr, uint32_t *val)
{
	(void)ctx;
	return RF.real->read(RF.real_ctx, addr, val);
}

static inline int refusing_write(void *ctx, uint32_t addr, uint32_t val)
{
	(void)ctx;
	if (addr == RF.addr && (RF.val == ~0u || val == RF.val)) {
		RF.refused++;
		return RF.answer;
	}
	return RF.real->write(RF.real_ctx, addr, val);
}

static const struct xr_regio_ops refusing_ops = { refusing_read, refusing_write, NULL };

static inline void refuse(struct end *e, uint32_t addr, uint32_t val, int answer)
{
	struct xr_regio *r = xr_context_regs(e->ctx);

	assert_null(RF.r);   /* one at a time: a second would call itself */
	RF = (struct refusing){ r, r->ops, r->ctx, addr, val, answer, 0 };
	r->ops = &refusing_ops;
	r->ctx = NULL;
}

/* The path as it was (nothing refusing: nothing to do). */
static inline void refuse_no_more(void)
{
	if (!RF.r)
		return;
	RF.r->ops = RF.real;
	RF.r->ctx = RF.real_ctx;
	RF.r = NULL;
}

#endif
