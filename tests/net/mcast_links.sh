#!/usr/bin/env bash
# UD multicast in the links (tests/net/mcast_links.c): two network
# namespaces joined by a veth pair (va, vb), made here and always removed.
# The kernel holds 10.0.0.1, .3, .4 and fd00::1 on va and 10.0.0.2, fd00::2
# on vb for the UDP links; the raw and XDP links own 10.0.1.1/2 themselves.
#   mcast_links.sh PROG [udp|raw|xdp|all]
set -euo pipefail
prog=$1 only=${2:-all}
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
A=xrmcA$$ B=xrmcB$$
cleanup() {
  for ns in "$A" "$B"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
ip netns add "$A"
ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
for side in "$A:va" "$B:vb"; do
  ns=${side%%:*} dev=${side#*:}
  ip -n "$ns" link set lo up
  ip -n "$ns" link set "$dev" mtu 9000 up
done
ip -n "$A" addr add 10.0.0.1/24 dev va
ip -n "$A" addr add 10.0.0.3/24 dev va
ip -n "$A" addr add 10.0.0.4/24 dev va
ip -n "$A" addr add fd00::1/64 dev va nodad
ip -n "$B" addr add 10.0.0.2/24 dev vb
ip -n "$B" addr add fd00::2/64 dev vb nodad
timeout 120 "$prog" "$A" "$B" "$only"
