#!/usr/bin/env bash
# xroce-switch between two namespaces (issue 12 item 6): A and B each hold
# one end of a veth pair whose other end is in M, where xroce-switch joins
# them in place of a bridge. xroce-perf
# over the UDP link (the kernel's
# stack and ARP) and over the raw link (RoCE frames) cross it verified, at a 1 Gb/s
# port with a small queue and ECN marking, then with PFC; every port's
# pcap is written; SIGINT prints the counters. A second veth pair carries
# the out-of-band TCP exchange. Everything made here is always removed.
set -euo pipefail
switch=$1
perf=$2
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }

A=xsA$$ B=xsB$$ M=xsM$$
work=$(mktemp -d)
cleanup() {
  for ns in "$A" "$B" "$M"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$A"
ip netns add "$B"
ip netns add "$M"
ip link add va netns "$A" type veth peer name ma netns "$M"
ip link add vb netns "$B" type veth peer name mb netns "$M"
ip link add ca netns "$A" type veth peer name cb netns "$B"
for d in ma mb; do ip -n "$M" link set dev "$d" mtu 9000 up; done
for ns in "$A" "$B" "$M"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set va mtu 9000 up
ip -n "$B" link set vb mtu 9000 up
ip -n "$A" addr add 10.99.0.1/24 dev ca && ip -n "$A" link set ca up
ip -n "$B" addr add 10.99.0.2/24 dev cb && ip -n "$B" link set cb up
fails=0 cases=0 port=19300

ok()   { cases=$((cases + 1)); echo "ok   $*"; }
fail() { cases=$((cases + 1)); fails=$((fails + 1)); echo "FAIL $*"; }

start_switch() {   # log, options...
  local log=$1; shift
  ip netns exec "$M" "$switch" "$@" ma mb >"$log" 2>&1 &
  sw=$!
  sleep 0.3
  kill -0 "$sw" 2>/dev/null || { fail "xroce-switch $* did not start: $(cat "$log")"; return 1; }
}
stop_switch() {   # SIGINT: the counters print and it exits 0
  kill -INT "$sw" 2>/dev/null || true
  if wait "$sw"; then return 0; fi
  fail "xroce-switch exited non-zero on SIGINT"; return 1
}

# Bad arguments: exit 2 and a reason.
for args in "ma" "--rate fast ma mb" "--ecn 9K,1K,0.5 ma mb" "--pfc 8 ma mb" "--nonsense ma mb"; do
  rc=0; out=$(ip netns exec "$M" "$switch" $args 2>&1) || rc=$?
  if [ $rc -eq 2 ] && [ -n "$out" ]; then ok "xroce-switch $args: exit 2, '$out'"; else fail "xroce-switch $args: exit $rc"; fi
done
rc=0; ip netns exec "$M" "$switch" nosuch0 mb >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] && ok "a missing interface: exit 1" || fail "a missing interface: exit $rc"

perf_case() {   # test, label, link args of A, link args of B
  local t=$1 label=$2 aargs=$3 bargs=$4 out checked
  port=$((port + 1))
  timeout 60 ip netns exec "$A" "$perf" "$t" $aargs -p "$port" -n 100 -s 65536 --verify >"$work/ps.log" 2>&1 &
  local srv=$!
  sleep 0.5
  if out=$(timeout 60 ip netns exec "$B" "$perf" "$t" $bargs -p "$port" -n 100 -s 65536 --verify 10.99.0.1 2>&1) &&
     wait $srv && ! grep -q FAILED "$work/ps.log" &&
     checked=$(cat "$work/ps.log" - <<<"$out" | grep -oE '[1-9][0-9]* messages checked, 0 errors' | sed -n 1p) &&
     [ -n "$checked" ]; then
    ok "xroce-perf $t --verify through xroce-switch ($label): $checked"
  else
    wait $srv 2>/dev/null || true
    fail "xroce-perf $t through xroce-switch ($label):"; tail -5 <<<"$out" | sed 's/^/     /'
    tail -3 "$work/ps.log" | sed 's/^/     server: /'
  fi
}
raw_a="--link raw --ifname va --bind 10.0.0.1" raw_b="--link raw --ifname vb --bind 10.0.0.2"

# ---- kernel traffic (ARP, UDP through the kernel's stack) through the switch ----
ip -n "$A" addr add 10.0.0.1/24 dev va
ip -n "$B" addr add 10.0.0.2/24 dev vb
start_switch "$work/sw0.log" --pcap "$work/cap"
perf_case write_bw "UDP link, kernel ARP" "--link udp --bind 10.0.0.1" "--link udp --bind 10.0.0.2"
stop_switch || true
if grep -q "^ma:.*tx_frames=" "$work/sw0.log" && grep -q "^mb:.*tx_frames=" "$work/sw0.log"; then
  ok "counters on SIGINT: $(grep '^ma:' "$work/sw0.log" | cut -c1-90)"
else
  fail "no counters on SIGINT: $(cat "$work/sw0.log")"
fi
for d in ma mb; do
  if [ -s "$work/cap-$d.pcap" ]; then ok "pcap of port $d written ($(stat -c %s "$work/cap-$d.pcap") bytes)"; else fail "no pcap for $d"; fi
done
ip -n "$A" addr flush dev va
ip -n "$B" addr flush dev vb

# ---- xroce over the raw link through a 1 Gb/s port ----
start_switch "$work/sw1.log" --rate 1G --queue 256K --ecn 16K,128K,0.2
perf_case write_bw "1 Gb/s, 256 KiB queue, ECN" "$raw_a" "$raw_b"
perf_case send_bw "1 Gb/s, 256 KiB queue, ECN" "$raw_a" "$raw_b"
stop_switch || true
line=$(grep -E '^m[ab]:.*tx_bytes=' "$work/sw1.log" | tr '\n' ' ')
if grep -qE 'tx_bytes=[0-9]{7,}' <<<"$line"; then ok "1 Gb/s run carried the transfer: $(cut -c1-160 <<<"$line")"; else fail "1 Gb/s run: $line"; fi

start_switch "$work/sw2.log" --rate 1G --pfc 0 --xoff 16K --xon 8K --headroom 32K
perf_case write_bw "1 Gb/s, PFC on priority 0" "$raw_a" "$raw_b"
stop_switch || true
if grep -qE 'pfc_sent\[0\]=[1-9]' "$work/sw2.log"; then
  ok "PFC frames sent toward the sender: $(grep -oE 'pfc_sent\[0\]=[0-9]+' "$work/sw2.log" | tr '\n' ' ')"
else
  fail "no PFC frames sent: $(cat "$work/sw2.log")"
fi

echo "$((cases - fails))/$cases passed"
[ "$fails" -eq 0 ]
