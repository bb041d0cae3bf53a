/* SPDX-License-Identifier: MIT */
/* Debug attach: the register file served on a UNIX socket by a thread. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../wire/bytes.h"
#include "debug_wire.h"
#include "engine.h"

/* Up to DEBUG_CLIENTS clients are served together, a request at a time
 * from whichever has one whole: a client that sends part of one and
 * stops holds nobody up, and is dropped after DEBUG_PARTIAL_MS. Answers
 * are sent without waiting: a client that does not read them (its socket
 * full) is dropped, so nothing a client does keeps the server, or its
 * stop, waiting. A client beyond the limit takes the place of the one
 * quiet the longest. */
#define DEBUG_CLIENTS    8
#define DEBUG_PARTIAL_MS 2000

struct dbg_client {
	int fd;
	size_t got;                   /* bytes of req so far */
	uint64_t since_ms;            /* the first byte of a partial request, or the last answer */
	uint8_t req[XR_DBG_REQ_LEN];
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void drop(struct dbg_client *c, unsigned *n, unsigned i)
{
	close(c[i].fd);
	c[i] = c[--*n];
}

/* The request in c, whole: answered, or false when the client must go. */
static bool serve_one(struct xr_engine *e, struct dbg_client *c)
{
	uint8_t resp[XR_DBG_RESP_LEN] = { 0 };
	uint32_t addr = get_le32(c->req + 4), val = get_le32(c->req + 8);
	enum xr_axi_resp r;

	if (c->req[0] == XR_DBG_OP_READ)
		r = xr_engine_reg_read(e, addr, &val);
	else if (c->req[0] == XR_DBG_OP_WRITE)
		r = xr_engine_reg_write(e, addr, val), val = 0;
	else
		return false;   /* protocol error */
	resp[0] = (uint8_t)r;
	put_le32(resp + 4, val);
	c->got = 0;
	c->since_ms = now_ms();
	/* MSG_NOSIGNAL: a client gone before its answer is dropped, not a
	 * SIGPIPE that ends the engine's program. */
	return send(c->fd, resp, sizeof(resp), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(resp);
}

/* Reads what client c has; false when it must go. */
static bool read_client(struct xr_engine *e, struct dbg_client *c)
{
	ssize_t r = read(c->fd, c->req + c->got, sizeof(c->req) - c->got);

	if (r < 0)
		return errno == EINTR || errno == EAGAIN;
	if (r == 0)
		return false;
	if (!c->got)
		c->since_ms = now_ms();
	c->got += (size_t)r;
	return c->got < sizeof(c->req) || serve_one(e, c);
}

/* False when no descriptor was left for it: the caller pauses accepting
 * (the listening socket stays readable, and poll would spin). */
static bool accept_client(struct xr_engine *e, struct dbg_client *c, unsigned *n)
{
	int fd = accept4(e->debug.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return errno != EMFILE && errno != ENFILE;
	if (*n == DEBUG_CLIENTS) {
		unsigned quiet = 0;
		for (unsigned i = 1; i < *n; i++)
			if (c[i].since_ms < c[quiet].since_ms)
				quiet = i;
		drop(c, n, quiet);
	}
	c[(*n)++] = (struct dbg_client){ .fd = fd, .since_ms = now_ms() };
	return true;
}

static void *debug_thread(void *arg)
{
	struct xr_engine *e = arg;
	struct dbg_client c[DEBUG_CLIENTS];
	uint64_t accept_after = 0;   /* out of descriptors: a pause */
	unsigned n = 0;

	for (;;) {
		struct pollfd p[2 + DEBUG_CLIENTS] = { { e->debug.listen_fd, POLLIN, 0 },
						       { e->debug.stop_pipe[0], POLLIN, 0 } };
		unsigned polled = n;
		uint64_t t = now_ms();
		if (t < accept_after)
			p[0].fd = -1;   /* poll leaves it out */
		for (unsigned i = 0; i < n; i++)
			p[2 + i] = (struct pollfd){ c[i].fd, POLLIN, 0 };
		if (poll(p, 2 + polled, 500) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		/* Backwards: a drop moves the last client into slot i. */
		for (unsigned i = polled; i-- > 0;)
			if (p[2 + i].revents && !read_client(e, &c[i]))
				drop(c, &n, i);
		t = now_ms();
		for (unsigned i = n; i-- > 0;)
			if (c[i].got && t - c[i].since_ms > DEBUG_PARTIAL_MS)
				drop(c, &n, i);
		if (p[0].revents && !accept_client(e, c, &n))
			accept_after = t + 100;
	}
	while (n)
		drop(c, &n, n - 1);
	return NULL;
}

int xr_engine_serve_debug(struct xr_engine *e, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (e->debug.running)
		return -EBUSY;
	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (pipe2(e->debug.stop_pipe, O_CLOEXEC) < 0) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	e->debug.listen_fd = fd;
	strcpy(e->debug.path, path);
	err = pthread_create(&e->debug.thread, NULL, debug_thread, e);
	if (err) {
		close(fd);
		close(e->debug.stop_pipe[0]);
		close(e->debug.stop_pipe[1]);
		unlink(path);
		e->debug.listen_fd = -1;
		return -err;
	}
	pthread_setname_np(e->debug.thread, "xroce-debug");
	e->debug.running = true;
	return 0;
}

void xr_engine_stop_debug(struct xr_engine *e)
{
	if (!e->debug.running)
		return;
	if (write(e->debug.stop_pipe[1], "x", 1) != 1) {
		/* The pipe cannot be full with one byte; nothing else to do. */
	}
	pthread_join(e->debug.thread, NULL);
	close(e->debug.listen_fd);
	close(e->debug.stop_pipe[0]);
	close(e->debug.stop_pipe[1]);
	unlink(e->debug.path);
	e->debug.listen_fd = -1;
	e->debug.running = false;
}
