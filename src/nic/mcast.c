/* SPDX-License-Identifier: MIT */
/*
 * Multicast groups (D8, after rxe_mcast.c and rxe_recv.c): the MCG window
 * attaches UD QPs to group GIDs, and a datagram to DestQP 0xFFFFFF is
 * handed to every QP attached to its destination group, each checked as
 * a datagram to it alone would be. The link joins a group when its first
 * QP attaches and leaves when its last detaches, as a NIC programs its
 * MAC filter.
 *
 * The table is small (CAP_MCG) and searched in order: multicast is a
 * rare path, and a group lookup costs one compare per group in use.
 * Attach and detach run under reg_lock, and change the table under
 * dp_mutex, which every pass holds: a pass sees a group whole, and no QP
 * it delivers to can be destroyed meanwhile (a QP attached refuses
 * DESTROY).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "recv.h"
#include "resp.h"
#include "../wire/bytes.h"

static void gid_from_regs(struct xr_engine *e, xr_gid *gid)
{
	for (int i = 0; i < 4; i++)
		put_be32(gid->raw + 4 * i, xr_reg_get(e, XR_REG_MCG_GID_0 + 4u * (unsigned)i));
}

static struct xr_mcg *group_of(struct xr_engine *e, const xr_gid *gid)
{
	for (uint32_t i = 0; i < e->mcg.n; i++)
		if (!memcmp(e->mcg.g[i].gid.raw, gid->raw, 16))
			return &e->mcg.g[i];
	return NULL;
}

static int slot_of(const struct xr_mcg *g, uint32_t qpn)
{
	for (uint32_t i = 0; i < g->nqp; i++)
		if (g->qpn[i] == qpn)
			return (int)i;
	return -1;
}

static void publish(struct xr_engine *e)
{
	xr_reg_set(e, XR_REG_MCG_STATUS, e->mcg.n | e->mcg.attached << 16);
}

static enum xr_cmd_status attach(struct xr_engine *e, const xr_gid *gid, uint32_t qpn)
{
	struct xr_qp *qp = xr_qp_lookup(e, qpn);
	struct xr_mcg *g;
	int err;

	if (!xr_gid_is_mcast(gid))
		return XR_CMD_ST_BAD_RANGE;
	if (!qp)
		return XR_CMD_ST_NO_ENTRY;
	if (__atomic_load_n(&qp->ctx.type, __ATOMIC_RELAXED) != XR_QPT_UD)
		return XR_CMD_ST_BAD_TYPE;   /* rxe and the IB core: UD only */
	g = group_of(e, gid);
	if (g && slot_of(g, qpn) >= 0)
		return XR_CMD_ST_OK;         /* attached already: as rxe, no change */
	if (g ? g->nqp == XR_MCG_MAX_QP : e->mcg.n == XR_MAX_MCG)
		return XR_CMD_ST_FULL;
	/* The link's calls, as a pass's, under dp_mutex (one user at a time). */
	pthread_mutex_lock(&e->dp_mutex);
	if (!g && e->link && (err = xr_link_mcast(e->link, gid, true)) && err != -EEXIST) {
		pthread_mutex_unlock(&e->dp_mutex);
		return XR_CMD_ST_LINK;
	}
	if (!g) {
		g = &e->mcg.g[e->mcg.n++];
		g->gid = *gid;
		g->nqp = 0;
	}
	g->qpn[g->nqp++] = qpn;
	e->mcg.attached++;
	pthread_mutex_unlock(&e->dp_mutex);
	return XR_CMD_ST_OK;
}

static enum xr_cmd_status detach(struct xr_engine *e, const xr_gid *gid, uint32_t qpn)
{
	struct xr_mcg *g = group_of(e, gid);
	int at = g ? slot_of(g, qpn) : -1;
	bool last;

	if (at < 0)
		return XR_CMD_ST_NO_ENTRY;
	pthread_mutex_lock(&e->dp_mutex);
	g->qpn[at] = g->qpn[--g->nqp];
	e->mcg.attached--;
	last = !g->nqp;
	/* The group is gone from the table whatever the link says: a leave
	 * that fails costs only frames the engine drops (rx_drop_no_mcg). */
	if (last && e->link)
		xr_link_mcast(e->link, gid, false);
	if (last)
		*g = e->mcg.g[--e->mcg.n];   /* the table stays packed */
	pthread_mutex_unlock(&e->dp_mutex);
	return XR_CMD_ST_OK;
}

enum xr_cmd_status xr_mcg_cmd(struct xr_engine *e, uint32_t cmd)
{
	uint32_t qpn = xr_reg_get(e, XR_REG_MCG_QPN);
	enum xr_cmd_status st;
	xr_gid gid;

	gid_from_regs(e, &gid);
	if (cmd == 1)
		st = attach(e, &gid, qpn);
	else if (cmd == 2)
		st = detach(e, &gid, qpn);
	else
		return XR_CMD_ST_BAD_CMD;
	if (st == XR_CMD_ST_OK) {
		xr_evlog_add(e, XR_EV_MCG, qpn, cmd == 1, get_be32(gid.raw + 12));
		publish(e);
	}
	return st;
}

bool xr_mcg_qp_attached(struct xr_engine *e, uint32_t qpn)
{
	for (uint32_t i = 0; e->mcg.attached && i < e->mcg.n; i++)
		if (slot_of(&e->mcg.g[i], qpn) >= 0)
			return true;
	return false;
}

/* The link came after groups were attached (not through the driver,
 * which attaches its link first): it joins them now; one it cannot join
 * stays in the table, its frames not coming (rx_drop_no_mcg never sees
 * them). */
void xr_mcg_link_attached(struct xr_engine *e)
{
	pthread_mutex_lock(&e->dp_mutex);
	for (uint32_t i = 0; i < e->mcg.n; i++)
		xr_link_mcast(e->link, &e->mcg.g[i].gid, true);
	pthread_mutex_unlock(&e->dp_mutex);
}

/* Soft reset (dp_mutex held): the groups are left. */
void xr_mcg_reset(struct xr_engine *e)
{
	for (uint32_t i = 0; e->link && i < e->mcg.n; i++)
		xr_link_mcast(e->link, &e->mcg.g[i].gid, false);
	e->mcg.n = e->mcg.attached = 0;
	publish(e);
}

/* The group a datagram to DestQP 0xFFFFFF is for: its destination must
 * be a group in the table, and (check_mac) its MAC that group's. */
static const struct xr_mcg *group_for(struct xr_engine *e, const struct xr_pkt *p, bool check_mac)
{
	const struct xr_mcg *g;
	uint8_t mac[6];

	if (!xr_gid_is_mcast(&p->dgid) || !(g = group_of(e, &p->dgid)))
		return NULL;
	if (check_mac) {
		xr_gid_mcast_mac(&p->dgid, mac);
		if (memcmp(mac, p->dmac, 6))
			return NULL;
	}
	return g;
}

void xr_mcast_rx(struct xr_engine *e, const struct xr_pkt *p, bool check_mac)
{
	const struct xr_mcg *g;
	struct xr_qp *qp;

	bool ce = (p->traffic_class & 3) == 3;

	if (!(xr_reg_get(e, XR_REG_CTRL) & XR_CTRL_ENABLE)) {
		xr_recv_drop(e, p, XR_CNT_DROP_DISABLED);
		return;
	}
	g = group_for(e, p, check_mac);
	if (!g) {
		xr_recv_drop(e, p, XR_CNT_DROP_NO_MCG);   /* rxe_rcv_mcast_pkt: no group, dropped */
		return;
	}
	xr_count(e, XR_CNT_RX_MCAST, 1);
	if (ce)
		xr_count(e, XR_CNT_ECN_MARKED, 1);   /* once, as the datagram's other counts */
	for (uint32_t i = 0; i < g->nqp; i++) {
		if (xr_recv_check_qp(e, p, g->qpn[i], &qp))
			continue;   /* counted under its reason, as for a datagram to it alone */
		if (ce)
			xr_cc_ce(e, qp, xr_engine_now(e));   /* its ce_rcvd: UD answers with no CNP */
		xr_ud_rx(e, qp, p);
		xr_qp_mark_busy(e, qp);
		pthread_mutex_unlock(&qp->lock);
	}
}

/* Loopback: a group datagram this engine sends reaches its own QPs
 * attached to the group too, the sending QP's included, as an HCA's
 * (mlx5 loops them back unless a QP asks not to,
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB); the links never return a device's
 * own frames. Copied as the frame leaves (a QP's lock may be held then)
 * and handed to the group when the pass has let go of every QP. */
struct xr_mcast_copy {
	struct xr_mcast_copy *next;
	uint16_t len;
	uint8_t data[];
};

void xr_mcast_loop_keep(struct xr_engine *e, const struct xr_frame *f)
{
	struct xr_mcast_copy *c;
	struct xr_pkt p;

	if (!(f->data[0] & 1) || f->gather)
		return;   /* not to a group MAC (UD frames never go by reference) */
	if (xr_pkt_parse(f->data, f->len, 0, XR_PARSE_NO_ICRC, &p) != XR_PARSE_OK || p.dqpn != XR_QPN_MCAST ||
	    !group_of(e, &p.dgid))
		return;
	c = malloc(sizeof(*c) + f->len);
	if (!c) {
		xr_count(e, XR_CNT_MCAST_LOOP_DROP, 1);
		return;
	}
	c->next = NULL;
	c->len = f->len;
	memcpy(c->data, f->data, f->len);
	if (!e->mcg.loop)
		e->mcg.loop_tail = &e->mcg.loop;
	*e->mcg.loop_tail = c;
	e->mcg.loop_tail = &c->next;
}

void xr_mcast_loop_drain(struct xr_engine *e)
{
	struct xr_mcast_copy *c;
	struct xr_pkt p;

	while ((c = e->mcg.loop)) {
		e->mcg.loop = c->next;
		if (xr_pkt_parse(c->data, c->len, 0, 0, &p) == XR_PARSE_OK) {
			xr_count(e, XR_CNT_MCAST_LOOPED, 1);
			xr_mcast_rx(e, &p, true);
		}
		free(c);
	}
}

/* The engine goes: copies a pass did not drain (none, as every pass
 * drains its own). */
void xr_mcast_loop_free(struct xr_engine *e)
{
	struct xr_mcast_copy *c;

	while ((c = e->mcg.loop)) {
		e->mcg.loop = c->next;
		free(c);
	}
}
