"""The publisher against a hostile ingest: tools/rtmp_test_server.py's scripted behaviours (issues 14, 22).

nginx-rtmp stays the main ingest; this server produces what nginx cannot on demand. Each case
ends in its documented exit code with a one-line message within a bounded time, no crash (no
signal death), and no key in any output.

Issue 22's hostile peer: a chunk-stream flood (during connect and after publish) keeps the peak
RSS (VmHWM) within the 50 MiB budget and ends in exit 3/4
with one error line; a ping flood does not stretch --duration by more than 1 s; a signal while a
reconnect waits for the publish answer is exit 4 (data lost), never 3 ("key rejected"); SIGHUP is a clean stop; a protocol error mid-stream is "connection lost", not
"could not connect".

Run: scripts/test --no-bootstrap --integration-only -k test_hostile_server
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support  # noqa: E402
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase, clean_env, new_key  # noqa: E402
from support import exclusive  # noqa: E402

SERVER = REPO_ROOT / "tools" / "rtmp_test_server.py"
CONNECT_TIMEOUT_S = 5   # BroadcastConfiguration's default connect timeout
BUDGET_MIB = 50


class Watched:
    """A broadcast run whose stderr lines are timestamped as they come, and whose peak RSS is
    its VmHWM, sampled every 10 ms for its whole life (wait4's ru_maxrss cannot be used: Linux
    carries the forking Python's high-water mark across exec)."""

    def __init__(self, args: list[str], env: dict):
        self.start = time.monotonic()
        self.proc = subprocess.Popen([str(BROADCAST_BIN), *args], env=clean_env(env), cwd=REPO_ROOT,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.returncode: int | None = None
        self.maxrss_mib = 0.0
        self.end = 0.0
        self.reader.start()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()

    def _sample(self) -> None:
        path = f"/proc/{self.proc.pid}/status"
        while self.returncode is None:
            try:
                with open(path) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.maxrss_mib = max(self.maxrss_mib, int(line.split()[1]) / 1024)
                            break
                    else:
                        return  # a zombie: no memory left to sample
            except OSError:
                return
            time.sleep(0.01)

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def alive(self) -> bool:
        """Whether the process still runs, without reaping it."""
        if self.returncode is not None:
            return False
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except ChildProcessError:
            return False

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def first_line_time(self, needle: str) -> float | None:
        return next((t for t, l in list(self.lines) if needle in l), None)

    def wait_for_line(self, needle: str, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            t = self.first_line_time(needle)
            if t is not None:
                return t
            time.sleep(0.05)
        return self.first_line_time(needle)

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        code = None
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.02)
        self.end = time.monotonic()
        if code is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            _, status = os.waitpid(self.proc.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = code
        self.returncode = code
        self.reader.join(timeout=5)
        self.sampler.join(timeout=5)
        return code

    @property
    def stderr(self) -> str:
        return "\n".join(l for _, l in self.lines)

    def describe(self) -> str:
        return (f"exit {self.returncode} after {self.end - self.start:.1f} s, VmHWM {self.maxrss_mib:.1f} MiB\n"
                f"--- stderr ---\n{self.stderr[-3000:]}")


class TestServer:
    def __init__(self, directory: Path, *args: str):
        self.dir = directory
        self.events_path = directory / "events.jsonl"
        self.proc = subprocess.Popen([sys.executable, str(SERVER), "--dir", str(directory), "--quiet",
                                      "--events", str(self.events_path), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"test server did not start: {line}{self.proc.stderr.read()}")
        self.port = int(line.rsplit(":", 1)[1])

    @property
    def url(self) -> str:
        return f"rtmp://127.0.0.1:{self.port}/live"

    def events(self) -> list[dict]:
        if not self.events_path.exists():
            return []
        return [json.loads(l) for l in self.events_path.read_text().splitlines() if l.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


class HostileServerTests(BroadcastTestCase):
    def watched(self, server: TestServer, *extra: str) -> Watched:
        key = new_key()
        w = Watched(["--source", "test", "--res", "360p", "--url", server.url, *extra], {"STREAM_KEY": key})
        self.addCleanup(lambda: w.signal(signal.SIGKILL) if w.returncode is None else None)
        return w

    def finished(self, w: Watched, timeout: float) -> None:
        w.wait(timeout)
        self._captured_texts.append(w.stderr)
        self.assertGreaterEqual(w.returncode, 0, f"died by a signal: {w.describe()}")

    def errorLines(self, w: Watched) -> list[str]:
        return [l for _, l in w.lines if l.startswith("broadcast: error:")]

    def server(self, *args: str) -> TestServer:
        d = self.tmp / f"server-{len(list(self.tmp.glob('server-*')))}"
        d.mkdir()
        s = TestServer(d, *args)
        self.addCleanup(s.stop)
        return s

    def publish(self, server: TestServer, seconds: float, *extra: str, timeout: float = 60):
        key = new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        r = self.run_broadcast(["--source", "test", "--res", "360p", "--duration", str(seconds), "--url", server.url,
                                "--stats-json", stats, *extra], env={"STREAM_KEY": key}, timeout=timeout)
        self.assertFalse(r.timed_out, r.describe())
        self.assertGreaterEqual(r.returncode, 0, f"died by a signal: {r.describe()}")
        lines = [json.loads(l) for l in stats.read_text().splitlines() if l.strip()] if stats.exists() else []
        return r, lines

    def assertOneLineError(self, r, *needles: str) -> str:
        said = [l for l in r.stderr_lines() if l.startswith("broadcast: ") and not l.startswith("broadcast: live:")]
        self.assertTrue(said, r.describe())
        last = said[-1]
        for n in needles:
            self.assertIn(n, last, r.describe())
        return last

    @exclusive("the time to exit")
    def test_refused_with_badname_at_start_exits_3(self):
        s = self.server("--mode", "refuse-badname")
        r, _ = self.publish(s, 5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 3, r.describe())
        self.assertOneLineError(r, "still publishing this stream name", "NetStream.Publish.BadName")
        self.assertTrue(any(e["event"] == "refused" for e in s.events()))

    @exclusive("the time to exit")
    def test_refused_with_rejected_exits_3(self):
        s = self.server("--mode", "refuse-rejected")
        r, _ = self.publish(s, 5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 3, r.describe())
        self.assertOneLineError(r, "rejected", "NetStream.Publish.Rejected")

    @exclusive("the connect timeout")
    def test_handshake_stall_exits_3_within_the_connect_timeout(self):
        s = self.server("--mode", "stall-handshake")
        r, _ = self.publish(s, 5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 3, r.describe())
        self.assertOneLineError(r, "handshake", f"no reply within {CONNECT_TIMEOUT_S} s")

    @exclusive("the time to exit")
    def test_junk_after_connect_exits_3_or_4_with_a_clear_message(self):
        s = self.server("--mode", "junk-after-connect")
        r, _ = self.publish(s, 5)
        self.assertIn(r.returncode, (3, 4), r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 8, r.describe())
        self.assertOneLineError(r, "127.0.0.1")
        self.assertTrue(any(e["event"] == "junk" for e in s.events()))

    def test_close_mid_stream_reconnects_and_both_sessions_decode(self):
        s = self.server("--mode", "close-after", "--after", "2")
        r, stats = self.publish(s, 7, "--reconnect-delay", "0.5")
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertEqual(stats[-1]["reconnects"], 1, stats[-1])
        self.assertIn("reconnected", r.stderr)
        files = sorted(s.dir.glob("session-*.flv"))
        self.assertEqual(len(files), 2, [e for e in s.events()])
        for f in files:
            self.assertRecordingOK(f, expect_audio_codec="aac")

    @exclusive("congestion against a slow reader, run time")
    def test_slow_reader_engages_congestion_and_ends_cleanly(self):
        s = self.server("--mode", "slow-read", "--kbps", "300")
        seconds = 10
        r, stats = self.publish(s, seconds, "--video-bitrate", "1200")
        self.assertEqual(r.returncode, 0, r.describe())
        # Bounded stop: the duration plus the 1.5 s drain deadline and start-up, not the queue's backlog.
        self.assertLess(r.seconds, seconds + 6, r.describe())
        last = stats[-1]
        congestion = last["drops"]["congestion_p_frame"] + last["drops"]["congestion_until_idr"] + last["drops"]["queue_full"]
        lowered = min(l["target_video_kbps"] for l in stats)
        self.assertTrue(congestion > 0 or lowered < 1200, f"neither drops nor a lower bitrate: {last}")
        recordings = sorted(s.dir.glob("session-*.flv"))
        self.assertTrue(recordings, f"the slow-read server recorded nothing in {s.dir}")
        for f in recordings:
            self.assertRecordingOK(f, expect_audio_codec="aac")

    def test_stale_session_is_named_then_the_stream_resumes(self):
        s = self.server("--mode", "stale", "--after", "2", "--hold", "3")
        r, stats = self.publish(s, 12, "--reconnect-delay", "0.5", "--reconnect-attempts", "0")
        self.assertEqual(r.returncode, 0, r.describe())
        stale = [l for l in r.stderr_lines() if "stale" in l]
        self.assertEqual(len(stale), 1, r.describe())
        self.assertIn("already publishing", stale[0])
        self.assertTrue(any(e["event"] == "refused" for e in s.events()), s.events())
        self.assertEqual(stats[-1]["reconnects"], 1, stats[-1])
        live_again = [l for l in stats if l["state"] == "live" and l["reconnects"] == 1]
        self.assertTrue(live_again, "never live again after the stale session let go")
        self.assertGreater(stats[-1]["downtime_s"], 2.0, stats[-1])

    # --- issue 22: hostile peers ------------------------------------------------------------

    @exclusive("VmHWM under a flood")
    def test_chunk_stream_flood_during_connect_stays_in_the_budget(self):
        # The attack (65 000 streams, each announcing 1 MB: 272 MB before) and one whose
        # messages are small enough to pass the message bound, so the stream cap must stop it.
        for length in (1 << 20, 1000):
            with self.subTest(flood_length=length):
                s = self.server("--mode", "chunk-flood-connect", "--streams", "65000", "--flood-length", str(length))
                w = self.watched(s, "--duration", "5")
                self.finished(w, 60)
                print(f"\n[hostile] connect flood of {length}-byte messages: exit {w.returncode}, "
                      f"VmHWM {w.maxrss_mib:.1f} MiB, {w.end - w.start:.1f} s", file=sys.stderr)
                self.assertEqual(w.returncode, 3, w.describe())
                self.assertLessEqual(w.maxrss_mib, BUDGET_MIB, w.describe())
                errors = self.errorLines(w) or [l for _, l in w.lines if l.startswith("broadcast: ")]
                self.assertEqual(len(errors), 1, w.describe())
                self.assertIn("protocol error from server", errors[0], w.describe())
                self.assertTrue(any(e["event"] == "flood" for e in s.events()), s.events())

    @exclusive("VmHWM under a flood")
    def test_chunk_stream_flood_after_publish_is_a_lost_connection_in_the_budget(self):
        # 20 000 streams after publish: exit 0 and 95.5 MB before. Now the flood is a protocol
        # error mid-stream ("connection lost", not "could not connect"), the reconnects meet the
        # flood at connect, and the run ends down: exit 4 with one line.
        s = self.server("--mode", "chunk-flood-publish", "--after", "1", "--streams", "20000")
        w = self.watched(s, "--duration", "6", "--reconnect-delay", "0.5")
        self.finished(w, 60)
        print(f"\n[hostile] publish flood: exit {w.returncode}, VmHWM {w.maxrss_mib:.1f} MiB", file=sys.stderr)
        self.assertEqual(w.returncode, 4, w.describe())
        self.assertLessEqual(w.maxrss_mib, BUDGET_MIB, w.describe())
        self.assertEqual(len(self.errorLines(w)), 1, w.describe())
        lost = [l for _, l in w.lines if "protocol error from server" in l]
        self.assertTrue(lost, w.describe())
        self.assertIn("connection lost:", lost[0], w.describe())
        self.assertNotIn("could not connect", lost[0], w.describe())

    @exclusive("run time and VmHWM under a ping flood")
    def test_ping_flood_does_not_stretch_the_duration(self):
        s = self.server("--mode", "ping-flood")
        seconds = 6
        w = self.watched(s, "--duration", str(seconds))
        live = w.wait_for_line("broadcast: live:", 30)
        self.finished(w, 60)
        self.assertIsNotNone(live, w.describe())
        print(f"\n[hostile] ping flood: live to exit {w.end - live:.2f} s for --duration {seconds}, "
              f"VmHWM {w.maxrss_mib:.1f} MiB", file=sys.stderr)
        self.assertEqual(w.returncode, 0, w.describe())
        self.assertTrue(any(e["event"] == "ping-flood" for e in s.events()), s.events())
        # From going live to exit: the duration, plus at most 1 s.
        self.assertLessEqual(w.end - live, seconds + 1.0, w.describe())
        self.assertLessEqual(w.maxrss_mib, BUDGET_MIB, w.describe())

    @exclusive("the time to exit after SIGINT (<= 3 s)")
    def test_signal_while_a_reconnect_waits_for_publish_is_exit_4_not_rejected(self):
        s = self.server("--mode", "close-then-slow-publish", "--after", "2", "--hold", "60")
        w = self.watched(s, "--duration", "60", "--reconnect-delay", "0.5")

        def held() -> bool:
            return any(e["event"] == "publish-held" for e in s.events())
        deadline = time.monotonic() + 30
        while not held() and time.monotonic() < deadline and w.alive():
            time.sleep(0.05)
        self.assertTrue(held(), s.events())
        time.sleep(0.3)
        sent = time.monotonic()
        w.signal(signal.SIGINT)
        self.finished(w, 30)
        self.assertEqual(w.returncode, 4, w.describe())
        self.assertLessEqual(w.end - sent, 3.0, w.describe())
        errors = self.errorLines(w)
        self.assertEqual(len(errors), 1, w.describe())
        self.assertIn("still reconnecting when the run ended", errors[0], w.describe())
        self.assertNotIn("rejected", w.stderr, w.describe())

    def test_sighup_is_a_clean_stop(self):
        s = self.server()
        w = self.watched(s, "--duration", "30")
        self.assertIsNotNone(w.wait_for_line("broadcast: live:", 30))
        time.sleep(2)
        w.signal(signal.SIGHUP)
        self.finished(w, 30)
        self.assertEqual(w.returncode, 0, w.describe())
        self.assertTrue(any(l.startswith("broadcast: finished:") for _, l in w.lines), w.describe())
        self.assertTrue(any(e["event"] == "FCUnpublish" for e in s.events()), "no goodbye: not a clean stop")
        for f in s.dir.glob("session-*.flv"):
            self.assertRecordingOK(f, expect_audio_codec="aac")

    def video_audio_spans(self, path: Path) -> dict:
        """First/last timestamps (s) of the video and audio streams, and the first video frame's keyness."""
        import av
        spans = {}
        with av.open(str(path)) as c:
            for packet in c.demux():
                if packet.dts is None or packet.size == 0:
                    continue
                kind = packet.stream.type
                t = float(packet.dts * packet.time_base)
                if kind not in spans:
                    spans[kind] = [t, t]
                    if kind == "video":
                        spans["first_video_key"] = packet.is_keyframe
                spans[kind][1] = t
        return spans

    def test_reconnect_request_moves_to_the_new_tcurl_at_a_keyframe(self):
        b = self.server()
        a = self.server("--mode", "reconnect-request", "--after", "3", "--tc-url", b.url)
        seconds = 9
        r, stats = self.publish(a, seconds, "--reconnect-attempts", "1")
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertEqual(stats[-1]["reconnects"], 1, stats[-1])
        self.assertIn("asked for a reconnect", r.stderr)
        connects = [e for e in a.events() if e["event"] == "connect"]
        self.assertEqual(connects[0]["caps_ex"], 1.0, "capsEx (reconnect) not announced in connect")
        old, new = a.dir / "session-1.flv", b.dir / "session-1.flv"
        self.assertEqual(len(list(a.dir.glob("session-*.flv"))), 1, a.events())
        for f in (old, new):
            self.assertRecordingOK(f, expect_audio_codec="aac")
        s_old, s_new = self.video_audio_spans(old), self.video_audio_spans(new)
        self.assertTrue(s_new["first_video_key"], "the new session does not start on a keyframe")
        gop = 2.0   # VideoEncoderSettings' default keyframe interval
        # Joined, the two recordings cover the run: no video gap longer than one GOP, audio continuous.
        self.assertLess(s_old["video"][0], 0.5, s_old)
        self.assertLessEqual(s_new["video"][0] - s_old["video"][1], gop, (s_old, s_new))
        self.assertLess(s_new["audio"][0] - s_old["audio"][1], 0.1, (s_old, s_new))
        self.assertGreater(s_new["video"][1], seconds - 1.0, s_new)
        # The move happened when asked (3 s in), at the next keyframe, not at the end of the run.
        self.assertLess(s_old["video"][1], 3.0 + gop + 1.0, s_old)

    def test_reconnect_request_without_tcurl_reconnects_to_the_same_server(self):
        a = self.server("--mode", "reconnect-request", "--after", "2")
        r, stats = self.publish(a, 6)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertEqual(stats[-1]["reconnects"], 1, stats[-1])
        files = sorted(a.dir.glob("session-*.flv"))
        self.assertEqual(len(files), 2, a.events())
        for f in files:
            self.assertRecordingOK(f, expect_audio_codec="aac")
        self.assertTrue(self.video_audio_spans(files[1])["first_video_key"])

    def test_plain_connect_switch_leaves_capsex_out_and_ignores_requests(self):
        a = self.server("--mode", "reconnect-request", "--after", "2")
        r, stats = self.publish(a, 5, "--no-enhanced-rtmp-connect")
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIsNone([e for e in a.events() if e["event"] == "connect"][0]["caps_ex"])
        self.assertEqual(stats[-1]["reconnects"], 0, stats[-1])
        self.assertEqual(len(list(a.dir.glob("session-*.flv"))), 1)


if __name__ == "__main__":
    unittest.main()
