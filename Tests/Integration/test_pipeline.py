"""Core pipeline end to end: the real `broadcast` binary pushes to a real local nginx-rtmp,
and what nginx recorded is decoded by independent decoders (PyAV and ffprobe)."""

import json
import shutil
import subprocess
import unittest
from pathlib import Path

import support
from support import BroadcastTestCase, probe_recording


class PipelineTests(BroadcastTestCase):
    @classmethod
    def setUpClass(cls):
        cls.ingest = support.start_ingest()

    @classmethod
    def tearDownClass(cls):
        cls.ingest.cleanup()

    def publish_test_source(self, seconds, extra=()):
        """Streams the test source; returns (key, result, frames sent by the stats' accounting)."""
        key = support.new_key()
        extra = list(extra)
        if "--stats-json" in extra:   # the caller's own stats file feeds the accounting too
            stats = self.track_file(Path(extra[extra.index("--stats-json") + 1]))
        else:
            stats = self.track_file(self.tmp / f"stats-{support.secrets.token_hex(4)}.jsonl")
            extra += ["--stats-json", str(stats)]
        r = self.run_broadcast(["--url", self.ingest.url, "--source", "test", "--res", "720p",
                                "--duration", str(seconds), *extra],
                               env={"STREAM_KEY": key}, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(stats.exists(), f"no stats at {stats}: the frame count would go unchecked")
        sent = self.assertVideoAccounted(stats, produced=seconds * 30)
        return key, r, sent

    def test_h264_aac_720p30_pyav_and_ffprobe(self):
        key, _, sent = self.publish_test_source(10)
        rec = self.ingest.wait_recording(key)
        self.assertRecordingOK(rec, expect_frames=sent, tolerance=3, expect_width=1280,
                               expect_height=720, expect_video_codec="h264",
                               expect_audio_codec="aac", expect_audio_seconds=10.0,
                               audio_tolerance_pct=2)

        info, err = support.ffprobe_json(rec)
        self.assertEqual(err.strip(), "", "ffprobe reported errors")
        streams = {s["codec_type"]: s for s in info.get("streams", [])}
        self.assertIn("video", streams)
        self.assertIn("audio", streams)
        v, a = streams["video"], streams["audio"]
        self.assertEqual(v["codec_name"], "h264")
        self.assertEqual((v["width"], v["height"]), (1280, 720))
        # The VUI says what FrameConverter computes (BT.601 matrix, limited range; sRGB primaries
        # and transfer), so a player does not assume BT.709 for 720p and shift the colours.
        # ColourConversionTests checks the conversion against the BT.601 formula.
        self.assertEqual((v.get("color_space"), v.get("color_range"), v.get("color_primaries"),
                          v.get("color_transfer"), v.get("chroma_location")),
                         ("smpte170m", "tv", "bt709", "iec61966-2-1", "center"), v)
        self.assertLessEqual(abs(int(v["nb_read_frames"]) - sent), 3, f"ffprobe video frames {v['nb_read_frames']}, sent {sent}")
        self.assertEqual(a["codec_name"], "aac")
        # AAC-LC frames are 1024 samples each.
        audio_s = int(a["nb_read_frames"]) * 1024 / int(a["sample_rate"])
        self.assertAlmostEqual(audio_s, 10.0, delta=0.2, msg=f"ffprobe audio duration {audio_s:.3f} s")
        for kind, stream in streams.items():
            ts = [float(p["dts_time"]) for p in info.get("packets", [])
                  if p["stream_index"] == stream["index"] and p.get("dts_time") not in (None, "N/A")]
            bad = sum(1 for x, y in zip(ts, ts[1:]) if y <= x)
            self.assertEqual(bad, 0, f"ffprobe: {bad} non-increasing {kind} timestamps")

    def test_h264_opus_pyav(self):
        key, _, sent = self.publish_test_source(10, ["--audio-codec", "opus"])
        rec = self.ingest.wait_recording(key)
        report = self.assertRecordingOK(rec, expect_frames=sent, tolerance=3, expect_width=1280,
                                        expect_height=720, expect_video_codec="h264",
                                        expect_audio_codec="opus", expect_audio_seconds=10.0,
                                        audio_tolerance_pct=2)
        self.assertEqual(report.first("audio").sample_rate, 48000)

    @unittest.skipUnless(shutil.which("ffmpeg"), "ffmpeg not installed")
    def test_y4m_from_pipe_arrives_frame_exact(self):
        key = support.new_key()
        gen = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
                                "-i", "testsrc2=size=640x360:rate=30", "-frames:v", "90",
                                "-f", "yuv4mpegpipe", "-"], stdout=subprocess.PIPE)
        try:
            r = self.run_broadcast(["--url", self.ingest.url, "--source", "y4m:-", "--res", "640x360"],
                                   env={"STREAM_KEY": key}, stdin=gen.stdout, timeout=90)
        finally:
            gen.stdout.close()
            gen.wait(timeout=30)
        self.assertEqual(r.returncode, 0, r.describe())
        rec = self.ingest.wait_recording(key)
        report, failures = probe_recording.verify(str(rec), expect_width=640, expect_height=360,
                                                  expect_video_codec="h264")
        self.assertEqual(failures, [], probe_recording.format_text(report))
        got = report.first("video").frames
        self.assertEqual(got, 90, f"y4m pipe: 90 frames in, {got} decoded from the recording")

    def test_record_alongside_rtmp(self):
        out = self.tmp / "local.flv"
        key, _, sent = self.publish_test_source(5, ["--record", str(out)])
        for path in (out, self.ingest.wait_recording(key)):
            with self.subTest(file=path.name if path == out else "nginx recording"):
                self.assertRecordingOK(path, expect_frames=sent, tolerance=3, expect_width=1280,
                                       expect_height=720, expect_video_codec="h264",
                                       expect_audio_codec="aac", expect_audio_seconds=5.0,
                                       audio_tolerance_pct=2)

    def test_record_only_no_publish(self):
        out = self.tmp / "only.flv"
        stats = self.track_file(self.tmp / "only.jsonl")
        r = self.run_broadcast(["--no-publish", "--record", str(out), "--source", "test",
                                "--res", "720p", "--duration", "5", "--stats-json", str(stats)], timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        sent = self.assertVideoAccounted(stats, produced=150)
        self.assertRecordingOK(out, expect_frames=sent, tolerance=3, expect_width=1280,
                               expect_height=720, expect_video_codec="h264",
                               expect_audio_codec="aac", expect_audio_seconds=5.0,
                               audio_tolerance_pct=2)

    def test_stats_json(self):
        stats = self.track_file(self.tmp / "stats.jsonl")
        self.publish_test_source(4, ["--stats-json", str(stats)])  # its own stats path: accounting below
        self.assertTrue(stats.exists(), "no stats file written")
        lines = [line for line in stats.read_text().splitlines() if line.strip()]
        self.assertGreaterEqual(len(lines), 3, f"expected ~1 line/s for 4 s, got {len(lines)}")
        required = {"time_s", "state", "fps", "kbps", "video_kbps", "audio_kbps", "video_frames_sent",
                    "audio_frames_sent", "bytes_sent", "drops", "queue_bytes", "queue_ms", "rss_bytes",
                    "peak_rss_bytes", "target_video_kbps", "reconnects"}
        objs = []
        for i, line in enumerate(lines):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                self.fail(f"stats line {i + 1} is not JSON ({exc}): {line[:200]}")
            self.assertIsInstance(obj, dict)
            missing = required - obj.keys()
            self.assertEqual(missing, set(), f"stats line {i + 1} lacks keys")
            self.assertIn(obj["state"], ("connecting", "live", "reconnecting", "finished"))
            self.assertIsInstance(obj["drops"], dict)
            self.assertGreater(obj["rss_bytes"], 0)
            objs.append(obj)
        sent = [o["video_frames_sent"] for o in objs]
        self.assertEqual(sent, sorted(sent), f"video_frames_sent must not decrease: {sent}")
        self.assertGreater(sent[-1], sent[0], f"video_frames_sent must grow: {sent}")
        self.assertGreaterEqual(max(o["peak_rss_bytes"] for o in objs), max(o["rss_bytes"] for o in objs))


if __name__ == "__main__":
    unittest.main()
