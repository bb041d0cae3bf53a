#!/usr/bin/python3
"""Independent checker 2: scapy (Debian's python3-scapy), whose RoCE layer
recomputes the ICRC from scratch.

1. Every frame xroce-gen writes (all opcodes, several field settings) has
   the ICRC that scapy computes for it, and scapy reads the BTH fields xroce
   wrote.
2. Packets that scapy builds (random opcodes, PSNs, QPNs, payloads, and a
   CNP from scapy's own helper) are accepted by xroce's parser with the
   same fields.
"""
import os
import random
import subprocess
import sys
import tempfile

import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, Dot1Q, IP, UDP, Raw, rdpcap, wrpcap, raw  # noqa: E402
from scapy.contrib.roce import BTH, AETH, cnp  # noqa: E402

gen, decode = sys.argv[1], sys.argv[2]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def decode_lines(path, mtu=None):
    cmd = [decode] + (["--mtu", str(mtu)] if mtu else []) + [path]
    out = subprocess.run(cmd, capture_output=True, text=True)
    return out.stdout.splitlines()


with tempfile.TemporaryDirectory() as d:
    # ---- 1. scapy checks what xroce writes ----
    pcap = os.path.join(d, "xroce.pcap")
    runs = [
        ["--all", "--qpn", "0x123456", "--psn", "0x10", "--pattern", "random"],
        ["--all", "--vlan", "7", "--pcp", "5", "--tos", "0x02", "--ttl", "1",
         "--ip-id", "0x1234", "--qpn", "1", "--psn", "0xffffff", "--se", "--ackreq"],
        ["-o", "rc_rdma_write_first", "--mtu", "4096", "--count", "3"],
        ["-o", "rc_send_only", "--size", "1", "--udp-csum", "--fecn", "--becn"],
        ["-o", "rc_send_only", "--size", "0"],
    ]
    for i, args in enumerate(runs):
        subprocess.run([gen, "-q", "--pcap", pcap] + (["--append"] if i else []) + args, check=True)
    frames = rdpcap(pcap)
    xr = decode_lines(pcap)
    if len(frames) != len(xr) or len(frames) < 80:
        fail(f"{len(frames)} frames in pcap, xroce-decode saw {len(xr)}")
    icrc_checked = 0
    for n, (pkt, line) in enumerate(zip(frames, xr)):
        if BTH not in pkt:
            fail(f"frame {n}: scapy found no BTH")
            continue
        wire_icrc = bytes(pkt)[-4:]
        redo = pkt.copy()
        redo[BTH].icrc = None
        scapy_icrc = raw(redo)[-4:]
        if scapy_icrc != wire_icrc:
            fail(f"frame {n} opcode {pkt[BTH].opcode:#x}: ICRC {wire_icrc.hex()} but scapy computes {scapy_icrc.hex()}")
        icrc_checked += 1
        f = line.split()
        fields = dict(kv.split("=", 1) for kv in f[4:] if "=" in kv)
        b = pkt[BTH]
        if f[1] != "ok" or int(f[2], 16) != b.opcode or int(fields["qpn"], 16) != b.dqpn \
                or int(fields["psn"], 16) != b.psn or int(fields["pad"]) != b.padcount:
            fail(f"frame {n}: xroce '{line}' vs scapy opcode={b.opcode:#x} qpn={b.dqpn:#x} psn={b.psn:#x} pad={b.padcount}")

    # ---- 2. xroce parses what scapy builds ----
    rnd = random.Random(4791)
    ops = {  # opcode: (ext header bytes, payload rule)
        0x04: (0, "0..mtu"), 0x05: (4, "0..mtu"), 0x0A: (16, "0..mtu"),
        0x00: (0, "mtu"), 0x06: (16, "mtu"), 0x02: (0, "1..mtu"),
        0x0C: (16, "none"), 0x10: (4, "0..mtu"), 0x11: (4, "none"),
        0x12: (12, "none"), 0x13: (28, "none"), 0x14: (28, "none"),
        0x24: (0, "0..mtu"), 0x64: (8, "0..mtu"),
    }
    mtu = 1024
    built = []
    for i in range(200):
        op = rnd.choice(sorted(ops))
        hdr, rule = ops[op]
        plen = {"none": 0, "mtu": mtu, "1..mtu": rnd.randint(1, mtu),
                "0..mtu": rnd.randint(0, mtu)}[rule]
        pad = (-plen) & 3
        body = bytes(rnd.getrandbits(8) for _ in range(hdr + plen)) + b"\0" * pad
        if op in (0x11, 0x12, 0x10):
            body = bytes([0x1F]) + body[1:]
        psn, qpn = rnd.getrandbits(24), rnd.randint(1, 0xFFFFFF)
        ip = IP(src="10.0.0.%d" % rnd.randint(1, 254), dst="10.0.1.1", flags="DF",
                id=rnd.getrandbits(16), tos=rnd.getrandbits(8), ttl=rnd.randint(1, 255))
        p = Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / ip / \
            UDP(sport=rnd.randint(49152, 65535), dport=4791, chksum=0) / \
            BTH(opcode=op, padcount=pad, dqpn=qpn, psn=psn, ackreq=rnd.getrandbits(1),
                solicited=rnd.getrandbits(1)) / Raw(body)
        built.append((Ether(raw(p)), op, qpn, psn, plen))
    c = Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / \
        IP(src="10.0.0.1", dst="10.0.1.1", flags="DF", tos=0xC2) / \
        UDP(sport=0, dport=4791, chksum=0) / cnp(0x118)
    built.append((Ether(raw(c)), 0x81, 0x118, 0, 0))
    spcap = os.path.join(d, "scapy.pcap")
    wrpcap(spcap, [b[0] for b in built])
    xr = decode_lines(spcap, mtu)
    if len(xr) != len(built):
        fail(f"xroce-decode printed {len(xr)} lines for {len(built)} scapy frames")
    for n, (line, (_, op, qpn, psn, plen)) in enumerate(zip(xr, built)):
        f = line.split()
        if f[1] != "ok":
            fail(f"scapy frame {n} (opcode {op:#x}, payload {plen}) rejected: {line}")
            continue
        fields = dict(kv.split("=", 1) for kv in f[4:] if "=" in kv)
        got = (int(f[2], 16), int(fields["qpn"], 16), int(fields["psn"], 16), int(fields["payload"]))
        if got != (op, qpn, psn, plen):
            fail(f"scapy frame {n}: built {(op, qpn, psn, plen)}, xroce parsed {got}")

print(f"scapy checked {icrc_checked} xroce ICRCs; xroce parsed {len(built)} scapy frames")
if failures:
    print(f"FAIL: {len(failures)} disagreement(s)")
    sys.exit(1)
print("PASS")
