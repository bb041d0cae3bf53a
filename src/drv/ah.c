/* SPDX-License-Identifier: MIT */
/*
 * Address handles for UD sends. The address lives in host memory only: a
 * UD WQE carries a copy of it (the engine keeps no AH table), so creating
 * and destroying an AH touch no register (docs/ud-uc-srq.md).
 */
#include "drv.h"

/* The UDP source port of a flow label (rdma_flow_label_to_udp_sport's
 * rule: 14 bits folded, in the 0xC000 range). */
static uint16_t sport_of_flow_label(uint32_t fl)
{
	uint32_t lo = fl & 0x03FFF, hi = fl & 0xFC000;

	return (uint16_t)(((lo ^ (hi >> 14)) & 0x3FFF) | 0xC000);
}

struct xr_ah *xr_create_ah(struct xr_pd *pd, const struct xr_ah_attr *attr)
{
	struct xr_ah *ah;
	uint8_t mac[6];

	if (!pd || !attr || !attr->is_global || (attr->port_num && attr->port_num != 1) ||
	    attr->grh.sgid_index != 0) {
		errno = EINVAL;
		return NULL;
	}
	/* The neighbour's MAC, as the kernel resolves it for a RoCE AH; a
	 * group's is its own (rdma_ip2gid's rule, no resolution). */
	if (xr_gid_is_mcast(&attr->grh.dgid)) {
		/* The device's one address is the source: a group of the
		 * other family would leave from 0.0.0.0 or ::. */
		if (xr_gid_is_ipv4(&attr->grh.dgid) != xr_gid_is_ipv4(&pd->ctx->gid)) {
			errno = EHOSTUNREACH;
			return NULL;
		}
		xr_gid_mcast_mac(&attr->grh.dgid, mac);
	} else if (xr_link_resolve(pd->ctx->link, &attr->grh.dgid, mac)) {
		errno = EHOSTUNREACH;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ctx = pd->ctx;
	memcpy(ah->av.dgid, attr->grh.dgid.raw, 16);
	memcpy(ah->av.dmac, mac, 6);
	ah->av.flow_label = attr->grh.flow_label & 0xFFFFF;
	ah->av.udp_sport = ah->av.flow_label ? sport_of_flow_label(ah->av.flow_label) : 0;
	ah->av.traffic_class = attr->grh.traffic_class;
	ah->av.hop_limit = attr->grh.hop_limit;
	return ah;
}

int xr_destroy_ah(struct xr_ah *ah)
{
	if (!ah)
		return EINVAL;
	free(ah);
	return 0;
}
