/* SPDX-License-Identifier: MIT */
/*
 * Address handles for UD sends: ibv_create_ah / ibv_destroy_ah onto
 * xroce's AHs, and the reply address read out of a UD receive
 * (ibv_init_ah_from_wc, ibv_create_ah_from_wc).
 */
#include <arpa/inet.h>

#include "xrv.h"

#define GRH_LEN 40
#define GRH_IPV4_OFF 20   /* RoCE v2 over IPv4: the IP header is the GRH's last 20 bytes */

int xrv_ah_attr_from_ibv(const char *verb, const struct ibv_ah_attr *in, struct xr_ah_attr *out)
{
	if (!in->is_global) {
		xrv_log("%s: the address has no GRH (is_global 0, a LID path): RoCE reaches its peer by GID "
			"(ibv_rc_pingpong: add -g 0)", verb);
		return EINVAL;
	}
	if (in->grh.sgid_index != 0) {
		xrv_log("%s: GID index %u: xroce0 has one GID, index 0", verb, in->grh.sgid_index);
		return EINVAL;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->grh.dgid.raw, 16);
	out->grh.flow_label = in->grh.flow_label;
	out->grh.sgid_index = in->grh.sgid_index;
	out->grh.hop_limit = in->grh.hop_limit;
	out->grh.traffic_class = in->grh.traffic_class;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->is_global = in->is_global;
	out->port_num = in->port_num;
	return 0;
}

XRV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct xr_ah_attr a;
	struct xrv_ah *ah;
	int rc;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	rc = xrv_ah_attr_from_ibv("ibv_create_ah", attr, &a);
	if (rc) {
		errno = rc;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->xr = xr_create_ah(XRV_OF(xrv_pd, pd)->xr, &a);
	if (!ah->xr) {
		int err = errno;
		if (err == EHOSTUNREACH) {
			char addr[INET6_ADDRSTRLEN] = "?";
			inet_ntop(AF_INET6, attr->grh.dgid.raw, addr, sizeof(addr));
			xrv_log("ibv_create_ah: no route or neighbour for %s", addr);
		}
		free(ah);
		errno = err;
		return NULL;
	}
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->ibv.handle = (uint32_t)(uintptr_t)ah;
	return &ah->ibv;
}
XRV_DEFAULT(ibv_create_ah);

XRV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibv)
{
	struct xrv_ah *ah = XRV_OF(xrv_ah, ibv);
	int rc;

	if (!ibv)
		return EINVAL;
	rc = xr_destroy_ah(ah->xr);
	if (rc)
		return rc;
	free(ah);
	return 0;
}
XRV_DEFAULT(ibv_destroy_ah);

/* RoCE v2 over IPv4: the GRH's last 20 bytes are an IPv4 header with a
 * valid checksum (as libibverbs tells them from an IPv6 header). */
static bool grh_is_ipv4(const uint8_t *g)
{
	const uint8_t *ip = g + GRH_IPV4_OFF;
	uint32_t sum = 0;

	if (ip[0] != 0x45)
		return false;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return sum == 0xFFFF;
}

/* The sender's address from a UD receive: its GID out of the 40 GRH bytes
 * at the head of the receive buffer (for RoCE v2 over IPv4, the IPv4
 * header in their last 20), as a reply's address. */
XRV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				   struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	const uint8_t *g = (const uint8_t *)grh;

	if (!context || !wc || !grh || !ah_attr) {
		errno = EINVAL;
		return -1;
	}
	if (!(wc->wc_flags & IBV_WC_GRH)) {
		xrv_log("ibv_init_ah_from_wc: the completion has no GRH: RoCE needs the sender's GID");
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	ah_attr->is_global = 1;
	ah_attr->grh.sgid_index = 0;
	ah_attr->grh.hop_limit = 0xFF;
	if (grh_is_ipv4(g)) {
		uint32_t src;
		memcpy(&src, g + GRH_IPV4_OFF + 12, 4);
		memset(ah_attr->grh.dgid.raw, 0, 10);
		ah_attr->grh.dgid.raw[10] = ah_attr->grh.dgid.raw[11] = 0xFF;
		memcpy(ah_attr->grh.dgid.raw + 12, &src, 4);
		ah_attr->grh.traffic_class = g[GRH_IPV4_OFF + 1];
	} else {
		uint32_t vtf = ntohl(grh->version_tclass_flow);
		memcpy(ah_attr->grh.dgid.raw, grh->sgid.raw, 16);
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah_attr->grh.flow_label = vtf & 0xFFFFF;
	}
	return 0;
}

XRV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (!pd || ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

_Static_assert(sizeof(struct ibv_grh) == GRH_LEN, "the GRH is 40 bytes");
