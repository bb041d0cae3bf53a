/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/link.h"

void xr_link_close(struct xr_link *l)
{
	if (l && l->ops->close)
		l->ops->close(l);
}

int xr_link_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	memset(mac, 0, 6);
	return l->ops->resolve ? l->ops->resolve(l, gid, mac) : 0;
}

int xr_link_rx_backlog(struct xr_link *l, uint32_t *queued, uint32_t *capacity)
{
	*queued = *capacity = 0;
	return l->ops->rx_backlog ? l->ops->rx_backlog(l, queued, capacity) : -EOPNOTSUPP;
}
