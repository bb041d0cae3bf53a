#!/usr/bin/python3
"""Linux rxe as a device under test: the interop VM (vm.py, the image of
build_image.sh, which carries conf_agent) booted in a network namespace of
its own, with the verbs agent listening in it. `conformance_run --rxe`
reaches it through `run()`, which runs a command in the namespace.
Shared by run_conformance_rxe.py (the scripts) and
tests/conformance/diff_rxe.py (the differential campaign)."""
import os
import subprocess
import time

from vm import VM

HOST, PEER, PORT = "10.78.0.1", "10.78.0.2", 18515
MTU = 9000   # rxe's active MTU 4096: every path MTU a script asks for is allowed


class RxeAgentVM:
    """with RxeAgentVM(build_dir) as v: v.run([runner, "--rxe", v.agent, v.host, ...])"""

    def __init__(self, build_dir, tag="xrconf", pcap=None):
        self.bindir = os.path.join(build_dir, "bin")
        self.cache = os.path.join(build_dir, "interop-cache")
        self.work = os.path.join(build_dir, "interop")
        os.makedirs(self.work, exist_ok=True)
        self.ns = f"{tag}{os.getpid()}"
        self.pcap = pcap
        self.vm = self.cap = None
        self.kernel = "?"
        self.agent, self.host = f"{PEER}:{PORT}", HOST

    def image(self):
        here = os.path.dirname(os.path.abspath(__file__))
        built = subprocess.run([os.path.join(here, "build_image.sh")], env=dict(os.environ, CACHE=self.cache),
                               capture_output=True, text=True)
        image = built.stdout.strip().splitlines()[-1] if built.returncode == 0 and built.stdout.strip() else ""
        if not image.startswith("/"):
            raise RuntimeError("could not build the peer VM image:\n" + built.stdout + built.stderr)
        return image

    def sh(self, cmd, **kw):
        return subprocess.run(["ip", "netns", "exec", self.ns, "sh", "-c", cmd], **kw)

    def run(self, argv, **kw):
        """Runs argv inside the namespace (where the tap and the VM are)."""
        return subprocess.run(["ip", "netns", "exec", self.ns] + argv, **kw)

    def teardown_ns(self):
        subprocess.run(f"ip netns pids {self.ns} 2>/dev/null | xargs -r kill -9", shell=True)
        subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)

    def __enter__(self):
        image = self.image()
        self.teardown_ns()
        try:
            subprocess.run(["ip", "netns", "add", self.ns], check=True)
            self.sh(f"ip link set lo up && ip tuntap add tap0 mode tap && ip link set tap0 mtu {MTU} up && "
                    f"ip addr add {HOST}/24 dev tap0", check=True)
            if self.pcap:
                self.cap = subprocess.Popen(["ip", "netns", "exec", self.ns, "tshark", "-i", "tap0", "-q", "-f",
                                             "udp port 4791", "-w", self.pcap],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.vm = VM(self.ns, image, PEER, "fd78::2", MTU, os.path.join(self.work, f"vm-{self.ns}.log"))
            self.kernel = self.vm.run("uname -r", 10)[1].strip()
            self.start_agent()
        except BaseException:
            self.close()
            raise
        return self

    def start_agent(self):
        self.vm.run(f"conf_agent {PORT} > /tmp/agent.log 2>&1 &", 10)
        # The agent is up when it accepts a connection (the runner connects again).
        for _ in range(50):
            if self.run(["python3", "-c", f"import socket; socket.create_connection(('{PEER}', {PORT}), 1)"],
                        stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.2)

    def alive(self):
        return self.vm is not None and self.vm.p.poll() is None

    def restart(self):
        """A fresh VM and agent (after a script crashed rxe's kernel)."""
        self.vm.restart()
        self.start_agent()

    def agent_log(self):
        return self.vm.run("cat /tmp/agent.log", 10)[1] if self.vm else ""

    def close(self):
        if self.vm:
            self.vm.close()
            self.vm = None
        if self.cap:
            self.cap.terminate()
            self.cap.wait()
            self.cap = None
        self.teardown_ns()

    def __exit__(self, *exc):
        self.close()
