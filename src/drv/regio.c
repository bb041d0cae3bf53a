/* SPDX-License-Identifier: MIT */
/*
 * Register access backends (in-process engine, MMIO on a mapped file,
 * debug socket) and the driver's typed helpers on top of any of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../nic/debug_wire.h"
#include "../wire/bytes.h"
#include "xroce/engine.h"
#include "xroce/regio.h"

static struct xr_regio *regio_new(const struct xr_regio_ops *ops, void *ctx)
{
	struct xr_regio *r = malloc(sizeof(*r));

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->ops = ops;
	r->ctx = ctx;
	return r;
}

void xr_regio_close(struct xr_regio *r)
{
	if (!r)
		return;
	if (r->ops->close)
		r->ops->close(r->ctx);
	free(r);
}

/* ---- in-process engine ---- */

static int engine_read(void *ctx, uint32_t addr, uint32_t *val)
{
	return (int)xr_engine_reg_read(ctx, addr, val);
}

static int engine_write(void *ctx, uint32_t addr, uint32_t val)
{
	return (int)xr_engine_reg_write(ctx, addr, val);
}

static const struct xr_regio_ops engine_ops = { engine_read, engine_write, NULL };

struct xr_regio *xr_regio_engine(struct xr_engine *e)
{
	if (!e) {
		errno = EINVAL;
		return NULL;
	}
	return regio_new(&engine_ops, e);
}

/* ---- MMIO: volatile 32-bit loads and stores, as on a PCIe BAR ---- */

struct mmio {
	volatile uint32_t *base;
	size_t size;
	bool owned;
};

static int mmio_read(void *ctx, uint32_t addr, uint32_t *val)
{
	struct mmio *m = ctx;

	if ((addr & 3) || addr >= m->size)
		return -EFAULT;   /* would fault on real hardware: refuse instead */
	*val = m->base[addr / 4];
	return XR_AXI_OKAY;
}

static int mmio_write(void *ctx, uint32_t addr, uint32_t val)
{
	struct mmio *m = ctx;

	if ((addr & 3) || addr >= m->size)
		return -EFAULT;
	m->base[addr / 4] = val;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);   /* keep posted writes in program order */
	return XR_AXI_OKAY;
}

static void mmio_close(void *ctx)
{
	struct mmio *m = ctx;

	if (m->owned)
		munmap((void *)m->base, m->size);
	free(m);
}

static const struct xr_regio_ops mmio_ops = { mmio_read, mmio_write, mmio_close };

struct xr_regio *xr_regio_mmio_mem(volatile void *base, size_t size)
{
	struct mmio *m;
	struct xr_regio *r;

	if (!base || size < 4) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->base = base;
	m->size = size;
	r = regio_new(&mmio_ops, m);
	if (!r)
		free(m);
	return r;
}

struct xr_regio *xr_regio_mmio(const char *path, uint64_t offset, size_t size)
{
	struct xr_regio *r;
	struct stat st;
	void *p;
	int fd, err;

	if (!path || size < 4 || (offset & 0xFFF)) {
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* A file shorter than the window (an image, not a device's BAR):
	 * an access past its end would be a SIGBUS. */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size < offset + size) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
	err = errno;
	close(fd);
	if (p == MAP_FAILED) {
		errno = err;
		return NULL;
	}
	r = xr_regio_mmio_mem(p, size);
	if (!r) {
		munmap(p, size);
		return NULL;
	}
	((struct mmio *)r->ctx)->owned = true;
	return r;
}

/* ---- debug socket client ---- */

/* One request then its answer at a time: threads sharing the client
 * would otherwise read each other's answers. A server that does not
 * answer within SOCK_WAIT_S fails the access; an answer that may still
 * come would be read as the next one's, so the client is done (broken). */
#define SOCK_WAIT_S 2

struct sock_io {
	int fd;
	bool broken;
	pthread_mutex_t lock;
};

static int sock_xfer(struct sock_io *io, uint8_t op, uint32_t addr, uint32_t *val)
{
	uint8_t req[XR_DBG_REQ_LEN] = { op }, resp[XR_DBG_RESP_LEN];
	size_t got = 0;
	ssize_t n = -1;
	int rc = 0;

	put_le32(req + 4, addr);
	put_le32(req + 8, *val);
	pthread_mutex_lock(&io->lock);
	/* MSG_NOSIGNAL: a server gone is an error here, not a SIGPIPE. A
	 * request of 12 bytes on a UNIX socket goes whole or not at all. */
	while (!io->broken && (n = send(io->fd, req, sizeof(req), MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (io->broken)
		rc = -EPIPE;   /* an earlier access failed: the stream is out of step */
	else if (n != (ssize_t)sizeof(req))
		rc = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT : -EPIPE;
	while (!rc && got < sizeof(resp)) {
		n = read(io->fd, resp + got, sizeof(resp) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			rc = -ETIMEDOUT;
		else if (n <= 0)
			rc = -ECONNRESET;
		else
			got += (size_t)n;
	}
	if (rc)
		io->broken = true;
	pthread_mutex_unlock(&io->lock);
	if (rc)
		return rc;
	*val = get_le32(resp + 4);
	return resp[0];
}

static int sock_read(void *ctx, uint32_t addr, uint32_t *val)
{
	*val = 0;
	return sock_xfer(ctx, XR_DBG_OP_READ, addr, val);
}

static int sock_write(void *ctx, uint32_t addr, uint32_t val)
{
	return sock_xfer(ctx, XR_DBG_OP_WRITE, addr, &val);
}

static void sock_close(void *ctx)
{
	struct sock_io *io = ctx;

	close(io->fd);
	pthread_mutex_destroy(&io->lock);
	free(io);
}

static const struct xr_regio_ops sock_ops = { sock_read, sock_write, sock_close };

struct xr_regio *xr_regio_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct xr_regio *r;
	struct sock_io *io;

	if (!path || strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sa.sun_path, path);
	io = malloc(sizeof(*io));
	if (!io)
		return NULL;
	io->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (io->fd >= 0) {
		/* Before the connect, which a server whose backlog is full
		 * would otherwise hold without end. */
		struct timeval wait = { SOCK_WAIT_S, 0 };
		setsockopt(io->fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
		setsockopt(io->fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
	}
	if (io->fd < 0 || connect(io->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno == EAGAIN ? ETIMEDOUT : errno;
		if (io->fd >= 0)
			close(io->fd);
		free(io);
		errno = err;
		return NULL;
	}
	io->broken = false;
	pthread_mutex_init(&io->lock, NULL);
	r = regio_new(&sock_ops, io);
	if (!r)
		sock_close(io);
	return r;
}

/* ---- typed helpers ---- */

int xr_regio_read_event(struct xr_regio *r, uint32_t seq, struct xr_event_record *ev)
{
	uint32_t lo, hi, type;
	int rc = xr_regio_write(r, XR_REG_EVLOG_SEL, seq);

	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_TS_LO, &lo);
	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_TS_HI, &hi);
	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_TYPE, &type);
	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_QPN, &ev->qpn);
	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_ARG0, &ev->arg0);
	if (!rc)
		rc = xr_regio_read(r, XR_REG_EVLOG_ARG1, &ev->arg1);
	if (rc)
		return rc;
	ev->ts = (uint64_t)hi << 32 | lo;
	ev->type = type & 0xFF;
	return type >> 31 ? 0 : -ENOENT;   /* valid: not overwritten while we read */
}

int xr_regio_read_counter(struct xr_regio *r, enum xr_counter c, uint64_t *val)
{
	uint32_t lo, hi;
	int rc;

	if ((unsigned)c >= XR_CNT_COUNT)
		return -EINVAL;
	rc = xr_regio_read(r, XR_COUNTER_BASE + 8 * (uint32_t)c, &lo);
	if (rc)
		return rc;
	rc = xr_regio_read(r, XR_COUNTER_BASE + 8 * (uint32_t)c + 4, &hi);
	if (rc)
		return rc;
	*val = (uint64_t)hi << 32 | lo;
	return 0;
}

/* Selects an entry, writes the shadow words, then the command: last. */
static int window_commit(struct xr_regio *r, uint32_t sel_reg, uint32_t cmd_reg, uint32_t index,
			 const uint32_t *off, const uint32_t *val, int n, uint32_t *status)
{
	int rc = xr_regio_write(r, sel_reg, index);

	for (int i = 0; !rc && i < n; i++)
		rc = xr_regio_write(r, off[i], val[i]);
	if (!rc)
		rc = xr_regio_write(r, cmd_reg, XR_CMD_COMMIT);
	if (status) {
		*status = 0;
		if (rc > 0)
			xr_regio_read(r, XR_REG_QP_CMD_STATUS, status);
	}
	return rc;
}

static int window_cmd(struct xr_regio *r, uint32_t sel_reg, uint32_t cmd_reg, uint32_t index, uint32_t cmd)
{
	int rc = xr_regio_write(r, sel_reg, index);
	return rc ? rc : xr_regio_write(r, cmd_reg, cmd);
}

struct reader {
	struct xr_regio *r;
	int rc;
};

static uint32_t reader_get(void *arg, uint32_t off)
{
	struct reader *rd = arg;
	uint32_t v = 0;
	int rc = xr_regio_read(rd->r, off, &v);

	if (rc && !rd->rc)
		rd->rc = rc;
	return v;
}

int xr_regio_qp_commit(struct xr_regio *r, uint32_t qpn, const struct xr_qp_ctx *c, uint32_t *status)
{
	uint32_t off[XR_QP_SHADOW_WORDS], val[XR_QP_SHADOW_WORDS];
	int n = xr_qp_ctx_encode(c, off, val);

	if (n < 0)
		return n;
	return window_commit(r, XR_REG_QP_SEL, XR_REG_QP_CMD, qpn, off, val, n, status);
}

int xr_regio_qp_read(struct xr_regio *r, uint32_t qpn, struct xr_qp_ctx *c)
{
	struct reader rd = { r, window_cmd(r, XR_REG_QP_SEL, XR_REG_QP_CMD, qpn, XR_CMD_READ) };

	if (rd.rc)
		return rd.rc;
	xr_qp_ctx_decode(c, reader_get, &rd);
	return rd.rc;
}

int xr_regio_qp_destroy(struct xr_regio *r, uint32_t qpn)
{
	return window_cmd(r, XR_REG_QP_SEL, XR_REG_QP_CMD, qpn, XR_CMD_DESTROY);
}

int xr_regio_mr_commit(struct xr_regio *r, uint32_t index, struct xr_mr_ctx *c, uint32_t *status)
{
	uint32_t off[XR_MR_SHADOW_WORDS], val[XR_MR_SHADOW_WORDS];
	int n = xr_mr_ctx_encode(c, off, val), rc;

	if (n < 0)
		return n;
	rc = window_commit(r, XR_REG_MR_SEL, XR_REG_MR_CMD, index, off, val, n, status);
	if (!rc) {
		/* The engine assigned fresh keys: read them back. */
		rc = xr_regio_read(r, XR_REG_MR_LKEY, &c->lkey);
		if (!rc)
			rc = xr_regio_read(r, XR_REG_MR_RKEY, &c->rkey);
		c->valid = true;
	}
	return rc;
}

int xr_regio_mr_read(struct xr_regio *r, uint32_t index, struct xr_mr_ctx *c)
{
	struct reader rd = { r, window_cmd(r, XR_REG_MR_SEL, XR_REG_MR_CMD, index, XR_CMD_READ) };

	if (rd.rc)
		return rd.rc;
	xr_mr_ctx_decode(c, reader_get, &rd);
	return rd.rc;
}

int xr_regio_mr_invalidate(struct xr_regio *r, uint32_t index)
{
	return window_cmd(r, XR_REG_MR_SEL, XR_REG_MR_CMD, index, XR_CMD_DESTROY);
}

int xr_regio_cq_commit(struct xr_regio *r, uint32_t cqn, const struct xr_cq_ctx *c, uint32_t *status)
{
	uint32_t off[XR_CQ_SHADOW_WORDS], val[XR_CQ_SHADOW_WORDS];
	int n = xr_cq_ctx_encode(c, off, val);

	if (n < 0)
		return n;
	return window_commit(r, XR_REG_CQ_SEL, XR_REG_CQ_CMD, cqn, off, val, n, status);
}

int xr_regio_cq_read(struct xr_regio *r, uint32_t cqn, struct xr_cq_ctx *c)
{
	struct reader rd = { r, window_cmd(r, XR_REG_CQ_SEL, XR_REG_CQ_CMD, cqn, XR_CMD_READ) };

	if (rd.rc)
		return rd.rc;
	xr_cq_ctx_decode(c, reader_get, &rd);
	return rd.rc;
}

int xr_regio_cq_destroy(struct xr_regio *r, uint32_t cqn)
{
	return window_cmd(r, XR_REG_CQ_SEL, XR_REG_CQ_CMD, cqn, XR_CMD_DESTROY);
}

int xr_regio_srq_commit(struct xr_regio *r, uint32_t srqn, const struct xr_srq_ctx *c, uint32_t *status)
{
	uint32_t off[XR_SRQ_SHADOW_WORDS], val[XR_SRQ_SHADOW_WORDS];
	int n = xr_srq_ctx_encode(c, off, val);

	if (n < 0)
		return n;
	return window_commit(r, XR_REG_SRQ_SEL, XR_REG_SRQ_CMD, srqn, off, val, n, status);
}

int xr_regio_srq_read(struct xr_regio *r, uint32_t srqn, struct xr_srq_ctx *c)
{
	struct reader rd = { r, window_cmd(r, XR_REG_SRQ_SEL, XR_REG_SRQ_CMD, srqn, XR_CMD_READ) };

	if (rd.rc)
		return rd.rc;
	xr_srq_ctx_decode(c, reader_get, &rd);
	return rd.rc;
}

int xr_regio_srq_destroy(struct xr_regio *r, uint32_t srqn)
{
	return window_cmd(r, XR_REG_SRQ_SEL, XR_REG_SRQ_CMD, srqn, XR_CMD_DESTROY);
}

int xr_regio_mcg(struct xr_regio *r, uint32_t cmd, const xr_gid *gid, uint32_t qpn, uint32_t *status)
{
	int rc = 0;

	for (int i = 0; !rc && i < 4; i++)
		rc = xr_regio_write(r, XR_REG_MCG_GID_0 + 4u * (unsigned)i, get_be32(gid->raw + 4 * i));
	if (!rc)
		rc = xr_regio_write(r, XR_REG_MCG_QPN, qpn);
	if (!rc)
		rc = xr_regio_write(r, XR_REG_MCG_CMD, cmd);
	*status = 0;
	if (rc > 0)
		xr_regio_read(r, XR_REG_QP_CMD_STATUS, status);
	return rc;
}
