/* SPDX-License-Identifier: MIT */
/*
 * Extended completion queues (ibv_create_cq_ex, ibv_start_poll ..
 * ibv_end_poll, the ibv_wc_read_* accessors). The CQ is an ordinary one;
 * start_poll takes its completion into the CQ's own record and holds the
 * CQ until end_poll, as libibverbs asks, so the accessors read a
 * completion no other thread replaces meanwhile. The standard fields are
 * offered; completion timestamps, VLANs, flow tags and tag matching are
 * not (the device reports no timestamp clock in ibv_query_device_ex).
 */
#include "xrv.h"

struct xrv_cq_poll {
	pthread_mutex_t lock;     /* held from a start_poll that found one to end_poll */
	struct xr_wc cur;         /* the completion the accessors read */
};

static struct xrv_cq *cq_of(struct ibv_cq_ex *ex)
{
	return XRV_OF(xrv_cq, ibv_cq_ex_to_cq(ex));
}

/* One completion into the record: 0, ENOENT (none), or the poll's error. */
static int take(struct ibv_cq_ex *ex)
{
	struct xrv_cq *cq = cq_of(ex);
	int got = xr_poll_cq(cq->xr, 1, &cq->poll->cur);

	if (got < 0)
		return -got;
	if (!got)
		return ENOENT;
	ex->status = (enum ibv_wc_status)cq->poll->cur.status;
	ex->wr_id = cq->poll->cur.wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct xrv_cq_poll *p = cq_of(ex)->poll;
	int rc;

	if (!attr || attr->comp_mask)
		return EINVAL;
	pthread_mutex_lock(&p->lock);
	rc = take(ex);
	if (rc)
		pthread_mutex_unlock(&p->lock);   /* no end_poll follows a failed start */
	return rc;
}

static int next_poll(struct ibv_cq_ex *ex)
{
	return take(ex);
}

static void end_poll(struct ibv_cq_ex *ex)
{
	pthread_mutex_unlock(&cq_of(ex)->poll->lock);
}

static const struct xr_wc *cur(struct ibv_cq_ex *ex)
{
	return &cq_of(ex)->poll->cur;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ex)
{
	return (enum ibv_wc_opcode)cur(ex)->opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *ex)
{
	return cur(ex)->vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *ex)
{
	return cur(ex)->byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *ex)
{
	return cur(ex)->imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *ex)
{
	return cur(ex)->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *ex)
{
	return cur(ex)->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *ex)
{
	return cur(ex)->wc_flags;
}

/* Fields that are always 0 here, one reader per width: RoCE has no LIDs
 * or SLs (as ibv_poll_cq reports them), and the fields a CQ of this device
 * never offers (refused at creation) give 0 to a program that reads one
 * anyway, not a call through NULL. */
static uint8_t read_u8_zero(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static uint16_t read_u16_zero(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static uint32_t read_u32_zero(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static uint64_t read_u64_zero(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static void read_tm_info(struct ibv_cq_ex *ex, struct ibv_wc_tm_info *tm)
{
	(void)ex;
	if (tm)
		memset(tm, 0, sizeof(*tm));
}

struct ibv_cq_ex *xrv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct xrv_cq_poll *p;
	struct ibv_cq *ibv;
	struct ibv_cq_ex *ex;

	if (!attr || attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		xrv_unsupported("ibv_create_cq_ex", "parent domains");
		return NULL;
	}
	/* Single-threaded is a hint (the lock stays); ignoring overruns is not
	 * how this CQ behaves. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		xrv_unsupported("ibv_create_cq_ex flags", "CQ flags other than IBV_CREATE_CQ_ATTR_SINGLE_THREADED");
		return NULL;
	}
	if (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) {
		xrv_unsupported("ibv_create_cq_ex wc_flags", "timestamps, VLANs, flow tags, tag matching (standard fields only)");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	ibv = ibv_create_cq(ctx, (int)attr->cqe, attr->cq_context, attr->channel, (int)attr->comp_vector);
	if (!ibv) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	XRV_OF(xrv_cq, ibv)->poll = p;
	ex = &XRV_OF(xrv_cq, ibv)->ibv_ex;
	ex->comp_mask = 0;
	ex->start_poll = start_poll;
	ex->next_poll = next_poll;
	ex->end_poll = end_poll;
	ex->read_opcode = read_opcode;
	ex->read_vendor_err = read_vendor_err;
	ex->read_byte_len = read_byte_len;
	ex->read_imm_data = read_imm_data;
	ex->read_qp_num = read_qp_num;
	ex->read_src_qp = read_src_qp;
	ex->read_wc_flags = read_wc_flags;
	ex->read_slid = read_u32_zero;
	ex->read_sl = read_u8_zero;
	ex->read_dlid_path_bits = read_u8_zero;
	ex->read_completion_ts = read_u64_zero;
	ex->read_completion_wallclock_ns = read_u64_zero;
	ex->read_cvlan = read_u16_zero;
	ex->read_flow_tag = read_u32_zero;
	ex->read_tm_info = read_tm_info;
	return ex;
}

void xrv_cq_poll_free(struct xrv_cq_poll *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p);
}
