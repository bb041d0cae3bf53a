/* SPDX-License-Identifier: MIT */
/* Debug attach: the register file served on a UNIX socket by a thread. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../wire/bytes.h"
#include "debug_wire.h"
#include "engine.h"

/* Reads exactly n bytes unless the peer closes or the engine stops. */
static int read_full(int fd, int stop_fd, uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p[2] = { { fd, POLLIN, 0 }, { stop_fd, POLLIN, 0 } };
		ssize_t r;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p[1].revents)
			return -1;
		r = read(fd, buf + got, n - got);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

static void serve_client(struct xr_engine *e, int fd)
{
	uint8_t req[XR_DBG_REQ_LEN], resp[XR_DBG_RESP_LEN];

	while (read_full(fd, e->debug.stop_pipe[0], req, sizeof(req)) == 0) {
		uint32_t addr = get_le32(req + 4), val = get_le32(req + 8);
		enum xr_axi_resp r;
		if (req[0] == XR_DBG_OP_READ)
			r = xr_engine_reg_read(e, addr, &val);
		else if (req[0] == XR_DBG_OP_WRITE)
			r = xr_engine_reg_write(e, addr, val), val = 0;
		else
			break;   /* protocol error: drop the client */
		memset(resp, 0, sizeof(resp));
		resp[0] = (uint8_t)r;
		put_le32(resp + 4, val);
		/* MSG_NOSIGNAL: a client gone before its answer is dropped,
		 * not a SIGPIPE that ends the engine's program. */
		if (send(fd, resp, sizeof(resp), MSG_NOSIGNAL) != (ssize_t)sizeof(resp))
			break;
	}
}

static void *debug_thread(void *arg)
{
	struct xr_engine *e = arg;

	for (;;) {
		struct pollfd p[2] = { { e->debug.listen_fd, POLLIN, 0 }, { e->debug.stop_pipe[0], POLLIN, 0 } };
		int fd;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		fd = accept4(e->debug.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_client(e, fd);
		close(fd);
	}
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
