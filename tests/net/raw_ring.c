/* SPDX-License-Identifier: MIT */
/*
 * The raw link's receive buffer, over a real veth pair (tests/net/veth_pair.sh
 * makes it in a namespace): link A on IFA is not read while link B on IFB
 * sends it frames, as when the scheduler holds A's engine back.
 *  1. 8000 frames of 1000 bytes (8 MB, 125 messages of 64 KiB at MTU 1024)
 *     wait in A's ring and all come up: none lost (UC and UD could not
 *     get them back);
 *  2. more than the ring holds: what does not fit is counted in A's
 *     rx_drops, and received + dropped is what B sent.
 * Exit 0 when every check holds; each line says what was measured.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xroce/link.h"
#include "xroce/wire.h"

#include "net_check.h"

#define FRAME_LEN 1000

/* n IPv4 frames from b to a's MAC (what the link passes up; the engine's
 * parser would judge the rest). Returns how many the link took. */
static unsigned send_frames(struct xr_link *b, const uint8_t dst[6], unsigned n)
{
	unsigned sent = 0;
	double until = now_s() + 20;

	while (sent < n && now_s() < until) {
		struct xr_frame *f[32];
		unsigned k = 0;
		while (k < 32 && sent + k < n && (f[k] = xr_link_frame_alloc(b))) {
			memset(f[k]->data, 0, FRAME_LEN);
			memcpy(f[k]->data, dst, 6);
			memcpy(f[k]->data + 6, b->mac, 6);
			f[k]->data[12] = 0x08;   /* IPv4 */
			f[k]->data[14] = 0x45;
			f[k]->len = FRAME_LEN;
			k++;
		}
		int rc = xr_link_send(b, f, k);
		unsigned took = rc > 0 ? (unsigned)rc : 0;
		for (unsigned i = took; i < k; i++)
			xr_link_frame_free(b, f[i]);
		sent += took;
		if (!took)
			usleep(100);
	}
	return sent;
}

/* Everything waiting on a: until nothing came for 200 ms. */
static unsigned drain(struct xr_link *a)
{
	unsigned got = 0;
	double quiet = now_s() + 0.2, cap = now_s() + 20;

	while (now_s() < quiet && now_s() < cap) {
		struct xr_frame *f[64];
		int n = xr_link_recv(a, f, 64);
		for (int i = 0; i < n; i++)
			xr_link_frame_free(a, f[i]);
		if (n > 0) {
			got += (unsigned)n;
			quiet = now_s() + 0.2;
		} else {
			usleep(200);
		}
	}
	return got;
}

int main(int argc, char **argv)
{
	struct xr_link *a, *b;
	uint32_t queued = 0, cap = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: raw_ring IFA IFB\n");
		return 2;
	}
	a = xr_link_raw(argv[1], "10.0.0.1", 0, 0);
	b = xr_link_raw(argv[2], "10.0.0.2", 0, 0);
	if (!a || !b) {
		perror("xr_link_raw");
		return 1;
	}
	CHECK(xr_link_rx_backlog(a, &queued, &cap) == 0 && cap >= 8192, "A's receive ring holds %u frames of MTU %u",
	      cap, a->mtu);
	drain(a);   /* nothing expected: veth_pair.sh keeps the kernel quiet */

	unsigned sent = send_frames(b, a->mac, 8000);
	uint64_t drops0 = a->stats.rx_drops;
	unsigned got = drain(a);
	CHECK(sent == 8000 && got == sent && a->stats.rx_drops == drops0,
	      "A held back while B sent %u frames: %u came up, %llu dropped", sent, got,
	      (unsigned long long)(a->stats.rx_drops - drops0));

	unsigned over = cap + 4000;
	sent = send_frames(b, a->mac, over);
	got = drain(a);
	uint64_t dropped = a->stats.rx_drops - drops0;
	CHECK(sent == over && dropped > 0 && got + dropped == sent,
	      "past the ring's %u: B sent %u, %u came up, rx_drops counted %llu", cap, sent, got,
	      (unsigned long long)dropped);

	xr_link_close(a);
	xr_link_close(b);
	printf("%s: %d failed\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
