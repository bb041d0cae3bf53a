/* SPDX-License-Identifier: MIT */
/*
 * The engine's internal state: the register file's storage, the QP, MR and
 * CQ tables, counters and the event log. Every other engine file includes
 * this; nothing outside src/nic does.
 */
#ifndef XR_NIC_ENGINE_H
#define XR_NIC_ENGINE_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mcast.h"
#include "regmap_internal.h"
#include "xroce/engine.h"
#include "xroce/link.h"
#include "xroce/ring.h"
#include "xroce/wire.h"

#define XR_PLAIN_REG_WORDS (0x400 / 4)

/* Per send-queue slot, engine-private (the NIC's SRAM): where a WQE's
 * packets sit in PSN space once it has been started. */
struct xr_swqe_meta {
	uint32_t first_psn, last_psn;
	uint32_t read_done;          /* READ: response bytes already placed */
	uint32_t length;             /* the message's, as checked at start */
	uint8_t  opcode;             /* enum xr_wr_opcode, copied at start */
	uint8_t  flags;              /* enum xr_send_flags */
	uint8_t  status;             /* a local error found while sending it */
	bool     started;
	/* The QP's newest gather frame when this WQE's last packet was
	 * built (NULL: none), and its sequence (xr_dp_gather_check). */
	uint32_t gather_seq;
	struct xr_frame *gather_f;
};

/* Requester and completer state of a QP (req.c, comp.c). The WQE copy
 * and the per-slot metadata live in the QP's active block (struct
 * xr_qp_act): only a QP with WQEs started has them. */
struct xr_req {
	uint16_t head;               /* next WQE to start (free-running, as the doorbell) */
	uint16_t tail;               /* oldest WQE not completed */
	uint16_t cur;                /* the WQE being segmented (act->cur_wqe) */
	uint16_t started_end;        /* one past the newest WQE ever started */
	uint16_t rd_atomic_out;      /* READ/atomic requests in flight */
	uint16_t rd_atomic_started;  /* READ/atomic WQEs in [tail, started_end) */
	uint16_t pi_ok;              /* the last send doorbell found inside the ring */
	uint16_t pi_refused;         /* the one found outside it, while refused, */
	uint16_t rings_refused;      /* ...and the doorbell count it was read with */
	bool     refused;
	bool     cur_active;         /* a WQE is being segmented */
	bool     drained_logged;     /* SQD: the SQ_DRAINED event is out */
	bool     retx_pending;       /* go back to retx_psn before sending more */
	bool     retried;            /* a retry from retried_psn is under way: */
	uint8_t  retry_left, rnr_left;
	uint32_t retried_psn;        /* ...later signs of the same gap do not retry again */
	uint32_t cur_offset;         /* bytes of the current WQE already sent */
	uint32_t cur_psn;            /* PSN of its next packet */
	uint32_t una_psn;            /* oldest PSN not acknowledged */
	uint32_t sent_end;           /* one past the last PSN a response may carry */
	uint32_t since_ackreq;       /* packets sent since the last AckReq */
	uint32_t retx_psn;
	uint64_t ackreq_ns;          /* when the last AckReq left */
	uint64_t timer_due_ns;       /* local ACK timer (0: stopped) */
	uint64_t rnr_due_ns;         /* RNR wait (0: none) */
};

/* A responder resource: a READ or atomic kept for replay (resp.c). */
struct xr_rd_res {
	uint8_t  kind;               /* 0 free, 1 READ, 2 atomic */
	bool     queued;             /* its responses wait in the response queue */
	bool     replay;             /* ...for a duplicate request (already answered once) */
	bool     redo;               /* a duplicate's replay follows the stream (below; read
	                              * only while queued, cleared by queue_res) */
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey, len;
	uint64_t atomic_orig;
	uint32_t msn;
	/* The response stream being sent: the original request, or a retried
	 * one that asks for its tail. */
	uint32_t stream_psn, stream_len, next_psn;
	uint64_t stream_va;
	/* redo: a duplicate for responses already sent, or beyond a shorter
	 * stream, come while the stream was being sent (resp.c). */
	uint32_t redo_psn, redo_len;
	uint64_t redo_va;
};

/* What the responder owes the requester, in PSN order: ACKs and NAKs wait
 * behind the READ responses and atomic ACKs of earlier requests. */
enum xr_resp_item_kind { XR_ITEM_ACK, XR_ITEM_RES, XR_ITEM_CANCELLED };
struct xr_resp_item {
	uint8_t  kind;               /* enum xr_resp_item_kind */
	uint8_t  syndrome;           /* ACK: the AETH syndrome */
	bool     fatal;              /* a NAK that leaves even from ERR */
	uint8_t  res;                /* RES: the resource index */
	uint32_t psn, msn;
};
#define XR_RESP_QUEUE 48
#define XR_MAX_DEST_RD_ATOMIC 16   /* responder resources per QP (the verbs' limit) */

enum xr_resp_msg { XR_RESP_IDLE, XR_RESP_IN_SEND, XR_RESP_IN_WRITE };

/* Responder state of a QP (resp.c, resp_tx.c, uc.c, ud.c). The receive
 * WQE being filled, the response queue and the held requests live in the
 * QP's active block; the READ/atomic resources are allocated at the first
 * READ or atomic and kept (they answer duplicates long after). */
struct xr_resp {
	uint8_t  in_msg;             /* enum xr_resp_msg: a multi-packet SEND or WRITE under way */
	bool     have_rwqe;          /* act->rwqe holds the receive WQE being filled */
	bool     last_wqe_logged;    /* SRQ: qp_last_wqe raised on ERR */
	bool     nak_seq_sent;       /* one PSN-sequence NAK per gap */
	bool     acked_any;          /* ack_psn is valid */
	uint8_t  q_head, q_len;      /* the response queue (act->q) */
	uint8_t  held_head, held_len;/* requests held (act->held) */
	uint16_t rwqe_index;         /* its slot (in the RQ, or in the SRQ) */
	uint32_t recv_offset;        /* bytes placed in it */
	uint32_t write_rkey, write_left, write_total;
	uint32_t ack_psn;            /* newest SEND/WRITE packet executed */
	uint32_t nres, res_cap, res_next;
	uint64_t write_va;
	struct xr_rd_res *res;       /* res_cap entries allocated, nres (a power of 2) in use */
};

/* Congestion control of a QP (cc.c): the notification point's CNP
 * pacing, DCQCN's reaction point, and the pacer that enforces the rate. */
struct xr_cc {
	/* Notification point. */
	uint64_t cnp_last_ns;        /* when the last CNP left (0: never) */
	uint32_t ce_rcvd, cnp_sent, cnp_rcvd;
	bool     cnp_owed;           /* a CE arrived: a CNP waits for the next serve */
	/* Reaction point (rates in kb/s, alpha in 1/2^20). */
	bool     rp_active;          /* cut at least once and not back at line rate */
	/* Pacer. */
	bool     held;               /* counted in pacer_waits for this hold */
	uint32_t alpha;
	uint32_t t_stage, bc_stage;
	uint64_t rc_kbps, rt_kbps;
	uint64_t alpha_ns;           /* the alpha decay timer's last restart */
	uint64_t inc_due_ns;         /* the rate increase timer */
	uint64_t bytes;              /* sent since the byte counter last fired */
	uint64_t pace_ns;            /* the next send may start then */
	/* PFC (pfc.c): the QP's priority has been paused since (0: not). */
	uint64_t pfc_held_ns;
};

/* PFC and PAUSE (pfc.c), engine-wide: what the peer paused (transmit) and
 * what this engine asked its peer to pause (receive). Written only inside
 * a progress pass; PFC_STATUS reads the masks and pause ends atomically. */
#define XR_PFC_PRIOS 8
struct xr_pfc {
	uint64_t until[XR_PFC_PRIOS];      /* a paused priority's pause ends (engine clock) */
	uint64_t since[XR_PFC_PRIOS];      /* its pause began, without a break since (watchdog) */
	uint64_t paused_ns[XR_PFC_PRIOS];  /* time paused, pauses that ended */
	uint64_t counted_us[XR_PFC_PRIOS]; /* paused time already in PFC_PAUSED_US_PRIOn */
	uint64_t last_frame[XR_PFC_PRIOS]; /* stormed: the last PFC frame for it (restoration) */
	uint8_t  paused;                   /* priorities paused */
	uint8_t  stormed;                  /* released by the watchdog: frames for them ignored */
	uint8_t  xoff_out;                 /* an XOFF of ours is out for them, no XON yet */
	uint64_t xoff_ns;                  /* our last XOFF left (refresh) */
};

/* What only a QP with work in flight needs (qp_mem.c: xr_qp_act_get and
 * xr_qp_act_put): taken when it starts a WQE or a request arrives, given
 * back when the QP is idle again, so an idle QP is struct xr_qp alone. */
struct xr_resp_held;
/* A connection's headers, built once (tx_hdr.c): an RC or UC QP's
 * addresses do not change while it is connected. Stale once the engine's
 * tx_gen has moved (a register or a table written since) or the block
 * came to another QP. */
struct xr_tx_proto {
	const struct xr_qp *qp;              /* whose, when built */
	uint32_t gen;                        /* e->tx_gen then */
	int err;                             /* the fields were refused: no packet is built */
	struct xr_pkt pkt;                   /* a packet with the addresses filled in */
	struct xr_hdr_tmpl tmpl;             /* the same as Ethernet, IP and UDP bytes */
};

/* Room for a receive WQE copied from the largest slot (xr_rwqe_copy). */
union xr_rwqe_copy {
	struct xr_hw_rwqe w;
	uint8_t slot[XR_RWQE_MAX_SIZE];
};

struct xr_qp_act {
	union {                              /* requester: the WQE being segmented, */
		struct xr_hw_wqe cur_wqe;    /* ...copied as far as it is used (xr_sq_copy) */
		uint8_t cur_wqe_slot[XR_WQE_MAX_SIZE];
	};
	union {                              /* responder: the receive WQE being filled */
		struct xr_hw_rwqe rwqe;
		union xr_rwqe_copy rwqe_slot;
	};
	struct xr_resp_item q[XR_RESP_QUEUE];/* responder: what it owes, in PSN order */
	struct xr_resp_held *held;           /* requests held behind READ responses (resp_tx.c) */
	struct xr_qp_act *next_spare;        /* kept for reuse (qp.c) */
	uint32_t meta_slots;                 /* 1 << the SQ's log size */
	uint32_t gather_seq;                 /* the newest gather frame of the QP's, */
	struct xr_frame *gather_f;           /* ...and its sequence (req.c) */
	struct xr_tx_proto proto;
	struct xr_swqe_meta meta[];          /* one per SQ slot; zero outside [tail, started_end) */
};

/*
 * A QP's engine state. Slots live in pages of XR_QP_PAGE (the table,
 * qp.c); a slot once used stays allocated, so the data path never sees
 * freed memory. Everything an idle QP keeps is here: the bulky parts of
 * an active one hang off act.
 */
struct xr_qp {
	pthread_mutex_t lock;        /* held by the data path per packet and by commit */
	uint32_t qpn;                /* 0: a slot never used */
	/* Doorbell values: WQEs posted by the host, stored without the lock
	 * (xr_doorbell): read them with xr_qp_sq_pi and xr_qp_rq_pi. */
	uint16_t sq_pi, rq_pi;
	uint16_t sq_rings;           /* send doorbells rung (mod 2^16): a value refused, rung again, is read afresh */
	/* Receive WQEs of the QP's own ring taken and completed (free-running;
	 * written under the lock, atomically: the receive doorbell reads them
	 * without it). */
	uint16_t rq_head, rq_ci;
	bool in_use;
	bool busy;                   /* on the engine's busy list */
	bool parked;                 /* on the engine's wait list (datapath.c)... */
	bool waiting;                /* ...and not served since it was put there */
	uint8_t last_state;          /* state the data path last acted on */
	struct xr_qp_act *act;       /* NULL while idle */
	struct xr_qp_ctx ctx;        /* the committed context, PSNs kept current by the engine */
	struct xr_req req;
	struct xr_resp resp;
	struct xr_cc cc;
};
/* An idle QP (RESET, INIT, or connected with nothing in flight) holds its
 * slot and nothing else: the budget is 512 bytes (issue "Scale"). */
#define XR_QP_IDLE_BYTES_MAX 512
_Static_assert(sizeof(struct xr_qp) <= XR_QP_IDLE_BYTES_MAX, "an idle QP outgrew its budget");

/* The QP table: pages of slots, allocated when a QPN in them is first used. */
#define XR_QP_PAGE_SHIFT 10
#define XR_QP_PAGE (1u << XR_QP_PAGE_SHIFT)
#define XR_QP_PAGES (XR_MAX_QP / XR_QP_PAGE)

struct xr_mr {
	bool in_use;                 /* registered (keys valid) */
	struct xr_mr_ctx ctx;
};

struct xr_cq {
	bool in_use;
	struct xr_cq_ctx ctx;
	uint32_t ci;                 /* consumer index from the doorbell */
	pthread_mutex_t lock;        /* CQEs come from the data path and from flushes */
};

/* A shared receive queue (srq.c): WQEs are copied into the QP that takes
 * them, so its ring slots are free again at once. */
struct xr_srq {
	bool in_use;
	struct xr_srq_ctx ctx;
	uint16_t pi;                 /* doorbell: WQEs posted */
	uint16_t head;               /* WQEs taken */
	pthread_mutex_t lock;        /* taken under a QP's lock; never the other way */
};

struct xr_evlog_entry {
	uint64_t ts_ns;
	uint32_t qpn, arg0, arg1;
	uint8_t type;
};

/* A slot of the event log's ring, written without a lock (every posted
 * and completed WQE logs an event): tag is 2*seq+1 while event seq is
 * being written, 2*seq+2 once it is whole, so a reader can tell a torn or
 * overwritten slot from the event it asked for. */
struct xr_evlog_slot {
	_Atomic uint64_t tag;
	struct xr_evlog_entry ev;    /* fields written and read with relaxed atomics */
};

struct xr_engine {
	/* One register access at a time, as a single AXI-Lite master
	 * (doorbells excepted: they take only their queue's lock). */
	pthread_mutex_t reg_lock;
	uint32_t regs[XR_PLAIN_REG_WORDS];     /* plain registers and shadow windows */
	uint32_t writable_mask[XR_PLAIN_REG_WORDS];
	uint32_t latch_hi, latch_index;        /* counter high-word latch */
	bool latch_valid;
	/* The event EVLOG_SEL selected, as it was when selected: its fields
	 * read one by one come from one snapshot (reg_lock). */
	struct xr_evlog_entry evlog_latched;
	bool evlog_latched_valid;
	atomic_bool link_up;

	_Atomic uint64_t counters[XR_CNT_COUNT];

	struct xr_qp *qp_pages[XR_QP_PAGES];   /* XR_QP_PAGE slots each, allocated on first use */
	struct {
		_Atomic uint64_t pages;        /* QP table pages allocated */
		_Atomic uint64_t qps;          /* QPs in use */
		_Atomic uint64_t act, act_bytes;   /* active blocks held, their bytes */
		_Atomic uint64_t res_bytes;    /* READ/atomic resources allocated */
		/* Blocks idle QPs gave back, kept for the next to start work,
		 * per SQ log size (passes only). */
		struct xr_qp_act *spare[16];
		_Atomic uint64_t spare_bytes;
	} qp_mem;
	struct xr_mr *mrs;                     /* XR_MAX_MR entries */
	uint8_t *mr_variant;                   /* last key variant per MR index */
	struct xr_cq *cqs;                     /* XR_MAX_CQ entries */
	struct xr_srq *srqs;                   /* XR_MAX_SRQ entries */
	struct xr_mcg_table mcg;               /* multicast groups (mcast.h) */

	struct xr_evlog_slot evlog[XR_EVLOG_ENTRIES];
	_Atomic uint64_t evlog_seq;            /* events ever logged (or being logged) */
	pthread_mutex_t evlog_lock;            /* writers, one at a time: a writer lapped in the ring
						* while preempted would put its older event over a newer one */
	uint64_t t0_ns;
	uint64_t (*clock_fn)(void *ctx);       /* the timer clock (NULL: monotonic) */
	void *clock_ctx;

	struct {
		pthread_t thread;
		int listen_fd, stop_pipe[2];
		bool running;
		char path[108];
	} debug;

	/* Data path (datapath.c). */
	struct xr_link *link;
	struct xr_tx *txq;                     /* frames built, not yet taken by the link */
	struct xr_icrc_defer *rx_defer;        /* the received packet whose ICRC waits (pass only) */
	uint32_t gather_seq;         /* the last gather frame's sequence (req.c) */
	/* Moves with every write of a register or a table (regfile.c): the
	 * connections' header templates built before are stale (tx_hdr.c). */
	_Atomic uint32_t tx_gen;
	pthread_mutex_t dp_mutex;              /* one progress pass at a time; soft reset and quiesce take it too */
	pthread_mutex_t busy_lock;
	struct xr_qp **busy;                   /* QPs with work, timers or flushes: a ring, oldest first */
	uint32_t busy_head, nbusy, busy_cap;   /* busy_cap: a power of two */
	int doorbell_efd;                      /* wakes the progress thread */
	_Atomic uint64_t cc_due_ns;            /* earliest pacer/DCQCN/PFC time of a busy QP */
	/* QPs with work that only a frame, a doorbell, a commit or one of
	 * their timers can move (waiting for an ACK, paced): off the busy
	 * list, looked at again when the earliest timer is due. Passes only. */
	struct xr_qp **wait;
	uint32_t nwait, wait_cap;
	uint32_t nwaiting;                     /* of them, still waiting (read by the sleeping thread) */
	uint64_t wait_due_ns;
	uint32_t idle_polls;                   /* idle passes of callers (the clock is read in one of eight) */
	uint32_t rx_undrained;                 /* frames taken since the receive ring last ran short (passes only) */
	struct xr_pfc pfc;                     /* PFC and PAUSE (pfc.c) */
	void (*irq)(void *ctx, uint32_t cqn);  /* completion interrupt (MSI-X) */
	void *irq_ctx;
	void (*event_irq)(void *ctx, uint32_t type, uint32_t qpn);  /* event queue interrupt */
	void *event_irq_ctx;
	struct {
		pthread_t thread;
		atomic_bool run;
		atomic_bool sleeping;          /* wake it through doorbell_efd */
		atomic_bool untimed;           /* ...and asleep with no timeout (no QP was busy) */
		int tick_fd;                   /* timerfd: wakes an untimed sleeper for new timers */
		atomic_bool tick_armed;
		bool started;
		_Atomic uint64_t assist_ns;    /* the lease: last stamp of a polling caller (xr_engine_assist) or streaming poster; 0: none */
		atomic_bool standby;           /* standing by while a caller drives (stand_by) */
		atomic_bool paused;            /* the caller holding the lease is away: frames are the thread's (assist_pause) */
		_Atomic uint32_t pauses;       /* pauses taken: a lease paused since is not one renewed */
		atomic_bool standby_deaf;      /* standing by without the link's standby fd */
		_Atomic uint64_t standby_until;   /* when the thread standing by looks next */
		uint64_t link_arms;            /* armings of the link so far (under dp_mutex) */
		uint64_t paused_arm;           /* the pause's, withdrawn only if still the last */
	} progress;
};

static inline void xr_count(struct xr_engine *e, enum xr_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&e->counters[c], n, memory_order_relaxed);
}

/* Is this thread running e's pass (holding dp_mutex in xr_dp_pass)? */
bool xr_dp_in_pass(const struct xr_engine *e);

/* A counter written only by the pass, per packet or per WQE: a plain add.
 * A locked add drains the store buffer, and amid the stores that build a
 * frame it waited for them: half of xr_req_tx's own time at 64 bytes sat
 * on the one per WQE. Readers still see whole values (aligned 64-bit
 * stores); the counters' clear (CNT_CTRL, soft reset) takes dp_mutex, so
 * it is never lost to an add that read the value before it. */
static inline void xr_count_pass(struct xr_engine *e, enum xr_counter c, uint64_t n)
{
	assert(xr_dp_in_pass(e));
	atomic_store_explicit(&e->counters[c], atomic_load_explicit(&e->counters[c], memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint32_t xr_reg_get(const struct xr_engine *e, uint32_t off)
{
	return __atomic_load_n(&e->regs[off / 4], __ATOMIC_RELAXED);
}

/* xr_reg_get as the callback the table windows' decoders take (the
 * shadow registers of the QP, MR, CQ and SRQ windows). */
static inline uint32_t xr_reg_shadow_get(void *engine, uint32_t off)
{
	return xr_reg_get(engine, off);
}

static inline void xr_reg_set(struct xr_engine *e, uint32_t off, uint32_t v)
{
	__atomic_store_n(&e->regs[off / 4], v, __ATOMIC_RELAXED);
}

/* The engine's clock: xr_now_ns() unless a test set its own. */
static inline uint64_t xr_engine_now(const struct xr_engine *e)
{
	return e->clock_fn ? e->clock_fn(e->clock_ctx) : xr_now_ns();
}
void xr_engine_soft_reset(struct xr_engine *e);
void xr_evlog_read(struct xr_engine *e, uint64_t seq, struct xr_evlog_entry *out, bool *valid);
uint64_t xr_evlog_count(struct xr_engine *e);
void xr_evlog_add(struct xr_engine *e, enum xr_event_type t, uint32_t qpn, uint32_t a0, uint32_t a1);
/* Interrupts (irq.c): raised at once, or, inside a register access or a
 * pass (between xr_irq_hold and xr_irq_release), once the thread has left
 * the outermost of them. */
void xr_irq_event(struct xr_engine *e, uint32_t type, uint32_t qpn);
void xr_irq_cq(struct xr_engine *e, uint32_t cqn);
extern _Thread_local unsigned xr_irq_depth, xr_irq_queued;
void xr_irq_deliver(void);
static inline void xr_irq_hold(void)
{
	xr_irq_depth++;
}
static inline void xr_irq_release(void)
{
	if (!--xr_irq_depth && xr_irq_queued)
		xr_irq_deliver();
}

/* Table commands (qp.c, mr.c, cq.c): return an enum xr_cmd_status. */
enum xr_cmd_status xr_qp_cmd(struct xr_engine *e, uint32_t cmd);
enum xr_cmd_status xr_mr_cmd(struct xr_engine *e, uint32_t cmd);
enum xr_cmd_status xr_cq_cmd(struct xr_engine *e, uint32_t cmd);
enum xr_cmd_status xr_srq_cmd(struct xr_engine *e, uint32_t cmd);
/* SRQ_DB written (regfile.c). */
enum xr_axi_resp xr_srq_doorbell(struct xr_engine *e, uint32_t val);
void xr_srq_table_reset(struct xr_engine *e);
/* A QP attaches to (or leaves) an SRQ: false when it does not exist. */
bool xr_srq_attach(struct xr_engine *e, uint32_t srqn);
void xr_srq_detach(struct xr_engine *e, uint32_t srqn);

/* Taking a receive WQE from an SRQ for qp (caller holds qp->lock). A WQE
 * shorter than min_len stays posted (UD). The limit event fires here. */
enum xr_srq_take { XR_SRQ_TAKEN, XR_SRQ_EMPTY, XR_SRQ_TOO_SMALL };
enum xr_srq_take xr_srq_take(struct xr_engine *e, struct xr_qp *qp, uint32_t min_len,
			     struct xr_hw_rwqe *out, uint16_t *index);
/* A receive WQE in a slot of XR_RWQE_SIZE << blocks bytes, copied: its
 * header and its SGEs, no more than the slot holds (a bad WQE's length
 * check then fails). `to` has room for the largest slot (union
 * xr_rwqe_copy). */
void xr_rwqe_copy(struct xr_hw_rwqe *to, const struct xr_hw_rwqe *w, unsigned blocks);
void xr_tables_reset(struct xr_engine *e);
void xr_tables_free(struct xr_engine *e);
/* A QP not in RESET still completes into CQ cqn (its DESTROY is refused). */
bool xr_qp_any_on_cq(struct xr_engine *e, uint32_t cqn);

/* The slot of QP qpn, in use or not; NULL when its page was never
 * allocated. Lock-free. */
static inline struct xr_qp *xr_qp_slot(const struct xr_engine *e, uint32_t qpn)
{
	struct xr_qp *page = __atomic_load_n(&e->qp_pages[qpn >> XR_QP_PAGE_SHIFT], __ATOMIC_ACQUIRE);
	return page ? &page[qpn & (XR_QP_PAGE - 1)] : NULL;
}
/* The QP with this number if it exists (in_use), else NULL. Lock-free. */
struct xr_qp *xr_qp_lookup(struct xr_engine *e, uint32_t qpn);
/* A consistent copy of a QP's context, as the data path sees it: 0 or -ENOENT. */
int xr_qp_snapshot(struct xr_engine *e, uint32_t qpn, struct xr_qp_ctx *out);
/* The MR a key names if registered and the variant matches, else NULL. */
struct xr_mr *xr_mr_lookup(struct xr_engine *e, uint32_t key);
/* Invalidates a key for LOCAL_INV (remote false) or SEND_WITH_INV (remote
 * true) on QP qpn of PD pd: 0, or -EINVAL when the key names nothing that
 * may be invalidated that way. */
int xr_mr_invalidate_key(struct xr_engine *e, uint32_t key, uint32_t pd, bool remote, uint32_t qpn);
/* BIND_MW on a QP of PD pd: 0, or -EINVAL when the bind is not allowed. */
int xr_mw_bind(struct xr_engine *e, uint32_t pd, uint32_t qpn, const struct xr_hw_wqe *wqe);
/* Returns once no progress pass that may have seen an MR before this call
 * is still running: after it, no packet touches memory through a key that
 * was invalid when it was called. */
void xr_dp_quiesce(struct xr_engine *e);
/* Before the host may reuse memory a gather frame of this engine's may
 * still read (link.h): unsent ones get their payload copied in, the link
 * settles the sent ones. Takes the pass lock unless in the pass; nothing
 * without a gather link. */
void xr_dp_settle(struct xr_engine *e);
/* xr_dp_quiesce, then xr_dp_settle under the same lock: a region that may
 * be freed after the caller returns. */
void xr_dp_quiesce_settle(struct xr_engine *e);
/* A send completes successfully: the gather frame f (sequence seq) and
 * every earlier one of its QP must have been read, as an ACK from a peer
 * that read them proves. A peer acknowledging what it has not read (its
 * PSN ahead of ours) leaves f unread: the engine settles before the host
 * gets the buffer back. */
void xr_dp_gather_check(struct xr_engine *e, const struct xr_frame *f, uint32_t seq);
/* A gather frame's ICRC at the flush: its headers, the payload where it
 * lies, the pad (gather.c). */
void xr_gather_seal(struct xr_frame *f, uint16_t l3_off);
/* A gather frame's RC WRITE payload is checked by the copy that places it
 * (xr_crc32_copy), so the receiver reads it once: what its ICRC check
 * still needs. Every other use of the packet checks it first. */
struct xr_icrc_defer {
	const struct xr_pkt *pkt;   /* the packet whose check waits, or NULL */
	uint32_t reg;               /* the ICRC's CRC after the headers */
	uint8_t pad[3];             /* the pad's bytes, after the payload */
	bool bad;                   /* the check failed: the packet is dropped */
};
/* A received gather frame parsed without its ICRC: the payload is where the
 * frame says it belongs and the ICRC holds; p->payload then points at it.
 * With d, a WRITE payload worth it is left to its copy (d->pkt = p). */
enum xr_parse_err xr_gather_rx_check(const struct xr_frame *f, struct xr_pkt *p, const uint8_t *ext,
				     struct xr_icrc_defer *d);
/* p's deferred check over bytes (its payload, or a copy of it): true when it
 * holds or none waits; false (the packet dropped, counted by the pass) when
 * it failed. Settles the check either way. */
bool xr_icrc_defer_check(struct xr_engine *e, const struct xr_pkt *p, const uint8_t *bytes);
/* The check of p waiting for its copy, or NULL. */
static inline struct xr_icrc_defer *xr_icrc_deferred(const struct xr_engine *e, const struct xr_pkt *p)
{
	return e->rx_defer && e->rx_defer->pkt == p ? e->rx_defer : NULL;
}
/* The same when the copy placed the payload and left crc (seeded with
 * d->reg) after it. */
bool xr_icrc_defer_finish(struct xr_engine *e, struct xr_icrc_defer *d, uint32_t crc);

/* Doorbells (regfile.c routes them here). */
enum xr_axi_resp xr_doorbell(struct xr_engine *e, uint32_t addr, uint32_t val);

/* ---- data path ---- */

/* PSN arithmetic on 24 bits: >0 when a is after b. */
static inline int32_t psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}
static inline uint32_t psn_add(uint32_t p, uint32_t n)
{
	return (p + n) & XR_PSN_MASK;
}
static inline uint32_t mtu_bytes(uint8_t path_mtu)
{
	return 128u << path_mtu;   /* enum 1..5 -> 256..4096 */
}

/* resp.c: responses owed, and dropping them when the QP fails. */
bool xr_resp_has_work(const struct xr_qp *qp);
void xr_resp_flush(struct xr_qp *qp);

/* Puts a QP on the busy list (caller holds qp->lock, or is the send
 * doorbell or a timer scan, which change nothing under it). */
void xr_qp_mark_busy(struct xr_engine *e, struct xr_qp *qp);

#include "ring_index.h"   /* the doorbells' indexes as the engine reads them */

/* qp_mem.c: a QP's active block (caller holds qp->lock). get: true when qp
 * has one, taken now if needed; false when memory ran out (counted:
 * qp_mem_alloc_fail). put: gives it back when nothing in it is in use,
 * as the data path does when the QP leaves the busy list. */
bool xr_qp_act_get(struct xr_engine *e, struct xr_qp *qp);
void xr_qp_act_put(struct xr_engine *e, struct xr_qp *qp);
/* The READ/atomic resources max_dest_rd_atomic asks for, allocated at the
 * first READ or atomic: false when memory ran out (counted). */
bool xr_qp_res_get(struct xr_engine *e, struct xr_qp *qp);
/* Send WQE slot i's metadata (the QP has its active block). */
static inline struct xr_swqe_meta *xr_sq_meta(const struct xr_qp *qp, uint16_t i)
{
	return &qp->act->meta[i & (qp->act->meta_slots - 1)];
}

/* dma.c: checked access to registered memory. */
enum xr_dma_err { XR_DMA_OK, XR_DMA_BAD_KEY, XR_DMA_BAD_PD, XR_DMA_BOUNDS, XR_DMA_PERM };
enum xr_dma_err xr_dma_check(struct xr_engine *e, uint32_t key, uint32_t pd, uint64_t va,
			     uint64_t len, uint32_t access, struct xr_mr **out);
/* For a peer's R_Key on QP qpn: also accepts a bound memory window (its
 * PD, its range and access, a type-2 window's QP); *out is then the region
 * the window is bound to. xr_dma_check refuses windows (never L_Keys). */
enum xr_dma_err xr_dma_check_rkey(struct xr_engine *e, uint32_t key, uint32_t pd, uint32_t qpn,
				  uint64_t va, uint64_t len, uint32_t access, struct xr_mr **out);
void xr_dma_write(const struct xr_mr *mr, uint64_t va, const void *src, size_t len);
/* The same, returning the CRC (from crc) of the bytes it placed. */
uint32_t xr_dma_write_crc(const struct xr_mr *mr, uint64_t va, const void *src, size_t len, uint32_t crc);
void xr_dma_read(const struct xr_mr *mr, uint64_t va, void *dst, size_t len);
uint64_t *xr_dma_u64(const struct xr_mr *mr, uint64_t va);
/* Local scatter/gather lists (lkeys): 0 or an enum xr_wc_status. */
/* Where bytes [offset, offset+len) of an SGE list lie in host memory, when
 * they are one run inside one entry (*out; NULL: copy them with
 * xr_sgl_read), after the same checks as a read; 0 or a WC status. */
int xr_sgl_map(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n, uint32_t offset,
	       uint32_t len, const uint8_t **out);
int xr_sgl_read(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n,
		uint32_t offset, void *dst, uint32_t len);
int xr_sgl_write(struct xr_engine *e, uint32_t pd, const struct xr_sge *sge, unsigned n,
		 uint32_t offset, const void *src, uint32_t len);

/* cqe.c: completions. */
struct xr_wc_info {
	uint64_t wr_id;
	uint8_t status, opcode;
	uint16_t flags;
	uint32_t byte_len, imm, src_qp;
	uint16_t wqe_index;
};
/* Writes a CQE; false when it was lost (the CQ overran: counted, CQ error
 * event logged, the QP moved to ERR). */
bool xr_complete(struct xr_engine *e, struct xr_qp *qp, uint32_t cqn, const struct xr_wc_info *wc,
		 bool solicited);
/* A receive WQE's CQE on the QP's receive CQ, its slot in the QP's own
 * ring (not an SRQ's) freed first: the receive doorbell checks against
 * rq_ci without the lock, and a host that saw the CQE may post into the
 * slot at once. */
bool xr_complete_recv(struct xr_engine *e, struct xr_qp *qp, const struct xr_wc_info *wc, bool solicited);
/* Moves a QP to ERR from the data path, logging why. */
void xr_qp_to_error(struct xr_engine *e, struct xr_qp *qp, uint8_t status);
/* A send-side error: RC to ERR; UD and UC to SQE (the receive side works
 * on; the send queue is flushed until the QP is moved back to RTS). */
void xr_qp_to_sq_error(struct xr_engine *e, struct xr_qp *qp, uint8_t status);
/* Completes every outstanding WQE of a QP in ERR with FLUSH_ERR. */
void xr_qp_flush(struct xr_engine *e, struct xr_qp *qp);
void xr_qp_flush_sq(struct xr_engine *e, struct xr_qp *qp);
uint8_t xr_wc_opcode_of_wr(uint8_t wr);
const struct xr_hw_wqe *xr_sq_slot(const struct xr_qp *qp, uint16_t idx);
unsigned xr_sq_sge_room(const struct xr_qp *qp);
unsigned xr_sq_nsge(const struct xr_qp *qp, const struct xr_hw_wqe *w);
void xr_sq_copy(const struct xr_qp *qp, struct xr_hw_wqe *to, const struct xr_hw_wqe *w);
const struct xr_hw_rwqe *xr_rq_slot(const struct xr_qp *qp, uint16_t idx);

/* req.c / resp.c / comp.c */
struct xr_tx;   /* a burst of frames being built (datapath.c) */
void xr_req_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx, uint64_t now);
void xr_resp_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p, struct xr_tx *tx);
void xr_resp_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx);
void xr_comp_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p);
/* ud.c / uc.c: the responders of the unacknowledged transports, and the
 * UD address of a send (after xr_tx_begin). */
void xr_ud_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p);
void xr_uc_rx(struct xr_engine *e, struct xr_qp *qp, const struct xr_pkt *p);
void xr_ud_address(struct xr_engine *e, const struct xr_qp *qp, const struct xr_hw_wqe *w, struct xr_pkt *p);
void xr_comp_timers(struct xr_engine *e, struct xr_qp *qp, uint64_t now);
void xr_req_retransmit(struct xr_engine *e, struct xr_qp *qp, uint32_t from_psn);

/* cc.c: congestion control. */
/* The traffic class a frame of this QP leaves with (ECT added). */
uint8_t xr_cc_tclass(const struct xr_engine *e, uint8_t tclass);
/* A CE-marked packet arrived for qp (locked). */
void xr_cc_ce(struct xr_engine *e, struct xr_qp *qp, uint64_t now);
/* Sends the CNP qp owes, if any; false when the link could not take it. */
bool xr_cc_tx(struct xr_engine *e, struct xr_qp *qp, struct xr_tx *tx, uint64_t now);
/* A CNP arrived (opcode 0x81): the reaction point of its QP. */
void xr_cc_cnp_rx(struct xr_engine *e, const struct xr_pkt *p, uint64_t now);
/* Rate increase timers of qp (locked). */
void xr_cc_timers(struct xr_engine *e, struct xr_qp *qp, uint64_t now);
/* qp's requester is paced (a rate cap or DCQCN holds it). */
bool xr_cc_paced(const struct xr_qp *qp);
/* The pacer: may qp send a packet now? */
bool xr_cc_may_send(struct xr_engine *e, struct xr_qp *qp, uint64_t now);
/* A packet of wire_bytes left qp (pacer and DCQCN byte counter). */
void xr_cc_sent(struct xr_engine *e, struct xr_qp *qp, uint64_t now, uint32_t wire_bytes);
/* qp has congestion-control timers running (it stays on the busy list). */
bool xr_cc_has_work(const struct xr_qp *qp);
/* The earliest time qp's pacer or timers want it served (UINT64_MAX: none). */
uint64_t xr_cc_next_due(const struct xr_qp *qp, uint64_t now);
/* Forgets a QP's congestion state (RESET, create). */
void xr_cc_reset(struct xr_qp *qp);
/* Snapshot for the QP window's read-only CC registers. */
void xr_cc_read(struct xr_engine *e, const struct xr_qp *qp, struct xr_qp_ctx *c);

/* pfc.c: PFC (802.1Qbb) and 802.3x PAUSE, with a watchdog (docs/pfc.md). */
void xr_pfc_reset(struct xr_engine *e);
/* Start of a progress pass: pauses that ran out, the watchdog, and XOFF/XON
 * from the link's receive backlog (sent straight to the link). */
void xr_pfc_pass(struct xr_engine *e);
/* EtherType 0x8808: the frame is for xr_pfc_rx, not the RoCE parser. */
bool xr_pfc_is_mac_control(const struct xr_frame *f);
/* A received MAC control frame: honoured, or counted as dropped. */
void xr_pfc_rx(struct xr_engine *e, const struct xr_frame *f);
static inline bool xr_pfc_paused(const struct xr_engine *e, uint8_t prio)
{
	return (e->pfc.paused >> (prio & 7)) & 1;
}
/* The priority of qp's frames: the 802.1Q PCP with a VLAN tag, else its
 * DSCP >> 3 (PFC_CTRL.prio_dscp: always the DSCP). */
uint8_t xr_pfc_qp_prio(const struct xr_engine *e, const struct xr_qp *qp);
/* A frame built but not handed to the link whose priority is paused. */
bool xr_pfc_frame_paused(const struct xr_engine *e, const struct xr_frame *f);
/* Serving qp (locked): true while its priority is paused (it sends
 * nothing; its local ACK timer is pushed back by the pause on resume). */
bool xr_pfc_qp_hold(struct xr_engine *e, struct xr_qp *qp, uint64_t now);
/* The earliest pause end or watchdog deadline (UINT64_MAX: none). */
uint64_t xr_pfc_next_due(const struct xr_engine *e);
/* PFC_STATUS as read now. */
uint32_t xr_pfc_status(struct xr_engine *e);

/* datapath.c: frames out. */
/* Payloads from this size on are sealed at the flush (struct xr_tx), and
 * may leave by reference on a gather link (req.c): below it the copy is a
 * line or two, and sealing in the flush's loop measured slower for
 * 64-byte WRITEs (0.92x) and their latency (1.05x). */
#define XR_TX_SEAL_LATE_MIN 1024

struct xr_tx {
	struct xr_frame *f[32];
	unsigned n;
	bool full;                   /* the link refused frames: stop producing */
	uint64_t pkts, bytes;        /* committed, not yet in TX_PKTS/TX_BYTES (added at each flush) */
	/* A large frame's ICRC is computed at the flush, over the whole
	 * burst, not as it is committed: the CRC's reads of a payload just
	 * copied in would wait for the copy's stores, which on the mem link
	 * take each line from the core that read it last. Among f[sealed..n),
	 * those with seal[i].late wait for it. */
	unsigned sealed;
	struct xr_tx_seal {
		uint16_t l3_off;
		bool late, udp_csum;
	} seal[32];
};
/* A frame for a packet of qp: headers from the QP context; NULL when the
 * burst or the pool is exhausted. The caller fills the payload and calls
 * xr_tx_commit. */
/* One pass (datapath.c): block waits for a pass another thread runs;
 * *ran (may be NULL) says whether this one ran at all. */
int xr_dp_pass(struct xr_engine *e, bool block, bool *ran);
/* For the thread about to sleep, under the pass lock that callers' passes
 * hold: the link's wait fd (taking it may reset receive state a pass
 * reads), and whether frames the link refused wait in txq. */
int xr_dp_link_wait_fd(struct xr_engine *e);
/* The link's standby fd (struct xr_link_ops) for the thread standing by,
 * or -1, armed while a caller is paused (*waiting: a frame already is);
 * a caller's pause arms the link for it (1: a frame already waits, -1:
 * the link cannot, frames wait to leave, or the pass lock is busy) and
 * its return withdraws that arming, unless the thread has armed the link
 * for its own sleep since or sleeps on an older arming. */
int xr_dp_link_standby_fd(struct xr_engine *e, bool *waiting);
int xr_dp_link_arm(struct xr_engine *e, bool arm);
bool xr_dp_tx_waiting(struct xr_engine *e);
/* Wakes the engine's thread through its doorbell eventfd. */
void xr_dp_wake_thread(struct xr_engine *e);
/* The tick that wakes an untimed sleeper for timers a pass just armed. */
#define XR_TICK_NS 1000000
/* progress.c: a caller drives the engine from now on (the lease), and
 * whether the calling thread is the engine's own. */
uint64_t xr_progress_lease(struct xr_engine *e);
/* xr_engine_poll for a caller that has just read the clock (now): the
 * pass reads it no second time, and looks at every waiting timer. */
int xr_engine_poll_at(struct xr_engine *e, uint64_t now);
bool xr_progress_is_thread(const struct xr_engine *e);
void xr_datapath_init(struct xr_engine *e);
void xr_datapath_fini(struct xr_engine *e);
struct xr_frame *xr_tx_begin(struct xr_engine *e, struct xr_tx *tx, struct xr_qp *qp,
			     struct xr_pkt *p);
/* The same for a frame of priority prio rather than the QP's (a CNP):
 * NULL while that priority is paused. */
struct xr_frame *xr_tx_begin_prio(struct xr_engine *e, struct xr_tx *tx, struct xr_qp *qp,
				  struct xr_pkt *p, uint8_t prio);
void xr_tx_commit(struct xr_engine *e, struct xr_tx *tx, struct xr_frame *f, struct xr_pkt *p);
/* Seals the burst's late frames and hands the burst to the link (tx.c). */
void xr_tx_flush(struct xr_engine *e, struct xr_tx *tx);
/* A frame of the burst for priority prio: NULL while it is paused, or
 * when the burst or the pool is exhausted. */
struct xr_frame *xr_tx_frame(struct xr_engine *e, struct xr_tx *tx, uint8_t prio);

/* tx_hdr.c: a packet's addresses, from the registers and the QP context. */
void xr_tx_address(struct xr_engine *e, const struct xr_qp *qp, struct xr_pkt *p);
/* xr_tx_begin for a packet of an RC or UC QP with its active block, whose
 * headers come from the connection's template: the caller sets the BTH
 * and what follows (never the addresses) and builds with xr_tx_build_conn. */
struct xr_frame *xr_tx_begin_conn(struct xr_engine *e, struct xr_tx *tx, struct xr_qp *qp, struct xr_pkt *p);
ssize_t xr_tx_build_conn(const struct xr_qp *qp, struct xr_pkt *p, struct xr_frame *f);
/* Every template built so far is stale (a register or a table written). */
static inline void xr_tx_headers_stale(struct xr_engine *e)
{
	atomic_fetch_add_explicit(&e->tx_gen, 1, memory_order_release);
}

#endif
