#!/usr/bin/env bash
# Two processes, each in its own network namespace, joined by a veth pair
# this script creates (and always removes): every RC operation with data
# verification over the UDP link and the raw Ethernet link, IPv4 and IPv6,
# path MTU 1024 and 4096 (veth MTU 9000), a VLAN-tagged raw run, ARP and
# neighbour discovery by the raw link, a mixed pair (UDP one side, raw the
# other), and tc netem loss, delay and reordering on the veth.
# A second veth pair carries the out-of-band TCP exchange.
set -euo pipefail
peer=$1
perf=${2:-}
check=${3:-}
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
command -v tc >/dev/null || { echo "FAIL: tc missing (iproute2)"; exit 1; }

A=xrA$$ B=xrB$$
work=$(mktemp -d)
cleanup() {
  ip netns pids "$A" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns pids "$B" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$A"
ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip link add ca netns "$A" type veth peer name cb netns "$B"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set va mtu 9000 up
ip -n "$B" link set vb mtu 9000 up
ip -n "$A" addr add 10.99.0.1/24 dev ca && ip -n "$A" link set ca up
ip -n "$B" addr add 10.99.0.2/24 dev cb && ip -n "$B" link set cb up

kernel_ips() {   # on|off: the kernel owns the data addresses (UDP link) or not (raw link)
  local side=$1 ns dev n
  for side_ns in "$A:va:1" "$B:vb:2"; do
    IFS=: read -r ns dev n <<<"$side_ns"
    ip -n "$ns" addr flush dev "$dev"
  done
  [ "$side" = on ] || return 0
  ip -n "$A" addr add 10.0.0.1/24 dev va
  ip -n "$B" addr add 10.0.0.2/24 dev vb
  ip -n "$A" addr add fd00::1/64 dev va nodad
  ip -n "$B" addr add fd00::2/64 dev vb nodad
}

# Network faults on both veth ends. tc netem when the kernel has it; this
# project's CI kernel is built without CONFIG_NET_SCH_NETEM, so the fallback
# is still a real kernel fault, not our wrapper: random loss by an nftables
# netdev egress rule (before the qdisc, so it hits AF_PACKET senders too)
# and queueing delay by a tbf rate limit. Reordering then comes only from
# the fault-injection suite (test_rc_faults); the log says which was used.
FAULT_KIND=
add_faults() {   # loss percent
  local loss=$1 ns dev
  for nd in "$A:va" "$B:vb"; do
    IFS=: read -r ns dev <<<"$nd"
    if ip netns exec "$ns" tc qdisc add dev "$dev" root netem loss "$loss%" delay 1ms 500us reorder 10% 50% 2>/dev/null; then
      FAULT_KIND="netem loss $loss%, delay 1ms+-0.5ms, reorder 10%"
    else
      command -v nft >/dev/null || { echo "FAIL: no netem in this kernel and no nft (scripts/deps.sh)"; exit 1; }
      ip netns exec "$ns" nft add table netdev xrfault
      ip netns exec "$ns" nft add chain netdev xrfault out "{ type filter hook egress device $dev priority 0; }"
      ip netns exec "$ns" nft add rule netdev xrfault out numgen random mod 1000 '<' $((loss * 10)) counter drop
      ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate 400mbit burst 256kb latency 20ms
      FAULT_KIND="nftables egress loss $loss% + tbf queueing delay (no netem in this kernel)"
    fi
  done
}
del_faults() {
  local ns dev
  for nd in "$A:va" "$B:vb"; do
    IFS=: read -r ns dev <<<"$nd"
    ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
    ip netns exec "$ns" nft delete table netdev xrfault 2>/dev/null || true
  done
}
dropped() {   # frames the fault rules dropped, both ends
  local total=0 n
  for nd in "$A" "$B"; do
    n=$(ip netns exec "$nd" nft list table netdev xrfault 2>/dev/null | sed -nE 's/.*packets ([0-9]+).*/\1/p' | head -1)
    total=$((total + ${n:-0}))
  done
  echo "$total"
}

fails=0 cases=0 port=20000
run_case() {   # name, server args..., --, client args...
  local name=$1; shift
  local sargs=() cargs=()
  while [ "$1" != -- ]; do sargs+=("$1"); shift; done; shift
  cargs=("$@")
  port=$((port + 1)); cases=$((cases + 1))
  timeout 180 ip netns exec "$A" "$peer" --server --tcp "$port" "${sargs[@]}" >"$work/s.log" 2>&1 &
  local spid=$!
  if timeout 180 ip netns exec "$B" "$peer" --client 10.99.0.1 --tcp "$port" "${cargs[@]}" >"$work/c.log" 2>&1 &&
     wait "$spid"; then
    echo "ok   $name: $(grep -h 'checks passed' "$work/c.log") | $(tail -n1 "$work/c.log" | sed 's/^rc_peer: //')"
  else
    wait "$spid" 2>/dev/null || true
    echo "FAIL $name"; sed 's/^/     client: /' "$work/c.log"; sed 's/^/     server: /' "$work/s.log"
    fails=$((fails + 1))
  fi
}

# ---- UDP link: the kernel owns the addresses ----
kernel_ips on
sleep 0.5
run_case "udp ipv4 mtu 1024" --link udp --addr 10.0.0.1 --mtu 1024 -- --link udp --addr 10.0.0.2 --mtu 1024
run_case "udp ipv4 mtu 4096" --link udp --addr 10.0.0.1 --mtu 4096 -- --link udp --addr 10.0.0.2 --mtu 4096
run_case "udp ipv6 mtu 1024" --link udp --addr fd00::1 --mtu 1024 -- --link udp --addr fd00::2 --mtu 1024
run_case "udp ipv6 mtu 4096" --link udp --addr fd00::1 --mtu 4096 -- --link udp --addr fd00::2 --mtu 4096

# ---- a real network's faults on both ends ----
add_faults 3
echo "     faults: $FAULT_KIND"
run_case "udp ipv4 mtu 4096 under loss 3%" --link udp --addr 10.0.0.1 --mtu 4096 \
  -- --link udp --addr 10.0.0.2 --mtu 4096 --iters 2
run_case "udp ipv6 mtu 1024 under loss 3%" --link udp --addr fd00::1 --mtu 1024 \
  -- --link udp --addr fd00::2 --mtu 1024
echo "     frames dropped by the network: $(dropped)"
del_faults

# ---- raw link: the links own the addresses, ARP / ND resolve them ----
kernel_ips off
run_case "raw ipv4 mtu 4096 (ARP)" --link raw --ifname va --addr 10.0.0.1 --mtu 4096 \
  -- --link raw --ifname vb --addr 10.0.0.2 --mtu 4096
run_case "raw ipv4 mtu 1024" --link raw --ifname va --addr 10.0.0.1 --mtu 1024 \
  -- --link raw --ifname vb --addr 10.0.0.2 --mtu 1024
run_case "raw ipv6 mtu 4096 (neighbour discovery)" --link raw --ifname va --addr fd00::1 --mtu 4096 \
  -- --link raw --ifname vb --addr fd00::2 --mtu 4096
run_case "raw ipv6 mtu 1024" --link raw --ifname va --addr fd00::1 --mtu 1024 \
  -- --link raw --ifname vb --addr fd00::2 --mtu 1024
run_case "raw ipv4 vlan 100 pcp 3" --link raw --ifname va --addr 10.0.0.1 --vlan 100 --pcp 3 --mtu 1024 \
  -- --link raw --ifname vb --addr 10.0.0.2 --vlan 100 --pcp 3 --mtu 1024
# The same link without the kernel's receive ring (its recvmmsg path).
XROCE_RAW_NO_RING=1 run_case "raw ipv4 vlan 100, no receive ring" --link raw --ifname va --addr 10.0.0.1 --vlan 100 \
  --mtu 4096 -- --link raw --ifname vb --addr 10.0.0.2 --vlan 100 --mtu 4096
add_faults 3
run_case "raw ipv4 mtu 4096 under loss 3%" --link raw --ifname va --addr 10.0.0.1 --mtu 4096 \
  -- --link raw --ifname vb --addr 10.0.0.2 --mtu 4096
echo "     frames dropped by the network: $(dropped)"
del_faults

# ---- mixed: A's kernel UDP socket against B's raw link (B answers A's ARP) ----
ip -n "$A" addr add 10.0.0.1/24 dev va
sleep 0.3
run_case "mixed: udp (A) <-> raw (B)" --link udp --addr 10.0.0.1 --mtu 4096 \
  -- --link raw --ifname vb --addr 10.0.0.2 --mtu 4096
vb_mac=$(ip -n "$B" -o link show vb | sed -E 's/.*link\/ether ([0-9a-f:]+).*/\1/')
if ip -n "$A" neigh show 10.0.0.2 dev va | grep -q "lladdr $vb_mac"; then
  echo "ok   A's kernel resolved 10.0.0.2 to $vb_mac through B's raw link (ARP reply)"
else
  echo "FAIL A's kernel has no ARP entry for 10.0.0.2 -> $vb_mac: $(ip -n "$A" neigh show)"; fails=$((fails + 1))
fi

# ---- xroce-link-check and xroce-perf across the namespaces ----
check_tools() {   # kind, A args, B args
  local kind=$1 aargs=$2 bargs=$3 out
  port=$((port + 1)); cases=$((cases + 1))
  timeout 60 ip netns exec "$A" "$perf" write_bw --link $kind $aargs -p "$port" -n 200 >"$work/ps.log" 2>&1 &
  sleep 0.5
  if out=$(timeout 60 ip netns exec "$B" "$check" --link $kind $bargs --peer 10.99.0.1 -p "$port" 2>&1); then
    echo "ok   xroce-link-check over $kind against an xroce-perf server"
  else
    echo "FAIL xroce-link-check over $kind:"; sed 's/^/     /' <<<"$out"; fails=$((fails + 1))
  fi
  wait 2>/dev/null || true
  # Every xroce-perf test, verified end to end: the client checks what it
  # reads, reads back what it wrote, or what was echoed; a receiving server
  # checks what arrived. Both must report no error.
  for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat pingpong; do
    port=$((port + 1)); cases=$((cases + 1))
    timeout 60 ip netns exec "$A" "$perf" $t --link $kind $aargs -p "$port" -n 200 -m 4096 --verify >"$work/ps.log" 2>&1 &
    local srv=$!
    sleep 0.5
    if out=$(timeout 60 ip netns exec "$B" "$perf" $t --link $kind $bargs -p "$port" -n 200 -m 4096 --verify 10.99.0.1 2>&1) \
       && wait $srv && ! grep -q "FAILED" "$work/ps.log" && checked=$(cat "$work/ps.log" - <<<"$out" |
       grep -m1 -oE '[1-9][0-9]* messages checked, 0 errors'); then
      echo "ok   xroce-perf $t --verify over $kind: $checked"
    else
      echo "FAIL xroce-perf $t --verify over $kind:"; tail -5 <<<"$out" | sed 's/^/     /'
      tail -3 "$work/ps.log" | sed 's/^/     server: /'; fails=$((fails + 1))
    fi
    wait 2>/dev/null || true
  done
}
if [ -n "${perf:-}" ]; then
  check_tools raw "--ifname va --bind 10.0.0.1" "--ifname vb --bind 10.0.0.2"
  ip -n "$B" addr add 10.0.0.2/24 dev vb
  sleep 0.3
  check_tools udp "--bind 10.0.0.1" "--bind 10.0.0.2"
  # No server: the check fails, and says where.
  cases=$((cases + 1))
  if out=$(timeout 30 ip netns exec "$B" "$check" --link udp --bind 10.0.0.2 --peer 10.99.0.1 -p 1 2>&1); then
    echo "FAIL xroce-link-check passed with no peer"; fails=$((fails + 1))
  elif grep -q "FAIL\] peer reachable" <<<"$out"; then
    echo "ok   xroce-link-check fails at 'peer reachable' with no peer"
  else
    echo "FAIL xroce-link-check without a peer said: $out"; fails=$((fails + 1))
  fi
fi

echo "$((cases - fails + 0)) of $cases cases passed"
[ "$fails" -eq 0 ]
