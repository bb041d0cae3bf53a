/* SPDX-License-Identifier: MIT */
/*
 * Scale (the performance issue's goal 5): N RC QP pairs in one process,
 * two devices on one mem-link pair, created and connected (RTR/RTS);
 * what the engine holds per idle QP, the creation rate and the process's
 * RSS; a sample of the QPs carrying a WRITE end to end; 1,000 QPs
 * streaming 64 KiB WRITEs at once against one of them alone; QP and key
 * lookups with 1k and with N in the tables. Each row prints its target
 * and met / NOT met. Exit status 1 only for a correctness failure.
 *
 *   bench-scale [--qps N] [--active M] [--seconds S] [--quick]
 *
 * Rings are the smallest a QP gets (one send and one receive WR, two
 * slots each) and every QP of a side shares one CQ; the M streaming QPs
 * (the first M created) have 8 send WRs so that one QP alone is not held
 * back by its own ring. Both engines run inline in this thread, as
 * bench-rc's inline row.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scale_lookup.h"
#include "xroce/verbs.h"

#define MSG (64u << 10)          /* the streaming WRITEs */
#define STREAM_DEPTH 8           /* WRITEs in flight per streaming QP */
#define SAMPLE_BYTES 64          /* one WRITE per sampled QP */
#define LOOKUP_SET 1000          /* QPNs (keys) looked up at each size */
#define FIRST_QPN 0x11           /* the driver's first QPN */
#define MAX_QPN (1u << 20)       /* the engine's QP table (CAP_QP) */

/* Targets (the goal 5). */
#define IDLE_BYTES_TARGET 512
#define ACTIVE_RATIO_TARGET 0.8
#define LOOKUP_RATIO_TARGET 1.5  /* at N against at 1k: O(1) */

struct side {
	struct xr_context *ctx;
	struct xr_pd *pd;
	struct xr_cq *cq;
	uint8_t *buf;
	size_t len;
	struct xr_mr *mr;
	struct xr_qp **qp;
};

struct bench {
	struct xr_link *la, *lb;
	struct side a, b;
	unsigned n, active, sample, mrs;
	double seconds;
	int32_t *stream_of;          /* a's QPN -> streaming QP index, -1 for none */
	int failures;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *verdict(int met)
{
	return met ? "met" : "NOT met";
}

static void fail(struct bench *B, const char *what)
{
	fprintf(stderr, "bench-scale: %s\n", what);
	B->failures++;
}

/* Heap in use: what malloc handed out, mapped chunks included. */
static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* A line of /proc/self/status in KiB ("VmRSS", "VmHWM"). */
static unsigned long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long v = 0;
	size_t n = strlen(key);

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtoul(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void progress(struct bench *B)
{
	xr_engine_progress(xr_context_engine(B->a.ctx));
	xr_engine_progress(xr_context_engine(B->b.ctx));
}

static int side_open(struct side *s, struct xr_link *l, const char *addr, size_t len, unsigned n)
{
	struct xr_device_opts o = { .addr = addr, .progress = XR_PROGRESS_INLINE };

	s->ctx = xr_open_device(l, &o);
	if (!s->ctx)
		return -1;
	s->pd = xr_alloc_pd(s->ctx);
	s->cq = xr_create_cq(s->ctx, 1 << 15);
	s->len = len;
	s->buf = aligned_alloc(4096, len);
	s->qp = calloc(n, sizeof(*s->qp));
	if (!s->pd || !s->cq || !s->buf || !s->qp)
		return -1;
	memset(s->buf, 0, len);
	s->mr = xr_reg_mr(s->pd, s->buf, len, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ);
	return s->mr ? 0 : -1;
}

static struct xr_qp *qp_create(struct side *s, unsigned send_wr)
{
	struct xr_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = s->cq;
	ia.qp_type = XR_QPT_RC;
	ia.cap.max_send_wr = send_wr;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	return xr_create_qp(s->pd, &ia);
}

/* INIT, RTR and RTS, as ibv_rc_pingpong does it (no remote atomics). */
static int qp_connect(struct xr_qp *q, struct xr_qp *peer, struct xr_context *peer_ctx, uint32_t my_psn,
		      uint32_t peer_psn)
{
	struct xr_connect_attr c;

	xr_connect_attr_init(&c);
	c.dest_qp_num = xr_qp_num(peer);
	c.rq_psn = peer_psn;
	c.sq_psn = my_psn;
	xr_query_gid(peer_ctx, &c.dgid);
	c.path_mtu = XR_MTU_4096;
	c.access = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ;
	return xr_qp_connect(q, &c);
}

/* ---- lookups: the same QPNs (keys) with 1k and with N in the table ----
 *
 * O(1) means a lookup costs the same whatever else the table holds: the
 * first 1,000 QPNs (keys) are looked up in an engine holding only them
 * and in a's holding N, alternately (this machine is shared: both sides
 * see the same load), the best of 20 runs each (the target). Shown beside:
 * 1,000 spread over all N (each in a page of its own: the TLB's cost, not
 * the table's), and every QP once in random order (a cache miss each). */

#define LOOKUP_ALTERNATIONS 4

struct lookups {
	double qp_1k, qp_n, qp_spread, qp_all, key_1k, key_n, key_spread;
	unsigned keys_n;
	uint32_t qpn[LOOKUP_SET], ref_key[LOOKUP_SET];
	struct xr_engine *ref;       /* holds only qpn[] and LOOKUP_SET regions */
};

static double min_of(double a, double b)
{
	return a > 0 && a < b ? a : b;
}

/* The same QPNs (keys) alternately in the reference engine and in a's. */
static void alternate(struct bench *B, struct lookups *L, const uint32_t *keys, double *ref_ns, double *big_ns)
{
	struct xr_engine *big = xr_context_engine(B->a.ctx);
	unsigned found_ref, found_big;

	*ref_ns = *big_ns = 0;
	for (int k = 0; k < LOOKUP_ALTERNATIONS; k++) {
		if (keys) {
			*ref_ns = min_of(*ref_ns, scale_key_lookup_ns(L->ref, L->ref_key, LOOKUP_SET, 2000, &found_ref));
			*big_ns = min_of(*big_ns, scale_key_lookup_ns(big, keys, LOOKUP_SET, 2000, &found_big));
		} else {
			*ref_ns = min_of(*ref_ns, scale_qp_lookup_ns(L->ref, L->qpn, LOOKUP_SET, 2000, &found_ref));
			*big_ns = min_of(*big_ns, scale_qp_lookup_ns(big, L->qpn, LOOKUP_SET, 2000, &found_big));
		}
		if (found_ref != LOOKUP_SET || found_big != LOOKUP_SET)
			fail(B, keys ? "a key lookup missed a registered region" : "a QP lookup missed a QP in use");
	}
}

/* The QPNs of a's QPs 0, upto/1000, 2*upto/1000, ... */
static double qp_lookup_spread(struct bench *B, unsigned upto, unsigned rounds)
{
	uint32_t set[LOOKUP_SET];
	unsigned found;
	double ns;

	for (unsigned i = 0; i < LOOKUP_SET; i++)
		set[i] = xr_qp_num(B->a.qp[(uint64_t)i * upto / LOOKUP_SET]);
	ns = scale_qp_lookup_ns(xr_context_engine(B->a.ctx), set, LOOKUP_SET, rounds, &found);
	if (found != LOOKUP_SET)
		fail(B, "a QP lookup missed a QP in use");
	return ns;
}

/* Every QPN of a's, in a shuffled order: each lookup a cache miss (shown,
 * not judged: it measures the memory, not the table). */
static double qp_lookup_all(struct bench *B)
{
	uint32_t *set = malloc(B->n * sizeof(*set));
	unsigned found;
	uint64_t x = 0x9E3779B97F4A7C15ull;
	double ns;

	if (!set)
		return -1;
	for (unsigned i = 0; i < B->n; i++)
		set[i] = xr_qp_num(B->a.qp[i]);
	for (unsigned i = B->n - 1; i > 0; i--) {
		unsigned j;
		uint32_t t;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = (unsigned)(x % (i + 1));
		t = set[i], set[i] = set[j], set[j] = t;
	}
	ns = scale_qp_lookup_ns(xr_context_engine(B->a.ctx), set, B->n, 1, &found);
	if (found != B->n)
		fail(B, "a QP lookup missed a QP in use");
	free(set);
	return ns;
}

/* Keys: B->mrs regions registered in a (each a page of its buffer). */
static int key_lookups(struct bench *B, struct lookups *L, unsigned rounds)
{
	struct xr_mr **mr = calloc(B->mrs, sizeof(*mr));
	uint32_t set[LOOKUP_SET];
	unsigned found, n = 0;
	int rc = -1;

	if (!mr)
		return -1;
	for (; n < B->mrs; n++) {
		mr[n] = xr_reg_mr(B->a.pd, B->a.buf + (n % (B->a.len / 4096)) * 4096, 4096, XR_ACCESS_LOCAL_WRITE);
		if (!mr[n])
			goto out;
	}
	for (unsigned i = 0; i < LOOKUP_SET; i++)
		set[i] = mr[i]->lkey;
	alternate(B, L, set, &L->key_1k, &L->key_n);
	for (unsigned i = 0; i < LOOKUP_SET; i++)
		set[i] = mr[(uint64_t)i * n / LOOKUP_SET]->lkey;
	L->key_spread = scale_key_lookup_ns(xr_context_engine(B->a.ctx), set, LOOKUP_SET, rounds, &found);
	if (found != LOOKUP_SET)
		fail(B, "a key lookup missed a registered region");
	L->keys_n = n;
	rc = 0;
out:
	while (n--)
		xr_dereg_mr(mr[n]);
	free(mr);
	return rc;
}

/* ---- traffic ---- */

static int post_write(struct bench *B, struct xr_qp *q, size_t off, uint32_t len, uint64_t id)
{
	struct xr_sge s = { (uintptr_t)B->a.buf + off, len, B->a.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED };

	w.wr.rdma.remote_addr = (uintptr_t)B->b.buf + off;
	w.wr.rdma.rkey = B->b.mr->rkey;
	return xr_post_send(q, &w, NULL);
}

/* Waits for want completions on a's CQ (all successful): 0 or -1. */
static int drain(struct bench *B, unsigned want, double timeout_s)
{
	struct xr_wc wc[64];
	double until = now_s() + timeout_s;

	while (want && now_s() < until) {
		int n;
		progress(B);
		n = xr_poll_cq(B->a.cq, 64, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != XR_WC_SUCCESS) {
				fprintf(stderr, "bench-scale: completion error %s on QP 0x%x\n",
					xr_wc_status_str(wc[i].status), wc[i].qp_num);
				return -1;
			}
		want -= (unsigned)n;
	}
	return want ? -1 : 0;
}

/* One WRITE on each of B->sample QPs spread over all N, at once; then
 * every byte checked at b. */
static int sample_writes(struct bench *B)
{
	for (unsigned k = 0; k < B->sample; k++) {
		size_t off = (size_t)k * SAMPLE_BYTES;
		for (unsigned i = 0; i < SAMPLE_BYTES; i++)
			B->a.buf[off + i] = (uint8_t)(k * 31 + i + 1);
		if (post_write(B, B->a.qp[(uint64_t)k * B->n / B->sample], off, SAMPLE_BYTES, k))
			return -1;
	}
	if (drain(B, B->sample, 30))
		return -1;
	return memcmp(B->a.buf, B->b.buf, (size_t)B->sample * SAMPLE_BYTES) ? -1 : 0;
}

/* The first nq streaming QPs stream 64 KiB WRITEs for B->seconds, each
 * WRITE to the next of `regions` 64 KiB regions in turn (the same
 * footprint in memory whatever nq is): goodput in bytes per second, or -1. */
static double stream(struct bench *B, unsigned nq, unsigned regions)
{
	struct xr_wc wc[64];
	uint64_t bytes = 0, left = 0, seq = 0;
	double t0, t;

	for (unsigned q = 0; q < nq; q++)
		for (unsigned k = 0; k < STREAM_DEPTH; k++, left++)
			if (post_write(B, B->a.qp[q], (size_t)(seq++ % regions) * MSG, MSG, q))
				return -1;
	t0 = now_s();
	do {
		int n;
		progress(B);
		n = xr_poll_cq(B->a.cq, 64, wc);
		t = now_s();
		for (int i = 0; i < n; i++) {
			int32_t q = wc[i].qp_num < MAX_QPN ? B->stream_of[wc[i].qp_num] : -1;
			if (wc[i].status != XR_WC_SUCCESS || q < 0 || (unsigned)q >= nq) {
				fprintf(stderr, "bench-scale: stream completion %s on QP 0x%x\n",
					xr_wc_status_str(wc[i].status), wc[i].qp_num);
				return -1;
			}
			bytes += MSG;
			left--;
			if (t - t0 < B->seconds) {
				if (post_write(B, B->a.qp[q], (size_t)(seq++ % regions) * MSG, MSG, (uint64_t)q))
					return -1;
				left++;
			}
		}
	} while (t - t0 < B->seconds);
	/* What is still in flight completes before the next run. */
	return drain(B, (unsigned)left, 30) ? -1 : (double)bytes / (t - t0);
}

/* ---- the run ---- */

static void usage(void)
{
	printf("Usage: bench-scale [--qps N] [--active M] [--seconds S] [--quick]\n"
	       "  --qps N      RC QP pairs (default 1000000; at most %u)\n"
	       "  --active M   QPs streaming at once (default 1000)\n"
	       "  --seconds S  each streaming run (default 2)\n"
	       "  --quick      20,000 QPs, 100 active, 0.3 s: a smoke run\n", MAX_QPN - FIRST_QPN);
}

static int parse(struct bench *B, int argc, char **argv)
{
	B->n = 1000000;
	B->active = 1000;
	B->seconds = 2.0;
	B->sample = 1000;
	B->mrs = 100000;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		if (!strcmp(argv[i], "--quick")) {
			B->n = 20000;
			B->active = 100;
			B->seconds = 0.3;
			B->sample = 200;
			B->mrs = 5000;
		} else if (!strcmp(argv[i], "--qps") && i + 1 < argc) {
			B->n = (unsigned)strtoul(argv[++i], &end, 0);
		} else if (!strcmp(argv[i], "--active") && i + 1 < argc) {
			B->active = (unsigned)strtoul(argv[++i], &end, 0);
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			B->seconds = strtod(argv[++i], &end);
		} else {
			usage();
			return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 1;
		}
		if (end && *end) {
			usage();
			return 2;
		}
	}
	if (B->n < LOOKUP_SET || B->n > MAX_QPN - FIRST_QPN || !B->active || B->active > B->n ||
	    !(B->seconds > 0)) {
		fprintf(stderr, "bench-scale: --qps %u..%u, --active 1..N, --seconds > 0\n", LOOKUP_SET,
			MAX_QPN - FIRST_QPN);
		return 2;
	}
	if (B->sample > B->n)
		B->sample = B->n;
	return 0;
}

int main(int argc, char **argv)
{
	struct bench B = { 0 };
	struct lookups L = { 0 };
	struct xr_engine_qp_mem ma, mb;
	size_t heap0, heap1, buf_len;
	double t0, t_create, t_connect, hot, one, many;
	int rc = parse(&B, argc, argv);

	if (rc)
		return rc == 1 ? 0 : rc;
	buf_len = (size_t)B.active * MSG;
	if (buf_len < (size_t)B.sample * SAMPLE_BYTES)
		buf_len = (size_t)B.sample * SAMPLE_BYTES;
	B.stream_of = malloc(MAX_QPN * sizeof(*B.stream_of));
	if (!B.stream_of || xr_link_mem_pair(&B.la, &B.lb, 0) ||
	    side_open(&B.a, B.la, "10.0.0.1", buf_len, B.n) || side_open(&B.b, B.lb, "10.0.0.2", buf_len, B.n)) {
		fprintf(stderr, "bench-scale: setup failed: %s\n", strerror(errno));
		return 1;
	}
	memset(B.stream_of, 0xFF, MAX_QPN * sizeof(*B.stream_of));
	printf("bench-scale: %u RC QP pairs on one mem-link pair, one process (%u streaming with %u send WRs, the rest 1)\n",
	       B.n, B.active, STREAM_DEPTH);

	/* Create, then connect, every pair. */
	heap0 = heap_bytes();
	t0 = now_s();
	for (unsigned i = 0; i < B.n; i++) {
		unsigned depth = i < B.active ? STREAM_DEPTH : 1;
		B.a.qp[i] = qp_create(&B.a, depth);
		B.b.qp[i] = qp_create(&B.b, depth);
		if (!B.a.qp[i] || !B.b.qp[i]) {
			fprintf(stderr, "bench-scale: QP %u: create failed: %s\n", i, strerror(errno));
			return 1;
		}
		if (i < B.active)
			B.stream_of[xr_qp_num(B.a.qp[i])] = (int32_t)i;
	}
	t_create = now_s() - t0;
	t0 = now_s();
	for (unsigned i = 0; i < B.n; i++) {
		uint32_t pa = (i * 977u) & 0xFFFFFF, pb = (i * 13u + 5) & 0xFFFFFF;
		if (qp_connect(B.a.qp[i], B.b.qp[i], B.b.ctx, pa, pb) || qp_connect(B.b.qp[i], B.a.qp[i], B.a.ctx, pb, pa)) {
			fprintf(stderr, "bench-scale: QP %u: connect failed\n", i);
			return 1;
		}
	}
	t_connect = now_s() - t0;
	for (int i = 0; i < 10; i++)
		progress(&B);
	heap1 = heap_bytes();
	xr_engine_qp_mem(xr_context_engine(B.a.ctx), &ma);
	xr_engine_qp_mem(xr_context_engine(B.b.ctx), &mb);
	{
		uint64_t qps = ma.qps + mb.qps;
		double idle = (double)ma.slot_bytes + (double)(ma.active_bytes + mb.active_bytes + ma.res_bytes + mb.res_bytes) / (double)qps;
		double table = (double)(ma.table_bytes + mb.table_bytes) / (double)qps;
		printf("engine state per idle connected QP: %.0f B (struct xr_qp %llu B; %llu B in flight, %llu B READ/atomic resources over %llu QPs; table pages %.1f B per QP): target <= %d B: %s\n",
		       idle, (unsigned long long)ma.slot_bytes, (unsigned long long)(ma.active_bytes + mb.active_bytes),
		       (unsigned long long)(ma.res_bytes + mb.res_bytes), (unsigned long long)qps, table,
		       IDLE_BYTES_TARGET, verdict(idle <= IDLE_BYTES_TARGET && table <= IDLE_BYTES_TARGET));
		if (ma.qps != B.n || mb.qps != B.n)
			fail(&B, "the engines do not hold N QPs each");
		printf("process heap per QP (driver object, 2+2-slot rings, engine): %.0f B; RSS %.2f GiB (peak %.2f GiB)\n",
		       (double)(heap1 - heap0) / (double)qps, status_kib("VmRSS") / 1048576.0, status_kib("VmHWM") / 1048576.0);
		printf("created %u QPs in %.2f s (%.0f QPs/s), connected them (INIT, RTR, RTS) in %.2f s: %.0f QPs created+connected per second\n",
		       2 * B.n, t_create, 2 * B.n / t_create, t_connect, 2 * B.n / (t_create + t_connect));
	}

	/* A sample carries a WRITE end to end, and goes idle again. */
	t0 = now_s();
	if (sample_writes(&B)) {
		fail(&B, "a sampled QP's WRITE did not arrive intact");
	} else {
		for (int i = 0; i < 10; i++)
			progress(&B);
		xr_engine_qp_mem(xr_context_engine(B.a.ctx), &ma);
		xr_engine_qp_mem(xr_context_engine(B.b.ctx), &mb);
		printf("%u sampled QPs (one in %u) carried a %u-byte WRITE each, every byte checked, in %.1f ms; in flight after: %llu QPs: %s\n",
		       B.sample, B.n / B.sample, SAMPLE_BYTES, (now_s() - t0) * 1e3,
		       (unsigned long long)(ma.active + mb.active), verdict(!ma.active && !mb.active));
		if (ma.active || mb.active)
			fail(&B, "QPs kept in-flight state after their WRITEs completed");
	}

	/* One QP alone, then B.active at once, over the same B.active regions
	 * (a cache-hot 64 KiB for one QP would measure the cache, not the
	 * engine: shown beside). */
	hot = stream(&B, 1, 1);
	one = stream(&B, 1, B.active);
	many = stream(&B, B.active, B.active);
	if (hot <= 0 || one <= 0 || many <= 0) {
		fail(&B, "a streaming run failed");
	} else {
		printf("%u QPs streaming 64 KiB WRITEs at once: %.2f GB/s against one QP's %.2f GB/s over the same %u regions (%.0f MiB): %.2f of it: target >= %.1f: %s (one QP on one cache-hot region: %.2f GB/s)\n",
		       B.active, many / 1e9, one / 1e9, B.active, (double)B.active * MSG / 1048576.0, many / one,
		       ACTIVE_RATIO_TARGET, verdict(many / one >= ACTIVE_RATIO_TARGET), hot / 1e9);
	}

	/* Lookups: the same 1,000 QPNs (keys) at 1k and at N in the table. */
	for (unsigned i = 0; i < LOOKUP_SET; i++)
		L.qpn[i] = xr_qp_num(B.a.qp[i]);
	L.ref = scale_ref_engine(L.qpn, LOOKUP_SET, L.ref_key);
	if (!L.ref) {
		fail(&B, "the reference engine for the lookups could not be made");
		return 1;
	}
	alternate(&B, &L, NULL, &L.qp_1k, &L.qp_n);
	L.qp_spread = qp_lookup_spread(&B, B.n, 2000);
	L.qp_all = qp_lookup_all(&B);
	if (key_lookups(&B, &L, 2000))
		fail(&B, "registering regions for the key lookups failed");
	scale_ref_engine_free(L.ref);
	printf("QP lookup (the same %u QPNs, alternately): %.1f ns in an engine holding 1k QPs, %.1f ns in one holding %u: %.2fx: target <= %.1fx: %s (%u spread over all: %.1f ns; every QP once, random order: %.1f ns)\n",
	       LOOKUP_SET, L.qp_1k, L.qp_n, B.n, L.qp_n / L.qp_1k, LOOKUP_RATIO_TARGET,
	       verdict(L.qp_n / L.qp_1k <= LOOKUP_RATIO_TARGET), LOOKUP_SET, L.qp_spread, L.qp_all);
	if (L.keys_n)
		printf("key lookup (the same %u regions, alternately): %.1f ns in an engine holding 1k, %.1f ns in one holding %u: %.2fx: target <= %.1fx: %s (%u spread over all: %.1f ns)\n",
		       LOOKUP_SET, L.key_1k, L.key_n, L.keys_n, L.key_n / L.key_1k, LOOKUP_RATIO_TARGET,
		       verdict(L.key_n / L.key_1k <= LOOKUP_RATIO_TARGET), LOOKUP_SET, L.key_spread);

	/* Teardown: RESET first (a connected QP's destroy waits for the engine to settle). */
	t0 = now_s();
	for (unsigned i = 0; i < B.n; i++) {
		struct xr_qp_attr a = { .qp_state = XR_QPS_RESET };
		xr_modify_qp(B.a.qp[i], &a, XR_QP_STATE);
		xr_modify_qp(B.b.qp[i], &a, XR_QP_STATE);
		if (xr_destroy_qp(B.a.qp[i]) || xr_destroy_qp(B.b.qp[i]))
			fail(&B, "a QP destroy failed");
	}
	printf("destroyed %u QPs in %.2f s\n", 2 * B.n, now_s() - t0);
	struct side *sides[2] = { &B.a, &B.b };
	for (int k = 0; k < 2; k++) {
		xr_dereg_mr(sides[k]->mr);
		xr_destroy_cq(sides[k]->cq);
		xr_dealloc_pd(sides[k]->pd);
		xr_close_device(sides[k]->ctx);
		free(sides[k]->buf);
		free(sides[k]->qp);
	}
	xr_link_close(B.la);
	xr_link_close(B.lb);
	free(B.stream_of);
	return B.failures ? 1 : 0;
}
