#!/usr/bin/python3
"""Differential testing of xroce's RC responder against Linux rxe.

Generates random responder-side scripts (gen_random.py), runs each with
`conformance_run --record` on xroce (in-process) and on rxe (the interop
VM, tests/interop/rxe_agent_vm.py; booted once), compares the transcripts
after normalizing what two correct responders may do differently, groups
the divergences by kind, shrinks one script per kind by removing lines
(delta debugging, the same kind must persist) and writes a report.

Normalized unless --strict: positive ACKs that follow one another within
a step collapse to the last (coalescing is allowed, the last names the
newest PSN), the RNR NAK's timer value is dropped (N's choice), and the
flush of a receive WQE posted in ERR is not compared (rxe 6.1 does it
late, a known departure), and a send completion's immediate is dropped
(rxe sets WITH_IMM on the send CQE of a *_WITH_IMM WR, with value 0;
ibv_poll_cq(3): the flag is for receive completions).

  diff_rxe.py [--seed S] [--count N] [--build DIR] [--out DIR] [--no-shrink]
              [--xroce-only] [--scripts FILE...]

--xroce-only runs the scripts on xroce alone and checks the runner never
fails and every guard holds (a smoke test; no VM, no root); with --side
req also the requester invariants (req_invariants: B24, B26), which the
campaign checks on both devices' transcripts too.
"""
import argparse
import collections
import glob
import os
import re
import signal
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(root, "tests/interop"))
import gen_random  # noqa: E402

# What a divergence kind means, once someone has judged it (regex on the kind -> text).
# Categories: (a) xroce departs from the spec, (b) rxe departs from the spec, (c) both legal.
JUDGEMENTS = []
try:
    from diff_judgements import JUDGEMENTS  # noqa: F401,E402
except ImportError:
    pass


def parse(out):
    """conformance_run --record output -> {path: (verdict, [(line, [items])])}."""
    res, cur, path = {}, None, None
    for ln in out.splitlines():
        if ln.startswith("== "):
            path = ln[3:]
            cur = []
            res[path] = ["?", cur]
        elif path is None:
            continue
        elif ln.startswith("@"):
            cur.append((ln, []))
        elif ln.startswith("  ") and cur:
            cur[-1][1].append(ln.strip())
        elif ln.startswith("ok   ") or ln.startswith("FAIL ") or ln.startswith("n/a  "):
            p = ln[5:].split(":")[0].split(" ")[0]
            if p in res:
                res[p][0] = ln[:4].strip()
    return res


def normalize(steps, strict):
    out = []
    for head, items in steps:
        items = list(items)
        if not strict and re.match(r"@L\d+ post_recv", head):
            # rxe 6.1 does not flush a WQE posted in ERR until the responder runs again
            # (docs/conformance-rxe.md, a46_err_state): not compared
            items = [x for x in items if not (x.startswith("cqe recv") and x.endswith("WR_FLUSH_ERR"))]
        if not strict:
            items = [re.sub(r"aeth=RNR:\d+", "aeth=RNR", x) for x in items]
            # rxe flags a send CQE of a *_WITH_IMM WR WITH_IMM (value 0); ibv_poll_cq(3): the
            # flag and imm_data are for receive completions (transport-rules B23)
            items = [re.sub(r" imm=\S+$", "", x) if x.startswith("cqe send") else x for x in items]
            keep = []
            for x in items:
                if (x.startswith("pkt ACK ") and " aeth=ACK " in x + " " and keep and
                        keep[-1].startswith("pkt ACK ") and " aeth=ACK " in keep[-1] + " "):
                    keep[-1] = x   # a coalesced ACK: the later one covers the earlier
                else:
                    keep.append(x)
            items = keep
        out.append((head, items))
    return out


def req_invariants(steps):
    """What every RC requester keeps, on one transcript (a list of faults):
    send CQEs in post order, each WR at most once (B24); no request sent
    once the QP is in ERR (B26)."""
    errs, last, seen, err = [], -1, set(), False
    for head, items in steps:
        for x in items:
            if x.startswith("state "):
                err = x == "state ERR"
            elif x.startswith("cqe send"):
                wid = int(re.search(r"id=(\d+)", x).group(1))
                if wid in seen:
                    errs.append(f"{head}: WR {wid} completed twice")
                elif wid < last:
                    errs.append(f"{head}: WR {wid} completed after WR {last} (B24)")
                seen.add(wid)
                last = max(last, wid)
            elif x.startswith("pkt ") and err and not x.startswith("pkt ACK "):
                errs.append(f"{head}: {x.split()[1]} sent in ERR (B26)")
    return errs


def script_mtu(path):
    """The path MTU of a script's `qp` line (the fixture's 1024 without one)."""
    try:
        for ln in open(path):
            m = re.match(r"qp .*\bmtu=(\d+)", ln)
            if m:
                return int(m.group(1))
    except OSError:
        return None
    return 1024


def abstract(item):
    """An item without its numbers (PSNs, MSNs, hashes): what kind of thing it is."""
    x = re.sub(r"\b(psn|msn|fnv|id|imm|orig|swap|cmp)=\S+", "", item)
    x = re.sub(r"\b(reth|atomic)=\S+", r"\1", x)
    x = re.sub(r"len=\d+", "len", x)
    x = re.sub(r"\[0x[0-9a-f]+,0x[0-9a-f]+\)", "", x)
    x = re.sub(r"fnv=\S+|changed=\S*", "", x)
    return " ".join(x.split())


def step_op(head):
    t = head.split()
    if len(t) > 2 and t[1] == "<":
        return t[2]
    if t[0] == "@end":
        return "end"
    return t[1] if len(t) > 1 else t[0]


RESPONSES = ("ACK", "AACK", "RESP_FIRST", "RESP_MIDDLE", "RESP_LAST", "RESP_ONLY")


def psn_after(x, y):
    """x comes after y in 24-bit PSN order."""
    return 0 < ((x - y) & 0xFFFFFF) < 0x800000


def response_context(steps, i, mtu):
    """What the kind of step i should say about a response's PSN, from the
    packets N sent before it (a READ counts its responses' PSNs, B1):
    " beyond sent" when it lies beyond every PSN N used (it answers nothing,
    B11), " inside a READ" for a NAK naming one of a READ's response PSNs
    after the first (B14, B18), " NAK60 again [at a later PSN]" for a NAK60
    while the retry of an earlier one is under way (B14)."""
    t = steps[i][0].split()
    if mtu is None or len(t) < 4 or t[1] != "<" or t[2] not in RESPONSES:
        return ""
    psn = next((int(x[4:]) for x in t if x.startswith("psn=")), None)
    hi, reads = None, []
    for _, items in steps[:i]:
        for x in items:
            m = re.match(r"pkt (\w+) psn=(\d+)(?: reth=\S+/(\d+))?", x)
            if not m or m.group(1) in RESPONSES:
                continue
            first = int(m.group(2))
            last = first + (max(1, -(-int(m.group(3)) // mtu)) - 1 if m.group(1) == "READ" else 0)
            if m.group(1) == "READ":
                reads.append((first, last & 0xFFFFFF))
            if hi is None or psn_after(last, hi):
                hi = last & 0xFFFFFF
    if psn is None or hi is None:
        return ""
    if psn_after(psn, hi):
        return " beyond sent"
    if "syn=nak_seq" in t:
        # a NAK60 while the retry of an earlier one is under way: no completion since (B14)
        for h, items in reversed(steps[:i]):
            if any(x.startswith("cqe send") for x in items):
                break
            if "syn=nak_seq" in h.split():
                return " NAK60 again" + ("" if f"psn={psn}" in h.split() else " at a later PSN")
    if any(x.startswith("syn=nak") for x in t) and any(psn_after(psn, f) and not psn_after(psn, l)
                                                        for f, l in reads):
        return " inside a READ"
    return ""


def compare(a, b, mtu=None):
    """First differing step of two normalized transcripts: (index, kind) or None."""
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            return i, "transcript length differs"
        (ha, ia), (hb, ib) = a[i], b[i]
        if ha != hb:
            return i, "steps differ (a runner failure?)"
        if ia != ib:
            xa = [abstract(x) for x in ia if x not in ib]
            xb = [abstract(x) for x in ib if x not in ia]
            op = step_op(ha) + response_context(a, i, mtu)
            return i, f"{op}: xroce [{'; '.join(xa)}] rxe [{'; '.join(xb)}]"
    return None


class Runner:
    def __init__(self, build, vm=None, strict=False, runner=None):
        self.bin = runner or os.path.join(build, "bin", "conformance_run")
        self.vm = vm
        self.strict = strict
        self.rxe_runs = 0
        self.crashes = 0

    def xroce(self, paths):
        r = subprocess.run([self.bin, "--record"] + paths, capture_output=True, text=True, timeout=600)
        return parse(r.stdout), r.stderr

    def rxe(self, paths):
        self.rxe_runs += len(paths)
        try:
            r = self.vm.run([self.bin, "--record", "--rxe", self.vm.agent, self.vm.host] + paths,
                            capture_output=True, text=True, timeout=60 + 20 * len(paths))
            res, err = parse(r.stdout), r.stderr
        except subprocess.TimeoutExpired as e:
            res, err = parse(e.stdout.decode() if e.stdout else ""), "timeout"
        if self.vm.alive():
            return res, err
        # rxe's kernel died under a script: the first without a verdict did it
        dead = next((p for p in paths if res.get(p, ["?"])[0] == "?"), paths[-1])
        res[dead] = ["CRASH", res.get(dead, ["", []])[1]]
        print(f"rxe: the VM died under {os.path.basename(dead)}; restarting it", flush=True)
        self.crashes += 1
        self.vm.restart()
        rest = paths[paths.index(dead) + 1:]
        if rest:
            res.update(self.rxe(rest)[0])
        return res, err

    def kind(self, tx, tr, path):
        if path not in tx or path not in tr:
            return None, "no transcript"
        vx, sx = tx[path]
        vr, sr = tr[path]
        if vx == "n/a" or vr == "n/a":
            return None, "n/a"
        d = compare(normalize(sx, self.strict), normalize(sr, self.strict), script_mtu(path))
        if vx != vr:
            return (d[0] if d else 0), f"runner: xroce {vx}, rxe {vr}"
        return d if d else (None, None)


def shrink(run, path, kind, budget, tmpdir, upto=None):
    """Delta debugging over the script's non-setup lines: the smallest script
    (within budget rxe runs) that still shows the same divergence kind. Lines
    after the diverging one (upto, its line number) go first: the kind is the
    first step that differs."""
    lines = open(path).read().splitlines()[:upto]
    head = [x for x in lines if x.startswith("qp ") or x.startswith("mr ") or x.startswith("#")]
    body = [x for x in lines if x not in head and x.strip()]
    cand = os.path.join(tmpdir, "shrink.pkt")
    used = [0]

    def same(b):
        if used[0] >= budget:
            return False
        with open(cand, "w") as f:
            f.write("\n".join(head + b) + "\n")
        tx, _ = run.xroce([cand])
        used[0] += 1
        tr, _ = run.rxe([cand])
        return run.kind(tx, tr, cand)[1] == kind

    n = 2
    while len(body) >= 2 and used[0] < budget:
        chunk = max(1, len(body) // n)
        reduced = False
        for s in range(0, len(body), chunk):
            comp = body[:s] + body[s + chunk:]
            if comp and same(comp):
                body, n, reduced = comp, max(n - 1, 2), True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(body), n * 2)
    return "\n".join(head + body) + "\n", used[0]


def judge(kind):
    for pat, text in JUDGEMENTS:
        if re.search(pat, kind):
            return text
    return "not judged yet"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--faults", type=int, default=None, help="faults per script (default: random, 0-3)")
    ap.add_argument("--side", choices=["resp", "req"], default="resp",
                    help="N's responder (default) or requester (gen_req.py)")
    ap.add_argument("--timers", action="store_true", help="--side req: every script with the ACK timer")
    ap.add_argument("--overdepth", action="store_true",
                    help="--side req: N may post more READ/atomics than max_rd_atomic (held back, B4)")
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-budget", type=int, default=40, help="rxe runs per divergence kind")
    ap.add_argument("--shrink-all", action="store_true", help="shrink judged kinds too")
    ap.add_argument("--strict", action="store_true", help="no normalization (ACK coalescing, RNR timer)")
    ap.add_argument("--xroce-only", action="store_true")
    ap.add_argument("--runner", help="the conformance_run binary (default BUILD/bin/conformance_run)")
    ap.add_argument("--scripts", nargs="*", help="these scripts instead of random ones")
    ap.add_argument("--rejudge", action="store_true",
                    help="no runs: group OUT/transcripts.txt again (after a new normalization or judgement)")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # the VM and namespace go with us
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "diff-rxe"))
    sdir = os.path.join(out, "scripts")
    os.makedirs(sdir, exist_ok=True)
    if a.scripts:
        paths = [os.path.abspath(p) for p in a.scripts]
    else:
        for old in glob.glob(os.path.join(sdir, "*.pkt")):
            os.unlink(old)
        for k in range(a.count):
            s = a.seed + k
            with open(os.path.join(sdir, f"rnd_{s:06d}.pkt"), "w") as f:
                f.write(gen_random.make(s, a.side, a.faults, timer=True if a.timers else None,
                                        overdepth=a.overdepth))
        paths = sorted(glob.glob(os.path.join(sdir, "rnd_*.pkt")))
    run = Runner(build, strict=a.strict, runner=a.runner and os.path.abspath(a.runner))
    if a.rejudge:
        return rejudge(out, run, a)
    tx, err = run.xroce(paths)
    bad = [p for p in paths if p not in tx or tx[p][0] != "ok" or
           not any("guards ok" in i for _, it in tx[p][1][-1:] for i in it)]
    if a.xroce_only:
        for p in paths if a.side == "req" else []:
            for e in req_invariants(tx.get(p, ["?", []])[1]):
                print(f"{os.path.basename(p)}: {e}")
                bad.append(p)
        for p in sorted(set(bad)):
            print(f"FAIL {p}")
        print(err[-2000:] if bad else "", end="")
        print(f"{len(paths) - len(set(bad))} of {len(paths)} random scripts ran on xroce, guards intact" +
              (", requester invariants kept" if a.side == "req" else ""))
        return 1 if bad else 0
    from rxe_agent_vm import RxeAgentVM
    t0 = time.time()
    groups = collections.OrderedDict()   # kind -> [(path, step)]
    with RxeAgentVM(build, tag="xrdiff") as vm:
        run.vm = vm
        tr = {}
        for i in range(0, len(paths), 10):
            tr.update(run.rxe(paths[i:i + 10])[0])
            print(f"rxe: {min(i + 10, len(paths))}/{len(paths)} scripts ({time.time() - t0:.0f} s)", flush=True)
        run.invariants = [(os.path.basename(p), name, e) for p in paths if a.side == "req"
                          for name, t in (("xroce", tx), ("rxe", tr))
                          for e in req_invariants(t.get(p, ["?", []])[1])]
        for p in paths:
            step, kind = run.kind(tx, tr, p)
            if kind and kind != "n/a":
                groups.setdefault(kind, []).append((p, step))
        with open(os.path.join(out, "transcripts.txt"), "w") as f:
            for p in paths:
                for name, t in (("xroce", tx), ("rxe", tr)):
                    f.write(f"==== {name} {p}: {t.get(p, ['none'])[0]}\n")
                    for h, items in t.get(p, [None, []])[1]:
                        f.write(h + "\n" + "".join(f"  {x}\n" for x in items))
        minimal = {}
        write_report(out, paths, groups, minimal, vm.kernel, run, time.time() - t0, a)
        if not a.no_shrink:
            for kind, hits in groups.items():
                if judge(kind) != "not judged yet" and not a.shrink_all:
                    continue
                rep, step = min(hits, key=lambda h: len(open(h[0]).read().splitlines()))
                head = tx[rep][1][step][0] if step is not None and step < len(tx[rep][1]) else ""
                m = re.match(r"@L(\d+)", head)
                text, used = shrink(run, rep, kind, a.shrink_budget, out, int(m.group(1)) if m else None)
                minimal[kind] = (rep, text, used)
                print(f"shrunk {os.path.basename(rep)} in {used} runs: {kind[:100]}", flush=True)
        # the minimal scripts' transcripts, on both
        for n, (k, (rep, text, _)) in enumerate(list(minimal.items())):
            mp = os.path.join(out, f"min_{n:02d}.pkt")
            with open(mp, "w") as f:
                f.write(text)
            mx, _ = run.xroce([mp])
            mr, _ = run.rxe([mp])
            minimal[k] = (rep, text, mp, mx.get(mp), mr.get(mp))
        kernel = vm.kernel
    write_report(out, paths, groups, minimal, kernel, run, time.time() - t0, a)
    print(f"{len(paths)} scripts on both; {sum(len(h) for h in groups.values())} diverged, "
          f"{len(groups)} kind(s); report: {os.path.join(out, 'report.md')}")
    return 0


def read_transcripts(path):
    """transcripts.txt -> ({path: [verdict, steps]} for xroce, the same for rxe)."""
    tx, tr, cur = {}, {}, None
    for ln in open(path).read().splitlines():
        m = re.match(r"==== (xroce|rxe) (\S+): (\S+)$", ln)
        if m:
            cur = []
            (tx if m.group(1) == "xroce" else tr)[m.group(2)] = [m.group(3), cur]
        elif ln.startswith("  ") and cur:
            cur[-1][1].append(ln.strip())
        elif cur is not None and ln:
            cur.append((ln, []))
    return tx, tr


def rejudge(out, run, a):
    tx, tr = read_transcripts(os.path.join(out, "transcripts.txt"))
    paths = sorted(tx)
    groups = collections.OrderedDict()
    for p in paths:
        step, kind = run.kind(tx, tr, p)
        if kind and kind != "n/a":
            groups.setdefault(kind, []).append((p, step))
    run.invariants = [(os.path.basename(p), name, e) for p in paths if a.side == "req"
                      for name, t in (("xroce", tx), ("rxe", tr)) for e in req_invariants(t.get(p, ["?", []])[1])]
    write_report(out, paths, groups, {}, "(rejudged)", run, 0, a)
    print(f"{len(paths)} scripts; {sum(len(h) for h in groups.values())} diverged, {len(groups)} kind(s)")
    return 0


def fmt_tx(t):
    if not t:
        return "(none)\n"
    return f"verdict {t[0]}\n" + "".join(h + "\n" + "".join(f"  {x}\n" for x in it) for h, it in t[1])


def write_report(out, paths, groups, minimal, kernel, run, secs, a):
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(f"# xroce against rxe: random {'requester' if a.side == 'req' else 'responder'} scripts\n\n")
        f.write(f"- scripts: {len(paths)} (seed {a.seed}, gen_random.py), run on xroce and on rxe "
                f"(kernel `{kernel}`); {run.rxe_runs} rxe runs in {secs:.0f} s; the VM died {run.crashes} time(s)\n")
        f.write(f"- normalization: {'none (--strict)' if a.strict else 'coalesced ACKs, RNR timer value'}\n")
        f.write(f"- diverged: {sum(len(h) for h in groups.values())} script(s), {len(groups)} kind(s)\n\n")
        inv = getattr(run, "invariants", [])
        if a.side == "req":
            f.write(f"- requester invariants (B24, B26) broken: {len(inv)}\n" +
                    "".join(f"  - {n} on {dev}: {e}\n" for n, dev, e in inv[:40]) + "\n")
        for kind, hits in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            f.write(f"## {kind}\n\n- scripts: {len(hits)}: " +
                    ", ".join(f"{os.path.basename(p)} (step {s})" for p, s in hits[:12]) +
                    (" ..." if len(hits) > 12 else "") + "\n")
            f.write(f"- judgement: {judge(kind)}\n\n")
            if kind in minimal:
                rep, text, mp, mx, mr = minimal[kind]
                f.write(f"Minimal script (from {os.path.basename(rep)}; {os.path.basename(mp)}):\n\n```\n{text}```\n\n")
                f.write(f"xroce:\n\n```\n{fmt_tx(mx)}```\n\nrxe:\n\n```\n{fmt_tx(mr)}```\n\n")


if __name__ == "__main__":
    sys.exit(main())
