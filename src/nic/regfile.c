/* SPDX-License-Identifier: MIT */
/*
 * The register file: decodes one 32-bit access like an AXI-Lite slave.
 * Access rules come from the register table; side effects (CTRL, table
 * commands, counters, event log, doorbells) are dispatched from here.
 */
#include <string.h>

#include "engine.h"

static bool local_address_set(const struct xr_engine *e)
{
	bool mac = xr_reg_get(e, XR_REG_MAC_LOW) || xr_reg_get(e, XR_REG_MAC_HIGH);
	bool ip4 = xr_reg_get(e, XR_REG_IP_ADDR) != 0;
	bool ip6 = xr_reg_get(e, XR_REG_IPV6_ADDR_0) || xr_reg_get(e, XR_REG_IPV6_ADDR_1) ||
		   xr_reg_get(e, XR_REG_IPV6_ADDR_2) || xr_reg_get(e, XR_REG_IPV6_ADDR_3);
	return mac && (ip4 || ip6);
}

static enum xr_not_ready not_ready_reason(const struct xr_engine *e)
{
	uint32_t ctrl = xr_reg_get(e, XR_REG_CTRL);

	if (ctrl & XR_CTRL_SOFT_RESET)
		return XR_NOT_READY_RESET;
	if (!atomic_load(&e->link_up))
		return XR_NOT_READY_LINK_DOWN;
	if (!local_address_set(e))
		return XR_NOT_READY_NO_ADDRESS;
	if (!(ctrl & XR_CTRL_ENABLE))
		return XR_NOT_READY_DISABLED;
	return XR_NOT_READY_NONE;
}

static uint32_t status_value(const struct xr_engine *e)
{
	enum xr_not_ready why = not_ready_reason(e);
	uint32_t v = (uint32_t)why << XR_STATUS_NOT_READY_SHIFT;

	if (atomic_load(&e->link_up))
		v |= XR_STATUS_LINK_UP;
	if (xr_reg_get(e, XR_REG_CTRL) & XR_CTRL_ENABLE)
		v |= XR_STATUS_ENABLED;
	if (why == XR_NOT_READY_NONE)
		v |= XR_STATUS_READY;
	return v;
}

/* Writing EVLOG_SEL latches the event, as an FPGA loads its read
 * registers on the select: read field by field, it cannot tear across an
 * overwrite. TYPE's valid bit says whether it was in the ring then. */
static void evlog_select(struct xr_engine *e, uint32_t seq)
{
	xr_reg_set(e, XR_REG_EVLOG_SEL, seq);
	xr_evlog_read(e, seq, &e->evlog_latched, &e->evlog_latched_valid);
}

static uint32_t evlog_field(struct xr_engine *e, uint32_t off)
{
	const struct xr_evlog_entry ent = e->evlog_latched;
	bool valid = e->evlog_latched_valid;

	switch (off) {
	case XR_REG_EVLOG_TS_LO: return (uint32_t)ent.ts_ns;
	case XR_REG_EVLOG_TS_HI: return (uint32_t)(ent.ts_ns >> 32);
	case XR_REG_EVLOG_TYPE:  return ent.type | (valid ? 1u << 31 : 0);
	case XR_REG_EVLOG_QPN:   return ent.qpn;
	case XR_REG_EVLOG_ARG0:  return ent.arg0;
	default:                 return ent.arg1;
	}
}

static uint32_t counter_read(struct xr_engine *e, uint32_t off)
{
	uint32_t idx = (off - XR_COUNTER_BASE) / 8;
	uint64_t v;

	if (off & 4) {
		if (e->latch_valid && e->latch_index == idx)
			return e->latch_hi;
		v = atomic_load_explicit(&e->counters[idx], memory_order_relaxed);
		return (uint32_t)(v >> 32);
	}
	v = atomic_load_explicit(&e->counters[idx], memory_order_relaxed);
	e->latch_hi = (uint32_t)(v >> 32);
	e->latch_index = idx;
	e->latch_valid = true;
	return (uint32_t)v;
}

static enum xr_axi_resp reg_read(struct xr_engine *e, uint32_t off, uint32_t *val)
{
	const struct xr_reg_desc *d = xr_reg_by_offset(off);

	*val = 0;
	if (!d)
		return XR_AXI_DECERR;
	if (d->access == XR_WO)
		return XR_AXI_OKAY;   /* write-only registers read as 0 */
	if (off >= XR_COUNTER_BASE && off < XR_COUNTER_END) {
		*val = counter_read(e, off);
		return XR_AXI_OKAY;
	}
	switch (off) {
	case XR_REG_STATUS:
		*val = status_value(e);
		break;
	case XR_REG_PFC_STATUS:
		*val = xr_pfc_status(e);
		break;
	case XR_REG_EVLOG_COUNT:
		*val = (uint32_t)xr_evlog_count(e);
		break;
	case XR_REG_EVLOG_WRAP:
		*val = (uint32_t)(xr_evlog_count(e) / XR_EVLOG_ENTRIES);
		break;
	case XR_REG_EVLOG_TS_LO: case XR_REG_EVLOG_TS_HI: case XR_REG_EVLOG_TYPE:
	case XR_REG_EVLOG_QPN: case XR_REG_EVLOG_ARG0: case XR_REG_EVLOG_ARG1:
		*val = evlog_field(e, off);
		break;
	default:
		*val = xr_reg_get(e, off);
		break;
	}
	return XR_AXI_OKAY;
}

/* CTRL: asserting soft_reset clears state; enable needs link and address. */
static enum xr_axi_resp ctrl_write(struct xr_engine *e, uint32_t val)
{
	uint32_t old = xr_reg_get(e, XR_REG_CTRL);
	enum xr_axi_resp resp = XR_AXI_OKAY;

	if ((val & XR_CTRL_SOFT_RESET) && (val & XR_CTRL_ENABLE))
		return XR_AXI_SLVERR;   /* cannot run while held in reset */
	if ((val & XR_CTRL_SOFT_RESET) && !(old & XR_CTRL_SOFT_RESET)) {
		xr_reg_set(e, XR_REG_CTRL, val);
		xr_engine_soft_reset(e);
		return XR_AXI_OKAY;
	}
	if ((val & XR_CTRL_ENABLE) && !(old & XR_CTRL_ENABLE)) {
		/* Refuse enable, but apply the other bits, so STATUS tells why. */
		xr_reg_set(e, XR_REG_CTRL, val & ~XR_CTRL_ENABLE);
		if (not_ready_reason(e) != XR_NOT_READY_DISABLED)
			return XR_AXI_SLVERR;
		xr_evlog_add(e, XR_EV_ENABLE, 0, 1, 0);
	} else if (!(val & XR_CTRL_ENABLE) && (old & XR_CTRL_ENABLE)) {
		xr_evlog_add(e, XR_EV_ENABLE, 0, 0, 0);
	}
	xr_reg_set(e, XR_REG_CTRL, val);
	return resp;
}

static enum xr_axi_resp table_cmd(struct xr_engine *e, uint32_t off, uint32_t val)
{
	enum xr_cmd_status st;

	if (off == XR_REG_QP_CMD)
		st = xr_qp_cmd(e, val);
	else if (off == XR_REG_MR_CMD)
		st = xr_mr_cmd(e, val);
	else if (off == XR_REG_SRQ_CMD)
		st = xr_srq_cmd(e, val);
	else if (off == XR_REG_MCG_CMD)
		st = xr_mcg_cmd(e, val);
	else
		st = xr_cq_cmd(e, val);
	xr_reg_set(e, XR_REG_QP_CMD_STATUS, st);
	if (st != XR_CMD_ST_OK) {
		xr_evlog_add(e, XR_EV_CMD_ERROR, 0, off, st);
		return XR_AXI_SLVERR;
	}
	return XR_AXI_OKAY;
}

static enum xr_axi_resp reg_write(struct xr_engine *e, uint32_t off, uint32_t val)
{
	const struct xr_reg_desc *d = xr_reg_by_offset(off);
	enum xr_axi_resp resp;

	if (!d)
		return XR_AXI_DECERR;
	if (d->access == XR_RO)
		return XR_AXI_SLVERR;
	if (d->count > 1)
		return xr_doorbell(e, off, val);
	if (val & ~e->writable_mask[off / 4])
		return XR_AXI_SLVERR;   /* bits outside the defined fields */
	switch (off) {
	case XR_REG_CTRL:
		resp = ctrl_write(e, val);
		xr_tx_headers_stale(e);   /* a soft reset */
		return resp;
	case XR_REG_QP_CMD: case XR_REG_MR_CMD: case XR_REG_CQ_CMD: case XR_REG_SRQ_CMD: case XR_REG_MCG_CMD:
		resp = table_cmd(e, off, val);
		xr_tx_headers_stale(e);   /* a QP's addresses may have changed */
		return resp;
	case XR_REG_SRQ_DB:
		return xr_srq_doorbell(e, val);
	case XR_REG_EVLOG_SEL:
		evlog_select(e, val);
		return XR_AXI_OKAY;
	case XR_REG_CNT_CTRL:
		if (val & 1) {
			/* Under dp_mutex: a pass's plain add (xr_count_pass) read
			 * before the clear would store the old count back. */
			pthread_mutex_lock(&e->dp_mutex);
			for (unsigned c = 0; c < XR_CNT_COUNT; c++)
				atomic_store_explicit(&e->counters[c], 0, memory_order_relaxed);
			e->latch_valid = false;
			pthread_mutex_unlock(&e->dp_mutex);
		}
		return XR_AXI_OKAY;
	default:
		if (d->access == XR_W1C)
			val = xr_reg_get(e, off) & ~val;
		xr_reg_set(e, off, val);
		/* After the value: a template built from it carries the new generation. */
		xr_tx_headers_stale(e);
		return XR_AXI_OKAY;
	}
}

static void count_error(struct xr_engine *e, uint32_t addr, enum xr_axi_resp r)
{
	if (r == XR_AXI_OKAY)
		return;
	xr_count(e, r == XR_AXI_SLVERR ? XR_CNT_REG_SLVERR : XR_CNT_REG_DECERR, 1);
	xr_reg_set(e, XR_REG_REG_ERR_ADDR, addr);
	xr_evlog_add(e, XR_EV_REG_ERROR, 0, addr, r);
}

enum xr_axi_resp xr_engine_reg_read(struct xr_engine *e, uint32_t addr, uint32_t *val)
{
	enum xr_axi_resp r;
	uint32_t dummy;

	if (!val)
		val = &dummy;
	xr_irq_hold();   /* a read can raise an event (an error): after the access */
	pthread_mutex_lock(&e->reg_lock);
	r = (addr & 3) ? XR_AXI_DECERR : reg_read(e, addr, val);
	if (r != XR_AXI_OKAY)
		*val = 0;
	count_error(e, addr, r);
	pthread_mutex_unlock(&e->reg_lock);
	xr_irq_release();
	return r;
}

enum xr_axi_resp xr_engine_reg_write(struct xr_engine *e, uint32_t addr, uint32_t val)
{
	const struct xr_reg_desc *d = xr_reg_by_offset(addr);
	enum xr_axi_resp r;

	/* Doorbells touch only their queue (under its own lock), as an
	 * FPGA's doorbell page bypasses the control registers' bus: posters
	 * on many threads do not queue behind one register lock. */
	/* A doorbell logs its event with no lock held: it interrupts at once. */
	if (d && d->count > 1 && d->access != XR_RO) {
		r = xr_doorbell(e, addr, val);
		if (r != XR_AXI_OKAY) {
			xr_irq_hold();
			pthread_mutex_lock(&e->reg_lock);
			count_error(e, addr, r);
			pthread_mutex_unlock(&e->reg_lock);
			xr_irq_release();
		}
		return r;
	}
	/* What the write raises (an enable's event, a command's, an error's)
	 * interrupts once it is done: a handler then reads the registers as
	 * the write left them, and its accesses change nothing it returns. */
	xr_irq_hold();
	pthread_mutex_lock(&e->reg_lock);
	r = (addr & 3) ? XR_AXI_DECERR : reg_write(e, addr, val);
	count_error(e, addr, r);
	pthread_mutex_unlock(&e->reg_lock);
	xr_irq_release();
	return r;
}
