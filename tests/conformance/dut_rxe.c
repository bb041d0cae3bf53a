/* SPDX-License-Identifier: MIT */
/*
 * The device under test as Linux rxe: the fixture's regions, CQs and RC QP
 * live in the interop VM, made and driven by tests/interop/conf_agent.c
 * over TCP (one line per command); the peer talks to rxe through xroce's
 * UDP link bound to the host's address. Time is real: `>` waits for a
 * packet (up to RXE_WAIT_MS), `> none`, `cqe ... none` and the end of a
 * script wait a guard time (RXE_GUARD_MS) in which nothing may come.
 * Only lines the agent can serve reach here (script.c: eligible()); in
 * record mode that includes the requester side (post_send, injected
 * responses, `+T` as a real wait) for diff_rxe.py's requester campaign.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "script.h"
#include "xroce/link.h"

#define RXE_WAIT_MS  3000   /* a packet or completion rxe must produce */
#define RXE_GUARD_MS 200    /* "nothing (more)": nothing within this */
#define RXE_QUIET_MS 30     /* after an injection: rxe is done when quiet this long */
#define RXE_AGENT_TIMEOUT_S 20   /* an answer of the agent */
#define RXE_RECORD_QUIET_MS 80   /* the same in record mode, where a late packet is a false divergence */

const char *rxe_agent, *rxe_host;

static FILE *ain, *aout;     /* the agent's connection, kept across scripts */

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

/* ---- the agent ---- */

static bool agent_connect(struct run *r)
{
	char host[64], *colon;
	struct sockaddr_in sa;
	int fd, one = 1;

	if (ain)
		return true;
	snprintf(host, sizeof(host), "%s", rxe_agent);
	colon = strchr(host, ':');
	if (!colon) {
		fail(r, "--rxe wants AGENT_IP:PORT");
		return false;
	}
	*colon = '\0';
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (!inet_aton(host, &sa.sin_addr)) {
		fail(r, "bad agent address '%s'", host);
		return false;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fail(r, "cannot reach the rxe agent at %s: %s", rxe_agent, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* a VM that died (a kernel crash) must fail the script, not hang it */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = RXE_AGENT_TIMEOUT_S }, sizeof(struct timeval));
	ain = fdopen(fd, "r");
	aout = fdopen(dup(fd), "w");
	return ain && aout;
}

/* Sends one command, reads one answer line (without the newline) into buf. */
static bool agent(struct run *r, char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool agent(struct run *r, char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	uint64_t t0 = now_ms();

	va_start(ap, fmt);
	vfprintf(aout, fmt, ap);
	va_end(ap);
	fputc('\n', aout);
	fflush(aout);
	if (!fgets(buf, (int)n, ain)) {
		fail(r, "the rxe agent closed the connection");
		return false;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	if (getenv("XR_RXE_TRACE"))
		fprintf(stderr, "  agent: %.40s -> %.60s (%llu ms)\n", fmt, buf, (unsigned long long)(now_ms() - t0));
	return true;
}

/* An "err N ..." answer's N; 0 for "ok...". */
static int agent_err(const char *ans)
{
	return !strncmp(ans, "err ", 4) ? atoi(ans + 4) : 0;
}

/* ---- regions ---- */

/* XR_ACCESS_* have ibv_access_flags' values (regmap.h). */
static bool add_region(struct run *r, const char *name, size_t len, int access, bool other_pd)
{
	char ans[128];
	unsigned long long va;
	unsigned lkey, rkey;
	struct region *g;

	g = new_region(r, name, len, access, other_pd);
	if (!g)
		return false;
	if (!agent(r, ans, sizeof(ans), "mr %s %zu %d %d", name, len, access, other_pd ? 1 : 0))
		return false;
	if (sscanf(ans, "ok %llx %x %x", &va, &lkey, &rkey) != 3) {
		fail(r, "reg_mr of region '%s' failed on rxe: %s", name, ans);
		return false;
	}
	g->rva = va;
	g->lkey = lkey;
	g->rkey = rkey;
	return true;
}

/* ---- the interface ---- */

static bool rxe_open(struct run *r)
{
	char ans[128];
	struct in_addr a;
	char host[64];

	fixture_defaults(r);   /* the fixture (tests/conformance/README.md) */
	r->remote = true;
	snprintf(host, sizeof(host), "%s", rxe_agent);
	host[strcspn(host, ":")] = '\0';
	if (!inet_aton(host, &a) || !inet_aton(rxe_host, (struct in_addr[]){ { 0 } })) {
		fail(r, "bad addresses: agent %s, host %s", rxe_agent, rxe_host);
		return false;
	}
	r->dut_ip = ntohl(a.s_addr);
	inet_aton(rxe_host, &a);
	r->peer_ip = ntohl(a.s_addr);
	r->held = calloc(MAX_HELD, sizeof(*r->held));
	r->peer_link = xr_link_udp(rxe_host);
	if (!r->held || !r->peer_link) {
		fail(r, "cannot open the UDP link on %s: %s", rxe_host, strerror(errno));
		return false;
	}
	if (!agent_connect(r) || !agent(r, ans, sizeof(ans), "open"))
		return false;
	if (strcmp(ans, "ok")) {
		fail(r, "the agent cannot open the device: %s", ans);
		return false;
	}
	return default_regions(r, add_region);
}

static void rxe_close(struct run *r)
{
	char ans[64];

	if (ain)
		agent(r, ans, sizeof(ans), "close");
	if (r->peer_link)
		xr_link_close(r->peer_link);
	free(r->held);
}

static bool rxe_connect(struct run *r)
{
	if (r->o.type != XR_QPT_RC) {
		fail(r, "the rxe agent makes RC QPs only (qp type=UC/UD scripts run on xroce)");
		return false;
	}
	char ans[160];
	char peer[32];
	unsigned qpn;
	struct region *lbuf = region_by_name(r, "lbuf");

	snprintf(peer, sizeof(peer), "%u.%u.%u.%u", r->peer_ip >> 24, (r->peer_ip >> 16) & 0xFF,
		 (r->peer_ip >> 8) & 0xFF, r->peer_ip & 0xFF);
	if (!agent(r, ans, sizeof(ans),
		   "qp %s 0x%x mtu=%d rq_psn=%u sq_psn=%u timeout=%u retry_cnt=%u rnr_retry=%u min_rnr_timer=%u "
		   "max_rd_atomic=%u max_dest_rd_atomic=%u access=%d sq_depth=%u rq_depth=%u scq_depth=%u "
		   "rcq_depth=%u sig_all=%d",
		   peer, r->peer_qpn, (int)r->o.mtu, r->o.rq_psn, r->o.sq_psn, r->o.timeout, r->o.retry_cnt,
		   r->o.rnr_retry, r->o.min_rnr_timer, r->o.max_rd_atomic, r->o.max_dest_rd_atomic, r->o.access,
		   r->o.sq_depth, r->o.rq_depth, r->o.scq_depth, r->o.rcq_depth, r->o.sig_all ? 1 : 0))
		return false;
	if (sscanf(ans, "ok %u", &qpn) != 1) {
		fail(r, "cannot create and connect the QP on rxe: %s", ans);
		return false;
	}
	r->priv = (void *)(uintptr_t)qpn;
	if (lbuf)   /* lbuf starts with a known pattern (byte i = 0x40+i), as on the local device */
		agent(r, ans, sizeof(ans), "pattern lbuf 64");
	r->connected = true;
	return true;
}

static uint32_t rxe_qpn(struct run *r)
{
	return (uint32_t)(uintptr_t)r->priv;
}

static bool query(struct run *r, int *state, uint32_t *rq_psn)
{
	char ans[128];

	if (!agent(r, ans, sizeof(ans), "query") || sscanf(ans, "ok %d %u", state, rq_psn) != 2) {
		if (!r->failures)
			fail(r, "query_qp on rxe failed: %s", ans);
		return false;
	}
	return true;
}

static uint32_t rxe_epsn(struct run *r)
{
	int s;
	uint32_t psn = 0;

	query(r, &s, &psn);
	return psn;
}

static uint64_t rxe_va(struct run *r, const struct region *g)
{
	(void)r;
	return g->rva;
}

/* Collects until the link has been quiet for quiet_ms (at most max_ms in all). */
static void collect_for(struct run *r, unsigned quiet_ms, unsigned max_ms)
{
	uint64_t start = now_ms(), last = start;

	for (;;) {
		unsigned before = r->nheld;
		uint64_t t;
		collect(r);
		t = now_ms();
		if (r->nheld != before)
			last = t;
		if (t - last >= quiet_ms || t - start >= max_ms)
			return;
		sleep_ms(1);
	}
}

static void rxe_settle(struct run *r)
{
	/* record mode: a transcript must not depend on the VM's pace */
	collect_for(r, recording ? RXE_RECORD_QUIET_MS : RXE_QUIET_MS, 1000);
}

static void rxe_await(struct run *r, bool want_packet)
{
	if (!want_packet) {
		collect_for(r, RXE_GUARD_MS, RXE_GUARD_MS);
		return;
	}
	for (uint64_t end = now_ms() + RXE_WAIT_MS; !held_count(r) && now_ms() < end; sleep_ms(1))
		collect(r);
}

static bool rxe_guards_ok(struct run *r, const char **bad)
{
	static char name[64];
	char ans[64];

	if (!agent(r, ans, sizeof(ans), "guards"))
		return true;   /* already failed */
	if (!strcmp(ans, "ok"))
		return true;
	snprintf(name, sizeof(name), "%s", !strncmp(ans, "bad ", 4) ? ans + 4 : ans);
	*bad = name;
	return false;
}

/* ---- actions ---- */

static void check_rc(struct run *r, const char *what, const char *ans, int want)
{
	int rc = agent_err(ans);

	if (recording)
		record_rc(r, what, rc);
	else if (want == -2)
		fail(r, "unknown return code after =>");
	else if (rc != want)
		fail(r, "%s returned %d (%s) on rxe, expected %d (%s)", what, rc, rc ? strerror(rc) : "ok", want, ans);
}

static void act_mr(struct run *r, char **tok, int ntok)
{
	mr_line(r, tok, ntok, add_region);
}

static void act_post_recv(struct run *r, char **tok, int ntok)
{
	struct recv_args a;
	char ans[128];

	if (!parse_recv(r, tok, ntok, &a))
		return;
	if (agent(r, ans, sizeof(ans), "post_recv %s %llu %llu %llu", a.region->name, (unsigned long long)a.off,
		  (unsigned long long)a.len, (unsigned long long)a.id))
		check_rc(r, "post_recv", ans, a.want_rc);
	rxe_settle(r);
}

/* Record mode only (script.c: eligible()): the requester side. */
static void act_post_send(struct run *r, char **tok, int ntok)
{
	struct send_args a;
	char ans[128], lkey[16] = "-";

	if (!parse_send(r, tok, ntok, &a))
		return;
	if (a.num_sge != 1 || (a.flags & XR_SEND_INLINE) || a.op == XR_WR_SEND_WITH_INV || a.op == XR_WR_LOCAL_INV) {
		fail(r, "post_send on rxe: one SGE, not inline, no send_inv or local_inv");
		return;
	}
	if (a.lkey_set)
		snprintf(lkey, sizeof(lkey), "0x%x", a.lkey);
	if (agent(r, ans, sizeof(ans), "post_send %s %s %llu %u %s 0x%llx 0x%x %llu 0x%x 0x%llx 0x%llx %u", a.opname,
		  a.src->name, (unsigned long long)a.off, a.len, lkey, (unsigned long long)a.va, a.rkey,
		  (unsigned long long)a.id, a.imm, (unsigned long long)a.cmp_add, (unsigned long long)a.swap, a.flags))
		check_rc(r, "post_send", ans, a.want_rc);
	rxe_settle(r);
}

/* `+T`: rxe's timers run in real time, so the script's clock is the wall
 * clock here: wait T (at most 20 s), then collect what rxe did. */
static void act_time(struct run *r, const char *t)
{
	char *end;
	double v = strtod(t + 1, &end);
	double ms = !strcmp(end, "ns") ? v / 1e6 : !strcmp(end, "us") ? v / 1e3 : !strcmp(end, "ms") ? v :
		    !strcmp(end, "s") ? v * 1e3 : -1;

	if (end == t + 1 || ms < 0 || ms > 20000) {
		fail(r, "time step on rxe is +N(ns|us|ms|s), at most 20 s: '%s'", t);
		return;
	}
	sleep_ms((unsigned)ms);
	rxe_settle(r);
}

static void act_modify(struct run *r, char **tok, int ntok)
{
	int want = expected_rc(tok, &ntok), s = -1;
	char ans[128];

	if (ntok == 2 && !strncmp(tok[1], "state=", 6))
		s = state_by_name(tok[1] + 6);
	if (s < 0) {
		fail(r, "modify_qp state=S only on rxe");
		return;
	}
	if (agent(r, ans, sizeof(ans), "modify %d", s))
		check_rc(r, "modify_qp", ans, want);
	rxe_settle(r);
}

static void act_cqe(struct run *r, char **tok, int ntok)
{
	char ans[256], opname[32], flags[32];
	unsigned long long wr_id;
	int status;
	unsigned byte_len, imm, src_qp;
	struct cqe_args c;

	if (!parse_cqe(r, tok, ntok, &c))
		return;
	if (c.none)
		sleep_ms(RXE_GUARD_MS);
	for (uint64_t end = now_ms() + RXE_WAIT_MS;; sleep_ms(5)) {
		if (!agent(r, ans, sizeof(ans), "poll %s", tok[1]))
			return;
		if (strcmp(ans, "none") || c.none || now_ms() >= end)
			break;
	}
	if (c.none) {
		if (strcmp(ans, "none"))
			fail(r, "expected no %s completion, got %s", tok[1], ans);
		return;
	}
	if (!strcmp(ans, "none")) {
		fail(r, "expected a %s completion, there is none", tok[1]);
		return;
	}
	if (sscanf(ans, "wc %llu %d %31s %u %x %31s %u", &wr_id, &status, opname, &byte_len, &imm, flags, &src_qp) != 7) {
		fail(r, "bad answer from the agent: %s", ans);
		return;
	}
	cqe_check(r, tok, ntok, &(struct cqe_got){
		.wr_id = wr_id, .byte_len = byte_len, .imm = imm, .src_qp = src_qp, .status = status,
		.opname = opname, .opcode_text = opname, .flags_text = flags,
		.with_imm = strstr(flags, "IMM") != NULL, .with_inv = strstr(flags, "INV") != NULL,
		.lax_status = true });
}

static void act_state(struct run *r, char **tok, int ntok)
{
	int want = parse_state(r, tok, ntok), s = -1;
	uint32_t psn;

	if (want < 0)
		return;
	for (uint64_t end = now_ms() + 1000; query(r, &s, &psn) && s != want && now_ms() < end; sleep_ms(10))
		;
	if (s != want && !r->failures)
		fail(r, "QP state is %s, expected %s", state_name(s), tok[1]);
}

static void act_mem(struct run *r, char **tok, int ntok)
{
	struct mem_args m;
	uint64_t addr, len;
	char *hex, *ans;
	uint8_t *want;
	struct region *g;
	size_t cap;

	if (!parse_mem(r, tok, ntok, &m))
		return;
	addr = m.addr;
	len = m.len;
	g = region_at(r, addr, len);
	if (!g) {
		fail(r, "address range is in no region");
		return;
	}
	want = malloc(len ? len : 1);
	cap = len * 2 + 64;
	hex = malloc(cap);
	ans = malloc(cap);
	if (!want || !hex || !ans || !bytes_fill(r, m.spec, want, (size_t)len))
		goto out;
	if (m.set) {
		for (uint64_t j = 0; j < len; j++)
			snprintf(hex + 2 * j, 3, "%02x", want[j]);
		hex[2 * len] = '\0';
		if (agent(r, ans, cap, "write %s %llu %s", g->name, (unsigned long long)(addr - g->rva), hex) &&
		    strcmp(ans, "ok"))
			fail(r, "write to region %s on rxe failed: %s", g->name, ans);
		goto out;
	}
	/* Writes land asynchronously: wait (up to 1 s) for the expected bytes. */
	for (uint64_t end = now_ms() + 1000;; sleep_ms(10)) {
		bool same = true;
		if (!agent(r, ans, cap, "read %s %llu %llu", g->name, (unsigned long long)(addr - g->rva),
			   (unsigned long long)len))
			goto out;
		if (strncmp(ans, "ok ", 3) || strlen(ans + 3) != 2 * len) {
			fail(r, "read of region %s on rxe failed: %s", g->name, ans);
			goto out;
		}
		for (uint64_t j = 0; j < len && same; j++) {
			unsigned b;
			sscanf(ans + 3 + 2 * j, "%2x", &b);
			if (b != want[j]) {
				same = false;
				if (now_ms() >= end)
					fail(r, "%s+%llu is 0x%02x, expected 0x%02x", g->name,
					     (unsigned long long)(addr - g->rva + j), b, want[j]);
			}
		}
		if (same || now_ms() >= end)
			break;
	}
out:
	free(want);
	free(hex);
	free(ans);
}

static void act_dereg(struct run *r, char **tok, int ntok)
{
	int want;
	struct region *g = parse_dereg(r, tok, ntok, &want);
	char ans[128];

	if (!g)
		return;
	if (agent(r, ans, sizeof(ans), "dereg %s", g->name))
		check_rc(r, "dereg_mr", ans, want);
	rxe_settle(r);
}

static bool rxe_action(struct run *r, char **tok, int ntok)
{
	const char *c = tok[0];
	int before = r->failures;

	if (!strcmp(c, "qp")) qp_line(r, tok, ntok);   /* only the options, into r->o */
	else if (!strcmp(c, "mr")) act_mr(r, tok, ntok);
	else if (!strcmp(c, "post_recv")) act_post_recv(r, tok, ntok);
	else if (!strcmp(c, "post_send")) act_post_send(r, tok, ntok);
	else if (c[0] == '+') act_time(r, c);
	else if (!strcmp(c, "modify_qp")) act_modify(r, tok, ntok);
	else if (!strcmp(c, "cqe")) act_cqe(r, tok, ntok);
	else if (!strcmp(c, "state")) act_state(r, tok, ntok);
	else if (!strcmp(c, "mem")) act_mem(r, tok, ntok);
	else if (!strcmp(c, "dereg_mr")) act_dereg(r, tok, ntok);
	else if (!strcmp(c, "drain")) { rxe_await(r, false); drain_held(r); }
	else fail(r, "'%s' is not served on rxe", c);
	return r->failures == before;
}

/* ---- record mode ---- */

static bool rxe_poll(struct run *r, bool send, struct cqe_got *g)
{
	static char opname[32];
	char ans[256], flags[32];
	unsigned long long wr_id;
	unsigned byte_len, imm, src_qp;
	int status;

	if (!agent(r, ans, sizeof(ans), "poll %s", send ? "send" : "recv") || strncmp(ans, "wc ", 3))
		return false;
	if (sscanf(ans, "wc %llu %d %31s %u %x %31s %u", &wr_id, &status, opname, &byte_len, &imm, flags, &src_qp) != 7) {
		fail(r, "bad answer from the agent: %s", ans);
		return false;
	}
	*g = (struct cqe_got){ .wr_id = wr_id, .byte_len = byte_len, .imm = imm, .src_qp = src_qp, .status = status,
			       .opname = opname, .with_imm = strstr(flags, "IMM") != NULL,
			       .with_inv = strstr(flags, "INV") != NULL };
	return true;
}

static int rxe_qp_state(struct run *r)
{
	int s = -1;
	uint32_t psn;

	return query(r, &s, &psn) ? s : -1;
}

static bool rxe_region_read(struct run *r, const struct region *g, uint8_t *buf)
{
	enum { CHUNK = 16384 };
	char *ans = malloc(2 * CHUNK + 64);
	bool ok = ans != NULL;

	for (size_t off = 0; ok && off < g->len; off += CHUNK) {
		size_t n = g->len - off < CHUNK ? g->len - off : CHUNK;
		ok = agent(r, ans, 2 * CHUNK + 64, "read %s %zu %zu", g->name, off, n) && !strncmp(ans, "ok ", 3) &&
		     strlen(ans + 3) == 2 * n;
		for (size_t j = 0; ok && j < n; j++) {
			unsigned b;
			sscanf(ans + 3 + 2 * j, "%2x", &b);
			buf[off + j] = (uint8_t)b;
		}
	}
	free(ans);
	return ok;
}

const struct dut_ops dut_rxe = {
	.name = "rxe",
	.open = rxe_open,
	.close = rxe_close,
	.connect = rxe_connect,
	.action = rxe_action,
	.epsn = rxe_epsn,
	.qpn = rxe_qpn,
	.va = rxe_va,
	.settle = rxe_settle,
	.await = rxe_await,
	.guards_ok = rxe_guards_ok,
	.poll = rxe_poll,
	.qp_state = rxe_qp_state,
	.region_read = rxe_region_read,
};
