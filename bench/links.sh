#!/usr/bin/env bash
# Runs bench-links across a veth pair between two namespaces made here
# (removed on exit): the UDP link, then the raw link, then the AF_XDP link
# (against bare AF_XDP sockets on the same path); for each, the latency of
# 8-byte WRITEs on fresh links, the first 1,000 round trips against the
# steady ones. Needs root.
set -euo pipefail
bin=${1:-build/bin/bench-links}
[ "$(id -u)" -eq 0 ] || { echo "bench/links.sh needs root (namespaces, AF_PACKET)"; exit 1; }
A=xrbA$$ B=xrbB$$
trap 'ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null' EXIT
ip netns add "$A"; ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip -n "$A" link set va mtu 9000 up; ip -n "$B" link set vb mtu 9000 up
ip -n "$A" addr add 10.0.0.1/24 dev va; ip -n "$B" addr add 10.0.0.2/24 dev vb
sleep 0.3
"$bin" udp "$A" 10.0.0.1 "$B" 10.0.0.2
ip -n "$A" addr flush dev va; ip -n "$B" addr flush dev vb
"$bin" raw "$A" va 10.0.0.1 "$B" vb 10.0.0.2
# The XDP link owns the addresses as the raw link does (none in the kernel).
"$bin" xdp "$A" va 10.0.0.1 "$B" vb 10.0.0.2
