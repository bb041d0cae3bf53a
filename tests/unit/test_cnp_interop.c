/* SPDX-License-Identifier: MIT */
/*
 * CNPs against independent implementations (driven by tests/wire/check_cnp.sh):
 *   test_cnp_interop --qpns          prints the QPNs the two ends get
 *   test_cnp_interop --emit OUT      B sends CE-marked data to A; A's engine
 *                                    answers with CNPs, recorded in OUT for
 *                                    tshark; B's engine cuts its rate
 *   test_cnp_interop --inject IN     the CNP in IN (built by scapy) is handed
 *                                    to B's engine, which must take it: one
 *                                    CNP counted on the QP, its rate cut
 * A is 10.0.0.1, B 10.0.0.2, on a mem pair, one RC QP each.
 */
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_harness.h"

static struct pair P;

static void open_pair(const char *tap, uint8_t tclass)
{
	const struct h_opts o = { .mode = XR_PROGRESS_INLINE, .mtu = XR_MTU_1024, .buf_len = 65536, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1, .traffic_class = tclass };

	memset(&P, 0, sizeof(P));
	P.mode = o.mode;
	assert_int_equal(xr_link_mem_pair(&P.la, &P.lb, 0), 0);
	if (tap)
		assert_non_null(P.la = xr_link_pcap_tap(P.la, tap));
	assert_int_equal(h_end_open(&P.a, P.la, "10.0.0.1", &o), 0);
	assert_int_equal(h_end_open(&P.b, P.lb, "10.0.0.2", &o), 0);
	assert_int_equal(h_connect(P.a.qp[0], P.b.qp[0], P.b.ctx, &o, 100, 200), 0);
	assert_int_equal(h_connect(P.b.qp[0], P.a.qp[0], P.a.ctx, &o, 200, 100), 0);
}

static const char *arg_path;

/* B writes 16 KiB to A with CE set in its traffic class (as a switch would
 * have marked it): A sends CNPs, B takes them. */
static void test_emit(void **state)
{
	struct xr_wc wc;
	(void)state;

	open_pair(arg_path, 0x03);
	for (int m = 0; m < 4; m++) {
		struct xr_sge sg = { (uintptr_t)h_data(&P.b), 16384, P.b.mr->lkey };
		struct xr_send_wr w = { .wr_id = (uint64_t)m, .sg_list = &sg, .num_sge = 1,
					.opcode = XR_WR_RDMA_WRITE, .send_flags = XR_SEND_SIGNALED };
		w.wr.rdma.remote_addr = (uintptr_t)h_data(&P.a);
		w.wr.rdma.rkey = P.a.mr->rkey;
		assert_int_equal(xr_post_send(P.b.qp[0], &w, NULL), 0);
		assert_int_equal(h_wait(&P, &P.b, &wc, 5000), 1);
		assert_int_equal(wc.status, XR_WC_SUCCESS);
	}
	for (int i = 0; i < 100; i++)
		h_progress(&P);
	struct xr_qp_ctx a = h_qp_read(&P.a), b = h_qp_read(&P.b);
	printf("A: %u CE received, %u CNPs sent (%llu suppressed); B: %u CNPs taken, rate %u Mb/s, alpha %u/1024\n",
	       a.ce_rcvd, a.cnp_sent, (unsigned long long)h_counter(&P.a, XR_CNT_CNP_SUPPRESSED), b.cnp_rcvd,
	       b.cc_rate, b.cc_alpha);
	assert_true(a.ce_rcvd >= 64);
	assert_true(a.cnp_sent >= 1);
	assert_int_equal(h_counter(&P.a, XR_CNT_CNP_SENT), a.cnp_sent);
	assert_int_equal(b.cnp_rcvd, a.cnp_sent);
	assert_true(b.cc_rate > 0 && b.cc_rate < 100000);
	h_close(&P);
}

static void test_inject(void **state)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(arg_path, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	unsigned n = 0;
	(void)state;

	assert_non_null(pc);
	open_pair(NULL, 0);
	while (pcap_next_ex(pc, &h, &d) == 1) {
		struct xr_frame *f = xr_link_frame_alloc(P.la);
		assert_non_null(f);
		assert_true(h->caplen <= sizeof(f->data));
		memcpy(f->data, d, h->caplen);
		f->len = (uint16_t)h->caplen;
		assert_int_equal(xr_link_send(P.la, &f, 1), 1);
		n++;
	}
	pcap_close(pc);
	assert_true(n >= 1);
	for (int i = 0; i < 100; i++)
		h_progress(&P);
	struct xr_qp_ctx b = h_qp_read(&P.b);
	printf("B took %u of %u scapy CNPs: rate %u Mb/s, alpha %u/1024; parser drops %llu, CNPs ignored %llu\n",
	       b.cnp_rcvd, n, b.cc_rate, b.cc_alpha, (unsigned long long)h_counter(&P.b, XR_CNT_PARSE_BAD_ICRC),
	       (unsigned long long)h_counter(&P.b, XR_CNT_DROP_CNP));
	assert_int_equal(h_counter(&P.b, XR_CNT_CNP_RCVD), n);
	assert_int_equal(b.cnp_rcvd, n);
	assert_true(b.cc_rate > 0 && b.cc_rate < 100000);
	h_close(&P);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--qpns")) {
		open_pair(NULL, 0);
		printf("%u %u\n", xr_qp_num(P.a.qp[0]), xr_qp_num(P.b.qp[0]));
		h_close(&P);
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "--emit") && strcmp(argv[1], "--inject"))) {
		fprintf(stderr, "usage: %s --qpns | --emit OUT.pcap | --inject IN.pcap\n", argv[0]);
		return 2;
	}
	arg_path = argv[2];
	const struct CMUnitTest emit[] = { cmocka_unit_test(test_emit) };
	const struct CMUnitTest inject[] = { cmocka_unit_test(test_inject) };
	return !strcmp(argv[1], "--emit") ? cmocka_run_group_tests(emit, NULL, NULL)
					  : cmocka_run_group_tests(inject, NULL, NULL);
}
