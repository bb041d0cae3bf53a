/* SPDX-License-Identifier: MIT */
#ifndef XR_NIC_RECV_H
#define XR_NIC_RECV_H

#include "engine.h"
#include "../wire/bytes.h"

/*
 * Checks a parsed packet against the engine and its destination QP.
 * Returns 0 with *out set to the QP, locked (the caller unlocks it when
 * done), or 1 + the counter of the drop reason (already counted).
 */
/* The packet's destination MAC (with check_mac) and IP are this engine's. */
bool xr_recv_addressed_to_us(struct xr_engine *e, const struct xr_pkt *p, bool check_mac);
/* Counts a drop for why, unless the packet's deferred ICRC check fails
 * (then it counts as a bad ICRC alone); returns 1 + why. */
int xr_recv_drop(struct xr_engine *e, const struct xr_pkt *p, enum xr_counter why);
int xr_recv_check(struct xr_engine *e, const struct xr_pkt *p, bool check_mac, struct xr_qp **out);
/* The same checks against QP qpn alone (the packet's address checked
 * already, or a group's: multicast). */
int xr_recv_check_qp(struct xr_engine *e, const struct xr_pkt *p, uint32_t qpn, struct xr_qp **out);

#endif
