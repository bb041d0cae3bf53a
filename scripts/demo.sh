#!/usr/bin/env bash
# `make demo`: xroce's main job on the embedded default, the in-memory link.
# A short perftest-style sweep (bandwidth and latency of WRITE, READ, SEND
# and atomics), every payload verified end to end, the engine's counters
# read through its register file, a pcap of the first packets that
# Wireshark's tshark dissects as RoCE v2, and an 8-to-1 incast through the
# switch model with and without DCQCN side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
out=build/demo
mkdir -p "$out"
perf() { "$bin/xroce-perf" "$@" --link mem --verify; }
table() { grep -E '^ #bytes|^ [0-9]|verification' || true; }

echo "xroce: a RoCE v2 RDMA NIC in software. Two engines joined by the in-memory link;"
echo "every number below comes from real RC transfers through the register file, rings and wire format."
echo
echo "== RDMA WRITE bandwidth (full perftest output, with the engine's counters and a pcap) =="
perf write_bw -s 65536 -n 4000 --counters --pcap "$out/first.pcap" --pcap-frames 24
for t in read_bw send_bw atomic_bw; do
  echo
  echo "== $t =="
  perf $t -n 4000 | table
done
for t in write_lat read_lat send_lat atomic_lat; do
  echo
  echo "== $t =="
  perf $t -n 2000 | table
done
echo
echo "== the first packets on the wire ($out/first.pcap) =="
if command -v tshark >/dev/null; then
  tshark -r "$out/first.pcap" 2>/dev/null | head -24
else
  echo "(tshark is not installed: scripts/deps.sh installs it)"
fi
echo
echo "== congestion: 8 senders into one 10 Gb/s port of the switch model, with and without DCQCN =="
echo "(simulated fabric time; the receiver answers ECN marks with CNPs, the senders' engines cut and pace)"
cc_run() { "$bin/xroce-perf" congestion -N 8 -D 50ms --no-per-qp "$@" | grep -E '^(goodput|Jain|drops|ECN|bottleneck queue)'; }
printf -- '-- DCQCN on --\n'; cc_run
printf -- '-- DCQCN off --\n'; cc_run --no-dcqcn
echo
echo "== the wire layer: one packet of every opcode, checked by xroce's parser =="
"$bin/xroce-gen" -q --all --pcap "$out/all-opcodes.pcap"
ok=$("$bin/xroce-decode" "$out/all-opcodes.pcap" | grep -c ' ok ' || true)
echo "$ok opcodes built and parsed back with their ICRC: $out/all-opcodes.pcap"
