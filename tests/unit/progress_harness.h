/* SPDX-License-Identifier: MIT */
/* What the progress-thread tests share: a pair on the mem link with the
 * engines in thread mode, WRITEs from b to a, and the engine threads'
 * wakeups read from /proc. */
#ifndef XROCE_TEST_PROGRESS_HARNESS_H
#define XROCE_TEST_PROGRESS_HARNESS_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rc_harness.h"
#include "test_util.h"
#include "xroce/engine.h"

#define MSG 64u

static inline struct xr_engine *eng(struct end *e)
{
	return xr_context_engine(e->ctx);
}

/* b writes MSG bytes to a. */
static inline void post_write_flags(struct pair *p, uint64_t id, unsigned flags)
{
	struct xr_sge s = { (uintptr_t)h_data(&p->b), MSG, p->b.mr->lkey };
	struct xr_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE,
				.send_flags = flags };

	w.wr.rdma.remote_addr = (uintptr_t)h_data(&p->a);
	w.wr.rdma.rkey = p->a.mr->rkey;
	assert_int_equal(xr_post_send(p->b.qp[0], &w, NULL), 0);
}

static inline void post_write(struct pair *p, uint64_t id)
{
	post_write_flags(p, id, XR_SEND_SIGNALED);
}

static inline void open_pair(struct pair *p)
{
	struct h_opts o = { .mode = XR_PROGRESS_THREAD, .mtu = XR_MTU_1024, .buf_len = 4096, .timeout = 14,
			    .retry_cnt = 7, .rnr_retry = 7 };

	assert_int_equal(h_open(p, &o), 0);
}

/* Stops b's engine thread, then closes the pair: a thread that never
 * stops kills the test (the alarm) instead of hanging it. */
static inline void stop_b_and_close(struct pair *p)
{
	alarm(10);
	xr_engine_stop_thread(eng(&p->b));
	alarm(0);
	h_close(p);
}

/* The engine threads: this process's threads by their name (the mem
 * link has none of its own; ThreadSanitizer's runtime has one). Fills
 * tids, returns how many. */
static inline int other_threads(pid_t *tids, int cap)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) && n < cap) {
		pid_t t = (pid_t)atoi(de->d_name);
		char path[64], name[32] = "";
		FILE *f;

		if (t <= 0 || t == gettid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)t);
		if ((f = fopen(path, "r"))) {
			if (!fgets(name, sizeof(name), f))
				name[0] = '\0';
			fclose(f);
		}
		if (!strncmp(name, XR_PROGRESS_THREAD_NAME "\n", sizeof(XR_PROGRESS_THREAD_NAME)))
			tids[n++] = t;
	}
	closedir(d);
	return n;
}

/* Field k (1-based, after the command) of /proc/self/task/T/stat. */
static inline long task_stat(pid_t t, int k)
{
	char path[64], buf[1024], *p;
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)t);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');   /* the command may hold spaces */
	for (int i = 2; p && i < k; i++)
		p = strchr(p + 1, ' ');
	if (p)
		v = atol(p + 1);
	return v;
}

/* The thread's voluntary context switches (its wakeups), from /proc. */
static inline long wakeups(pid_t t)
{
	char path[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)t);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The wakeups of threads t[0..n), summed. */
static inline long threads_wakeups(const pid_t *t, int n)
{
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += wakeups(t[i]);
	return sum;
}

/* Time the threads t[0..n) waited for a core (schedstat's run delay). */
static inline uint64_t threads_run_delay(const pid_t *t, int n)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++) {
		char path[64];
		unsigned long long run, wait = 0;
		FILE *f;
		snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)t[i]);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu %llu", &run, &wait) == 2)
			sum += wait;
		if (f)
			fclose(f);
	}
	return sum;
}

#endif
