/* SPDX-License-Identifier: MIT */
#ifndef XR_NIC_REGMAP_INTERNAL_H
#define XR_NIC_REGMAP_INTERNAL_H

#include "xroce/regio.h"
#include "xroce/regmap.h"

/* Bit position and width of a named field of a register; 0 or -ENOENT. */
int xr_reg_field(const struct xr_reg_desc *d, const char *field, unsigned *lo, unsigned *width);

/* MAC in two registers: LOW holds bytes 2-5, HIGH bytes 0-1 (the seed's layout). */
void xr_mac_to_regs(const uint8_t mac[6], uint32_t *low, uint32_t *high);
void xr_mac_from_regs(uint8_t mac[6], uint32_t low, uint32_t high);

#endif
