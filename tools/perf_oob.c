/* SPDX-License-Identifier: MIT */
/* perftest's and ibv_rc_pingpong's out-of-band exchanges (see perf_oob.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perf_oob.h"

#define OOB_WAIT_MS 120000	/* a peer that stops answering must not hang us */

/* Waits for fd to turn readable, running the idle hook meanwhile. */
static int wait_readable(const struct oob *o)
{
	for (unsigned waited = 0; waited < OOB_WAIT_MS; waited++) {
		struct pollfd p = { o->fd, POLLIN, 0 };
		int r = poll(&p, 1, 1);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		o->idle(o->idle_arg);
	}
	return -1;
}

static int io_full(const struct oob *o, void *buf, size_t n, bool out)
{
	uint8_t *p = buf;

	while (n) {
		if (!out && o->idle && wait_readable(o))
			return -1;
		/* MSG_NOSIGNAL: a peer gone is the error below, not a SIGPIPE. */
		ssize_t k = out ? send(o->fd, p, n, MSG_NOSIGNAL) : read(o->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void bound_waits(int fd)
{
	struct timeval tv = { OOB_WAIT_MS / 1000, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int oob_open(struct oob *o, const char *host, int port, bool client, unsigned timeout_ms)
{
	char ps[16];

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->client = client;
	snprintf(ps, sizeof(ps), "%d", port);
	if (!client) {
		struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
					   .sin6_addr = IN6ADDR_ANY_INIT };
		int ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0, err;
		if (ls < 0)
			return -errno;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
			err = -errno;
			close(ls);
			return err;
		}
		o->fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		err = -errno;
		close(ls);
		if (o->fd >= 0)
			bound_waits(o->fd);
		return o->fd < 0 ? err : 0;
	}
	{
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		struct timespec t0, t;
		int err = getaddrinfo(host, ps, &hints, &ai);
		if (err) {
			fprintf(stderr, " Cannot resolve '%s': %s\n", host, gai_strerror(err));
			return -EHOSTUNREACH;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			o->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (o->fd >= 0 && connect(o->fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			err = -errno;
			if (o->fd >= 0)
				close(o->fd);
			o->fd = -1;
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((unsigned)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000) > timeout_ms)
				break;
			usleep(100000);
		}
		freeaddrinfo(ai);
		if (o->fd >= 0)
			bound_waits(o->fd);
		return o->fd < 0 ? err : 0;
	}
}

int oob_pair(struct oob *server, struct oob *client)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	memset(server, 0, sizeof(*server));
	memset(client, 0, sizeof(*client));
	server->fd = sv[0];
	client->fd = sv[1];
	bound_waits(sv[0]);
	bound_waits(sv[1]);
	client->client = true;
	return 0;
}

void oob_close(struct oob *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}

int oob_xchg(struct oob *o, const void *mine, void *theirs, size_t n)
{
	if (o->client)
		return io_full(o, (void *)mine, n, true) || io_full(o, theirs, n, false) ? -1 : 0;
	return io_full(o, theirs, n, false) || io_full(o, (void *)mine, n, true) ? -1 : 0;
}

int oob_perftest_preamble(struct oob *o, int *mtu)
{
	char mine[16] = PERFTEST_VERSION, theirs[16];
	uint32_t my_cycle = htonl(4096), my_cache = htonl(64), r_cycle, r_cache;

	if (oob_xchg(o, mine, theirs, sizeof(mine))) {
		fprintf(stderr, " Failed to exchange versions with the peer\n");
		return -1;
	}
	theirs[15] = '\0';
	o->remote_version = strtod(theirs, NULL);
	/* Written so that NaN fails too: "nan" is a number to strtod. */
	if (!(o->remote_version >= 5.70 && o->remote_version < 1e6)) {
		fprintf(stderr, " The peer's version '%s' is not 5.70 or later: not compatible\n", theirs);
		return -1;
	}
	/* System data: cycle buffer and cache line size, network order. */
	if (oob_xchg(o, &my_cycle, &r_cycle, 4) || oob_xchg(o, &my_cache, &r_cache, 4)) {
		fprintf(stderr, " Failed to exchange system data\n");
		return -1;
	}
	/* MTU: the enum as a decimal string, 2 bytes (peers >= 5.31). */
	{
		char m[4] = { 0 }, r[5] = { 0 };   /* r: 4 bytes and a terminator */
		size_t n = o->remote_version >= 5.31 ? 2 : 4;
		int rm;
		snprintf(m, sizeof(m), "%d", *mtu);
		if (oob_xchg(o, m, r, n)) {
			fprintf(stderr, " Failed to exchange the MTU\n");
			return -1;
		}
		rm = atoi(r);
		if (rm >= 1 && rm <= 5 && rm < *mtu)
			*mtu = rm;
	}
	return 0;
}

static void format_key(char *buf, const struct perf_dest *d)
{
	int n = snprintf(buf, KEY_MSG_SIZE_GID, "%04x:%04x:%06x:%06x:%08x:%016llx:", d->lid & 0xFFFF,
			 d->out_reads & 0xFFFF, d->qpn & 0xFFFFFF, d->psn & 0xFFFFFF, d->rkey,
			 (unsigned long long)d->vaddr);
	for (int i = 0; i < 16; i++)
		n += snprintf(buf + n, (size_t)(KEY_MSG_SIZE_GID - n), "%02x:", d->gid.raw[i]);
	snprintf(buf + n, (size_t)(KEY_MSG_SIZE_GID - n), "%08x:", d->srqn);
}

static int parse_key(const char *buf, struct perf_dest *d)
{
	unsigned lid, out, qpn, psn, rkey, srqn, g[16];
	unsigned long long va;
	int n = 0;

	if (sscanf(buf, "%x:%x:%x:%x:%x:%llx:%n", &lid, &out, &qpn, &psn, &rkey, &va, &n) != 6 || !n)
		return -1;
	buf += n;
	for (int i = 0; i < 16; i++) {
		n = 0;   /* %n is not stored when the ':' is missing */
		if (sscanf(buf, "%x:%n", &g[i], &n) != 1 || !n || g[i] > 0xFF)
			return -1;
		d->gid.raw[i] = (uint8_t)g[i];
		buf += n;
	}
	if (sscanf(buf, "%x", &srqn) != 1)
		srqn = 0;
	d->lid = lid;
	d->out_reads = out;
	d->qpn = qpn;
	d->psn = psn;
	d->rkey = rkey;
	d->vaddr = va;
	d->srqn = srqn;
	return 0;
}

static int key_read(struct oob *o, struct perf_dest *theirs)
{
	char t[KEY_MSG_SIZE_GID] = { 0 };

	if (io_full(o, t, sizeof(t), false)) {
		fprintf(stderr, " Failed to exchange data between server and client\n");
		return -1;
	}
	t[sizeof(t) - 1] = '\0';
	if (parse_key(t, theirs)) {
		fprintf(stderr, " The peer's key message is malformed: '%.107s'\n", t);
		return -1;
	}
	return 0;
}

int oob_handshake_send(struct oob *o, const struct perf_dest *mine)
{
	char m[KEY_MSG_SIZE_GID] = { 0 };

	format_key(m, mine);
	if (io_full(o, m, sizeof(m), true)) {
		fprintf(stderr, " Failed to exchange data between server and client\n");
		return -1;
	}
	return 0;
}

int oob_handshake_recv(struct oob *o, struct perf_dest *theirs)
{
	return key_read(o, theirs);
}

/* The client writes first, the server reads first (oob_xchg's order). */
int oob_handshake(struct oob *o, const struct perf_dest *mine, struct perf_dest *theirs)
{
	if (o->client)
		return oob_handshake_send(o, mine) || key_read(o, theirs) ? -1 : 0;
	return key_read(o, theirs) || oob_handshake_send(o, mine) ? -1 : 0;
}

/* Doubles travel byte-swapped into network order, as perftest's hton_double. */
static uint64_t swap_double(double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return __builtin_bswap64(u);
}

static double unswap_double(uint64_t u)
{
	double v;
	u = __builtin_bswap64(u);
	memcpy(&v, &u, 8);
	return v;
}

int oob_bw_reports(struct oob *o, const struct bw_report *mine, struct bw_report *theirs)
{
	uint64_t m[5] = { __builtin_bswap64(mine->size), __builtin_bswap64(mine->iters), swap_double(mine->bw_peak),
			  swap_double(mine->bw_avg), swap_double(mine->msg_rate) }, t[5];

	for (int i = 0; i < 5; i++)
		if (oob_xchg(o, &m[i], &t[i], 8)) {
			fprintf(stderr, " Failed to exchange the results with the peer\n");
			return -1;
		}
	theirs->size = __builtin_bswap64(t[0]);
	theirs->iters = __builtin_bswap64(t[1]);
	theirs->bw_peak = unswap_double(t[2]);
	theirs->bw_avg = unswap_double(t[3]);
	theirs->msg_rate = unswap_double(t[4]);
	/* Not numbers (NaN, infinities, below zero) would reach the report
	 * and its JSON. */
	if (!(theirs->bw_peak >= 0 && theirs->bw_avg >= 0 && theirs->msg_rate >= 0 && theirs->bw_peak < 1e300 &&
	      theirs->bw_avg < 1e300 && theirs->msg_rate < 1e300)) {
		fprintf(stderr, " The peer's results are not numbers\n");
		return -1;
	}
	return 0;
}

int oob_pingpong_write(struct oob *o, const struct perf_dest *d)
{
	char msg[PINGPONG_MSG_SIZE];
	int n = snprintf(msg, sizeof(msg), "%04x:%06x:%06x:", d->lid & 0xFFFF, d->qpn & 0xFFFFFF, d->psn & 0xFFFFFF);

	/* The GID as four big-endian 32-bit words in hex: the raw bytes in order. */
	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "%02x", d->gid.raw[i]);
	return io_full(o, msg, sizeof(msg), true);
}

int oob_pingpong_read(struct oob *o, struct perf_dest *d)
{
	char msg[PINGPONG_MSG_SIZE], gid[33];
	unsigned lid, qpn, psn;

	if (io_full(o, msg, sizeof(msg), false))
		return -1;
	msg[sizeof(msg) - 1] = '\0';
	if (sscanf(msg, "%x:%x:%x:%32s", &lid, &qpn, &psn, gid) != 4 || strlen(gid) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		unsigned b;
		if (sscanf(gid + 2 * i, "%2x", &b) != 1)
			return -1;
		d->gid.raw[i] = (uint8_t)b;
	}
	d->lid = lid;
	d->qpn = qpn;
	d->psn = psn;
	return 0;
}

int oob_send_raw(struct oob *o, const void *buf, size_t n)
{
	return io_full(o, (void *)buf, n, true);
}

int oob_recv_raw(struct oob *o, void *buf, size_t n)
{
	return io_full(o, buf, n, false);
}
