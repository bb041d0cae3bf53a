/* SPDX-License-Identifier: MIT */
/* The UDP link's sockets: RoCE v2's options, the namespace, the MTU. */
#ifndef XR_LINK_UDP_SOCKET_H
#define XR_LINK_UDP_SOCKET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xroce/wire.h"

/* A socket bound to local (its family) at port with RoCE v2's options:
 * DF, UDP checksum 0, the receive buffer of a NIC; multicast leaves
 * through interface ifindex (that of local; 0: unknown). The fd or -errno. */
int udp_socket_open(const struct sockaddr_storage *local, uint16_t port, int ifindex);
/* The calling thread's network namespace (an fd), or -1. */
int udp_netns_here(void);
/* fn(arg) run in the network namespace netns (-1: the caller's), whichever
 * namespace the calling thread is in; its result, or -EAGAIN. */
int udp_in_netns(int netns, int (*fn)(void *), void *arg);
/* udp_socket_open in the network namespace netns. */
int udp_socket_open_in(int netns, const struct sockaddr_storage *local, uint16_t port, int ifindex);
/* A raw IPPROTO_UDP socket bound to bind_to (IPv4), filtered to UDP port
 * 4791: datagrams with their real IPv4 header (raw_ip_id). fd or -errno. */
int udp_raw_open(const struct sockaddr_storage *bind_to);
/* A joined multicast group's socket, in netns: bound to group:4791 (shared
 * with other sockets of the host that join it), member on interface
 * ifindex (that of local); raw: a raw socket as udp_raw_open's, bound to
 * the group. fd or -errno. */
int udp_group_open(int netns, const struct sockaddr_storage *local, int ifindex, bool raw, const xr_gid *group);
/* The socket's receive buffer is the NIC's: an engine the scheduler holds
 * back for milliseconds must not cost frames (UC and UD cannot get them
 * back). Past rmem_max where we may (CAP_NET_ADMIN), else what it allows. */
void udp_socket_rcvbuf(int fd);
/* The MTU of the interface that holds a, or else of the one whose subnet
 * holds it (127.0.0.2 is bound through lo's 127.0.0.1/8); 1500 when none
 * does. */
uint32_t udp_interface_mtu(const struct sockaddr_storage *a);
/* The index of that interface, or 0. */
int udp_interface_index(const struct sockaddr_storage *a);

#endif
