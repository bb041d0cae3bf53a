#!/usr/bin/env bash
# The host link (issue 16) against its baselines, all measured in this run
# and interleaved round by round (the machine is shared: the median of the
# rounds is compared): two xroce-perf processes over --link host, the same
# work inside one process on the mem link, and two processes over the UDP
# link on loopback through the kernel (--no-host-path). 64 KiB WRITE
# goodput and 8-byte WRITE latency (typical half round trip).
#   usage: bench/host.sh [BIN_DIR] [--quick]
set -euo pipefail
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

python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def med(kind, test, key):
    vals = []
    for n in range(1, rounds + 1):
        r = json.load(open(f"{tmp}/{kind}.{test}.{n}.json"))["results"][-1]
        vals.append(r[key] * (1 << 20) / 1e9 if key == "BW_average" else r[key])
    return statistics.median(vals)
bw = {k: med(k, "write_bw", "BW_average") for k in ("mem", "host", "udp")}
lat = {k: med(k, "write_lat", "t_typical") for k in ("mem", "host", "udp")}
print(f"write_bw 64 KiB (GB/s, median of {rounds}):  mem link {bw['mem']:.2f}   host link {bw['host']:.2f}   UDP loopback {bw['udp']:.2f}")
print(f"write_lat 8 B (us, median of {rounds}):      mem link {lat['mem']:.2f}   host link {lat['host']:.2f}   UDP loopback {lat['udp']:.2f}")
print(f"host link bandwidth = {bw['host'] / bw['mem']:.2f} of the mem link's   [target >= 0.80]")
print(f"host link latency   = {lat['host'] / lat['mem']:.2f}x the mem link's     [target <= 1.5]")
print(f"host link vs UDP on loopback: {bw['host'] / bw['udp']:.1f}x the bandwidth, {lat['udp'] / lat['host']:.1f}x less latency")
PY
