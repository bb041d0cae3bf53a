#!/usr/bin/env bash
# `make demo`: what xroce can show today. Until the transport engine lands,
# the demo is the wire layer: one packet of every opcode, written to a pcap,
# parsed back by xroce and dissected by Wireshark's tshark.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
out=build/demo
mkdir -p "$out"

echo "== xroce wire layer: one RoCE v2 packet of every opcode =="
"$bin/xroce-gen" --all --size 32 --pcap "$out/all.pcap" --hex "$out/all.hex"
echo
echo "== parsed back by xroce-decode (ICRC checked) =="
"$bin/xroce-decode" "$out/all.pcap" | cut -c1-150
if command -v tshark >/dev/null; then
  echo
  echo "== dissected by tshark (Wireshark) =="
  tshark -r "$out/all.pcap" 2>/dev/null | head -40
fi
echo
echo "pcap: $out/all.pcap   hex (\$readmemh): $out/all.hex"
echo
echo "== RC transport over the in-memory link (short run; make bench for figures) =="
"$bin/bench-rc" --quick
