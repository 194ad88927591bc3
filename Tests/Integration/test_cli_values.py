"""Issue 15, findings 3 and 5: CLI values at their edges and the flags no test used.

Bad values exit 2 with exactly one `broadcast: ` line naming the flag (README "Exit codes"),
before anything connects (the URL points at a closed port, so a late check would exit 3).
Good values of the untested flags are checked in what arrives: the recorded H.264 profile (preset), x264's threads in /proc, the plan's bitrate (service caps), the decoded audio and video (PyAV),
the ingest's recording name for keys.
"""

from __future__ import annotations

import os
import re
import struct
import unittest
from pathlib import Path

import support
from support import BroadcastTestCase
from support import exclusive  # noqa: E402

CLOSED = "rtmp://127.0.0.1:9/live"  # nothing listens on port 9: a connect would exit 3


def flv_audio_payload_bytes(flv: Path) -> tuple[int, float]:
    """(bytes of AAC raw frames, seconds spanned) from the FLV's audio tags."""
    data = flv.read_bytes()
    pos = 9 + 4
    total, first, last = 0, None, None
    while pos + 11 <= len(data):
        kind = data[pos]
        size = int.from_bytes(data[pos + 1:pos + 4], "big")
        ts = int.from_bytes(data[pos + 4:pos + 7], "big") | (data[pos + 7] << 24)
        body = data[pos + 11:pos + 11 + size]
        if kind == 8 and len(body) >= 2 and body[0] >> 4 == 10 and body[1] == 1:  # AAC raw
            total += len(body) - 2
            first = ts if first is None else first
            last = ts
        pos += 11 + size + 4
    return total, ((last - first) / 1000.0 if first is not None else 0.0)


class BadValueTests(BroadcastTestCase):
    def assertRefused(self, args, env=None, flag=None, message=None):
        key = support.new_key()
        source = [] if "--source" in args else ["--source", "test"]
        r = self.run_broadcast(["--url", CLOSED, *source, "--duration", "1", *args],
                               env={"STREAM_KEY": key, **(env or {})}, timeout=20)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.returncode, 2, f"{args}: {r.describe()}")
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, f"{args}: want one stderr line, got {lines}")
        if message is not None:
            self.assertEqual(lines[0], f"broadcast: {message}")
        elif flag is not None:
            self.assertTrue(lines[0].startswith(f"broadcast: {flag}"), f"{args}: {lines[0]!r}")
        return lines[0]

    def test_res_odd_zero_and_too_large(self):
        # Documented: WxH even, 16..3840 x 16..2160 (x264 4:2:0 needs even sizes).
        for res in ("641x360", "640x361", "0x360", "640x0", "0x0", "8194x4320", "9000x100", "3842x2160",
                    "3840x2162", "14x16", "-640x360", "640x", "x360", "640x360x2"):
            with self.subTest(res=res):
                line = self.assertRefused(["--res", res], flag="--res")
                self.assertIn(res, line)

    def test_res_edges_are_accepted(self):
        # (The test source draws 64x64 and up, so 16..62 is left to other sources.)
        for res, w, h in (("64x64", 64, 64), ("3840x2160", 3840, 2160)):
            with self.subTest(res=res):
                r = self.run_broadcast(["--print-memory-plan", "--source", "test", "--res", res,
                                        "--memory-budget", "1G"], timeout=60)
                self.assertEqual(r.returncode, 0, r.describe())
                self.assertIn(f"memory plan for {w}x{h}@", r.stdout)

    def test_duration_zero_and_negative(self):
        for d in ("0", "-1", "0.0", "nan", "inf"):
            with self.subTest(duration=d):
                r = self.run_broadcast(["--url", CLOSED, "--source", "test", "--duration", d],
                                       env={"STREAM_KEY": support.new_key()}, timeout=20)
                self.assertEqual(r.returncode, 2, r.describe())
                lines = r.stderr_lines()
                self.assertEqual(len(lines), 1, lines)
                self.assertTrue(lines[0].startswith("broadcast: --duration "), lines[0])
                self.assertIn(f"'{d}'", lines[0])

    def test_no_publish_without_record(self):
        self.assertRefused(["--no-publish"], message="nothing to do: --no-publish needs --record PATH or --replay-seconds N")

    def test_unwritable_output_paths_refused_before_connecting(self):
        # Root passes access(2) everywhere, so the cases are ones root cannot write either:
        # a pseudo-filesystem, a path under a regular file, a directory.
        afile = self.tmp / "plain"
        afile.write_text("x")
        for flag in ("--stats-json", "--record"):
            for path, reason in (("/proc/bcast-nope.out", "cannot create it in /proc"),
                                 (f"{afile}/x.out", "Not a directory"),
                                 (str(self.tmp), "is a directory")):
                with self.subTest(flag=flag, path=path):
                    line = self.assertRefused([flag, path], flag=f"{flag} {path}: ")
                    self.assertIn(reason, line)
        self.assertFalse(Path("/proc/bcast-nope.out").exists())

    def test_keys_that_cannot_be_a_path_element(self):
        base = "sk_live_" + "9f3a" * 4
        for key, what in ((base + "/x", "'/'"), (base + "#x", "'#'"), (base + " x", "whitespace"),
                          (base + "\rx", "a control character")):
            support.KEYS_USED.add(key)
            with self.subTest(what=what):
                expected = f"the stream key contains {what}; a key has no '/', '#', whitespace or control characters"
                # In the environment, on argv and in a key file; the message never holds the key.
                self.assertRefused([], env={"STREAM_KEY": key}, message=f"$STREAM_KEY: {expected}")
                self.assertRefused(["--key", key], message=f"--key: {expected}")
                if "\r" not in key:  # a key file's line ends at CR (see test_crlf_key_file)
                    kf = self.tmp / "key.txt"
                    kf.write_text(key + "\n")
                    self.assertRefused(["--key-file", str(kf)], message=f"--key-file {kf}: {expected}")

    def test_empty_and_missing_keys(self):
        self.assertRefused(["--key", ""], message="--key: the stream key is empty")
        empty = self.tmp / "empty"
        empty.write_bytes(b"")
        self.assertRefused(["--key-file", str(empty)], message=f"--key-file {empty}: empty")
        blank = self.tmp / "blank"
        blank.write_bytes(b"\r\n")
        self.assertRefused(["--key-file", str(blank)], message=f"--key-file {blank}: no key in the first line")
        self.assertRefused(["--key-file", str(self.tmp / "nope")],
                           message=f"--key-file {self.tmp / 'nope'}: No such file or directory (errno 2)")
        # An empty $STREAM_KEY counts as unset.
        r = self.run_broadcast(["--url", CLOSED, "--source", "test", "--duration", "1"], env={"STREAM_KEY": ""})
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertTrue(r.stderr_lines()[0].startswith("broadcast: no stream key"), r.stderr)

    def test_pcm_pairing_and_format(self):
        self.assertRefused(["--pcm-format", "s16le:48000:2"], message="--pcm-format needs --pcm PATH")
        self.assertRefused(["--pcm", "/dev/null"],
                           message="--pcm needs --source y4m:PATH (raw PCM is the audio of a Y4M video)")
        line = self.assertRefused(["--source", "y4m:-", "--pcm", "-", "--pcm-format", "s24le:48000:2"])
        self.assertIn("s16le or f32le", line)

    # Issue 22, defect 8: Y4M and PCM inputs tell the truth in one clean line.

    def y4m(self, name: str, header: bytes, frames: int = 0, tail: bytes = b"") -> Path:
        w, h = 32, 16
        frame = b"FRAME\n" + bytes([16]) * (w * h) + bytes([128]) * (w * h // 2)
        path = self.tmp / name
        path.write_bytes(b"YUV4MPEG2 W32 H16 F30:1 " + header + b"\n" + frame * frames + tail)
        return path

    def test_y4m_header_bytes_are_escaped(self):
        path = self.y4m("nul.y4m", b"Z\x00\x1b[2J")
        line = self.assertRefused(["--source", f"y4m:{path}"])
        self.assertEqual(line, "broadcast: y4m: unknown header tag 'Z\\x00\\x1b[2J'")
        self.assertNotIn("\x00", line)
        self.assertNotIn("\x1b", line)

    def test_interlaced_y4m_is_refused(self):
        for tag, what in ((b"It", "top field first"), (b"Ib", "bottom field first"), (b"Im", "mixed")):
            with self.subTest(tag=tag):
                path = self.y4m(f"{tag.decode()}.y4m", tag, frames=3)
                self.assertRefused(["--source", f"y4m:{path}"],
                                   message=f"y4m: interlaced input ({tag.decode()}: {what}) is not supported; "
                                           "deinterlace it first (e.g. ffmpeg -vf yadif)")

    def test_truncated_y4m_mid_stream_exits_4(self):
        path = self.y4m("cut.y4m", b"Ip", frames=10, tail=b"FRAME\n" + bytes(100))
        out = self.tmp / "cut.flv"
        r = self.run_broadcast(["--no-publish", "--record", out, "--record-min-free", "0", "--source", f"y4m:{path}",
                                "--res", "32x16", "--quiet"], timeout=30)
        self.assertEqual(r.returncode, 4, r.describe())
        self.assertEqual(r.stderr_lines(), ["broadcast: error: y4m: truncated frame 10 (got 100 of 768 bytes)"])

    def test_pcm_that_cannot_be_read_is_refused_before_connecting(self):
        y4m = self.y4m("ok.y4m", b"Ip", frames=3)
        pcm_dir = self.tmp / "pcmdir"
        pcm_dir.mkdir()
        self.assertRefused(["--source", f"y4m:{y4m}", "--pcm", str(pcm_dir)],
                           message=f"--pcm {pcm_dir}: is a directory, not raw PCM")
        missing = self.tmp / "missing.pcm"
        self.assertRefused(["--source", f"y4m:{y4m}", "--pcm", str(missing)],
                           message=f"--pcm {missing}: No such file or directory (errno 2)")

    def test_bad_values_of_the_untested_flags(self):
        for args, flag in ((["--service", "myspace"], "--service"), (["--preset", "placebo2"], "--preset"),
                           (["--x264-threads", "0"], "--x264-threads"), (["--x264-threads", "17"], "--x264-threads"),
                           (["--audio-bitrate", "8"], "--audio-bitrate"), (["--audio-bitrate", "1M"], "--audio-bitrate"),
                           (["--test-pixel-format", "yuyv"], "--test-pixel-format"),
                           # The test source draws i420 and bgrx only; the parser says so up front.
                           (["--test-pixel-format", "bgra"], "--test-pixel-format")):
            with self.subTest(args=args):
                self.assertRefused(args, flag=flag)


class FlagEffectTests(BroadcastTestCase):
    """Each flag no test used changes what arrives."""

    def record(self, args, seconds=2, name="out.flv", key_env=True) -> tuple[Path, support.RunResult]:
        out = self.tmp / name
        stats = self.track_file(self.tmp / (name + ".stats.jsonl"))
        r = self.run_broadcast(["--no-publish", "--record", str(out), "--duration", str(seconds),
                                "--stats-json", str(stats), *args], timeout=60 + seconds * 3)
        self.assertEqual(r.returncode, 0, r.describe())
        self.track_file(out)
        return out, r

    def test_preset_reaches_x264(self):
        # ultrafast turns off CABAC, B-frames and 8x8 transforms: the stream is Constrained
        # Baseline; veryfast (the default) streams High profile.
        import av
        profiles = {}
        for preset in ("ultrafast", "veryfast"):
            out, _ = self.record(["--source", "test", "--res", "360p", "--preset", preset], name=f"{preset}.flv")
            with av.open(str(out)) as c:
                profiles[preset] = c.streams.video[0].codec_context.profile
        self.assertEqual(profiles, {"ultrafast": "Constrained Baseline", "veryfast": "High"})

    def test_x264_threads_start_encoder_threads(self):
        # x264's own threads are the process's unnamed ones (every BroadcastKit and capture
        # thread is named): more --x264-threads, more of them; 1 means x264 starts none.
        import json
        import subprocess
        import time
        counts = {}
        for n in (1, 2, 4):
            stats = self.track_file(self.tmp / f"t{n}.jsonl")
            p = subprocess.Popen([str(support.BROADCAST_BIN), "--no-publish", "--record", str(self.tmp / f"t{n}.flv"),
                                  "--source", "test", "--res", "360p", "--x264-threads", str(n), "--duration", "20",
                                  "--quiet", "--stats-json", str(stats)],
                                 env=support.clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 30
                encoding = False
                while time.monotonic() < deadline and not encoding:
                    lines = [l for l in stats.read_text().splitlines() if l.strip()] if stats.exists() else []
                    encoding = bool(lines) and json.loads(lines[-1])["video_frames_encoded"] > 0
                    if not encoding:
                        time.sleep(0.2)
                self.assertTrue(encoding, f"--x264-threads {n}: no frame encoded within 30 s")
                comms = [Path(f"/proc/{p.pid}/task/{t}/comm").read_text().strip()
                         for t in os.listdir(f"/proc/{p.pid}/task")]
                counts[n] = comms.count("broadcast") - 1  # less the main thread
            finally:
                p.terminate()
                p.wait(timeout=30)
        self.assertEqual(counts[1], 0, counts)
        self.assertGreater(counts[2], counts[1], counts)
        self.assertGreater(counts[4], counts[2], counts)

    @exclusive("the delivered bitrate under a service cap")
    def test_service_caps_the_bitrate(self):
        # Twitch's published limit is 6000 kbps: a higher request is capped, with a note.
        r = self.run_broadcast(["--print-memory-plan", "--source", "test", "--res", "720p", "--service", "twitch",
                                "--video-bitrate", "9M"])
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn("note: twitch accepts at most 6000 kbps video; using that", r.stderr)
        self.assertIn("6000 kbps", r.stdout.splitlines()[0])
        # What the service cannot carry is refused before anything runs.
        r = self.run_broadcast(["--no-publish", "--record", str(self.tmp / "x.flv"), "--source", "test",
                                "--service", "facebook", "--fps", "120", "--duration", "1"])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertEqual(r.stderr_lines(), ["broadcast: facebook accepts at most 60 fps"])

    def test_audio_bitrate_is_what_arrives(self):
        rates = {}
        for kbps in (64, 192):
            out, _ = self.record(["--source", "test", "--res", "360p", "--audio-bitrate", f"{kbps}k"], seconds=4,
                                 name=f"a{kbps}.flv")
            payload, secs = flv_audio_payload_bytes(out)
            self.assertGreater(secs, 2.5, "too little audio recorded")
            rates[kbps] = payload * 8 / secs / 1000
        # AAC is near-constant bitrate: within 25% of the request, and the two clearly apart.
        for kbps, got in rates.items():
            self.assertLess(abs(got - kbps), 0.25 * kbps, f"--audio-bitrate {kbps}k gave {got:.0f} kbps: {rates}")

    def test_test_pixel_formats_encode(self):
        for fmt in ("bgrx", "i420"):
            with self.subTest(fmt=fmt):
                out, r = self.record(["--source", "test", "--res", "360p", "--test-pixel-format", fmt,
                                      "--test-pattern", "static"], name=f"{fmt}.flv")
                self.assertIn(f" {fmt} ", r.stderr, "the live line names the source's pixel format")
                self.assertRecordingOK(out, expect_width=640, expect_height=360, expect_video_codec="h264")

    def test_pcm_with_y4m(self):
        w, h, fps, seconds = 160, 96, 30, 2
        y4m = self.tmp / "in.y4m"
        frame = bytes([16]) * (w * h) + bytes([128]) * (w * h // 2)
        y4m.write_bytes(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode()
                        + b"".join(b"FRAME\n" + frame for _ in range(fps * seconds)))
        pcm = self.tmp / "in.pcm"
        pcm.write_bytes(b"".join(struct.pack("<hh", 1000, -1000) for _ in range(44100 * seconds)))
        out, _ = self.record(["--source", f"y4m:{y4m}", "--pcm", str(pcm), "--pcm-format", "s16le:44100:2",
                              "--res", f"{w}x{h}"], seconds=10)
        self.assertRecordingOK(out, expect_frames=fps * seconds, tolerance=3, expect_audio_codec="aac",
                               expect_audio_seconds=float(seconds), audio_tolerance_pct=5)


class KeyShapeTests(BroadcastTestCase):
    """Keys that are legal reach the ingest under exactly their name."""

    @classmethod
    def setUpClass(cls):
        cls.ingest = support.start_ingest()

    @classmethod
    def tearDownClass(cls):
        cls.ingest.cleanup()

    def publish(self, args, env=None):
        return self.run_broadcast(["--url", self.ingest.url, "--source", "test", "--res", "360p",
                                   "--duration", "2", *args], env=env, timeout=60)

    def test_crlf_key_file(self):
        key = support.new_key()
        kf = self.tmp / "key.txt"
        kf.write_bytes(key.encode() + b"\r\n")
        r = self.publish(["--key-file", str(kf)])
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(self.ingest.wait_recording(key).exists(), "no recording under the key without its CR")
        names = [p.name for p in self.ingest.rec_dir.iterdir()]
        self.assertFalse(any("\r" in n for n in names), names)

    def test_key_with_query_parameters(self):
        # A service key may carry parameters (name?a=1&b=2): the ingest sees the name, with the
        # parameters as the publish arguments (nginx-rtmp records under the name alone).
        name = support.new_key()
        key = name + "?s_bl=1&s_ps=1"
        support.KEYS_USED.add(key)
        r = self.publish([], env={"STREAM_KEY": key})
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(self.ingest.wait_recording(name).exists(),
                        f"no recording under {name[:8]}...: {[support.redact(p.name) for p in self.ingest.rec_dir.iterdir()]}")


if __name__ == "__main__":
    unittest.main()
