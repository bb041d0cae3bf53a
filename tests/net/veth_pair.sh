#!/usr/bin/env bash
# Runs PROG pa pb with a real veth pair (pa, pb) at MTU in a namespace of
# its own, no kernel addresses on it (not even IPv6 link-local), always
# removed; the run is bounded by timeout. For the raw-link tests (pfc_raw.c, raw_ring.c).
#   veth_pair.sh MTU PROG
set -euo pipefail
mtu=$1 prog=$2
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
NS=xrveth$$
cleanup() {
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link set lo up
# No IPv6 on the pair: the kernel would send its own frames on it when it
# comes up (MLD reports, DAD, router solicitations, for seconds), and a
# test that counts every frame and every drop must see only its own.
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
ip -n "$NS" link add pa type veth peer name pb
ip -n "$NS" link set pa mtu "$mtu" up
ip -n "$NS" link set pb mtu "$mtu" up
timeout 120 ip netns exec "$NS" "$prog" pa pb
