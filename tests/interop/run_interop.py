#!/usr/bin/python3
"""xroce against Linux Soft-RoCE (rxe) and Debian's perftest in a qemu VM.

Builds (or reuses) the peer image, boots it on a tap device inside a network
namespace made here, runs each case in both roles (the perftest tool in the
VM as server and xroce-perf as client, then the reverse), then the same
Debian perftest and ibv_rc_pingpong binaries on the host on xroce through the
drop-in libibverbs (dropin.py), records a pcap of the traffic, and writes
docs/interop.md with the outcome of every case.
Everything is torn down on exit, failure or timeout.

usage: run_interop.py BUILD_BIN_DIR DOCS_OUT [--quick]
  XR_LINKS=udp,raw,xdp   the xroce links to run
  XR_ONLY=a,b        only these cases: xroce-perf's by name (write_bw, ...,
                     loss, reorder), the drop-in rows by tool (ib_write_bw,
                     ibv_rc_pingpong, ...) or all of them (dropin)
"""
import datetime
import os
import re
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from vm import VM  # noqa: E402
import dropin  # noqa: E402

bindir, doc_out = sys.argv[1], sys.argv[2]
quick = "--quick" in sys.argv
perf = os.path.join(bindir, "xroce-perf")
cache = os.path.join(os.path.dirname(bindir), "interop-cache")
work = os.path.join(os.path.dirname(bindir), "interop")
os.makedirs(work, exist_ok=True)
NS = f"xrint{os.getpid()}"
HOST, PEER = "10.77.0.1", "10.77.0.2"
RAW_ADDR = "10.77.0.3"  # the raw and XDP links' own address on xr0; the kernel keeps HOST for the TCP exchange
LINKS = os.environ.get("XR_LINKS", "udp,raw,xdp").split(",")
results = []
current_mtu = [1500]   # the phase running now: its capture is the one a failure is explained from
rxe_rcvd = {}   # MTU phase -> rxe's rcvd_pkts at its end
rxe_rcvd_before = {}   # MTU phase -> rcvd_pkts of the VMs restarted in it (restart_vm)
vm_restarts = []   # the phases whose VM was restarted after its NIC stalled
rd_atom = {}    # device -> its max_qp_rd_atom (ibv_devinfo -v), for the drop-in rows
xdp_mode = {}   # MTU phase -> how the XDP link bound xr0, as it reported it
CAPTURE_CAP = 1_000_000_000   # bytes per capture (tshark's filesize counts kB of 1000 bytes)


def sh(cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", NS, "sh", "-c", cmd], **kw)


def setup_ns(mtu):
    """The VM's tap and a veth pair on one bridge: the kernel's address (TCP exchange, UDP link) is on the
    bridge, the raw and XDP links own RAW_ADDR on the veth end xr0 (a veth, not the tap: it offers native
    XDP, as a NIC's driver would). All RoCE frames cross tap0, where the capture and the loss rules sit,
    whichever link sends them (a packet socket on tap0 itself would bypass them)."""
    subprocess.run(["ip", "netns", "add", NS], check=True)
    # mcast_snooping 0: the bridge floods a group's frames to every port, as a switch without IGMP
    # snooping; neither rxe nor the raw and XDP links send IGMP reports for the groups they receive.
    sh(f"ip link set lo up && ip tuntap add tap0 mode tap && ip link add br0 type bridge mcast_snooping 0 && "
       f"ip link add xr0 type veth peer name xrp && ip link add tv0 type veth peer name tv1 && "
       f"for d in tap0 xrp tv1; do ip link set dev $d master br0; done && "
       f"for d in tap0 xrp xr0 tv0 tv1 br0; do ip link set dev $d mtu {mtu} up; done && "
       f"ip addr add {HOST}/24 dev br0 && "
       # The host's TCP reaches the impairment element through tv1/tv0: whole frames, no offload.
       f"for d in tv0 tv1; do ethtool -K $d tx off tso off gso off gro off >/dev/null; done", check=True)


def teardown_ns():
    subprocess.run(["ip", "netns", "pids", NS], capture_output=True)
    subprocess.run(f"ip netns pids {NS} 2>/dev/null | xargs -r kill -9", shell=True)
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)


def figure(text, lat):
    """The result line's key figure: BW average (MB/s) or typical latency (us)."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[1].isdigit():
            try:
                return f"{float(f[3 if not lat else 4]):.2f} {'us' if lat else 'MB/s'}"
            except ValueError:
                pass
        m = re.search(r"= ([0-9.]+) usec/iter", line)
        if m:
            return f"{m.group(1)} us/iter"
    return ""


# perftest times with the TSC, calibrated against gettimeofday at start; in an emulated (TCG) CPU on a busy
# host that calibration can fail ("Correlation coefficient r^2 ... < 0.9", "Can't produce a report"), which
# says nothing about the RDMA traffic. Such a case runs again (up to 3 times), and the table says so.
CLOCK_FAILURE = "Can't produce a report"

# A hung row whose peer is rxe sending (its bandwidth client, xroce serving) may be rxe's own stall. With
# retry_cnt 7 (what perftest asks for) rxe retries for ever, each retry counted; so if rxe timed out in this
# row (it had packets xroce had not acknowledged) and its counters then stood still for 5 s, rxe's requester
# stopped by itself: acknowledged since, it would post more or finish; not, it would retry. (It waits for its
# in-flight packet buffers to come back from the VM's NIC and, sending nothing, never re-arms its timer.)
# CI's row 162 of stop 25 ended so: one retry counted, then nothing for over a minute. Such a row runs once
# more, its evidence printed; the note says so.
RXE_COUNTERS = "/sys/class/infiniband/rxe0/ports/1/hw_counters"
SAMPLE_AT = 70


def sampler():
    """A VM job: rxe's counters at the row's start, at SAMPLE_AT s and 5 s later."""
    grab = f"grep -H . {RXE_COUNTERS}/*"
    return (f"rm -f /tmp/c0 /tmp/c1 /tmp/c2; {grab} > /tmp/c0; ( sleep {SAMPLE_AT}; {grab} > /tmp/c1; sleep 5; "
            f"{grab} > /tmp/c2 ) > /dev/null 2>&1 & echo $! > /tmp/sampler")


def rxe_stalled(vm):
    """Whether rxe retried in this row and its counters then stood still from SAMPLE_AT to 5 s later."""
    _, out = vm.run("kill $(cat /tmp/sampler) 2>/dev/null; for f in c0 c1 c2; do cat /tmp/$f 2>/dev/null; echo ==; done", 10)
    samples = []
    for part in out.split("==")[:3]:
        samples.append(dict((l.rsplit("/", 1)[-1].split(":")[0], l.rsplit(":", 1)[-1].strip())
                            for l in part.splitlines() if ":" in l))
    if len(samples) < 3 or not samples[2]:
        return False
    c0, c1, c2 = samples
    retries = lambda c: int(c.get("completer_retry_err", "0") or 0)
    return c1 == c2 and retries(c1) > retries(c0)


def vm_nic_stalled(vm):
    """The guest's lines of its NIC's transmit watchdog (empty: none since the VM booted). It fires when the
    virtio TX queue took nothing for 5 s: qemu stopped serving it, and every frame rxe sends from then on
    stays in the VM (CI: 'NETDEV WATCHDOG: transmit queue 0 timed out 194116 ms' under a loss case)."""
    _, out = vm.run("busybox dmesg | grep -E 'NETDEV WATCHDOG|TX timeout' | tail -2", 10)
    return out.strip()


def restart_vm(vm):
    """A fresh VM; rxe's rcvd_pkts so far are kept for the phase's frame count (accepted_by_rxe)."""
    counters = vm.run(f"cat {RXE_COUNTERS}/rcvd_pkts", 10)[1].strip()
    rxe_rcvd_before[current_mtu[0]] = rxe_rcvd_before.get(current_mtu[0], 0) + (int(counters) if counters.isdigit() else 0)
    t0 = time.time()
    vm.restart()
    vm_restarts.append(current_mtu[0])
    print(f"[{time.strftime('%T')}] the peer VM restarted ({time.time() - t0:.0f} s)", flush=True)


def rxe_unacknowledged(t0):
    """Whether the capture shows rxe's last request since t0 beyond the last PSN xroce acknowledged then: rxe
    had packets xroce had not acknowledged, so a live rxe would have gone on retrying them."""
    pc = os.path.join(work, f"interop-mtu{current_mtu[0]}.pcap")
    try:
        r = subprocess.run(["tshark", "-r", pc, "-Y", f"infiniband && frame.time_epoch >= {t0:.3f}", "-T", "fields",
                            "-e", "ip.src", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn"],
                           capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return False
    req = ack = None
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 3 or not f[1].isdigit() or not f[2].isdigit():
            continue
        op, psn = int(f[1]), int(f[2])
        if f[0] == PEER and (op <= 0x0c or op in (0x13, 0x14)):   # RC requests: SEND, WRITE, READ, atomics
            req = psn
        elif f[0] == HOST and op == 0x11:   # ACK (or NAK): acknowledges up to its PSN
            ack = psn
    return req is not None and ack is not None and 0 < (req - ack) % (1 << 24) < (1 << 23)


# Both tools' exchange port. The client starts once the server listens there (a fixed wait cost 1.5-2 s
# a row, and could still lose the race on a loaded machine).
EXCHANGE_PORT = 18515


def host_listening(proc, secs=10):
    """Until the host end (proc, in NS) listens on the exchange port, it ends, or secs pass."""
    end = time.time() + secs
    while time.time() < end and proc.poll() is None:
        ss = subprocess.run(["ip", "netns", "exec", NS, "ss", "-Hltn", f"sport = :{EXCHANGE_PORT}"],
                            capture_output=True, text=True)
        if ss.stdout.strip():
            return
        time.sleep(0.05)
    if proc.poll() is None:
        print(f"     (xroce's server did not listen within {secs} s)", flush=True)


def vm_listening(vm, secs=10):
    """Until the VM's end listens on the exchange port (/proc/net/tcp*: state 0A), ends (/tmp/rc), or secs pass."""
    pat = f":{EXCHANGE_PORT:04X} 00000000:0000 0A|:{EXCHANGE_PORT:04X} 00000000000000000000000000000000:0000 0A"
    end = time.time() + secs
    while time.time() < end:
        rc, _ = vm.run(f"grep -Eq '{pat}' /proc/net/tcp /proc/net/tcp6 || [ -e /tmp/rc ]", 10)
        if rc == 0:
            return
        time.sleep(0.05)
    print(f"     (the VM's server did not listen within {secs} s)", flush=True)


def run_case(vm, name, peer_tool, xroce_args, role, mtu, extra_peer="", link="udp", attempt=1, drop_in=False,
             before="perftest's clock calibration failed in the VM"):
    """role 'vm-server': the perftest tool in the VM serves, xroce-perf connects; 'xroce-server': reverse.
    drop_in: the host end is the same Debian binary as the peer's (xroce_args its arguments, a string) on
    xroce through the drop-in libibverbs, instead of xroce-perf (dropin.py)."""
    lat = "lat" in name or "pingpong" in name
    if "pingpong" in name and not drop_in:   # rc_pingpong exchanges no MTU: both ends are told it (-m)
        xroce_args = xroce_args + ["-m", str(mtu)]
    t0 = time.time()
    vm.run(sampler(), 10)
    if drop_in:
        vm_cmd = dropin.peer_command(peer_tool, extra_peer, mtu)
        # USR1: the library prints its report before it ends (dropin.report)
        host_cmd = ["timeout", "-s", "USR1", "-k", "5", "90"] + dropin.host_command(bindir, peer_tool, xroce_args, link, HOST, RAW_ADDR, mtu)
    else:
        vm_cmd = f"{peer_tool} -d rxe0 -x 1 {extra_peer}" if "pingpong" not in name else f"{peer_tool} -d rxe0 -g 1 {extra_peer}"
        # --retry7-forever: retry_cnt 7 read as rxe reads it (see dropin.host_command)
        host_cmd = ["timeout", "90", perf] + xroce_args + ["--retry7-forever"] + (["--link", "udp", "--bind", HOST] if link == "udp" else
                                                           ["--link", link, "--ifname", "xr0", "--bind", RAW_ADDR])
    if role == "vm-server":
        # A server of an earlier row still listening (its client never came) would take this row's client.
        vm.run("for p in $(ps | awk '/ib_[a-z]*_(bw|lat)|ibv_rc_pingpong/ && !/awk/ {print $1}'); do kill -9 $p; done", 10)
        vm.run(f"rm -f /tmp/rc /tmp/o; ( timeout 90 {vm_cmd} > /tmp/o 2>&1; echo $? > /tmp/rc ) &", 10)
        vm_listening(vm)
        h = subprocess.run(["ip", "netns", "exec", NS] + host_cmd + [PEER], capture_output=True, text=True)
        hout, hrc = h.stdout + h.stderr, h.returncode
        vrc = ""
        for _ in range(60):
            vrc = vm.run("cat /tmp/rc 2>/dev/null", 10)[1].strip()
            if vrc:
                break
            time.sleep(1)
        vout = vm.run("cat /tmp/o", 10)[1]
        vrc = int(vrc) if vrc.isdigit() else None
    else:
        hp = subprocess.Popen(["ip", "netns", "exec", NS] + host_cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        host_listening(hp)
        vrc, vout = vm.run(f"timeout 90 {vm_cmd} {HOST}", 100)
        try:
            hout, _ = hp.communicate(timeout=100)
        except subprocess.TimeoutExpired:
            hp.kill()
            hout, _ = hp.communicate()
        hrc = hp.returncode
    # ibv_rc_pingpong leaves after its last receive: if xroce's last message drew no ACK, xroce says so
    # (exit 3) and the client's own success is what proves the message arrived.
    unacked = "pingpong" in name and role == "xroce-server" and hrc == 3 and vrc == 0 and not drop_in
    failure = dropin.verdict(peer_tool, role, hrc, vrc, hout, vout) if drop_in else ""
    ok = (hrc == 0 or unacked) and vrc == 0 and "FAILED" not in hout and "invalid data" not in vout and not failure
    fig = figure(vout, lat) or figure(hout, lat)
    nic = vm_nic_stalled(vm) if not ok else ""
    if nic:
        # Every row after this would fail the same way: the VM is restarted whatever the attempt.
        print(f"     {name} {role} {link}: the VM's NIC stopped sending (its watchdog: {' / '.join(nic.splitlines())}); "
              "xroce's report:\n     " + dropin.report(hout)[-3000:].replace("\n", "\n     "), flush=True)
        explain_failure(vm)
        restart_vm(vm)
        if attempt == 1:
            return run_case(vm, name, peer_tool, xroce_args, role, mtu, extra_peer, link, attempt=attempt + 1,
                            drop_in=drop_in, before="the VM's NIC stalled (its transmit watchdog fired)")
    stalled = rxe_stalled(vm) and not ok and vrc in (124, None) and role == "xroce-server" and \
        peer_tool in ("ib_send_bw", "ib_write_bw") and "loss" not in name and "reordered" not in name and \
        time.time() - t0 > SAMPLE_AT + 6 and rxe_unacknowledged(t0)
    if stalled and attempt == 1:
        print(f"     {name} {role} {link}: rxe stalled (its counters stood still from {SAMPLE_AT} to {SAMPLE_AT + 5} s); "
              "xroce's report:\n     " + dropin.report(hout)[-3000:].replace("\n", "\n     ") + "\n     once more", flush=True)
        explain_failure(vm)
        return run_case(vm, name, peer_tool, xroce_args, role, mtu, extra_peer, link, attempt=attempt + 1,
                        drop_in=drop_in, before="rxe stalled")
    if not ok and attempt < 3 and CLOCK_FAILURE in vout:
        print(f"     {name} {role} {link}: perftest's clock calibration failed in the VM; once more", flush=True)
        return run_case(vm, name, peer_tool, xroce_args, role, mtu, extra_peer, link, attempt=attempt + 1, drop_in=drop_in)
    bound = re.search(r"xdp link on xr0 queue \d+: (.*)", hout)
    if link == "xdp" and bound:
        xdp_mode.setdefault(current_mtu[0], bound.group(1).strip())
    checked = re.search(r"Data verification: (\d+) messages checked, 0 errors", hout)
    note = (f"{checked.group(1)} echoes verified" if checked else "") + ("; last ACK lost, peer confirmed" if unacked else "") \
        + (f"; run {attempt}: {before} before" if attempt > 1 else "")
    why = note if ok else (failure + ": " if failure else "") + ((hout.strip().splitlines() or [""])[-1][:120])
    results.append(dict(name=name, role=role, mtu=mtu, link=link, ok=ok, hrc=hrc, vrc=vrc, fig=fig, secs=time.time() - t0,
                        why=why, drop_in=drop_in, xfig=figure(hout, lat), pfig=figure(vout, lat)))
    print(f"{'ok  ' if ok else 'FAIL'} {name:<14} {role:<13} {link:<4} mtu {mtu}: xroce rc {hrc}, peer rc {vrc} {fig} ({time.time() - t0:.0f} s)", flush=True)
    if not ok:
        rep = dropin.report(hout) if drop_in else ""
        body = "\n".join(l for l in hout.splitlines() if l not in rep.splitlines()) if rep else hout
        print("     xroce:", body[-600:].replace("\n", "\n     "))
        print("     peer :", vout[-600:].replace("\n", "\n     "))
        if rep:
            print("     xroce's exit report:\n     " + rep[-6000:].replace("\n", "\n     "))
        explain_failure(vm)


def explain_failure(vm):
    """Evidence for a failed case: rxe's counters and the last RoCE frames the capture on the tap holds."""
    counters = vm.run("cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | grep -v ':0$'", 20)[1]
    print("     rxe counters: " + " ".join(l.replace(":", "=", 1) for l in counters.split()))
    nic = vm.run("cd /sys/class/net/eth0/statistics && echo tx_packets=$(cat tx_packets) tx_dropped=$(cat tx_dropped) "
                 "rx_packets=$(cat rx_packets) rx_dropped=$(cat rx_dropped)", 20)[1]
    print("     the VM's NIC: " + " ".join(nic.split()))
    pc = os.path.join(work, f"interop-mtu{current_mtu[0]}.pcap")
    try:
        r = subprocess.run(["tshark", "-r", pc, "-Y", "infiniband", "-T", "fields", "-e", "frame.time_relative",
                            "-e", "ip.src", "-e", "ip.id", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
                            "-e", "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome", "-e", "infiniband.aeth.msn",
                            "-e", "frame.len"], capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        print("     (the capture took too long to read)")
        return
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    print(f"     last {min(40, len(lines))} of {len(lines)} RoCE frames captured (time, src, ip id, opcode, dqp, psn,"
          " syndrome, msn, length):")
    for l in lines[-40:]:
        print("       " + l.replace("\t", " "))


LOSS_TESTS = [  # under loss: fewer iterations, every retransmission path still crossed many times
    ("pingpong", "ibv_rc_pingpong", ["pingpong", "-n", "100", "-s", "4096", "--verify"], "-n 100 -s 4096 -c"),
    ("write_bw", "ib_write_bw", ["write_bw", "-n", "100"], "-n 100"),
    ("read_bw", "ib_read_bw", ["read_bw", "-n", "100"], "-n 100"),
    ("send_bw", "ib_send_bw", ["send_bw", "-n", "100"], "-n 100"),
]


def run_fault_cases(vm, ib_mtu, label):
    """The core cases, every link and both roles, on a path that is faulty right now."""
    for name, tool, xargs, pargs in LOSS_TESTS:
        for link in LINKS:
            for role in ("vm-server", "xroce-server"):
                run_case(vm, f"{name} {label}", tool, xargs, role, ib_mtu, pargs + f" -m {ib_mtu}", link)


def run_loss_cases(vm, ib_mtu):
    """Random loss of RoCE frames (UDP 4791 only; the TCP exchange stays whole) in both directions on the
    tap, which both links' frames cross. This kernel has no netem, so an nftables netdev rule drops them;
    its counter proves the loss."""
    for loss in (1, 5):
        sh("nft add table netdev xrloss && "
           "nft add chain netdev xrloss in '{ type filter hook ingress device tap0 priority 0; }' && "
           "nft add chain netdev xrloss out '{ type filter hook egress device tap0 priority 0; }' && "
           f"nft add rule netdev xrloss in udp dport 4791 numgen random mod 100 '<' {loss} counter drop && "
           f"nft add rule netdev xrloss out udp dport 4791 numgen random mod 100 '<' {loss} counter drop",
           check=True)
        try:
            run_fault_cases(vm, ib_mtu, f"{loss}% loss")
        finally:
            out = sh("nft list table netdev xrloss", capture_output=True, text=True).stdout
            dropped = sum(int(x) for x in re.findall(r"packets (\d+)", out))
            results.append(dict(name=f"frames dropped at {loss}% loss", role="-", link="-", mtu=ib_mtu,
                                ok=dropped > 0, hrc=None, vrc=None, fig=str(dropped), secs=0,
                                why="" if dropped else "the loss rule dropped nothing"))
            print(f"     {dropped} RoCE frames dropped at {loss}% loss", flush=True)
            sh("nft delete table netdev xrloss", stderr=subprocess.DEVNULL)


def run_reorder_cases(vm, ib_mtu):
    """This kernel has no netem, so for delay and reordering the tap leaves the bridge and the impairment
    element (tests/net/impair.c) forwards between it and a veth into the bridge: RoCE frames in both
    directions are delayed 300 us, except 5 % that skip the delay and so overtake the frames before them
    (netem's "delay 300us reorder 5%"), and 1 % are lost. The capture on the tap still sees every frame
    the VM sends and receives."""
    impair = os.path.join(bindir, "impair")
    sh("ip link set dev tap0 nomaster", check=True)
    log = os.path.join(work, "impair.log")
    p = subprocess.Popen(["ip", "netns", "exec", NS, impair, "tap0", "tv0", "--loss", "1", "--delay", "300",
                          "--jitter", "0", "--reorder", "5", "--seed", "11", "--seconds", "900"],
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    time.sleep(0.3)
    try:
        run_fault_cases(vm, ib_mtu, "reordered")
    finally:
        p.terminate()
        p.wait()
        summary = open(log).read().strip()
        m = re.search(r"dropped (\d+) reordered (\d+)", summary)
        ok = bool(m and int(m.group(1)) > 0 and int(m.group(2)) > 0)
        results.append(dict(name="frames dropped / reordered by the impairment element", role="-", link="-", mtu=ib_mtu,
                            ok=ok, hrc=None, vrc=None, fig=f"{m.group(1)} / {m.group(2)}" if m else "", secs=0,
                            why="" if ok else f"the element did not drop and reorder: {summary[-120:]}"))
        print(f"     {summary}", flush=True)
        sh("ip link set dev tap0 master br0")
        time.sleep(0.3)


def run_dropin_cases(vm, ib_mtu, only, mtu):
    """The same Debian binaries on both ends, on xroce through the drop-in libibverbs on the host (dropin.py)."""
    xdev = sh(f"{os.path.join(bindir, 'xroce-run')} --link udp --addr {HOST} ibv_devinfo -v", capture_output=True, text=True)
    vdev = vm.run("ibv_devinfo -d rxe0 -v", 30)[1]
    limits = (dropin.max_qp_rd_atom(xdev.stdout), dropin.max_qp_rd_atom(vdev))
    rd_atom.update(xroce0=limits[0], rxe0=limits[1])
    if None in limits:
        raise RuntimeError(f"no max_qp_rd_atom from ibv_devinfo -v (xroce0, rxe0: {limits}): {xdev.stderr.strip()[-200:]}")
    for tool, args in dropin.selected(only, min(limits), mtu):
        if " -g " in args:
            vm.run(dropin.hold_group(PEER), 10)
        for link in LINKS:
            for role in ("vm-server", "xroce-server"):
                run_case(vm, f"{tool} {args}", tool, args, role, ib_mtu, args, link, drop_in=True)


TESTS = [  # name, perftest tool, xroce-perf args, peer args
    ("pingpong", "ibv_rc_pingpong", ["pingpong", "-n", "200", "-s", "4096", "--verify"], "-n 200 -s 4096 -c"),
    ("write_bw", "ib_write_bw", ["write_bw", "-n", "300"], "-n 300"),
    ("read_bw", "ib_read_bw", ["read_bw", "-n", "300"], "-n 300"),
    ("send_bw", "ib_send_bw", ["send_bw", "-n", "300"], "-n 300"),
    ("atomic_bw", "ib_atomic_bw", ["atomic_bw", "-n", "300"], "-n 300"),
    ("write_lat", "ib_write_lat", ["write_lat", "-n", "300"], "-n 300"),
    ("read_lat", "ib_read_lat", ["read_lat", "-n", "300"], "-n 300"),
    ("send_lat", "ib_send_lat", ["send_lat", "-n", "300"], "-n 300"),
    # the other QP types and SRQs (issue 14); UC with 1 KiB messages, as the drop-in rows (dropin.py)
    ("send_bw -c UD", "ib_send_bw", ["send_bw", "-n", "300", "-c", "UD"], "-n 300 -c UD"),
    ("send_lat -c UD", "ib_send_lat", ["send_lat", "-n", "300", "-c", "UD"], "-n 300 -c UD"),
    ("write_bw -c UC", "ib_write_bw", ["write_bw", "-n", "300", "-s", "1024", "-c", "UC"], "-n 300 -s 1024 -c UC"),
    ("send_bw -c UC", "ib_send_bw", ["send_bw", "-n", "300", "-s", "1024", "-c", "UC"], "-n 300 -s 1024 -c UC"),
    ("send_bw --use-srq", "ib_send_bw", ["send_bw", "-n", "300", "--use-srq"], "-n 300 --use-srq"),
    # UD multicast (D8): the receiving end's QP joins 239.1.1.1, the sender sends to QPN 0xFFFFFF there
    ("send_bw -g", "ib_send_bw", ["send_bw", "-n", "300", "-g", "-M", dropin.MGID], f"-n 300 -g -M {dropin.MGID}"),
]


def main():
    t0 = time.time()
    built = subprocess.run([os.path.join(here, "build_image.sh")], env=dict(os.environ, CACHE=cache),
                           capture_output=True, text=True)
    image = built.stdout.strip().splitlines()[-1] if built.returncode == 0 else ""
    if not image.startswith("/"):
        print("FAIL: could not build the peer VM image:\n" + built.stdout + built.stderr)
        return 1
    print(f"[{time.strftime('%T')}] the peer VM's image is ready ({time.time() - t0:.0f} s)", flush=True)
    versions = {}
    for mtu in ([1500] if quick else [1500, 9000]):
        teardown_ns()
        setup_ns(mtu)
        current_mtu[0] = mtu
        # Whole frames, up to 1 GB per capture (the reordering cases alone send ~3 GB): the cap keeps a
        # CI machine with little disk whole; docs/interop.md says how many frames were checked.
        cap = subprocess.Popen(["ip", "netns", "exec", NS, "tshark", "-i", "tap0", "-q", "-f", "udp port 4791",
                                "-a", f"filesize:{CAPTURE_CAP // 1000}", "-w", os.path.join(work, f"interop-mtu{mtu}.pcap")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        vm = None
        try:
            t0 = time.time()
            vm = VM(NS, image, PEER, "fd77::2", mtu, os.path.join(work, f"vm-mtu{mtu}.log"))
            print(f"[{time.strftime('%T')}] IP MTU {mtu}: the peer VM is up ({time.time() - t0:.0f} s)", flush=True)
            if not versions:
                versions["perftest"] = vm.run("ib_write_bw --version", 20)[1].strip()
                versions["kernel"] = vm.run("uname -r", 10)[1].strip()
            ib_mtu = 1024 if mtu == 1500 else 4096
            only = os.environ.get("XR_ONLY", "").split(",") if os.environ.get("XR_ONLY") else None
            for name, tool, xargs, pargs in TESTS:
                if only and name not in only:
                    continue
                if mtu != 1500 and name not in ("write_bw", "read_bw", "pingpong"):
                    continue
                if " -g " in pargs:
                    vm.run(dropin.hold_group(PEER), 10)
                for link in LINKS:
                    for role in ("vm-server", "xroce-server"):
                        run_case(vm, name, tool, xargs, role, ib_mtu, pargs + f" -m {ib_mtu}", link)
            if dropin.selected(only, 0, mtu):
                run_dropin_cases(vm, ib_mtu, only, mtu)
            if mtu == 1500 and (not only or "loss" in only):
                run_loss_cases(vm, ib_mtu)
            if mtu == 1500 and (not only or "reorder" in only):
                run_reorder_cases(vm, ib_mtu)
            # rxe's own view: ICRC or other drops counted by the peer
            counters = vm.run("for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do echo $(basename $f)=$(cat $f); done", 20)[1]
            versions[f"rxe counters after mtu {mtu}"] = " ".join(x for x in counters.split() if not x.endswith("=0"))
            m = re.search(r"\brcvd_pkts=(\d+)", counters)
            rxe_rcvd[mtu] = int(m.group(1)) + rxe_rcvd_before.get(mtu, 0) if m else None
        except Exception as e:  # a boot failure or a harness error is a failed run, never a skip
            print(f"FAIL: {e}")
            results.append(dict(name="harness", role="-", link="-", mtu=mtu, ok=False, hrc=None, vrc=None, fig="", secs=0, why=str(e)[:120]))
        finally:
            if vm:
                vm.close()
            cap.terminate()
            cap.wait()
            teardown_ns()
    # Wire evidence: tshark must dissect every captured RoCE header without a malformed one.
    # Wireshark also guesses what an RDMA payload carries (Ethertype, CRTP, STP, IDP, RPC over
    # RDMA) and calls some guesses malformed for perftest's payloads as much as for ours; those
    # frames have a protocol after "infiniband" and are counted apart, for information.
    malformed = guessed = 0
    for mtu in ([1500] if quick else [1500, 9000]):
        pc = os.path.join(work, f"interop-mtu{mtu}.pcap")
        if os.path.exists(pc):
            accepted_by_rxe(pc, mtu, versions)
            for filt, var in (('_ws.malformed && frame.protocols matches ":infiniband$"', "m"),
                              ('_ws.malformed && !(frame.protocols matches ":infiniband$")', "g")):
                r = subprocess.run(["tshark", "-r", pc, "-Y", filt], capture_output=True, text=True)
                n = len([l for l in r.stdout.splitlines() if l.strip()])
                if var == "m":
                    malformed += n
                else:
                    guessed += n
    versions["frames whose payload Wireshark guessed as another protocol and called malformed"] = str(guessed)
    if vm_restarts:
        versions["peer VM restarted after its NIC stalled (IP MTU phase of each)"] = ", ".join(map(str, vm_restarts))
    for mtu, mode in xdp_mode.items():
        versions[f"XDP link on xr0 (veth), mtu {mtu}"] = mode
    write_doc(versions, malformed)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)} of {len(results)} interop cases passed; malformed frames: {malformed}")
    return 0 if not failed and malformed == 0 else 1


def accepted_by_rxe(pc, mtu, versions):
    """rxe has no ICRC counter, but counts rcvd_pkts only for packets that passed its checks, ICRC
    included. So it must have counted at least every RoCE frame the capture saw going to it (more if
    the capture missed some). Checked when the capture holds the whole phase."""
    r = subprocess.run(["tshark", "-r", pc, "-Y", f"ip.dst=={PEER} && udp.dstport==4791", "-T", "fields",
                        "-e", "frame.number"], capture_output=True, text=True)
    to_rxe = len([l for l in r.stdout.splitlines() if l.strip()])
    whole = os.path.getsize(pc) < CAPTURE_CAP - 16_000_000   # tshark stops a little past the cap
    rcvd = rxe_rcvd.get(mtu)
    versions[f"RoCE frames captured going to rxe, mtu {mtu}"] = \
        f"{to_rxe}; rxe's rcvd_pkts {rcvd}" + ("" if whole else " (capture capped at 1 GB: not compared)")
    if whole:
        ok = rcvd is not None and rcvd >= to_rxe
        results.append(dict(name="rxe accepted every frame sent to it (rcvd_pkts >= captured)", role="-", link="-",
                            mtu=1024 if mtu == 1500 else 4096, ok=ok, hrc=None, vrc=None, fig=f"{rcvd} >= {to_rxe}",
                            secs=0, why="" if ok else "rxe dropped frames xroce sent: ICRC or header checks"))


def write_doc(versions, malformed):
    with open(doc_out, "w") as f:
        f.write("# xroce interop with Linux Soft-RoCE (rxe) and perftest\n\n")
        f.write(f"Written by `tests/interop/run_interop.py` on {datetime.date.today()}; do not edit.\n\n")
        f.write("The peer is Debian's kernel rxe driver with rdma-core and perftest in a qemu (TCG) VM on a tap\n"
                "device in a network namespace. The tap and a veth pair share a bridge; xroce runs xroce-perf in the\n"
                "same namespace, over its UDP link (the kernel's address on the bridge), over its raw Ethernet link\n"
                "and over its AF_XDP link (both on the veth end, with their own address, answering ARP themselves; the\n"
                "veth offers native XDP, the tap would not). Every RoCE frame crosses the tap, where\n"
                "the capture is taken and, for the loss cases, an nftables rule drops RoCE frames at random in both\n"
                "directions (this kernel has no netem). For the `reordered` cases the tap leaves the bridge and the\n"
                "impairment element (`tests/net/impair.c`) forwards between them: RoCE frames delayed 300 us, 5 %\n"
                "overtaking, 1 % lost, both directions. Roles: `vm-server` = the perftest tool in the VM serves and\n"
                "xroce-perf connects; `xroce-server` = the reverse. Pingpong runs with `ibv_rc_pingpong -c` and\n"
                "`xroce-perf --verify`: every echo is compared with what was sent. The second table runs Debian's own\n"
                "perftest and ibv_rc_pingpong on xroce too, through the drop-in libibverbs. Figures are from the emulated\n"
                "VM (TCG) on a shared 2-core host, a functional peer, not a speed reference. A row runs a second time\n"
                "only when the peer failed by itself, and its note says why: perftest's clock calibration failed in the\n"
                "VM; the VM's NIC stopped sending (its transmit watchdog fired; the VM is restarted); or rxe stalled\n"
                "(it had retried in the row, with packets xroce had not acknowledged, then its counters stood still\n"
                "though it retries for ever).\n\n")
        for k, v in versions.items():
            f.write(f"- {k}: `{v}`\n")
        f.write(f"- frames whose RoCE headers tshark found malformed: {malformed}\n\n")
        f.write("## xroce-perf against perftest, and the checks over all of a phase's frames\n\n")
        f.write("| case | role | xroce link | path MTU | result | figure (peer's report) | note |\n|---|---|---|---|---|---|---|\n")
        for r in results:
            if not r.get("drop_in"):
                f.write(f"| {r['name']} | {r['role']} | {r['link']} | {r['mtu']} | {'pass' if r['ok'] else 'FAIL'} | {r['fig']} | "
                        f"{r['why'] if r['ok'] else 'xroce rc %s, peer rc %s: %s' % (r['hrc'], r['vrc'], r['why'].replace('|', '/'))} |\n")
        f.write("\n## perftest on xroce through the drop-in libibverbs\n\n")
        f.write("The same Debian binaries on both ends: on the host unmodified, on xroce through `build/lib/ibverbs`\n"
                "(`xroce-run --link udp --addr %s TOOL -d xroce0 -x 0 -F ...`, or `--link raw|xdp --ifname xr0 --addr %s`;\n"
                "`ibv_rc_pingpong -d xroce0 -g 0`), in the VM on rxe (`-d rxe0 -x 1`, `ibv_rc_pingpong -g 1`), both told the\n"
                "path MTU with `-m`. `vm-server` = the VM's binary serves and the host's connects; `xroce-server` = the\n"
                "reverse. A row passes when both ends exit 0 and print their result rows (the passive servers of\n"
                "`ib_read_lat` and `ib_atomic_lat` print none, on rxe as on xroce: there the client's row is required),\n"
                "and neither end reports a failure (`ibv_rc_pingpong -c`: its server checks its buffer after the last\n"
                "receive, the first byte of every page, and prints `invalid data` otherwise). perftest takes the number of\n"
                "outstanding reads the *peer* announces as its own QP's `max_rd_atomic`, by default the peer device's\n"
                "`max_qp_rd_atom`: rxe0's (%s) is above xroce0's (%s), which xroce refuses at RTS as rxe and mlx5 refuse\n"
                "more than their own. As between any two devices with different limits, the read and atomic tools are\n"
                "given `-o` with the smaller one on both ends. The wire checks of the first table (malformed frames, rxe's\n"
                "`rcvd_pkts`) cover these rows' frames too. On both tables the host end reads `retry_cnt` 7 as rxe does,\n"
                "without end (`XROCE_RETRY7_FOREVER=1`, `xroce-perf --retry7-forever`): the emulated VM can stall longer\n"
                "than seven retries of 67 ms, and rxe waits such a stall out.\n\n"
                % (HOST, RAW_ADDR, rd_atom.get("rxe0", "?"), rd_atom.get("xroce0", "?")))
        f.write("| case | role | xroce link | path MTU | result | xroce end's report | rxe end's report | note |\n"
                "|---|---|---|---|---|---|---|---|\n")
        for r in results:
            if r.get("drop_in"):
                f.write(f"| {r['name']} | {r['role']} | {r['link']} | {r['mtu']} | {'pass' if r['ok'] else 'FAIL'} | "
                        f"{r['xfig'] or '-'} | {r['pfig'] or '-'} | "
                        f"{r['why'] if r['ok'] else 'xroce rc %s, peer rc %s: %s' % (r['hrc'], r['vrc'], r['why'].replace('|', '/'))} |\n")


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        teardown_ns()
