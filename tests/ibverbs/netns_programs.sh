#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Unmodified Debian RDMA programs (ibverbs-utils, perftest) with both ends
# on xroce through the drop-in libibverbs, each end in its own network
# namespace, joined through a third (a veth pair to each side and a bridge),
# over the UDP link (the kernel owns the data addresses) and the raw link
# (it does not: the link answers ARP). A second veth pair carries the
# programs' TCP exchange. Every namespace is made here and always removed;
# every program runs under a timeout, one after the other.
#   netns_programs.sh BINDIR
set -u
bin=$1
run="$bin/xroce-run"
[ "$(id -u)" -eq 0 ] || { echo "FAIL: the namespace tests need root (ip netns, veth, AF_PACKET)"; exit 1; }
command -v ip >/dev/null || { echo "FAIL: iproute2 missing (scripts/deps.sh)"; exit 1; }
for p in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw \
         ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat; do
  command -v $p >/dev/null || { echo "FAIL: $p missing (ibverbs-utils, perftest: scripts/deps.sh)"; exit 1; }
done

. "$(dirname "$0")/../net/two_hosts.sh"
trap 'exit 130' INT TERM

two_hosts_up xp || { echo "FAIL: namespaces"; exit 1; }

kernel_ips() {   # on|off: the kernel owns the data addresses (UDP link) or not (raw link)
  ip -n "$A" addr flush dev va
  ip -n "$B" addr flush dev vb
  [ "$1" = on ] || return 0
  ip -n "$A" addr add 10.0.0.1/24 dev va
  ip -n "$B" addr add 10.0.0.2/24 dev vb
}

fails=0 cases=0 port=19000 link=udp
check() {   # status, label
  cases=$((cases + 1))
  if [ "$1" = 0 ]; then echo "ok   $2"; else echo "FAIL $2"; fails=$((fails + 1)); fi
}
side() {   # A|B: the command prefix that runs a program on that side's xroce0
  local ns=$A ifn=va addr=10.0.0.1
  [ "$1" = A ] || { ns=$B ifn=vb addr=10.0.0.2; }
  if [ "$link" = raw ]; then
    echo "ip netns exec $ns $run --link raw --ifname $ifn --addr $addr"
  else
    echo "ip netns exec $ns $run --link udp --addr $addr"
  fi
}
ctl_addr() { [ "$1" = A ] && echo 10.99.0.1 || echo 10.99.0.2; }
other() { [ "$1" = A ] && echo B || echo A; }
wait_listen() {   # side, port: up to 10 s for the server's TCP socket
  local ns=$A i
  [ "$1" = A ] || ns=$B
  for i in $(seq 100); do
    ip netns exec "$ns" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  return 1
}
result_rows() { grep -cE '^ *[0-9]+ +[0-9]+ +[0-9]+(\.[0-9]+)? ' "$1"; }
show_logs() {
  sed 's/^/     server: /' "$work/s.log" | tail -8
  sed 's/^/     client: /' "$work/c.log" | tail -8
}

# One program, server on side $1, client on the other, with the options
# given to both; the client reaches the server's control address. Sets
# crc/src (exit statuses).
pair() {   # server-side, timeout, program, options...
  local s=$1 t=$2 prog=$3; shift 3
  local c
  c=$(other "$s")
  port=$((port + 1))
  timeout -k 2 "$t" $(side "$s") "$prog" -d xroce0 -p "$port" "$@" >"$work/s.log" 2>&1 &
  local spid=$!
  wait_listen "$s" "$port"
  timeout -k 2 "$t" $(side "$c") "$prog" -d xroce0 -p "$port" "$@" "$(ctl_addr "$s")" >"$work/c.log" 2>&1
  crc=$?
  wait $spid; src=$?
}

# A perftest tool: both ends exit 0 and print at least $min result rows
# (the server of ib_read_lat/ib_atomic_lat prints none: perftest reports
# latency only where it is measured).
perf() {   # server-side, min-rows, label, tool, options...
  local s=$1 min=$2 label=$3 tool=$4; shift 4
  local srows=1 crows line
  pair "$s" 60 "$tool" "$@"
  crows=$(result_rows "$work/c.log")
  case "$tool" in ib_read_lat|ib_atomic_lat) ;; *) srows=$(result_rows "$work/s.log") ;; esac
  line=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+(\.[0-9]+)? ' "$work/c.log" | tail -1 | tr -s ' \t' ' ')
  check $(( (crc != 0) + (src != 0) + (crows < min) + (srows < 1) )) \
    "$link server $s: $tool $label ($crows rows:$line)"
  [ $(( (crc != 0) + (src != 0) + (crows < min) + (srows < 1) )) = 0 ] || show_logs
}

# What xroce lacks: both ends end (no hang), one says which feature, and
# neither succeeds.
refused() {   # server-side, label, expected-message (ERE), tool, options...
  local s=$1 label=$2 msg=$3 tool=$4; shift 4
  pair "$s" 30 "$tool" "$@"
  local hung=$(( crc == 124 || crc == 137 || src == 124 || src == 137 ))
  cat "$work/s.log" "$work/c.log" | grep -qE "$msg"
  local said=$?
  check $(( hung + said + (crc == 0 && src == 0) )) "$link: $tool $label refused ($(grep -hE -m1 "$msg" "$work/s.log" "$work/c.log" | head -1))"
  [ $(( hung + said + (crc == 0 && src == 0) )) = 0 ] || show_logs
}

pingpong() {   # server-side, label, options...
  local s=$1 label=$2; shift 2
  pair "$s" 60 ibv_rc_pingpong "$@"
  grep -q "iters in" "$work/c.log" && grep -q "iters in" "$work/s.log"
  local g=$?
  check $(( (crc != 0) + (src != 0) + g )) "$link server $s: ibv_rc_pingpong $label ($(grep -h 'usec/iter' "$work/c.log" | sed 's/.*= //'))"
  [ $(( (crc != 0) + (src != 0) + g )) = 0 ] || show_logs
}

devinfo() {
  local out rc
  out=$(timeout 20 $(side A) ibv_devices 2>&1); rc=$?
  grep -q xroce0 <<<"$out"; check $((rc + $?)) "$link: ibv_devices lists xroce0"
  out=$(timeout 20 $(side B) ibv_devinfo -v 2>&1); rc=$?
  grep -q PORT_ACTIVE <<<"$out" && grep -q "GID\[  0\]:.*10.0.0.2, RoCE v2" <<<"$out"
  check $((rc + $?)) "$link: ibv_devinfo -v: port active, GID 0 = 10.0.0.2, RoCE v2"
}

all_tools() {   # the eight tools, each namespace as server
  local s t
  for s in A B; do
    for t in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
      perf "$s" 1 "-n 200" "$t" -F -n 200
    done
    for t in ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat; do
      perf "$s" 1 "-n 200" "$t" -F -n 200
    done
  done
}

ud_uc_srq() {   # the other QP types and shared receive queues, each namespace as server
  perf A 1 "-c UD" ib_send_bw -F -c UD -n 200
  perf B 1 "-c UD" ib_send_lat -F -c UD -n 200
  perf B 1 "-c UC" ib_write_bw -F -c UC -n 200
  perf A 1 "-c UC" ib_send_bw -F -c UC -n 200
  perf A 1 "-c UC" ib_write_lat -F -c UC -n 200
  perf B 1 "--use-srq" ib_send_bw -F --use-srq -n 200
  perf A 1 "--use-srq" ib_send_lat -F --use-srq -n 200
}

t0=$SECONDS
# ---- UDP link ----
link=udp
kernel_ips on
sleep 0.3
devinfo
pingpong A "-g 0" -g 0 -n 200
pingpong B "-g 0 -c" -g 0 -n 200 -c
pingpong A "-g 0 -e" -g 0 -n 200 -e
all_tools
# Variants. -a: every size 2 B..8 MiB, capped where a run would be long.
for t in ib_write_bw ib_read_bw ib_send_bw; do perf A 20 "-a -n 20" "$t" -F -a -n 20; done
perf B 20 "-a -n 20" ib_write_lat -F -a -n 20
perf A 20 "-a -n 20" ib_read_lat -F -a -n 20
perf B 20 "-a -n 20" ib_send_lat -F -a -n 20
for t in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do perf B 1 "-q 4" "$t" -F -q 4 -n 200; done
perf A 1 "-e" ib_send_bw -F -e -n 200
perf B 1 "-e" ib_send_lat -F -e -n 200
perf B 1 "-e" ib_read_bw -F -e -n 200
perf A 1 "-e" ib_atomic_bw -F -e -n 200
perf A 1 "--report_gbits" ib_write_bw -F --report_gbits -n 200
perf B 1 "--report_gbits" ib_send_bw -F --report_gbits -n 200
perf A 1 "-D 2" ib_write_bw -F -D 2
perf B 1 "-D 2" ib_read_bw -F -D 2
perf A 1 "-D 2" ib_send_bw -F -D 2
perf B 1 "-D 2" ib_write_lat -F -D 2
ud_uc_srq
refused B "-R" "xroce: .*connection manager" ib_write_bw -F -R -n 10

# ---- raw link: the kernel does not hold 10.0.0.x, the links answer ARP ----
link=raw
kernel_ips off
devinfo
pingpong B "-g 0" -g 0 -n 200
pingpong A "-g 0 -c -e" -g 0 -n 200 -c -e
all_tools
perf A 20 "-a -n 20" ib_write_bw -F -a -n 20
perf B 20 "-a -n 20" ib_read_lat -F -a -n 20
perf A 1 "-q 4" ib_write_bw -F -q 4 -n 200
perf B 1 "-e" ib_send_bw -F -e -n 200
perf A 1 "--report_gbits -D 2" ib_read_bw -F --report_gbits -D 2
ud_uc_srq

echo "netns_programs: $((cases - fails)) of $cases passed in $((SECONDS - t0)) s"
[ "$fails" -eq 0 ]
