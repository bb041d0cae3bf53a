"""The drop-in libibverbs rows of the interop harness (issue 11): Debian's own perftest and ibv_rc_pingpong
binaries, unmodified, on the host on xroce through build/lib/ibverbs (started by xroce-run, over the UDP or
the raw link), against the same binaries on rxe in the VM. run_interop.py runs them with its run_case
(dropin=True): this module only says what the two ends run and what each end must report."""
import os
import re

# perftest's -M: the group 239.1.1.1 as its IPv4-mapped GID, byte by byte (its default, ff01::2:c985:0:0,
# an IPv6 group, cannot leave a RoCE v2 port whose GID is IPv4)
MGID = "0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1"
MGROUP = "239.1.1.1"

# tool, arguments given to both ends (both also get -m with the path MTU), and whether perftest's server prints
# a result row: the passive servers of ib_read_lat and ib_atomic_lat print none (perftest's design, on rxe as
# on xroce), so only their clients' rows are required; every other tool's row is required on both ends.
TESTS = [
    ("ibv_rc_pingpong", "-n 200 -s 4096 -c", True),
    ("ib_write_bw", "-n 300", True),
    ("ib_read_bw", "-n 300", True),
    ("ib_send_bw", "-n 300", True),
    ("ib_atomic_bw", "-n 200", True),
    ("ib_write_lat", "-n 200", True),
    ("ib_read_lat", "-n 200", False),
    ("ib_send_lat", "-n 200", True),
    ("ib_atomic_lat", "-n 200", False),
    # the other QP types and shared receive queues (issue 14)
    ("ib_send_bw", "-n 300 -c UD", True),
    ("ib_send_lat", "-n 200 -c UD", True),
    # UC has no flow control: 64 KiB messages at xroce's rate overrun the emulated VM (19200 packets at
    # once), a lost packet loses its message, so rxe's send server would wait for ever and rxe's count of
    # the frames it took falls short of the capture's. 1 KiB messages (a packet each, 300) cross whole.
    ("ib_write_bw", "-n 300 -s 1024 -c UC", True),
    ("ib_send_bw", "-n 300 -s 1024 -c UC", True),
    ("ib_send_bw", "-n 300 --use-srq", True),
    # UD multicast (D8): the server's QP attaches to 239.1.1.1, the client sends to it at QPN 0xFFFFFF
    ("ib_send_bw", f"-n 300 -c UD -g -M {MGID}", True),
]
SERVER_REPORTS = {tool: rep for tool, _, rep in TESTS}
JUMBO = ("ibv_rc_pingpong", "ib_write_bw", "ib_read_bw")   # also run on the 9000-byte path, as xroce-perf's rows


def selected(only, outs, mtu):
    """The tests XR_ONLY asks for (by tool name, by tool and arguments, or all of them with 'dropin'), as
    (tool, args): all of them on
    the 1500-byte path (IB MTU 1024), the JUMBO ones on the 9000-byte path (IB MTU 4096). perftest sets
    its QP's initiator depth (max_rd_atomic) to the number of outstanding reads the *peer* announces, which is
    the peer device's max_qp_rd_atom by default: rxe's 128 is more than xroce0's limit, and xroce refuses it at
    RTS as rxe and the spec do. As between any two devices with different limits, the read and atomic tools
    are given -o with the smaller of the two devices' max_qp_rd_atom (outs), on both ends."""
    return [(tool, args + (f" -o {outs}" if "read" in tool or "atomic" in tool else ""))
            for tool, args, _ in TESTS if (not only or "dropin" in only or tool in only or f"{tool} {args}" in only)
            and (mtu == 1500 or tool in JUMBO)]


def hold_group(peer_addr):
    """A VM command that keeps 239.1.1.1 joined at the IP level on the VM's interface for 5 minutes
    (mcast_join.c, in the VM's image). rxe 6.1 attaches a QP at L2 only (rxe_mcast_add: dev_mc_add of the
    group's IPv6-mapped MAC), and the kernel's IPv4 input drops a group datagram no socket of the host
    joined before rxe's UDP socket sees it: rxe as a multicast receiver needs a member beside it, as any
    program using it would."""
    return f"(mcast_join {MGROUP} {peer_addr} 300 >/dev/null 2>&1 &)"


def max_qp_rd_atom(devinfo):
    """max_qp_rd_atom from ibv_devinfo -v output, or None."""
    m = re.search(r"max_qp_rd_atom:\s*(\d+)", devinfo)
    return int(m.group(1)) if m else None


def host_command(bindir, tool, args, link, udp_addr, raw_addr, mtu):
    """The host end: the system's binary under xroce-run, on device xroce0, GID index 0 (the bound address).
    XROCE_EXIT_REPORT: the library prints its counters and last events when the program ends (report()).
    XROCE_RETRY7_FOREVER: retry_cnt 7 (what these tools ask for) read as the peer, rxe, reads it, without
    end. With the IBTA's reading (seven retries of 4.096 us x 2^14 = 67 ms) a stall of the emulated VM longer
    than 0.54 s ends a row in RETRY_EXC while rxe, in the same stall, waits on (a CI run: rxe's answer came
    after xroce's eighth try). The IBTA reading is tested between xroce ends (tests/conformance b20_*)."""
    run = ["env", "XROCE_EXIT_REPORT=1", "XROCE_RETRY7_FOREVER=1", os.path.join(bindir, "xroce-run")] + (["--link", "udp", "--addr", udp_addr] if link == "udp" else
                                                 ["--link", link, "--ifname", "xr0", "--addr", raw_addr])
    dev = ["-d", "xroce0", "-g", "0"] if tool == "ibv_rc_pingpong" else ["-d", "xroce0", "-x", "0", "-F"]
    return run + [tool] + dev + args.split() + ["-m", str(mtu)]


def peer_command(tool, args, mtu):
    """The VM end: the same tool on rxe0, GID index 1 (rxe's IPv4-mapped RoCE v2 GID)."""
    dev = "-d rxe0 -g 1" if tool == "ibv_rc_pingpong" else "-d rxe0 -x 1"
    return f"{tool} {dev} {args} -m {mtu}"


def has_result(tool, text):
    """perftest's result row (#bytes #iterations figures...) or rc_pingpong's 'N iters in S seconds'."""
    if tool == "ibv_rc_pingpong":
        return " iters in " in text and "usec/iter" in text
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
            return True
    return False


def verdict(tool, role, hrc, vrc, hout, vout):
    """'' when both ends succeeded and reported as they must, else what is missing."""
    why = []
    if hrc != 0:
        why.append(f"xroce end exit {hrc}")
    if vrc != 0:
        why.append(f"rxe end exit {vrc}")
    client_out, server_out = (hout, vout) if role == "vm-server" else (vout, hout)
    client, server = ("xroce", "rxe") if role == "vm-server" else ("rxe", "xroce")
    if not has_result(tool, client_out):
        why.append(f"no result row from the client ({client})")
    if SERVER_REPORTS[tool] and not has_result(tool, server_out):
        why.append(f"no result row from the server ({server})")
    for end, out in (("xroce", hout), ("rxe", vout)):
        if "invalid data" in out.lower() or "FAILED" in out:
            why.append(f"the {end} end reports a failure")
    return "; ".join(why)


def report(hout):
    """The xroce library's exit report (counters, last events) out of the host end's output."""
    return "\n".join(l for l in hout.splitlines() if l.startswith("xroce: report at") or l.startswith("xroce:   ")
                     or l.startswith("xroce: last "))
