#!/usr/bin/env bash
# CNPs against the independent checkers: the engine's own CNPs (answering
# CE-marked data) dissected by tshark and their ICRC recomputed by scapy;
# a CNP built by scapy's cnp() helper taken by the engine (it cuts the rate).
set -euo pipefail
bin=$1
command -v tshark >/dev/null || { echo "FAIL: tshark not installed (scripts/deps.sh)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin" --emit "$work/engine.pcap"

# Wireshark: every CNP dissects (no malformed or error items), opcode 0x81,
# P_Key 0xFFFF, PSN 0, to the peer's QP, UDP length 40; DSCP 48 and ECT(0) by
# default (this Wireshark has no BECN field: scapy checks it below).
read -r qa qb < <("$bin" --qpns)
tshark -r "$work/engine.pcap" -Y 'infiniband.bth.opcode == 0x81' -T fields -E separator=' ' \
  -e ip.src -e ip.dsfield.dscp -e ip.dsfield.ecn -e infiniband.bth.p_key \
  -e infiniband.bth.destqp -e infiniband.bth.psn -e udp.length 2>/dev/null > "$work/cnp.txt"
bad=$(tshark -r "$work/engine.pcap" -Y '_ws.malformed || _ws.expert.severity >= "error"' 2>/dev/null | wc -l)
[ "$bad" -eq 0 ] || { echo "FAIL: tshark reports $bad malformed/error frames"; exit 1; }
n=$(wc -l < "$work/cnp.txt")
[ "$n" -ge 1 ] || { echo "FAIL: tshark found no CNP in the engine's capture"; exit 1; }
/usr/bin/python3 - "$work/cnp.txt" "$qa" "$qb" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
qa, qb = int(sys.argv[2]), int(sys.argv[3])
bad = 0
for r in rows:
    src, dscp, ecn, pkey, dqp, psn, ulen = r
    want_dqp = qb if src == "10.0.0.1" else qa
    ok = (dscp == "48" and ecn == "2" and int(pkey, 0) == 0xFFFF
          and int(dqp, 0) == want_dqp and psn == "0" and ulen == "40")
    if not ok:
        bad += 1
        print("FAIL: CNP fields", r, "want dscp 48 ecn 2 pkey 0xffff destqp", want_dqp, "psn 0 udp.length 40")
print(f"tshark: {len(rows)} CNPs dissected")
sys.exit(1 if bad else 0)
PY

# scapy: the ICRC of every engine CNP recomputed; then a CNP of its own.
/usr/bin/python3 - "$work/engine.pcap" "$work/scapy.pcap" "$qb" <<'PY'
import sys, logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, rdpcap, wrpcap, raw
from scapy.contrib.roce import BTH, cnp
n = 0
for p in rdpcap(sys.argv[1]):
    if BTH in p and p[BTH].opcode == 0x81:
        redo = p.copy()
        redo[BTH].icrc = None
        if not p[BTH].becn or p[BTH].fecn:
            print("FAIL: engine CNP without BECN (or with FECN)")
            sys.exit(1)
        if raw(redo)[-4:] != bytes(p)[-4:]:
            print("FAIL: engine CNP ICRC", bytes(p)[-4:].hex(), "scapy", raw(redo)[-4:].hex())
            sys.exit(1)
        n += 1
print(f"scapy: {n} engine CNP ICRCs match")
# To B's QP from A's address: TOS 0x89 (DSCP 34, ECT(1)) and sport 56238 as
# in Mellanox's published CNP example, so not the values xroce sends.
c = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / \
    IP(src="10.0.0.1", dst="10.0.0.2", flags="DF", tos=0x89, ttl=0x20) / \
    UDP(sport=56238, dport=4791, chksum=0) / cnp(int(sys.argv[3]))
wrpcap(sys.argv[2], [Ether(raw(c))])
PY
"$bin" --inject "$work/scapy.pcap"
echo PASS
