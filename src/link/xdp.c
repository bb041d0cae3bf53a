/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP link (libxdp): an XDP socket on one queue of an interface,
 * fed by the link's own XDP filter (xdp_filter.bpf.c, embedded), which
 * hands the socket only what is the link's and leaves the rest to the
 * kernel. One UMEM split in two halves: receive chunks live in the fill
 * and rx rings, transmit chunks in a free list and the tx and completion
 * rings. Frames are copied between the engine's pool frames and UMEM
 * chunks (as the raw link copies out of its ring), so the engine's frame
 * API is unchanged; a frame longer than a chunk spans several descriptors
 * (multi-buffer, XDP_USE_SG). Receiving is ring reads only; sending is a
 * ring write and one kick (sendto) per burst.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef XROCE_HAVE_XDP
#include "xroce/link.h"

/* Built without libxdp: the link says so. */
struct xr_link *xr_link_xdp(const char *ifname, const char *addr, const struct xr_link_xdp_opts *opts)
{
	(void)ifname, (void)addr, (void)opts;
	errno = EAFNOSUPPORT;
	return NULL;
}

int xr_link_xdp_info(struct xr_link *l, struct xr_link_xdp_info *out)
{
	(void)l, (void)out;
	return -ENOTSUP;
}

int xr_link_xdp_add_neigh(struct xr_link *l, const xr_gid *gid, const uint8_t mac[6])
{
	(void)l, (void)gid, (void)mac;
	return -EINVAL;
}

#else

#include "touch.h"
#include "xdp.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>


/* The filter object, embedded at build time (CMake compiles it with
 * clang -target bpf): no file to find at run time. */
#define XR_STR2(x) #x
#define XR_STR(x) XR_STR2(x)
__asm__(".pushsection .rodata\n.balign 8\n"
	".hidden xr_xdp_obj\n.globl xr_xdp_obj\nxr_xdp_obj:\n.incbin \"" XR_XDP_OBJ_PATH "\"\n"
	".hidden xr_xdp_obj_end\n.globl xr_xdp_obj_end\nxr_xdp_obj_end:\n.popsection\n");
extern const unsigned char xr_xdp_obj[], xr_xdp_obj_end[];

static const struct xr_link_ops xdp_ops;

/* ---- receive ---- */

/* A whole received frame: to the engine (out, then pending) or counted. */
static void rx_frame(struct xdp_link *x, struct xr_frame *fr, size_t len, struct xr_frame **out,
		     unsigned *delivered, unsigned max)
{
	if (!xdp_rx_classify(x, fr->data, len)) {
		pool_put(&x->pool, fr);
		return;
	}
	fr->len = (uint16_t)len;
	if (*delivered < max)
		out[(*delivered)++] = fr;
	else if (x->npending < XDP_PENDING_MAX)
		x->pending[x->npending++] = fr;
	else {
		x->info.rx_drop_pending_full++;
		pool_put(&x->pool, fr);
	}
}

/* One descriptor of a frame into the frame being put together. A frame
 * whose first part found no pool frame, or that grew past any RoCE
 * frame, is dropped whole when its last part arrives, and counted once. */
static void rx_part(struct xdp_link *x, const struct xdp_desc *d, struct xr_frame **out, unsigned *delivered,
		    unsigned max)
{
	struct xdp_sock *s = x->sock;

	if (!s->in_frame) {
		s->in_frame = true;
		s->cur_len = 0;
		s->cur_drop = XDP_KEEP;
		s->cur = pool_get(&x->pool);
		if (!s->cur)
			s->cur_drop = XDP_DROP_NO_FRAME;   /* the engine holds every frame: as a full queue */
	}
	if (s->cur_drop == XDP_KEEP && s->cur_len + d->len > XR_MAX_FRAME)
		s->cur_drop = XDP_DROP_OVERSIZE;
	if (s->cur_drop == XDP_KEEP) {
		memcpy(s->cur->data + s->cur_len, xsk_umem__get_data(s->area, d->addr), d->len);
		s->cur_len += d->len;
	}
	if (d->options & XDP_PKT_CONTD)
		return;
	if (s->cur_drop == XDP_KEEP) {
		rx_frame(x, s->cur, s->cur_len, out, delivered, max);
	} else {
		if (s->cur_drop == XDP_DROP_NO_FRAME)
			x->info.rx_drop_no_frame++;
		else
			x->info.rx_drop_oversize++;
		pool_put(&x->pool, s->cur);
	}
	s->cur = NULL;
	s->in_frame = false;
}

unsigned xdp_rx_step(struct xdp_link *x, struct xr_frame **out, unsigned max)
{
	struct xdp_sock *s = x->sock;
	unsigned delivered = 0;
	uint32_t idx, fidx, n;

	n = xsk_ring_cons__peek(&s->rx, XL_RX_BATCH, &idx);
	/* Every chunk taken goes straight back to the fill ring, which holds
	 * all receive chunks: the reservation cannot fall short. */
	if (n && xsk_ring_prod__reserve(&s->fill, n, &fidx) != n) {
		xsk_ring_cons__cancel(&s->rx, n);   /* cannot be; they wait for the next call */
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&s->rx, idx + i);
		*xsk_ring_prod__fill_addr(&s->fill, fidx + i) = xsk_umem__extract_addr(d->addr) & ~(uint64_t)(XL_CHUNK - 1);
		rx_part(x, d, out, &delivered, max);
	}
	if (n) {
		xsk_ring_cons__release(&s->rx, n);
		xsk_ring_prod__submit(&s->fill, n);
	}
	/* Zero-copy drivers may ask to be told the fill ring has chunks. */
	if (xsk_ring_prod__needs_wakeup(&s->fill))
		recvfrom(s->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	return delivered;
}

/* ---- transmit ---- */

static void tx_reap(struct xdp_sock *s)
{
	uint32_t idx, n = xsk_ring_cons__peek(&s->comp, XL_TX_CHUNKS, &idx);

	for (uint32_t i = 0; i < n && s->ntx_free < XL_TX_CHUNKS; i++)
		s->tx_free[s->ntx_free++] = *xsk_ring_cons__comp_addr(&s->comp, idx + i);
	xsk_ring_cons__release(&s->comp, n);
}

/* Tells the kernel the tx ring has descriptors. In copy mode each call
 * sends a bounded batch and says EAGAIN while more wait. */
static void tx_kick(struct xdp_link *x)
{
	struct xdp_sock *s = x->sock;

	/* Zero-copy drivers say when they need the kick; copy mode sends only
	 * from within the system call, so it always does. */
	if (x->info.zerocopy && x->info.need_wakeup && !xsk_ring_prod__needs_wakeup(&s->tx))
		return;
	for (int i = 0; i < XL_KICK_TRIES; i++) {
		if (sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			return;
		if (errno == EAGAIN || errno == EBUSY || errno == EINTR)
			continue;
		if (errno != ENOBUFS)   /* no buffer: the kernel keeps the descriptors for the next kick */
			x->info.tx_kick_errors++;
		return;
	}
}

/* Descriptors still in the tx ring (the kernel has not taken them). */
static bool tx_waiting(struct xdp_sock *s)
{
	return __atomic_load_n(s->tx.consumer, __ATOMIC_ACQUIRE) != s->tx.cached_prod;
}

/* Puts up to n frames (len bytes at data[i]) on the tx ring: how many. */
static unsigned tx_put(struct xdp_link *x, const uint8_t *const *data, const uint16_t *len, unsigned n)
{
	struct xdp_sock *s = x->sock;
	unsigned k = 0, need = 0;
	uint32_t idx, at;

	tx_reap(s);
	for (; k < n; k++) {
		unsigned c = (len[k] + XL_CHUNK - 1) / XL_CHUNK;
		if (need + c > s->ntx_free || xsk_prod_nb_free(&s->tx, need + c) < need + c)
			break;
		need += c;
	}
	if (!need || xsk_ring_prod__reserve(&s->tx, need, &idx) != need)
		return 0;
	at = idx;
	for (unsigned i = 0; i < k; i++) {
		for (unsigned off = 0; off < len[i]; off += XL_CHUNK) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&s->tx, at++);
			unsigned part = len[i] - off < XL_CHUNK ? len[i] - off : XL_CHUNK;
			d->addr = s->tx_free[--s->ntx_free];
			d->len = part;
			d->options = off + part < len[i] ? XDP_PKT_CONTD : 0;
			memcpy(xsk_umem__get_data(s->area, d->addr), data[i] + off, part);
		}
	}
	xsk_ring_prod__submit(&s->tx, need);
	return k;
}

int xdp_tx_ctrl(struct xdp_link *x, const uint8_t *frame, size_t len)
{
	uint16_t l16 = (uint16_t)len;
	unsigned put;

	if (len > XL_CHUNK)
		return -EMSGSIZE;
	pthread_mutex_lock(&x->tx_lock);
	put = tx_put(x, &frame, &l16, 1);
	if (put)
		tx_kick(x);
	pthread_mutex_unlock(&x->tx_lock);
	return put ? 0 : -ENOBUFS;
}

/* A frame the tx ring can carry: whole Ethernet, at most a RoCE frame, at
 * most a chunk without multi-buffer. Else the named reason is counted. */
static bool tx_len_ok(struct xdp_link *x, const struct xr_frame *fr)
{
	if (fr->len < XR_ETH_HLEN || fr->len > XR_MAX_FRAME) {
		x->info.tx_drop_bad_len++;
		return false;
	}
	if (!x->info.multibuffer && fr->len > XL_CHUNK) {
		x->info.tx_drop_oversize++;
		return false;
	}
	return true;
}

static int xdp_send(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct xdp_link *x = l->priv;
	const uint8_t *data[XL_TX_BURST];
	uint16_t len[XL_TX_BURST];
	unsigned taken = 0, k = 0, put;

	/* Leading frames that can never go: dropped, counted, taken. One in
	 * the middle ends the burst and leads the next call. */
	while (taken < n && !tx_len_ok(x, f[taken])) {
		l->stats.tx_drops++;
		pool_put(&x->pool, f[taken++]);
	}
	for (; taken + k < n && k < XL_TX_BURST; k++) {
		const struct xr_frame *fr = f[taken + k];
		if (fr->len < XR_ETH_HLEN || fr->len > XR_MAX_FRAME || (!x->info.multibuffer && fr->len > XL_CHUNK))
			break;
		data[k] = fr->data;
		len[k] = fr->len;
	}
	if (!k)
		return (int)taken;
	pthread_mutex_lock(&x->tx_lock);
	put = tx_put(x, data, len, k);
	if (!put) {
		/* Ring or chunks full: push what waits, take back completions, once. */
		tx_kick(x);
		put = tx_put(x, data, len, k);
	}
	if (put)
		tx_kick(x);
	pthread_mutex_unlock(&x->tx_lock);
	pool_put_n(&x->pool, f + taken, put);
	l->stats.tx_frames += put;
	return (int)(taken + put);
}

/* ---- the link's operations ---- */

static int xdp_recv(struct xr_link *l, struct xr_frame **f, unsigned n)
{
	struct xdp_link *x = l->priv;
	unsigned got = 0;

	/* Frames left in the tx ring by a kick that found the device busy
	 * must not wait for the next send. */
	if (tx_waiting(x->sock) && !pthread_mutex_trylock(&x->tx_lock)) {
		tx_kick(x);
		pthread_mutex_unlock(&x->tx_lock);
	}
	/* Nothing arrived and nothing kept back: no lock for an idle poll (read
	 * only; a frame that lands now is seen by the next call). */
	if (!__atomic_load_n(&x->npending, __ATOMIC_RELAXED) &&
	    __atomic_load_n(x->sock->rx.producer, __ATOMIC_ACQUIRE) == __atomic_load_n(x->sock->rx.consumer, __ATOMIC_RELAXED)) {
		if (xsk_ring_prod__needs_wakeup(&x->sock->fill))   /* zero-copy drivers idle until told */
			recvfrom(x->sock->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		return 0;
	}
	pthread_mutex_lock(&x->rx_lock);
	while (got < n && x->npending) {
		f[got++] = x->pending[0];
		memmove(x->pending, x->pending + 1, --x->npending * sizeof(x->pending[0]));
	}
	if (got < n)
		got += xdp_rx_step(x, f + got, n - got);
	pthread_mutex_unlock(&x->rx_lock);
	l->stats.rx_frames += got;
	return (int)got;
}

int xdp_sock_fd(struct xdp_link *x)
{
	return x->sock->fd;
}

static int xdp_wait_fd(struct xr_link *l)
{
	return xdp_sock_fd(l->priv);
}

static struct xr_frame *xdp_alloc(struct xr_link *l)
{
	return pool_get(&((struct xdp_link *)l->priv)->pool);
}

static void xdp_free(struct xr_link *l, struct xr_frame *f)
{
	pool_put(&((struct xdp_link *)l->priv)->pool, f);
}

static bool xdp_is_up(struct xr_link *l)
{
	struct xdp_link *x = l->priv;
	struct ifreq ifr;

	/* Asked through a socket made at open: the answer is from the link's
	 * namespace whichever the caller is in now. */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", x->ifname);
	return ioctl(x->sock->owner_fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) &&
	       (ifr.ifr_flags & IFF_RUNNING);
}

/* Undoes what sock_open did, in reverse; safe on a partial open. */
static void sock_close(struct xdp_link *x)
{
	struct xdp_sock *s = x->sock;

	if (!s)
		return;
	if (s->xsk)
		xsk_socket__delete(s->xsk);
	if (s->umem)
		xsk_umem__delete(s->umem);
	if (s->link_fd >= 0)
		close(s->link_fd);   /* detaches the filter */
	if (s->obj)
		bpf_object__close(s->obj);
	if (s->area)
		munmap(s->area, (size_t)XL_NCHUNKS * XL_CHUNK);
	if (s->owner_fd >= 0)
		close(s->owner_fd);
	if (s->mc_fd >= 0)
		close(s->mc_fd);   /* its memberships go with it */
	free(s);
	x->sock = NULL;
}

static void xdp_close(struct xr_link *l)
{
	struct xdp_link *x = l->priv;

	for (unsigned i = 0; i < x->npending; i++)
		pool_put(&x->pool, x->pending[i]);
	x->npending = 0;
	pool_put(&x->pool, x->sock->cur);   /* a frame half received (NULL: none) */
	x->sock->cur = NULL;
	/* Every frame is back by now (the engine closed first): the pool
	 * shows a leak as frames missing. */
	if (getenv("XROCE_XDP_DEBUG")) {
		struct xr_link_xdp_info i;
		xr_link_xdp_info(l, &i);
		fprintf(stderr, "xroce xdp %s: tx %llu rx %llu | filter roce %llu arp %llu nd %llu pass %llu no_xsk %llu | "
			"drops rx oversize %llu no_frame %llu pending %llu not_ours %llu tx bad %llu oversize %llu "
			"kick_err %llu | kernel rx_dropped %llu rx_inval %llu tx_inval %llu ring_full %llu fill_empty %llu "
			"tx_empty %llu | pool %u free of %u\n", x->ifname, (unsigned long long)l->stats.tx_frames,
			(unsigned long long)l->stats.rx_frames, (unsigned long long)i.filt_roce,
			(unsigned long long)i.filt_arp, (unsigned long long)i.filt_nd, (unsigned long long)i.filt_pass,
			(unsigned long long)i.filt_no_xsk, (unsigned long long)i.rx_drop_oversize,
			(unsigned long long)i.rx_drop_no_frame, (unsigned long long)i.rx_drop_pending_full,
			(unsigned long long)i.rx_drop_not_ours, (unsigned long long)i.tx_drop_bad_len,
			(unsigned long long)i.tx_drop_oversize, (unsigned long long)i.tx_kick_errors,
			(unsigned long long)i.k_rx_dropped, (unsigned long long)i.k_rx_invalid,
			(unsigned long long)i.k_tx_invalid, (unsigned long long)i.k_rx_ring_full,
			(unsigned long long)i.k_fill_empty, (unsigned long long)i.k_tx_ring_empty, i.pool_free, i.pool_frames);
	}

	sock_close(x);
	pool_fini(&x->pool);
	pthread_mutex_destroy(&x->rx_lock);
	pthread_mutex_destroy(&x->tx_lock);
	free(x);
}

/* Descriptors a kick left in the tx ring (the kernel busy, its completion
 * ring full): the next receive call kicks again. */
static bool xdp_tx_held(struct xr_link *l)
{
	struct xdp_link *x = l->priv;
	bool held;

	pthread_mutex_lock(&x->tx_lock);
	held = tx_waiting(x->sock);
	pthread_mutex_unlock(&x->tx_lock);
	/* Down, no kick can send them: the engine need not keep trying. */
	return held && xdp_is_up(l);
}

static const struct xr_link_ops xdp_ops = {
	xdp_send, xdp_recv, xdp_wait_fd, xdp_alloc, xdp_free, xdp_is_up, xdp_close, xdp_resolve, NULL, xdp_tx_held,
	NULL, NULL, NULL, xdp_mcast,
};

/* ---- opening ---- */

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (getenv("XROCE_XDP_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	(void)level;
	return 0;
}

/* One live link per interface: the owner holds an abstract socket named
 * after the interface (per network namespace, as interfaces are), gone
 * with its process however it ends. A second link is told EBUSY by name
 * instead of failing later at the queue. */
static int claim(struct xdp_link *x)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t sl;
	int n;

	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "xroce-xdp/%d", x->ifindex);
	sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	x->sock->owner_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (x->sock->owner_fd < 0)
		return -errno;
	if (bind(x->sock->owner_fd, (struct sockaddr *)&sa, sl))
		return errno == EADDRINUSE ? -EBUSY : -errno;
	return 0;
}

/* Loads the filter and attaches it through a BPF link: the attachment
 * belongs to an fd, so it ends with the link however the process ends
 * (nothing left on the interface after a crash), and closing it acts on
 * the right interface whatever namespace the closing thread is in. Native
 * first unless told otherwise. */
static int prog_attach(struct xdp_link *x, enum xr_xdp_mode want)
{
	struct xdp_sock *s = x->sock;
	struct bpf_program *p;
	int err = -EOPNOTSUPP;

	s->obj = bpf_object__open_mem(xr_xdp_obj, (size_t)(xr_xdp_obj_end - xr_xdp_obj), NULL);
	if (!s->obj)
		return -errno;
	p = bpf_object__find_program_by_name(s->obj, "xr_xdp_filter");
	if (!p)
		return -ENOENT;
	/* Frames longer than a page (MTU 9000 on veth) reach native XDP only
	 * for programs that accept multi-buffer frames. */
	bpf_program__set_flags(p, bpf_program__flags(p) | BPF_F_XDP_HAS_FRAGS);
	if (bpf_object__load(s->obj))
		return -errno;   /* EPERM without CAP_BPF; the verifier's refusal */
	for (int m = 0; m < 2 && err; m++) {
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = m ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
		if ((m == 0 && want == XR_XDP_GENERIC) || (m == 1 && want == XR_XDP_NATIVE))
			continue;
		s->link_fd = bpf_link_create(bpf_program__fd(p), x->ifindex, BPF_XDP, &lo);
		err = s->link_fd < 0 ? -errno : 0;
		if (!err)
			x->info.attach = m ? "generic" : "native";
		else if (err == -EPERM || err == -EBUSY || err == -EEXIST)
			break;   /* no privileges, or another program on the interface */
	}
	if (err)
		return err;
	s->cfg_fd = bpf_object__find_map_fd_by_name(s->obj, "xr_cfg");
	s->counts_fd = bpf_object__find_map_fd_by_name(s->obj, "xr_counts");
	s->groups_fd = bpf_object__find_map_fd_by_name(s->obj, "xr_groups");
	return s->cfg_fd < 0 || s->counts_fd < 0 || s->groups_fd < 0 ? -ENOENT : 0;
}

/* The UMEM and the socket: zero-copy if allowed and offered, else copy;
 * multi-buffer if the kernel has it (6.6), else frames up to a chunk. */
static int sock_bind(struct xdp_link *x, const struct xr_link_xdp_opts *o)
{
	static const uint16_t tries[] = {
		XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP | XDP_USE_SG, XDP_COPY | XDP_USE_NEED_WAKEUP | XDP_USE_SG,
		XDP_COPY | XDP_USE_NEED_WAKEUP, XDP_COPY,
	};
	struct xdp_sock *s = x->sock;
	struct xsk_umem_config uc = { .fill_size = XL_RX_CHUNKS, .comp_size = XL_TX_CHUNKS, .frame_size = XL_CHUNK,
				      .frame_headroom = 0, .flags = 0 };
	int err = -EINVAL, xsks_fd, waited_ms = 0;

	/* Written once now, not chunk by chunk in the first traffic (the
	 * umem is cycled through): a ping-pong's first thousand round trips
	 * took 24 us, not 19. Here, once the link is sure to be made (~35 ms
	 * on this VM): a refused open does not pay it. */
	xr_pages_touch(s->area, (size_t)XL_NCHUNKS * XL_CHUNK, true);
	for (size_t t = o->no_zerocopy ? 1 : 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
		struct xsk_socket_config sc = { .rx_size = XL_RX_CHUNKS, .tx_size = XL_TX_CHUNKS,
						.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
						.bind_flags = tries[t] };
		err = xsk_umem__create(&s->umem, s->area, (uint64_t)XL_NCHUNKS * XL_CHUNK, &s->fill, &s->comp, &uc);
		if (err)
			return err;   /* EAFNOSUPPORT: no AF_XDP; EPERM: no CAP_NET_RAW */
		err = xsk_socket__create(&s->xsk, x->ifname, o->queue, s->umem, &s->rx,
					 &s->tx, &sc);
		if (!err) {
			x->info.zerocopy = tries[t] & XDP_ZEROCOPY;
			x->info.multibuffer = tries[t] & XDP_USE_SG;
			x->info.need_wakeup = tries[t] & XDP_USE_NEED_WAKEUP;
			break;
		}
		s->xsk = NULL;
		xsk_umem__delete(s->umem);
		s->umem = NULL;
		/* The queue is still held by a socket closed a moment ago (the
		 * kernel releases it from deferred work): claim() showed that no
		 * live xroce link owns the interface, so wait for it, a while. */
		if (err == -EBUSY && waited_ms < XL_QUEUE_WAIT_MS) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			waited_ms += 2;
			t--;
			continue;
		}
		if (err == -EPERM || err == -EBUSY || err == -ENODEV)
			return err;
	}
	if (err)
		return err;
	s->fd = xsk_socket__fd(s->xsk);
	xsks_fd = bpf_object__find_map_fd_by_name(s->obj, "xr_xsks");
	if (xsks_fd < 0)
		return -ENOENT;
	err = xsk_socket__update_xskmap(s->xsk, xsks_fd);
	if (err)
		return err;
	/* All receive chunks to the kernel; all transmit chunks free. */
	{
		uint32_t idx;
		if (xsk_ring_prod__reserve(&s->fill, XL_RX_CHUNKS, &idx) != XL_RX_CHUNKS)
			return -ENOMEM;
		for (uint32_t i = 0; i < XL_RX_CHUNKS; i++)
			*xsk_ring_prod__fill_addr(&s->fill, idx + i) = (uint64_t)i * XL_CHUNK;
		xsk_ring_prod__submit(&s->fill, XL_RX_CHUNKS);
		for (uint32_t i = 0; i < XL_TX_CHUNKS; i++)
			s->tx_free[s->ntx_free++] = (uint64_t)(XL_RX_CHUNKS + i) * XL_CHUNK;
	}
	return 0;
}

/* Tells the filter our address: only now does it redirect anything. */
static int filter_arm(struct xdp_link *x)
{
	struct xdp_cfg c = { .is_v4 = xr_gid_is_ipv4(&x->addr), .active = 1 };
	uint32_t zero = 0;

	memcpy(c.addr, x->addr.raw, 16);
	return bpf_map_update_elem(x->sock->cfg_fd, &zero, &c, BPF_ANY) ? -errno : 0;
}

static int sock_open(struct xdp_link *x, const struct xr_link_xdp_opts *o)
{
	struct xdp_sock *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	x->sock = s;
	s->cfg_fd = s->counts_fd = s->fd = s->owner_fd = s->link_fd = s->groups_fd = -1;
	/* Made here, in the interface's namespace (a later join may come from
	 * a thread in another); it receives nothing (protocol 0). */
	s->mc_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	libbpf_set_print(quiet_print);
	s->area = mmap(NULL, (size_t)XL_NCHUNKS * XL_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->area == MAP_FAILED) {
		s->area = NULL;
		return -ENOMEM;
	}
	/* Is there AF_XDP at all, and may we use it? Asked first, so the error
	 * names the cause rather than a later step's symptom. */
	{
		int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;   /* EAFNOSUPPORT or EPERM */
		close(fd);
	}
	err = claim(x);
	if (!err)
		err = prog_attach(x, o->mode);
	if (!err)
		err = sock_bind(x, o);
	if (!err)
		err = filter_arm(x);
	return err;
}

struct xr_link *xr_link_xdp(const char *ifname, const char *addr, const struct xr_link_xdp_opts *opts)
{
	static const struct xr_link_xdp_opts defaults = { 0 };
	const struct xr_link_xdp_opts *o = opts ? opts : &defaults;
	struct xdp_link *x;
	struct ifreq ifr;
	int err, fd;

	if (!ifname || !addr || strlen(ifname) >= IF_NAMESIZE || o->mode > XR_XDP_GENERIC) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	if (xr_gid_parse(&x->addr, addr)) {
		free(x);
		errno = EINVAL;
		return NULL;
	}
	snprintf(x->ifname, sizeof(x->ifname), "%s", ifname);
	x->ifindex = (int)if_nametoindex(ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!x->ifindex || fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		if (fd >= 0)
			close(fd);
		free(x);
		errno = ENODEV;
		return NULL;
	}
	memcpy(x->link.mac, ifr.ifr_hwaddr.sa_data, 6);
	x->link.mtu = ioctl(fd, SIOCGIFMTU, &ifr) == 0 ? (uint32_t)ifr.ifr_mtu : 1500;
	close(fd);
	x->info.queue = o->queue;
	if (pool_init(&x->pool, XL_POOL_FRAMES)) {
		free(x);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&x->rx_lock, NULL);
	pthread_mutex_init(&x->tx_lock, NULL);
	err = sock_open(x, o);
	if (err) {
		sock_close(x);
		pool_fini(&x->pool);
		pthread_mutex_destroy(&x->rx_lock);
		pthread_mutex_destroy(&x->tx_lock);
		free(x);
		errno = -err;
		return NULL;
	}
	/* Without multi-buffer a frame must fit one chunk: the IP MTU shrinks. */
	if (!x->info.multibuffer && x->link.mtu > XL_CHUNK - XR_ETH_HLEN)
		x->link.mtu = XL_CHUNK - XR_ETH_HLEN;
	x->link.ops = &xdp_ops;
	x->link.kind = "xdp";
	x->link.priv = x;
	if (!o->quiet)
		fprintf(stderr, "xroce: xdp link on %s queue %u: %s XDP, %s%s\n", x->ifname, o->queue, x->info.attach,
			x->info.zerocopy ? "zero-copy" : "copy mode (zero-copy not offered)",
			x->info.multibuffer ? ", multi-buffer" : ", single-buffer (IP MTU <= 4082)");
	return &x->link;
}

int xr_link_xdp_add_neigh(struct xr_link *l, const xr_gid *gid, const uint8_t mac[6])
{
	struct xdp_link *x;

	if (!l || l->ops != &xdp_ops || !gid || !mac)
		return -EINVAL;
	x = l->priv;
	pthread_mutex_lock(&x->rx_lock);
	xdp_learn(x, gid, mac);
	pthread_mutex_unlock(&x->rx_lock);
	return 0;
}

struct xdp_sock *xdp_link_sock(struct xr_link *l)
{
	return l && l->ops == &xdp_ops ? ((struct xdp_link *)l->priv)->sock : NULL;
}

int xr_link_xdp_info(struct xr_link *l, struct xr_link_xdp_info *out)
{
	struct xdp_link *x;
	struct xdp_statistics st;
	socklen_t sl = sizeof(st);
	uint64_t *per;
	int ncpu = libbpf_num_possible_cpus();

	if (!l || l->ops != &xdp_ops || !out)
		return -ENOTSUP;
	x = l->priv;
	/* The receive side counts under rx_lock, the transmit side under
	 * tx_lock (taken inside rx_lock where both are: an ARP reply). */
	pthread_mutex_lock(&x->rx_lock);
	pthread_mutex_lock(&x->tx_lock);
	*out = x->info;
	out->pending = x->npending;
	pthread_mutex_unlock(&x->tx_lock);
	pthread_mutex_unlock(&x->rx_lock);
	pthread_mutex_lock(&x->pool.lock);
	out->pool_free = x->pool.nfree;
	pthread_mutex_unlock(&x->pool.lock);
	out->pool_frames = XL_POOL_FRAMES;
	if (ncpu > 0 && (per = calloc((size_t)ncpu, sizeof(*per)))) {
		uint64_t *dst[XC_MAX] = { &out->filt_roce, &out->filt_arp, &out->filt_nd, &out->filt_pfc,
					 &out->filt_pass, &out->filt_no_xsk };
		for (uint32_t k = 0; k < XC_MAX; k++) {
			*dst[k] = 0;
			if (!bpf_map_lookup_elem(x->sock->counts_fd, &k, per))
				for (int c = 0; c < ncpu; c++)
					*dst[k] += per[c];
		}
		free(per);
	}
	if (!getsockopt(x->sock->fd, SOL_XDP, XDP_STATISTICS, &st, &sl)) {
		out->k_rx_dropped = st.rx_dropped;
		out->k_rx_invalid = st.rx_invalid_descs;
		out->k_tx_invalid = st.tx_invalid_descs;
		out->k_rx_ring_full = st.rx_ring_full;
		out->k_fill_empty = st.rx_fill_ring_empty_descs;
		out->k_tx_ring_empty = st.tx_ring_empty_descs;
	}
	return 0;
}

#endif
