/* SPDX-License-Identifier: MIT */
/* A host link peer made by hand, for the tests that play a buggy or
 * hostile local process (cmocka: include after cmocka.h). */
#ifndef XR_TEST_HOST_ROGUE_H
#define XR_TEST_HOST_ROGUE_H

#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "link/host.h"

/* A peer made by hand: the test speaks the handshake itself, then writes
 * its own memfd as a buggy or hostile process could. */
struct rogue {
	int sock, efd, dev_efd, dev_mfd;
	struct host_out *mine;           /* what the device reads from us */
	const struct host_out *dev;      /* what it writes, mapped read only */
	struct xr_frame *to_dev, *from_dev;
};

/* The handshake with the device at dev as me, handing over efd as our
 * eventfd (-1: a fresh one): the device's reply status (0: accepted), or
 * -1000 when no reply came. */
static inline int rogue_connect_with(struct rogue *r, const char *dev, const char *me, int efd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct host_hello m = { HOST_MAGIC, HOST_VERSION, 0, HOST_SLOTS, 0, { 0 } }, reply;
	union { char buf[CMSG_SPACE(2 * sizeof(int))]; struct cmsghdr align; } ctl;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = CMSG_SPACE(2 * sizeof(int)) };
	struct cmsghdr *c;
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "xroce-host/%s", dev);
	int mfd = memfd_create("rogue", MFD_ALLOW_SEALING), fds[2];
	size_t size = host_out_size();
	xr_gid g;
	uint8_t *map;

	memset(r, 0, sizeof(*r));
	r->dev_efd = r->dev_mfd = -1;
	assert_int_equal(ftruncate(mfd, (off_t)size), 0);
	assert_int_equal(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(map != MAP_FAILED);
	r->mine = (struct host_out *)map;
	r->mine->magic = HOST_MAGIC;
	r->mine->version = HOST_VERSION;
	r->mine->slots = HOST_SLOTS;
	r->mine->slot_size = sizeof(struct xr_frame);
	r->mine->size = size;
	r->to_dev = (struct xr_frame *)(map + HOST_SLOTS_OFF);
	assert_int_equal(xr_gid_parse(&g, me), 0);
	memcpy(m.addr, g.raw, 16);
	r->efd = efd >= 0 ? efd : eventfd(0, EFD_NONBLOCK);
	r->sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(connect(r->sock, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)), 0);
	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	fds[0] = mfd;
	fds[1] = r->efd;
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	assert_int_equal(sendmsg(r->sock, &msg, 0), (ssize_t)sizeof(m));
	iov.iov_base = &reply;
	msg.msg_controllen = sizeof(ctl.buf);
	if (recvmsg(r->sock, &msg, 0) != (ssize_t)sizeof(reply) || reply.reply != 1) {
		close(mfd);
		return -1000;
	}
	if (reply.status) {
		close(mfd);
		return reply.status;
	}
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(fds));
	r->dev_mfd = fds[0];
	r->dev_efd = fds[1];
	/* The device's memfd is sealed: we can read it, never write it. */
	assert_true(mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->dev_mfd, 0) == MAP_FAILED);
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, r->dev_mfd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_not_equal(mprotect(map, size, PROT_READ | PROT_WRITE), 0);
	r->dev = (const struct host_out *)map;
	r->from_dev = (struct xr_frame *)(map + HOST_SLOTS_OFF);
	close(mfd);
	return 0;
}

static inline void rogue_connect(struct rogue *r, const char *dev, const char *me)
{
	assert_int_equal(rogue_connect_with(r, dev, me, -1), 0);
}

#endif
