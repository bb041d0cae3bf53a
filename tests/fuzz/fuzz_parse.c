/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry: raw bytes into both parser entry points. Any accepted
 * packet is rebuilt from its parsed fields and must parse again with the
 * same ICRC, so parser and builder agree on everything they accept.
 */
#include <stdlib.h>
#include <string.h>

#include "xroce/wire.h"

/* Not assert: a build with NDEBUG would drop the checks, and the parse
 * inside the first one with them. */
#define check(c) do { if (!(c)) abort(); } while (0)

static void rebuild(const struct xr_pkt *in)
{
	static uint8_t frame[XR_MAX_FRAME];
	struct xr_pkt b = *in, again;
	ssize_t len = xr_pkt_build(&b, frame, sizeof(frame));

	check(len > 0);
	check(xr_pkt_parse(frame, (size_t)len, 0, 0, &again) == XR_PARSE_OK);
	check(again.opcode == in->opcode && again.psn == in->psn &&
	      again.dqpn == in->dqpn && again.payload_len == in->payload_len);
	check(!in->payload_len || !memcmp(again.payload, in->payload, in->payload_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t mtus[4] = { 0, 256, 1024, 4096 };
	struct xr_pkt p;
	uint32_t mtu;

	if (size < 1)
		return 0;
	mtu = mtus[data[0] & 3];
	if (xr_pkt_parse(data + 1, size - 1, mtu, 0, &p) == XR_PARSE_OK)
		rebuild(&p);
	if (xr_pkt_parse_ip(data + 1, size - 1, mtu, XR_PARSE_NO_ICRC, &p) == XR_PARSE_OK)
		(void)p;
	return 0;
}
