/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf: perftest's tests on xroce (write/read/send/atomic, bandwidth
 * and latency), with perftest's flags, output tables and out-of-band TCP
 * exchange, so it can face ib_write_bw and friends; an ibv_rc_pingpong
 * compatible mode; and --verify, which checks every payload end to end.
 *
 *   xroce-perf TEST [options] [server-address]
 *   xroce-perf pingpong [options] [server-address]
 *   xroce-perf congestion [options]   (an incast through the switch model,
 *                                      perf_congestion.c; also -m congestion)
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"
#include "perf_congestion.h"

const char *prog = "xroce-perf";

/* ---- one side, start to end ---- */

static int run_side(struct side *s)
{
	const struct cfg *c = s->c;
	int rc;

	if (open_side(s))
		return -1;
	if (c->pingpong) {
		rc = run_pingpong(s);
		if (!rc)
			pp_linger(s);
	} else {
		rc = prologue(s);
		if (!rc && !(s->server && c->mem))
			print_header(s);
		if (!rc)
			rc = c->lat ? run_lat(s) : run_bw(s);
		/* perftest's closing, while still answering the peer. */
		if (!rc && proto_of(c).close_hs) {
			if (s->server)
				pump_until_peer(s, PEER_WAIT_MS);
			rc = oob_handshake(&s->oob, &s->my[0], &s->rem[0]);
		}
		if (!rc && proto_of(c).done_msg) {
			char done[5] = "done";
			rc = s->server ? oob_send_raw(&s->oob, done, sizeof(done)) : oob_recv_raw(&s->oob, done, sizeof(done));
		}
		if (!rc && !proto_of(c).close_hs && s->server && c->verb == V_WRITE) {
			/* write_lat ends without a word: let the last WRITE's ACK leave. */
			for (int i = 0; i < 1000; i++)
				pump(s);
		}
	}
	if (c->counters && s->ctx && !(s->server && c->mem))
		print_counters(s);
	close_side(s);
	return rc == PP_EXIT_UNACKED ? rc : rc ? -1 : 0;
}

static void *server_thread(void *arg)
{
	struct side *s = arg;
	s->rc = run_side(s);
	if (s->rc)
		oob_close(&s->oob);   /* the client sees the end instead of waiting */
	return NULL;
}

int main(int argc, char **argv)
{
	struct cfg c = { .qps = 1, .rx_depth = 512, .port = PERFTEST_PORT, .device = "xroce0", .gid_index = 0,
			 .qp_timeout = 14, .progress = XR_PROGRESS_INLINE, .pcap_frames = 100 };
	const char *link_kind = "udp";
	int rc;

	/* The congestion mode has a command line of its own (the seed's
	 * roce_stress spelling, -m congestion, too). */
	if (argc >= 2 && !strcmp(argv[1], "congestion"))
		return run_congestion(argc - 1, argv + 1);
	if (argc >= 3 && !strcmp(argv[1], "-m") && !strcmp(argv[2], "congestion"))
		return run_congestion(argc - 2, argv + 2);
	rc = parse_args(argc, argv, &c, &link_kind);
	if (rc >= 0)
		return rc;
	if (c.json) {
		/* As perftest: the JSON report goes to a file, the tables to stdout. */
		if (!c.json_file)
			c.json_file = "perftest_out.json";
		json_out = fopen(c.json_file, "w");
		if (!json_out) {
			fprintf(stderr, "%s: %s: %s\n", prog, c.json_file, strerror(errno));
			return 2;
		}
		fprintf(json_out, "{\n  \"test\": \"%s\",\n  \"link\": \"%s\",\n  \"mtu_requested\": %d,\n  \"results\": [",
			argv[1], link_kind, c.mtu);
	}
	srand48(time(NULL) ^ getpid());

	if (c.mem) {
		struct xr_link *la, *lb;
		struct side srv = { .c = &c, .server = true }, cli = { .c = &c };
		struct cfg cs = c, cc = c;
		pthread_t t;
		if (c.server) {
			fprintf(stderr, "%s: --link mem runs both ends here: no server address\n", prog);
			return 2;
		}
		/* A capture must see every byte in the frame: no gather under --pcap. */
		int err = xr_link_mem_pair_ex(&la, &lb, 0, c.pcap || c.no_gather ? 0 : XR_MEM_GATHER);
		if (err) {
			fprintf(stderr, "%s: cannot make the in-memory link: %s\n", prog, strerror(-err));
			return 1;
		}
		if (c.pcap) {
			/* On failure the tap leaves la to us. */
			struct xr_link *tap = xr_link_pcap_tap_n(la, c.pcap, c.pcap_frames);
			if (!tap) {
				fprintf(stderr, "%s: cannot write %s\n", prog, c.pcap);
				xr_link_close(la);
				xr_link_close(lb);
				return 1;
			}
			la = tap;
		}
		cs.link.addr = "10.0.0.1";
		cc.link.addr = "10.0.0.2";
		srv.c = &cs;
		cli.c = &cc;
		srv.link = lb;
		cli.link = la;
		srv.out = fopen("/dev/null", "w");
		srv.quiet_out = srv.out;
		cli.out = stdout;
		if (!srv.out || oob_pair(&srv.oob, &cli.oob)) {
			fprintf(stderr, "%s: cannot set up the two ends: %s\n", prog, strerror(errno));
			if (srv.out)
				fclose(srv.out);
			xr_link_close(la);
			xr_link_close(lb);
			return 1;
		}
		pthread_create(&t, NULL, server_thread, &srv);
		rc = run_side(&cli);
		oob_close(&cli.oob);
		pthread_join(t, NULL);
		if (c.verify && srv.verified) {
			/* The receiving end checked what arrived: its findings count too. */
			srv.out = stdout;
			printf(" Receiver's data verification: %" PRIu64 " messages checked, %" PRIu64 " errors%s\n",
			       srv.verified, srv.verify_errors, srv.verify_errors ? "  <-- FAILED" : "");
			if (srv.verify_errors)
				srv.rc = -1;
		}
		oob_close(&srv.oob);
		fclose(srv.quiet_out);
		xr_link_close(la);
		xr_link_close(lb);
		rc = rc || srv.rc;
	} else {
		struct side s = { .c = &c, .server = !c.server, .out = stdout };
		char msg[256];
		int err;
		if (!c.link.addr) {
			fprintf(stderr, "%s: --bind ADDR is needed for the %s link\n", prog, link_kind);
			return 2;
		}
		s.link = xr_link_open(&c.link, msg, sizeof(msg));
		if (!s.link) {
			fprintf(stderr, "%s: %s\n", prog, msg);
			return 1;
		}
		s.base_link = s.link;
		/* A wrapper that fails leaves the link it was given to us. Without
		 * this check the run went on with no link at all. */
		if (c.fault.drop > 0 || c.fault.reorder > 0) {
			struct xr_link *f = xr_link_fault(s.link, &c.fault);
			if (!f) {
				fprintf(stderr, "%s: cannot add the faults: %s\n", prog, strerror(errno));
				xr_link_close(s.link);
				return 1;
			}
			s.link = f;
		}
		if (c.pcap) {
			struct xr_link *tap = xr_link_pcap_tap_n(s.link, c.pcap, c.pcap_frames);
			if (!tap) {
				fprintf(stderr, "%s: cannot write %s\n", prog, c.pcap);
				xr_link_close(s.link);
				return 1;
			}
			s.link = tap;
		}
		if (s.server)
			printf("\n************************************\n* Waiting for client to connect... *\n"
			       "************************************\n");
		fflush(stdout);
		err = oob_open(&s.oob, c.server, c.port, !s.server, 10000);
		if (err) {
			fprintf(stderr, "%s: TCP %s port %d: %s\n", prog, s.server ? "listen on" : "connect to", c.port,
				strerror(-err));
			xr_link_close(s.link);
			return 1;
		}
		rc = run_side(&s);
		oob_close(&s.oob);
		xr_link_close(s.link);
	}
	if (json_out) {
		fprintf(json_out, "\n  ],\n  \"status\": \"%s\"\n}\n", rc ? "failed" : "ok");
		fclose(json_out);
	}
	return rc == PP_EXIT_UNACKED ? PP_EXIT_UNACKED : rc ? 1 : 0;
}
