/* SPDX-License-Identifier: MIT */
/*
 * RoCE datagrams from a plain UDP socket, for the UDP link's tests: a
 * socket bound on a loopback address, and an RC SEND_ONLY built as the
 * link rebuilds it (IPv4 header, UDP, BTH, payload, ICRC), of which the
 * UDP payload is sent. Include after cmocka.h.
 */
#ifndef XR_TEST_UDP_DATAGRAM_H
#define XR_TEST_UDP_DATAGRAM_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/hdr.h"
#include "xroce/wire.h"

/* A UDP socket bound on src; its port in *sport. */
static inline int udp_sender(const char *src, uint16_t *sport)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, src, &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*sport = ntohs(a.sin_port);
	return fd;
}

/* The IPv4 packet of an RC SEND_ONLY (QPN 0x11, PSN psn, payload bytes
 * fill, fill + 1, ...) from src:sport to dst:4791 with IPv4 ID id, its
 * ICRC last: ip holds udp_packet_len(payload) bytes. */
static inline size_t udp_packet_len(size_t payload)
{
	return XR_IPV4_HLEN + XR_UDP_HLEN + XR_BTH_LEN + payload + XR_ICRC_LEN;
}

static inline void udp_make_send_only(uint8_t *ip, size_t payload, const char *src, const char *dst,
				      uint16_t sport, uint16_t id, uint32_t psn, uint8_t fill)
{
	size_t len = udp_packet_len(payload);
	uint8_t *udp = ip + XR_IPV4_HLEN, *bth = udp + XR_UDP_HLEN;

	memset(ip, 0, len);
	ip[IP4_OFF_VER_IHL] = 0x45;
	put_be16(ip + IP4_OFF_TOTLEN, (uint16_t)len);
	put_be16(ip + IP4_OFF_ID, id);
	put_be16(ip + IP4_OFF_FRAG, IP4_FLAG_DF);
	ip[IP4_OFF_TTL] = 64;
	ip[IP4_OFF_PROTO] = IP_PROTO_UDP;
	inet_pton(AF_INET, src, ip + IP4_OFF_SRC);
	inet_pton(AF_INET, dst, ip + IP4_OFF_DST);
	put_be16(ip + IP4_OFF_CSUM, xr_ipv4_csum(ip));
	put_be16(udp + UDP_OFF_SPORT, sport);
	put_be16(udp + UDP_OFF_DPORT, XR_ROCE_UDP_PORT);
	put_be16(udp + UDP_OFF_LEN, (uint16_t)(len - XR_IPV4_HLEN));
	bth[BTH_OFF_OPCODE] = 0x04;   /* RC SEND_ONLY */
	put_be16(bth + BTH_OFF_PKEY, 0xFFFF);
	bth[BTH_OFF_DQPN + 2] = 0x11;
	put_be24(bth + BTH_OFF_PSN, psn & 0xFFFFFF);
	for (size_t i = 0; i < payload; i++)
		bth[XR_BTH_LEN + i] = (uint8_t)(fill + i);
	put_le32(ip + len - XR_ICRC_LEN, xr_icrc(ip, len - XR_ICRC_LEN));
}

/* Sends the UDP payload (BTH .. ICRC) of ip, len bytes in all, to dst:4791. */
static inline void udp_send_payload(int fd, const uint8_t *ip, size_t len, const char *dst)
{
	struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons(XR_ROCE_UDP_PORT) };
	size_t off = XR_IPV4_HLEN + XR_UDP_HLEN;

	inet_pton(AF_INET, dst, &d.sin_addr);
	assert_int_equal(sendto(fd, ip + off, len - off, 0, (struct sockaddr *)&d, sizeof(d)), (ssize_t)(len - off));
}

#endif
