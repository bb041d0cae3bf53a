#!/usr/bin/env bash
# Two processes, each in its own network namespace, joined through a third
# namespace (a veth pair to each side and a bridge between them), all made
# here and always removed: every RC operation with data
# verification over the UDP link and the raw Ethernet link, IPv4 and IPv6,
# path MTU 1024 and 4096 (veth MTU 9000), a VLAN-tagged raw run, ARP and
# neighbour discovery by the raw link, a mixed pair (UDP one side, raw the
# other), and loss, delay and reordering on the path: tc netem on the veths
# when the kernel has it, else the impairment element (tests/net/impair.c)
# in place of the bridge. A second veth pair carries the out-of-band TCP
# exchange.
set -euo pipefail
peer=$1
perf=${2:-}
check=${3:-}
impair=${4:-}
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
command -v tc >/dev/null || { echo "FAIL: tc missing (iproute2)"; exit 1; }

. "$(dirname "$0")/two_hosts.sh"
two_hosts_up xr 9000

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

# Network faults on the path. tc netem on both veth ends when the kernel
# has it. This project's CI kernel is built without netem (and without
# modules), so the fallback takes the bridge out and puts the impairment
# element in its place: loss, delay with jitter and reordering of RoCE
# frames, in a namespace of its own, as a faulty network would. The log
# says which was used; the case fails if no frame was dropped or reordered.
FAULT_KIND= impair_pid=
add_faults() {   # loss percent
  local loss=$1 ns dev
  if ip netns exec "$A" tc qdisc add dev va root netem loss "$loss%" delay 1ms 500us reorder 10% 50% 2>/dev/null &&
     ip netns exec "$B" tc qdisc add dev vb root netem loss "$loss%" delay 1ms 500us reorder 10% 50%; then
    FAULT_KIND="netem loss $loss%, delay 1ms+-0.5ms, reorder 10%"
    return
  fi
  ip netns exec "$A" tc qdisc del dev va root 2>/dev/null || true
  [ -x "$impair" ] || { echo "FAIL: no netem in this kernel and no impairment element"; exit 1; }
  for d in ma mb; do ip -n "$M" link set dev "$d" nomaster; done
  ip netns exec "$M" "$impair" ma mb --loss "$loss" --delay 300 --jitter 200 --reorder 5 --seed 7 \
    --seconds 600 >"$work/impair.log" 2>&1 &
  impair_pid=$!
  sleep 0.2
  FAULT_KIND="impairment element (no netem in this kernel): loss $loss%, delay 300us + 0..200us jitter, 5% sent past the delay"
}
del_faults() {
  ip netns exec "$A" tc qdisc del dev va root 2>/dev/null || true
  ip netns exec "$B" tc qdisc del dev vb root 2>/dev/null || true
  if [ -n "$impair_pid" ]; then
    kill -TERM "$impair_pid" 2>/dev/null || true
    wait "$impair_pid" 2>/dev/null || true
    impair_pid=
    for d in ma mb; do ip -n "$M" link set dev "$d" master br0; done
    sleep 0.2
  fi
}
fault_report() {   # after del_faults: what the network did; fails a run where it did nothing
  local line
  [ -f "$work/impair.log" ] || { echo "     faults: $FAULT_KIND"; return; }
  line=$(grep -m1 "^impair:" "$work/impair.log" || true)
  rm -f "$work/impair.log"
  echo "     network: $line"
  if ! grep -qE "dropped [1-9][0-9]* reordered [1-9]" <<<"$line"; then
    echo "FAIL the impairment element dropped or reordered nothing: $line"; fails=$((fails + 1))
  fi
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
run_case "udp ipv4 mtu 4096 under loss 3%, delay, reordering" --link udp --addr 10.0.0.1 --mtu 4096 \
  -- --link udp --addr 10.0.0.2 --mtu 4096 --iters 2
run_case "udp ipv6 mtu 1024 under loss 3%, delay, reordering" --link udp --addr fd00::1 --mtu 1024 \
  -- --link udp --addr fd00::2 --mtu 1024
del_faults
fault_report

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
run_case "raw ipv4 mtu 4096 under loss 3%, delay, reordering" --link raw --ifname va --addr 10.0.0.1 --mtu 4096 \
  -- --link raw --ifname vb --addr 10.0.0.2 --mtu 4096
del_faults
fault_report

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
       && wait $srv && ! grep -q "FAILED" "$work/ps.log" &&
       # Either end may be the checking one. (No grep -m1 in a pipe: under pipefail the writer's
       # SIGPIPE would fail the case.)
       checked=$(cat "$work/ps.log" - <<<"$out" | grep -oE '[1-9][0-9]* messages checked, 0 errors' | sed -n 1p) &&
       [ -n "$checked" ]; then
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
