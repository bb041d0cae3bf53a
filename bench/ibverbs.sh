#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# perftest's own ib_write_lat (8 B) and ib_write_bw (64 KiB), unmodified,
# over the drop-in libibverbs, against xroce-perf's write_lat/write_bw on
# the same link in the same run (two processes of this host, the UDP
# link's shared-memory path), rounds alternating; medians, ratios and the
# issue's targets (latency within 1.2x, bandwidth >= 0.9). Then the CPU an
# idle program costs: an ibv_rc_pingpong server waiting on TCP, its
# utime+stime over a few seconds (target: none).
#   bench/ibverbs.sh [BINDIR] [ROUNDS]
# As root it runs in a network namespace of its own (no clash with other
# users of 127.0.0.1); otherwise on this namespace's loopback.
set -u
bin=${1:-build/bin}
rounds=${2:-3}
run="$bin/xroce-run"
perf="$bin/xroce-perf"
lat_n=${LAT_N:-5000}
# perftest's own default for the bandwidth tests: at 2 GB/s, 2000 messages
# lasted 65 ms, and the first wakeups of the engine threads weighed in it.
bw_n=${BW_N:-5000}
for p in ib_write_lat ib_write_bw ibv_rc_pingpong; do
  command -v $p >/dev/null || { echo "bench/ibverbs: $p missing (perftest, ibverbs-utils)"; exit 1; }
done
ns=() ns_name=
if [ "$(id -u)" -eq 0 ]; then
  ns_name=xbench$$
  ip netns add "$ns_name" && ip -n "$ns_name" link set lo up || exit 1
  ns=(ip netns exec "$ns_name")
fi
work=$(mktemp -d)
cleanup() {
  [ -z "$ns_name" ] || { ip netns pids "$ns_name" | xargs -r kill -9 2>/dev/null; ip netns del "$ns_name"; }
  rm -rf "$work"
}
trap cleanup EXIT
port=21000

pair() {   # out-file, field, server cmd... -- client cmd... : prints the client's result field
  local out=$1 field=$2; shift 2
  local s=() c=()
  while [ "$1" != -- ]; do s+=("$1"); shift; done; shift
  c=("$@")
  timeout 120 "${ns[@]}" "${s[@]}" >"$work/s" 2>&1 &
  local spid=$! i
  for i in $(seq 100); do "${ns[@]}" ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
  timeout 120 "${ns[@]}" "${c[@]}" 127.0.0.1 >"$work/c" 2>&1
  wait $spid
  local v
  v=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ ' "$work/c" | tail -1 | awk -v f="$field" '{print $f}')
  if [ -n "$v" ]; then echo "$v" >>"$out"; else
    echo "  (a round of ${c[*]:0:3} gave no result: $(grep -m1 -iE 'error|fail|couldn' "$work/c"))" >&2; fi
}
median() { sort -g "$1" | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : "nan")}'; }

for r in $(seq "$rounds"); do
  port=$((port + 1))
  # Latency: t_typical (column 5), microseconds.
  pair "$work/lat_perf" 5 "$perf" write_lat --bind 127.0.0.1 -s 8 -n "$lat_n" -p $port -- \
    "$perf" write_lat --bind 127.0.0.2 -s 8 -n "$lat_n" -p $port
  port=$((port + 1))
  pair "$work/lat_ibv" 5 "$run" --addr 127.0.0.1 ib_write_lat -d xroce0 -F -s 8 -n "$lat_n" -p $port -- \
    "$run" --addr 127.0.0.2 ib_write_lat -d xroce0 -F -s 8 -n "$lat_n" -p $port
  port=$((port + 1))
  # Bandwidth: BW average (column 4), MB/s.
  pair "$work/bw_perf" 4 "$perf" write_bw --bind 127.0.0.1 -s 65536 -n "$bw_n" -p $port -- \
    "$perf" write_bw --bind 127.0.0.2 -s 65536 -n "$bw_n" -p $port
  port=$((port + 1))
  pair "$work/bw_ibv" 4 "$run" --addr 127.0.0.1 ib_write_bw -d xroce0 -F -s 65536 -n "$bw_n" -p $port -- \
    "$run" --addr 127.0.0.2 ib_write_bw -d xroce0 -F -s 65536 -n "$bw_n" -p $port
done
lp=$(median "$work/lat_perf") li=$(median "$work/lat_ibv")
bp=$(median "$work/bw_perf") bi=$(median "$work/bw_ibv")
echo "rounds $rounds (medians; each round: xroce-perf then perftest, same link, same run)"
echo "  raw: lat perf [$(tr '\n' ' ' <"$work/lat_perf")] ibv [$(tr '\n' ' ' <"$work/lat_ibv")]" \
     " bw perf [$(tr '\n' ' ' <"$work/bw_perf")] ibv [$(tr '\n' ' ' <"$work/bw_ibv")]"
awk -v lp="$lp" -v li="$li" 'BEGIN { r = (lp > 0) ? li / lp : 0;
  printf "write_lat 8 B:    ib_write_lat %.2f us, xroce-perf %.2f us: %.2fx (target <= 1.2x: %s)\n",
    li, lp, r, (r > 0 && r <= 1.2) ? "met" : "NOT met" }'
# ib_write_lat spins on memory, so the engine's thread must be woken for
# every WRITE that lands (xroce-perf's own loop runs the engine while it
# waits and pays none): a cross-core wakeup is its floor, measured here.
wake=$("$bin/bench-bound" --quick | sed -n 's/^wakeup_us=//p')
awk -v li="$li" -v w="$wake" 'BEGIN { if (w > 0)
  printf "                  one cross-core wakeup on this machine: %.2f us; ib_write_lat = %.2f wakeups per half round trip\n", w, li / w }'
awk -v bp="$bp" -v bi="$bi" 'BEGIN { r = (bp > 0) ? bi / bp : 0;
  printf "write_bw 64 KiB:  ib_write_bw %.0f MB/s, xroce-perf %.0f MB/s: %.2f (target >= 0.9: %s)\n",
    bi, bp, r, (r >= 0.9) ? "met" : "NOT met" }'

# Idle: a server waiting for its client on TCP costs nothing (the engine
# thread sleeps without a timeout when no QP has work).
port=$((port + 1))
"${ns[@]}" "$run" --addr 127.0.0.1 ibv_rc_pingpong -d xroce0 -g 0 -p $port >/dev/null 2>&1 &
ipid=$!
for i in $(seq 100); do "${ns[@]}" ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
sleep 0.5
ticks() { awk '{print $14 + $15}' "/proc/$ipid/stat"; }
t1=$(ticks); sleep 3; t2=$(ticks)
kill $ipid 2>/dev/null; wait $ipid 2>/dev/null
hz=$(getconf CLK_TCK)
awk -v d=$((t2 - t1)) -v hz="$hz" 'BEGIN { printf "idle ibv_rc_pingpong server: %d ms CPU in 3 s (target 0: %s)\n",
  d * 1000 / hz, d == 0 ? "met" : "NOT met" }'
