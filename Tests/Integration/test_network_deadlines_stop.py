"""Issue 37, the waits that did not wake on a stop: the WHIP DTLS handshake, the SRT caller's
connect and name resolution (getaddrinfo). Each against a peer we script (tools/slow_peer.py),
both it and broadcast in a private, loopback-only network namespace (`unshare -m -n`; broadcast
joins it with nsenter):

- WHIP: an endpoint whose ICE answers and whose DTLS never does (setup passive: our ClientHello
  goes unanswered; setup active: its ClientHello never comes);
- SRT: a listener address that reads every datagram and answers none (a black hole);
- DNS: the namespace's /etc/resolv.conf (bind-mounted) names a server on 127.0.0.1:53 that reads
  the queries and never answers, with glibc's own retry options (timeout:30 attempts:3): the real
  getaddrinfo waits about a minute and a half.

Each case with --duration 5: exit 3 within the 5 s connect deadline (+ the stop's 2 s), one line;
then the same with SIGTERM at t = 3 s: exit 0 within 2 s of the signal, the one "stopping" line.
A wait that wakes on the stop returns in milliseconds, so the exit is also held to 1 s after the
signal: main (cea4dda) waited for the fixed 5 s (DTLS, SRT: +2.1 to +2.3 s after a signal at 3 s)
or for glibc (DNS: 30 s and more).
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

import support
from support import new_key
from test_network_deadlines import DEADLINE_S, SLOW_PEER, STOP_S, DeadlineTestBase, Timed

PY = sys.executable
# A wait woken by the stop returns at once; 1 s leaves room for a loaded machine, and is well
# under what a fixed 5 s wait started before the signal at 3 s leaves (2 s and more).
WOKEN_S = 1.0
HAVE_NETNS = os.geteuid() == 0 and shutil.which("unshare") and shutil.which("nsenter") and shutil.which("ip")


class NetnsPeer:
    """A tools/slow_peer.py process that is the holder of a fresh mount + network namespace (only
    `lo`, brought up): its pid names the namespace for nsenter. `mounts` are (file, target) bind
    mounts made inside it (private to it: `unshare -m` makes the mounts private)."""

    def __init__(self, tmp: Path, mode: str, *extra, port: int = 0, mounts=()):
        self.log = tmp / f"peer-{mode}.log"
        binds = " && ".join(f"mount --bind '{src}' '{dst}'" for src, dst in mounts)
        script = "ip link set lo up" + (f" && {binds}" if binds else "") + ' && exec "$@"'
        argv = [PY, str(SLOW_PEER), mode, "--port", str(port), "--log", str(self.log), *map(str, extra)]
        self.proc = subprocess.Popen(["unshare", "-m", "-n", "sh", "-c", script, "sh", *argv],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        if not line:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
            raise AssertionError(f"slow_peer.py {mode} did not start in its namespace: {err}")
        self.port = json.loads(line)["port"]

    @property
    def enter(self) -> list[str]:
        return ["nsenter", "-t", str(self.proc.pid), "-m", "-n", "--"]

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@unittest.skipUnless(HAVE_NETNS, "needs root, unshare, nsenter and ip (private network namespaces)")
@support.exclusive("time from a stop or a deadline to the exit")
class StopWakesEveryWaitTests(DeadlineTestBase):
    def netns_peer(self, mode: str, *extra, port: int = 0, mounts=()) -> NetnsPeer:
        p = NetnsPeer(self.tmp, mode, *extra, port=port, mounts=mounts)
        self.addCleanup(p.stop)
        return p

    def run_in(self, peer: NetnsPeer, url: str, seconds: float) -> Timed:
        run = Timed(["--url", url, "--source", "test", "--res", "360p", "--fps", "30", "--duration", str(seconds),
                     "--quiet"], env={"STREAM_KEY": new_key()}, prefix=peer.enter)
        self.addCleanup(lambda: run.proc.poll() is None and (run.proc.kill(), run.proc.wait()))
        return run

    def assertDeadlineExitIn(self, peer: NetnsPeer, url: str, what: str, says: str) -> Timed:
        run = self.run_in(peer, url, 5)
        code = self.finished(run)
        print(f"\n--- {what}, --duration 5: {run.describe()}; peer {peer.events()[:4]}", file=sys.stderr)
        self.assertEqual(code, 3, run.describe())
        self.assertGreaterEqual(run.exit_at, DEADLINE_S - 0.5, run.describe())
        self.assertLessEqual(run.exit_at, DEADLINE_S + STOP_S, run.describe())
        self.assertEqual(len(run.text_lines()), 1, run.describe())
        self.assertIn(says, run.text_lines()[0], run.describe())
        return run

    def assertSignalExitIn(self, peer: NetnsPeer, url: str, what: str) -> Timed:
        run = self.run_in(peer, url, 30)
        run.sigterm_at(3.0)
        code = self.finished(run)
        print(f"\n--- {what}, SIGTERM at {run.signal_at:.2f} s: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 0, run.describe())
        self.assertLess(run.exit_at - run.signal_at, STOP_S, run.describe())
        self.assertLess(run.exit_at - run.signal_at, WOKEN_S, f"the wait was not woken by the stop: {run.describe()}")
        self.assertEqual([line for _, line in run.lines], ["broadcast: stopping (a second signal exits at once)"],
                         run.describe())
        return run

    # WHIP: ICE answered, DTLS never.

    def assertDTLSStalled(self, peer: NetnsPeer):
        events = peer.events()
        self.assertTrue(any(e.get("method") == "POST" for e in events), events)
        # Our ClientHello (and its resends) reached the endpoint: ICE was done, DTLS stalled.
        self.assertTrue(any(e.get("event") == "dtls-dropped" for e in events), events)

    def test_whip_dtls_silent_deadline(self):
        peer = self.netns_peer("whip-dtls-silent")
        self.assertDeadlineExitIn(peer, f"http://127.0.0.1:{peer.port}/whip/live", "whip DTLS never answered",
                                  "DTLS handshake not done within")
        self.assertDTLSStalled(peer)

    def test_whip_dtls_silent_sigterm(self):
        peer = self.netns_peer("whip-dtls-silent")
        self.assertSignalExitIn(peer, f"http://127.0.0.1:{peer.port}/whip/live", "whip DTLS never answered")
        self.assertDTLSStalled(peer)

    def test_whip_dtls_client_never_comes_sigterm(self):
        """The endpoint is the DTLS client (a=setup:active) and never sends its ClientHello."""
        peer = self.netns_peer("whip-dtls-silent", "--setup", "active")
        self.assertSignalExitIn(peer, f"http://127.0.0.1:{peer.port}/whip/live", "whip DTLS ClientHello never sent")
        self.assertTrue(any(e.get("method") == "POST" for e in peer.events()), peer.events())

    # SRT: a listener address that never answers.

    def test_srt_blackhole_deadline(self):
        peer = self.netns_peer("udp-silent")
        self.assertDeadlineExitIn(peer, f"srt://127.0.0.1:{peer.port}", "srt black hole", "connection timed out")
        self.assertTrue(any(e.get("event") == "datagram" for e in peer.events()), peer.events())

    def test_srt_blackhole_sigterm(self):
        peer = self.netns_peer("udp-silent")
        self.assertSignalExitIn(peer, f"srt://127.0.0.1:{peer.port}", "srt black hole")
        self.assertTrue(any(e.get("event") == "datagram" for e in peer.events()), peer.events())

    # DNS: the namespace's resolver never answers.

    def dns_peer(self) -> NetnsPeer:
        resolv = self.tmp / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.1\noptions timeout:30 attempts:3\n")
        nss = self.tmp / "nsswitch.conf"
        nss.write_text("hosts: files dns\n")
        return self.netns_peer("udp-silent", port=53, mounts=[(resolv, "/etc/resolv.conf"), (nss, "/etc/nsswitch.conf")])

    def assertQueried(self, peer: NetnsPeer):
        # getaddrinfo itself asked the silent server (glibc's stub resolver, over UDP).
        self.assertTrue(any(e.get("event") == "datagram" for e in peer.events()), peer.events())

    def test_dns_silent_rtmp_deadline(self):
        peer = self.dns_peer()
        self.assertDeadlineExitIn(peer, "rtmp://ingest.stall.test/live", "rtmp, DNS never answers",
                                  "cannot resolve host: no answer within 5 s")
        self.assertQueried(peer)

    def test_dns_silent_rtmp_sigterm(self):
        peer = self.dns_peer()
        self.assertSignalExitIn(peer, "rtmp://ingest.stall.test/live", "rtmp, DNS never answers")
        self.assertQueried(peer)

    def test_dns_silent_srt_deadline(self):
        peer = self.dns_peer()
        self.assertDeadlineExitIn(peer, "srt://ingest.stall.test:9000", "srt, DNS never answers",
                                  "cannot resolve host: no answer within 5 s")
        self.assertQueried(peer)

    def test_dns_silent_srt_sigterm(self):
        peer = self.dns_peer()
        self.assertSignalExitIn(peer, "srt://ingest.stall.test:9000", "srt, DNS never answers")
        self.assertQueried(peer)

    def test_dns_silent_whip_sigterm(self):
        peer = self.dns_peer()
        self.assertSignalExitIn(peer, "http://ingest.stall.test:8080/whip/live", "whip, DNS never answers")
        self.assertQueried(peer)


if __name__ == "__main__":
    unittest.main()
