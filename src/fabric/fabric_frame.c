/* SPDX-License-Identifier: MIT */
/* Frame facts for the switch: where the IP header is behind VLAN tags,
 * the frame's priority (PCP or DSCP), MAC control frames, times. */
#include <string.h>

#include "../wire/bytes.h"
#include "fabric_int.h"

bool xr_fab_frame_info(const uint8_t *d, uint16_t len, struct frame_info *fi)
{
	uint16_t off = 12;

	memset(fi, 0, sizeof(*fi));
	if (len < XR_ETH_HLEN)
		return false;
	fi->ethertype = get_be16(d + off);
	/* Up to two tags (802.1ad outer, 802.1Q inner); the outermost PCP counts. */
	for (int tags = 0; tags < 2 && (fi->ethertype == XR_ETHERTYPE_VLAN || fi->ethertype == ETHERTYPE_QINQ); tags++) {
		if (len < off + 2 + XR_VLAN_HLEN)
			return true;   /* a tag with nothing behind it: L2 only */
		if (!fi->vlan) {
			fi->vlan = true;
			fi->pcp = d[off + 2] >> 5;
		}
		off += XR_VLAN_HLEN;
		fi->ethertype = get_be16(d + off);
	}
	off += 2;
	if (fi->ethertype == XR_ETHERTYPE_IPV4 && len >= off + XR_IPV4_HLEN && (d[off] >> 4) == 4 &&
	    (d[off] & 0xF) >= 5 && len >= off + (d[off] & 0xF) * 4) {
		fi->ip_version = 4;
		fi->l3_off = off;
		fi->tclass = d[off + 1];
	} else if (fi->ethertype == XR_ETHERTYPE_IPV6 && len >= off + XR_IPV6_HLEN && (d[off] >> 4) == 6) {
		fi->ip_version = 6;
		fi->l3_off = off;
		fi->tclass = (uint8_t)((d[off] & 0xF) << 4 | d[off + 1] >> 4);
	}
	return true;
}

uint8_t xr_fab_prio(const struct xr_fabric *fab, const struct frame_info *fi)
{
	if (fab->cfg.prio_src == XR_FABRIC_PRIO_DSCP)
		return fi->ip_version ? fab->dscp_map[fi->tclass >> 2] : fab->cfg.default_prio;
	return fi->vlan ? fi->pcp : fab->cfg.default_prio;
}

uint8_t xr_fabric_frame_prio(const struct xr_fabric *fab, const uint8_t *d, uint16_t len)
{
	struct frame_info fi;

	xr_fab_frame_info(d, len, &fi);
	return xr_fab_prio(fab, &fi);
}

uint64_t xr_fab_ser_ns(uint64_t bytes, uint64_t rate_bps)
{
	if (!rate_bps)
		return 0;
	/* Rounded to the nearest ns; bytes * 8e9 fits 64 bits for any frame. */
	return (bytes * 8000000000ull + rate_bps / 2) / rate_bps;
}

/* splitmix64: seedable, so a run's marks are reproduced by its seed. */
uint64_t xr_fab_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* One quantum is 512 bit times at the port's speed. */
uint64_t xr_fabric_quanta_ns(uint16_t quanta, uint64_t rate_bps)
{
	uint64_t r = rate_bps ? rate_bps : 100000000000ull;
	return ((uint64_t)quanta * 512 * 1000000000ull + r - 1) / r;
}

uint16_t xr_fabric_ns_quanta(uint64_t ns, uint64_t rate_bps)
{
	uint64_t r = rate_bps ? rate_bps : 100000000000ull;
	/* ns * r can pass 2^64 for long pauses at high speeds: divide first. */
	uint64_t bits = ns / 1000000000ull * r + (ns % 1000000000ull) * r / 1000000000ull;
	uint64_t q = (bits + 511) / 512;
	return q > 0xFFFF ? 0xFFFF : (uint16_t)q;
}
