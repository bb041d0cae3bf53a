/* SPDX-License-Identifier: MIT */
/*
 * The host link (kind "host"): a device that reaches only devices in other
 * processes of this host, through the host endpoint (host.h). Frames to
 * an address no local device holds are dropped and counted, as a network
 * drops what it cannot deliver.
 */
#include <errno.h>
#include <stdlib.h>

#include "host.h"
#include "pool.h"

#define POOL_FRAMES 2048

struct host_link {
	struct xr_link link;
	struct host_ep *ep;
	struct frame_pool pool;
};

static bool in_pool(struct host_link *hl, const struct xr_frame *f)
{
	return f >= hl->pool.frames && f < hl->pool.frames + POOL_FRAMES;
}

static int host_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct host_link *hl = l->priv;
	bool not_local;
	unsigned done = host_ep_send(hl->ep, f, n, true, &not_local);

	for (unsigned i = 0; i < done; i++)
		if (f[i])   /* NULL: it was a slot, the endpoint has it */
			pool_put(&hl->pool, f[i]);
	l->stats.tx_frames += done;
	return (int)done;
}

static int host_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct host_link *hl = l->priv;
	unsigned got = host_ep_recv(hl->ep, f, n);

	l->stats.rx_frames += got;
	return (int)got;
}

static int host_wait_fd(struct xr_link *l)
{
	return host_ep_wait_fd(((struct host_link *)l->priv)->ep);
}

static int host_standby_fd(struct xr_link *l)
{
	return host_ep_standby_fd(((struct host_link *)l->priv)->ep);
}

static int host_arm(struct xr_link *l, bool arm)
{
	return host_ep_arm(((struct host_link *)l->priv)->ep, arm);
}

/* A slot of the last peer's connection, so that sending copies nothing;
 * our own pool before the first peer or while the peer holds every slot. */
static struct xr_frame *host_alloc(struct xr_link *l)
{
	struct host_link *hl = l->priv;
	struct xr_frame *f = host_ep_alloc(hl->ep);

	return f ? f : pool_get(&hl->pool);
}

static void host_free(struct xr_link *l, struct xr_frame *f)
{
	struct host_link *hl = l->priv;

	if (!f)
		return;
	if (in_pool(hl, f))
		pool_put(&hl->pool, f);
	else
		host_ep_release(hl->ep, f);
}

static bool host_is_up(struct xr_link *l)
{
	(void)l;
	return true;
}

static void host_close(struct xr_link *l)
{
	struct host_link *hl = l->priv;

	host_ep_close(hl->ep);
	pool_fini(&hl->pool);
	free(hl);
}

/* Every address has its MAC (host_mac_of): nothing to ask. */
static int host_resolve(struct xr_link *l, const xr_gid *gid, uint8_t mac[6])
{
	(void)l;
	host_mac_of(gid, mac);
	return 0;
}

/* Frames go to the one device that holds their destination: a group is
 * nobody's (route() in host_path.c), so its frames would be dropped as
 * sent to no device. Refused, so an attach fails rather than hearing
 * nothing (the UDP link, which sends groups through the kernel, has them). */
static int host_mcast(struct xr_link *l, const xr_gid *group, bool join)
{
	(void)l, (void)group;
	return join ? -EOPNOTSUPP : 0;
}

static const struct xr_link_ops host_ops = {
	host_send, host_recv, host_wait_fd, host_alloc, host_free, host_is_up, host_close, host_resolve, NULL, NULL,
	host_standby_fd, host_arm, NULL, host_mcast,
};

struct xr_link *xr_link_host(const char *addr)
{
	struct host_link *hl;
	xr_gid gid;
	int err;

	if (!addr || xr_gid_parse(&gid, addr)) {
		errno = EINVAL;
		return NULL;
	}
	hl = calloc(1, sizeof(*hl));
	if (!hl || pool_init(&hl->pool, POOL_FRAMES)) {
		free(hl);
		errno = ENOMEM;
		return NULL;
	}
	err = host_ep_open(&hl->ep, &gid);
	if (err) {
		pool_fini(&hl->pool);
		free(hl);
		errno = -err;
		return NULL;
	}
	hl->link.ops = &host_ops;
	hl->link.kind = "host";
	hl->link.mtu = 9000;
	hl->link.priv = hl;
	host_mac_of(&gid, hl->link.mac);
	return &hl->link;
}

int xr_link_host_stats(struct xr_link *l, struct xr_link_host_stats *out)
{
	if (!l || !out)
		return -EINVAL;
	if (l->ops == &host_ops) {
		host_ep_stats(((struct host_link *)l->priv)->ep, out);
		out->host_path = true;
		return 0;
	}
	return udp_link_host_stats(l, out);
}
