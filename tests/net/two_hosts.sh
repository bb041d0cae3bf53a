# SPDX-License-Identifier: MIT
# Sourced by the namespace tests: two hosts, namespaces $A and $B, each
# with a data veth (va, vb) to a bridge br0 in a third namespace $M, and a
# veth pair ca/cb between them for the out-of-band TCP exchange
# (10.99.0.1, 10.99.0.2). $work is a scratch directory. Everything goes
# on exit, however the test ends.
#   two_hosts_up PREFIX [MTU]   (PREFIX: two letters naming the test's namespaces)
two_hosts_cleanup() {
  for ns in "$A" "$B" "$M"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}

two_hosts_up() {
  local mtu=${2:+mtu $2} d ns
  A=$1A$$ B=$1B$$ M=$1M$$
  work=$(mktemp -d)
  trap two_hosts_cleanup EXIT
  ip netns add "$A" && ip netns add "$B" && ip netns add "$M" || return 1
  ip link add va netns "$A" type veth peer name ma netns "$M" || return 1
  ip link add vb netns "$B" type veth peer name mb netns "$M" || return 1
  ip -n "$M" link add br0 type bridge || return 1
  for d in ma mb; do ip -n "$M" link set dev "$d" master br0 || return 1; done
  for d in ma mb br0; do ip -n "$M" link set dev "$d" $mtu up || return 1; done
  ip link add ca netns "$A" type veth peer name cb netns "$B" || return 1
  for ns in "$A" "$B"; do ip -n "$ns" link set lo up || return 1; done
  ip -n "$A" link set va $mtu up && ip -n "$B" link set vb $mtu up || return 1
  ip -n "$A" addr add 10.99.0.1/24 dev ca && ip -n "$A" link set ca up || return 1
  ip -n "$B" addr add 10.99.0.2/24 dev cb && ip -n "$B" link set cb up
}
