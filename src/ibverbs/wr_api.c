/* SPDX-License-Identifier: MIT */
/*
 * The ibv_wr_* posting API (struct ibv_qp_ex, ibv_wr_post(3)). A QP made by
 * ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS gets the builders:
 * between wr_start and wr_complete each builder opens a WR (the qp_ex's
 * wr_id and wr_flags as they stand), the setters fill the last one, and
 * wr_complete posts them all or none (xr_post_send_whole). The builders
 * return nothing: the first error is kept and wr_complete returns it,
 * posting nothing. Inline data is copied by its setter, as the API says
 * (the caller may reuse its buffer at once).
 */
#include "xrv.h"

/* One WR as built: its SGEs by offset, since the arrays may move as they
 * grow (an inline WR's one SGE holds its bytes' offset in inl as its
 * address); pointers are set at wr_complete. A UD WR's address is set
 * when its AH is. */
struct wr_item {
	struct xr_send_wr wr;
	uint32_t sge_at;
	bool has_data;        /* a DATA setter ran */
};

struct xrv_wr_batch {
	pthread_mutex_t lock;       /* held from wr_start to wr_complete/abort */
	bool open;
	int err;                    /* the first error since wr_start */
	uint32_t max_wrs;           /* the send queue's size: no batch is longer */
	struct wr_item *items;
	uint32_t n, cap;
	struct xr_sge *sges;
	uint32_t nsge, sge_cap;
	uint8_t *inl;
	uint32_t ninl, inl_cap;
};

static struct xrv_wr_batch *batch_of(struct ibv_qp_ex *qpx)
{
	return XRV_OF(xrv_qp, &qpx->qp_base)->wr;
}

static void fail(struct xrv_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Room for n more elements of size sz in *arr (capacity *cap, count have). */
static bool grow(void **arr, uint32_t *cap, uint32_t have, size_t n, size_t sz)
{
	uint64_t want = (uint64_t)have + n, c = *cap ? *cap : 16;
	void *p;

	if (want <= *cap)
		return true;
	if (want > UINT32_MAX / 2)
		return false;
	while (c < want)
		c *= 2;
	p = realloc(*arr, c * sz);
	if (!p)
		return false;
	*arr = p;
	*cap = (uint32_t)c;
	return true;
}

/* Opens a WR of opcode op, or NULL (the error kept) outside a batch or
 * beyond the send queue. */
static struct xr_send_wr *open_wr(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op)
{
	struct xrv_wr_batch *b = batch_of(qpx);
	struct wr_item *it;

	if (!b->open)
		return NULL;   /* no wr_start: nothing to fail, nothing posted */
	if (b->n >= b->max_wrs || !grow((void **)&b->items, &b->cap, b->n, 1, sizeof(*it))) {
		fail(b, ENOMEM);
		return NULL;
	}
	it = &b->items[b->n++];
	memset(it, 0, sizeof(*it));
	it->wr.wr_id = qpx->wr_id;
	it->wr.opcode = (enum xr_wr_opcode)op;
	it->wr.send_flags = qpx->wr_flags & (IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_SOLICITED);
	return &it->wr;
}

/* The WR a setter fills, or NULL: no batch, one that failed already, or
 * no WR built yet (which fails the batch). */
static struct wr_item *last_item(struct ibv_qp_ex *qpx)
{
	struct xrv_wr_batch *b = batch_of(qpx);

	if (!b->open || b->err)
		return NULL;
	if (!b->n) {
		fail(b, EINVAL);   /* a setter before any builder */
		return NULL;
	}
	return &b->items[b->n - 1];
}

/* ---- builders ---- */

static void wr_send(struct ibv_qp_ex *qpx)
{
	open_wr(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct xr_send_wr *w = open_wr(qpx, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct xr_send_wr *w = open_wr(qpx, IBV_WR_SEND_WITH_INV);

	if (w)
		w->invalidate_rkey = rkey;
}

static void rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct xr_send_wr *w = open_wr(qpx, op);

	if (!w)
		return;
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = addr;
	w->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		   uint64_t compare_add, uint64_t swap)
{
	struct xr_send_wr *w = open_wr(qpx, op);

	if (!w)
		return;
	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = addr;
	w->wr.atomic.compare_add = compare_add;
	w->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, uint64_t compare,
			      uint64_t swap)
{
	atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct xr_send_wr *w = open_wr(qpx, IBV_WR_LOCAL_INV);

	if (w)
		w->invalidate_rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct xr_send_wr *w = open_wr(qpx, IBV_WR_BIND_MW);

	if (!w)
		return;
	if (!mw || !bi) {
		fail(batch_of(qpx), EINVAL);
		return;
	}
	w->bind_mw.mw = XRV_OF(xrv_mw, mw)->xr;
	w->bind_mw.rkey = rkey;
	w->bind_mw.bind_info.mr = bi->mr ? XRV_OF(xrv_mr, bi->mr)->xr : NULL;
	w->bind_mw.bind_info.addr = bi->addr;
	w->bind_mw.bind_info.length = bi->length;
	w->bind_mw.bind_info.mw_access_flags = bi->mw_access_flags;
}

/* TSO, XRC and atomic writes are not on this device: the batch fails
 * (one line on stderr the first time). */
static void not_here(struct ibv_qp_ex *qpx, const char *verb, const char *why)
{
	struct xrv_wr_batch *b = batch_of(qpx);

	if (!b->open)
		return;
	xrv_unsupported(verb, why);
	fail(b, EOPNOTSUPP);
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	not_here(qpx, "ibv_wr_send_tso", "TCP segmentation offload");
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	(void)srqn;
	not_here(qpx, "ibv_wr_set_xrc_srqn", "XRC");
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, const void *data)
{
	(void)rkey, (void)addr, (void)data;
	not_here(qpx, "ibv_wr_atomic_write", "atomic write (IBA 1.5)");
}

/* ---- setters ---- */

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct xrv_wr_batch *b = batch_of(qpx);
	struct wr_item *it = last_item(qpx);

	if (!it)
		return;
	if (it->has_data || n > XR_WQE_MAX_SGE || (n && !sg)) {
		fail(b, EINVAL);
		return;
	}
	if (!grow((void **)&b->sges, &b->sge_cap, b->nsge, n, sizeof(*b->sges))) {
		fail(b, ENOMEM);
		return;
	}
	it->has_data = true;
	it->sge_at = b->nsge;
	it->wr.num_sge = (int)n;
	for (size_t i = 0; i < n; i++)
		b->sges[b->nsge++] = (struct xr_sge){ sg[i].addr, sg[i].length, sg[i].lkey };
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sg = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sg);
}

/* Copied now into the batch's own bytes: one SGE naming them at complete. */
static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_data_buf *bufs)
{
	struct xrv_wr_batch *b = batch_of(qpx);
	struct wr_item *it = last_item(qpx);
	size_t len = 0;

	if (!it)
		return;
	for (size_t i = 0; i < n && bufs && len <= XR_WQE_MAX_INLINE; i++)
		len = bufs[i].length > XR_WQE_MAX_INLINE - len ? XR_WQE_MAX_INLINE + 1 : len + bufs[i].length;
	if (it->has_data || (n && !bufs) || len > XR_WQE_MAX_INLINE) {
		fail(b, EINVAL);   /* beyond any QP's max_inline_data */
		return;
	}
	if (!grow((void **)&b->inl, &b->inl_cap, b->ninl, len, 1) ||
	    !grow((void **)&b->sges, &b->sge_cap, b->nsge, 1, sizeof(*b->sges))) {
		fail(b, ENOMEM);
		return;
	}
	it->has_data = true;
	it->sge_at = b->nsge;
	it->wr.send_flags |= XR_SEND_INLINE;
	it->wr.num_sge = 1;
	b->sges[b->nsge++] = (struct xr_sge){ b->ninl, (uint32_t)len, 0 };   /* an offset until complete */
	for (size_t i = 0; i < n; i++) {
		if (bufs[i].length)
			memcpy(b->inl + b->ninl, bufs[i].addr, bufs[i].length);
		b->ninl += (uint32_t)bufs[i].length;
	}
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf d = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &d);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct xrv_wr_batch *b = batch_of(qpx);
	struct wr_item *it = last_item(qpx);

	if (!it)
		return;
	if (qpx->qp_base.qp_type != IBV_QPT_UD || !ah) {
		fail(b, EINVAL);
		return;
	}
	it->wr.wr.ud.ah = XRV_OF(xrv_ah, ah)->xr;
	it->wr.wr.ud.remote_qpn = remote_qpn;
	it->wr.wr.ud.remote_qkey = remote_qkey;
}

/* ---- the critical region ---- */

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct xrv_wr_batch *b = batch_of(qpx);

	pthread_mutex_lock(&b->lock);
	b->open = true;
	b->err = 0;
	b->n = b->nsge = b->ninl = 0;
}

static void close_batch(struct xrv_wr_batch *b)
{
	b->open = false;
	pthread_mutex_unlock(&b->lock);
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct xrv_wr_batch *b = batch_of(qpx);

	if (b->open)
		close_batch(b);
}

/* The WRs as one list for xr_post_send_whole; EINVAL for a WR missing a
 * setter its QP type requires. */
static int link_items(struct ibv_qp_ex *qpx, struct xrv_wr_batch *b)
{
	bool ud = qpx->qp_base.qp_type == IBV_QPT_UD;

	for (uint32_t i = 0; i < b->n; i++) {
		struct wr_item *it = &b->items[i];
		if (ud && !it->wr.wr.ud.ah)
			return EINVAL;
		if (it->has_data) {
			it->wr.sg_list = &b->sges[it->sge_at];
			if (it->wr.send_flags & XR_SEND_INLINE)
				it->wr.sg_list->addr = (uintptr_t)(b->inl + it->wr.sg_list->addr);
		}
		it->wr.next = i + 1 < b->n ? &b->items[i + 1].wr : NULL;
	}
	return 0;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct xrv_wr_batch *b = batch_of(qpx);
	int rc;

	if (!b->open)
		return EINVAL;
	rc = b->err ? b->err : link_items(qpx, b);
	/* One call: the driver's own post section covers it (xrv_post_send
	 * opens one around its several). */
	if (!rc && b->n)
		rc = xr_post_send_whole(XRV_OF(xrv_qp, &qpx->qp_base)->xr, &b->items[0].wr, NULL);
	close_batch(b);
	return rc;
}

/* ---- creation ---- */

#define XRV_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND | \
		      IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | \
		      IBV_QP_EX_WITH_SEND_WITH_INV)

/* The operations a QP type takes (ibv_wr_post(3)'s table, less TSO, and
 * less SEND_WITH_INV on UC, which the IBTA gives no UC opcode). */
static uint64_t ops_of(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return XRV_SEND_OPS;
	case IBV_QPT_UC:   /* no SEND_WITH_INV: UC has no such opcode on the wire (E7) */
		return IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
		       IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	case IBV_QPT_UD:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	default:
		return 0;
	}
}

struct ibv_qp *xrv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool ex;
	struct xrv_wr_batch *b = NULL;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;

	if (!attr || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~known) {
		xrv_unsupported("ibv_create_qp_ex", "XRC domains, TSO headers, receive hashing and WQ tables");
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) {
		xrv_unsupported("ibv_create_qp_ex create_flags", "QP creation flags (create_flags must be 0)");
		return NULL;
	}
	ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (ex && (attr->send_ops_flags & ~ops_of(attr->qp_type))) {
		xrv_log("ibv_create_qp_ex: send_ops_flags 0x%llx: this QP type takes 0x%llx here (no TSO, "
			"atomic write or flush on xroce0; UC no READ, atomics or SEND_WITH_INV, UD SEND only)",
			(unsigned long long)attr->send_ops_flags, (unsigned long long)ops_of(attr->qp_type));
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (ex) {
		b = calloc(1, sizeof(*b));
		if (!b) {
			errno = ENOMEM;
			return NULL;
		}
	}
	/* The attributes before comp_mask are ibv_qp_init_attr's, as the
	 * inline ibv_create_qp_ex itself assumes. */
	qp = ibv_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (!qp || !ex) {
		free(b);
		return qp;
	}
	pthread_mutex_init(&b->lock, NULL);
	b->max_wrs = attr->cap.max_send_wr;
	qpx = &XRV_OF(xrv_qp, qp)->ibv;
	XRV_OF(xrv_qp, qp)->wr = b;
	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_send_tso = wr_send_tso;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_atomic_write = wr_atomic_write;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	return qp;
}

void xrv_wr_batch_free(struct xrv_wr_batch *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b->items);
	free(b->sges);
	free(b->inl);
	free(b);
}

XRV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (qp && XRV_OF(xrv_qp, qp)->wr)
		return &XRV_OF(xrv_qp, qp)->ibv;
	/* As libibverbs: only a QP made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS. */
	errno = EOPNOTSUPP;
	return NULL;
}
