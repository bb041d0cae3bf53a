#!/usr/bin/python3
"""The peer VM: qemu (TCG) inside a network namespace, driven over its serial
console by the agent in guest-init.sh (each command answers with its exit
status). Written for xroce's interop harness."""
import os
import select
import subprocess
import time


class VM:
    def __init__(self, ns, image, ip, ip6, mtu, log):
        self.args = (ns, image, ip, ip6, mtu, log)
        self.boots = 0
        self._boot()

    def _boot(self):
        ns, image, ip, ip6, mtu, log = self.args
        self.boots += 1
        self.log = open(log, "ab")
        cmd = ["ip", "netns", "exec", ns, "qemu-system-x86_64", "-accel", "tcg", "-m", "768", "-smp", "1",
               "-nographic", "-no-reboot", "-kernel", os.path.join(image, "vmlinuz"),
               "-initrd", os.path.join(image, "initrd.gz"),
               "-append", f"console=ttyS0 quiet panic=-1 xr_ip={ip} xr_ip6={ip6} xr_mtu={mtu}",
               "-netdev", "tap,id=n0,ifname=tap0,script=no,downscript=no",
               # No checksum or segmentation offload between VM and tap: every frame on the tap is a
               # whole, checksummed wire frame, as the impairment element (which forwards frames as
               # bytes) and a real wire need.
               "-device", "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,csum=off,guest_csum=off,gso=off,"
                          "host_tso4=off,host_tso6=off,guest_tso4=off,guest_tso6=off"]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.buf = b""
        ok, out = self._until(b"__XR_READY__", 120)
        if not ok:
            raise RuntimeError("the VM did not boot:\n" + out[-2000:])

    def _until(self, marker, timeout):
        end = time.time() + timeout
        while marker not in self.buf:
            left = end - time.time()
            if left <= 0 or self.p.poll() is not None:
                return False, self.buf.decode(errors="replace")
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    return False, self.buf.decode(errors="replace")
                self.log.write(chunk)
                self.log.flush()
                self.buf += chunk
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return True, out.decode(errors="replace")

    def run(self, line, timeout=120):
        """Runs a shell line in the VM; returns (exit status or None on timeout, output)."""
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()
        end = time.time() + timeout
        while True:
            ok, out = self._until(b"__", max(0.1, end - time.time()))
            if not ok:
                return None, out
            # Collect up to the status marker "__XR_RC=<n>__".
            ok2, rest = self._until(b"__", max(0.1, end - time.time()))
            text = out + rest
            if "__XR_RC=" in text:
                head, _, tail = text.rpartition("__XR_RC=")
                return int(tail.rstrip("_").strip() or "255"), head
            if not ok2:
                return None, text

    def restart(self):
        """A fresh VM on the same tap (the tap outlives qemu: setup_ns made it)."""
        self.close()
        self._boot()

    def close(self):
        try:
            self.p.stdin.write(b"poweroff -f\n")
            self.p.stdin.flush()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()
            self.p.wait()
        self.log.close()
