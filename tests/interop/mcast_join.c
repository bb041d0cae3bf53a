/* SPDX-License-Identifier: MIT */
/*
 * mcast_join GROUP ADDR SECONDS: holds an IPv4 group joined on the
 * interface that has ADDR, then exits. For the interop VM: rxe 6.1
 * attaches a QP to a group at L2 only, and the kernel drops a group's
 * datagrams before rxe sees them unless some socket of the host joined
 * it (docs/ud-uc-srq.md).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct ip_mreq m;
	int fd, secs;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &m.imr_multiaddr) != 1 ||
	    inet_pton(AF_INET, argv[2], &m.imr_interface) != 1 || (secs = atoi(argv[3])) <= 0) {
		fprintf(stderr, "usage: mcast_join GROUP ADDR SECONDS\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m))) {
		perror("mcast_join");
		return 1;
	}
	sleep((unsigned)secs);
	close(fd);
	return 0;
}
