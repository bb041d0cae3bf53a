/* SPDX-License-Identifier: MIT */
/*
 * A network impairment element for kernels without tc netem: forwards every
 * frame between two interfaces (both directions, a wire in a namespace of
 * its own) and applies to RoCE v2 frames (UDP port 4791) what netem would:
 * random loss, a delay with jitter (frames with different delays overtake
 * each other) and netem-style reordering (a share of frames skip the
 * delay). Other frames (ARP, ND, ...) pass at once. The endpoints see a
 * faulty network, not a wrapper in their own process.
 *
 *   impair IF_A IF_B [--loss PCT] [--delay US] [--jitter US] [--reorder PCT]
 *                    [--seed N] [--seconds N]
 * Runs until SIGTERM/SIGINT or --seconds (default 600), then prints
 * "impair: forwarded N dropped N reordered N".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME 9216
#define QUEUE 4096

struct held {
	uint64_t due_ns;
	uint64_t seq;        /* arrival order, to count overtaking */
	int out;             /* socket to send on */
	int dir;             /* 0: IF_A to IF_B, 1: back */
	uint16_t len;
	uint8_t data[MAX_FRAME];
};

static volatile sig_atomic_t stop;
static struct held *queue[QUEUE];
static unsigned nqueue;
static uint64_t rng;
static uint64_t forwarded, dropped, reordered, overflow, last_seq_sent[2];

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double uniform(void)   /* xorshift64*, in [0, 1) */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (double)((rng * 2685821657736338717ull) >> 11) / (double)(1ull << 53);
}

static int open_if(const char *name)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct packet_mreq mr = { .mr_type = PACKET_MR_PROMISC };
	int one = 1, fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	sll.sll_ifindex = (int)if_nametoindex(name);
	mr.mr_ifindex = sll.sll_ifindex;
	if (fd < 0 || !sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one))) {
		fprintf(stderr, "impair: %s: %s\n", name, strerror(errno));
		exit(1);
	}
	return fd;
}

/* RoCE v2: IPv4 or IPv6, UDP, destination port 4791 (after any VLAN tag). */
static bool is_roce(const uint8_t *d, size_t len)
{
	size_t off = 12;
	uint16_t type;

	if (len < 14)
		return false;
	type = (uint16_t)(d[12] << 8 | d[13]);
	if (type == 0x8100 && len >= 18) {
		off = 16;
		type = (uint16_t)(d[16] << 8 | d[17]);
	}
	off += 2;
	if (type == 0x0800 && len >= off + 28 && d[off + 9] == 17)
		return (d[off + (d[off] & 0xF) * 4 + 2] << 8 | d[off + (d[off] & 0xF) * 4 + 3]) == 4791;
	if (type == 0x86DD && len >= off + 48 && d[off + 6] == 17)
		return (d[off + 42] << 8 | d[off + 43]) == 4791;
	return false;
}

static void send_frame(struct held *h)
{
	if (send(h->out, h->data, h->len, 0) == (ssize_t)h->len)
		forwarded++;
	else
		dropped++;   /* the far side is full: a real wire drops too */
	if (h->seq < last_seq_sent[h->dir])
		reordered++;   /* it left after a frame that came in behind it */
	else
		last_seq_sent[h->dir] = h->seq;
}

/* Reads one frame from in; forwards it now, later, or never. */
static void take(int in, int out, int dir, double loss, uint64_t delay_ns, uint64_t jitter_ns, double reorder)
{
	static uint64_t seq;
	struct held *h = malloc(sizeof(*h));
	char ctl[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
	struct iovec iov;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	ssize_t n;

	if (!h)
		return;
	iov.iov_base = h->data;
	iov.iov_len = sizeof(h->data) - 4;
	n = recvmsg(in, &m, MSG_DONTWAIT);
	if (n <= 0) {
		free(h);
		return;
	}
	h->len = (uint16_t)n;
	/* The kernel took the VLAN tag out of the frame: put it back. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		struct tpacket_auxdata aux;
		if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA)
			continue;
		memcpy(&aux, CMSG_DATA(c), sizeof(aux));
		if ((aux.tp_status & TP_STATUS_VLAN_VALID) && n >= 12) {
			memmove(h->data + 16, h->data + 12, (size_t)n - 12);
			h->data[12] = 0x81;
			h->data[13] = 0x00;
			h->data[14] = (uint8_t)(aux.tp_vlan_tci >> 8);
			h->data[15] = (uint8_t)aux.tp_vlan_tci;
			h->len += 4;
		}
	}
	h->out = out;
	h->dir = dir;
	h->seq = ++seq;
	if (!is_roce(h->data, h->len)) {
		send_frame(h);
		free(h);
		return;
	}
	if (uniform() < loss) {
		dropped++;
		free(h);
		return;
	}
	h->due_ns = now_ns();
	if (uniform() >= reorder)   /* netem: the reordered share goes at once */
		h->due_ns += delay_ns + (uint64_t)(uniform() * (double)jitter_ns);
	if (nqueue == QUEUE) {
		overflow++;
		dropped++;
		free(h);
		return;
	}
	queue[nqueue++] = h;
}

/* Sends every held frame that is due, earliest first. */
static uint64_t release(void)
{
	uint64_t now = now_ns(), next = UINT64_MAX;

	for (;;) {
		unsigned best = QUEUE;
		for (unsigned i = 0; i < nqueue; i++)
			if (queue[i]->due_ns <= now && (best == QUEUE || queue[i]->due_ns < queue[best]->due_ns))
				best = i;
		if (best == QUEUE)
			break;
		send_frame(queue[best]);
		free(queue[best]);
		queue[best] = queue[--nqueue];
	}
	for (unsigned i = 0; i < nqueue; i++)
		if (queue[i]->due_ns < next)
			next = queue[i]->due_ns;
	return next;
}

static double pct(const char *opt, const char *v)
{
	char *end;
	double x = strtod(v, &end);
	if (*end || x < 0 || x > 100) {
		fprintf(stderr, "impair: %s wants a percentage 0..100\n", opt);
		exit(2);
	}
	return x / 100;
}

static uint64_t count(const char *opt, const char *v)
{
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	if (*end || !*v || x > 10000000ull) {
		fprintf(stderr, "impair: %s wants a number 0..10000000\n", opt);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	double loss = 0, reorder = 0;
	uint64_t delay_us = 0, jitter_us = 0, seconds = 600, end;
	int a, b;

	if (argc < 3) {
		fprintf(stderr, "usage: impair IF_A IF_B [--loss PCT] [--delay US] [--jitter US] [--reorder PCT] "
				"[--seed N] [--seconds N]\n");
		return 2;
	}
	rng = 0x9E3779B97F4A7C15ull;
	for (int i = 3; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "impair: %s wants a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--loss")) loss = pct(argv[i], argv[i + 1]);
		else if (!strcmp(argv[i], "--reorder")) reorder = pct(argv[i], argv[i + 1]);
		else if (!strcmp(argv[i], "--delay")) delay_us = count(argv[i], argv[i + 1]);
		else if (!strcmp(argv[i], "--jitter")) jitter_us = count(argv[i], argv[i + 1]);
		else if (!strcmp(argv[i], "--seed")) rng = count(argv[i], argv[i + 1]) * 0x9E3779B97F4A7C15ull | 1;
		else if (!strcmp(argv[i], "--seconds")) seconds = count(argv[i], argv[i + 1]);
		else {
			fprintf(stderr, "impair: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	a = open_if(argv[1]);
	b = open_if(argv[2]);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	end = now_ns() + seconds * 1000000000ull;
	while (!stop && now_ns() < end) {
		struct pollfd p[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
		uint64_t next = release(), now = now_ns();
		struct timespec t = { 0, 10000000 };   /* at most 10 ms between checks of stop/end */
		if (next != UINT64_MAX) {
			uint64_t wait = next > now ? next - now : 0;
			if (wait < 10000000ull)
				t.tv_nsec = (long)wait;
		}
		if (ppoll(p, 2, &t, NULL) > 0) {
			if (p[0].revents & POLLIN)
				take(a, b, 0, loss, delay_us * 1000, jitter_us * 1000, reorder);
			if (p[1].revents & POLLIN)
				take(b, a, 1, loss, delay_us * 1000, jitter_us * 1000, reorder);
		}
	}
	while (nqueue)
		free(queue[--nqueue]);
	printf("impair: forwarded %llu dropped %llu reordered %llu (queue overflow %llu)\n",
	       (unsigned long long)forwarded, (unsigned long long)dropped, (unsigned long long)reordered,
	       (unsigned long long)overflow);
	return 0;
}
