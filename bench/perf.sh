#!/usr/bin/env bash
# xroce-perf on the in-memory link against the machine's own bounds, all
# measured in this run: RDMA WRITE goodput of 64 KiB messages as a fraction
# of one core's copy+CRC rate for the same bytes, and the 8-byte WRITE
# latency (half round trip, busy polling) against a cache-line ping-pong
# between two threads.
#   usage: bench/perf.sh [BIN_DIR] [--quick]
set -euo pipefail
bin=${1:-build/bin}
quick=${2:-}
secs=3 lat_iters=100000
[ "$quick" = --quick ] && secs=1 lat_iters=5000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bound=$("$bin/bench-bound" ${quick:+--quick} --size 65536 --mtu 4096)
echo "$bound"
crc=$(sed -n 's/^copy_crc_GBps=//p' <<<"$bound")
line=$(sed -n 's/^cacheline_half_rtt_us=//p' <<<"$bound")

"$bin/xroce-perf" write_bw --link mem -s 65536 -m 4096 -D "$secs" --out_json_file="$tmp/bw.json"
"$bin/xroce-perf" write_lat --link mem -s 8 -m 4096 -n "$lat_iters" --out_json_file="$tmp/lat.json"

python3 - "$tmp/bw.json" "$tmp/lat.json" "$crc" "$line" <<'PY'
import json, sys
bw = json.load(open(sys.argv[1]))["results"][-1]
lat = json.load(open(sys.argv[2]))["results"][-1]
crc, line = float(sys.argv[3]), float(sys.argv[4])
gbps = bw["BW_average"] * (1 << 20) / 1e9 if bw["unit"] == "MiB/sec" else bw["BW_average"] / 8
print()
print(f"write_bw 64 KiB, mem link: {gbps:.2f} GB/s = {gbps / crc:.2f} of one core's copy+CRC ({crc:.2f} GB/s)"
      f"   [target >= 0.50]")
print(f"write_lat 8 B, mem link:   {lat['t_typical']:.3f} us half round trip = {lat['t_typical'] / line:.1f}x "
      f"a cache-line ping-pong ({line:.3f} us)   [target <= 1 us]")
PY
