/* SPDX-License-Identifier: MIT */
/*
 * The packet-script runner's shared state: one device under test and RC QP
 * on one end of a link, the script playing the peer on the other end. The
 * device is an interface (struct dut_ops) with two implementations: a local
 * xroce device on an in-memory link with a clock the script moves by hand
 * (dut.c), and Linux rxe in the interop VM driven through a verbs agent
 * over TCP, reached over xroce's UDP link in real time (dut_rxe.c).
 */
#ifndef XR_CONF_SCRIPT_H
#define XR_CONF_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xroce/verbs.h"

#define MAX_REGIONS 12
#define MAX_HELD    256
#define GUARD_LEN   64
#define GUARD_VAL   0xE7

/* A memory region the script names: registered, with guard bytes. */
struct region {
	char name[16];
	uint8_t *alloc;              /* guard | mem | guard */
	uint8_t *mem;
	size_t len;
	int access;
	bool other_pd;
	struct xr_mr *mr;            /* NULL once deregistered */
	struct xr_mw *mw;            /* a memory window (alloc_mw; mem is a dummy) */
	uint32_t lkey, rkey;         /* kept after deregistration, for stale-key tests */
	uint32_t old_lkey, old_rkey; /* the keys before the last reg_mr (0: none) */
	uint64_t rva;                /* remote device: the region's address there */
};

struct qp_opts {
	enum xr_mtu mtu;
	uint32_t rq_psn, sq_psn;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
	int access;
	unsigned sq_depth, rq_depth, scq_depth, rcq_depth;
	bool sig_all;
	bool retry7_forever;         /* CTRL.retry7_forever: retry_cnt 7 retries forever, as rxe */
	uint8_t type;                /* XR_QPT_RC, _UC or _UD */
	uint32_t qkey;               /* UD: the QP's Q_Key (and the peer's default DETH Q_Key) */
};

struct held {                    /* a frame xroce sent, parsed, not yet matched */
	uint8_t data[XR_MAX_FRAME];
	uint16_t len;
};

struct run;
struct cqe_got;

/* The device under test. */
struct dut_ops {
	const char *name;
	bool (*open)(struct run *r);           /* the fixture's PDs and default regions */
	void (*close)(struct run *r);
	bool (*connect)(struct run *r);        /* CQs and QP, brought to RTS */
	bool (*action)(struct run *r, char **tok, int ntok);   /* setup, verbs and expectations */
	uint32_t (*epsn)(struct run *r);       /* the responder's expected PSN now */
	uint32_t (*qpn)(struct run *r);
	uint64_t (*va)(struct run *r, const struct region *g);
	void (*settle)(struct run *r);         /* let the device act; collect what it sent */
	void (*await)(struct run *r, bool want_packet);   /* before a `>` line */
	bool (*guards_ok)(struct run *r, const char **bad);   /* every region's guard bytes */
	/* record mode (record.c) */
	bool (*poll)(struct run *r, bool send, struct cqe_got *g);   /* one completion; false: none */
	int (*qp_state)(struct run *r);                              /* -1 if it cannot be read */
	bool (*region_read)(struct run *r, const struct region *g, uint8_t *buf);   /* g->len bytes */
};
extern const struct dut_ops dut_local, dut_rxe;
/* dut_rxe.c: where the agent is; the host's address (the peer's UDP link). */
extern const char *rxe_agent, *rxe_host;

struct run {
	const char *file;
	int line;
	int failures;

	struct xr_link *dut_link, *peer_link;
	struct xr_context *dev;
	struct xr_engine *eng;
	struct xr_pd *pd, *pd2;
	struct xr_cq *scq, *rcq;
	struct xr_qp *qp;
	struct xr_ah *ah;            /* UD: the address of P, made at the first UD send */
	xr_gid groups[8];            /* attached (attach/detach lines): left at the end */
	int ngroups;
	struct qp_opts o;
	bool connected;
	uint32_t peer_qpn;
	uint64_t now_ns;

	struct region reg[MAX_REGIONS];
	int nreg;
	size_t rbuf_next;            /* receive buffers are carved from "rbuf" */
	uint64_t next_wr_id;

	struct held *held;
	unsigned nheld, held_head;
	bool hold;                   /* the peer stops reading: the link fills */
	long hold_room;              /* with hold: frames N's link still takes (-1: until full) */
	bool discard;                /* frames read are dropped (release) */

	const struct dut_ops *ops;
	uint32_t dut_ip, peer_ip;    /* IPv4, host order: N's and P's addresses */
	bool remote;                 /* the device is rxe (dut_rxe.c) */
	int stop_state;              /* `qp state=INIT|RTR`: where the setup leaves the QP (RTS) */
	int rec_state;               /* record mode: the QP state last printed */
	void *priv;                  /* the backend's own state */
};

/* script.c: values, byte patterns, diagnostics. */
void fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct region *region_by_name(struct run *r, const char *name);
/* Evaluates `a+b-c` over numbers and symbols; false (and a failure) on error. */
bool eval(struct run *r, const char *expr, uint64_t *out);
/* Fills buf with a byte spec: hex:0102.., fill:0xAB, pat:N (byte i = N+i), zero. */
bool bytes_fill(struct run *r, const char *spec, uint8_t *buf, size_t len);
uint32_t qp_epsn(struct run *r);
bool local_guards_ok(struct run *r, const char **bad);
/* Moves the local QP from its state up to `to` (INIT, RTR or RTS) with the
 * fixture's attributes; false (and a failure) when a step is refused. */
bool qp_bring_up(struct run *r, int to);
/* Optional trailing "=> ERRNAME": the return code an action must give
 * (0 without one, -2 for an unknown name); drops it from the tokens. */
int expected_rc(char **tok, int *ntok);
/* Access flags: "LW,RW,RR,RA,MW,ZB", "none" or a number. */
bool parse_access(struct run *r, const char *s, int *out);
/* Splits "key=value" into its parts (in place); false without '='. */
bool split_kv(char *tok, char **key, char **val);

/* actions.c: the action lines both devices serve, parsed once; each parse_*
 * reports a bad line through fail() and returns false (or NULL, or -1). */
typedef bool (*add_region_fn)(struct run *r, const char *name, size_t len, int access, bool other_pd);
struct recv_args { struct region *region; uint64_t len, off, id; int want_rc; };
struct modify_args { struct xr_qp_attr a; int mask, want_rc; };
struct mem_args { uint64_t addr, len; bool set; const char *spec; };   /* set: `:=` */
struct mw_args { const char *name; uint64_t type; bool other_pd; };
struct cqe_args { bool send, none; };
struct send_args {               /* a post_send line: one WR, one SGE in src+off */
	int op;                      /* XR_WR_* */
	const char *opname;          /* its name in the line (write, read, ...) */
	struct region *src;
	uint64_t off, va, id, swap, cmp_add;
	uint32_t len, lkey, rkey, imm, inv, qkey, dqpn;
	unsigned flags;              /* XR_SEND_* (ibv_send_flags' values) */
	int num_sge, want_rc;
	bool lkey_set, atomic;
};
struct cqe_got {                 /* a completion, as the device reports it */
	uint64_t wr_id, byte_len, imm, src_qp;
	int status;
	const char *opname;          /* its name in a script; NULL if it has none */
	const char *opcode_text, *flags_text;   /* for messages */
	bool with_imm, with_inv;
	bool lax_status;             /* unknown status names just do not match */
};
int state_by_name(const char *s);
const char *state_name(int s);   /* "?" out of range */
const char *wc_opcode_name(int op);
/* split_kv(), or a failure "'TOK' is not key=value". */
bool kv(struct run *r, char *tok, char **key, char **val);
/* The fixture's QP options, peer QPN and first wr_id; its three regions. */
void fixture_defaults(struct run *r);
struct region *new_region(struct run *r, const char *name, size_t len, int access, bool other_pd);
bool default_regions(struct run *r, add_region_fn add);
void qp_line(struct run *r, char **tok, int ntok);
/* A `mr NAME [len=N] [access=..] [pd=other]` line; add() registers it. */
void mr_line(struct run *r, char **tok, int ntok, add_region_fn add);
bool parse_alloc_mw(struct run *r, char **tok, int ntok, struct mw_args *m);
bool parse_recv(struct run *r, char **tok, int ntok, struct recv_args *a);
bool parse_send(struct run *r, char **tok, int ntok, struct send_args *a);
bool parse_modify(struct run *r, char **tok, int ntok, struct modify_args *m);
struct region *parse_dereg(struct run *r, char **tok, int ntok, int *want_rc);
int parse_state(struct run *r, char **tok, int ntok);
bool parse_mem(struct run *r, char **tok, int ntok, struct mem_args *m);
struct region *region_at(struct run *r, uint64_t addr, uint64_t len);
bool parse_cqe(struct run *r, char **tok, int ntok, struct cqe_args *c);
void cqe_check(struct run *r, char **tok, int ntok, const struct cqe_got *g);

/* peer.c: what the peer sends and what it expects. */
void peer_inject(struct run *r, char **tok, int ntok);
void peer_expect(struct run *r, char **tok, int ntok);
/* Runs the engine until it is idle and collects what it sent. */
void settle(struct run *r);
void settle_local(struct run *r);
/* Moves what the peer's link received into the held queue. */
void collect(struct run *r);
void drain_held(struct run *r);
unsigned held_count(const struct run *r);
void held_describe(const uint8_t *data, uint16_t len, char *buf, size_t n);

/* actions.c: a completion status as scripts name it (SUCCESS, ...), or "?". */
const char *wc_status_name(int status);

/* record.c: --record prints what the device did instead of checking. */
extern bool recording;
void record_begin(struct run *r, const char *path);
void record_step(struct run *r, const char *line);
void record_end(struct run *r);
void record_rc(struct run *r, const char *what, int rc);
const char *peer_opname(uint8_t op);
bool local_poll(struct run *r, bool send, struct cqe_got *g);
int local_qp_state(struct run *r);
bool local_region_read(struct run *r, const struct region *g, uint8_t *buf);

/* dut.c (the local xroce device): setup and actions. */
bool dut_open(struct run *r);
void dut_close(struct run *r);
bool dut_connect(struct run *r);
bool dut_action(struct run *r, char **tok, int ntok);

#endif
