#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Unmodified Debian binaries (ibv_devices, ibv_devinfo, ibv_rc_pingpong,
# ib_{write,read,send,atomic}_bw, ib_write_lat)
# on xroce through the drop-in libibverbs: two processes on this host,
# 127.0.0.1 and 127.0.0.2, over the host path (the default for local
# peers) and over the kernel's UDP (XROCE_HOST_PATH=0).
#   programs.sh BINDIR
set -u
bin=$1
# As root, in a network namespace of its own: 127.0.0.1/.2 and port 4791
# are then ours alone, whatever else runs on this host's loopback.
if [ "$(id -u)" = 0 ] && [ -z "${XRV_PROGRAMS_NS:-}" ] && command -v ip >/dev/null; then
  ns=xrvprog$$
  ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1
  XRV_PROGRAMS_NS=$ns ip netns exec "$ns" "$0" "$@"; rc=$?
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$ns"
  exit $rc
fi
run="$bin/xroce-run"
fail=0
t0=$SECONDS
check() { if [ "$1" = 0 ]; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }
# Each pair on a TCP port of its own (not perftest's 18515, which other
# programs on this host may hold), the client started once the server
# listens (a fixed sleep lost the race on a loaded machine).
port=$((20000 + $$ % 5000))
next_port() { port=$((port + 1)); }
wait_listen() { for _ in $(seq 100); do ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && return 0; sleep 0.1; done; return 1; }

out=$("$run" ibv_devices 2>&1); rc=$?
echo "$out" | grep -q "xroce0"; check $((rc + $?)) "ibv_devices lists xroce0"
out=$("$run" --addr 127.0.0.1 ibv_devinfo -v 2>&1); rc=$?
echo "$out" | grep -q "PORT_ACTIVE" && echo "$out" | grep -q "GID\[  0\]:.*127.0.0.1, RoCE v2" && echo "$out" | grep -q "link_layer:.*Ethernet"
check $((rc + $?)) "ibv_devinfo -v: port active, Ethernet, GID 0 = the address, RoCE v2"
out=$("$run" --addr 192.0.2.254 ibv_devinfo 2>&1); rc=$?
echo "$out" | grep -q "xroce: cannot open the udp link on 192.0.2.254"
check $(( (rc == 0) + $? )) "ibv_devinfo on an address not this host's: one clear line, failure"
# Garbage in a variable is refused with its name, not read as something.
for v in XROCE_ENGINE_RT=yes XROCE_RETRY7_FOREVER=2 XROCE_HOST_PATH=off XROCE_EXIT_REPORT=true \
         XROCE_IFNAME=a-name-longer-than-fifteen; do
  out=$(env "$v" "$run" --addr 127.0.0.1 ibv_devinfo 2>&1); rc=$?
  echo "$out" | grep -q "xroce: ${v%%=*}='${v#*=}': "
  check $(( (rc == 0) + $? )) "$v: refused by name ($(echo "$out" | grep -m1 "${v%%=*}"))"
done

pingpong() {   # label, env..., then pingpong options
  local label=$1; shift
  local envs=() opts=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do envs+=("$1"); shift; done
  opts=("$@")
  next_port
  env "${envs[@]}" timeout 60 "$run" --addr 127.0.0.1 ibv_rc_pingpong -d xroce0 -p $port "${opts[@]}" >/tmp/xrv_s.$$ 2>&1 &
  local spid=$!
  wait_listen
  env "${envs[@]}" timeout 60 "$run" --addr 127.0.0.2 ibv_rc_pingpong -d xroce0 -p $port "${opts[@]}" 127.0.0.1 >/tmp/xrv_c.$$ 2>&1
  local crc=$?
  wait $spid; local src=$?
  grep -q "iters in" /tmp/xrv_c.$$ && grep -q "iters in" /tmp/xrv_s.$$
  local grc=$?
  check $((crc + src + grc)) "ibv_rc_pingpong $label ($(grep -h 'usec/iter' /tmp/xrv_c.$$ | sed 's/.*= //'))"
  [ $((crc + src + grc)) = 0 ] || { echo "--- server"; cat /tmp/xrv_s.$$; echo "--- client"; cat /tmp/xrv_c.$$; }
  rm -f /tmp/xrv_s.$$ /tmp/xrv_c.$$
}
pingpong "-g 0, host path" -g 0 -n 500
pingpong "-g 0 -c (data checked), host path" -g 0 -n 200 -c
pingpong "-g 0 -e (completion events), host path" -g 0 -n 200 -e
pingpong "-g 0 -s 65536, host path" -g 0 -n 100 -s 65536
pingpong "-g 0 -N -c (the ibv_wr_* API, data checked), host path" -g 0 -n 200 -N -c
pingpong "-g 0, kernel UDP" XROCE_HOST_PATH=0 -g 0 -n 500
pingpong "-g 0 -e -c, kernel UDP" XROCE_HOST_PATH=0 -g 0 -n 200 -e -c

# perftest, unmodified: each tool's server and client on this host (host
# path), a result line from both.
for t in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat; do
  next_port
  timeout 60 "$run" --addr 127.0.0.1 $t -d xroce0 -n 300 -F -p $port >/tmp/xrv_s.$$ 2>&1 &
  spid=$!
  wait_listen
  timeout 60 "$run" --addr 127.0.0.2 $t -d xroce0 -n 300 -F -p $port 127.0.0.1 >/tmp/xrv_c.$$ 2>&1; crc=$?
  wait $spid; src=$?
  line=$(grep -E '^ [0-9]+ +300 ' /tmp/xrv_c.$$ | tail -1 | tr -s ' \t' ' ')
  [ -n "$line" ] && grep -qE '^ [0-9]+ +300 ' /tmp/xrv_s.$$
  check $((crc + src + $?)) "$t -F:$line"
  [ $((crc + src)) = 0 ] || { echo "--- server"; tail -5 /tmp/xrv_s.$$; echo "--- client"; tail -5 /tmp/xrv_c.$$; }
done
rm -f /tmp/xrv_s.$$ /tmp/xrv_c.$$

# ib_write_lat spins on a byte of its buffer while the engine's thread
# delivers: the thread must get a core at once (it sleeps when idle and
# runs at real-time priority when permitted), not after the spinner's time
# slice (typical was 170-540 us here before, milliseconds under load).
next_port
timeout 60 "$run" --addr 127.0.0.1 ib_write_lat -d xroce0 -n 2000 -s 8 -F -p $port >/tmp/xrv_s.$$ 2>&1 &
spid=$!
wait_listen
timeout 60 "$run" --addr 127.0.0.2 ib_write_lat -d xroce0 -n 2000 -s 8 -F -p $port 127.0.0.1 >/tmp/xrv_c.$$ 2>&1; crc=$?
wait $spid; src=$?
typical=$(grep -E '^ 8 +2000 ' /tmp/xrv_c.$$ | awk '{print $5}')
awk -v t="${typical:-1e9}" 'BEGIN { exit !(t < 100) }'
check $((crc + src + $?)) "ib_write_lat 8 B: typical ${typical:-?} us (< 100 us)"
rm -f /tmp/xrv_s.$$ /tmp/xrv_c.$$

# An idle program costs no CPU: a server waiting for its client on TCP.
# As root the engine's thread is SCHED_FIFO (policy 1 in /proc's stat);
# XROCE_ENGINE_RT=0 leaves every thread at normal priority.
idle_server() {   # env...: starts it, sets ipid
  next_port
  env "$@" "$run" --addr 127.0.0.1 ibv_rc_pingpong -d xroce0 -g 0 -p $port >/dev/null 2>&1 &
  ipid=$!
  wait_listen
  sleep 0.3
}
fifo_threads() { cat /proc/$ipid/task/*/stat 2>/dev/null | awk '$41 == 1' | wc -l; }
idle_server XROCE_ENGINE_RT=1
t1=$(awk '{print $14 + $15}' /proc/$ipid/stat); sleep 2; t2=$(awk '{print $14 + $15}' /proc/$ipid/stat)
check $(( t2 - t1 > 1 )) "idle ibv_rc_pingpong server: $((t2 - t1)) ticks of CPU in 2 s (<= 1)"
if [ "$(id -u)" -eq 0 ]; then
  n=$(fifo_threads)
  check $(( n != 1 )) "as root the engine's thread runs SCHED_FIFO ($n thread(s) of the program)"
  kill $ipid; wait $ipid 2>/dev/null
  idle_server XROCE_ENGINE_RT=0
  n=$(fifo_threads)
  check $(( n != 0 )) "XROCE_ENGINE_RT=0: no SCHED_FIFO thread ($n)"
fi
kill $ipid 2>/dev/null; wait $ipid 2>/dev/null
# The library's threads go by their names in top -H, perf and gdb.
idle_server XROCE_EXIT_REPORT=1
names=$(cat /proc/$ipid/task/*/comm 2>/dev/null | sort -u | tr '\n' ' ')
echo "$names" | grep -q xroce-progress && echo "$names" | grep -q xroce-report
check $? "the library's threads are named: $names"
kill $ipid 2>/dev/null; wait $ipid 2>/dev/null

# A hung program leaves its evidence: with XROCE_EXIT_REPORT, SIGUSR1 (what
# the interop harness's timeout sends) prints the report and ends it as the
# signal would (timeout: 124); without, the signal ends it silently.
next_port
out=$(XROCE_EXIT_REPORT=1 timeout -s USR1 -k 5 1 "$run" --addr 127.0.0.1 ibv_rc_pingpong -d xroce0 -g 0 -p $port 2>&1); rc=$?
echo "$out" | grep -q "xroce: report at SIGUSR1: link tx" && echo "$out" | grep -q "qp_state"
check $(( (rc != 124) + $? )) "XROCE_EXIT_REPORT: SIGUSR1 prints the report of a waiting program, which then ends (rc $rc)"
next_port
out=$(timeout -s USR1 -k 5 1 "$run" --addr 127.0.0.1 ibv_rc_pingpong -d xroce0 -g 0 -p $port 2>&1); rc=$?
echo "$out" | grep -q "report at"
check $(( (rc != 124) + !$? )) "without XROCE_EXIT_REPORT SIGUSR1 just ends the program (rc $rc)"

# Without -g the program asks for an IB LID path: refused at RTR, clearly.
next_port
timeout 20 "$run" --addr 127.0.0.1 ibv_rc_pingpong -d xroce0 -n 5 -p $port >/tmp/xrv_s.$$ 2>&1 &
spid=$!
wait_listen
timeout 20 "$run" --addr 127.0.0.2 ibv_rc_pingpong -d xroce0 -n 5 -p $port 127.0.0.1 >/tmp/xrv_c.$$ 2>&1; crc=$?
kill $spid 2>/dev/null; wait $spid 2>/dev/null
# (the server reaches RTR first and says so; the client then loses its peer)
cat /tmp/xrv_s.$$ /tmp/xrv_c.$$ | grep -q "no GRH (is_global 0"; check $(( (crc == 0) + $? )) "ibv_rc_pingpong without -g: refused at RTR with a message"
rm -f /tmp/xrv_s.$$ /tmp/xrv_c.$$

# xroce-perf pingpong between two processes whose links report different
# MTUs (lo's 65536 for 127.0.0.1, the 1500 guess for 127.0.0.2): both take
# ibv_rc_pingpong's default path MTU, 1024 (each took its own link's and
# the larger side's packets drew NAKs: "remote invalid request").
next_port
"$bin/xroce-perf" pingpong --link udp --no-host-path --bind 127.0.0.1 -n 50 -p $port >/tmp/xrv_s.$$ 2>&1 &
spid=$!
wait_listen
timeout 30 "$bin/xroce-perf" pingpong --link udp --no-host-path --bind 127.0.0.2 -n 50 -p $port 127.0.0.1 >/tmp/xrv_c.$$ 2>&1; crc=$?
wait $spid; src=$?
check $((crc + src)) "xroce-perf pingpong, default MTU, ends with different link MTUs"
[ $((crc + src)) = 0 ] || cat /tmp/xrv_c.$$ /tmp/xrv_s.$$
rm -f /tmp/xrv_s.$$ /tmp/xrv_c.$$

echo "programs: $((SECONDS - t0)) s"
exit $fail
