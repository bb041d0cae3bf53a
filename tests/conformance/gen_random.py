#!/usr/bin/python3
"""Random responder-side packet scripts for the differential campaign
(diff_rxe.py): the peer P plays an RC requester against N, mostly
plausible traffic (SEND/WRITE/READ/CAS/FA messages, first/middle/last/only
packets, immediate and invalidate variants, receive WQEs posted ahead) with
one or two faults per script: PSN duplicates, gaps, far-away PSNs, opcode
sequence errors, bad R_Keys, lengths over or under the path MTU or not
matching the RETH, region edges, a missing receive WQE (RNR), bursts, a
modify to ERR or RESET. Only lines the rxe agent serves (no timers, no
memory windows, RC, modify_qp state=ERR|RESET only). Scripts carry no
expectations: conformance_run --record prints what N did.

Deterministic: the same seed gives the same script.

  gen_random.py [--seed S] [--count N] [--faults F] [--side resp|req] OUTDIR

--side req writes requester-side scripts instead (gen_req.py: N posts
send WRs, the script answers as the responder, with faults).
"""
import argparse
import os
import random

import gen_req

MASK = 0xFFFFFF
MR_LEN = 65536


class Gen:
    def __init__(self, seed, faults=None, rxe_safe=True):
        self.rxe_safe = rxe_safe   # leave out what crashes rxe 6.1's kernel
        self.rnd = random.Random(seed)
        self.seed = seed
        self.lines = []
        r = self.rnd
        self.mtu = r.choices([256, 512, 1024, 4096], [2, 2, 5, 1])[0]
        self.epsn = r.choice([100, 100, 100, MASK - r.randrange(0, 6), r.randrange(0, MASK)])
        self.recvs = 0          # receive WQEs posted and not yet used (P's belief)
        self.posted = 0
        self.faults = faults if faults is not None else r.choices([0, 1, 2, 3], [2, 5, 3, 1])[0]
        self.fault_steps = set()
        self.history = []       # messages sent, to duplicate: (list of lines, first psn, npkts)
        self.mdra = 4

    def emit(self, s):
        self.lines.append(s)

    def psn(self, k=0):
        return (self.epsn + k) & MASK

    # ---- building blocks ----

    def header(self, nsteps):
        r = self.rnd
        self.emit(f"# random responder script, seed {self.seed} (tests/conformance/gen_random.py)")
        opts = [f"mtu={self.mtu}", f"rq_psn={self.epsn}"]
        if r.random() < 0.15:
            self.mdra = r.choice([1, 2])
            opts.append(f"max_dest_rd_atomic={self.mdra}")
        self.emit("qp " + " ".join(opts))
        if r.random() < 0.2:
            self.emit("mr ro len=4096 access=RR")
        if r.random() < 0.2:
            self.emit("mr small len=256")
        self.regions = [x.split()[1] for x in self.lines if x.startswith("mr ")]
        self.fault_steps = set(r.sample(range(nsteps), min(self.faults, nsteps)))

    def post_recv(self, n=1):
        for _ in range(n):
            if self.posted >= 30:
                return
            # as long as any message (length()), unless it is the rare short one (A40)
            ln = self.rnd.choices([8192, 64, self.mtu, 4096], [12, 1, 1, 2])[0]
            self.emit(f"post_recv len={ln}")
            self.posted += 1
            self.recvs += 1

    def length(self, maxpk=4):
        """A message length: zero, small, one MTU exactly, several MTUs."""
        r, m = self.rnd, self.mtu
        n = r.choices([0, r.randrange(1, 64), m, r.randrange(1, m), m * r.randrange(2, maxpk + 1),
                       m * r.randrange(1, maxpk) + r.randrange(1, m)], [1, 3, 2, 3, 2, 3])[0]
        return min(n, 8192)

    def split(self, total):
        m = self.mtu
        if total <= m:
            return [total]
        parts = [m] * (total // m)
        if total % m:
            parts.append(total % m)
        return parts

    def target(self, dlen, atomic=False):
        """(va expression, rkey expression) inside mr, mostly."""
        r = self.rnd
        if atomic:
            return f"mr+{8 * r.randrange(0, 64)}", "mr.rkey"
        off = r.choice([0, 64 * r.randrange(0, 64), r.randrange(0, 4096), max(0, MR_LEN - dlen)])
        off = min(off, max(0, MR_LEN - dlen))
        return f"mr+{off}", "mr.rkey"

    def fault_target(self, dlen, atomic=False):
        r = self.rnd
        kind = r.choice(["rkey+1", "lbuf", "past_end", "before", "ro", "edge"])
        n = max(dlen, 8 if atomic else 1)
        if kind == "rkey+1":
            return self.target(dlen, atomic)[0], "mr.rkey+1", kind
        if kind == "lbuf":
            return "lbuf", "lbuf.rkey", kind
        if kind == "past_end":
            return f"mr+{MR_LEN - n + r.choice([1, 8, n])}", "mr.rkey", kind
        if kind == "before":
            return "mr-8", "mr.rkey", kind
        if kind == "ro" and "ro" in self.regions:
            return "ro", "ro.rkey", kind
        if atomic:
            return f"mr+{8 * r.randrange(0, 64) + r.choice([1, 4])}", "mr.rkey", "misaligned"
        return f"mr+{MR_LEN - n}", "mr.rkey", "edge_ok"

    # ---- messages ----

    def send(self, fault):
        r = self.rnd
        total = self.length()
        if r.random() < 0.15 and "small" in self.regions and total > 64:
            self.emit("post_recv sge=small off=0 len=64")  # shorter than the message
            self.recvs += 1
            self.posted += 1
        elif fault != "rnr" and self.recvs == 0:
            self.post_recv(r.choice([1, 1, 2, 3]))
        parts = self.split(total)
        variant = r.choices(["", "_IMM", "_INV"], [30, 10, 1])[0]   # _INV on an MR: ⚠ A36
        lines = []
        for i, ln in enumerate(parts):
            first, last = i == 0, i == len(parts) - 1
            op = "SEND_" + ("ONLY" if first and last else "FIRST" if first else "LAST" if last else "MIDDLE")
            extra = ""
            if last:
                op += variant
                extra = {"": "", "_IMM": f" imm=0x{r.getrandbits(32):08x}",
                         "_INV": " inv=" + r.choice(["mr.rkey", "mr.rkey+1", "lbuf.rkey"])}[variant]
                if r.random() < 0.1:
                    extra += " se=1"
            lines.append(f"< {op} psn={self.psn(i)} len={ln}{extra}")
        return lines, len(parts)

    def write(self, fault):
        r = self.rnd
        total = self.length()
        va, rkey = self.target(total)
        if fault == "key":
            va, rkey, _ = self.fault_target(total)
        parts = self.split(total)
        dlen = total
        if fault == "dlen":
            dlen = max(0, total + r.choice([-1, 1, -self.mtu, self.mtu, 7]))
            if self.rxe_safe and dlen == 0 and total:
                # rxe 6.1 skips the R_Key check for DMA length 0 and then writes the payload
                # through no MR: the guest kernel dies (diff_rxe.py's report). xroce: NAK61 (A9)
                dlen = total + 1
        variant = r.choices(["", "_IMM"], [5, 1])[0]
        if variant and self.recvs == 0 and fault != "rnr":
            self.post_recv()
        lines = []
        for i, ln in enumerate(parts):
            first, last = i == 0, i == len(parts) - 1
            op = "WRITE_" + ("ONLY" if first and last else "FIRST" if first else "LAST" if last else "MIDDLE")
            extra = f" va={va} rkey={rkey} dlen={dlen}" if first else ""
            if last and variant:
                op += variant
                extra += f" imm=0x{r.getrandbits(32):08x}"
            lines.append(f"< {op} psn={self.psn(i)} len={ln}{extra}")
        return lines, len(parts)

    def read(self, fault):
        r = self.rnd
        dlen = r.choice([0, 8, r.randrange(1, 256), self.mtu, self.mtu * r.randrange(2, 5) + r.randrange(0, 100)])
        va, rkey = self.target(dlen)
        if fault == "key":
            va, rkey, _ = self.fault_target(dlen)
        if r.random() < 0.3:
            self.emit(f"mem {va} len=64 := pat:{r.randrange(256)}" if va.startswith("mr+") and
                      int(va[3:]) + 64 <= MR_LEN else "mem mr len=64 := pat:3")
        n = max(1, -(-dlen // self.mtu))
        return [f"< READ psn={self.psn()} va={va} rkey={rkey} dlen={dlen}"], n

    def atomic(self, fault):
        r = self.rnd
        va, rkey = self.target(8, atomic=True)
        if fault == "key":
            va, rkey, _ = self.fault_target(8, atomic=True)
        if r.random() < 0.5:
            self.emit(f"mem mr len=64 := pat:{r.randrange(256)}")
        if r.random() < 0.5:
            return [f"< FA psn={self.psn()} va={va} rkey={rkey} add={r.randrange(1, 1 << 20)}"], 1
        return [f"< CAS psn={self.psn()} va={va} rkey={rkey} cmp={r.choice([0, 0x0706050403020100, 5])} "
                f"swap={r.getrandbits(64):#x}"], 1

    # ---- faults applied to a message's packet lines ----

    def mangle(self, lines, npk, fault):
        r = self.rnd
        m = self.mtu
        if fault == "gap":
            k = r.choice([1, 2, 5, 1 << 22, (1 << 23) + 3])
            return [self.repsn(x, k) for x in lines], 0
        if fault == "behind":
            k = -r.choice([1, 3, 1 << 22, (1 << 23) - 1, 1 << 23])
            return [self.repsn(x, k) for x in lines], 0
        if fault == "opseq":
            kind = r.choice(["drop_first", "drop_middle", "drop_last", "extra_middle", "swap"])
            if kind == "drop_first" and len(lines) > 1:
                return lines[1:], 0
            if kind == "drop_middle" and len(lines) > 2:
                return lines[:1] + lines[2:], 0
            if kind == "drop_last" and len(lines) > 1:
                return lines[:-1], 0
            if kind == "swap" and len(lines) > 1:
                return [lines[1], lines[0]] + lines[2:], 0
            op = r.choice(["SEND_MIDDLE", "WRITE_MIDDLE", "SEND_LAST", "WRITE_LAST", "SEND_FIRST"])
            return lines + [f"< {op} psn={self.psn(npk)} len={m}"], 0
        if fault == "len":
            i = r.randrange(len(lines))
            toks = lines[i].split()
            if self.rxe_safe and "dlen=0" in toks:
                return lines, npk   # a payload on a zero-length WRITE crashes rxe 6.1 (see below)
            if not any(t.startswith("len=") for t in toks):
                return lines, npk   # READ and atomics carry no payload (the builder refuses one)
            ln = int(next(t for t in toks if t.startswith("len="))[4:])
            new = r.choice([m + 4, m + m // 2, max(0, ln - 1), ln + 1, 0, 2 * m])
            new = min(new, 4096)   # the frame's limit
            toks = [f"len={new}" if t.startswith("len=") else t for t in toks]
            lines[i] = " ".join(toks)
            return lines, npk if i == len(lines) - 1 else 0
        if fault == "ackreq":
            lines[-1] += " ackreq=0"
            return lines, npk
        if fault == "burst" and len(lines) > 1:
            return [x + " burst" for x in lines[:-1]] + lines[-1:], npk
        return lines, npk

    def partial_read(self, toks):
        """A duplicate READ for a later part of an earlier READ: PSN +k, VA +k MTUs."""
        f = dict(t.split("=", 1) for t in toks[2:] if "=" in t)
        dlen, k = int(f["dlen"]), 0
        if dlen > self.mtu:
            k = self.rnd.randrange(1, -(-dlen // self.mtu))
        psn = (int(f["psn"]) + k) & MASK
        rest = dlen - k * self.mtu
        if self.rnd.random() < 0.3:
            rest = max(0, rest + self.rnd.choice([-1, 1, 8]))   # shorter, or beyond the original
        return f"< READ psn={psn} va={f['va']}+{k * self.mtu} rkey={f['rkey']} dlen={rest}"

    def repsn(self, line, k):
        return " ".join(f"psn={(int(t[4:]) + k) & MASK}" if t.startswith("psn=") else t for t in line.split())

    def step(self, i, nsteps):
        r = self.rnd
        fault = None
        if i in self.fault_steps:
            fault = r.choice(["gap", "behind", "opseq", "len", "key", "dlen", "rnr", "dup", "ackreq",
                              "burst", "modify", "dup", "key", "len", "opseq"])
        if fault == "modify":
            self.emit(f"modify_qp state={r.choice(['ERR', 'ERR', 'RESET'])}")
            if r.random() < 0.5:
                self.post_recv()
            return
        if fault == "dup" and self.history:
            lines, _ = r.choice(self.history[-4:])
            toks = lines[0].split()
            if toks[1] == "READ" and r.random() < 0.6:
                lines = [self.partial_read(toks)]   # a replay from inside the READ (A27)
            self.emit_lines(list(lines))
            return
        if r.random() < 0.12:
            self.post_recv(r.choice([1, 2]))
        kind = r.choices(["send", "write", "read", "atomic"], [4, 3, 3, 2])[0]
        if fault in ("dlen",) and kind != "write":
            kind = "write"
        if fault == "rnr":
            kind = "send"
            self.recvs = 0   # P sends regardless; N must answer RNR if nothing is posted
        lines, npk = getattr(self, kind)(fault)
        if kind == "send":
            self.recvs = max(0, self.recvs - 1)
        good = npk
        if fault in ("gap", "behind", "opseq", "len", "ackreq", "burst"):
            lines, good = self.mangle(lines, npk, fault)
        elif fault in ("key", "dlen"):
            good = 0
        if fault == "rnr" and r.random() < 0.7:
            self.emit_lines(lines)       # RNR, then P retries once a WQE is there
            self.post_recv()
            good = npk
        self.emit_lines(lines)
        if good:
            self.history.append((lines, self.epsn))
        self.epsn = (self.epsn + good) & MASK
        if fault == "gap" and r.random() < 0.5:
            self.emit_lines(self.fix_psns(lines))

    def fix_psns(self, lines):
        """P resends the message at the right PSN (after a NAK sequence error)."""
        first = int(next(t for t in lines[0].split() if t.startswith("psn="))[4:])
        return [self.repsn(x, (self.epsn - first) & MASK) for x in lines]

    def emit_lines(self, lines):
        for k, x in enumerate(lines):
            # a group's last packet runs the engine: never leave one queued
            self.emit(x[:-len(" burst")] if k == len(lines) - 1 and x.endswith(" burst") else x)

    def script(self):
        r = self.rnd
        nsteps = r.randrange(5, 31)
        self.header(nsteps)
        self.post_recv(r.choice([0, 1, 2, 4]))
        for i in range(nsteps):
            self.step(i, nsteps)
        return "\n".join(self.lines) + "\n"


def make(seed, side="resp", faults=None, rxe_safe=True, timer=None, overdepth=False):
    """One script's text: a responder-side (Gen) or requester-side (gen_req.ReqGen) one."""
    if side == "req":
        return gen_req.ReqGen(seed, faults, timer, overdepth).script()
    return Gen(seed, faults, rxe_safe).script()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--faults", type=int, default=None, help="faults per script (default: random, 0-3)")
    ap.add_argument("--unsafe", action="store_true", help="also what crashes rxe 6.1 (a payload on a WRITE of DMA length 0)")
    ap.add_argument("--side", choices=["resp", "req"], default="resp", help="N's responder (default) or requester")
    ap.add_argument("outdir")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    for k in range(a.count):
        s = a.seed + k
        with open(os.path.join(a.outdir, f"rnd_{s:06d}.pkt"), "w") as f:
            f.write(make(s, a.side, a.faults, not a.unsafe))


if __name__ == "__main__":
    main()
