/* SPDX-License-Identifier: MIT */
/* The reflected CRC-32's byte table (icrc.c, filled at load time): one
 * step, r = xr_crc_table[r & 0xFF] ^ (r >> 8), appends a zero byte to a
 * raw register. */
#ifndef XROCE_WIRE_CRC_TABLE_H
#define XROCE_WIRE_CRC_TABLE_H
#include <stdint.h>

extern uint32_t xr_crc_table[256];

#endif
