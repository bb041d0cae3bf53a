/* SPDX-License-Identifier: MIT */
/*
 * Out-of-band exchanges that xroce-perf speaks over TCP: perftest's
 * (versions, system data, MTU, 108-byte GID key messages, handshakes, BW
 * reports) and ibv_rc_pingpong's (52-byte "LID:QPN:PSN:GID" messages).
 * The client writes first and the server reads first, as perftest does.
 * Facts from ../shared/reference/rocev2-wire.md §9.
 */
#ifndef XR_TOOLS_PERF_OOB_H
#define XR_TOOLS_PERF_OOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xroce/wire.h"

#define PERFTEST_VERSION "6.06"     /* below 6.28: no binary parameter negotiation */
#define PERFTEST_PORT 18515
#define KEY_MSG_SIZE_GID 108
#define PINGPONG_MSG_SIZE 52

struct oob {
	int fd;
	bool client;
	double remote_version;
	/* Called about every millisecond while a read waits, so that an engine
	 * driven inline keeps answering the link (ARP, ACKs) meanwhile. */
	void (*idle)(void *arg);
	void *idle_arg;
};

struct perf_dest {
	uint32_t lid, out_reads, qpn, psn, rkey, srqn;
	uint64_t vaddr;
	xr_gid gid;
};

/* TCP: listen on port (server) or connect to host:port (client, retrying
 * for up to timeout_ms). 0 or -errno. */
int oob_open(struct oob *o, const char *host, int port, bool client, unsigned timeout_ms);
/* For --link mem: the two ends of a socketpair. */
int oob_pair(struct oob *server, struct oob *client);
void oob_close(struct oob *o);
/* Exchanges n bytes: the client writes then reads, the server the reverse. */
int oob_xchg(struct oob *o, const void *mine, void *theirs, size_t n);

/* Raw bytes one way (perftest's "done\0" after send tests). 0 or -1. */
int oob_send_raw(struct oob *o, const void *buf, size_t n);
int oob_recv_raw(struct oob *o, void *buf, size_t n);

/* perftest's preamble: versions, system data, MTU (enum 1..5; *mtu becomes
 * the lower of the two). 0 or -1 with a message on stderr. */
int oob_perftest_preamble(struct oob *o, int *mtu);
/* One perftest handshake: the 108-byte GID-form key messages. */
int oob_handshake(struct oob *o, const struct perf_dest *mine, struct perf_dest *theirs);
/* The handshake in halves, for a client that must say it is done before it
 * waits for the server (both ends sending: each waits for the other). */
int oob_handshake_send(struct oob *o, const struct perf_dest *mine);
int oob_handshake_recv(struct oob *o, struct perf_dest *theirs);
/* BW reports: size, iterations, peak, average, message rate. */
struct bw_report {
	uint64_t size, iters;
	double bw_peak, bw_avg, msg_rate;
};
int oob_bw_reports(struct oob *o, const struct bw_report *mine, struct bw_report *theirs);

/* ibv_rc_pingpong's exchange of "LID:QPN:PSN:GID" (52 bytes with NUL). */
int oob_pingpong_write(struct oob *o, const struct perf_dest *d);
int oob_pingpong_read(struct oob *o, struct perf_dest *d);

#endif
