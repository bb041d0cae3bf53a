#!/usr/bin/env bash
# The AF_XDP link between two network namespaces joined through a third
# (a veth to each side, a bridge between them), as tests/net/netns_links.sh
# does for the UDP and raw links, all made here and always removed:
# every xroce-perf test with --verify over --link xdp (IPv4, path MTU
# 4096 on veth MTU 9000, so frames span two UMEM chunks), IPv6 with
# neighbour discovery, generic XDP, mixed pairs (xdp against raw and against
# the kernel's UDP socket), hostile datagrams (oversized, junk), the kernel's own ping over the same veth while
# the XDP socket is bound (and during a transfer), a link reopened after
# its process was killed (nothing left behind), and the errors a user sees (no interface, no
# privileges). A second veth pair carries the out-of-band TCP exchange.
set -euo pipefail
perf=$1
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the XDP link tests need root (namespaces, XDP programs, AF_XDP)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
command -v ping >/dev/null || { echo "FAIL: ping missing (iputils-ping, scripts/deps.sh)"; exit 1; }

. "$(dirname "$0")/two_hosts.sh"
two_hosts_up xx 9000
# A private copy: a rebuild of the tree during the run cannot pull it away.
cp "$perf" "$work/xroce-perf" && perf=$work/xroce-perf

fails=0 cases=0 port=21000
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# One xroce-perf test, server in A and client in B, both verified: either
# end may be the checking one, neither may report an error.
perf_case() {   # name, test, A args, B args
  local name=$1 t=$2 aargs=$3 bargs=$4 out checked
  port=$((port + 1)); cases=$((cases + 1))
  timeout 60 ip netns exec "$A" "$perf" "$t" $aargs -p "$port" -n 200 -m 4096 --verify >"$work/s.log" 2>&1 &
  local srv=$!
  sleep 0.5
  if out=$(timeout 60 ip netns exec "$B" "$perf" "$t" $bargs -p "$port" -n 200 -m 4096 --verify 10.99.0.1 2>&1) &&
     wait $srv && ! grep -q "FAILED" "$work/s.log" &&
     checked=$(cat "$work/s.log" - <<<"$out" | grep -oE '[1-9][0-9]* messages checked, 0 errors' | sed -n 1p) &&
     [ -n "$checked" ]; then
    ok "$name: $checked"
  else
    fail "$name:"; tail -5 <<<"$out" | sed 's/^/     client: /'; tail -5 "$work/s.log" | sed 's/^/     server: /'
    wait $srv 2>/dev/null || true
  fi
}

# ---- the bound mode ----
cases=$((cases + 1))
timeout 10 ip netns exec "$A" "$perf" write_bw --link xdp --ifname va --bind 10.0.0.1 -p 20999 >"$work/mode.log" 2>&1 &
mpid=$!
sleep 1
kill "$mpid" 2>/dev/null || true
wait "$mpid" 2>/dev/null || true
mode=$(grep -m1 "xdp link on va" "$work/mode.log" || true)
if grep -q "native XDP" <<<"$mode"; then ok "bound: ${mode#xroce: }"; else fail "native XDP on veth: $(cat "$work/mode.log")"; fi

# ---- every test, IPv4: the links own 10.0.0.1/2 and answer ARP ----
X_A="--link xdp --ifname va --bind 10.0.0.1" X_B="--link xdp --ifname vb --bind 10.0.0.2"
for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat pingpong; do
  perf_case "xroce-perf $t --verify over xdp" "$t" "$X_A" "$X_B"
done
perf_case "xdp ipv6 (neighbour discovery) write_bw" write_bw "--link xdp --ifname va --bind fd00::1" \
  "--link xdp --ifname vb --bind fd00::2"
XROCE_XDP_MODE=generic perf_case "xdp, generic XDP both ends, read_bw" read_bw "$X_A" "$X_B"
cases=$((cases + 1))
if grep -q "generic XDP" "$work/s.log"; then ok "generic mode was bound when asked"; else
  fail "generic mode: $(grep -m1 'xdp link' "$work/s.log")"; fi

# ---- mixed pairs ----
perf_case "mixed: xdp (A) <-> raw (B) send_bw" send_bw "$X_A" "--link raw --ifname vb --bind 10.0.0.2"
perf_case "mixed: raw (A) <-> xdp (B) read_lat" read_lat "--link raw --ifname va --bind 10.0.0.1" "$X_B"
ip -n "$B" addr add 10.0.0.2/24 dev vb
sleep 0.3
perf_case "mixed: xdp (A) <-> kernel UDP socket (B) write_bw" write_bw "$X_A" "--link udp --bind 10.0.0.2"
va_mac=$(ip -n "$A" -o link show va | sed -E 's/.*link\/ether ([0-9a-f:]+).*/\1/')
cases=$((cases + 1))
if ip -n "$B" neigh show 10.0.0.1 dev vb | grep -q "lladdr $va_mac"; then
  ok "B's kernel resolved 10.0.0.1 to $va_mac through A's XDP link (ARP reply)"
else
  fail "B's kernel has no ARP entry 10.0.0.1 -> $va_mac: $(ip -n "$B" neigh show)"
fi
# Hostile input to the link's address: an 8000-byte datagram to port 4791
# (three UMEM chunks, longer than any RoCE frame) and junk, from B's
# kernel; then a verified transfer on the same link. Dropped, counted, no harm.
port=$((port + 1)); cases=$((cases + 1))
XROCE_XDP_DEBUG=1 timeout 60 ip netns exec "$A" "$perf" write_bw $X_A -p "$port" -n 200 -m 4096 --verify \
  >"$work/s.log" 2>&1 &
srv=$!
sleep 0.7
ip netns exec "$B" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in (b"x" * 8000, b"junk", b"\xff" * 64):
    s.sendto(p, ("10.0.0.1", 4791))'
if timeout 60 ip netns exec "$B" "$perf" write_bw --link udp --bind 10.0.0.2 -p "$port" -n 200 -m 4096 --verify 10.99.0.1 \
     >"$work/c.log" 2>&1 && wait "$srv" && grep -qE "rx oversize [1-9]" "$work/s.log" &&
   grep -q "0 errors" "$work/c.log"; then
  ok "hostile datagrams: $(grep -oE 'rx oversize [0-9]+' "$work/s.log") counted, then $(grep -oE '[0-9]+ messages checked, 0 errors' "$work/c.log")"
else
  fail "hostile datagrams:"; grep -hE "^xroce xdp|error|FAIL" "$work/s.log" "$work/c.log" | sed 's/^/     /'
  wait "$srv" 2>/dev/null || true
fi
# Every frame of the link's pool came back (drops, multi-part frames, the
# transfer): a frame lost on any path shows here, before it drains a pool.
cases=$((cases + 1))
pools=$(grep -oE 'pool [0-9]+ free of [0-9]+' "$work/s.log" || true)
if [ -n "$pools" ] && ! grep -vqE "pool ([0-9]+) free of \1$" <<<"$pools"; then ok "every pool is whole at close: $(tr '\n' ' ' <<<"$pools")"
else fail "the pool at close: $(grep -oE 'pool [0-9]+ free of [0-9]+' "$work/s.log" || echo 'no line')"; fi
ip -n "$B" addr flush dev vb

# ---- the kernel's own traffic on va keeps working with the socket bound ----
ip -n "$A" addr add 10.1.0.1/24 dev va
ip -n "$B" addr add 10.1.0.2/24 dev vb
port=$((port + 1)); cases=$((cases + 1))
XROCE_XDP_DEBUG=1 timeout 60 ip netns exec "$A" "$perf" write_bw $X_A -p "$port" -D 3 --verify >"$work/s.log" 2>&1 &
srv=$!
sleep 0.7
if grep -q "xdp link on va" "$work/s.log" && out=$(ip netns exec "$A" ping -c 3 -i 0.2 -W 2 10.1.0.2 2>&1); then
  ok "kernel ping over va with the XDP socket bound: $(grep -oE '[0-9]+ received' <<<"$out")"
else
  fail "kernel ping over va with the XDP socket bound: $out"
fi
timeout 60 ip netns exec "$B" "$perf" write_bw $X_B -p "$port" -D 3 --verify 10.99.0.1 >"$work/c.log" 2>&1 &
cli=$!
sleep 1
cases=$((cases + 1))
if out=$(ip netns exec "$A" ping -c 5 -i 0.2 -W 2 10.1.0.2 2>&1) && ip netns exec "$B" ping -c 2 -i 0.2 -W 2 10.1.0.1 >/dev/null 2>&1
then
  ok "kernel ping both ways during an XDP transfer: $(grep -oE '[0-9]+ received' <<<"$out")"
else
  fail "kernel ping during an XDP transfer: $out"
fi
cases=$((cases + 1))
if wait "$cli" && wait "$srv" && grep -q "0 errors" "$work/c.log"; then ok "the transfer beside the pings: $(grep -oE '[0-9]+ messages checked, 0 errors' "$work/c.log")"
else fail "transfer beside the pings:"; tail -3 "$work/c.log" "$work/s.log" | sed 's/^/     /'; fi
# The replies reached the kernel past the filter: it counted them as passed.
cases=$((cases + 1))
filt=$(grep -m1 "^xroce xdp va:" "$work/s.log" || true)
if grep -qE "pass [1-9]" <<<"$filt"; then ok "the filter passed the kernel's frames: $(grep -oE 'filter [^|]*' <<<"$filt")"
else fail "the filter's counters: $filt"; fi
ip -n "$A" addr flush dev va
ip -n "$B" addr flush dev vb

# ---- a killed process leaves nothing on the interface (the filter is
# attached through a BPF link, which dies with its fd) ----
cases=$((cases + 1))
ip netns exec "$A" "$perf" write_bw $X_A -p 20998 >/dev/null 2>&1 &
kpid=$!
sleep 0.7
attached=$(ip -n "$A" link show va | grep -c "prog/xdp" || true)
kill -9 "$kpid" 2>/dev/null || true
wait "$kpid" 2>/dev/null || true
sleep 0.2
if [ "$attached" -eq 1 ] && ! ip -n "$A" link show va | grep -q "prog/xdp"; then
  ok "the filter was on va while the link lived and went with its SIGKILLed process"
else
  fail "filter after SIGKILL (attached while alive: $attached): $(ip -n "$A" link show va)"
fi
perf_case "a new link on va after the SIGKILL: send_lat" send_lat "$X_A" "$X_B"
cases=$((cases + 1))
if ip -n "$A" link show va | grep -q "prog/xdp"; then fail "the filter is still on va after the link closed"; else
  ok "the filter is off va once the link closed"; fi

# ---- errors a user can act on ----
expect() {   # description, expected message part, command...
  local what=$1 want=$2; shift 2
  local out rc=0
  cases=$((cases + 1))
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && grep -q -- "$want" <<<"$out"; then ok "$what: $(grep -m1 -- "$want" <<<"$out")"; else
    fail "$what: rc=$rc: $out"; fi
}
expect "no such interface" "no interface named 'nosuchif0'" \
  ip netns exec "$A" "$perf" write_bw --link xdp --ifname nosuchif0 --bind 10.0.0.1 -p 20997
expect "no interface given" "needs an interface" \
  ip netns exec "$A" "$perf" write_bw --link xdp --bind 10.0.0.1 -p 20997
if command -v setpriv >/dev/null; then
  expect "without privileges" "needs CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW" \
    ip netns exec "$A" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    "$perf" write_bw --link xdp --ifname va --bind 10.0.0.1 -p 20997
else
  fail "the privileges case needs setpriv (util-linux)"
fi
# A live link holds the interface: a second one is refused, by name.
ip netns exec "$A" "$perf" write_bw $X_A -p 20996 >/dev/null 2>&1 &
hold=$!
sleep 0.7
expect "a second link on the same interface" "has an XDP program or socket" \
  ip netns exec "$A" "$perf" write_bw --link xdp --ifname va --bind 10.0.0.3 -p 20995
kill "$hold" 2>/dev/null || true
wait "$hold" 2>/dev/null || true

echo "$((cases - fails)) of $cases cases passed"
[ "$fails" -eq 0 ]
