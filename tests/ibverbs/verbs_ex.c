/* SPDX-License-Identifier: MIT */
/*
 * The extended verbs as a program written against libibverbs uses them,
 * on the drop-in library: two RC QPs of one device connected to each
 * other, and two UD QPs.
 * - The ibv_wr_* posting API (ibv_create_qp_ex with send_ops_flags,
 *   ibv_qp_to_qp_ex, ibv_wr_start .. ibv_wr_complete / ibv_wr_abort):
 *   every builder and setter moves the bytes it names; a batch is posted
 *   whole or not at all (an error anywhere in it, an abort, a batch longer
 *   than the send queue); inline data is the setter's copy; what the
 *   device lacks is refused at creation.
 * - Extended CQs (ibv_create_cq_ex, ibv_start_poll .. ibv_end_poll, the
 *   ibv_wc_read_* accessors): the receive CQ is one, and reads what
 *   ibv_poll_cq would; timestamps and parent domains are refused.
 *   verbs_ex   (run through xroce-run)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536
#define SQ 16

static int fails;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;    /* rcq is an extended CQ's */
static struct ibv_cq_ex *rcq_ex;
static uint8_t *src, *dst;        /* regions of the two QPs' hosts */
static struct ibv_mr *src_mr, *dst_mr;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	fails += !ok;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Up to n completions of cq within ms milliseconds. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	double until = now_s() + ms / 1000.0;
	int got = 0;

	while (got < n && now_s() < until) {
		int k = ibv_poll_cq(cq, n - got, wc + got);
		if (k < 0)
			return k;
		got += k;
	}
	return got;
}

static struct ibv_qp *qp_ex(enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = type,
		.cap = { .max_send_wr = SQ, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = ops,
	};

	return ibv_create_qp_ex(ctx, &a);
}

static int to_rts(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;
	int ud = qp->qp_type == IBV_QPT_UD;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x1111;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (!ud) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dest;
		a.rq_psn = 7;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.dgid = *gid;
	}
	if (ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE : IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 3;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE | IBV_QP_SQ_PSN :
				  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void post_recv(struct ibv_qp *qp, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sg = { (uintptr_t)(dst + off), len, dst_mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &w, &bad))
		check(0, "ibv_post_recv");
}

/* Refusals at creation: what the device lacks, by name. */
static void refusals(void)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC, .cap = { 4, 4, 1, 1, 0 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO,
	};
	struct ibv_qp_init_attr plain = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
					  .cap = { 4, 4, 1, 1, 0 } };
	struct ibv_qp *qp;

	errno = 0;
	check(!ibv_create_qp_ex(ctx, &a) && errno == EOPNOTSUPP, "RC with TSO: refused, EOPNOTSUPP");
	a.qp_type = IBV_QPT_UD;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	check(!ibv_create_qp_ex(ctx, &a), "UD with RDMA_READ: refused");
	a.qp_type = IBV_QPT_UC;
	a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	check(!ibv_create_qp_ex(ctx, &a), "UC with atomics: refused");
	/* UC has no SEND_WITH_INV opcode: refused at creation, not at every post */
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV;
	check(!ibv_create_qp_ex(ctx, &a), "UC with SEND_WITH_INV: refused");
	a.qp_type = IBV_QPT_RC;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	check(!ibv_create_qp_ex(ctx, &a) && errno == EOPNOTSUPP, "a creation flag: refused");
	a.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_PD;
	a.create_flags = 0;
	check(!ibv_create_qp_ex(ctx, &a) && errno == EINVAL, "no PD: EINVAL");
	qp = ibv_create_qp(pd, &plain);
	check(qp && !ibv_qp_to_qp_ex(qp), "ibv_qp_to_qp_ex of a QP made without send_ops_flags: NULL");
	if (qp)
		ibv_destroy_qp(qp);
	{
		struct ibv_srq_init_attr_ex sa = { .attr = { 16, 1, 0 }, .comp_mask = IBV_SRQ_INIT_ATTR_PD |
						   IBV_SRQ_INIT_ATTR_TYPE, .srq_type = IBV_SRQT_BASIC, .pd = pd };
		struct ibv_srq *srq = ibv_create_srq_ex(ctx, &sa);

		check(srq != NULL, "ibv_create_srq_ex of a basic SRQ");
		if (srq)
			ibv_destroy_srq(srq);
		sa.srq_type = IBV_SRQT_XRC;
		sa.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
		sa.cq = scq;
		errno = 0;
		check(!ibv_create_srq_ex(ctx, &sa) && errno == EOPNOTSUPP, "ibv_create_srq_ex of an XRC SRQ: EOPNOTSUPP");
	}
	a.comp_mask = IBV_QP_INIT_ATTR_PD;   /* the inline ibv_create_qp_ex calls ibv_create_qp */
	qp = ibv_create_qp_ex(ctx, &a);
	check(qp && !ibv_qp_to_qp_ex(qp), "ibv_create_qp_ex with the PD alone: a plain QP");
	if (qp)
		ibv_destroy_qp(qp);
}

/* Every RC builder and setter in one batch, then the bytes each moved. */
static void one_batch_of_everything(struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	struct ibv_sge two[2] = { { (uintptr_t)src + 100, 10, src_mr->lkey }, { (uintptr_t)src + 200, 20, src_mr->lkey } };
	char inl[2][8] = { "inline-", "data!" };
	struct ibv_data_buf bufs[2] = { { inl[0], 7 }, { inl[1], 5 } };
	struct ibv_wc wc[16];
	uint64_t *cas = (uint64_t *)(dst + 4096), *fa = (uint64_t *)(dst + 4104);
	int n, ok;

	for (int i = 0; i < 8192; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memset(dst, 0, 16384);
	*cas = 5;
	*fa = 100;
	memcpy(dst + 8192, "remote bytes", 12);
	post_recv(b, 1001, 10000, 100);
	post_recv(b, 1002, 10200, 100);
	post_recv(b, 1003, 10400, 100);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, 3000);
	x->wr_id = 2;
	ibv_wr_rdma_write_imm(x, dst_mr->rkey, (uintptr_t)dst + 3000, htonl(0xabcd));
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 3000, 100);
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 4;
	ibv_wr_send_imm(x, htonl(0x1234));
	ibv_wr_set_inline_data_list(x, 2, bufs);
	memset(inl, 'X', sizeof(inl));   /* the setter copied it */
	x->wr_id = 5;
	ibv_wr_rdma_read(x, dst_mr->rkey, (uintptr_t)dst + 8192);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 9000, 12);
	x->wr_id = 6;
	ibv_wr_atomic_cmp_swp(x, dst_mr->rkey, (uintptr_t)cas, 5, 77);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 9104, 8);
	x->wr_id = 7;
	ibv_wr_atomic_fetch_add(x, dst_mr->rkey, (uintptr_t)fa, 11);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 9200, 8);
	x->wr_id = 8;
	x->wr_flags = 0;   /* unsignaled: no completion of its own */
	ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst + 12000);
	ibv_wr_set_inline_data(x, "tail", 4);
	check(ibv_wr_complete(x) == 0, "a batch of every RC builder: wr_complete 0");
	n = poll_n(scq, wc, 7, 5000);
	ok = n == 7;
	for (int i = 0; ok && i < 7; i++)
		ok = wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == (uint64_t)i + 1;
	check(ok, "seven signaled completions, in order, all successful");
	ok = n == 7 && wc[0].opcode == IBV_WC_RDMA_WRITE && wc[2].opcode == IBV_WC_SEND &&
	     wc[4].opcode == IBV_WC_RDMA_READ && wc[5].opcode == IBV_WC_COMP_SWAP && wc[6].opcode == IBV_WC_FETCH_ADD;
	check(ok, "their opcodes");
	check(!memcmp(dst, src, 3100), "WRITE and WRITE_WITH_IMM placed their bytes");
	n = poll_n(rcq, wc, 3, 5000);
	ok = n == 3 && wc[0].wr_id == 1001 && wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	     (wc[0].wc_flags & IBV_WC_WITH_IMM) && wc[0].imm_data == htonl(0xabcd);
	check(ok, "WRITE_WITH_IMM: the receiver's completion and immediate");
	ok = n == 3 && wc[1].wr_id == 1002 && wc[1].byte_len == 30 && !memcmp(dst + 10200, src + 100, 10) &&
	     !memcmp(dst + 10210, src + 200, 20);
	check(ok, "SEND of an SGE list: the two buffers, concatenated");
	ok = n == 3 && wc[2].wr_id == 1003 && wc[2].byte_len == 12 && !memcmp(dst + 10400, "inline-data!", 12) &&
	     wc[2].imm_data == htonl(0x1234);
	check(ok, "SEND_WITH_IMM of an inline list: the bytes as they were at the setter");
	check(!memcmp(src + 9000, "remote bytes", 12), "READ brought the remote bytes");
	check(*(uint64_t *)(src + 9104) == 5 && *cas == 77, "CAS: the old value back, the new one swapped in");
	check(*(uint64_t *)(src + 9200) == 100 && *fa == 111, "FETCH_ADD: the old value back, the sum stored");
	check(!memcmp(dst + 12000, "tail", 4), "an unsignaled inline WRITE landed");
}

/* A batch that fails or is aborted posts nothing: the WRITE before the bad
 * WR never lands, and no completion comes. */
static void whole_or_nothing(struct ibv_qp *a)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	struct ibv_sge many[5];
	struct ibv_wc wc[SQ + 2];
	int got;

	for (int i = 0; i < 5; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)src, 1, src_mr->lkey };
	memset(src + 20000, 0xee, 64);

	struct { const char *what; int want; } cases[] = {
		{ "an SGE list beyond max_send_sge", EINVAL },
		{ "an atomic of 4 bytes", EINVAL },
		{ "a TSO WR", EOPNOTSUPP },
		{ "set_ud_addr on an RC QP", EINVAL },
		{ "wr_abort", 0 },
		{ "a batch longer than the send queue", ENOMEM },
		/* 16 WRs with one slot held: the driver finds the queue full
		 * at the last and takes the 15 back. */
		{ "a batch of the queue's size with a slot still held", ENOMEM },
		{ "a setter before any builder", EINVAL },
	};
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char what[160];
		int rc = -1;

		memset(dst + 20000, 0, 64);
		ibv_wr_start(x);
		if (c == 7)
			ibv_wr_set_inline_data(x, "ab", 2);
		x->wr_id = 50 + c;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst + 20000);
		ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 20000, 64);
		switch (c) {
		case 0:
			ibv_wr_send(x);
			ibv_wr_set_sge_list(x, 5, many);
			break;
		case 1:
			ibv_wr_atomic_fetch_add(x, dst_mr->rkey, (uintptr_t)dst + 4096, 1);
			ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, 4);
			break;
		case 2:
			ibv_wr_send_tso(x, src, 14, 1000);
			break;
		case 3:
			ibv_wr_send(x);
			ibv_wr_set_ud_addr(x, NULL, 1, 1);
			break;
		case 5:
		case 6:
			for (int i = 0; i < (c == 5 ? SQ : SQ - 1); i++) {
				ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst + 20000);
				ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 20000, 64);
			}
			break;
		}
		if (c == 4)
			ibv_wr_abort(x);
		else
			rc = ibv_wr_complete(x);
		got = poll_n(scq, wc, 1, 200);
		snprintf(what, sizeof(what), "%s: %s%s, nothing posted (rc %d, %d completions, first byte 0x%02x)",
			 cases[c].what, c == 4 ? "" : "wr_complete ", c == 4 ? "aborted" : strerror(cases[c].want), rc,
			 got, dst[20000]);
		check((c == 4 || rc == cases[c].want) && got == 0 && dst[20000] == 0, what);
	}
	/* The QP is fine afterwards: a batch that fills the queue (the
	 * unsignaled WRITE of the first batch holds a slot until a later
	 * signaled completion is polled, as in ibv_post_send). */
	ibv_wr_start(x);
	for (int i = 0; i < SQ - 1; i++) {
		x->wr_id = 200 + (uint64_t)i;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst + 20000);
		ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src + 20000, 64);
	}
	check(ibv_wr_complete(x) == 0, "a batch that fills the send queue: posted");
	got = poll_n(scq, wc, SQ - 1, 5000);
	check(got == SQ - 1 && wc[SQ - 2].wr_id == 200 + SQ - 2 && wc[SQ - 2].status == IBV_WC_SUCCESS &&
	      dst[20000] == 0xee, "all of it completed and landed");
	/* A zero-length inline WRITE: legal, and its NULL buffer never read
	 * (UBSan stopped the program at the copy of 0 bytes from NULL). */
	ibv_wr_start(x);
	x->wr_id = 300;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst + 20000);
	ibv_wr_set_inline_data(x, NULL, 0);
	check(ibv_wr_complete(x) == 0 && poll_n(scq, wc, 1, 5000) == 1 && wc[0].wr_id == 300 &&
	      wc[0].status == IBV_WC_SUCCESS, "a zero-length inline WRITE completes");
}

/* ibv_resize_cq with completions waiting: too small is EINVAL, and a
 * new size keeps them, in order. */
static void resize(struct ibv_qp_ex *x)
{
	struct ibv_wc wc[6];
	int ok = 1, n;

	ibv_wr_start(x);
	for (int i = 0; i < 5; i++) {
		x->wr_id = 70 + (uint64_t)i;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, dst_mr->rkey, (uintptr_t)dst + 24000);
		ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, 8);
	}
	check(ibv_wr_complete(x) == 0, "five WRITEs to resize behind");
	/* The engine's thread moves them; the bytes land, then the ACKs come
	 * back and the CQEs are written: all done well within 200 ms. */
	for (double until = now_s() + 5; now_s() < until && *(volatile uint8_t *)(dst + 24000) != src[0];)
		usleep(100);
	usleep(200000);
	check(ibv_resize_cq(scq, 2) == EINVAL, "ibv_resize_cq to 2 with five waiting: EINVAL");
	check(ibv_resize_cq(scq, 200) == 0 && scq->cqe >= 200, "ibv_resize_cq to 200: done, cqe at least 200");
	n = poll_n(scq, wc, 6, 2000);
	for (int i = 0; i < 5 && n == 5; i++)
		ok &= wc[i].wr_id == 70 + (uint64_t)i && wc[i].status == IBV_WC_SUCCESS;
	check(n == 5 && ok, "the five completions, moved in order");
}

/* The extended CQ: three receives read through start/next/end_poll
 * match what was sent; an empty CQ says ENOENT; what it lacks is refused. */
static void cq_ex(struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	struct ibv_cq_init_attr_ex ca = { .cqe = 8, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc wc[3];
	uint32_t len[4] = { 0 }, qpn[4] = { 0 }, flags[4] = { 0 };
	uint64_t id[4] = { 0 };
	int n = 0, rc, opc_ok = 1;

	errno = 0;
	check(!ibv_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP, "ibv_create_cq_ex with timestamps: refused");
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	check(!ibv_create_cq_ex(ctx, &ca), "ibv_create_cq_ex ignoring overruns: refused");
	check(ibv_start_poll(rcq_ex, &pa) == ENOENT, "start_poll of an empty CQ: ENOENT");
	for (int i = 0; i < 3; i++)
		post_recv(b, 4000 + (uint64_t)i, 14000 + 100 * (uint32_t)i, 100);
	ibv_wr_start(x);
	for (int i = 0; i < 3; i++) {
		x->wr_id = 40 + (uint64_t)i;
		x->wr_flags = IBV_SEND_SIGNALED;
		if (i == 1)
			ibv_wr_send_imm(x, htonl(0xfeed));
		else
			ibv_wr_send(x);
		ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, 10 + 10 * (uint32_t)i);
	}
	check(ibv_wr_complete(x) == 0, "three SENDs to the extended CQ's QP");
	check(poll_n(scq, wc, 3, 5000) == 3, "their completions");
	/* Each receive completed before its ACK left: all three are there,
	 * one start_poll and two next_polls read them, a third finds none. */
	rc = ibv_start_poll(rcq_ex, &pa);
	check(rc == 0, "start_poll: a completion");
	if (rc)
		return;
	do {
		id[n] = rcq_ex->wr_id;
		opc_ok &= rcq_ex->status == IBV_WC_SUCCESS && ibv_wc_read_opcode(rcq_ex) == IBV_WC_RECV;
		len[n] = ibv_wc_read_byte_len(rcq_ex);
		qpn[n] = ibv_wc_read_qp_num(rcq_ex);
		flags[n] = ibv_wc_read_wc_flags(rcq_ex);
		if (flags[n] & IBV_WC_WITH_IMM)
			opc_ok &= ibv_wc_read_imm_data(rcq_ex) == htonl(0xfeed);
		n++;
	} while (n < 4 && (rc = ibv_next_poll(rcq_ex)) == 0);
	ibv_end_poll(rcq_ex);
	check(rc == ENOENT, "next_poll after the last: ENOENT");
	check(n == 3 && id[0] == 4000 && id[1] == 4001 && id[2] == 4002, "start/next_poll: the three receives, in order");
	check(n == 3 && opc_ok && len[0] == 10 && len[1] == 20 && len[2] == 30 && qpn[0] == b->qp_num &&
	      qpn[2] == b->qp_num && (flags[1] & IBV_WC_WITH_IMM) && !(flags[0] & IBV_WC_WITH_IMM),
	      "the accessors: status, opcode, length, QP, flags and immediate");
	check(ibv_start_poll(rcq_ex, &pa) == ENOENT, "then empty again");
	resize(x);
	pa.comp_mask = 1;
	check(ibv_start_poll(rcq_ex, &pa) == EINVAL, "start_poll with an unknown comp_mask: EINVAL");
}

/* UD: each WR needs its address; a batch without it fails whole. */
static void ud(const union ibv_gid *gid)
{
	struct ibv_qp *u1 = qp_ex(IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	struct ibv_qp *u2 = qp_ex(IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .dgid = *gid, .hop_limit = 64 } };
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	struct ibv_qp_ex *x;
	struct ibv_wc wc[2];
	int got;

	check(u1 && u2 && ah && !to_rts(u1, 0, gid) && !to_rts(u2, 0, gid), "two UD QPs with send_ops_flags, and an AH");
	if (!u1 || !u2 || !ah)
		return;
	x = ibv_qp_to_qp_ex(u1);
	post_recv(u2, 3001, 30000, 40 + 64);
	ibv_wr_start(x);
	x->wr_id = 300;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htonl(9));
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, 64);
	check(ibv_wr_complete(x) == EINVAL && poll_n(scq, wc, 1, 200) == 0, "UD without wr_set_ud_addr: EINVAL, nothing posted");
	ibv_wr_start(x);
	x->wr_id = 301;
	ibv_wr_send_imm(x, htonl(9));
	ibv_wr_set_ud_addr(x, ah, u2->qp_num, 0x1111);
	ibv_wr_set_sge(x, src_mr->lkey, (uintptr_t)src, 64);
	check(ibv_wr_complete(x) == 0, "UD with its address: posted");
	got = poll_n(scq, wc, 1, 5000);
	check(got == 1 && wc[0].wr_id == 301 && wc[0].status == IBV_WC_SUCCESS, "UD: the send's completion");
	got = poll_n(rcq, wc, 1, 5000);
	check(got == 1 && wc[0].wr_id == 3001 && wc[0].byte_len == 40 + 64 && wc[0].imm_data == htonl(9) &&
	      !memcmp(dst + 30040, src, 64), "UD: received behind the GRH, with its immediate");
	ibv_destroy_qp(u1);
	ibv_destroy_qp(u2);
	ibv_destroy_ah(ah);
}

/* A QP that asks for 400 inline bytes and 30 send SGEs (rxe's sizes)
 * gets them, and one that asks for 32 receive SGEs: a 400-byte inline
 * SEND scattered into 32 pieces, a WRITE gathered from 30; one inline
 * byte more than the largest slot holds is refused at creation. */
static void large_wqes(const union ibv_gid *gid)
{
	struct ibv_qp_init_attr ia = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 30,
						.max_recv_sge = 1, .max_inline_data = 400 } };
	struct ibv_qp *a = ibv_create_qp(pd, &ia), *b;
	struct ibv_sge sg[30];
	struct ibv_send_wr w = { .wr_id = 401, .sg_list = sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	uint8_t msg[400];
	int ok = 1;

	check(a && ia.cap.max_inline_data >= 400 && ia.cap.max_send_sge >= 30, "an RC QP with 400 inline bytes and 30 SGEs");
	ia.cap.max_inline_data = 961;
	check(!ibv_create_qp(pd, &ia), "961 inline bytes: refused");
	ia.cap.max_inline_data = 0;
	ia.cap.max_recv_sge = 32;
	b = ibv_create_qp(pd, &ia);
	check(b && ia.cap.max_recv_sge >= 32, "an RC QP with 32 receive SGEs");
	if (!a || !b || to_rts(a, b->qp_num, gid) || to_rts(b, a->qp_num, gid)) {
		check(0, "the large-WQE pair connected");
		return;
	}
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 3 + 1);
	{
		struct ibv_sge rs[32];
		struct ibv_recv_wr r = { .wr_id = 4001, .sg_list = rs, .num_sge = 32 }, *rbad;
		for (unsigned i = 0; i < 32; i++)   /* 13 bytes each, 416 in all, in order */
			rs[i] = (struct ibv_sge){ (uintptr_t)dst + 40000 + 13 * i, 13, dst_mr->lkey };
		check(!ibv_post_recv(b, &r, &rbad), "a receive of 32 SGEs posted");
	}
	sg[0] = (struct ibv_sge){ (uintptr_t)msg, sizeof(msg), 0 };
	check(!ibv_post_send(a, &w, &bad), "a 400-byte inline SEND posted");
	memset(msg, 0, sizeof(msg));   /* inline: the bytes were copied at post */
	check(poll_n(scq, &wc, 1, 5000) == 1 && wc.status == IBV_WC_SUCCESS && poll_n(rcq, &wc, 1, 5000) == 1 &&
	      wc.wr_id == 4001 && wc.byte_len == 400, "the inline SEND received");
	for (unsigned i = 0; i < 400; i++)
		ok &= dst[40000 + i] == (uint8_t)(i * 3 + 1);
	check(ok, "its 400 bytes as posted");
	for (unsigned i = 0; i < 30; i++) {
		sg[i] = (struct ibv_sge){ (uintptr_t)src + 1000 * (29 - i), 10 + i, src_mr->lkey };
		memset(src + 1000 * (29 - i), 0x20 + i, 10 + i);
	}
	w = (struct ibv_send_wr){ .wr_id = 402, .sg_list = sg, .num_sge = 30, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)dst + 50000, dst_mr->rkey } };
	check(!ibv_post_send(a, &w, &bad) && poll_n(scq, &wc, 1, 5000) == 1 && wc.status == IBV_WC_SUCCESS,
	      "a WRITE of 30 SGEs");
	ok = 1;
	for (unsigned i = 0, at = 50000; i < 30; at += 10 + i, i++)
		for (unsigned k = 0; k < 10 + i; k++)
			ok &= dst[at + k] == 0x20 + i;
	check(ok, "its 30 pieces in order");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

/* ibv_wr_set_inline_data on a QP that asked for inline bytes and no SGEs
 * (max_send_sge 0, as a QP that only ever sends inline may): the data is
 * in the WQE, no SGE is posted, and the WR goes (mlx5 and rxe take it). */
static void inline_without_sges(const union ibv_gid *gid)
{
	struct ibv_qp_init_attr_ex ea = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 0, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp_init_attr ia = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct ibv_qp *a = ibv_create_qp_ex(ctx, &ea), *b = ibv_create_qp(pd, &ia);
	struct ibv_qp_ex *x = a ? ibv_qp_to_qp_ex(a) : NULL;
	char msg[32];
	struct ibv_wc wc;
	int rc;

	if (!x || !b || to_rts(a, b->qp_num, gid) || to_rts(b, a->qp_num, gid)) {
		check(0, "the inline-only pair connected");
		return;
	}
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (char)('a' + i % 26);
	post_recv(b, 5001, 60000, 256);
	ibv_wr_start(x);
	x->wr_id = 501;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	rc = ibv_wr_complete(x);
	check(rc == 0, "ibv_wr_set_inline_data on a QP with max_send_sge 0: posted");
	if (!rc)
		check(poll_n(scq, &wc, 1, 5000) == 1 && wc.wr_id == 501 && wc.status == IBV_WC_SUCCESS &&
		      poll_n(rcq, &wc, 1, 5000) == 1 && wc.wr_id == 5001 && wc.byte_len == sizeof(msg) &&
		      !memcmp(dst + 60000, msg, sizeof(msg)), "its 32 bytes received");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	union ibv_gid gid;
	struct ibv_qp *a, *b;

	if (!list || !list[0] || !(ctx = ibv_open_device(list[0]))) {
		printf("FAIL no xroce device\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	{
		struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS,
						  .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
						  .flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED };
		rcq_ex = ibv_create_cq_ex(ctx, &ca);
		rcq = rcq_ex ? ibv_cq_ex_to_cq(rcq_ex) : NULL;
	}
	src = calloc(1, BUF);
	dst = calloc(1, BUF);
	src_mr = ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!pd || !scq || !rcq || !src_mr || !dst_mr || ibv_query_gid(ctx, 1, 0, &gid)) {
		printf("FAIL resources\n");
		return 1;
	}
	refusals();
	a = qp_ex(IBV_QPT_RC, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
			      IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
	b = qp_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	check(a && b && ibv_qp_to_qp_ex(a) && ibv_qp_to_qp_ex(b), "two RC QPs with send_ops_flags, each a qp_ex");
	if (!a || !b)
		return 1;
	check(!to_rts(a, b->qp_num, &gid) && !to_rts(b, a->qp_num, &gid), "connected to each other");
	one_batch_of_everything(a, b);
	whole_or_nothing(a);
	cq_ex(a, b);
	ud(&gid);
	large_wqes(&gid);
	inline_without_sges(&gid);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(src);
	free(dst);
	printf("%s\n", fails ? "FAILED" : "all passed");
	return fails ? 1 : 0;
}
