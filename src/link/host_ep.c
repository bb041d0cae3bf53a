/* SPDX-License-Identifier: MIT */
/*
 * The host endpoint's control side: the rendezvous, the handshake that
 * hands a shared mapping and the eventfds over, and the control thread that
 * accepts peers and notices those that exit (their socket closes).
 *
 * Handshake (SOCK_SEQPACKET): each side makes a memfd of its own (what
 * it writes: indices and slots), maps it, then seals it against resizing
 * (the peer cannot be made to fault by a shrinking file) and against any
 * further writable mapping (the peer can only read it). The connecting
 * side sends a hello with [its memfd, its eventfd]; the acceptor checks
 * the peer's user, the size, seals and header, maps it read only and
 * replies with [its memfd, its eventfd], which the connecting side checks
 * the same way. The control thread replies before it touches anything a
 * data path may hold, so two processes connecting to each other at once
 * never wait on each other.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "host.h"

#define HANDSHAKE_TIMEOUT_MS 200

/* "@xroce-host/ADDR": abstract, so nothing to clean up after a crash. */
static socklen_t rendezvous_name(const xr_gid *a, struct sockaddr_un *sa)
{
	char text[64];
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	xr_gid_format(a, text, sizeof(text));
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "xroce-host/%s", text);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static bool uid_allowed(struct host_ep *h, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	if (cred.uid == h->uid)
		return true;
	for (unsigned i = 0; i < h->nextra; i++)
		if (cred.uid == h->extra_uid[i])
			return true;
	return false;
}

static void set_timeouts(int fd)
{
	struct timeval tv = { 0, HANDSHAKE_TIMEOUT_MS * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int send_msg(int fd, const struct host_hello *m, const int *fds, unsigned nfds)
{
	union { char buf[CMSG_SPACE(2 * sizeof(int))]; struct cmsghdr align; } ctl;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(&ctl, 0, sizeof(ctl));
	if (nfds) {
		struct cmsghdr *c;
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(fd, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -EPROTO;
}

/* Receives one message with exactly nfds descriptors; any others are closed. */
static int recv_msg(int fd, struct host_hello *m, int *fds, unsigned nfds)
{
	union { char buf[CMSG_SPACE(4 * sizeof(int))]; struct cmsghdr align; } ctl;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	unsigned got = 0;
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int d;
			memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < nfds)
				fds[got++] = d;
			else
				close(d);
		}
	}
	if (n == (ssize_t)sizeof(*m) && got == nfds && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
	    m->magic == HOST_MAGIC && m->version == HOST_VERSION)
		return 0;
	for (unsigned i = 0; i < got; i++)
		close(fds[i]);
	return -EPROTO;
}

/* The descriptor a peer hands over for its wakeups is written in the data
 * path: it must be an anonymous inode, as an eventfd is (a pipe without a
 * reader would raise SIGPIPE in this process, a socket or a file could
 * block; a timerfd or signalfd only fails the write), and writes to it
 * must not block (an eventfd held at its maximum would hold the data
 * path). */
static bool peer_efd_ok(int fd)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) || (st.st_mode & S_IFMT) != 0 || (fl = fcntl(fd, F_GETFL)) < 0)
		return false;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/* Lays the connection over the two mappings. Ours is new (zeroed):
 * every index starts at 0, all our slots free. */
static struct host_conn *conn_new(uint8_t *out_map, uint8_t *in_map, const uint8_t peer[16])
{
	struct host_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->sock = -1;
	c->peer_efd = -1;
	c->out_map = out_map;
	c->in_map = in_map;
	c->out = (struct host_out *)out_map;
	c->in = (const struct host_out *)in_map;
	c->tx_slot = (struct xr_frame *)(out_map + HOST_SLOTS_OFF);
	c->rx_slot = (struct xr_frame *)(in_map + HOST_SLOTS_OFF);
	for (uint32_t i = 0; i < HOST_SLOTS; i++)
		c->tx_free[c->ntx_free++] = HOST_SLOTS - 1 - i;
	memcpy(c->peer.raw, peer, 16);
	atomic_init(&c->dead, false);
	return c;
}

void host_conn_free(struct host_conn *c)
{
	if (!c)
		return;
	if (c->sock >= 0)
		close(c->sock);
	if (c->peer_efd >= 0)
		close(c->peer_efd);
	if (c->out_map)
		munmap(c->out_map, host_out_size());
	if (c->in_map)
		munmap(c->in_map, host_out_size());
	free(c);
}

/* Our side's memfd, mapped read-write and then sealed: no resizing, no
 * writable mapping after ours (the peer's is read only). 0 or -errno. */
static int out_make(int *fd, uint8_t **map)
{
	size_t size = host_out_size();
	int mfd = memfd_create("xroce-host", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;
	struct host_out *o;

	if (mfd < 0)
		return -errno;
	*map = ftruncate(mfd, (off_t)size) ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (*map == MAP_FAILED)
		goto fail;
	o = (struct host_out *)*map;
	o->magic = HOST_MAGIC;
	o->version = HOST_VERSION;
	o->slots = HOST_SLOTS;
	o->slot_size = sizeof(struct xr_frame);
	o->size = size;
	/* Born armed: the connection may be made (by a thread posting) while
	 * the engine's thread sleeps without having armed it, so the peer's
	 * first frame wakes us (its record of what it woke starts at 0). */
	atomic_store_explicit(&o->sleeps, 1, memory_order_relaxed);
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)) {
		err = -errno;
		munmap(*map, size);
		close(mfd);
		return err;
	}
	*fd = mfd;
	return 0;
fail:
	err = -errno;
	close(mfd);
	return err;
}

/* Checks the peer's memfd and maps it read only; the mapping or NULL. */
static uint8_t *in_map_checked(int mfd, const struct host_hello *m)
{
	size_t size = host_out_size();
	struct stat st;
	int seals = fcntl(mfd, F_GET_SEALS);
	uint8_t *map;
	const struct host_out *o;

	if (m->slots != HOST_SLOTS || fstat(mfd, &st) || (size_t)st.st_size != size || seals < 0 ||
	    !(seals & F_SEAL_SHRINK))
		return NULL;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED)
		return NULL;
	o = (const struct host_out *)map;
	if (o->magic != HOST_MAGIC || o->version != HOST_VERSION || o->slots != HOST_SLOTS ||
	    o->slot_size != sizeof(struct xr_frame) || o->size != size) {
		munmap(map, size);
		return NULL;
	}
	return map;
}

/* A table place for one more connection, or false when full. */
static bool reserve(struct host_ep *h)
{
	unsigned n = atomic_load(&h->reserved);

	while (n < HOST_MAX_CONNS)
		if (atomic_compare_exchange_weak(&h->reserved, &n, n + 1))
			return true;
	return false;
}

static void ctl_count(struct host_ep *h, uint64_t *counter)
{
	pthread_mutex_lock(&h->pending_lock);
	(*counter)++;
	pthread_mutex_unlock(&h->pending_lock);
}

static void watch(struct host_ep *h, struct host_conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };

	fcntl(c->sock, F_SETFL, fcntl(c->sock, F_GETFL) | O_NONBLOCK);
	epoll_ctl(h->epfd, EPOLL_CTL_ADD, c->sock, &ev);
}

struct host_conn *host_ep_connect(struct host_ep *h, const xr_gid *addr)
{
	struct sockaddr_un sa;
	socklen_t salen = rendezvous_name(addr, &sa);
	struct host_hello m = { HOST_MAGIC, HOST_VERSION, 0, HOST_SLOTS, 0, { 0 } }, r;
	struct host_conn *c;
	int s, mfd = -1, fds[2], pfds[2];
	uint8_t *omap = NULL, *imap = NULL;

	/* Non-blocking: a listener whose backlog is full (a stopped device,
	 * or anyone's socket squatting the name) refuses at once, where a
	 * blocking connect() held the data path for good. The handshake then
	 * waits with timeouts. */
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, salen))
		goto fail;   /* no device there: the common case for a remote address */
	if (fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK))
		goto fail;
	if (!uid_allowed(h, s)) {
		ctl_count(h, &h->ctl_st.refused_uid);
		goto fail;
	}
	if (!reserve(h)) {
		ctl_count(h, &h->ctl_st.refused_full);
		goto fail;
	}
	set_timeouts(s);
	if (out_make(&mfd, &omap)) {
		omap = NULL;
		goto unreserve;
	}
	memcpy(m.addr, h->addr.raw, 16);
	fds[0] = mfd;
	fds[1] = h->efd;
	/* A refusal carries no descriptors: recv_msg fails on it. */
	if (send_msg(s, &m, fds, 2) || recv_msg(s, &r, pfds, 2))
		goto unreserve;
	imap = r.reply && !r.status && peer_efd_ok(pfds[1]) ? in_map_checked(pfds[0], &r) : NULL;
	close(pfds[0]);
	if (!imap || !(c = conn_new(omap, imap, addr->raw))) {
		close(pfds[1]);
		goto unreserve;
	}
	close(mfd);
	c->sock = s;
	c->peer_efd = pfds[1];
	h->conn[h->nconn++] = c;
	h->st.peers_connected++;
	watch(h, c);
	return c;
unreserve:
	atomic_fetch_sub(&h->reserved, 1);
	if (imap)
		munmap(imap, host_out_size());
	if (omap)
		munmap(omap, host_out_size());
	if (mfd >= 0)
		close(mfd);
fail:
	if (s >= 0)
		close(s);
	return NULL;
}

static void accept_one(struct host_ep *h, int s)
{
	struct host_hello m, r = { HOST_MAGIC, HOST_VERSION, 1, HOST_SLOTS, 0, { 0 } };
	int fds[2], rfds[2], mfd = -1, err = 0;
	uint8_t *imap = NULL, *omap = NULL;
	struct host_conn *c = NULL;

	if (!uid_allowed(h, s)) {
		ctl_count(h, &h->ctl_st.refused_uid);
		close(s);
		return;
	}
	set_timeouts(s);
	if (recv_msg(s, &m, fds, 2)) {
		ctl_count(h, &h->ctl_st.refused_hello);
		close(s);
		return;
	}
	if (m.reply || !peer_efd_ok(fds[1]) || !(imap = in_map_checked(fds[0], &m)))
		err = -EPROTO;
	else if (!reserve(h))
		err = -ENOSPC;
	else if ((err = out_make(&mfd, &omap)) || !(c = conn_new(omap, imap, m.addr))) {
		atomic_fetch_sub(&h->reserved, 1);
		err = err ? err : -ENOMEM;
	}
	close(fds[0]);
	r.status = err;
	if (err) {
		if (imap)
			munmap(imap, host_out_size());
		if (mfd >= 0) {
			munmap(omap, host_out_size());
			close(mfd);
		}
		ctl_count(h, err == -ENOSPC ? &h->ctl_st.refused_full : &h->ctl_st.refused_hello);
		send_msg(s, &r, NULL, 0);
		close(fds[1]);
		close(s);
		return;
	}
	c->sock = s;
	c->peer_efd = fds[1];
	rfds[0] = mfd;
	rfds[1] = h->efd;
	err = send_msg(s, &r, rfds, 2);
	close(mfd);
	if (err) {
		host_conn_free(c);
		atomic_fetch_sub(&h->reserved, 1);
		ctl_count(h, &h->ctl_st.refused_hello);
		return;
	}
	watch(h, c);
	pthread_mutex_lock(&h->pending_lock);
	h->pending[h->npending++] = c;   /* reserve() keeps this in bounds */
	h->ctl_st.peers_accepted++;
	pthread_mutex_unlock(&h->pending_lock);
	{
		uint64_t one = 1;   /* a sleeping data path adopts the connection */
		if (write(h->efd, &one, sizeof(one)) < 0) {
			/* a full counter wakes it anyway */
		}
	}
}

/* The peer closed its end (exit, crash or close): the data path drops
 * what it would send there and frees the connection once drained. */
static void conn_event(struct host_ep *h, struct host_conn *c, uint32_t events)
{
	char b[16];
	ssize_t n = 0;
	uint64_t one = 1;

	if (!(events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) {
		n = recv(c->sock, b, sizeof(b), MSG_DONTWAIT);
		if (n != 0)
			return;   /* nothing is sent after the handshake: ignore it */
	}
	epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->sock, NULL);
	close(c->sock);
	c->sock = -1;
	ctl_count(h, &h->ctl_st.peers_gone);
	atomic_store_explicit(&c->dead, true, memory_order_release);   /* the data path owns c now */
	if (write(h->efd, &one, sizeof(one)) < 0) {
		/* a full counter wakes it anyway */
	}
}

static void *control_thread(void *arg)
{
	struct host_ep *h = arg;
	struct epoll_event ev[16];

	for (;;) {
		int n = epoll_wait(h->epfd, ev, 16, -1);
		if (n < 0 && errno != EINTR)
			return NULL;
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;
			if (p == &h->stop_efd)
				return NULL;
			if (p == h) {
				int s;
				while ((s = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
					accept_one(h, s);
				continue;
			}
			conn_event(h, p, ev[i].events);
		}
	}
}

/* XROCE_HOST_UIDS="1000,1001": up to 8 users besides our own who may
 * connect. Anything else admits nobody more, and says so: a list read
 * halfway would admit users nobody named. */
static void read_extra_uids(struct host_ep *h)
{
	const char *env = getenv("XROCE_HOST_UIDS"), *s = env;
	char *end;

	while (s && *s) {
		unsigned long v;
		errno = 0;
		v = *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
		if (*s < '0' || *s > '9' || errno || v >= (uid_t)-1 || (*end && *end != ',') ||
		    h->nextra == 8) {
			fprintf(stderr, "xroce: XROCE_HOST_UIDS='%.48s': expected up to 8 user IDs, "
					"comma-separated; no other user may connect\n", env);
			h->nextra = 0;
			return;
		}
		h->extra_uid[h->nextra++] = (uid_t)v;
		s = *end ? end + 1 : end;
	}
}

int host_ep_open(struct host_ep **out, const xr_gid *addr)
{
	struct host_ep *h = calloc(1, sizeof(*h));
	struct sockaddr_un sa;
	socklen_t salen;
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->pending_lock, NULL);
	h->efd = h->stop_efd = h->epfd = h->listen_fd = -1;
	h->addr = *addr;
	h->uid = geteuid();
	read_extra_uids(h);
	errno = 0;
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	h->stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	h->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (h->efd < 0 || h->stop_efd < 0 || h->epfd < 0 || h->listen_fd < 0) {
		err = -errno;
		goto fail;
	}
	salen = rendezvous_name(addr, &sa);
	if (bind(h->listen_fd, (struct sockaddr *)&sa, salen) || listen(h->listen_fd, 64)) {
		err = -errno;
		goto fail;
	}
	ev.data.ptr = h;
	epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->listen_fd, &ev);
	ev.data.ptr = &h->stop_efd;
	epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->stop_efd, &ev);
	err = -pthread_create(&h->thread, NULL, control_thread, h);
	if (err)
		goto fail;
	pthread_setname_np(h->thread, "xroce-host");
	h->thread_started = true;
	*out = h;
	return 0;
fail:
	host_ep_close(h);
	return err;
}

void host_ep_close(struct host_ep *h)
{
	uint64_t one = 1;

	if (!h)
		return;
	if (h->thread_started) {
		if (write(h->stop_efd, &one, sizeof(one)) < 0) {
			/* cannot fail on a fresh eventfd */
		}
		pthread_join(h->thread, NULL);
	}
	for (unsigned i = 0; i < h->nconn; i++)
		host_conn_free(h->conn[i]);
	for (unsigned i = 0; i < h->npending; i++)
		host_conn_free(h->pending[i]);
	if (h->listen_fd >= 0)
		close(h->listen_fd);   /* the rendezvous goes with it */
	if (h->efd >= 0)
		close(h->efd);
	if (h->stop_efd >= 0)
		close(h->stop_efd);
	if (h->epfd >= 0)
		close(h->epfd);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->pending_lock);
	free(h);
}
