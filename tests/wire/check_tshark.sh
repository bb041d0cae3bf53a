#!/usr/bin/env bash
# Independent checker 1: Wireshark's dissector (tshark) reads what xroce-gen
# writes. Every frame must dissect as RoCE v2 with no malformed or error
# expert item, and with the opcode, dest QP, PSN and ICRC xroce built.
set -euo pipefail
gen=$1
decode=$(dirname "$gen")/xroce-decode
command -v tshark >/dev/null || { echo "FAIL: tshark not installed (scripts/deps.sh)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pcap=$work/all.pcap

# Every opcode over IPv4; again over IPv6 with a VLAN tag and PCP, once
# with the UDP checksum 0 (as rxe sends) and once computed; a run of PSNs
# that wraps at 2^24; 4096-byte MTU packets.
"$gen" -q --all --pcap "$pcap" --qpn 0x123456 --psn 0x10
"$gen" -q --all --append --pcap "$pcap" --src fd00::1 --dst fd00::2 --vlan 100 --pcp 3 --qpn 0xabcdef --psn 0xfffffe
"$gen" -q --all --append --pcap "$pcap" --src 2001:db8::1 --dst 2001:db8::2 --udp-csum --qpn 0x77 --psn 0x800000
"$gen" -q -o rdma_write_middle --mtu 4096 --count 4 --psn 0xfffffe --append --pcap "$pcap"
"$gen" -q -o send_only --size 4096 --mtu 4096 --udp-csum --append --pcap "$pcap"

total=$("$decode" "$pcap" | wc -l || true)
[ "$total" -gt 70 ] || { echo "FAIL: only $total frames written"; exit 1; }

# Wireshark validates UDP checksums here, so the computed ones are checked
# too. RoCE v2 over IPv6 sends UDP checksum 0 (rxe does, and Linux accepts
# it for the 4791 tunnel socket); Wireshark flags that as an error by the
# general IPv6 rule, so that one expert item is the only one tolerated.
filter='_ws.malformed || udp.checksum.bad || (_ws.expert.severity >= "error" && !(ipv6 && udp.checksum == 0))'
bad=$(tshark -o udp.check_checksum:TRUE -r "$pcap" -Y "$filter" 2>/dev/null | wc -l)
if [ "$bad" -ne 0 ]; then
  echo "FAIL: tshark reports $bad malformed/error frames:"
  tshark -o udp.check_checksum:TRUE -r "$pcap" -Y "$filter" -V 2>/dev/null | head -80
  exit 1
fi

# Field-by-field comparison: xroce's view vs Wireshark's view.
tshark -r "$pcap" -T fields -E separator=' ' -e frame.number -e infiniband.bth.opcode \
  -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.invariant.crc 2>/dev/null > "$work/ws.txt"
"$decode" "$pcap" > "$work/xr.txt" || true  # rejections are reported below
python_cmp=$(/usr/bin/python3 - "$work/ws.txt" "$work/xr.txt" <<'PY'
import re, sys
ws = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4:
        ws[int(f[0])] = f[1:]
crcs = 0
for line in open(sys.argv[2]):
    f = line.split()
    n = int(f[0]) + 1
    if f[1] != "ok":
        print(f"frame {n}: xroce rejected its own packet: {line.strip()}")
        continue
    fields = dict(kv.split("=", 1) for kv in f[4:] if "=" in kv)
    op, qpn, psn, crc = int(f[2], 16), int(fields["qpn"], 16), int(fields["psn"], 16), int(fields["icrc"], 16)
    if n not in ws:
        print(f"frame {n}: tshark did not dissect a BTH")
        continue
    w = ws[n]
    if int(w[0]) != op: print(f"frame {n}: opcode {op:#x} vs tshark {w[0]}")
    if int(w[1], 16) != qpn: print(f"frame {n}: qpn {qpn:#x} vs tshark {w[1]}")
    if int(w[2]) != psn: print(f"frame {n}: psn {psn:#x} vs tshark {w[2]}")
    if len(w) > 3:
        # Wireshark shows the LSB-first wire bytes read big-endian.
        if int.from_bytes(int(w[3], 16).to_bytes(4, "big"), "little") != crc:
            print(f"frame {n}: icrc {crc:#010x} vs tshark {w[3]}")
        crcs += 1
print(f"compared {n} frames, {crcs} ICRCs", file=sys.stderr)
PY
)
if [ -n "$python_cmp" ]; then
  echo "FAIL: xroce and tshark disagree:"
  echo "$python_cmp" | head -40
  exit 1
fi
echo "PASS: $total frames dissected by tshark $(tshark --version 2>/dev/null | head -1 | awk '{print $3}') with matching fields"
