#!/usr/bin/python3
"""Hostile RoCE v2 traffic for tests/net/hostile.sh (scapy for the sockets,
the checks of its ICRC and the sniffing; headers packed here so every field,
length and checksum can be made wrong on purpose).

  hostile_gen.py capture --iface IF --dst IP --count N --timeout S --out F.pcap
  hostile_gen.py attack  --link udp|raw --iface IF --dmac MAC ... --plan F.json

`attack` builds a bounded, seeded list of frames, predicts for each one the
engine counter that must account for it (the parser's verdict comes from
xroce-decode run over the frames as the engine will see them; the QP-level
verdict from the receive checks' documented order), writes that plan, then
sends the frames interleaved and paced. See hostile.sh for the reasoning on
which spoofed packets are fair game.
"""
import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from scapy.all import Ether, IP, UDP, Raw, rdpcap, sniff, wrpcap  # noqa: E402
import scapy.contrib.roce as sroce  # noqa: E402

ROCE_PORT = 4791
MAX_FRAME = 4224            # XR_MAX_FRAME: the engine's frame buffer
PSN_MASK = 0xFFFFFF

# RC opcodes (IBTA table 35)
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
READ_REQ, RR_FIRST, RR_MIDDLE, RR_LAST, RR_ONLY = 0x0C, 0x0D, 0x0E, 0x0F, 0x10
ACK, ATOMIC_ACK, CMP_SWAP, FETCH_ADD = 0x11, 0x12, 0x13, 0x14
SEND_ONLY_INV, SEND_ONLY_IMM, WRITE_ONLY_IMM = 0x17, 0x05, 0x0B
UC_SEND_ONLY, UC_WRITE_ONLY, UD_SEND_ONLY, CNP = 0x24, 0x2A, 0x64, 0x81
KNOWN = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
         0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
         0x29, 0x2A, 0x2B, 0x64, 0x65, 0x81}
RESPONSES = {RR_FIRST, RR_MIDDLE, RR_LAST, RR_ONLY, ACK, ATOMIC_ACK}


def psn(x):
    return x & PSN_MASK


# ---- headers ----

def bth(op, qpn, p, pkey=0xFFFF, tver=0, pad=0, ackreq=0, se=0):
    return struct.pack("!BBHII", op, se << 7 | pad << 4 | tver, pkey, qpn & PSN_MASK,
                       ackreq << 31 | psn(p))


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def aeth(syn, msn=0):
    return struct.pack("!I", syn << 24 | (msn & PSN_MASK))


def atomiceth(va, rkey, swap_add, cmp=0):
    return struct.pack("!QIQQ", va, rkey, swap_add, cmp)


def ip_csum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, plen, proto=17, ident=0, df=True, tos=0, ttl=64, frag=0, csum=None, ihl=5, ver=4, opts=b""):
    h = struct.pack("!BBHHHBBH4s4s", ver << 4 | ihl, tos, 20 + len(opts) + plen, ident,
                    (0x4000 if df else 0) | frag, ttl, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst)) + opts
    c = ip_csum(h) if csum is None else csum
    return h[:10] + struct.pack("!H", c) + h[12:]


def icrc(ip_udp_bth_rest):
    """CRC-32 over 8 x 0xFF and the masked IPv4/UDP/BTH (README, 'Wire facts')."""
    b = bytearray(ip_udp_bth_rest)
    ihl = (b[0] & 15) * 4
    b[1] = 0xFF                  # TOS
    b[8] = 0xFF                  # TTL
    b[10:12] = b"\xff\xff"       # IP checksum
    b[ihl + 6:ihl + 8] = b"\xff\xff"   # UDP checksum
    b[ihl + 8 + 4] = 0xFF        # BTH FECN/BECN/resv6
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b[:-4])) & 0xFFFFFFFF)


def roce_ip(src, dst, transport, sport=0xC000, bad_icrc=0, ident=0, tos=0):
    """IPv4/UDP 4791/transport/ICRC; bad_icrc XORs the ICRC."""
    udp_len = 8 + len(transport) + 4
    ip = ipv4(src, dst, udp_len, ident=ident, tos=tos)
    udp = struct.pack("!HHHH", sport, ROCE_PORT, udp_len, 0)
    body = ip + udp + transport
    c = icrc(body + b"\0\0\0\0")
    if bad_icrc:
        c = struct.pack("<I", struct.unpack("<I", c)[0] ^ bad_icrc)
    return body + c


def payload_bytes(n, fill):
    return bytes([fill]) * n


# ---- the target ----

class Target:
    def __init__(self, a):
        self.a = a
        self.link = a.link
        self.r = random.Random(a.seed)
        self.frames = []         # (kind, frame bytes as sent, expected counter or None, note)
        self.dmac = bytes.fromhex(a.dmac.replace(":", ""))
        self.smac = bytes.fromhex(a.smac.replace(":", ""))
        self.cmac = bytes.fromhex(a.cmac.replace(":", "")) if a.cmac else None
        if a.va is None:         # send_bw prints no R_Key or VA: plausible ones
            a.va, a.rkey = 0x7F0000000000, 0x101

    def eth(self, ipdata, ethertype=0x0800, dmac=None):
        return (dmac or self.dmac) + self.smac + struct.pack("!H", ethertype) + ipdata

    def add(self, kind, ipdata, expect=None, ethertype=0x0800, dmac=None):
        self.frames.append([kind, self.eth(ipdata, ethertype, dmac), expect])

    # A request of the live QP's kind: op, PSN, headers, payload (mult. of 4 unless pad).
    def req(self, op, qpn, p, src, pl=b"", hdrs=b"", pkey=0xFFFF, tver=0, ackreq=1, bad_icrc=0, dst=None):
        pad = (-len(pl)) % 4
        t = bth(op, qpn, p, pkey=pkey, tver=tver, pad=pad, ackreq=ackreq) + hdrs + pl + b"\0" * pad
        return roce_ip(src, dst or self.a.server, t, sport=0xC000 | self.r.randrange(0x4000), bad_icrc=bad_icrc)

    def rand_valid(self, qpn, src, p, dst=None):
        """A well-formed RC request or response with random opcode/fields."""
        r, a = self.r, self.a
        op = r.choice([SEND_ONLY, WRITE_ONLY, READ_REQ, FETCH_ADD, CMP_SWAP, WRITE_FIRST, SEND_FIRST,
                       ACK, RR_ONLY, ATOMIC_ACK, SEND_ONLY_IMM, WRITE_ONLY_IMM])
        va, rkey = a.va + r.randrange(0, 65536, 8), a.rkey
        if op == SEND_ONLY:
            return self.req(op, qpn, p, src, payload_bytes(r.randrange(0, 256, 4), 0xE1), dst=dst)
        if op == SEND_ONLY_IMM:
            return self.req(op, qpn, p, src, payload_bytes(64, 0xE2), struct.pack("!I", 7), dst=dst)
        if op == WRITE_ONLY:
            return self.req(op, qpn, p, src, payload_bytes(64, 0xE3), reth(va, rkey, 64), dst=dst)
        if op == WRITE_ONLY_IMM:
            return self.req(op, qpn, p, src, payload_bytes(64, 0xE4), reth(va, rkey, 64) + struct.pack("!I", 9),
                            dst=dst)
        if op in (WRITE_FIRST, SEND_FIRST):
            h = reth(va, rkey, 2 * a.mtu) if op == WRITE_FIRST else b""
            return self.req(op, qpn, p, src, payload_bytes(a.mtu, 0xE5), h, dst=dst)
        if op == READ_REQ:
            return self.req(op, qpn, p, src, b"", reth(va, rkey, r.choice([1, 64, 4096, 1 << 20, 1 << 31])), dst=dst)
        if op in (FETCH_ADD, CMP_SWAP):
            return self.req(op, qpn, p, src, b"", atomiceth(va & ~7, rkey, 1, 0), dst=dst)
        if op == ACK:
            return self.req(op, qpn, p, src, b"", aeth(r.choice([0x1F, 0x60, 0x61, 0x62, 0x63, 0x20])), 0, dst=dst)
        if op == RR_ONLY:
            return self.req(op, qpn, p, src, payload_bytes(64, 0xE6), aeth(0x1F), ackreq=0, dst=dst)
        return self.req(op, qpn, p, src, b"", aeth(0x1F) + struct.pack("!Q", 0xDEAD), ackreq=0, dst=dst)

    # ---- the kinds ----

    def dup_psn(self):
        """A PSN behind the responder's ePSN for the whole run: the client's
        first PSN minus 1..65536 (the run moves ePSN forward by less than
        2^23 - 2^16, so these stay duplicates and never turn 'ahead')."""
        return psn(self.a.epsn - 1 - self.r.randrange(65536))

    def build(self, n):
        a, r = self.a, self.r
        live, client, attacker, server = a.qpn, a.client, a.attacker, a.server
        # 1. truncated: good frames cut short (UDP link: the datagram is cut)
        for _ in range(n):
            f = self.rand_valid(live, client, self.dup_psn())
            if self.link == "raw" and r.random() < 0.5:
                f = f[:r.randrange(0, len(f))]        # Ethernet header stays whole, IP length lies
            elif self.link == "raw":
                f = f[:r.randrange(28, len(f))]       # IP and UDP lengths follow the cut
                f = ipv4(client, server, len(f) - 20) + f[20:24] + struct.pack("!H", len(f) - 20) + f[26:]
            else:
                body = f[28:r.randrange(28, len(f))]  # IP and UDP stay consistent
                f = ipv4(client, server, 8 + len(body)) + struct.pack("!HHHH", 0xC001, ROCE_PORT,
                                                                     8 + len(body), 0) + body
            self.add("truncated", f)
        # 2. oversized: payload beyond 4096, and (UDP) IP-fragmented 20 KB
        for i in range(n):
            size = r.choice([4100, 4120]) if self.link == "raw" else r.choice([4100, 4160, 6000, 8800])
            f = self.req(WRITE_ONLY, live, self.dup_psn(), client, payload_bytes(size, 0xE7),
                         reth(a.va, a.rkey, size))
            self.add("oversized", f)
        # 3. BTH transport version != 0 (valid ICRC)
        for _ in range(n):
            self.add("bad_tver", self.req(SEND_ONLY, live, self.dup_psn(), client, payload_bytes(32, 0xE8),
                                          tver=r.randrange(1, 16)))
        # 4. opcodes not in the table
        unknown = [o for o in range(256) if o not in KNOWN]
        for _ in range(n):
            self.add("unknown_opcode", self.req(r.choice(unknown), live, self.dup_psn(), client,
                                                payload_bytes(r.randrange(0, 64, 4), 0xE9)))
        # 5. bad ICRC on well-formed requests of every kind
        for _ in range(n):
            f = self.rand_valid(live, client, self.dup_psn())
            self.add("bad_icrc", f[:-4] + bytes(x ^ y for x, y in zip(f[-4:], self.icrc_flip(f))))
        # 6. random bytes after IPv4/UDP 4791 (raw: also after the Ethernet header)
        for _ in range(n):
            body = r.randbytes(r.randrange(0, 600))
            udp = struct.pack("!HHHH", 0xC002, ROCE_PORT, 8 + len(body), 0) + body
            self.add("random", ipv4(attacker, server, len(udp)) + udp)
            if self.link == "raw":
                self.add("random", r.randbytes(r.randrange(0, 600)))
        # 7. wrong QPN: a scan of 0..63 and random QPNs, from the attacker's own address
        for q in list(range(64)) + [r.randrange(1 << 24) for _ in range(n)]:
            self.add("qpn_scan", self.rand_valid(q, attacker, r.randrange(1 << 24)))
        # 8. the live QPN from a foreign source: any PSN, real R_Key and VA
        for _ in range(n):
            self.add("foreign_src", self.rand_valid(live, attacker, r.choice([a.epsn, self.dup_psn(),
                                                                             r.randrange(1 << 24)])))
        # 9. spoofed client, live QPN, wrong P_Key (dropped before any PSN logic)
        for _ in range(n):
            self.add("bad_pkey", self.req(WRITE_ONLY, live, r.choice([a.epsn, self.dup_psn()]), client,
                                          payload_bytes(64, 0xEA), reth(a.va, a.rkey, 64),
                                          pkey=r.choice([0x0000, 0x8000, 0x1234, 0x8001, 0x7FFE])))
        # 10. spoofed client, live QPN, UC/UD opcodes (transport mismatch)
        for _ in range(n):
            op = r.choice([UC_SEND_ONLY, UC_WRITE_ONLY, UD_SEND_ONLY])
            hdr = reth(a.va, a.rkey, 64) if op == UC_WRITE_ONLY else (
                struct.pack("!II", 0x11111111, 0x22) if op == UD_SEND_ONLY else b"")
            self.add("bad_transport", self.req(op, live, a.epsn, client, payload_bytes(64, 0xEB), hdr))
        # 11. spoofed client, live QPN, duplicate requests (PSN behind ePSN):
        # re-ACKed or answered from saved state, never executed again
        for _ in range(n):
            p = self.dup_psn()
            op = r.choice([SEND_ONLY, WRITE_ONLY, WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, SEND_FIRST,
                           SEND_MIDDLE, SEND_LAST, READ_REQ, FETCH_ADD, CMP_SWAP])
            va = a.va + r.randrange(0, 16) * 64
            if op in (WRITE_ONLY, WRITE_FIRST):
                ln = 64 if op == WRITE_ONLY else a.mtu
                f = self.req(op, live, p, client, payload_bytes(ln, 0xEC), reth(va, a.rkey, ln if op == WRITE_ONLY
                                                                               else 4 * a.mtu))
            elif op in (WRITE_MIDDLE, SEND_FIRST, SEND_MIDDLE):
                f = self.req(op, live, p, client, payload_bytes(a.mtu, 0xED))
            elif op in (WRITE_LAST, SEND_LAST, SEND_ONLY):
                f = self.req(op, live, p, client, payload_bytes(64, 0xEE))
            elif op == READ_REQ:
                f = self.req(op, live, p, client, b"", reth(va, a.rkey, r.choice([64, 65536])))
            else:
                f = self.req(op, live, p, client, b"", atomiceth(va, a.rkey, 0x5555, 0))
            self.add("duplicate", f)
        # 12. spoofed client, live QPN, responses at a QP that has never sent
        # a request: ACKs, NAKs of every kind, READ responses, atomic ACKs
        # with PSNs anywhere except the one below (see ghost_nak)
        for _ in range(n):
            p = r.choice([r.randrange(1 << 24), a.sqpsn, psn(a.sqpsn + 1 + r.randrange(1 << 20)),
                          psn(a.sqpsn - 2 - r.randrange(1 << 20))])
            op = r.choice([ACK, ACK, RR_FIRST, RR_MIDDLE, RR_LAST, RR_ONLY, ATOMIC_ACK])
            syn = r.choice([0x1F, 0x00, 0x20, 0x3F, 0x60, 0x61, 0x62, 0x63])
            pl = payload_bytes(a.mtu if op in (RR_FIRST, RR_MIDDLE) else 64, 0xD1)
            if op == ACK:
                f = self.req(op, live, p, client, b"", aeth(syn), ackreq=0)
            elif op == ATOMIC_ACK:
                f = self.req(op, live, p, client, b"", aeth(0) + struct.pack("!Q", 0xD2D2), ackreq=0)
            elif op == RR_MIDDLE:
                f = self.req(op, live, p, client, pl, ackreq=0)
            else:
                f = self.req(op, live, p, client, pl, aeth(0x1F), ackreq=0)
            self.add("stray_response", f)
        # 13. the same, with the PSN just before the server's own first PSN:
        # a fatal NAK there must not fail a QP that has nothing outstanding
        for _ in range(max(1, n // 8)):
            syn = r.choice([0x61, 0x62, 0x63])
            self.add("ghost_nak", self.req(ACK, live, psn(a.sqpsn - 1), client, b"", aeth(syn), ackreq=0))
        # 14. at the client (the requester), spoofing the server: responses
        # beyond anything it sent, or behind its first PSN
        if a.client_qpn is not None and self.cmac:
            for _ in range(n):
                p = r.choice([psn(a.client_psn + (1 << 23) - 1 - r.randrange(1 << 16)),
                              psn(a.client_psn - 1 - r.randrange(1 << 16))])
                op = r.choice([ACK, RR_ONLY, RR_FIRST, RR_LAST, ATOMIC_ACK])
                if op == ACK:
                    hd, pl = aeth(r.choice([0x1F, 0x60, 0x62, 0x63])), b""
                elif op == ATOMIC_ACK:
                    hd, pl = aeth(0) + struct.pack("!Q", 0xD3D3), b""
                else:
                    hd, pl = aeth(0x1F), payload_bytes(a.mtu if op == RR_FIRST else 64, 0xD4)
                self.add("ghost_to_client", self.req(op, a.client_qpn, p, server, pl, hd, ackreq=0, dst=client),
                         dmac=self.cmac)
        # 15. CNPs (counted, rate hints only)
        for _ in range(min(n, 8)):
            t = bth(CNP, live, 0, tver=0) + b"\0" * 16
            self.add("cnp", roce_ip(client, server, t))
        if self.link == "raw":
            self.build_raw_only(n)

    def build_raw_only(self, n):
        """Frames only the raw link lets reach the engine (a kernel UDP
        socket never delivers them): broken IP/UDP, other ports and
        protocols, other destinations, IPv6 at an IPv4 engine."""
        a, r = self.a, self.r
        good = lambda: self.req(SEND_ONLY, a.qpn, self.dup_psn(), a.client, payload_bytes(32, 0xEF))
        for _ in range(max(1, n // 4)):
            f = bytearray(good()); f[10] ^= 0x55                    # IP checksum
            self.add("l3", bytes(f))
            f = bytearray(good()); f[0] = 0x65                      # IP version 6 in an IPv4 EtherType
            self.add("l3", bytes(f))
            f = good(); body = f[20:]                               # IP options (IHL 6)
            self.add("l3", ipv4(a.client, a.server, len(body), ihl=6, opts=b"\x01\x01\x01\x01") + body)
            body = f[20:]                                           # a fragment
            self.add("l3", ipv4(a.client, a.server, len(body), df=False, frag=0x2000) + body)
            self.add("l3", ipv4(a.client, a.server, len(body), proto=1) + body)   # not UDP
            f = bytearray(good()); f[22:24] = b"\x00\x35"            # UDP to port 53
            self.add("l3", bytes(f))
            f = bytearray(good()); f[26:28] = b"\x12\x34"            # non-zero wrong UDP checksum
            self.add("l3", bytes(f))
            f = bytearray(good()); f[24:26] = struct.pack("!H", struct.unpack("!H", f[24:26])[0] + 8)
            self.add("l3", bytes(f))                                # UDP length > IP's
            f = bytearray(good()); f[2:4] = struct.pack("!H", len(f) + 40)
            f[10:12] = b"\0\0"; f[10:12] = struct.pack("!H", ip_csum(bytes(f[:20])))
            self.add("l3", bytes(f))                                # IP length > frame
            # well-formed, to another IPv4 address / as IPv6 to nobody here
            self.add("not_for_us", self.req(SEND_ONLY, a.qpn, self.dup_psn(), a.client,
                                            payload_bytes(32, 0xEF), dst="10.0.0.77"))
            ip6, et = self.ipv6_req()
            self.add("not_for_us", ip6, ethertype=et)
        # frames larger than the engine's frame buffer (4224 B), up to the veth MTU
        for _ in range(n):
            size = r.choice([4300, 6000, 8900])
            self.add("jumbo", self.req(WRITE_ONLY, a.qpn, self.dup_psn(), a.client, payload_bytes(size, 0xF0),
                                       reth(a.va, a.rkey, size)))

    def ipv6_req(self):
        a = self.a
        t = bth(SEND_ONLY, a.qpn, self.dup_psn(), ackreq=1) + payload_bytes(32, 0xF1)
        udp_len = 8 + len(t) + 4
        src, dst = socket.inet_pton(socket.AF_INET6, "fd00::2"), socket.inet_pton(socket.AF_INET6, "fd00::1")
        ip6 = struct.pack("!IHBB", 6 << 28, udp_len, 17, 64) + src + dst
        udp = struct.pack("!HHHH", 0xC003, ROCE_PORT, udp_len, 0)
        b = bytearray(b"\xff" * 8 + ip6 + udp + t)
        b[8] |= 0x0F                        # TC and flow label (the version stays)
        b[9:12] = b"\xff\xff\xff"
        b[8 + 7] = 0xFF                     # hop limit
        b[8 + 40 + 6:8 + 40 + 8] = b"\xff\xff"
        b[8 + 48 + 4] = 0xFF
        c = struct.pack("<I", zlib.crc32(bytes(b)) & 0xFFFFFFFF)
        return ip6 + udp + t + c, 0x86DD

    def icrc_flip(self, f):
        """An ICRC error the UDP link cannot explain as an unseen IPv4 ID (it
        checks only 16 of the 32 bits through that recovery): the XOR is
        picked outside the span of the ID bits' CRC contributions."""
        if self.link == "raw":
            return struct.pack("<I", self.r.randrange(1, 1 << 32))
        ipu = f[14:]
        base = zlib.crc32(b"\xff" * 8 + bytes(len(ipu) - 4)) & 0xFFFFFFFF
        span = []
        for bit in range(16):
            z = bytearray(len(ipu) - 4)
            z[4 + (1 - bit // 8)] = 1 << (bit % 8)
            span.append((zlib.crc32(b"\xff" * 8 + bytes(z)) & 0xFFFFFFFF) ^ base)
        basis = {}
        for v in span:
            for hb in sorted(basis, reverse=True):
                if v >> hb & 1:
                    v ^= basis[hb]
            if v:
                basis[v.bit_length() - 1] = v
        while True:
            x = self.r.randrange(1, 1 << 32)
            v = x
            for hb in sorted(basis, reverse=True):
                if v >> hb & 1:
                    v ^= basis[hb]
            if v:
                return struct.pack("<I", x)


def engine_view(link, frame):
    """The frame the engine will parse, or None if it never reaches it."""
    if link == "raw":
        # longer frames go up cut to the frame buffer (the parser then
        # counts their IP length as wrong), as on the recvmmsg path
        return frame[:MAX_FRAME]
    # UDP link: the datagram behind rebuilt headers, cut to the frame buffer
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    data = ip[ihl + 8:][:MAX_FRAME - 42]
    src = ip[12:16]
    hdr = ipv4(socket.inet_ntoa(src), socket.inet_ntoa(ip[16:20]), 8 + len(data), ident=ip[4] << 8 | ip[5])
    udp = ip[ihl:ihl + 2] + struct.pack("!HHH", ROCE_PORT, 8 + len(data), 0)
    return frame[:12] + b"\x08\x00" + hdr + udp + data


def classify(a, frames, decode):
    """Sets each frame's expectation: the counter that must account for it
    ("client:NAME" for frames aimed at the client)."""
    views = [engine_view(a.link, f[1]) for f in frames]
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "v.pcap")
        with open(pcap, "wb") as fp:
            fp.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for v in views:
                if v is not None:
                    fp.write(struct.pack("<IIII", 0, 0, len(v), len(v)) + v)
        out = subprocess.run([decode, "--engine", pcap], capture_output=True, text=True).stdout.splitlines()
    verdicts = iter(out)
    for f, v in zip(frames, views):
        if v is None:
            f[2] = "UNCOUNTED(link: frame larger than %d B)" % MAX_FRAME
            continue
        line = next(verdicts).split()
        if line[1] == "reject":
            f[2] = ("client:" if f[0] == "ghost_to_client" else "") + "rx_drop_" + line[2].lower()
            continue
        op = int(line[2], 16)
        fields = dict(x.split("=", 1) for x in line[4:] if "=" in x)
        qpn, p = int(fields["qpn"], 16), int(fields["psn"], 16)
        if f[0] == "ghost_to_client":
            # beyond anything the client sent, or behind its first PSN
            f[2] = "client:" + ("rx_drop_resp_out_of_window" if psn(p - a.client_psn) < 1 << 23
                                else "duplicate_response")
        elif fields.get("dst") != a.server:
            f[2] = "rx_drop_not_for_us"
        elif op == CNP:
            f[2] = "cnp_rcvd"
        elif qpn != a.qpn:
            f[2] = "rx_drop_unknown_qpn"
        elif op >> 5 != 0:
            f[2] = "rx_drop_bad_transport"
        elif fields.get("src") != a.client:
            f[2] = "rx_drop_bad_src"
        elif f[0] == "bad_pkey":
            f[2] = "rx_drop_bad_pkey"
        elif op in RESPONSES:
            f[2] = "rx_drop_unexpected_resp"     # the server's QP has never sent a request
        elif f[0] == "replay" or psn(a.epsn - p) - 1 < 65536:
            f[2] = "duplicate_request"
        else:
            f[2] = "UNPREDICTED(op %#x psn %#x)" % (op, p)


def cmd_capture(a):
    pk = sniff(iface=a.iface, count=a.count, timeout=a.timeout,
               lfilter=lambda p: UDP in p and p[UDP].dport == ROCE_PORT and IP in p and p[IP].dst == a.dst)
    wrpcap(a.out + ".tmp", pk)
    os.rename(a.out + ".tmp", a.out)
    print("captured %d frames" % len(pk))


def self_test():
    """Our ICRC against scapy's RoCE layer, on one SEND_ONLY."""
    tr = bth(SEND_ONLY, 0x11, 5, ackreq=1) + b"\xab" * 32
    ours = roce_ip("10.0.0.2", "10.0.0.1", tr)
    ref = bytes(IP(src="10.0.0.2", dst="10.0.0.1", flags="DF", id=0, ttl=64) /
                UDP(sport=0xC000, dport=ROCE_PORT, chksum=0) /
                sroce.BTH(opcode=SEND_ONLY, dqpn=0x11, psn=5, ackreq=1) / Raw(b"\xab" * 32))
    if ours != ref:
        sys.exit("hostile_gen: ICRC self-test against scapy.contrib.roce failed:\n %s\n %s" % (ours.hex(), ref.hex()))


def cmd_attack(a):
    self_test()
    if a.args_from:
        # Started early (scapy loads slowly on a busy machine): the run's
        # QPNs and PSNs arrive later, as extra arguments in this file.
        deadline = time.monotonic() + 60
        while not os.path.exists(a.args_from) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(a.args_from) as fp:
            a = a.parser.parse_args(sys.argv[2:] + fp.read().split())
        while a.replay and not os.path.exists(a.replay) and time.monotonic() < deadline:
            time.sleep(0.05)   # the capture ends after 64 frames
    t = Target(a)
    t.build(a.per_kind)
    frames = t.frames
    # replayed captures: exact copies (now duplicates) and copies with a bad ICRC, reordered
    if a.replay and os.path.exists(a.replay):
        caps = [bytes(p) for p in rdpcap(a.replay)]
        t.r.shuffle(caps)
        for c in caps:
            c = t.dmac + t.smac + c[12:]           # the attacker's own MAC (no bridge poisoning)
            if a.link == "raw" and len(c) > MAX_FRAME:
                continue
            frames.append(["replay", c, None])
            bad = c[:-4] + bytes(x ^ y for x, y in zip(c[-4:], t.icrc_flip(c)))
            frames.append(["replay_bad_icrc", bad, None])
    kinds = set(a.kinds.split(",")) if a.kinds else None
    skip = set(a.skip.split(",")) if a.skip else set()
    frames = [f for f in frames if (kinds is None or f[0] in kinds) and f[0] not in skip]
    classify(a, frames, a.decode)
    t.r.shuffle(frames)
    plan = {}
    for kind, _, exp in frames:
        plan.setdefault(kind, {}).setdefault(exp, 0)
        plan[kind][exp] += 1
    with open(a.plan, "w") as fp:
        json.dump(plan, fp, indent=1, sort_keys=True)
    if a.dry_run:
        print(json.dumps(plan, indent=1, sort_keys=True))
        return
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    gap = a.seconds / max(1, len(frames))
    t0 = time.monotonic()
    sent = 0
    for i, f in enumerate(frames):
        while time.monotonic() < t0 + i * gap:
            time.sleep(min(0.002, gap))
        try:
            s.send(f[1])
            sent += 1
        except OSError as e:
            print("send failed (%s, %d bytes): %s" % (f[0], len(f[1]), e), file=sys.stderr)
            sys.exit(1)
    print("sent %d hostile frames in %.2f s" % (sent, time.monotonic() - t0))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--iface", required=True)
    c.add_argument("--dst", required=True)
    c.add_argument("--count", type=int, default=64)
    c.add_argument("--timeout", type=float, default=3)
    c.add_argument("--out", required=True)
    t = sub.add_parser("attack")
    for k in ("link", "iface", "dmac", "smac", "server", "client", "attacker", "decode", "plan"):
        t.add_argument("--" + k)
    for k in ("qpn", "epsn", "sqpsn"):
        t.add_argument("--" + k, type=lambda x: int(x, 0))
    t.add_argument("--args-from", help="wait for this file, then read more arguments from it")
    for k in ("rkey", "va", "client-qpn", "client-psn"):
        t.add_argument("--" + k, type=lambda x: int(x, 0), default=None)
    t.add_argument("--cmac", help="the client's MAC (ghost_to_client)")
    t.add_argument("--mtu", type=int, default=1024)
    t.add_argument("--replay")
    t.add_argument("--seed", type=int, default=15)
    t.add_argument("--per-kind", type=int, default=40)
    t.add_argument("--seconds", type=float, default=3)
    t.add_argument("--kinds")
    t.add_argument("--skip")
    t.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    a.parser = t
    {"capture": cmd_capture, "attack": cmd_attack}[a.cmd](a)


if __name__ == "__main__":
    main()
