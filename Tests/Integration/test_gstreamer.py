"""The GStreamer element broadcastsink (gst/broadcastsink, built by scripts/build-gst over
libbroadcastkit.so), driven by gst-launch-1.0 exactly as a user would.

- gst-inspect-1.0 documents it: pads video/app_audio/mic_audio, properties, stream-key write-only.
- videotestsrc (720p BGRx, 300 buffers) + audiotestsrc into broadcastsink.app_audio streams 10 s to a
  private nginx-rtmp and to a file and exits 0; PyAV decodes 300 frames less the counted drops and
  ~10 s of audio; the key appears nowhere in the output, even with gst-launch -v.
- memory-budget=20M at 1080p fails with an element error that names the budget and prints the plan.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unittest
from pathlib import Path

from support import REPO_ROOT, BroadcastTestCase, new_key, start_ingest

BUILD_DIR = REPO_ROOT / ".build" / "release"
PLUGIN_DIR = BUILD_DIR / "gstreamer-1.0"
PLUGIN = PLUGIN_DIR / "libgstbroadcastsink.so"


def gst_env(tmp: Path, debug: str | None = None) -> dict:
    env = dict(os.environ, GST_PLUGIN_PATH=str(PLUGIN_DIR), GST_REGISTRY=str(tmp / "registry.bin"))
    env.pop("GST_DEBUG", None)
    if debug:
        env["GST_DEBUG"] = debug
        env["GST_DEBUG_NO_COLOR"] = "1"
    return env


class GStreamerSinkTest(BroadcastTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        r = subprocess.run([str(REPO_ROOT / "scripts" / "build-gst")], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError(f"scripts/build-gst failed:\n{r.stderr}")

    def gst(self, args, timeout: float = 90, debug: str | None = None) -> subprocess.CompletedProcess:
        r = subprocess.run(args, env=gst_env(self.tmp, debug), capture_output=True, text=True, timeout=timeout)
        self._captured_texts += [r.stdout, r.stderr]
        return r

    def test_gst_inspect_documents_the_element(self):
        r = self.gst(["gst-inspect-1.0", "broadcastsink"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for text in ("Sink/Network", "SINK template: 'video'", "SINK template: 'app_audio'",
                     "SINK template: 'mic_audio'", "BGRx", "NV12", "I420", "S16LE", "F32LE", "location",
                     "memory-budget", "video-bitrate", "record"):
            self.assertIn(text, r.stdout)
        key_prop = re.search(r"\n  stream-key .*?(?=\n  [a-z])", r.stdout, re.S).group(0)
        self.assertIn("Write only", key_prop)
        self.assertIn("flags: writable", key_prop)
        self.assertNotIn("flags: readable", key_prop)

    def test_streams_10s_and_exits_0(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        record = self.tmp / "gst.flv"
        self.track_file(record)
        r = self.gst(["gst-launch-1.0", "-v",
                      "videotestsrc", "is-live=true", "num-buffers=300", "!",
                      "video/x-raw,format=BGRx,width=1280,height=720,framerate=30/1", "!",
                      "broadcastsink", f"location={ingest.url}", f"stream-key={key}", f"record={record}",
                      "audiotestsrc", "is-live=true", "num-buffers=480", "samplesperbuffer=1024", "!",
                      "broadcastsink.app_audio"], debug="broadcastsink:4")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertIn("Got EOS", r.stdout)
        m = re.search(r"finished: (\{.*\})", r.stderr)
        self.assertIsNotNone(m, r.stderr[-2000:])
        stats = json.loads(m.group(1))
        lane_drops = sum(stats["drops"][k] for k in ("encoder_busy", "malformed", "backwards_timestamp"))
        self.assertEqual(stats["video_frames_in"] + lane_drops, 300, stats)
        self.assertGreater(stats["video_frames_in"], 30, stats)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        for path in (rec, record):
            self.assertRecordingOK(path, expect_frames=stats["video_frames_sent"], tolerance=3, expect_width=1280,
                                   expect_height=720, expect_audio_codec="aac", expect_audio_seconds=10.0,
                                   audio_tolerance_pct=4.0)

    def test_readme_gst_launch_example(self):
        m = re.search(r"<!-- ci: gst -->\s*```sh\n(.*?)```", (REPO_ROOT / "README.md").read_text(), re.S)
        self.assertIsNotNone(m, "README has no <!-- ci: gst --> example")
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        env = gst_env(self.tmp)
        env.pop("GST_PLUGIN_PATH")
        env.update(STREAM_KEY=key, BROADCAST_URL=ingest.url)
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", m.group(1)], env=env, cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=90)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        # No stats here (the README line is plain): frames sent by the element are not known, so allow
        # for encoder_busy drops on a loaded machine and check what decodes.
        report = self.assertRecordingOK(rec, expect_width=1280, expect_audio_codec="aac")
        self.assertGreater(report.first("video").frames, 30)

    def test_impossible_budget_fails_with_the_plan(self):
        key = new_key()
        r = self.gst(["gst-launch-1.0", "videotestsrc", "is-live=true", "num-buffers=60", "!",
                      "video/x-raw,format=BGRx,width=1920,height=1080", "!",
                      "broadcastsink", "location=rtmp://127.0.0.1:9/live", f"stream-key={key}",
                      "memory-budget=20M"], timeout=60)
        out = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, out)
        self.assertIn("memory plan exceeds the 20 MB budget", out)
        self.assertIn("memory-budget=20M", out)
        self.assertIn("x264 working frames", out)
        self.assertIn("total", out)


if __name__ == "__main__":
    unittest.main()
