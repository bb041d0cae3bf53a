#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# UD multicast with unmodified perftest through the drop-in libibverbs:
# ib_send_bw -c UD -g (the server's QP attaches to a group, the client
# sends to it at DestQP 0xFFFFFF), each end in its own network namespace,
# joined through a third (veth pairs and a bridge, tests/net/two_hosts.sh),
# over the UDP link (the kernel owns 10.0.0.x and the group membership),
# the raw link and the XDP link (the links own 10.0.0.x; the bridge floods
# the group, which they do not report over IGMP), each namespace as server, IPv4 group
# 239.1.1.1 (perftest's -M takes the GID byte by byte, in decimal). Both
# ends must exit 0 and print a result row (perftest's UD server ends only
# once every message came), and the server's device must have counted
# them all as group datagrams (rcvd_mcast_pkts in its XROCE_EXIT_REPORT).
# Every namespace is made here and removed.
#   netns_mcast.sh BINDIR
set -u
bin=$1
run="$bin/xroce-run"
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
command -v ib_send_bw >/dev/null || { echo "FAIL: ib_send_bw missing (perftest: scripts/deps.sh)"; exit 1; }

. "$(dirname "$0")/../net/two_hosts.sh"
trap 'exit 130' INT TERM
two_hosts_up xm || { echo "FAIL: namespaces"; exit 1; }

MGID=0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1
fails=0 cases=0 port=19500 link=udp
kernel_ips() {   # on|off
  ip -n "$A" addr flush dev va
  ip -n "$B" addr flush dev vb
  [ "$1" = on ] || return 0
  ip -n "$A" addr add 10.0.0.1/24 dev va
  ip -n "$B" addr add 10.0.0.2/24 dev vb
}
side() {   # A|B: the command prefix that runs a program on that side's xroce0
  local ns=$A ifn=va addr=10.0.0.1
  [ "$1" = A ] || { ns=$B ifn=vb addr=10.0.0.2; }
  if [ "$link" != udp ]; then
    echo "ip netns exec $ns env XROCE_EXIT_REPORT=1 $run --link $link --ifname $ifn --addr $addr"
  else
    echo "ip netns exec $ns env XROCE_EXIT_REPORT=1 $run --link udp --addr $addr"
  fi
}
wait_listen() {   # namespace, port: up to 10 s for the server's TCP socket
  local i
  for i in $(seq 100); do
    ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  return 1
}
# The last result row's message count (perftest's "#iterations" column).
iters() { grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+(\.[0-9]+)? ' "$1" | tail -1 | awk '{print $2}'; }

mcast_case() {   # server side (A|B), iterations
  local s=$1 n=$2 c=B sns=$A ctl=10.99.0.1 crc src si ci sm
  [ "$s" = A ] || { c=A sns=$B ctl=10.99.0.2; }
  port=$((port + 1)); cases=$((cases + 1))
  timeout -k 2 60 $(side "$s") ib_send_bw -d xroce0 -p "$port" -c UD -g -M "$MGID" -F -n "$n" \
    >"$work/s.log" 2>&1 &
  local spid=$!
  wait_listen "$sns" "$port"
  timeout -k 2 60 $(side "$c") ib_send_bw -d xroce0 -p "$port" -c UD -g -M "$MGID" -F -n "$n" "$ctl" \
    >"$work/c.log" 2>&1
  crc=$?
  wait $spid; src=$?
  si=$(iters "$work/s.log"); ci=$(iters "$work/c.log")
  # The server's device counted the datagrams as group ones (XROCE_EXIT_REPORT).
  sm=$(grep -oE 'rcvd_mcast_pkts +[0-9]+' "$work/s.log" | awk '{print $2}')
  if [ "$crc" = 0 ] && [ "$src" = 0 ] && [ "${si:-0}" -ge 1 ] && [ "${ci:-0}" -ge 1 ] && [ "${sm:-0}" -ge "$n" ]; then
    echo "ok   $link server $s: ib_send_bw -c UD -g -M 239.1.1.1 -n $n: server received $si ($sm group datagrams), client sent $ci"
  else
    echo "FAIL $link server $s: ib_send_bw -c UD -g (exit server $src client $crc; rows server '${si:-}' client '${ci:-}'; group datagrams '${sm:-}')"
    sed "s/^/     server: /" "$work/s.log" | tail -40
    sed 's/^/     client: /' "$work/c.log" | tail -12
    fails=$((fails + 1))
  fi
}

link=udp
kernel_ips on
sleep 0.3
mcast_case A 200
mcast_case B 200
link=raw
kernel_ips off
mcast_case A 200
mcast_case B 200
link=xdp
mcast_case A 200
mcast_case B 200
# The host link (shared memory) has no groups: the attach is refused, and
# the programs end instead of waiting for datagrams that never come.
port=$((port + 1)); cases=$((cases + 1))
timeout -k 2 30 ip netns exec "$A" "$run" --link host --addr 10.251.7.1 ib_send_bw -d xroce0 -p "$port" -c UD -g \
  -M "$MGID" -F -n 10 >"$work/s.log" 2>&1 &
spid=$!
wait_listen "$A" "$port"
timeout -k 2 30 ip netns exec "$A" "$run" --link host --addr 10.251.7.2 ib_send_bw -d xroce0 -p "$port" -c UD -g \
  -M "$MGID" -F -n 10 127.0.0.1 >"$work/c.log" 2>&1
crc=$?
wait $spid; src=$?
if [ "$src" != 0 ] && [ "$src" != 124 ] && [ "$crc" != 124 ] && grep -q "attach QP to MultiCast" "$work/s.log"; then
  echo "ok   host link: the attach is refused (server exit $src: $(grep -o "Couldn't attach QP to MultiCast group" "$work/s.log"))"
else
  echo "FAIL host link: attach not refused (server exit $src, client exit $crc)"
  sed 's/^/     server: /' "$work/s.log" | tail -12
  fails=$((fails + 1))
fi
echo "netns_mcast: $((cases - fails)) of $cases passed"
[ "$fails" -eq 0 ]
