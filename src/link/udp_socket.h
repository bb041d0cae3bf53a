/* SPDX-License-Identifier: MIT */
/* The UDP link's sockets: RoCE v2's options, the namespace, the MTU. */
#ifndef XR_LINK_UDP_SOCKET_H
#define XR_LINK_UDP_SOCKET_H

#include <stdint.h>
#include <sys/socket.h>

/* A socket bound to local (its family) at port with RoCE v2's options:
 * DF, UDP checksum 0, the receive buffer of a NIC. The fd or -errno. */
int udp_socket_open(const struct sockaddr_storage *local, uint16_t port);
/* The calling thread's network namespace (an fd), or -1. */
int udp_netns_here(void);
/* The same, made in the network namespace netns (an fd; -1: the caller's),
 * whichever namespace the calling thread is in. */
int udp_socket_open_in(int netns, const struct sockaddr_storage *local, uint16_t port);
/* The socket's receive buffer is the NIC's: an engine the scheduler holds
 * back for milliseconds must not cost frames (UC and UD cannot get them
 * back). Past rmem_max where we may (CAP_NET_ADMIN), else what it allows. */
void udp_socket_rcvbuf(int fd);
/* The MTU of the interface that holds a, or else of the one whose subnet
 * holds it (127.0.0.2 is bound through lo's 127.0.0.1/8); 1500 when none
 * does. */
uint32_t udp_interface_mtu(const struct sockaddr_storage *a);

#endif
