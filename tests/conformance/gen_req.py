#!/usr/bin/python3
"""Random requester-side packet scripts for diff_rxe.py (gen_random.py
--side req): N posts send WRs (SEND, SEND_IMM, WRITE, WRITE_IMM, READ,
CAS, FA; several packets at a small path MTU; several outstanding) and the
script plays the responder P, answering with plausible ACKs, READ responses
and atomic ACKs, with 0-3 faults: a lost, duplicated or reordered response,
part of a READ's responses lost (the READ re-issued, B21), a NAK sequence
error at some PSN (sometimes twice), an RNR NAK, a fatal NAK (NAK61/62/63), an
implied NAK (a later response while a READ/atomic is unanswered), a ghost
or stale ACK, a READ response of the wrong length or type, a modify to ERR,
and (in timer scripts) a lost response recovered by the local ACK timeout.

P keeps a belief of what N has completed and where N resumes after a
retry (transport-rules.md B8-B21), so that most answers stay plausible;
after a fault whose outcome the rules leave open (a wrong length or type)
it stops answering. The script carries no expectations: conformance_run
--record prints what N did.

Timers: rxe's clock is real (dut_rxe.c waits `+T` in real time), so a
script either has no local ACK timer (timeout=0: N waits forever) or a
long one (timeout 19 = 2.1 s, waited out with +2600ms, at most 12 steps so
that rxe's wall clock never reaches it between steps). RNR NAKs carry
timer code 29 (245.76 ms): longer than the runner's 80 ms settle on rxe,
shorter than the +400ms line that follows.
"""
import random

MASK = 0xFFFFFF
TIMER_TIMEOUT, TIMER_WAIT = 19, "+2600ms"   # 4.096 us * 2^19 = 2.15 s
RNR_CODE, RNR_WAIT = 29, "+400ms"            # 245.76 ms
FAULTS = ["lose", "dup", "reorder", "nak_seq", "rnr", "fatal", "implied", "ghost", "stale",
          "badlen", "wrongtype", "partial_ack", "modify_err", "nak_seq_twice", "lose", "nak_seq", "implied",
          "rnr", "lose_mid_read", "lose_mid_read", "rnr"]


class WR:
    def __init__(self, op, length, first, mtu):
        self.op, self.len, self.first = op, length, first
        self.kind = "read" if op == "read" else "atomic" if op in ("cas", "faa") else "ack"
        self.npsn = 1 if self.kind == "atomic" else max(1, -(-length // mtu))
        self.done = False          # P's belief: N has completed it
        self.got = 0               # READ: response PSNs N took in order (where a re-issue starts, B21)

    def psn(self, k):
        return (self.first + k) & MASK

    @property
    def last(self):
        return self.psn(self.npsn - 1)


class ReqGen:
    def __init__(self, seed, faults=None, timer=None, overdepth=False):
        self.rnd = r = random.Random(f"req-{seed}")
        self.seed = seed
        self.lines = []
        self.mtu = r.choice([256, 256, 512, 1024])
        self.sq_psn = r.choice([500, 500, 500, MASK - r.randrange(0, 4)])
        self.timer = r.random() < 0.25
        if timer is not None:
            self.timer = timer      # --timers: every script with the ACK timer
        self.max_rd = r.choice([1, 2, 4, 4, 4])
        self.retry_cnt = r.choice([0, 1, 2] if self.timer else [1, 2, 3])
        self.rnr_retry = r.choice([0, 1, 3, 7])
        self.faults = faults if faults is not None else r.choices([0, 1, 2, 3], [2, 5, 3, 1])[0]
        # --overdepth: READ/atomics beyond max_rd_atomic wait (B4) with every WR behind them; P still
        # answers in post order, so a held WR is mostly sent by the time its answer comes
        self.overdepth = overdepth
        self.wrs = []
        self.next_psn = self.sq_psn
        self.pos = (0, 0)          # the responder's next answer: (WR index, PSN offset)
        self.restarted = False     # N re-issued the READ at pos (answered as a new message)
        self.msn = 0
        self.dead = False          # QP in ERR (fatal NAK, modify)
        self.lost = False          # P no longer knows what N will do: answer nothing more
        self.lbuf_off = 0

    def emit(self, s):
        self.lines.append(s)

    # ---- N's side: work requests ----

    def outstanding_rd(self):
        return sum(1 for w in self.wrs if w.kind != "ack" and not w.done)

    def post(self):
        r, m = self.rnd, self.mtu
        ops = ["send", "send_imm", "write", "write_imm", "read", "cas", "faa"]
        op = r.choices(ops, [4, 1, 4, 1, 4, 1, 1])[0]
        if op in ("read", "cas", "faa") and self.outstanding_rd() >= self.max_rd and not self.overdepth:
            op = "write"   # B4: one more would wait, and every WR behind it (b04_*)
        if op in ("cas", "faa"):
            length = 8
        else:
            length = r.choice([0, r.randrange(1, 64), m, r.randrange(1, m), m * r.randrange(2, 5),
                               m * r.randrange(1, 4) + r.randrange(1, m)])
        off = self.lbuf_off
        self.lbuf_off = (self.lbuf_off + max(length, 8) + 8) % (60000 - 4 * m)
        args = f"post_send {op} len={length} off={off}" if op not in ("cas", "faa") else f"post_send {op} off={off}"
        if op in ("cas", "faa"):
            args += f" va=mr+{8 * r.randrange(0, 512)}"
            args += f" add={r.randrange(1, 1 << 20)}" if op == "faa" else \
                f" cmp={r.getrandbits(16)} swap=0x{r.getrandbits(64):x}"
        else:
            args += f" va=mr+{r.randrange(0, 32768)}"
        if op.endswith("_imm"):
            args += f" imm=0x{r.getrandbits(32):08x}"
        if op in ("send", "write") and r.random() < 0.1:
            args += " unsignaled"
        self.emit(args)
        w = WR(op, length, self.next_psn, m)
        self.wrs.append(w)
        self.next_psn = (self.next_psn + w.npsn) & MASK

    # ---- P's side: answers ----

    def oldest_open(self):
        return next((i for i, w in enumerate(self.wrs) if not w.done), len(self.wrs))

    def believe_answer(self, j):
        """N takes the answer to WR j: ACK/READ/atomic responses acknowledge
        earlier SEND/WRITEs (B8, B9); an unanswered READ/atomic before j
        makes it an implied NAK (B10): N resends from there."""
        for i in range(self.oldest_open(), j):
            w = self.wrs[i]
            if w.kind != "ack":
                self.pos, self.restarted = (i, w.got), True
                return False
            w.done = True
        self.wrs[j].done = True
        return True

    def answer_lines(self, j, off=0, restarted=False):
        """The responder's answer to WR j from PSN offset off."""
        w, m, r = self.wrs[j], self.mtu, self.rnd
        self.msn += 1
        if w.kind == "ack":
            return [f"< ACK psn={w.last} syn=ack msn={self.msn}"]
        if w.kind == "atomic":
            return [f"< AACK psn={w.first} syn=ack msn={self.msn} orig={r.getrandbits(64):#x}"]
        rest = max(0, w.len - off * m)
        n = max(1, -(-rest // m))
        if n == 1:
            op = "RESP_ONLY" if off == 0 or restarted else "RESP_LAST"
            return [f"< {op} psn={w.psn(off)} syn=ack msn={self.msn} len={rest}"]
        out = []
        for k in range(n):
            ln = m if k < n - 1 else rest - m * (n - 1)
            op = ("RESP_FIRST" if off == 0 or restarted else "RESP_MIDDLE") if k == 0 else \
                "RESP_LAST" if k == n - 1 else "RESP_MIDDLE"
            aeth = f" syn=ack msn={self.msn}" if op != "RESP_MIDDLE" else ""
            out.append(f"< {op} psn={w.psn(off + k)}{aeth} len={ln}")
        return out

    def answer(self):
        """Answers the next WR (sometimes several SEND/WRITEs with one ACK)."""
        j, off = self.pos
        if j >= len(self.wrs):
            return False
        w = self.wrs[j]
        if w.kind == "ack" and off == 0 and self.rnd.random() < 0.3:
            k = j
            while k + 1 < len(self.wrs) and self.wrs[k + 1].kind == "ack" and self.rnd.random() < 0.6:
                k += 1
            j = k   # one coalesced ACK (B8)
        self.emit_all(self.answer_lines(j, off, self.restarted))
        self.pos, self.restarted = (j + 1, 0), False
        self.believe_answer(j)
        return True

    def emit_all(self, lines):
        for x in lines:
            self.emit(x)

    def resume_at_oldest(self):
        """Timer or implied NAK: N resends from its oldest unacknowledged PSN (B10, B19, B21)."""
        i = self.oldest_open()
        self.pos, self.restarted = (i, self.wrs[i].got if i < len(self.wrs) else 0), True

    # ---- faults ----

    def fault(self, kind):
        r = self.rnd
        j, off = self.pos
        open_wr = j < len(self.wrs)
        w = self.wrs[j] if open_wr else None
        if kind == "lose" and open_wr:
            self.answer_lines(j, off, self.restarted)   # the responder executed it; the answer is lost
            self.pos, self.restarted = (j + 1, 0), False
            if self.timer and r.random() < 0.7:
                self.emit(TIMER_WAIT)
                self.resume_at_oldest()
        elif kind == "dup" and open_wr:
            lines = self.answer_lines(j, off, self.restarted)
            self.emit_all(lines + lines[-1:] if r.random() < 0.5 else lines + lines)
            self.pos, self.restarted = (j + 1, 0), False
            self.believe_answer(j)
        elif kind == "reorder" and open_wr and j + 1 < len(self.wrs):
            a = self.answer_lines(j, off, self.restarted)
            b = self.answer_lines(j + 1)
            self.emit_all(b + a)
            # b first: for a READ/atomic at j an implied NAK (B10); a then is an old response (B11)
            self.pos, self.restarted = (j + 2, 0), False
            if self.believe_answer(j + 1):
                self.believe_answer(j)
        elif kind in ("nak_seq", "nak_seq_twice") and self.wrs:
            p = self.psn_between()
            self.emit(f"< ACK psn={p[2]} syn=nak_seq msn={self.msn}")
            if kind == "nak_seq_twice":
                self.emit(f"< ACK psn={p[2]} syn=nak_seq msn={self.msn}")   # B14: ignored while retrying
            i = p[0]
            if any(not x.done and x.kind != "ack" for x in self.wrs[self.oldest_open():i]):
                self.resume_at_oldest()
            else:
                for x in self.wrs[self.oldest_open():i]:
                    x.done = True
                self.pos, self.restarted = (i, p[1]), True
        elif kind == "rnr" and open_wr and not self.timer:
            self.emit(f"< ACK psn={w.psn(off)} syn=rnr:{RNR_CODE} msn={self.msn}")
            self.emit(RNR_WAIT)
            self.restarted = True
            if self.rnr_retry == 0:
                self.dead = True
        elif kind == "fatal" and open_wr:
            p = w.psn(r.randrange(off, w.npsn))
            self.emit(f"< ACK psn={p} syn={r.choice(['nak_inv', 'nak_acc', 'nak_op', '0x64'])} msn={self.msn}")
            self.dead = True
        elif kind == "implied" and open_wr and w.kind != "ack" and j + 1 < len(self.wrs):
            self.answer_lines(j, off, self.restarted)   # lost
            self.emit_all(self.answer_lines(j + 1))
            self.pos = (j + 2, 0)
            self.believe_answer(j + 1)                    # -> implied NAK: resend from j
        elif kind == "ghost":
            k = r.choice([0, 1, 5, 1000])
            op = r.choice(["ACK", "ACK", "RESP_ONLY", "AACK"])
            extra = " len=8" if op == "RESP_ONLY" else " orig=7" if op == "AACK" else ""
            self.emit(f"< {op} psn={(self.next_psn + k) & MASK} syn=ack msn={self.msn + 1}{extra}")
        elif kind == "stale" and self.wrs:
            p = (self.sq_psn - r.choice([1, 2, 100])) & MASK if r.random() < 0.5 else \
                self.wrs[r.randrange(0, max(1, j))].last
            self.emit(f"< ACK psn={p} syn=ack msn={self.msn}")
        elif kind == "badlen" and open_wr and w.kind == "read":
            lines = self.answer_lines(j, off, self.restarted)
            i = r.randrange(len(lines))
            toks = lines[i].split()
            ln = int(toks[-1][4:])
            new = r.choice([max(0, ln - 1), ln + 1, ln + 4, 0, self.mtu + 4] if ln else [4, self.mtu])
            lines[i] = " ".join(toks[:-1] + [f"len={min(new, 4096)}"])
            self.emit_all(lines)
            self.lost = True   # B13: the rules differ (rxe checks only the total)
        elif kind == "wrongtype" and open_wr:
            if w.kind == "ack":
                self.emit(f"< RESP_ONLY psn={w.last} syn=ack msn={self.msn + 1} len={min(w.len, self.mtu)}")
            elif w.kind == "read":
                self.emit(f"< AACK psn={w.psn(off)} syn=ack msn={self.msn + 1} orig=5")
            else:
                self.emit(f"< RESP_ONLY psn={w.first} syn=ack msn={self.msn + 1} len=8")
            self.lost = True   # B12: a mismatched response type
        elif kind == "partial_ack" and open_wr and w.npsn - off > 1 and w.kind == "ack":
            k = r.randrange(off, w.npsn - 1)
            self.emit(f"< ACK psn={w.psn(k)} syn=ack msn={self.msn}")   # B8: only moves the acked PSN
            self.pos = (j, k + 1)
            self.restarted = False
        elif kind == "lose_mid_read" and open_wr and w.kind == "read" and w.npsn - off > 1:
            lines = self.answer_lines(j, off, self.restarted)
            k = r.randrange(1, len(lines))
            self.emit_all(lines[:k])              # the responses from the k-th on are lost
            w.got = off + k
            if self.timer:
                self.emit(TIMER_WAIT)
                self.resume_at_oldest()           # B21: READ re-issued at the first missing PSN
            else:
                self.pos, self.restarted = (j + 1, 0), False   # a later answer: an implied NAK (B10)
        elif kind == "modify_err":
            self.emit("modify_qp state=ERR")
            self.dead = True
        else:
            return False
        return True

    def psn_between(self):
        """A PSN from the responder's position to the last sent: (WR index, offset, PSN)."""
        j0, off0 = self.pos
        cands = [(i, k) for i in range(min(j0, len(self.wrs) - 1), len(self.wrs))
                 for k in range(off0 if i == j0 else 0, self.wrs[i].npsn)]
        if not cands:
            i = len(self.wrs) - 1
            return i, 0, self.wrs[i].first
        i, k = self.rnd.choice(cands)
        if self.wrs[i].kind != "ack" and self.rnd.random() < 0.7:
            k = 0    # mostly at a READ's first PSN; sometimes inside its response range (B14)
        return i, k, self.wrs[i].psn(k)

    # ---- the script ----

    def script(self):
        r = self.rnd
        nsteps = r.randrange(4, 13) if self.timer else r.randrange(5, 26)
        fault_steps = set(r.sample(range(1, nsteps), min(self.faults, nsteps - 1)))
        self.emit(f"# random requester script, seed {self.seed} (tests/conformance/gen_req.py)")
        opts = [f"mtu={self.mtu}", f"sq_psn={self.sq_psn}", f"timeout={TIMER_TIMEOUT if self.timer else 0}",
                f"retry_cnt={self.retry_cnt}", f"rnr_retry={self.rnr_retry}", f"max_rd_atomic={self.max_rd}"]
        self.emit("qp " + " ".join(opts))
        for _ in range(r.choice([1, 2, 3])):
            self.post()
        for i in range(nsteps):
            if self.dead:
                if r.random() < 0.5:
                    self.post()   # B26: flushed at once
                continue
            if self.lost:
                break
            if i in fault_steps:
                for _ in range(4):   # a fault that fits the moment
                    if self.fault(r.choice(FAULTS)):
                        break
                continue
            unanswered = len(self.wrs) - self.pos[0]
            if unanswered == 0 or (unanswered < 6 and r.random() < 0.35):
                for _ in range(r.choice([1, 1, 2, 3])):
                    self.post()
            else:
                self.answer()
        if self.timer and not self.dead and not self.lost and r.random() < 0.5:
            self.emit(TIMER_WAIT)
        return "\n".join(self.lines) + "\n"
