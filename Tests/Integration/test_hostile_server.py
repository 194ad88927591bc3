"""The publisher against a hostile ingest: tools/rtmp_test_server.py's scripted behaviours (issue 14).

nginx-rtmp stays the main ingest; this server produces what nginx cannot on demand. Each case
ends in its documented exit code with a one-line message within a bounded time, no crash (no
signal death), and no key in any output.

Run: scripts/test --no-bootstrap --integration-only -k test_hostile_server
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support  # noqa: E402
from support import REPO_ROOT, BroadcastTestCase, new_key  # noqa: E402

SERVER = REPO_ROOT / "tools" / "rtmp_test_server.py"
CONNECT_TIMEOUT_S = 5   # BroadcastConfiguration's default connect timeout


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

    def test_refused_with_badname_at_start_exits_3(self):
        s = self.server("--mode", "refuse-badname")
        r, _ = self.publish(s, 5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 3, r.describe())
        self.assertOneLineError(r, "still publishing this stream name", "NetStream.Publish.BadName")
        self.assertTrue(any(e["event"] == "refused" for e in s.events()))

    def test_refused_with_rejected_exits_3(self):
        s = self.server("--mode", "refuse-rejected")
        r, _ = self.publish(s, 5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 3, r.describe())
        self.assertOneLineError(r, "rejected", "NetStream.Publish.Rejected")

    def test_handshake_stall_exits_3_within_the_connect_timeout(self):
        s = self.server("--mode", "stall-handshake")
        r, _ = self.publish(s, 5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, CONNECT_TIMEOUT_S + 3, r.describe())
        self.assertOneLineError(r, "handshake", f"no reply within {CONNECT_TIMEOUT_S} s")

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
