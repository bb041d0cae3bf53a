/* SPDX-License-Identifier: MIT */
/* MAC control frames (EtherType 0x8808): 802.1Qbb PFC and 802.3x PAUSE,
 * built the one way the engine, the links and the switch model send them. */
#include <string.h>

#include "bytes.h"
#include "xroce/wire.h"

#define ETHERTYPE_MAC_CTRL 0x8808
#define MAC_CTRL_PAUSE 0x0001
#define MAC_CTRL_PFC 0x0101

static const uint8_t mac_ctrl_dst[6] = { 0x01, 0x80, 0xC2, 0x00, 0x00, 0x01 };

static uint16_t mac_ctrl_hdr(uint8_t *buf, const uint8_t smac[6], uint16_t opcode)
{
	memset(buf, 0, XR_MAC_CTRL_FRAME);   /* padded to the 60-byte minimum (64 with FCS) */
	memcpy(buf, mac_ctrl_dst, 6);
	memcpy(buf + 6, smac, 6);
	put_be16(buf + 12, ETHERTYPE_MAC_CTRL);
	put_be16(buf + 14, opcode);
	return XR_MAC_CTRL_FRAME;
}

uint16_t xr_build_pfc_frame(uint8_t *buf, const uint8_t smac[6], uint8_t mask, uint16_t quanta)
{
	uint16_t len = mac_ctrl_hdr(buf, smac, MAC_CTRL_PFC);

	put_be16(buf + 16, mask);   /* priority-enable vector */
	for (int i = 0; i < 8; i++)
		if (mask & (1u << i))
			put_be16(buf + 18 + 2 * i, quanta);
	return len;
}

uint16_t xr_build_pause_frame(uint8_t *buf, const uint8_t smac[6], uint16_t quanta)
{
	uint16_t len = mac_ctrl_hdr(buf, smac, MAC_CTRL_PAUSE);

	put_be16(buf + 16, quanta);
	return len;
}
