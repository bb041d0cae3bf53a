/* SPDX-License-Identifier: MIT */
/*
 * The XDP link's filter: redirects to the AF_XDP socket only what is the
 * link's (RoCE v2 to its address, ARP and neighbour discovery about it,
 * PFC frames) and passes everything else to the kernel, so the kernel's own
 * traffic on the interface keeps working. libxdp's default program
 * redirects every frame of the queue, which would cut the kernel off.
 * RoCE v2 to a multicast group the link joined (xr_groups) is the link's
 * too; the link checks the group's MAC.
 * Built with clang -target bpf; the link embeds the object and loads it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_ARP 0x0806
#define ETH_P_PFC 0x8808
#define ROCE_PORT 4791

/* Set by the link after loading: the address it owns. */
struct xr_xdp_cfg {
	__u8 addr[16];   /* IPv4-mapped (::ffff:a.b.c.d) for IPv4 */
	__u32 is_v4;
	__u32 active;
};

/* What the filter did, for the link's counters (indexes: enum in xdp.c). */
enum { C_ROCE, C_ARP, C_ND, C_PFC, C_PASS, C_NO_XSK, C_MAX };

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xr_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xr_xdp_cfg);
} xr_cfg SEC(".maps");

/* The groups the link joined (its mcast op), as GIDs: IPv4-mapped for
 * IPv4. Up to XR_LINK_MCAST_MAX (src/link/mcast_set.h). */
struct xr_group {
	__u8 gid[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct xr_group);
	__type(value, __u8);
} xr_groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xr_counts SEC(".maps");

static __always_inline __u16 be16(const __u8 *p)
{
	return (__u16)((__u16)p[0] << 8 | p[1]);
}

static __always_inline int same(const __u8 *a, const __u8 *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static __always_inline void count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&xr_counts, &what);
	if (c)
		(*c)++;
}

/* Whether dst (n bytes: 4 for IPv4, 16 for IPv6) is a joined group. */
static __always_inline int joined(const __u8 *dst, int n)
{
	struct xr_group g = { 0 };

	if (n == 4) {
		if ((dst[0] & 0xF0) != 0xE0)
			return 0;
		g.gid[10] = 0xFF;
		g.gid[11] = 0xFF;
		for (int i = 0; i < 4; i++)
			g.gid[12 + i] = dst[i];
	} else {
		if (dst[0] != 0xFF)
			return 0;
		for (int i = 0; i < 16; i++)
			g.gid[i] = dst[i];
	}
	return bpf_map_lookup_elem(&xr_groups, &g) != 0;
}

/* Which counter a frame belongs to, or C_PASS for the kernel's. */
static __always_inline __u32 classify(const __u8 *d, const __u8 *end, const struct xr_xdp_cfg *cfg)
{
	__u16 type;

	if (d + 14 > end)
		return C_PASS;
	type = be16(d + 12);
	if (type == ETH_P_PFC)
		return C_PFC;
	if (type == ETH_P_ARP) {
		/* Requests and replies whose target protocol address is ours. */
		if (d + 14 + 28 > end || !cfg->is_v4)
			return C_PASS;
		return same(d + 14 + 24, cfg->addr + 12, 4) ? C_ARP : C_PASS;
	}
	if (type == ETH_P_IPV4) {
		const __u8 *ip = d + 14, *udp;
		if (ip + 20 > end || !cfg->is_v4 || ip[9] != 17 ||
		    (!same(ip + 16, cfg->addr + 12, 4) && !joined(ip + 16, 4)))
			return C_PASS;
		udp = ip + (ip[0] & 0xF) * 4;
		if (udp + 8 > end)
			return C_PASS;
		return be16(udp + 2) == ROCE_PORT ? C_ROCE : C_PASS;
	}
	if (type == ETH_P_IPV6) {
		const __u8 *ip = d + 14, *l4 = ip + 40;
		if (l4 + 8 > end || cfg->is_v4)
			return C_PASS;
		if (ip[6] == 17)
			return (same(ip + 24, cfg->addr, 16) || joined(ip + 24, 16)) && be16(l4 + 2) == ROCE_PORT ?
				       C_ROCE : C_PASS;
		if (ip[6] != 58)
			return C_PASS;
		/* A solicitation whose target is ours (sent to a multicast
		 * group), or an advertisement sent to us. */
		if (l4[0] == 135 && l4 + 24 <= end)
			return same(l4 + 8, cfg->addr, 16) ? C_ND : C_PASS;
		if (l4[0] == 136)
			return same(ip + 24, cfg->addr, 16) ? C_ND : C_PASS;
	}
	return C_PASS;
}

SEC("xdp")
int xr_xdp_filter(struct xdp_md *ctx)
{
	const __u8 *d = (const __u8 *)(long)ctx->data, *end = (const __u8 *)(long)ctx->data_end;
	__u32 zero = 0, what, queue = ctx->rx_queue_index;
	struct xr_xdp_cfg *cfg = bpf_map_lookup_elem(&xr_cfg, &zero);

	if (!cfg || !cfg->active)
		return XDP_PASS;
	what = classify(d, end, cfg);
	if (what == C_PASS) {
		count(C_PASS);
		return XDP_PASS;
	}
	count(what);
	/* No socket on this queue: the kernel gets it (it would not be ours
	 * to lose); counted so a multi-queue interface shows the cause. */
	if (!bpf_map_lookup_elem(&xr_xsks, &queue)) {
		count(C_NO_XSK);
		return XDP_PASS;
	}
	return (int)bpf_redirect_map(&xr_xsks, queue, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
