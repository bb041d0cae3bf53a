/* SPDX-License-Identifier: MIT */
/*
 * The engine: xroce's model of the NIC hardware. Everything it does is
 * configured through its register file (xroce/regmap.h) and host-memory
 * rings; this header only creates and destroys engines and connects them
 * to the outside (link state, debug socket).
 */
#ifndef XROCE_ENGINE_H
#define XROCE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "xroce/regio.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xr_engine;

/* A new engine at power-on: CTRL.soft_reset set, all tables empty.
 * NULL with errno ENOMEM on failure. */
struct xr_engine *xr_engine_create(void);
void xr_engine_destroy(struct xr_engine *e);

/* One 32-bit register access, as an AXI-Lite slave answers it. */
enum xr_axi_resp xr_engine_reg_read(struct xr_engine *e, uint32_t addr, uint32_t *val);
enum xr_axi_resp xr_engine_reg_write(struct xr_engine *e, uint32_t addr, uint32_t val);

/* Link state as the MAC reports it (links set it; tests may too). */
void xr_engine_set_link_up(struct xr_engine *e, bool up);

/*
 * Serves the register file on a UNIX stream socket at path (created, and
 * removed by xr_engine_stop_debug or destroy) from a thread of its own.
 * Returns 0 or -errno (-EADDRINUSE, -ENAMETOOLONG, -EBUSY if already serving).
 */
int xr_engine_serve_debug(struct xr_engine *e, const char *path);
void xr_engine_stop_debug(struct xr_engine *e);

#ifdef __cplusplus
}
#endif
#endif
