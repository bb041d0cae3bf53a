/* SPDX-License-Identifier: MIT */
/*
 * The drop-in libibverbs' refusals of QP attributes beyond the device, as a
 * program written against libibverbs meets them: an EINVAL and one line
 * on stderr naming the limit. perftest asks for the peer's outstanding
 * reads as its own max_rd_atomic (rxe announces 128): before the line,
 * xroce refused it in silence.
 *   verbs_refusals   (run through xroce-run, or with LD_LIBRARY_PATH set)
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int fails;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	fails += !ok;
}

/* ibv_init_ah_from_wc reads the family from the 40 GRH bytes themselves,
 * as libibverbs does (an IPv4 header with a valid checksum in the last 20,
 * else an IPv6 header), not from the device's own address: an IPv6 GRH
 * on an IPv4 device gave the reply address ::ffff:0.0.0.0. */
static void grh_reply_address(struct ibv_context *ctx)
{
	uint8_t grh[40] = { 0 };
	struct ibv_wc wc;
	struct ibv_ah_attr ah;
	static const uint8_t v6src[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 };
	static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3 };
	uint32_t sum = 0;

	memset(&wc, 0, sizeof(wc));
	wc.wc_flags = IBV_WC_GRH;
	grh[0] = 0x60;   /* IPv6, traffic class 0 */
	memcpy(grh + 8, v6src, 16);
	grh[24] = 0xfd;
	grh[39] = 9;
	check(!ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah) && ah.is_global &&
	      !memcmp(ah.grh.dgid.raw, v6src, 16), "ibv_init_ah_from_wc: an IPv6 GRH gives its source GID");
	memset(grh, 0, sizeof(grh));
	grh[20] = 0x45;
	grh[21] = 0x48;   /* TOS */
	grh[22] = 0;
	grh[23] = 60;     /* total length */
	grh[28] = 64;
	grh[29] = 17;
	memcpy(grh + 32, v4 + 12, 4);   /* source 10.1.2.3 */
	grh[36] = 10;
	grh[39] = 9;
	for (int i = 20; i < 40; i += 2)
		sum += (uint32_t)grh[i] << 8 | grh[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	grh[30] = (uint8_t)(~sum >> 8);
	grh[31] = (uint8_t)~sum;
	check(!ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah) && !memcmp(ah.grh.dgid.raw, v4, 16) &&
	      ah.grh.traffic_class == 0x48, "ibv_init_ah_from_wc: an IPv4 header gives ::ffff:10.1.2.3 and its TOS");
	wc.wc_flags = 0;
	check(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &ah) != 0, "ibv_init_ah_from_wc: no GRH: refused");
}

/* ibv_rereg_mr: a new range and new access on the same region, new keys
 * each time; bad input leaves it as it was. */
static void rereg(struct ibv_pd *pd)
{
	static char a[8192], b[4096];
	struct ibv_mr *mr = ibv_reg_mr(pd, a, sizeof(a), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uint32_t lkey, rkey;

	check(mr != NULL, "ibv_reg_mr for rereg");
	if (!mr)
		return;
	lkey = mr->lkey;
	rkey = mr->rkey;
	check(!ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b, sizeof(b), 0) && mr->addr == (void *)b &&
	      mr->length == sizeof(b) && mr->lkey != lkey && mr->rkey != rkey,
	      "ibv_rereg_mr CHANGE_TRANSLATION: the new range, new keys");
	lkey = mr->lkey;
	check(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT && mr->lkey == lkey,
	      "ibv_rereg_mr without flags: IBV_REREG_MR_ERR_INPUT, unchanged");
	check(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE) ==
		      IBV_REREG_MR_ERR_INPUT && mr->lkey == lkey,
	      "ibv_rereg_mr REMOTE_WRITE without LOCAL_WRITE: IBV_REREG_MR_ERR_INPUT, unchanged");
	check(!ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) &&
	      mr->lkey != lkey && mr->addr == (void *)b, "ibv_rereg_mr CHANGE_ACCESS: new keys, the range kept");
	check(!ibv_dereg_mr(mr), "ibv_dereg_mr after rereg");
}

/* A QP that only receives asks for no send WRs (qperf's servers do): as
 * rxe and mlx5, a send queue of 0 WRs is fine (xroce gives the least it
 * has); 0 receive WRs, for a QP that only sends, likewise. */
static void receive_only(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 0, .max_recv_wr = 16, .max_send_sge = 1,
						  .max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	check(qp != NULL, "ibv_create_qp with max_send_wr 0 (a receive-only QP)");
	if (qp)
		ibv_destroy_qp(qp);
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 0;
	qp = ibv_create_qp(pd, &init);
	check(qp != NULL, "ibv_create_qp with max_recv_wr 0 (a send-only QP)");
	if (qp)
		ibv_destroy_qp(qp);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC, .cap = { 4, 4, 1, 1, 0 } };
	struct ibv_qp_attr a;
	int rc;

	if (!list || !list[0] || !(ctx = ibv_open_device(list[0]))) {
		printf("FAIL no xroce device\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	init.send_cq = init.recv_cq = cq;
	qp = pd && cq ? ibv_create_qp(pd, &init) : NULL;
	check(qp != NULL, "an RC QP");
	if (!qp)
		return 1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), "RESET -> INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x11;
	a.max_dest_rd_atomic = 128;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 127;
	a.ah_attr.grh.dgid.raw[15] = 2;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	check(rc == EINVAL, "INIT -> RTR with max_dest_rd_atomic 128: EINVAL");
	a.max_dest_rd_atomic = 16;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), "INIT -> RTR with 16");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 128;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	check(rc == EINVAL, "RTR -> RTS with max_rd_atomic 128: EINVAL");
	/* The pacer's cap: with RTS, through ibv_modify_qp and the inline verb. */
	a.max_rd_atomic = 16;
	a.rate_limit = 250000;   /* kb/s */
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RATE_LIMIT), "RTR -> RTS with a rate limit");
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	check(!ibv_query_qp(qp, &q, IBV_QP_RATE_LIMIT, &qi) && q.rate_limit == 250000, "query_qp: rate_limit 250000 kb/s");
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 1000000 };
	check(!ibv_modify_qp_rate_limit(qp, &rl), "ibv_modify_qp_rate_limit 1 Gb/s");
	check(!ibv_query_qp(qp, &q, IBV_QP_RATE_LIMIT, &qi) && q.rate_limit == 1000000, "query_qp: rate_limit 1 Gb/s");
	struct ibv_device_attr_ex dx;
	check(!ibv_query_device_ex(ctx, NULL, &dx) && dx.packet_pacing_caps.qp_rate_limit_max > 0 &&
	      (dx.packet_pacing_caps.supported_qpts & (1u << IBV_QPT_RC)), "query_device_ex: packet pacing caps");
	grh_reply_address(ctx);
	rereg(pd);
	receive_only(pd, cq);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return fails ? 1 : 0;
}
