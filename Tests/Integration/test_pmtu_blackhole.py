"""The stuck path of issue 14: a PMTU black hole between the publisher and nginx-rtmp.

Three network namespaces, publisher -> router -> nginx, with 9000-byte MTUs; 8 s into the run
the router's egress towards nginx gets a tbf qdisc whose burst (4000 bytes) is smaller than a
full segment: small packets (handshake, commands, ACKs) pass, full-size segments never do.

- The run ends in exit 4 with a downtime report (never exit 0 after losing the stream).
- A broken connection is reset (RST), not closed with a FIN queued behind bytes that cannot
  pass: nginx drops the old session at once, so the reconnect is accepted instead of meeting
  "already publishing" (measured with a FIN close: six refusals over 50 s, see the README).

Needs root (network namespaces and tc), like the soak test's memory cgroup.

Run: scripts/test --no-bootstrap --integration-only -k test_pmtu_blackhole
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import BROADCAST_BIN, BroadcastTestCase, new_key  # noqa: E402
from support import exclusive  # noqa: E402


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


def wait_listening(ns: str, proc: subprocess.Popen, port: int = 1935, timeout: float = 10.0) -> None:
    """Polls until something listens on TCP `port` inside namespace `ns` (nginx started by `proc`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"nginx in {ns} exited with {proc.returncode} before listening")
        r = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"],
                           capture_output=True, text=True, timeout=10)
        if r.stdout.strip():
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} in {ns} after {timeout:.0f} s")


def can_make_namespaces() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None


@exclusive("downtime on a black-holed path")
@unittest.skipUnless(can_make_namespaces(), "needs root, ip and tc (network namespaces)")
class PMTUBlackHoleTest(BroadcastTestCase):
    SECONDS = 32
    STALL_AT = 8

    def setUp(self):
        super().setUp()
        tag = f"bk{os.getpid() % 100000}"
        self.a, self.r, self.b = f"{tag}a", f"{tag}r", f"{tag}b"
        for ns in (self.a, self.r, self.b):
            sh("ip", "netns", "add", ns)
            self.addCleanup(subprocess.run, ["ip", "netns", "del", ns], capture_output=True)
        sh("ip", "link", "add", f"{tag}a0", "type", "veth", "peer", "name", f"{tag}r0")
        sh("ip", "link", "add", f"{tag}r1", "type", "veth", "peer", "name", f"{tag}b0")
        self.router_if = f"{tag}r1"
        for ns, dev, addr in ((self.a, f"{tag}a0", "10.77.1.1/24"), (self.r, f"{tag}r0", "10.77.1.2/24"),
                              (self.r, f"{tag}r1", "10.77.2.1/24"), (self.b, f"{tag}b0", "10.77.2.2/24")):
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "link", "set", dev, "mtu", "9000")
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        for ns in (self.a, self.b):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.a, "route", "add", "default", "via", "10.77.1.2")
        sh("ip", "-n", self.b, "route", "add", "default", "via", "10.77.2.1")
        sh("ip", "netns", "exec", self.r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        (self.tmp / "rec").mkdir()
        conf = self.tmp / "nginx.conf"
        conf.write_text(
            "load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;\n"
            f"daemon off; master_process off; worker_processes 1; pid {self.tmp}/nginx.pid;\n"
            f"error_log {self.tmp}/error.log info;\nevents {{ worker_connections 64; }}\n"
            "rtmp { server { listen 10.77.2.2:1935; chunk_size 4096;\n"
            f"  application live {{ live on; record all; record_path {self.tmp}/rec; record_unique on; }} }} }}\n")
        self.nginx = subprocess.Popen(["ip", "netns", "exec", self.b, "nginx", "-c", str(conf), "-p", str(self.tmp),
                                       "-e", str(self.tmp / "error.log")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (self.nginx.kill(), self.nginx.wait(timeout=10)))
        wait_listening(self.b, self.nginx)

    def run_with_stall(self, stall) -> None:
        key = new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        err = self.track_file(self.tmp / "stderr.txt")
        with err.open("wb") as e:
            proc = subprocess.Popen(["ip", "netns", "exec", self.a, "env", f"STREAM_KEY={key}", str(BROADCAST_BIN),
                                     "--source", "test", "--res", "480p", "--video-bitrate", "1500",
                                     "--duration", str(self.SECONDS), "--url", "rtmp://10.77.2.2:1935/live",
                                     "--stats-json", str(stats), "--reconnect-attempts", "0"],
                                    stdout=subprocess.DEVNULL, stderr=e)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        time.sleep(self.STALL_AT)
        stall()
        code = proc.wait(timeout=self.SECONDS + 30)
        text = err.read_text()
        self._captured_texts.append(text)
        self.assertEqual(code, 4, text)
        errors = [l for l in text.splitlines() if l.startswith("broadcast: error:")]
        self.assertEqual(len(errors), 1, text)
        self.assertRegex(errors[0], r"(down for|nothing got through for) \d+\.\d s", text)
        last = [json.loads(l) for l in stats.read_text().splitlines() if l.strip()][-1]
        # Down from the stall (STALL_AT) to the end, less the brief live spells after each reconnect.
        self.assertGreater(last["downtime_s"], 0.5 * (self.SECONDS - self.STALL_AT), last)
        # The RST freed nginx's session: the reconnect was accepted, never "already publishing".
        self.assertNotIn("already publishing", text)
        self.assertGreaterEqual(last["reconnects"], 1, text)

    def test_black_hole_ends_in_exit_4_with_downtime_and_no_stale_lockout(self):
        """The stuck path: a tbf whose burst is below the MTU."""
        self.run_with_stall(lambda: sh("ip", "netns", "exec", self.r, "tc", "qdisc", "add", "dev", self.router_if,
                                       "root", "tbf", "rate", "200mbit", "burst", "4000", "limit", "100000"))


def nft_available() -> bool:
    return can_make_namespaces() and shutil.which("nft") is not None


@exclusive("downtime on a black-holed path")
@unittest.skipUnless(nft_available(), "needs root, ip, tc and nft (network namespaces)")
class FullBlackHoleTest(BroadcastTestCase):
    """Issue 22, defect 9: every packet to and from the ingest dropped for HOLE seconds (nftables
    in a network namespace, loopback MTU 1500), then the path returns.

    The sender notices the stall (no progress for 10 s) inside the hole. An RST sent then is lost
    and never repeated, so nginx-rtmp kept the old session and answered "already publishing" to
    every reconnect until its own timeout (main at e189c00~: exit 4 after 68 s down). Now the
    broken connection is kept open and reset when the next TCP connect succeeds, i.e. once the
    path carries packets: the stream resumes."""

    HOLE_AT = 4
    HOLE = 15
    SECONDS = 30

    def setUp(self):
        super().setUp()
        self.ns = f"bkh{os.getpid() % 100000}"
        sh("ip", "netns", "add", self.ns)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", self.ns], capture_output=True)
        sh("ip", "-n", self.ns, "link", "set", "lo", "mtu", "1500")
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        (self.tmp / "rec").mkdir()
        conf = self.tmp / "nginx.conf"
        conf.write_text(
            "load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;\n"
            f"daemon off; master_process off; worker_processes 1; pid {self.tmp}/nginx.pid;\n"
            f"error_log {self.tmp}/error.log info;\nevents {{ worker_connections 64; }}\n"
            "rtmp { server { listen 127.0.0.1:1935; chunk_size 4096;\n"
            f"  application live {{ live on; record all; record_path {self.tmp}/rec; record_unique on; }} }} }}\n")
        self.nginx = subprocess.Popen(["ip", "netns", "exec", self.ns, "nginx", "-c", str(conf), "-p", str(self.tmp),
                                       "-e", str(self.tmp / "error.log")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (self.nginx.kill(), self.nginx.wait(timeout=10)))
        wait_listening(self.ns, self.nginx)

    def nft(self, *args: str) -> None:
        sh("ip", "netns", "exec", self.ns, "nft", *args)

    def test_black_holed_path_resumes_once_the_path_returns(self):
        key = new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        err = self.track_file(self.tmp / "stderr.txt")
        with err.open("wb") as e:
            proc = subprocess.Popen(["ip", "netns", "exec", self.ns, "env", f"STREAM_KEY={key}", str(BROADCAST_BIN),
                                     "--source", "test", "--res", "360p", "--video-bitrate", "800",
                                     "--duration", str(self.SECONDS), "--url", "rtmp://127.0.0.1:1935/live",
                                     "--stats-json", str(stats), "--reconnect-attempts", "0",
                                     "--reconnect-delay", "0.5"],
                                    stdout=subprocess.DEVNULL, stderr=e)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        time.sleep(self.HOLE_AT)
        self.nft("add", "table", "inet", "hole")
        self.nft("add", "chain", "inet", "hole", "in", "{ type filter hook input priority 0; }")
        self.nft("add", "rule", "inet", "hole", "in", "tcp", "dport", "1935", "drop")
        self.nft("add", "rule", "inet", "hole", "in", "tcp", "sport", "1935", "drop")
        time.sleep(self.HOLE)
        self.nft("delete", "table", "inet", "hole")
        returned = time.monotonic()
        code = proc.wait(timeout=self.SECONDS + 30)
        text = err.read_text()
        self._captured_texts.append(text)
        lines = [json.loads(l) for l in stats.read_text().splitlines() if l.strip()]
        last = lines[-1]
        self.assertEqual(code, 0, text)
        self.assertGreaterEqual(last["reconnects"], 1, text)
        self.assertEqual(last["state"], "finished", last)
        # Live again within a few seconds of the path's return (the next reconnect attempt).
        self.assertIn("reconnected", text)
        self.assertLess(last["downtime_s"], self.HOLE + 8, last)
        self.assertEqual(len([l for l in text.splitlines() if "already publishing" in l]), 0, text)


if __name__ == "__main__":
    unittest.main()
