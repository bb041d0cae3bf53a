/* SPDX-License-Identifier: MIT */
/* Link selection with errors a user can act on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xroce/link.h"

/* The XDP link's own causes; false for those the common switch words. */
static bool xdp_error(int err, const char *ifname, char *msg, size_t len)
{
	switch (err) {
	case EAFNOSUPPORT:
		snprintf(msg, len, "AF_XDP is not available (a kernel without CONFIG_XDP_SOCKETS, or xroce "
			 "built without libxdp: scripts/deps.sh); --link raw works everywhere");
		break;
	case EPERM:
	case EACCES:
		snprintf(msg, len, "the XDP link needs CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW (run as root); "
			 "--link raw needs only CAP_NET_RAW (XROCE_XDP_DEBUG=1 shows the kernel's "
			 "answer, e.g. a refused filter)");
		break;
	case EOPNOTSUPP:
		snprintf(msg, len, "'%s' takes no XDP program (native or generic)", ifname);
		break;
	case EBUSY:
	case EEXIST:
		snprintf(msg, len, "'%s' has an XDP program or socket on that queue already (another xroce?)", ifname);
		break;
	default:
		return false;
	}
	errno = err;
	return true;
}

struct xr_link *xr_link_open(const struct xr_link_spec *s, char *msg, size_t len)
{
	struct xr_link *l = NULL;
	int err;

	if (msg && len)
		msg[0] = '\0';
	if (!s || !s->kind || !s->addr) {
		snprintf(msg, len, "a link needs a kind (udp, raw, xdp, host) and a local address");
		errno = EINVAL;
		return NULL;
	}
	if (!strcmp(s->kind, "udp")) {
		struct xr_link_udp_opts o = { .strict_icrc = s->strict_icrc, .raw_ip_id = s->udp_raw_ip_id,
					      .no_host_path = s->udp_no_host_path };
		l = xr_link_udp_ex(s->addr, &o);
	} else if (!strcmp(s->kind, "host")) {
		l = xr_link_host(s->addr);
		if (!l && errno == EADDRINUSE) {
			snprintf(msg, len, "another xroce device on this host already holds %s", s->addr);
			return NULL;
		}
	} else if (!strcmp(s->kind, "raw")) {
		if (!s->ifname) {
			snprintf(msg, len, "the raw link needs an interface (--ifname)");
			errno = EINVAL;
			return NULL;
		}
		l = xr_link_raw(s->ifname, s->addr, s->vid, s->pcp);
	} else if (!strcmp(s->kind, "xdp")) {
		struct xr_link_xdp_opts o = { .mode = XR_XDP_AUTO };
		const char *m = getenv("XROCE_XDP_MODE");   /* native|generic: to test one path */
		if (!s->ifname) {
			snprintf(msg, len, "the XDP link needs an interface (--ifname)");
			errno = EINVAL;
			return NULL;
		}
		if (m && *m && strcmp(m, "native") && strcmp(m, "generic") && strcmp(m, "auto")) {
			snprintf(msg, len, "XROCE_XDP_MODE='%.32s': expected native, generic or auto", m);
			errno = EINVAL;
			return NULL;
		}
		if (m)
			o.mode = !strcmp(m, "native") ? XR_XDP_NATIVE : !strcmp(m, "generic") ? XR_XDP_GENERIC : XR_XDP_AUTO;
		o.no_zerocopy = getenv("XROCE_XDP_COPY") != NULL;
		l = xr_link_xdp(s->ifname, s->addr, &o);
		if (!l && xdp_error(errno, s->ifname, msg, len))
			return NULL;
	} else {
		snprintf(msg, len, "unknown link '%s' (mem, udp, raw, xdp or host)", s->kind);
		errno = EINVAL;
		return NULL;
	}
	if (l)
		return l;
	err = errno;
	switch (err) {
	case ENODEV:
		snprintf(msg, len, "no interface named '%s'", s->ifname);
		break;
	case EADDRINUSE:
		snprintf(msg, len, "%s port 4791 is already in use (another RoCE stack or xroce?)", s->addr);
		break;
	case EEXIST:   /* the UDP link's host path: a host link holds the address */
		snprintf(msg, len, "another xroce device on this host already holds %s (a host link)", s->addr);
		break;
	case EADDRNOTAVAIL:
		snprintf(msg, len, "%s is not an address of this host (the UDP link needs a kernel address; "
			 "the raw link owns one the kernel does not have)", s->addr);
		break;
	case EPERM:
	case EACCES:
		snprintf(msg, len, "the %s needs CAP_NET_RAW (run as root or grant the capability)",
			 !strcmp(s->kind, "udp") ? "UDP link's raw IPv4 ID reading" : "raw link");
		break;
	case EINVAL:
		snprintf(msg, len, "bad link settings (address '%s'%s)", s->addr,
			 !strcmp(s->kind, "raw") ? ", VLAN 1..4094, PCP 0..7" : "");
		break;
	default:
		snprintf(msg, len, "%s link on %s: %s", s->kind, s->addr, strerror(err));
	}
	errno = err;
	return NULL;
}
