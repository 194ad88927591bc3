"""The GStreamer element broadcastsink (gst/broadcastsink, built by scripts/build-gst over
libbroadcastkit.so), driven by gst-launch-1.0 exactly as a user would.

- gst-inspect-1.0 documents it: pads video/app_audio/mic_audio, properties, stream-key write-only.
- videotestsrc (720p BGRx, 300 buffers) + audiotestsrc into broadcastsink.app_audio streams 10 s to a
  private nginx-rtmp and to a file and exits 0; PyAV decodes 300 frames less the counted drops and
  ~10 s of audio; the key appears nowhere in the output, even with gst-launch -v.
- memory-budget=20M at 1080p fails with an element error that names the budget and prints the plan.
- A/V sync through the element: a flash/beep clip (white frame and a 50 ms 1 kHz beep at every whole
  second, made by ffmpeg as raw I420 + WAV) played by filesrc ! rawvideoparse / wavparse into
  broadcastsink; tools/avsync.py pairs every flash with its beep in nginx's recording, |A-V| <= 35 ms.
- Under GST_DEBUG=*:6 (every category at its most verbose) the key, given as stream-key-file or
  $STREAM_KEY, is in none of the output; an unreadable or empty key file is an element error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
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

    def flash_beep_clip(self, seconds: int, w: int = 320, h: int = 180) -> tuple[Path, Path]:
        """Raw I420 video (white frame at every whole second from 1 s) and a WAV (50 ms 1 kHz beep
        starting at every whole second from 1 s), both made by ffmpeg."""
        video, audio = self.tmp / "flash.i420", self.tmp / "beep.wav"
        self.track_file(video)
        self.track_file(audio)
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
                        "-i", f"color=c=black:s={w}x{h}:r=30:d={seconds}",
                        "-vf", "drawbox=color=white:t=fill:enable='eq(mod(n\\,30)\\,0)*gte(n\\,30)'",
                        "-pix_fmt", "yuv420p", "-f", "rawvideo", str(video)], check=True, timeout=60)
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
                        "-i", f"sine=frequency=1000:sample_rate=48000:duration={seconds}",
                        "-af", "volume=0:enable='gte(mod(t\\,1)\\,0.05)+lt(t\\,1)'", "-ac", "2",
                        "-c:a", "pcm_s16le", str(audio)], check=True, timeout=60)
        return video, audio

    def test_flash_beep_through_the_element_in_sync(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        seconds = 12
        video, audio = self.flash_beep_clip(seconds)
        r = self.gst(["gst-launch-1.0",
                      "filesrc", f"location={video}", "!",
                      "rawvideoparse", "width=320", "height=180", "format=i420", "framerate=30/1", "!",
                      "broadcastsink", f"location={ingest.url}", f"stream-key={key}",
                      "filesrc", f"location={audio}", "!", "wavparse", "!", "audioconvert", "!",
                      "audio/x-raw,format=S16LE,rate=48000,channels=2", "!", "broadcastsink.app_audio"],
                     timeout=seconds + 60, debug="broadcastsink:4")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertIn("Got EOS", r.stdout)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        p = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "avsync.py"), str(rec),
                            "--tolerance-ms", "35", "--json"], capture_output=True, text=True, timeout=300)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        result = json.loads(p.stdout)
        s = result["summary"]
        print(f"\n--- gst flash/beep sync --- events={s.get('events')} max={s.get('max_abs_ms')} "
              f"mean={s.get('mean_ms')} unpaired={result['unpaired']}", file=sys.stderr)
        # Flashes at 1..11 s: every one paired with its beep, none left over, within 35 ms.
        self.assertEqual(result["unpaired"], {"flashes": [], "beeps": []}, result.get("reasons"))
        self.assertGreaterEqual(s["events"], seconds - 2, result.get("reasons"))
        self.assertLessEqual(s["max_abs_ms"], 35.0, result.get("reasons"))
        self.assertEqual(p.returncode, 0, result.get("reasons"))

    def test_key_absent_under_full_debug_log(self):
        # Every category at level 6 (LOG): property sets, caps, pad activity, the parser's own lines,
        # our element's lines. The key comes from stream-key-file, then from $STREAM_KEY: the two
        # ways the element documents for a command line (stream-key=... on a gst-launch line is
        # logged by GStreamer's parser itself, which no element can prevent).
        for how in ("file", "env"):
            with self.subTest(how=how):
                ingest = start_ingest()
                self.addCleanup(ingest.stop)
                key = new_key()
                args = ["gst-launch-1.0", "-v", "videotestsrc", "is-live=true", "num-buffers=45", "!",
                        "video/x-raw,format=BGRx,width=640,height=360,framerate=30/1", "!",
                        "broadcastsink", f"location={ingest.url}"]
                env = gst_env(self.tmp, "*:6")
                if how == "file":
                    key_file = self.tmp / "key"
                    key_file.write_text(key + "\n")
                    key_file.chmod(0o600)
                    args.append(f"stream-key-file={key_file}")
                else:
                    env["STREAM_KEY"] = key
                r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
                out = r.stdout + r.stderr
                self._captured_texts.append(out)
                self.assertEqual(r.returncode, 0, out[-2000:])
                self.assertGreater(len(out), 100_000, "GST_DEBUG=*:6 produced almost no log: not the run this test needs")
                self.assertIn("broadcastsink", out)
                self.assertNotIn(key, out)
                rec = ingest.wait_recording(key)
                self.track_file(rec)
                self.assertGreater(self.assertRecordingOK(rec, expect_width=640).first("video").frames, 10)

    def test_bad_key_file_is_an_element_error(self):
        empty = self.tmp / "empty-key"
        empty.write_text("\n")
        for path, message in ((self.tmp / "missing-key", "stream-key-file cannot be read"),
                              (empty, "stream-key-file is empty")):
            r = self.gst(["gst-launch-1.0", "videotestsrc", "is-live=true", "num-buffers=30", "!",
                          "video/x-raw,format=BGRx,width=640,height=360", "!",
                          "broadcastsink", "location=rtmp://127.0.0.1:9/live", f"stream-key-file={path}"], timeout=60)
            self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(message, r.stdout + r.stderr)

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
