"""The verification tooling itself, with ffmpeg (not our code) as the publisher: the ingest
fixture records what is pushed, and probe_recording accepts a good file and rejects bad ones."""

import shutil
import subprocess
import unittest
from pathlib import Path

import support
from support import probe_recording


@unittest.skipUnless(shutil.which("ffmpeg"), "ffmpeg not installed")
class ToolingTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ingest = support.start_ingest()
        cls.key = support.new_key("sk_tool_")
        # 3 s of 640x360@30 + 440 Hz, paced in real time like a live publisher.
        r = subprocess.run(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-re",
             "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
             "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000", "-t", "3",
             "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac",
             "-f", "flv", f"{cls.ingest.url}/{cls.key}"],
            capture_output=True, text=True, timeout=60)
        cls.publish_rc, cls.publish_err = r.returncode, r.stderr
        cls.recording = cls.ingest.wait_recording(cls.key)

    @classmethod
    def tearDownClass(cls):
        cls.ingest.cleanup()

    def test_ingest_records_publish(self):
        self.assertEqual(self.publish_rc, 0, self.publish_err)
        self.assertTrue(self.recording.exists(), f"nothing recorded in {self.ingest.rec_dir}")

    def test_probe_accepts_good_recording(self):
        report, failures = probe_recording.verify(
            str(self.recording), expect_frames=90, tolerance=3, expect_width=640, expect_height=360,
            expect_audio_codec="aac", expect_video_codec="h264", expect_audio_seconds=3.0,
            audio_tolerance_pct=5)
        self.assertEqual(failures, [], probe_recording.format_text(report))
        self.assertEqual(report.decode_errors, 0)
        self.assertEqual(report.non_increasing_timestamps, 0)

    def test_probe_rejects_wrong_expectations(self):
        _, failures = probe_recording.verify(str(self.recording), expect_frames=300,
                                             expect_audio_codec="opus", expect_width=1280)
        self.assertEqual(len(failures), 3, failures)

    def test_probe_detects_corruption(self):
        data = bytearray(self.recording.read_bytes())
        for off in range(len(data) // 4, len(data), len(data) // 4):
            data[off:off + 1500] = bytes(1500)
        bad = Path(self.ingest.dir) / "corrupt.flv"
        bad.write_bytes(bytes(data))
        report, failures = probe_recording.verify(str(bad))
        self.assertNotEqual(failures, [], probe_recording.format_text(report))

    def test_probe_rejects_non_flv(self):
        junk = Path(self.ingest.dir) / "junk.flv"
        junk.write_bytes(b"not an flv file " * 64)
        _, failures = probe_recording.verify(str(junk))
        self.assertNotEqual(failures, [])

    def test_ingest_refuses_taken_port(self):
        r = subprocess.run([str(support.INGEST_SCRIPT), "start", "--port", str(self.ingest.port),
                            "--dir", str(self.ingest.dir / "other")],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already taken", r.stderr)

    def test_key_leak_check_catches_leak(self):
        self.assertNotEqual(support.find_key_leaks(texts=[f"url=rtmp://x/live/{self.key}"]), [])
        self.assertEqual(support.find_key_leaks(texts=["nothing secret here"]), [])


if __name__ == "__main__":
    unittest.main()
