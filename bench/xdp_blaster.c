/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP blaster: the baseline for the XDP link in bench-links. Two
 * XDP sockets bound exactly as the link binds them (the link opens them:
 * same filter, attach mode, copy or zero-copy, multi-buffer), then driven
 * bare: the sender's frames are written into UMEM chunks once, and each
 * burst is descriptors on the tx ring plus one kick; the sink takes
 * descriptors off the rx ring and hands the chunks straight back to the
 * fill ring. No engine, no copy out of the UMEM, no per-frame work: what
 * the kernel's AF_XDP path on this interface carries at most.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "xdp_blaster.h"

#ifndef XROCE_HAVE_XDP

double xdp_blaster(struct xr_link *la, struct xr_link *lb, const uint8_t *frame, size_t len, double seconds,
		   unsigned batch)
{
	(void)la, (void)lb, (void)frame, (void)len, (void)seconds, (void)batch;
	errno = EAFNOSUPPORT;
	return -1;
}

#else

#include "link/xdp.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct xsink {
	struct xdp_sock *s;
	size_t frame;
	volatile int stop;
	uint64_t frames, bad;
};

/* Busy polling, as the AF_PACKET sink and xroce's receiving end do. */
static void *xsink_thread(void *arg)
{
	struct xsink *k = arg;
	struct xdp_sock *s = k->s;
	size_t got = 0;

	while (!k->stop) {
		uint32_t idx, fidx, n = xsk_ring_cons__peek(&s->rx, XL_RX_BATCH, &idx);
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&s->fill))
				recvfrom(s->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
			continue;
		}
		if (xsk_ring_prod__reserve(&s->fill, n, &fidx) != n)
			continue;   /* cannot be: the fill ring holds every receive chunk */
		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&s->rx, idx + i);
			*xsk_ring_prod__fill_addr(&s->fill, fidx + i) = d->addr & ~(uint64_t)(XL_CHUNK - 1);
			got += d->len;
			if (d->options & XDP_PKT_CONTD)
				continue;
			if (got == k->frame)
				k->frames++;
			else
				k->bad++;
			got = 0;
		}
		xsk_ring_cons__release(&s->rx, n);
		xsk_ring_prod__submit(&s->fill, n);
	}
	return NULL;
}

double xdp_blaster(struct xr_link *la, struct xr_link *lb, const uint8_t *frame, size_t len, double seconds,
		   unsigned batch)
{
	struct xdp_sock *s = xdp_link_sock(la);
	struct xsink k = { .s = xdp_link_sock(lb), .frame = len };
	unsigned cpf = (unsigned)((len + XL_CHUNK - 1) / XL_CHUNK), nslots, next = 0;
	uint64_t slot[XL_TX_CHUNKS], inflight = 0;
	pthread_t t;
	double t0, t1;

	if (!s || !k.s || !len || len > XR_MAX_FRAME || batch * cpf > XL_TX_CHUNKS) {
		errno = EINVAL;
		return -1;
	}
	{
		struct xr_link_xdp_info in;
		if (cpf > 1 && (xr_link_xdp_info(la, &in) || !in.multibuffer)) {
			errno = EMSGSIZE;   /* the frame needs multi-buffer, which the socket lacks */
			return -1;
		}
	}
	/* Every free transmit chunk gets its part of the frame, once. */
	nslots = s->ntx_free / cpf;
	for (unsigned i = 0; i < nslots * cpf; i++) {
		size_t off = (size_t)(i % cpf) * XL_CHUNK, part = len - off < XL_CHUNK ? len - off : XL_CHUNK;
		slot[i] = s->tx_free[i];
		memcpy(xsk_umem__get_data(s->area, slot[i]), frame + off, part);
	}
	pthread_create(&t, NULL, xsink_thread, &k);
	t0 = t1 = now_s();
	while (t1 - t0 < seconds) {
		uint32_t idx, n = xsk_ring_cons__peek(&s->comp, XL_TX_CHUNKS, &idx);
		unsigned frames = batch;

		xsk_ring_cons__release(&s->comp, n);
		inflight -= n;
		if (inflight + (uint64_t)frames * cpf > (uint64_t)nslots * cpf)
			frames = (unsigned)(((uint64_t)nslots * cpf - inflight) / cpf);
		if (frames && xsk_ring_prod__reserve(&s->tx, frames * cpf, &idx) == frames * cpf) {
			/* All slots hold the same bytes, so reuse needs no bookkeeping
			 * beyond the in-flight count. */
			for (unsigned f = 0; f < frames; f++, next = (next + 1) % nslots)
				for (unsigned c = 0; c < cpf; c++) {
					struct xdp_desc *d = xsk_ring_prod__tx_desc(&s->tx, idx++);
					size_t off = (size_t)c * XL_CHUNK;
					d->addr = slot[next * cpf + c];
					d->len = (uint32_t)(len - off < XL_CHUNK ? len - off : XL_CHUNK);
					d->options = c + 1 < cpf ? XDP_PKT_CONTD : 0;
				}
			xsk_ring_prod__submit(&s->tx, frames * cpf);
			inflight += (uint64_t)frames * cpf;
		}
		/* One kick per burst, repeated while the kernel says more wait,
		 * as the link kicks. */
		for (int i = 0; i < XL_KICK_TRIES; i++)
			if (sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 || (errno != EAGAIN && errno != EBUSY))
				break;
		t1 = now_s();
	}
	{
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	k.stop = 1;
	pthread_join(t, NULL);
	if (k.bad)
		fprintf(stderr, "  (AF_XDP blaster: %llu frames of the wrong length)\n", (unsigned long long)k.bad);
	return (double)k.frames / (t1 - t0);
}

#endif
