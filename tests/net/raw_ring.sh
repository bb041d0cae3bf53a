#!/usr/bin/env bash
# The raw link's receive buffer over a real veth pair (tests/net/raw_ring.c):
# a namespace of its own with the pair in it (MTU 1500), always removed;
# the run is bounded by timeout.
set -euo pipefail
prog=$1
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
NS=xrring$$
cleanup() {
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add pa type veth peer name pb
ip -n "$NS" link set pa up
ip -n "$NS" link set pb up
timeout 120 ip netns exec "$NS" "$prog" pa pb
