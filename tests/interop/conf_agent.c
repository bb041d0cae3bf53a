/* SPDX-License-Identifier: MIT */
/*
 * conf_agent: the device side of a packet script (tests/conformance/) run
 * against Linux rxe. It runs in the interop VM, listens on TCP and, per
 * command line, does one verbs call on the first RDMA device (rxe0): the
 * script's regions, CQs and RC QP with the fixture's attributes, receive
 * WQEs, completions, QP state, memory of a region. One client at a time;
 * one line in, one line out:
 *
 *   open                                  -> ok          (PDs; drops an older fixture)
 *   mr NAME LEN ACCESS PD                 -> ok VA LKEY RKEY   (PD 0 or 1 = "other")
 *   qp PEER_IP PEER_QPN key=value ...     -> ok QPN      (CQs + QP, brought to RTS)
 *        keys: mtu (enum 1..5) rq_psn sq_psn timeout retry_cnt rnr_retry min_rnr_timer
 *              max_rd_atomic max_dest_rd_atomic access sq_depth rq_depth scq_depth
 *              rcq_depth sig_all
 *   post_recv NAME OFF LEN WR_ID          -> ok
 *   post_send OP NAME OFF LEN LKEY VA RKEY WR_ID IMM CMP_ADD SWAP FLAGS -> ok
 *        OP: write write_imm send send_imm read cas faa; LKEY "-" for the region's;
 *        FLAGS: ibv_send_flags (the requester side, record mode only)
 *   poll send|recv                        -> none | wc WR_ID STATUS OPCODE BYTE_LEN IMM FLAGS SRC_QP
 *   query                                 -> ok STATE RQ_PSN
 *   modify STATE                          -> ok          (STATE: ibv_qp_state number)
 *   read NAME OFF LEN                     -> ok HEX
 *   write NAME OFF HEX                    -> ok
 *   dereg NAME                            -> ok
 *   pattern NAME BASE                     -> ok          (byte i = BASE+i)
 *   guards                                -> ok | bad NAME
 *   close                                 -> ok          (destroys the fixture)
 * Errors answer "err ERRNO what". Every region has 64 guard bytes 0xE7 on
 * each side (the runner checks them at the end of a script).
 *
 *   conf_agent PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXREG 16
#define GUARD  64
#define GVAL   0xE7

struct reg {
	char name[32];
	uint8_t *alloc, *mem;
	size_t len;
	struct ibv_mr *mr;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qp;
static struct reg regs[MAXREG];
static int nreg;
static int port_num = 1;

static void reply(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(FILE *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

static struct reg *reg_by_name(const char *n)
{
	for (int i = 0; i < nreg; i++)
		if (!strcmp(regs[i].name, n))
			return &regs[i];
	return NULL;
}

static void fixture_close(void)
{
	if (qp)
		ibv_destroy_qp(qp);
	if (scq)
		ibv_destroy_cq(scq);
	if (rcq)
		ibv_destroy_cq(rcq);
	qp = NULL;
	scq = rcq = NULL;
	for (int i = 0; i < nreg; i++) {
		if (regs[i].mr)
			ibv_dereg_mr(regs[i].mr);
		free(regs[i].alloc);
	}
	memset(regs, 0, sizeof(regs));
	nreg = 0;
	if (pd)
		ibv_dealloc_pd(pd);
	if (pd2)
		ibv_dealloc_pd(pd2);
	pd = pd2 = NULL;
}

/* The GID index of the port's RoCE v2 GID for this IPv4 address (::ffff:a.b.c.d). */
static int gid_index_v2(uint32_t ip_be)
{
	const char *dev = ibv_get_device_name(ctx->device);

	for (int i = 0; i < 64; i++) {
		union ibv_gid g;
		char path[256], type[32] = "";
		FILE *f;
		if (ibv_query_gid(ctx, (uint8_t)port_num, i, &g))
			continue;
		if (memcmp(g.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) || memcmp(g.raw + 12, &ip_be, 4))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d", dev, port_num, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(type, sizeof(type), f))
			type[0] = '\0';
		fclose(f);
		if (strstr(type, "v2"))
			return i;
	}
	return -1;
}

/* The local IPv4 address rxe carries: the one whose RoCE v2 GID exists. */
static int local_gid_index(void)
{
	for (int i = 0; i < 64; i++) {
		union ibv_gid g;
		if (ibv_query_gid(ctx, (uint8_t)port_num, i, &g))
			continue;
		if (!memcmp(g.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			uint32_t ip;
			int k;
			memcpy(&ip, g.raw + 12, 4);
			k = gid_index_v2(ip);
			if (k >= 0)
				return k;
		}
	}
	return -1;
}

static void cmd_qp(FILE *out, char **tok, int ntok)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct in_addr peer;
	unsigned mtu = IBV_MTU_1024, rq_psn = 100, sq_psn = 500, timeout = 14, retry_cnt = 3, rnr_retry = 3,
		 min_rnr = 12, max_rd = 4, max_dest_rd = 4, access = 0xF, sq_depth = 64, rq_depth = 64,
		 scq_depth = 256, rcq_depth = 256, sig_all = 0;
	unsigned long peer_qpn;
	int gidx, rc;

	if (ntok < 3 || !inet_aton(tok[1], &peer)) {
		reply(out, "err %d usage: qp PEER_IP PEER_QPN key=value...", EINVAL);
		return;
	}
	peer_qpn = strtoul(tok[2], NULL, 0);
	for (int i = 3; i < ntok; i++) {
		char *eq = strchr(tok[i], '=');
		unsigned v;
		if (!eq) {
			reply(out, "err %d bad option %s", EINVAL, tok[i]);
			return;
		}
		*eq = '\0';
		v = (unsigned)strtoul(eq + 1, NULL, 0);
		if (!strcmp(tok[i], "mtu")) mtu = v;
		else if (!strcmp(tok[i], "rq_psn")) rq_psn = v;
		else if (!strcmp(tok[i], "sq_psn")) sq_psn = v;
		else if (!strcmp(tok[i], "timeout")) timeout = v;
		else if (!strcmp(tok[i], "retry_cnt")) retry_cnt = v;
		else if (!strcmp(tok[i], "rnr_retry")) rnr_retry = v;
		else if (!strcmp(tok[i], "min_rnr_timer")) min_rnr = v;
		else if (!strcmp(tok[i], "max_rd_atomic")) max_rd = v;
		else if (!strcmp(tok[i], "max_dest_rd_atomic")) max_dest_rd = v;
		else if (!strcmp(tok[i], "access")) access = v;
		else if (!strcmp(tok[i], "sq_depth")) sq_depth = v;
		else if (!strcmp(tok[i], "rq_depth")) rq_depth = v;
		else if (!strcmp(tok[i], "scq_depth")) scq_depth = v;
		else if (!strcmp(tok[i], "rcq_depth")) rcq_depth = v;
		else if (!strcmp(tok[i], "sig_all")) sig_all = v;
		else {
			reply(out, "err %d unknown option %s", EINVAL, tok[i]);
			return;
		}
	}
	gidx = local_gid_index();
	if (gidx < 0) {
		reply(out, "err %d no RoCE v2 IPv4 GID on the port", ENODEV);
		return;
	}
	scq = ibv_create_cq(ctx, (int)scq_depth, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, (int)rcq_depth, NULL, NULL, 0);
	if (!scq || !rcq) {
		reply(out, "err %d create_cq", errno);
		return;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = (int)sig_all;
	ia.cap.max_send_wr = sq_depth;
	ia.cap.max_recv_wr = rq_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp) {
		reply(out, "err %d create_qp", errno);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)port_num;
	a.qp_access_flags = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc) {
		reply(out, "err %d modify to INIT", rc);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = (uint32_t)peer_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = (uint8_t)max_dest_rd;
	a.min_rnr_timer = (uint8_t)min_rnr;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = (uint8_t)port_num;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	memset(a.ah_attr.grh.dgid.raw, 0, 10);
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(a.ah_attr.grh.dgid.raw + 12, &peer.s_addr, 4);
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc) {
		reply(out, "err %d modify to RTR", rc);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)timeout;
	a.retry_cnt = (uint8_t)retry_cnt;
	a.rnr_retry = (uint8_t)rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = (uint8_t)max_rd;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc) {
		reply(out, "err %d modify to RTS", rc);
		return;
	}
	reply(out, "ok %u", qp->qp_num);
}

static void cmd_mr(FILE *out, char **tok, int ntok)
{
	struct reg *g;
	size_t len;

	if (ntok != 5 || nreg == MAXREG || reg_by_name(tok[1]) || strlen(tok[1]) >= sizeof(g->name)) {
		reply(out, "err %d usage: mr NAME LEN ACCESS PD (a new name)", EINVAL);
		return;
	}
	len = strtoul(tok[2], NULL, 0);
	g = &regs[nreg];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", tok[1]);
	g->len = len;
	g->alloc = malloc(len + 2 * GUARD);
	if (!g->alloc) {
		reply(out, "err %d malloc", ENOMEM);
		return;
	}
	memset(g->alloc, GVAL, len + 2 * GUARD);
	g->mem = g->alloc + GUARD;
	memset(g->mem, 0, len);
	nreg++;
	g->mr = ibv_reg_mr(atoi(tok[4]) ? pd2 : pd, g->mem, len, (int)strtoul(tok[3], NULL, 0));
	if (!g->mr) {
		reply(out, "err %d reg_mr", errno);
		return;
	}
	reply(out, "ok 0x%llx 0x%x 0x%x", (unsigned long long)(uintptr_t)g->mem, g->mr->lkey, g->mr->rkey);
}

static const char *wc_opcode_name(enum ibv_wc_opcode o)
{
	switch (o) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "OTHER";
	}
}

/* One send WR with one SGE in region NAME (the script's post_send line). */
static void cmd_post_send(FILE *out, char **tok, int ntok)
{
	static const struct { const char *name; enum ibv_wr_opcode op; } ops[] = {
		{ "write", IBV_WR_RDMA_WRITE }, { "write_imm", IBV_WR_RDMA_WRITE_WITH_IMM },
		{ "send", IBV_WR_SEND }, { "send_imm", IBV_WR_SEND_WITH_IMM }, { "read", IBV_WR_RDMA_READ },
		{ "cas", IBV_WR_ATOMIC_CMP_AND_SWP }, { "faa", IBV_WR_ATOMIC_FETCH_AND_ADD },
	};
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct reg *g;
	int op = -1, rc;

	for (size_t i = 0; ntok == 13 && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(tok[1], ops[i].name))
			op = (int)ops[i].op;
	if (op < 0 || !qp || !(g = reg_by_name(tok[2])) || !g->mr) {
		reply(out, "err %d usage: post_send OP NAME OFF LEN LKEY VA RKEY WR_ID IMM CMP_ADD SWAP FLAGS", EINVAL);
		return;
	}
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uint64_t)(uintptr_t)g->mem + strtoull(tok[3], NULL, 0);
	sge.length = (uint32_t)strtoul(tok[4], NULL, 0);
	sge.lkey = strcmp(tok[5], "-") ? (uint32_t)strtoul(tok[5], NULL, 0) : g->mr->lkey;
	wr.opcode = (enum ibv_wr_opcode)op;
	wr.wr_id = strtoull(tok[8], NULL, 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.imm_data = htonl((uint32_t)strtoul(tok[9], NULL, 0));   /* as the script's, on the wire */
	wr.send_flags = (unsigned)strtoul(tok[12], NULL, 0);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = strtoull(tok[6], NULL, 0);
		wr.wr.atomic.rkey = (uint32_t)strtoul(tok[7], NULL, 0);
		wr.wr.atomic.compare_add = strtoull(tok[10], NULL, 0);
		wr.wr.atomic.swap = strtoull(tok[11], NULL, 0);
	} else {
		wr.wr.rdma.remote_addr = strtoull(tok[6], NULL, 0);
		wr.wr.rdma.rkey = (uint32_t)strtoul(tok[7], NULL, 0);
	}
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		reply(out, "err %d post_send", rc);
	else
		reply(out, "ok");
}

static void handle(FILE *out, char *line)
{
	char *tok[40], *save = NULL;
	int ntok = 0;
	struct reg *g;

	for (char *t = strtok_r(line, " \t\r\n", &save); t && ntok < 40; t = strtok_r(NULL, " \t\r\n", &save))
		tok[ntok++] = t;
	if (!ntok)
		return;
	if (!strcmp(tok[0], "open")) {
		fixture_close();
		pd = ibv_alloc_pd(ctx);
		pd2 = ibv_alloc_pd(ctx);
		if (!pd || !pd2)
			reply(out, "err %d alloc_pd", errno);
		else
			reply(out, "ok");
	} else if (!strcmp(tok[0], "close")) {
		fixture_close();
		reply(out, "ok");
	} else if (!strcmp(tok[0], "mr")) {
		cmd_mr(out, tok, ntok);
	} else if (!strcmp(tok[0], "qp")) {
		if (qp || !pd)
			reply(out, "err %d a QP exists or no open", EINVAL);
		else
			cmd_qp(out, tok, ntok);
	} else if (!strcmp(tok[0], "post_recv")) {
		struct ibv_recv_wr wr, *bad = NULL;
		struct ibv_sge sge;
		size_t off, len;
		int rc;
		if (ntok != 5 || !qp || !(g = reg_by_name(tok[1])) || !g->mr) {
			reply(out, "err %d usage: post_recv NAME OFF LEN WR_ID", EINVAL);
			return;
		}
		off = strtoul(tok[2], NULL, 0);
		len = strtoul(tok[3], NULL, 0);
		memset(&wr, 0, sizeof(wr));
		sge.addr = (uint64_t)(uintptr_t)g->mem + off;
		sge.length = (uint32_t)len;
		sge.lkey = g->mr->lkey;
		wr.wr_id = strtoull(tok[4], NULL, 0);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		rc = ibv_post_recv(qp, &wr, &bad);
		if (rc)
			reply(out, "err %d post_recv", rc);
		else
			reply(out, "ok");
	} else if (!strcmp(tok[0], "post_send")) {
		cmd_post_send(out, tok, ntok);
	} else if (!strcmp(tok[0], "poll")) {
		struct ibv_wc wc;
		struct ibv_cq *cq = ntok == 2 && !strcmp(tok[1], "send") ? scq : rcq;
		int n;
		if (!cq) {
			reply(out, "err %d no CQ", EINVAL);
			return;
		}
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			reply(out, "err %d poll_cq", -n);
		else if (n == 0)
			reply(out, "none");
		else
			reply(out, "wc %llu %d %s %u 0x%x %s%s%s %u", (unsigned long long)wc.wr_id, (int)wc.status,
			      wc.status == IBV_WC_SUCCESS ? wc_opcode_name(wc.opcode) : "-", wc.byte_len,
			      (wc.wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc.imm_data) :
			      (wc.wc_flags & IBV_WC_WITH_INV) ? wc.invalidated_rkey : 0,
			      (wc.wc_flags & IBV_WC_WITH_IMM) ? "IMM" : "",
			      (wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) == (IBV_WC_WITH_IMM | IBV_WC_WITH_INV) ? "," : "",
			      (wc.wc_flags & IBV_WC_WITH_INV) ? "INV" : (wc.wc_flags & IBV_WC_WITH_IMM) ? "" : "-",
			      wc.src_qp);
	} else if (!strcmp(tok[0], "query")) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		int rc = qp ? ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_RQ_PSN, &ia) : EINVAL;
		if (rc)
			reply(out, "err %d query_qp", rc);
		else
			reply(out, "ok %d %u", (int)a.qp_state, a.rq_psn);
	} else if (!strcmp(tok[0], "modify")) {
		struct ibv_qp_attr a;
		int rc;
		if (ntok != 2 || !qp) {
			reply(out, "err %d usage: modify STATE", EINVAL);
			return;
		}
		memset(&a, 0, sizeof(a));
		a.qp_state = (enum ibv_qp_state)atoi(tok[1]);
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		if (rc)
			reply(out, "err %d modify_qp", rc);
		else
			reply(out, "ok");
	} else if (!strcmp(tok[0], "read") || !strcmp(tok[0], "write")) {
		size_t off, len;
		bool rd = tok[0][0] == 'r';
		if (ntok != 4 || !(g = reg_by_name(tok[1]))) {
			reply(out, "err %d usage: read NAME OFF LEN | write NAME OFF HEX", EINVAL);
			return;
		}
		off = strtoul(tok[2], NULL, 0);
		len = rd ? strtoul(tok[3], NULL, 0) : strlen(tok[3]) / 2;
		if (off > g->len || len > g->len - off) {
			reply(out, "err %d beyond the region", EINVAL);
			return;
		}
		if (rd) {
			fputs("ok ", out);
			for (size_t i = 0; i < len; i++)
				fprintf(out, "%02x", g->mem[off + i]);
			reply(out, "%s", "");
		} else {
			for (size_t i = 0; i < len; i++) {
				char h[3] = { tok[3][2 * i], tok[3][2 * i + 1], 0 };
				g->mem[off + i] = (uint8_t)strtoul(h, NULL, 16);
			}
			reply(out, "ok");
		}
	} else if (!strcmp(tok[0], "dereg")) {
		int rc;
		if (ntok != 2 || !(g = reg_by_name(tok[1])) || !g->mr) {
			reply(out, "err %d usage: dereg NAME (registered)", EINVAL);
			return;
		}
		rc = ibv_dereg_mr(g->mr);
		if (rc) {
			reply(out, "err %d dereg_mr", rc);
			return;
		}
		g->mr = NULL;
		reply(out, "ok");
	} else if (!strcmp(tok[0], "pattern")) {
		unsigned base;
		if (ntok != 3 || !(g = reg_by_name(tok[1]))) {
			reply(out, "err %d usage: pattern NAME BASE", EINVAL);
			return;
		}
		base = (unsigned)strtoul(tok[2], NULL, 0);
		for (size_t i = 0; i < g->len; i++)
			g->mem[i] = (uint8_t)(base + i);
		reply(out, "ok");
	} else if (!strcmp(tok[0], "guards")) {
		for (int i = 0; i < nreg; i++)
			for (size_t k = 0; k < GUARD; k++)
				if (regs[i].alloc[k] != GVAL || regs[i].mem[regs[i].len + k] != GVAL) {
					reply(out, "bad %s", regs[i].name);
					return;
				}
		reply(out, "ok");
	} else {
		reply(out, "err %d unknown command %s", EINVAL, tok[0]);
	}
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct sockaddr_in sa;
	int ls, one = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: conf_agent PORT\n");
		return 2;
	}
	list = ibv_get_device_list(NULL);
	if (!list || !list[0] || !(ctx = ibv_open_device(list[0]))) {
		fprintf(stderr, "conf_agent: no RDMA device\n");
		return 1;
	}
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		perror("conf_agent: bind/listen");
		return 1;
	}
	fprintf(stderr, "conf_agent: %s listening on %s\n", ibv_get_device_name(list[0]),
		argv[1]);
	for (;;) {
		int c = accept(ls, NULL, NULL);
		FILE *in, *out;
		char line[1 << 20];
		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		in = fdopen(c, "r");
		out = fdopen(dup(c), "w");
		if (!in || !out)
			return 1;
		while (fgets(line, sizeof(line), in))
			handle(out, line);
		fixture_close();
		fclose(in);
		fclose(out);
	}
}
