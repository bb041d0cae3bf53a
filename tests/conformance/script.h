/* SPDX-License-Identifier: MIT */
/*
 * The packet-script runner's shared state: one real xroce device and RC QP
 * on one end of an in-memory link, the script playing the peer on the
 * other end, and a clock the script moves by hand.
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
};

struct qp_opts {
	enum xr_mtu mtu;
	uint32_t rq_psn, sq_psn;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
	int access;
	unsigned sq_depth, rq_depth, scq_depth, rcq_depth;
	bool sig_all;
};

struct held {                    /* a frame xroce sent, parsed, not yet matched */
	uint8_t data[XR_MAX_FRAME];
	uint16_t len;
};

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
};

/* script.c: values, byte patterns, diagnostics. */
void fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct region *region_by_name(struct run *r, const char *name);
/* Evaluates `a+b-c` over numbers and symbols; false (and a failure) on error. */
bool eval(struct run *r, const char *expr, uint64_t *out);
/* Fills buf with a byte spec: hex:0102.., fill:0xAB, pat:N (byte i = N+i), zero. */
bool bytes_fill(struct run *r, const char *spec, uint8_t *buf, size_t len);
uint32_t qp_epsn(struct run *r);
/* Splits "key=value" into its parts (in place); false without '='. */
bool split_kv(char *tok, char **key, char **val);

/* peer.c: what the peer sends and what it expects. */
void peer_inject(struct run *r, char **tok, int ntok);
void peer_expect(struct run *r, char **tok, int ntok);
/* Runs the engine until it is idle and collects what it sent. */
void settle(struct run *r);
void drain_held(struct run *r);
unsigned held_count(const struct run *r);
void held_describe(const uint8_t *data, uint16_t len, char *buf, size_t n);

/* verbs.c (the script's side of the device): setup and actions. */
bool dut_open(struct run *r);
void dut_close(struct run *r);
bool dut_connect(struct run *r);
bool dut_action(struct run *r, char **tok, int ntok);

#endif
