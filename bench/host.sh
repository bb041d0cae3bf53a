#!/usr/bin/env bash
# The host link (issue 16) against its baselines, all measured in this run:
# two xroce-perf processes over --link host, the same work inside one
# process on the mem link, and two processes over the UDP link on loopback
# through the kernel (--no-host-path). 64 KiB WRITE goodput and 8-byte
# WRITE latency (typical half round trip).
#
# Fair by construction: every case runs the same two busy threads, one per
# side, each running its own engine inline (xroce-perf's default
# --progress=inline): the mem link as two threads of one process, the
# others as two single-threaded processes (plus the host link's control
# thread, asleep unless a peer connects or exits). Nothing is pinned. The
# machine may be shared, so figures are never compared across runs: each
# round runs the three cases back to back, and a ratio is the median over
# the rounds of that round's ratio (the cases of a round saw the same load).
# XROCE_BENCH_BOOST=1 (root) runs it all in a session of its own at
# autogroup nice -20: on a machine others load, both cases then keep their
# cores (nice alone does nothing across sessions with autogroup on).
#   usage: bench/host.sh [BIN_DIR] [--quick]   (--quick: one short round, a smoke run)
set -euo pipefail
if [ "${XROCE_BENCH_BOOST:-}" = 1 ] && [ -z "${XROCE_BENCH_BOOSTED:-}" ]; then
  exec env XROCE_BENCH_BOOSTED=1 setsid -w bash -c 'echo -20 > /proc/self/autogroup && exec "$0" "$@"' "$0" "$@"
fi
boost=$([ -n "${XROCE_BENCH_BOOSTED:-}" ] && echo "autogroup nice -20" || echo "not boosted")
bin=${1:-build/bin}
quick=${2:-}
secs=2 lat_iters=20000 rounds=3
[ "$quick" = --quick ] && secs=1 lat_iters=2000 rounds=1
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=19700

# one KIND TEST ARGS...: a result in $tmp/KIND.TEST.N.json
one() {
  local kind=$1 test=$2 n=$3
  shift 3
  local out=$tmp/$kind.$test.$n.json
  port=$((port + 1))
  case $kind in
    mem) "$bin/xroce-perf" $test --link mem "$@" --out_json_file="$out" >/dev/null ;;
    host|udp)
      local a=(--link host --bind 10.250.6.1) b=(--link host --bind 10.250.6.2)
      [ $kind = udp ] && a=(--link udp --no-host-path --bind 127.0.0.1) b=(--link udp --no-host-path --bind 127.0.0.2)
      "$bin/xroce-perf" $test "${a[@]}" -p $port "$@" >/dev/null 2>&1 &
      "$bin/xroce-perf" $test "${b[@]}" -p $port "$@" --out_json_file="$out" 127.0.0.1 >/dev/null
      wait $! ;;
  esac
}

for n in $(seq $rounds); do
  for kind in mem host udp; do
    one $kind write_bw $n -s 65536 -m 4096 -D $secs
    one $kind write_lat $n -s 8 -m 4096 -n $lat_iters
  done
done

python3 - "$tmp" "$rounds" "$(nproc)" "$boost" <<'PY'
import json, statistics, sys
tmp, rounds, cpus, boost = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def val(kind, test, n):
    r = json.load(open(f"{tmp}/{kind}.{test}.{n}.json"))["results"][-1]
    return r["BW_average"] * (1 << 20) / 1e9 if test == "write_bw" else r["t_typical"]
def med(kind, test):
    return statistics.median(val(kind, test, n) for n in range(1, rounds + 1))
def ratio(a, b, test):   # median over rounds of a/b within each round
    return statistics.median(val(a, test, n) / val(b, test, n) for n in range(1, rounds + 1))
bw = {k: med(k, "write_bw") for k in ("mem", "host", "udp")}
lat = {k: med(k, "write_lat") for k in ("mem", "host", "udp")}
r_bw, r_lat = ratio("host", "mem", "write_bw"), ratio("host", "mem", "write_lat")
def verdict(ok):
    return "PASS" if ok else "FAIL"
print(f"each case: 2 busy threads (one per side, inline progress); mem: 1 process, host/UDP: 2 processes; "
      f"{cpus} CPUs, {rounds} round(s) interleaved, {boost}")
print(f"write_bw 64 KiB (GB/s, median):  mem link {bw['mem']:.2f}   host link {bw['host']:.2f}   UDP loopback {bw['udp']:.2f}")
print(f"write_lat 8 B (us, median):      mem link {lat['mem']:.2f}   host link {lat['host']:.2f}   UDP loopback {lat['udp']:.2f}")
print(f"host link bandwidth = {r_bw:.2f} of the mem link's   target >= 0.80: {verdict(r_bw >= 0.8)}")
print(f"host link latency   = {r_lat:.2f}x the mem link's     target <= 1.50: {verdict(r_lat <= 1.5)}")
print(f"host link vs UDP on loopback: {ratio('host', 'udp', 'write_bw'):.1f}x the bandwidth, "
      f"{ratio('udp', 'host', 'write_lat'):.1f}x less latency")
PY
