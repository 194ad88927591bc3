"""Deadlines, not timeouts (issue 37): a slow peer never holds the process, a signal always stops
it, and nothing leaves TLS. Every peer is scripted (tools/slow_peer.py, tools/rtmp_test_server.py)
or real (whip_endpoint.py: aiortc), on loopback.

- each hang case with --duration 5: exit 3 within the operation's 5 s deadline (the whole connect,
  handshake and publish; the whole HTTP request), with one line; the same case with SIGTERM at
  t = 3 s: exit 0 within 2 s of the signal, with the one "stopping" line;
- WHIP's DELETE trickled or never answered: the stop stays within its 2 s;
- an rtmps:// stream whose server asks (E-RTMP reconnect request) to move to rtmp://: refused in
  one line; a tee in front of the plain-text server records every byte: the key appears 0 times;
- WHIP: a 307/308 to the POST is followed; a chunked answer is read; an answer without H.264 is
  the endpoint refusing the offer, not a rejected key;
- pyrtmp (PyPI, a second independent ingest beside nginx-rtmp), whose reply to connect is the first
  message on chunk stream 3 under a type-1 header: the publish goes through and its recording
  decodes (main: exit 3, "chunk on stream 3 without a message header").
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path

from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase, clean_env, new_key

PY = sys.executable
SLOW_PEER = REPO_ROOT / "tools" / "slow_peer.py"
RTMP_SERVER = REPO_ROOT / "tools" / "rtmp_test_server.py"
TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

# The operation deadline (the CLI's connect timeout) and the stop's bound, as documented in
# docs/network-faults.md.
DEADLINE_S = 5.0
STOP_S = 2.0


class Timed:
    """A broadcast run whose stderr lines are timestamped as they arrive (monotonic, from start)."""

    def __init__(self, args, env, prefix=()):
        # `prefix`: a command that execs the rest (nsenter into a test's network namespace).
        self.argv = [*map(str, prefix), str(BROADCAST_BIN), *map(str, args)]
        self.start = time.monotonic()
        self.proc = subprocess.Popen(self.argv, env=clean_env(env), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.signal_at: float | None = None
        self.exit_at: float | None = None

    def _read(self):
        for raw in self.proc.stderr:
            self.lines.append((time.monotonic() - self.start, raw.decode(errors="replace").rstrip("\n")))

    def sigterm_at(self, t: float) -> None:
        time.sleep(max(0.0, self.start + t - time.monotonic()))
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.signal_at = time.monotonic() - self.start

    def wait(self, timeout: float = 40) -> int:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.exit_at = time.monotonic() - self.start
            self.reader.join(5)
            raise AssertionError(f"still running after {timeout} s (killed): {self.text_lines()}")
        self.exit_at = time.monotonic() - self.start
        self.reader.join(5)
        return self.proc.returncode

    def text_lines(self) -> list[str]:
        return [line for _, line in self.lines if line.strip()]

    def first(self, word: str) -> float | None:
        return next((t for t, line in self.lines if word in line), None)

    def describe(self) -> str:
        return (f"exit {self.proc.returncode} at {self.exit_at:.2f} s (signal at {self.signal_at}); "
                f"stderr: {[(round(t, 2), line) for t, line in self.lines]}")


class Peer:
    """A tools/slow_peer.py process, by pid."""

    def __init__(self, tmp: Path, mode: str, *extra: str):
        self.log = tmp / f"peer-{mode}.log"
        self.proc = subprocess.Popen([PY, str(SLOW_PEER), mode, "--log", str(self.log), *map(str, extra)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        if not line:
            raise AssertionError(f"slow_peer.py {mode} did not start")
        self.port = json.loads(line)["port"]

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class DeadlineTestBase(BroadcastTestCase):
    def peer(self, mode: str, *extra) -> Peer:
        p = Peer(self.tmp, mode, *extra)
        self.addCleanup(p.stop)
        return p

    def timed(self, url: str, key: str, seconds: float = 5, extra=()) -> Timed:
        run = Timed(["--url", url, "--source", "test", "--res", "360p", "--fps", "30", "--duration", str(seconds),
                     "--quiet", *extra], env={"STREAM_KEY": key})
        self.addCleanup(lambda: run.proc.poll() is None and (run.proc.kill(), run.proc.wait()))
        return run

    def finished(self, run: Timed, timeout: float = 40) -> int:
        code = run.wait(timeout)
        self._captured_texts.append("\n".join(line for _, line in run.lines))
        return code

    def assertDeadlineExit(self, url: str, what: str):
        """--duration 5 against a peer that trickles: exit 3 at the 5 s deadline, one line."""
        key = new_key()
        run = self.timed(url, key)
        code = self.finished(run)
        print(f"\n--- {what}, --duration 5: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 3, run.describe())
        # The deadline is counted from the start of the connect, which follows the encoders'
        # start-up: not before 5 s less a margin for that, and no later than 5 s + the stop's 2 s.
        self.assertGreaterEqual(run.exit_at, DEADLINE_S - 0.5, run.describe())
        self.assertLessEqual(run.exit_at, DEADLINE_S + STOP_S, run.describe())
        self.assertEqual(len(run.text_lines()), 1, run.describe())

    def assertSignalExit(self, url: str, what: str, at: float = 3.0, expect_code: int = 0, live_first: bool = False):
        """The same peer, SIGTERM at t = 3 s: exit within 2 s of the signal, one line."""
        key = new_key()
        run = self.timed(url, key, seconds=30)
        if live_first:
            deadline = time.monotonic() + 15
            while run.proc.poll() is None and time.monotonic() < deadline and self.live_since(run) is None:
                time.sleep(0.05)
        run.sigterm_at(at)
        code = self.finished(run)
        print(f"\n--- {what}, SIGTERM at {run.signal_at:.2f} s: {run.describe()}", file=sys.stderr)
        self.assertIsNotNone(run.signal_at)
        self.assertLess(run.exit_at - run.signal_at, STOP_S, run.describe())
        self.assertEqual(code, expect_code, run.describe())
        return run

    def live_since(self, run: Timed) -> float | None:
        return None


class RTMPDeadlineTests(DeadlineTestBase):
    def test_rtmp_s1_trickle_deadline(self):
        """RTMP: S0, then S1 one byte a second (main: still running at 26 s)."""
        peer = self.peer("rtmp-s1-trickle", "--interval", "0.5")
        self.assertDeadlineExit(f"rtmp://127.0.0.1:{peer.port}/live", "rtmp S1 trickle")

    def test_rtmp_s1_trickle_deadline_without_duration(self):
        """The operation's own deadline (5 s for the whole connect, handshake and publish), with no
        --duration to end it first: exit 3 naming the deadline."""
        peer = self.peer("rtmp-s1-trickle", "--interval", "0.5")
        run = self.timed(f"rtmp://127.0.0.1:{peer.port}/live", new_key(), seconds=60)
        code = self.finished(run)
        print(f"\n--- rtmp S1 trickle, no duration: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 3, run.describe())
        self.assertGreaterEqual(run.exit_at, DEADLINE_S, run.describe())
        self.assertLessEqual(run.exit_at, DEADLINE_S + STOP_S, run.describe())
        self.assertEqual(len(run.text_lines()), 1, run.describe())
        self.assertIn("within 5 s", run.text_lines()[0], run.describe())

    def test_rtmp_s1_trickle_sigterm(self):
        peer = self.peer("rtmp-s1-trickle", "--interval", "0.5")
        run = self.assertSignalExit(f"rtmp://127.0.0.1:{peer.port}/live", "rtmp S1 trickle")
        # One line, and no empty line before it: stderr is a pipe here, not a terminal
        # (main wrote "\nbroadcast: stopping ...").
        self.assertEqual([line for _, line in run.lines], ["broadcast: stopping (a second signal exits at once)"],
                         run.describe())

    def test_rtmps_tls_record_trickle_deadline(self):
        """RTMPS: a TLS record header, then one byte a second (main: no exit, killed at 60-91 s)."""
        peer = self.peer("tls-trickle", "--interval", "0.5")
        self.assertDeadlineExit(f"rtmps://127.0.0.1:{peer.port}/live", "rtmps TLS trickle")

    def test_rtmps_tls_record_trickle_sigterm(self):
        peer = self.peer("tls-trickle", "--interval", "0.5")
        self.assertSignalExit(f"rtmps://127.0.0.1:{peer.port}/live", "rtmps TLS trickle")


class WHIPDeadlineTests(DeadlineTestBase):
    def test_whip_post_answer_trickle_deadline(self):
        """WHIP: the POST's answer one byte a second (main: still running at 30 s)."""
        peer = self.peer("http-trickle", "--interval", "0.5")
        self.assertDeadlineExit(f"http://127.0.0.1:{peer.port}/whip/live", "whip POST trickle")

    def test_whip_post_answer_trickle_sigterm(self):
        peer = self.peer("http-trickle", "--interval", "0.5")
        self.assertSignalExit(f"http://127.0.0.1:{peer.port}/whip/live", "whip POST trickle")


class WHIPEndpointTests(DeadlineTestBase):
    """Through tools/slow_peer.py's http-front in front of the aiortc endpoint."""

    def endpoint(self, key: str):
        from test_whip import Endpoint
        ep = Endpoint(self.tmp, key)
        self.addCleanup(ep.stop)
        return ep

    def front(self, ep, *extra) -> Peer:
        return self.peer("http-front", "--upstream", ep.port, *extra)

    def live_since(self, run: Timed) -> float | None:
        # --quiet says nothing when live: the endpoint's report is written only at the end, so
        # the front's log shows the POST answered; ICE and DTLS follow within a second.
        return None

    def whip_run(self, front: Peer, key: str, seconds: float = 5, extra=()) -> Timed:
        return self.timed(f"http://127.0.0.1:{front.port}/whip/live", key, seconds=seconds, extra=extra)

    def assertStopWithinBound(self, *front_args: str, what: str):
        key = new_key()
        ep = self.endpoint(key)
        front = self.front(ep, *front_args)
        run = self.whip_run(front, key)
        code = self.finished(run)
        posts = [e["t"] for e in front.events() if e.get("method") == "POST"]
        deletes = [e for e in front.events() if e.get("method") == "DELETE"]
        print(f"\n--- {what}: {run.describe()}; front events {front.events()}", file=sys.stderr)
        self.assertEqual(code, 0, run.describe())
        self.assertEqual(len(posts), 1, front.events())
        self.assertEqual(len(deletes), 1, f"the DELETE must be sent: {front.events()}")
        # The run streams 5 s once connected (ICE + DTLS: under 2 s on loopback), then stops within
        # its 2 s whatever the DELETE's answer does (main: 10.97 s when never answered; no exit when
        # trickled).
        self.assertLessEqual(run.exit_at, 2.0 + 5.0 + STOP_S, run.describe())
        # Measured from the DELETE's arrival (the same monotonic clock in both processes): the stop
        # ends within its 2 s of it.
        self.assertLess(run.start + run.exit_at - deletes[0]["t"], STOP_S, f"{run.describe()}; {front.events()}")
        self.assertEqual(run.text_lines(), [], run.describe())

    def test_delete_answer_trickled(self):
        self.assertStopWithinBound("--delete", "trickle", "--interval", "0.5", what="whip DELETE trickled")

    def test_delete_never_answered(self):
        self.assertStopWithinBound("--delete", "silent", what="whip DELETE never answered")

    def test_delete_never_answered_sigterm(self):
        key = new_key()
        ep = self.endpoint(key)
        front = self.front(ep, "--delete", "silent")
        run = self.whip_run(front, key, seconds=30)
        run.sigterm_at(4.0)
        code = self.finished(run)
        print(f"\n--- whip DELETE silent, SIGTERM: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 0, run.describe())
        self.assertLess(run.exit_at - run.signal_at, STOP_S, run.describe())
        self.assertEqual(len([e for e in front.events() if e.get("method") == "DELETE"]), 1, front.events())

    def assertStreams(self, *front_args: str, what: str, posts: int = 1):
        key = new_key()
        ep = self.endpoint(key)
        front = self.front(ep, *front_args)
        run = self.whip_run(front, key, seconds=4)
        code = self.finished(run)
        rep = ep.finish(wait=3)
        print(f"\n--- {what}: {run.describe()}; endpoint {rep.get('video_frames')} frames", file=sys.stderr)
        self.assertEqual(code, 0, run.describe())
        self.assertEqual(len([e for e in front.events() if e.get("method") == "POST"]), posts, front.events())
        self.assertGreater(rep["video_frames"], 60, rep)
        return rep

    def test_post_redirect_307_followed(self):
        """RFC 9725 lets an endpoint redirect the POST (main: exit 3, "answered HTTP 307")."""
        self.assertStreams("--redirect", "307", what="whip 307", posts=2)

    def test_post_redirect_308_followed(self):
        self.assertStreams("--redirect", "308", what="whip 308", posts=2)

    def test_chunked_answer_read(self):
        """Transfer-Encoding: chunked, with chunk extensions and a trailer (main: exit 3, "no sha-256
        DTLS fingerprint")."""
        self.assertStreams("--chunked", what="whip chunked")

    def test_redirect_to_plain_http_from_https_refused(self):
        """https -> http is refused whatever the endpoint says (never leave TLS): here the POST is
        answered 307 to an http:// Location by an https front; one line, exit 3, no POST in clear."""
        from test_network import make_pki
        key = new_key()
        pki = make_pki(self.tmp / "pki")
        plain = self.peer("http-trickle", "--interval", "0.5")
        tls_front = self.peer("tls-front", "--cert", pki["server_cert"], "--key", pki["server_key"],
                              "--upstream", self.peer("http-front", "--upstream", plain.port, "--redirect", "307",
                                                      "--location", f"http://127.0.0.1:{plain.port}/whip/live").port)
        run = self.timed(f"https://127.0.0.1:{tls_front.port}/whip/live", key, extra=["--ca-file", pki["ca"]])
        code = self.finished(run)
        print(f"\n--- whip https -> http redirect: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 3, run.describe())
        self.assertEqual(len(run.text_lines()), 1, run.describe())
        self.assertIn("leave TLS", run.text_lines()[0], run.describe())
        self.assertEqual([e for e in plain.events() if e.get("event") == "request"], [],
                         "nothing may reach the plain-text endpoint")

    def test_answer_without_h264_is_a_refused_offer(self):
        """main: "stream key or app rejected by server: ... did not accept H.264" (the wrong category)."""
        key = new_key()
        ep = self.endpoint(key)
        front = self.front(ep, "--strip-h264")
        run = self.whip_run(front, key)
        code = self.finished(run)
        print(f"\n--- whip no H.264: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 3, run.describe())
        self.assertEqual(len(run.text_lines()), 1, run.describe())
        line = run.text_lines()[0]
        self.assertIn("refused the offer", line, run.describe())
        self.assertIn("H.264", line, run.describe())
        self.assertNotIn("key", line.lower(), run.describe())


class PyRTMPTests(DeadlineTestBase):
    def test_publish_to_pyrtmp(self):
        out = self.tmp / "pyrtmp.flv"
        proc = subprocess.Popen([PY, str(REPO_ROOT / "tools" / "pyrtmp_ingest.py"), "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=open(self.tmp / "pyrtmp.log", "wb"))
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        line = proc.stdout.readline().decode()
        if not line:
            raise AssertionError(f"pyrtmp_ingest.py did not start (pyrtmp from requirements.txt installed?): "
                                 f"{(self.tmp / 'pyrtmp.log').read_text()[-2000:]}")
        port = json.loads(line)["port"]
        key = new_key()
        run = self.timed(f"rtmp://127.0.0.1:{port}/live", key, seconds=4)
        code = self.finished(run)
        print(f"\n--- pyrtmp: {run.describe()}", file=sys.stderr)
        self.assertEqual(code, 0, run.describe())
        self.assertEqual(run.text_lines(), [], run.describe())
        import av
        frames = 0
        with av.open(str(out)) as c:
            for frame in c.decode(video=0):
                frames += 1
                self.assertEqual((frame.width, frame.height), (640, 360))
        print(f"--- pyrtmp: {frames} video frames decoded", file=sys.stderr)
        self.assertGreaterEqual(frames, 4 * 30 - 15, "the recording lost frames")
        self.track_file(self.tmp / "pyrtmp.log")


class NeverLeaveTLSTests(DeadlineTestBase):
    """An rtmps:// stream told by its server (E-RTMP NetConnection.Connect.ReconnectRequest) to move
    to rtmp://: the move is refused in one line and the stream reconnects to its original URL.
    main: reconnected in clear and published the key (2-4 copies on the plain-text path), exit 0."""

    def test_reconnect_request_to_plain_rtmp_refused(self):
        from test_network import make_pki
        key = new_key()
        pki = make_pki(self.tmp / "pki")
        # The plain-text server, behind a tee that records every byte the publisher sends it.
        plain = self.server("accept", "plain")
        record = self.tmp / "plain-path.bin"
        record.write_bytes(b"")
        tee = self.peer("tee", "--upstream", plain, "--record", record)
        # The TLS server: our scripted ingest behind a TLS terminator; 1.5 s into the first session
        # it asks the publisher to move to the tee's plain rtmp:// URL.
        tls_side = self.server("reconnect-request", "tls", "--after", "1.5",
                               "--tc-url", f"rtmp://127.0.0.1:{tee.port}/live")
        front = self.peer("tls-front", "--cert", pki["server_cert"], "--key", pki["server_key"], "--upstream", tls_side)
        run = self.timed(f"rtmps://127.0.0.1:{front.port}/live", key, seconds=6, extra=["--ca-file", pki["ca"]])
        code = self.finished(run)
        data = record.read_bytes()
        print(f"\n--- rtmps reconnect request to rtmp://: {run.describe()}; plain path got {len(data)} bytes, "
              f"key x{data.count(key.encode())}", file=sys.stderr)
        self.assertEqual(data.count(key.encode()), 0, "the key crossed the plain-text path")
        self.assertIn(code, (0, 3, 4), run.describe())
        refused = [line for line in run.text_lines() if "leave TLS" in line]
        self.assertEqual(len(refused), 1, run.describe())
        self.assertNotIn(key, refused[0])
        self.assertEqual(code, 0, f"the stream should stay on TLS and finish: {run.describe()}")

    def server(self, mode: str, name: str, *extra) -> int:
        d = self.tmp / name
        d.mkdir()
        proc = subprocess.Popen([PY, str(RTMP_SERVER), "--mode", mode, "--dir", str(d), "--quiet", *map(str, extra)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        line = proc.stdout.readline().decode()
        if "listening on" not in line:
            raise AssertionError(f"rtmp_test_server did not start: {line!r}")
        return int(line.strip().rsplit(":", 1)[1])


if __name__ == "__main__":
    unittest.main()
