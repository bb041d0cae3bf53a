/* SPDX-License-Identifier: MIT */
/*
 * Devices: the one device xroce0, its configuration (XROCE_LINK,
 * XROCE_ADDR, XROCE_IFNAME, set by xroce-run), opening it (a link and an
 * xroce device with its progress thread, shared by every open in the
 * process) and the device, port, GID and P_Key queries.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "xrv.h"

/* ---- messages ---- */

void xrv_log(const char *fmt, ...)
{
	va_list ap;

	fputs("xroce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void xrv_unsupported(const char *verb, const char *why)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static const char *said[32];
	bool first = true;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < 32 && said[i]; i++)
		if (said[i] == verb)
			first = false;
	for (unsigned i = 0; first && i < 32; i++)
		if (!said[i]) {
			said[i] = verb;
			break;
		}
	pthread_mutex_unlock(&lock);
	if (first)
		xrv_log("%s: not supported: %s", verb, why);
	errno = EOPNOTSUPP;
}

/* ---- configuration ---- */

struct xrv_config {
	char link[16], addr[64], ifname[IF_NAMESIZE];
	char why[160];                /* how the address was chosen, when it was not given */
	bool retry7_forever;
	bool no_host_path;           /* XROCE_HOST_PATH=0: local peers over UDP too */
	bool engine_rt;              /* XROCE_ENGINE_RT=0: the engine's thread at normal priority */
	char bad[160];               /* a variable refused, and why */
};

/* The interface of the IPv4 default route, from /proc/net/route. */
static bool default_route_ifname(char *ifname, size_t len)
{
	FILE *f = fopen("/proc/net/route", "r");
	char line[256], name[64];
	unsigned dest, flags;
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %x %*x %x", name, &dest, &flags) == 3 && dest == 0 && (flags & 1)) {
			snprintf(ifname, len, "%s", name);
			found = true;
		}
	fclose(f);
	return found;
}

/* No XROCE_ADDR: the IPv4 address of the default route's interface, else
 * the first non-loopback IPv4 address that is up, else 127.0.0.1. */
static void pick_address(struct xrv_config *cfg)
{
	struct ifaddrs *ifs, *i;
	char route_if[64] = "";
	bool have_route = default_route_ifname(route_if, sizeof(route_if));

	snprintf(cfg->addr, sizeof(cfg->addr), "127.0.0.1");
	snprintf(cfg->why, sizeof(cfg->why), "no other IPv4 address is up");
	if (getifaddrs(&ifs))
		return;
	for (int pass = 0; pass < 2; pass++)
		for (i = ifs; i; i = i->ifa_next) {
			const struct sockaddr_in *sin = (const void *)i->ifa_addr;
			if (!sin || sin->sin_family != AF_INET || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
				continue;
			if (pass == 0 && (!have_route || strcmp(i->ifa_name, route_if)))
				continue;
			inet_ntop(AF_INET, &sin->sin_addr, cfg->addr, sizeof(cfg->addr));
			snprintf(cfg->why, sizeof(cfg->why), "%s's address%s", i->ifa_name,
				 pass == 0 ? ", the default route's interface" : "");
			freeifaddrs(ifs);
			return;
		}
	freeifaddrs(ifs);
}

/* Notes the first variable refused; the device then does not open. */
static void refuse(struct xrv_config *cfg, const char *name, const char *v, const char *why)
{
	if (!cfg->bad[0])
		snprintf(cfg->bad, sizeof(cfg->bad), "%s='%.48s': %s", name, v, why);
}

/* A switch: unset or empty keeps dflt; 0 or 1; anything else refused. */
static bool env_switch(struct xrv_config *cfg, const char *name, bool dflt)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return dflt;
	if (strcmp(v, "0") && strcmp(v, "1"))
		refuse(cfg, name, v, "expected 0 or 1");
	return !strcmp(v, "1");
}

static void read_config(struct xrv_config *cfg)
{
	const char *link = getenv("XROCE_LINK"), *addr = getenv("XROCE_ADDR"), *ifname = getenv("XROCE_IFNAME");

	memset(cfg, 0, sizeof(*cfg));
	if (link && strlen(link) >= sizeof(cfg->link))
		refuse(cfg, "XROCE_LINK", link, "expected udp, raw, xdp or host");
	snprintf(cfg->link, sizeof(cfg->link), "%s", link && *link ? link : "udp");
	if (ifname && strlen(ifname) >= sizeof(cfg->ifname))
		refuse(cfg, "XROCE_IFNAME", ifname, "longer than an interface name");
	snprintf(cfg->ifname, sizeof(cfg->ifname), "%s", ifname ? ifname : "");
	if (addr && strlen(addr) >= sizeof(cfg->addr))
		refuse(cfg, "XROCE_ADDR", addr, "longer than an address");
	if (addr && *addr)
		snprintf(cfg->addr, sizeof(cfg->addr), "%s", addr);
	else
		pick_address(cfg);
	cfg->retry7_forever = env_switch(cfg, "XROCE_RETRY7_FOREVER", false);
	cfg->no_host_path = !env_switch(cfg, "XROCE_HOST_PATH", true);
	cfg->engine_rt = env_switch(cfg, "XROCE_ENGINE_RT", true);
	env_switch(cfg, "XROCE_EXIT_REPORT", false);   /* read by report.c; checked here */
}

/* ---- the device ---- */

static struct ibv_device xrv_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = XRV_DEV_NAME,
	.dev_name = XRV_DEV_NAME,
	.dev_path = "/sys/class/infiniband_verbs/" XRV_DEV_NAME,
	.ibdev_path = "/sys/class/infiniband/" XRV_DEV_NAME,
};

XRV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &xrv_device;
	if (num_devices)
		*num_devices = 1;
	return list;
}
XRV_DEFAULT(ibv_get_device_list);

XRV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}
XRV_DEFAULT(ibv_free_device_list);

XRV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}
XRV_DEFAULT(ibv_get_device_name);

XRV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device == &xrv_device ? 0 : -1;
}

/* A GUID from the address: 02:78:72 ("xr", locally administered), then
 * the IPv4 address or a fold of the IPv6 one. */
static __be64 guid_of(const xr_gid *gid)
{
	uint64_t g = 0x0278720000000000ull, fold = 0;

	for (int i = 0; i < 16; i++)
		fold = fold * 131 + gid->raw[i];
	g |= xr_gid_is_ipv4(gid) ? xr_gid_to_ipv4(gid) : (fold & 0xFFFFFFFFFFull);
	return htobe64(g);
}

XRV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct xrv_config cfg;
	xr_gid gid;

	if (device != &xrv_device)
		return 0;
	read_config(&cfg);
	return xr_gid_parse(&gid, cfg.addr) ? 0 : guid_of(&gid);
}
XRV_DEFAULT(ibv_get_device_guid);

/* One link and xroce device per process, shared by every open context
 * (an address and its port 4791 can be bound only once). */
static struct {
	pthread_mutex_t lock;
	unsigned refs;
	struct xr_link *link;
	struct xr_context *xr;
	char addr[64];
	uint32_t ifindex;             /* raw link: the interface's index */
} backend = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int backend_get(struct xrv_context *x)
{
	struct xrv_config cfg;
	struct xr_link_spec spec = { 0 };
	struct xr_device_opts opts = { 0 };
	struct xr_link *base;   /* the link itself, under a pcap tap */
	char msg[256] = "";

	pthread_mutex_lock(&backend.lock);
	if (backend.refs) {
		backend.refs++;
		goto done;
	}
	read_config(&cfg);
	if (cfg.bad[0]) {
		xrv_log("%s", cfg.bad);
		pthread_mutex_unlock(&backend.lock);
		return EINVAL;
	}
	if (!strcmp(cfg.link, "mem")) {
		xrv_log("XROCE_LINK=mem joins two devices inside one program; choose udp, raw or host");
		pthread_mutex_unlock(&backend.lock);
		return EINVAL;
	}
	if (cfg.why[0])
		xrv_log("%s link on %s (%s; set XROCE_ADDR or xroce-run --addr to choose)", cfg.link, cfg.addr, cfg.why);
	spec.kind = cfg.link;
	spec.addr = cfg.addr;
	spec.ifname = cfg.ifname[0] ? cfg.ifname : NULL;
	spec.udp_no_host_path = cfg.no_host_path;
	backend.link = xr_link_open(&spec, msg, sizeof(msg));
	if (!backend.link) {
		int err = errno ? errno : EINVAL;
		xrv_log("cannot open the %s link on %s: %s", cfg.link, cfg.addr, msg[0] ? msg : strerror(err));
		pthread_mutex_unlock(&backend.lock);
		return err;
	}
	base = backend.link;
	/* XROCE_PCAP: every frame this device sends and receives, to a file. */
	if (getenv("XROCE_PCAP") && *getenv("XROCE_PCAP")) {
		struct xr_link *tap = xr_link_pcap_tap(backend.link, getenv("XROCE_PCAP"));
		if (!tap) {
			xrv_log("XROCE_PCAP=%s: cannot write it: %s", getenv("XROCE_PCAP"), strerror(errno));
			xr_link_close(backend.link);
			backend.link = NULL;
			pthread_mutex_unlock(&backend.lock);
			return EIO;
		}
		backend.link = tap;
	}
	opts.addr = cfg.addr;
	opts.progress = XR_PROGRESS_THREAD;
	opts.retry7_forever = cfg.retry7_forever;
	backend.xr = xr_open_device(backend.link, &opts);
	if (!backend.xr) {
		int err = errno ? errno : EIO;
		xrv_log("cannot start the device on %s: %s", cfg.addr, strerror(err));
		xr_link_close(backend.link);
		backend.link = NULL;
		pthread_mutex_unlock(&backend.lock);
		return err;
	}
	/* Programs spin on memory (ib_write_lat) while the engine's thread
	 * delivers: at real-time priority a woken thread preempts the spinner
	 * at once instead of after its time slice (milliseconds). It sleeps
	 * whenever it is idle, so it never holds a core from the program for
	 * longer than the work takes. Without the privilege: normal priority. */
	if (cfg.engine_rt)
		xr_engine_thread_realtime(xr_context_engine(backend.xr), 1);
	snprintf(backend.addr, sizeof(backend.addr), "%s", cfg.addr);
	backend.ifindex = cfg.ifname[0] ? if_nametoindex(cfg.ifname) : 0;
	backend.refs = 1;
	xrv_report_open(backend.xr, base);
	/* XROCE_REGS_SOCKET: the register file for xroce-regs (counters, QP
	 * table, event log) of a program that knows nothing of it. */
	if (getenv("XROCE_REGS_SOCKET") && *getenv("XROCE_REGS_SOCKET")) {
		int rc = xr_engine_serve_debug(xr_context_engine(backend.xr), getenv("XROCE_REGS_SOCKET"));
		if (rc)
			xrv_log("XROCE_REGS_SOCKET=%s: %s (the device runs without it)", getenv("XROCE_REGS_SOCKET"),
				strerror(-rc));
	}
done:
	x->xr = backend.xr;
	x->link = backend.link;
	snprintf(x->addr, sizeof(x->addr), "%s", backend.addr);
	x->ifindex = backend.ifindex;
	xr_query_gid(x->xr, &x->gid);
	pthread_mutex_unlock(&backend.lock);
	return 0;
}

static void backend_put(void)
{
	pthread_mutex_lock(&backend.lock);
	if (backend.refs && !--backend.refs) {
		xrv_report_close();
		xr_close_device(backend.xr);
		xr_link_close(backend.link);
		backend.xr = NULL;
		backend.link = NULL;
	}
	pthread_mutex_unlock(&backend.lock);
}

XRV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct xrv_context *x;
	struct ibv_context *c;
	int err;

	if (device != &xrv_device) {
		errno = ENODEV;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	/* The program's async_fd: an epoll set holding the device's event fd,
	 * so its O_NONBLOCK is the program's to set. */
	x->async_fd = epoll_create1(EPOLL_CLOEXEC);
	err = x->async_fd < 0 ? errno : backend_get(x);
	if (!err) {
		struct epoll_event ev = { .events = EPOLLIN };
		if (epoll_ctl(x->async_fd, EPOLL_CTL_ADD, xr_async_event_fd(x->xr), &ev)) {
			err = errno;
			backend_put();
		}
	}
	if (err) {
		if (x->async_fd >= 0)
			close(x->async_fd);
		free(x);
		errno = err;
		return NULL;
	}
	c = &x->vctx.context;
	x->vctx.sz = sizeof(x->vctx);
	x->vctx.query_port = xrv_query_port;
	x->vctx.query_device_ex = xrv_query_device_ex;
	x->vctx.create_qp_ex = xrv_create_qp_ex;
	x->vctx.create_cq_ex = xrv_create_cq_ex;
	x->vctx.modify_qp_rate_limit = xrv_modify_qp_rate_limit;
	c->device = device;
	c->cmd_fd = -1;
	c->async_fd = x->async_fd;
	c->num_comp_vectors = 1;
	c->abi_compat = (void *)UINTPTR_MAX;   /* an extended (verbs_context) context */
	pthread_mutex_init(&c->mutex, NULL);
	c->ops.poll_cq = xrv_poll_cq;
	c->ops.req_notify_cq = xrv_req_notify_cq;
	c->ops.post_send = xrv_post_send;
	c->ops.post_recv = xrv_post_recv;
	c->ops.post_srq_recv = xrv_post_srq_recv;
	c->ops.alloc_mw = xrv_alloc_mw;
	c->ops.bind_mw = xrv_bind_mw;
	c->ops.dealloc_mw = xrv_dealloc_mw;
	return c;
}
XRV_DEFAULT(ibv_open_device);

XRV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct xrv_context *x;

	if (!context)
		return EINVAL;
	x = xrv_ctx(context);
	backend_put();
	close(x->async_fd);
	pthread_mutex_destroy(&context->mutex);
	free(x);
	return 0;
}
XRV_DEFAULT(ibv_close_device);

/* ---- queries ---- */

static void fill_device_attr(struct xrv_context *x, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "xroce 0.1.0");
	a->node_guid = a->sys_image_guid = guid_of(&x->gid);
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = 0xFFFFF000u;        /* any power of two from 4 KiB */
	a->vendor_id = XRV_VENDOR_ID;
	a->vendor_part_id = XRV_VENDOR_PART;
	a->max_qp = XR_MAX_QP - 0x11;
	a->max_qp_wr = 1 << 15;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_SYS_IMAGE_GUID;
	a->max_sge = XR_RWQE_MAX_SGE < XR_WQE_MAX_SGE ? XR_RWQE_MAX_SGE : XR_WQE_MAX_SGE;   /* send and receive */
	a->max_sge_rd = XR_WQE_MAX_SGE;
	a->max_cq = XR_MAX_CQ - 1;
	a->max_cqe = XR_CQ_MAX_CQE;
	a->max_mr = XR_MAX_MR - 1;
	a->max_pd = 1 << 24;
	a->max_qp_rd_atom = a->max_qp_init_rd_atom = XR_MAX_RD_ATOMIC;
	a->max_res_rd_atom = XR_MAX_RD_ATOMIC * a->max_qp;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = XR_MAX_MR - 1;
	a->max_srq = XR_MAX_SRQ - 1;
	a->max_srq_wr = 1 << 15;
	a->max_srq_sge = XR_RWQE_MAX_SGE;
	a->max_ah = 1 << 24;   /* an AH is host memory only: its address travels in each UD WQE */
	a->max_mcast_grp = XR_MAX_MCG;
	a->max_mcast_qp_attach = XR_MCG_MAX_QP;
	a->max_total_mcast_qp_attach = XR_MAX_MCG * XR_MCG_MAX_QP;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

XRV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	fill_device_attr(xrv_ctx(context), attr);
	return 0;
}
XRV_DEFAULT(ibv_query_device);

int xrv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *attr, size_t len)
{
	(void)in;
	if (len < sizeof(attr->orig_attr) + sizeof(attr->comp_mask))
		return EINVAL;
	memset(attr, 0, len < sizeof(*attr) ? len : sizeof(*attr));
	fill_device_attr(xrv_ctx(c), &attr->orig_attr);
	if (len >= offsetof(struct ibv_device_attr_ex, packet_pacing_caps) + sizeof(attr->packet_pacing_caps)) {
		/* The engine's pacer: whole Mb/s, any QP type (docs/congestion.md). */
		attr->packet_pacing_caps.qp_rate_limit_min = 1000;
		attr->packet_pacing_caps.qp_rate_limit_max = 400000000;
		attr->packet_pacing_caps.supported_qpts = 1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD;
	}
	return 0;
}

int xrv_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	struct xrv_context *x = xrv_ctx(c);
	struct ibv_port_attr a = { 0 };
	bool up = x->link->ops->is_up(x->link);

	if (port != 1 || !attr)
		return EINVAL;
	a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = (enum ibv_mtu)xr_active_mtu(x->xr);
	a.gid_tbl_len = 1;
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = 1u << 31;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 2;          /* 4x */
	a.active_speed = 32;         /* EDR: 4x EDR is the seed's 100 Gb/s */
	a.phys_state = up ? 5 : 3;   /* LinkUp / Disabled */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

/* The exported (compat) query_port: the 48-byte struct of older programs;
 * ibv_query_port in <infiniband/verbs.h> calls the context op instead. */
XRV_EXPORT int (ibv_query_port)(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	/* The compat struct ends where `flags` begins (48 bytes). */
	return xrv_query_port(context, port_num, (struct ibv_port_attr *)(void *)attr,
			      offsetof(struct ibv_port_attr, flags));
}
XRV_DEFAULT(ibv_query_port);

XRV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	if (!context || !gid || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	memcpy(gid->raw, xrv_ctx(context)->gid.raw, 16);
	return 0;
}
XRV_DEFAULT(ibv_query_gid);

XRV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e = { 0 };

	if (!context || !entry || flags || entry_size < sizeof(e))
		return EINVAL;
	if (port_num != 1 || gid_index != 0)
		return ENODATA;
	memcpy(e.gid.raw, xrv_ctx(context)->gid.raw, 16);
	e.port_num = 1;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	e.ndev_ifindex = xrv_ctx(context)->ifindex;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

XRV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					size_t max_entries, uint32_t flags, size_t entry_size)
{
	int rc;

	if (!context || !entries || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < 1)
		return -EINVAL;
	rc = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
	return rc ? -rc : 1;
}

/* rdma-core's private ibv_query_gid_type (ibv_devinfo prints it):
 * 0 = IB/RoCE v1, 1 = RoCE v2. */
XRV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
				  uint32_t *type)
{
	if (!context || !type || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*type = 1;
	return 0;
}

XRV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (!context || !pkey || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xFFFF);
	return 0;
}
XRV_DEFAULT(ibv_query_pkey);

XRV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != 1)
		return -EINVAL;
	/* The default P_Key, full or limited member. */
	return (be16toh(pkey) & 0x7FFF) == 0x7FFF ? 0 : -ENOENT;
}
