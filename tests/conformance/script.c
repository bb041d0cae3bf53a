/* SPDX-License-Identifier: MIT */
/*
 * The packet-script runner: reads a script (tests/conformance/README.md
 * describes the language), runs it line by line against one real xroce QP
 * and reports every line whose expectation failed.
 *
 *   conformance_run [-v] [--record] [--rxe AGENT_IP:PORT HOST_IP] SCRIPT...
 *
 * --record checks nothing: it prints what the device did after each line
 * (record.c), for tests/conformance/diff_rxe.py to compare two devices.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "script.h"

static bool verbose;
static bool remote_mode;   /* --rxe: the device is Linux rxe behind the agent */

void fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", r->file, r->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	r->failures++;
}

struct region *region_by_name(struct run *r, const char *name)
{
	for (int i = 0; i < r->nreg; i++)
		if (!strcmp(r->reg[i].name, name))
			return &r->reg[i];
	return NULL;
}

bool split_kv(char *tok, char **key, char **val)
{
	char *eq = strchr(tok, '=');

	if (!eq)
		return false;
	*eq = '\0';
	*key = tok;
	*val = eq + 1;
	return true;
}

uint32_t qp_epsn(struct run *r)
{
	return r->ops->epsn(r);
}

static bool symbol(struct run *r, const char *s, uint64_t *v)
{
	char name[32];
	const char *dot = strchr(s, '.');
	struct region *reg;

	if (!strcmp(s, "epsn")) {
		*v = qp_epsn(r);
		return true;
	}
	if (!strcmp(s, "rq_psn")) { *v = r->o.rq_psn; return true; }
	if (!strcmp(s, "sq_psn")) { *v = r->o.sq_psn; return true; }
	if (!strcmp(s, "mtu")) { *v = 128u << r->o.mtu; return true; }
	if (!strcmp(s, "qpn")) { *v = r->ops->qpn(r); return true; }
	if (!strcmp(s, "peer_qpn")) { *v = r->peer_qpn; return true; }
	snprintf(name, sizeof(name), "%.*s", dot ? (int)(dot - s) : (int)strlen(s), s);
	reg = region_by_name(r, name);
	if (!reg)
		return false;
	if (!dot || !strcmp(dot, ".va"))
		*v = r->ops->va(r, reg);
	else if (!strcmp(dot, ".rkey"))
		*v = reg->rkey;
	else if (!strcmp(dot, ".lkey"))
		*v = reg->lkey;
	else if (!strcmp(dot, ".old_rkey"))
		*v = reg->old_rkey;
	else if (!strcmp(dot, ".old_lkey"))
		*v = reg->old_lkey;
	else if (!strcmp(dot, ".len"))
		*v = reg->len;
	else
		return false;
	return true;
}

bool eval(struct run *r, const char *expr, uint64_t *out)
{
	const char *p = expr;
	uint64_t acc = 0;
	int sign = 1;

	while (*p) {
		char term[64];
		size_t n = 0;
		uint64_t v, mul = 1;
		char *end;
		while (*p && *p != '+' && (*p != '-' || n == 0) && n < sizeof(term) - 1)
			term[n++] = *p++;
		term[n] = '\0';
		/* a*b inside a term (e.g. 3*mtu) */
		{
			char *star = strchr(term, '*');
			if (star) {
				uint64_t m;
				*star = '\0';
				if (!eval(r, star + 1, &m))
					return false;
				mul = m;
			}
		}
		if (isdigit((unsigned char)term[0])) {
			errno = 0;
			v = strtoull(term, &end, 0);
			if (*end || errno) {
				fail(r, "bad number '%s' in '%s'", term, expr);
				return false;
			}
		} else if (!symbol(r, term, &v)) {
			fail(r, "unknown value '%s' in '%s'", term, expr);
			return false;
		}
		acc += (uint64_t)sign * v * mul;
		if (!*p)
			break;
		sign = *p == '-' ? -1 : 1;
		p++;
	}
	*out = acc;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool bytes_fill(struct run *r, const char *spec, uint8_t *buf, size_t len)
{
	uint64_t v;

	if (!strncmp(spec, "hex:", 4)) {
		const char *h = spec + 4;
		size_t n = strlen(h) / 2;
		if (n != len) {
			fail(r, "%s holds %zu bytes, %zu wanted", spec, n, len);
			return false;
		}
		for (size_t i = 0; i < n; i++) {
			int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				fail(r, "bad hex in %s", spec);
				return false;
			}
			buf[i] = (uint8_t)(hi << 4 | lo);
		}
		return true;
	}
	if (!strcmp(spec, "zero")) {
		memset(buf, 0, len);
		return true;
	}
	if (!strncmp(spec, "fill:", 5) && eval(r, spec + 5, &v)) {
		memset(buf, (int)(v & 0xFF), len);
		return true;
	}
	if (!strncmp(spec, "pat:", 4) && eval(r, spec + 4, &v)) {
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(v + i);
		return true;
	}
	fail(r, "bad byte spec '%s' (hex:.., fill:N, pat:N, zero)", spec);
	return false;
}


/* ---- actions implemented here, on top of dut.c ---- */

static const char *const qps_names[] = { "RESET", "INIT", "RTR", "RTS" };

static int qps_by_name(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(qps_names[i], s))
			return i;
	return -1;
}

/* Moves the QP one state at a time from where it is up to `to` (INIT, RTR
 * or RTS) with the fixture's attributes. */
bool qp_bring_up(struct run *r, int to)
{
	struct xr_qp_attr a;
	struct xr_qp_init_attr ia;
	int rc = 0;

	if (xr_query_qp(r->qp, &a, XR_QP_STATE, &ia)) {
		fail(r, "query_qp failed");
		return false;
	}
	for (int s = (int)a.qp_state; s < to && !rc; s++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = (enum xr_qp_state)(s + 1);
		if (r->o.type == XR_QPT_UD) {
			/* G1: a Q_Key at INIT, nothing at RTR, the SQ PSN at RTS */
			a.port_num = 1;
			a.qkey = r->o.qkey;
			a.sq_psn = r->o.sq_psn;
			rc = xr_modify_qp(r->qp, &a, XR_QP_STATE | (s == XR_QPS_RESET ? XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY :
							s == XR_QPS_RTR ? XR_QP_SQ_PSN : 0));
			if (s > XR_QPS_RTR) {
				fail(r, "connect: the QP is in state %d, not RESET/INIT/RTR", s);
				return false;
			}
			continue;
		}
		if (s == XR_QPS_RESET) {
			a.port_num = 1;
			a.qp_access_flags = (unsigned)r->o.access & 0xE;
			rc = xr_modify_qp(r->qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS);
		} else if (s == XR_QPS_INIT) {
			a.path_mtu = r->o.mtu;
			a.dest_qp_num = r->peer_qpn;
			a.rq_psn = r->o.rq_psn;
			a.max_dest_rd_atomic = r->o.max_dest_rd_atomic;
			a.min_rnr_timer = r->o.min_rnr_timer;
			a.ah_attr.is_global = 1;
			a.ah_attr.port_num = 1;
			a.ah_attr.grh.hop_limit = 64;
			xr_gid_from_ipv4(&a.ah_attr.grh.dgid, 0x0A000002);
			rc = xr_modify_qp(r->qp, &a, XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
						       (r->o.type == XR_QPT_RC ? XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER : 0));
		} else if (s == XR_QPS_RTR) {
			a.timeout = r->o.timeout;
			a.retry_cnt = r->o.retry_cnt;
			a.rnr_retry = r->o.rnr_retry;
			a.sq_psn = r->o.sq_psn;
			a.max_rd_atomic = r->o.max_rd_atomic;
			rc = xr_modify_qp(r->qp, &a, XR_QP_STATE | XR_QP_SQ_PSN |
						       (r->o.type == XR_QPT_RC ? XR_QP_TIMEOUT | XR_QP_RETRY_CNT |
						        XR_QP_RNR_RETRY | XR_QP_MAX_QP_RD_ATOMIC : 0));
		} else {
			fail(r, "connect: the QP is in state %d, not RESET/INIT/RTR", s);
			return false;
		}
	}
	if (rc) {
		fail(r, "connect: modify_qp failed: %s", strerror(rc));
		return false;
	}
	settle(r);
	return true;
}

/* The setup's end: the device's QP is made and brought to r->stop_state
 * (RTS, or less with `qp state=X`). */
static bool connect_fixture(struct run *r)
{
	return r->ops->connect(r);
}

static struct xr_cq *cq_by_word(struct run *r, const char *w)
{
	return !strcmp(w, "send") ? r->scq : !strcmp(w, "recv") ? r->rcq : NULL;
}

/* True if the CQ's event fd fired since the last look (and consumes it). */
static bool cq_fired(struct run *r, struct xr_cq *cq)
{
	struct pollfd p = { xr_cq_event_fd(cq), POLLIN, 0 };
	uint64_t v;

	settle(r);
	return poll(&p, 1, 0) > 0 && read(p.fd, &v, sizeof(v)) == sizeof(v);
}

/* connect [state=S], notify send|recv [solicited], event send|recv [none].
 * Returns false if the line is not one of these. */
static bool ext_action(struct run *r, char **tok, int ntok)
{
	struct xr_cq *cq;

	if (!strcmp(tok[0], "connect")) {
		int to = XR_QPS_RTS;
		for (int i = 1; i < ntok; i++) {
			if (strncmp(tok[i], "state=", 6) || (to = qps_by_name(tok[i] + 6)) < 1) {
				fail(r, "connect [state=INIT|RTR|RTS]");
				return true;
			}
		}
		qp_bring_up(r, to);
		return true;
	}
	if (strcmp(tok[0], "notify") && strcmp(tok[0], "event"))
		return false;
	cq = ntok >= 2 ? cq_by_word(r, tok[1]) : NULL;
	if (!cq) {
		fail(r, "%s send|recv ...", tok[0]);
		return true;
	}
	if (!strcmp(tok[0], "notify")) {
		bool sol = ntok >= 3 && !strcmp(tok[2], "solicited");
		cq_fired(r, cq);   /* forget an older event */
		if (xr_req_notify_cq(cq, sol))
			fail(r, "req_notify_cq failed");
		return true;
	}
	if (ntok >= 3 && !strcmp(tok[2], "none")) {
		if (cq_fired(r, cq))
			fail(r, "expected no event on the %s CQ, it fired", tok[1]);
	} else if (!cq_fired(r, cq)) {
		fail(r, "expected an event on the %s CQ, there is none", tok[1]);
	}
	return true;
}

/* `qp ... state=INIT|RTR`: taken out here, the rest goes to dut.c. */
static void qp_setup_line(struct run *r, char **tok, int *ntok)
{
	for (int i = 1; i < *ntok; i++)
		if (!strncmp(tok[i], "state=", 6)) {
			r->stop_state = qps_by_name(tok[i] + 6);
			if (r->stop_state < 1) {
				fail(r, "qp state=INIT|RTR|RTS");
				r->stop_state = XR_QPS_RTS;
			}
			memmove(&tok[i], &tok[i + 1], sizeof(*tok) * (size_t)(*ntok - i - 1));
			(*ntok)--;
			i--;
		}
}

/* Every region's guard bytes, on the local device. */
bool local_guards_ok(struct run *r, const char **bad)
{
	for (int i = 0; i < r->nreg; i++) {
		struct region *g = &r->reg[i];
		for (size_t k = 0; k < GUARD_LEN; k++)
			if (g->alloc[k] != GUARD_VAL || g->mem[g->len + k] != GUARD_VAL) {
				*bad = g->name;
				return false;
			}
	}
	return true;
}

/* "LW,RW,RR,RA" or "none" or a number. */
bool parse_access(struct run *r, const char *s, int *out)
{
	uint64_t v;
	int a = 0;
	char buf[64], *save = NULL;

	if (!strcmp(s, "none")) {
		*out = 0;
		return true;
	}
	if (s[0] >= '0' && s[0] <= '9') {
		if (!eval(r, s, &v))
			return false;
		*out = (int)v;
		return true;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "LW")) a |= XR_ACCESS_LOCAL_WRITE;
		else if (!strcmp(t, "RW")) a |= XR_ACCESS_REMOTE_WRITE;
		else if (!strcmp(t, "RR")) a |= XR_ACCESS_REMOTE_READ;
		else if (!strcmp(t, "RA")) a |= XR_ACCESS_REMOTE_ATOMIC;
		else if (!strcmp(t, "MW")) a |= XR_ACCESS_MW_BIND;
		else if (!strcmp(t, "ZB")) a |= XR_ACCESS_ZERO_BASED;
		else {
			fail(r, "unknown access '%s' (LW, RW, RR, RA, MW, ZB, none)", t);
			return false;
		}
	}
	*out = a;
	return true;
}

/* Optional trailing "=> ERRNAME": the return code the action must give. */
int expected_rc(char **tok, int *ntok)
{
	static const struct { const char *n; int v; } codes[] = {
		{ "EINVAL", EINVAL }, { "ENOMEM", ENOMEM }, { "EBUSY", EBUSY }, { "ok", 0 },
	};
	if (*ntok >= 2 && !strcmp(tok[*ntok - 2], "=>")) {
		for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
			if (!strcmp(tok[*ntok - 1], codes[i].n)) {
				*ntok -= 2;
				return codes[i].v;
			}
		return -2;
	}
	return 0;
}

/* ---- the line loop ---- */

static int tokenize(char *line, char **tok, int max)
{
	int n = 0;
	char *save = NULL, *t;

	for (t = strtok_r(line, " \t\r\n", &save); t && n < max; t = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = t;
	return n;
}

static bool is_setup(const char *cmd)
{
	return !strcmp(cmd, "qp") || !strcmp(cmd, "mr");
}

static bool setup_line(struct run *r, char **tok, int ntok)
{
	if (r->connected) {
		fail(r, "'%s' must come before the first action", tok[0]);
		return false;
	}
	return r->ops->action(r, tok, ntok);
}

/* rxe mode: can the agent serve every line of this script, in real time?
 * Returns 0 if so, else the first line it cannot serve (and why). */
static int eligible(FILE *f, char *why, size_t n)
{
	char line[1024];
	int no = 0;

	while (fgets(line, sizeof(line), f)) {
		char *tok[48], *hash = strchr(line, '#');
		int ntok;
		no++;
		if (hash)
			*hash = '\0';
		ntok = tokenize(line, tok, 48);
		if (!ntok)
			continue;
		/* record mode (diff_rxe.py) also runs the requester side on rxe: post_send,
		 * responses, and `+T` as a real wait; a check could not be timed that way */
		if (tok[0][0] == '+' && !recording) {
			snprintf(why, n, "'%s': timers (rxe's clock is real)", tok[0]);
			return no;
		}
		if (tok[0][0] == '+' || (recording && !strcmp(tok[0], "post_send")))
			continue;
		if (!strcmp(tok[0], "<") || !strcmp(tok[0], ">")) {
			static const char *const responses[] = { "ACK", "AACK", "RESP_FIRST", "RESP_MIDDLE",
								  "RESP_LAST", "RESP_ONLY" };
			for (size_t k = 0; !recording && !strcmp(tok[0], "<") && ntok > 1 && k < 6; k++)
				if (!strcasecmp(tok[1], responses[k])) {
					snprintf(why, n, "injects a response (%s): requester side", tok[1]);
					return no;
				}
			for (int i = 1; i < ntok; i++)
				if (!strncmp(tok[i], "sip=", 4)) {
					snprintf(why, n, "'%s': the UDP link sends from the host's address only", tok[i]);
					return no;
				}
			continue;
		}
		if (!strcmp(tok[0], "qp")) {
			for (int i = 1; i < ntok; i++)
				if (!strncmp(tok[i], "state=", 6)) {
					snprintf(why, n, "'qp %s': the agent brings the QP to RTS only", tok[i]);
					return no;
				} else if (!strcmp(tok[i], "type=UC") || !strcmp(tok[i], "type=UD")) {
					snprintf(why, n, "'qp %s': the agent makes RC QPs only", tok[i]);
					return no;
				}
			continue;
		}
		if (!strcmp(tok[0], "mr")) {
			for (int i = 2; i < ntok; i++)
				if (!strncmp(tok[i], "access=", 7) && (strstr(tok[i], "MW") || strstr(tok[i], "ZB"))) {
					snprintf(why, n, "'mr %s': memory windows / zero-based: not in the agent", tok[i]);
					return no;
				}
			continue;
		}
		if (!strcmp(tok[0], "modify_qp")) {
			if (ntok != 2 || (strcmp(tok[1], "state=ERR") && strcmp(tok[1], "state=RESET"))) {
				snprintf(why, n, "modify_qp other than state=ERR|RESET");
				return no;
			}
			continue;
		}
		if (!strcmp(tok[0], "post_recv") || !strcmp(tok[0], "cqe") || !strcmp(tok[0], "state") ||
		    !strcmp(tok[0], "mem") || !strcmp(tok[0], "dereg_mr") || !strcmp(tok[0], "drain") ||
		    !strcmp(tok[0], "counter"))
			continue;
		snprintf(why, n, "'%s': requester side or not served by the agent", tok[0]);
		return no;
	}
	return 0;
}

/* Record mode: lines that only check something; they are skipped. */
static bool is_expectation(char **tok, int ntok)
{
	static const char *const checks[] = { ">", "cqe", "state", "counter", "event", "async", "drain" };

	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (!strcmp(tok[0], checks[i]))
			return true;
	return !strcmp(tok[0], "mem") && ntok == 5 && !strcmp(tok[3], "==");
}

static bool is_burst(char **tok, int ntok)
{
	for (int i = 1; i < ntok && !strcmp(tok[0], "<"); i++)
		if (!strcmp(tok[i], "burst"))
			return true;
	return false;
}

static int run_script(const char *path)
{
	struct run r;
	char line[1024];
	FILE *f = fopen(path, "r");
	int lines = 0, skipped_counters = 0, run_lines = 0;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	if (remote_mode) {
		char why[256];
		int at = eligible(f, why, sizeof(why));
		if (at) {
			fclose(f);
			printf("n/a  %s: line %d: %s\n", path, at, why);
			return -1;
		}
		rewind(f);
	}
	memset(&r, 0, sizeof(r));
	r.file = path;
	r.ops = remote_mode ? &dut_rxe : &dut_local;
	r.stop_state = XR_QPS_RTS;
	if (!r.ops->open(&r)) {
		fclose(f);
		r.ops->close(&r);
		printf("FAIL %s\n", path);
		return 1;
	}
	if (recording)
		record_begin(&r, path);
	while (fgets(line, sizeof(line), f)) {
		char *tok[48], *hash = strchr(line, '#'), text[1024];
		int ntok;
		r.line = ++lines;
		if (hash)
			*hash = '\0';
		snprintf(text, sizeof(text), "%.*s", (int)strcspn(line, "\r\n"), line);
		ntok = tokenize(line, tok, 48);
		if (!ntok)
			continue;
		run_lines++;
		if (recording && is_expectation(tok, ntok))
			continue;
		if (verbose)
			fprintf(stderr, "%s:%d: %s\n", path, r.line, tok[0]);
		if (is_setup(tok[0])) {
			if (!strcmp(tok[0], "qp"))
				qp_setup_line(&r, tok, &ntok);
			if (!r.failures)
				setup_line(&r, tok, ntok);
		} else {
			if (!r.connected && !connect_fixture(&r))
				break;
			if (!strcmp(tok[0], "<"))
				peer_inject(&r, tok + 1, ntok - 1);
			else if (!strcmp(tok[0], ">"))
				peer_expect(&r, tok + 1, ntok - 1);
			else if (remote_mode && !strcmp(tok[0], "counter"))
				skipped_counters++;   /* xroce's engine counters: rxe has none of them */
			else if (remote_mode || !ext_action(&r, tok, ntok))
				r.ops->action(&r, tok, ntok);
			if (recording && !r.failures && !is_burst(tok, ntok))
				record_step(&r, text);
		}
		if (r.failures)
			break;   /* later lines depend on this one */
	}
	/* A directory or an unreadable file read as "no lines" and passed. */
	if (ferror(f)) {
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
		r.failures++;
	} else if (!run_lines && !r.failures) {
		/* Only comments (or nothing, as /dev/null): it would pass having
		 * checked nothing, which is what a truncated or wrong file looks like. */
		fprintf(stderr, "%s: no lines to run: an empty script checks nothing\n", path);
		r.failures++;
	}
	fclose(f);
	if (!r.failures) {
		r.line = lines;
		if (!r.connected)
			connect_fixture(&r);
		r.ops->await(&r, false);   /* local: settle; rxe: a guard time */
		if (recording)
			record_end(&r);
		if (held_count(&r)) {
			char d[256];
			held_describe(r.held[r.held_head].data, r.held[r.held_head].len, d, sizeof(d));
			fail(&r, "end of script, but %s sent %u more packet(s); first: %s", r.ops->name, held_count(&r), d);
		}
		const char *bad = NULL;
		if (!r.ops->guards_ok(&r, &bad))
			fail(&r, "guard bytes of region %s overwritten", bad ? bad : "?");
	}
	r.ops->close(&r);
	if (skipped_counters)
		printf("%s %s (%d counter line(s) skipped: xroce's counters)\n", r.failures ? "FAIL" : "ok  ", path,
		       skipped_counters);
	else
		printf("%s %s\n", r.failures ? "FAIL" : "ok  ", path);
	return r.failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int bad = 0, n = 0, na = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = true;
			continue;
		}
		if (!strcmp(argv[i], "--record")) {
			recording = true;
			continue;
		}
		if (!strcmp(argv[i], "--rxe") && i + 2 < argc) {   /* --rxe AGENT_IP:PORT HOST_IP */
			remote_mode = true;
			rxe_agent = argv[++i];
			rxe_host = argv[++i];
			continue;
		}
		int rc = run_script(argv[i]);
		if (rc < 0) {
			na++;
			continue;
		}
		bad += rc;
		n++;
	}
	if (!n && !na) {
		fprintf(stderr, "usage: %s [-v] [--record] [--rxe AGENT_IP:PORT HOST_IP] SCRIPT...\n", argv[0]);
		return 2;
	}
	if (remote_mode)
		printf("%d of %d scripts passed on %s; %d not applicable\n", n - bad, n, dut_rxe.name, na);
	else
		printf("%d of %d scripts passed\n", n - bad, n);
	return bad ? 1 : 0;
}
