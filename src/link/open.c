/* SPDX-License-Identifier: MIT */
/* Link selection with errors a user can act on. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "xroce/link.h"

struct xr_link *xr_link_open(const struct xr_link_spec *s, char *msg, size_t len)
{
	struct xr_link *l = NULL;
	int err;

	if (msg && len)
		msg[0] = '\0';
	if (!s || !s->kind || !s->addr) {
		snprintf(msg, len, "a link needs a kind (udp, raw, host) and a local address");
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
	} else {
		snprintf(msg, len, "unknown link '%s' (mem, udp, raw or host)", s->kind);
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
