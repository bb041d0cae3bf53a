/* SPDX-License-Identifier: MIT */
/*
 * What the doorbell race suites share (test_doorbell_race,
 * test_recv_doorbell_race): a thread running both engines' passes beside
 * the poster's own (a poster runs a pass right after its doorbells, so
 * without another thread the doorbells seldom meet a pass serving their
 * QP), and a thread that moves a QP to ERR once told to (go).
 */
#ifndef XR_TEST_RACE_THREADS_H
#define XR_TEST_RACE_THREADS_H

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "rc_harness.h"

struct passer {
	struct pair *p;
	atomic_bool stop;
	pthread_t t;
	bool running;
};

static inline void *passer_run(void *arg)
{
	struct passer *s = arg;

	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		xr_engine_progress(xr_context_engine(s->p->a.ctx));
		xr_engine_progress(xr_context_engine(s->p->b.ctx));
	}
	return NULL;
}

static inline void passer_start(struct passer *s, struct pair *p)
{
	s->p = p;
	atomic_store(&s->stop, false);
	assert_int_equal(pthread_create(&s->t, NULL, passer_run, s), 0);
	s->running = true;
}

static inline void passer_stop(struct passer *s)
{
	if (s->running) {
		atomic_store(&s->stop, true);
		pthread_join(s->t, NULL);
		s->running = false;
	}
}

struct failer {
	struct xr_qp *qp;
	atomic_bool go;
	int rc;
	pthread_t t;
	bool running;
};

/* Waits for go (at most a minute), then moves the QP to ERR. */
static inline void *failer_run(void *arg)
{
	struct failer *f = arg;
	struct xr_qp_attr err = { .qp_state = XR_QPS_ERR };
	uint64_t until = h_now_ms() + 60000;

	while (!atomic_load(&f->go) && h_now_ms() < until)
		usleep(20);
	f->rc = xr_modify_qp(f->qp, &err, XR_QP_STATE);
	return NULL;
}

static inline void failer_start(struct failer *f, struct xr_qp *qp)
{
	f->qp = qp;
	f->rc = -1;
	atomic_store(&f->go, false);
	assert_int_equal(pthread_create(&f->t, NULL, failer_run, f), 0);
	f->running = true;
}

/* Tells it to go, if not yet, and waits for it: its xr_modify_qp's result. */
static inline int failer_join(struct failer *f)
{
	if (f->running) {
		atomic_store(&f->go, true);
		pthread_join(f->t, NULL);
		f->running = false;
	}
	return f->rc;
}

#endif
