/* SPDX-License-Identifier: MIT */
/*
 * The rest of the public ABI: strings, rate conversions, fork support
 * (nothing to do: memory is never pinned), sysfs (there is none), and the
 * verbs xroce refuses for now (multicast, imports, ECE), each with a
 * message naming what is missing.
 */
#include "xrv.h"

/* ---- strings ---- */

XRV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return xr_wc_status_str((enum xr_wc_status)status);
}

XRV_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
	static const char *const names[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter", [IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router", [IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC", [IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};
	return t >= 0 && (size_t)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "unknown";
}

XRV_EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
	static const char *const names[] = { "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
					     "PORT_ACTIVE_DEFER" };
	return (size_t)s < sizeof(names) / sizeof(names[0]) ? names[s] : "invalid state";
}

XRV_EXPORT const char *ibv_event_type_str(enum ibv_event_type e)
{
	static const char *const names[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error", [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established", [IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated", [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error", [IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error", [IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change", [IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error", [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached", [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change", [IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};
	return (size_t)e < sizeof(names) / sizeof(names[0]) && names[e] ? names[e] : "unknown";
}

/* ---- rates: enum ibv_rate <-> multiples of 2.5 Gb/s and Mb/s ---- */

static const struct { enum ibv_rate rate; int mult, mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 }, { IBV_RATE_5_GBPS, 2, 5000 }, { IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 }, { IBV_RATE_30_GBPS, 12, 30000 }, { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 }, { IBV_RATE_80_GBPS, 32, 80000 }, { IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, 0, 14062 }, { IBV_RATE_56_GBPS, 0, 56250 }, { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 }, { IBV_RATE_25_GBPS, 10, 25781 }, { IBV_RATE_100_GBPS, 40, 103125 },
	{ IBV_RATE_200_GBPS, 80, 206250 }, { IBV_RATE_300_GBPS, 120, 309375 }, { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 }, { IBV_RATE_400_GBPS, 160, 425000 }, { IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 }, { IBV_RATE_1200_GBPS, 480, 1275000 },
};
#define NRATES (sizeof(rates) / sizeof(rates[0]))

XRV_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].rate == rate && rates[i].mult)
			return rates[i].mult;
	return -1;
}

XRV_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].mult == mult && mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

XRV_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

XRV_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < NRATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- fork and sysfs ---- */

XRV_EXPORT int ibv_fork_init(void)
{
	return 0;   /* registration pins nothing: a child's copy-on-write is harmless */
}

XRV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

XRV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base, (void)size;
	return 0;
}

XRV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base, (void)size;
	return 0;
}

XRV_EXPORT const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

XRV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir, (void)buf, (void)size;
	/* librdmacm's first step (its ABI check) is this read: the one place
	 * to say which feature a program asking for the RDMA CM misses. */
	if (file && (strstr(file, "rdma_cm") || strstr(file, "infiniband_ucma")))
		xrv_unsupported("librdmacm", "the RDMA connection manager (rdma_cm; perftest -R): xroce has no "
				"kernel CM, connect over the program's own TCP exchange");
	errno = ENOENT;   /* xroce0 has no sysfs node */
	return -1;
}

XRV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt, ...)
{
	(void)buf, (void)size, (void)sysfs_dev, (void)fnfmt;
	errno = ENOENT;
	return -1;
}

/* A provider library's constructor registers its driver here: nothing to
 * do, xroce0 is the only device. */
XRV_EXPORT void verbs_register_driver_34(const void *ops)
{
	(void)ops;
}

XRV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					   uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	xr_gid g;
	int rc;

	if (!context || !attr || !eth_mac || !attr->is_global)
		return EINVAL;
	memcpy(g.raw, attr->grh.dgid.raw, 16);
	rc = xr_link_resolve(xrv_ctx(context)->link, &g, eth_mac);
	if (vid)
		*vid = 0xFFFF;   /* no VLAN */
	return rc ? -rc : 0;
}

XRV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;   /* no promise beyond the spec's: poll the completion */
}

/* ---- multicast groups ---- */

/* lid is InfiniBand's multicast LID: RoCE has none, and ignores it. */
static int mcast(struct ibv_qp *qp, const union ibv_gid *gid, bool attach)
{
	xr_gid g;

	if (!qp || !gid)
		return EINVAL;
	memcpy(g.raw, gid->raw, 16);
	return attach ? xr_attach_mcast(XRV_OF(xrv_qp, qp)->xr, &g) : xr_detach_mcast(XRV_OF(xrv_qp, qp)->xr, &g);
}

XRV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;
	return mcast(qp, gid, true);
}
XRV_DEFAULT(ibv_attach_mcast);

XRV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;
	return mcast(qp, gid, false);
}
XRV_DEFAULT(ibv_detach_mcast);

/* ---- refused for now ---- */



XRV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	xrv_unsupported("ibv_import_device", "sharing a device between processes through a kernel fd");
	return NULL;
}

XRV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context, (void)pd_handle;
	xrv_unsupported("ibv_import_pd", "importing objects from another process");
	return NULL;
}

XRV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd, (void)mr_handle;
	xrv_unsupported("ibv_import_mr", "importing objects from another process");
	return NULL;
}

XRV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context, (void)dm_handle;
	xrv_unsupported("ibv_import_dm", "device memory");
	return NULL;
}

XRV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

XRV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

XRV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

XRV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;   /* no enhanced connection options to negotiate */
}

XRV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}
