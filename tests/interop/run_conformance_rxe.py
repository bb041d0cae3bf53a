#!/usr/bin/python3
"""The packet scripts (tests/conformance/scripts/*.pkt) against Linux rxe.

Boots the interop VM (vm.py, the image of build_image.sh, which carries
conf_agent), starts the verbs agent in it, and runs every script whose lines
the agent can serve (responder side, no timers: conformance_run decides and
says "n/a" for the others) with `conformance_run --rxe`: rxe is the device
under test, the script plays its peer over xroce's UDP link from the host
side of the tap. Writes docs/conformance-rxe.md: per script, pass / FAIL
with the runner's failure line / not applicable, and for each failure the
judgement recorded in JUDGEMENTS below (rxe departs from the spec, or the
script is wrong).

usage: run_conformance_rxe.py BUILD_BIN_DIR DOCS_OUT [SCRIPT...]
"""
import datetime
import glob
import os
import re
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from rxe_agent_vm import MTU, RxeAgentVM  # noqa: E402

bindir, doc_out = os.path.abspath(sys.argv[1]), sys.argv[2]
root = os.path.dirname(os.path.dirname(here))
scripts = sys.argv[3:] or sorted(glob.glob(os.path.join(root, "tests/conformance/scripts/*.pkt")))
runner = os.path.join(bindir, "conformance_run")
work = os.path.join(os.path.dirname(bindir), "interop")
os.makedirs(work, exist_ok=True)

# Why a script fails on rxe, once someone has looked (script name -> text). A failure without an
# entry is reported as "not judged yet".
OLD_RXE = ("this rxe (Debian 6.1) departs from the spec: it predates the path-MTU and 2^31 length checks of "
           "rxe_resp_check_length (IBA C9-92/C9-94) that transport-rules.md {rule} cites from newer rxe; the script "
           "follows the IBTA and newer rxe")
JUDGEMENTS = {
    "a08_len_over_path_mtu.pkt": OLD_RXE.format(rule="A8") + " (rxe 6.1 ACKs a 512-byte SEND_ONLY on a 256-byte path MTU)",
    "a08_send_first_short.pkt": OLD_RXE.format(rule="A8") + " (rxe 6.1 takes a short SEND_FIRST silently)",
    "a10_dlen_over_2g.pkt": OLD_RXE.format(rule="A10") + " (rxe 6.1 answers NAK62 from the R_Key range check instead)",
    "a10_write_dlen_over_2g.pkt": OLD_RXE.format(rule="A10") + " (rxe 6.1 answers NAK62 from the R_Key range check instead)",
    "a09_write_middle_after_short.pkt":
        "rxe departs from the spec (not a ⚠ item yet): check_rkey checks each WRITE packet's size against the bytes "
        "remaining (exactly one MTU while more than one remains), never the opcode, so a WRITE_LAST of one MTU with two "
        "MTUs still due is ACKed and the message ends short of its RETH DMA length. A9 (the data must add up exactly "
        "to the DMA length, NAK61 otherwise) is the IBTA rule; the script follows it",
    "a27_dup_read_replay.pkt":
        "rxe departs from the spec (not a ⚠ item yet): duplicate_request 'resets the resource, except length' to the "
        "duplicate's VA, so after a partial replay (PSN 101, VA mr+mtu) a later duplicate of the whole original READ "
        "(PSN 100, VA mr) falls outside the narrowed range and is dropped silently (Class D). A27: a duplicate inside "
        "the saved resource's original range is replayed; the script follows it (its first replay, lines 9-11, passes on rxe)",
    "a29_dup_atomic_at_read_psn.pkt":
        "rxe departs from the spec (found by tests/conformance/diff_rxe.py): duplicate_request matches a duplicate "
        "atomic to the saved resource at its PSN without checking that it is an atomic's, and answers a CAS at a "
        "READ's PSN with an ATOMIC_ACK whose original value is the READ resource's VA. A28/A29: no saved atomic "
        "result -> dropped silently; the script follows that",
    "a31_exceed_dest_rd_atomic.pkt": "rxe departs from the spec: ⚠ A31 (rxe never notices max_dest_rd_atomic being "
                                     "exceeded and answers both READs); the script encodes the IBTA reading, as its header says",
    "a31_exceed_keeps_earlier_answer.pkt": "rxe departs from the spec: ⚠ A31 (the READ beyond max_dest_rd_atomic is "
                                           "answered, not NAK61); the script encodes the IBTA reading",
    "a36_send_inv_refused.pkt": "rxe departs from the spec: ⚠ A36 (rxe sends a positive ACK for a SEND_WITH_INV whose "
                                "invalidation failed); the script follows the NAK, as its header says",
    "a40_send_longer_than_buffer.pkt": "rxe departs from the spec: ⚠ A40 (rxe answers NAK63 and LOC_QP_OP_ERR; "
                                       "IBTA/verbs: NAK61 and LOC_LEN_ERR); the script follows the IBTA, as its header says",
    "a40_send_multi_longer_than_buffer.pkt": "rxe departs from the spec: ⚠ A40 (NAK63 instead of NAK61); the script "
                                             "follows the IBTA, as its header says",
    "a46_err_state.pkt":
        "this rxe (Debian 6.1) departs from the spec: a receive WQE posted in ERR is not flushed until something else "
        "runs the responder (rxe_post_recv in 6.1 does not schedule the flush that transport-rules.md A46 cites from "
        "newer rxe); verbs/IBTA: WRs posted in ERR complete with WR_FLUSH_ERR. The WQE posted before ERR is flushed (line 6 passes)",
}


def main():
    t0 = time.time()
    try:
        with RxeAgentVM(os.path.dirname(bindir), pcap=os.path.join(work, "conformance-rxe.pcap")) as v:
            kernel = v.kernel
            t1 = time.time()
            r = v.run([runner, "--rxe", v.agent, v.host] + scripts, capture_output=True, text=True, timeout=1200)
            run_secs = time.time() - t1
            agent_log = v.agent_log()
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    with open(os.path.join(work, "conformance-rxe.log"), "w") as f:
        f.write(r.stdout + "\n---- stderr ----\n" + r.stderr + "\n---- agent ----\n" + agent_log)
    results = []   # (name, verdict, detail)
    for line in r.stdout.splitlines():
        m = re.match(r"^(ok  |FAIL|n/a ) (\S+?)(?::| |$)(.*)$", line)
        if not m:
            continue
        verdict, path, rest = m.group(1).strip(), m.group(2), m.group(3).strip()
        name = os.path.basename(path)
        if verdict == "FAIL":
            why = [l[len(path) + 1:] for l in r.stderr.splitlines() if l.startswith(path + ":")]
            rest = " / ".join(why) or rest
        results.append((name, verdict, rest))
    summary = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
    write_doc(results, kernel, summary, run_secs, time.time() - t0)
    print(summary)
    for name, verdict, rest in results:
        if verdict == "FAIL":
            print(f"FAIL {name}: {rest}")
    print(f"run: {run_secs:.0f} s for the scripts, {time.time() - t0:.0f} s in all")
    unjudged = [n for n, v, _ in results if v == "FAIL" and n not in JUDGEMENTS]
    ran = [n for n, v, _ in results if v != "n/a"]
    if not ran:
        print("FAIL: no script ran on rxe")
        return 1
    if unjudged:
        print(f"FAIL: {len(unjudged)} failure(s) on rxe nobody has judged yet: {' '.join(unjudged)}")
        return 1
    return 0


def write_doc(results, kernel, summary, run_secs, all_secs):
    ran = [x for x in results if x[1] != "n/a"]
    with open(doc_out, "w") as f:
        f.write("# The packet scripts against Linux rxe\n\n")
        f.write(f"Written by `tests/interop/run_conformance_rxe.py` on {datetime.date.today()}; do not edit "
                "(the judgements live in that file).\n\n")
        f.write("The scripts of `tests/conformance/scripts/` encode the spec and rxe. Here they run with Linux\n"
                "Soft-RoCE (rxe) as the device under test instead of xroce: `conformance_run --rxe` talks to a\n"
                "verbs agent in the interop VM (`tests/interop/conf_agent.c`) that creates the script's regions and\n"
                "RC QP with the fixture's attributes and serves `post_recv`, `cqe`, `state`, `mem`, `dereg_mr` and\n"
                "`modify_qp state=ERR|RESET`; the script plays the peer over xroce's UDP link from the host end of\n"
                "the tap. Time is real: `> none`, `cqe .. none` and the end of a script wait 200 ms in which\n"
                "nothing may come. Only scripts whose every line the agent can serve run (responder side, no\n"
                "timers, no memory windows); `counter` lines (xroce's engine counters) are skipped.\n\n")
        f.write(f"- rxe: Debian kernel `{kernel}`, interop VM (qemu TCG), netdev MTU {MTU}\n")
        f.write(f"- runner: `{summary}`\n")
        f.write(f"- time: {run_secs:.0f} s for the scripts, {all_secs:.0f} s with the VM's boot\n\n")
        fails = [x for x in ran if x[1] == "FAIL"]
        f.write(f"## Scripts run on rxe: {len(ran)}, failed: {len(fails)}\n\n")
        f.write("| script | on rxe | runner's failure line | judgement |\n|---|---|---|---|\n")
        for name, verdict, rest in ran:
            j = JUDGEMENTS.get(name, "not judged yet" if verdict == "FAIL" else "")
            note = rest.replace("|", "/") if verdict == "FAIL" else rest
            f.write(f"| {name} | {'pass' if verdict == 'ok' else 'FAIL'} | {note} | {j.replace('|', '/')} |\n")
        f.write("\n## Not applicable on rxe\n\nThe first line the agent cannot serve (requester side, timers, "
                "memory windows, QP states other than RTS at setup).\n\n| script | why |\n|---|---|\n")
        for name, verdict, rest in results:
            if verdict == "n/a":
                f.write(f"| {name} | {rest.replace('|', '/')} |\n")


if __name__ == "__main__":
    sys.exit(main())
