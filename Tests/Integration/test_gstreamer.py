"""The GStreamer element broadcastsink (gst/broadcastsink, built by scripts/build-gst over
libbroadcastkit.so), driven by gst-launch-1.0 exactly as a user would.

- gst-inspect-1.0 documents it: pads video (always) and app_audio/mic_audio (on request), the URI
  handler's schemes, location for every scheme, properties, stream-key write-only.
- No audio pad requested: a video-only stream, no audio track in nginx's recording nor in an MP4
  record (ffprobe); pads requested and released before the start: video-only too; a request after
  the start is refused (python3-gi).
- Gst.Element.make_from_uri(SINK, "rtmp://.../live/KEY") makes a broadcastsink that publishes under
  KEY while get_uri/location never hold it; srt:// (streamid moved out), http(s):// (WHIP) made too;
  an unknown scheme or a bad URL is refused with the library's words (python3-gi); under
  GST_DEBUG=*:6 only GStreamer's own gsturi.c lines show a key given inside a URI.
- app_audio released while a live stream plays (its source stopped and removed first, as
  applications do): no error, EOS at the video's end, the audio track goes on (python3-gi).
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

from support import REPO_ROOT, BroadcastTestCase, new_key, start_ingest, video_frames_accepted
from support import exclusive  # noqa: E402

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
        for text in ("Sink/Network", "SINK template: 'sink'", "SINK template: 'app_audio'",
                     "SINK template: 'mic_audio'", "GstURIHandler", "Element can act as sink.", "BGRx", "NV12", "I420", "S16LE", "F32LE", "location",
                     "memory-budget", "video-bitrate", "record", "GstBaseSink", "sync", "backpressure",
                     "stats", "save-replay", "request-keyframe", "replay-seconds"):
            self.assertIn(text, r.stdout)
        # Honest metadata: the project publishes no URL, so none is invented; .mp4 records MP4.
        origin = re.search(r"Origin URL\s+(.*)", r.stdout).group(1)
        self.assertNotIn("http", origin)
        self.assertIn("broadcast", origin)
        record_prop = re.search(r"\n  record .*?(?=\n  [a-z])", r.stdout, re.S).group(0)
        self.assertIn("MP4", record_prop)
        bitrate_prop = re.search(r"\n  video-bitrate .*?(?=\n  [a-z])", r.stdout, re.S).group(0)
        self.assertIn("changeable in NULL, READY, PAUSED or PLAYING state", bitrate_prop)
        # The audio pads are requested, as a muxer's are; video is the base sink's pad.
        for name, presence in (("sink", "Always"), ("app_audio", "On request"), ("mic_audio", "On request")):
            template = re.search(rf"SINK template: '{name}'\n\s+Availability: (.*)", r.stdout)
            self.assertEqual(template.group(1).strip(), presence, name)
        protocols = re.search(r"Supported URI protocols:\n((?:\s{4}\S+\n)+)", r.stdout).group(1).split()
        self.assertEqual(protocols, ["rtmp", "rtmps", "srt", "http", "https"])
        # location documents every scheme it takes, and where the key goes for each.
        location_prop = re.search(r"\n  location .*?(?=\n  [a-z])", r.stdout, re.S).group(0)
        for text in ("rtmp://", "rtmps://", "srt://", "streamid", "WHIP", "http(s)://", "bearer token", "without the key"):
            self.assertIn(text, location_prop)
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
        self.assertEqual(video_frames_accepted(stats) + lane_drops, 300, stats)
        self.assertGreater(stats["video_frames_in"], 30, stats)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        for path in (rec, record):
            self.assertRecordingOK(path, expect_frames=stats["video_frames_sent"], tolerance=3, expect_width=1280,
                                   expect_height=720, expect_audio_codec="aac", expect_audio_seconds=10.0,
                                   audio_tolerance_pct=4.0)

    def test_video_only_pipeline_has_no_audio_track(self):
        # No audio pad requested: the stream and the record carry video alone (main at cea4dda sent
        # an AAC track of silence: 228 frames in 5 s).
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        record = self.tmp / "video-only.mp4"
        self.track_file(record)
        r = self.gst(["gst-launch-1.0", "videotestsrc", "num-buffers=90", "!",
                      "video/x-raw,format=I420,width=320,height=180,framerate=30/1", "!",
                      "broadcastsink", f"location={ingest.url}", f"stream-key={key}", f"record={record}"],
                     debug="broadcastsink:4")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        for what, path in (("nginx", rec), ("record", record)):   # nginx names its file after the key
            with self.subTest(recording=what):
                p = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,codec_name",
                                    "-of", "json", str(path)], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                streams = [(s["codec_type"], s["codec_name"]) for s in json.loads(p.stdout)["streams"]]
                self.assertEqual(streams, [("video", "h264")])
                self.assertEqual(self.decoded_frames(path), 90)
        stats = json.loads(re.search(r"finished: (\{.*\})", r.stderr).group(1))
        self.assertEqual(stats["audio_frames_sent"], 0, stats)
        self.assertIn("video-only: no audio track", r.stderr)

    def test_request_pads_released_before_start_make_video_only(self):
        record = self.tmp / "released.flv"
        self.track_file(record)
        rep = self.gi_script("gst_pads.py", str(record))
        self.assertEqual(rep["errors"], [], rep)
        self.assertEqual(rep["templates"], {"sink": "always", "app_audio": "request", "mic_audio": "request"})
        self.assertEqual(rep["pads_at_start"], ["sink"])
        self.assertEqual(rep["pads_requested"], ["app_audio", "mic_audio", "sink"])
        self.assertFalse(rep["unknown_request"], rep)
        self.assertEqual(rep["pads_released"], ["sink"])
        # The tracks are fixed when the stream starts: a pad requested after is refused.
        self.assertFalse(rep["late_request"], rep)
        self.assertTrue(rep["eos"], rep)
        self.assertEqual(rep["stats"], {"video-frames-sent": 60, "audio-frames-sent": 0})
        import av
        with av.open(str(record)) as c:
            self.assertEqual([s.type for s in c.streams], ["video"])
        self.assertEqual(self.decoded_frames(record), 60)

    def test_audio_pad_released_while_playing(self):
        # The application takes its tone away mid-stream (elements to NULL, removed, pad released):
        # no deadlock, no error; the stream goes on to the video's end with its audio track
        # continuing (the library's mixer keeps a quiet lane flowing), and the record decodes.
        record = self.tmp / "released-live.flv"
        self.track_file(record)
        rep = self.gi_script("gst_release.py", str(record))
        self.assertEqual(rep["errors"], [], rep)
        self.assertEqual(rep["pads_before"], ["app_audio", "sink"])
        self.assertEqual(rep["pads_after"], ["sink"])
        self.assertLess(rep["release_s"], 2.0, rep)
        self.assertTrue(rep["eos"], rep)
        self.assertGreater(rep["stats_at_release"]["audio-frames-sent"], 0, rep)
        self.assertEqual(rep["stats"]["video-frames-sent"], self.decoded_frames(record))
        self.assertGreater(rep["stats"]["video-frames-sent"], 100, rep)
        # 120 frames at 30 fps: 4 s, 46.9 AAC frames a second, also after the release.
        self.assertGreater(rep["stats"]["audio-frames-sent"], 0.9 * 4 * 48000 / 1024, rep)
        import av
        with av.open(str(record)) as c:
            self.assertEqual(sorted(s.type for s in c.streams), ["audio", "video"])

    def test_make_from_uri_picks_the_element_and_keeps_the_key_out(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key, srt_key = new_key(), new_key("sk_srt_")
        urls = [f"{ingest.url}/{key}",                          # streamed: nginx records it under `key`
                f"srt://127.0.0.1:9?latency=120&streamid={srt_key}",
                "https://127.0.0.1:9/whip/endpoint", "http://127.0.0.1:9/whip",
                "ftp://127.0.0.1/x", "rtmp://127.0.0.1", "srt://127.0.0.1:9/path"]
        # The URLs hold keys: a file, never argv.
        urls_file = self.tmp / "urls"
        urls_file.write_text("\n".join(urls) + "\n")
        urls_file.chmod(0o600)
        rep = self.gi_script("gst_uri.py", str(urls_file))
        made = rep["made"]
        for m in made[:4]:
            self.assertEqual(m.get("factory"), "broadcastsink", made)
            self.assertEqual(m["uri_type"], "sink")
            self.assertEqual(m["uri"], m["location"])
        self.assertEqual(made[0]["uri"], ingest.url)
        self.assertEqual(made[1]["uri"], "srt://127.0.0.1:9?latency=120")
        self.assertEqual(made[2]["uri"], urls[2])
        self.assertEqual(made[3]["uri"], urls[3])
        self.assertIn("No URI handler for the ftp protocol", made[4]["error"])
        self.assertIn("RTMP URL has no application path", made[5]["error"])
        self.assertIn("SRT URL takes no path", made[6]["error"])
        self.assertEqual(rep["errors"], [], rep)
        self.assertTrue(rep["eos"], rep)
        self.assertEqual(rep["stats"], {"video-frames-sent": 60, "audio-frames-sent": 0})
        # The key taken from the URI is the one published under.
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertEqual(self.decoded_frames(rec), 60)

    def test_key_in_a_uri_only_in_gstreamers_own_uri_log(self):
        # A URI holding the key, under GST_DEBUG=*:6: GStreamer's core (gsturi.c) logs the URI it is
        # given, which no element can prevent (documented, as for gst-launch's parser); every other
        # line, ours included, is free of it, and so is everything the element reports.
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        urls_file = self.tmp / "urls"
        urls_file.write_text(f"{ingest.url}/{key}\n")
        urls_file.chmod(0o600)
        r = subprocess.run(["/usr/bin/python3", str(Path(__file__).parent / "embedding" / "gst_uri.py"), str(urls_file)],
                           env=gst_env(self.tmp, "*:6"), capture_output=True, text=True, timeout=120)
        lines = (r.stdout + r.stderr).splitlines()
        self.assertGreater(len(lines), 1000, "GST_DEBUG=*:6 produced almost no log: not the run this test needs")
        holding = [line for line in lines if key in line]
        self.assertTrue(holding, "GStreamer's core no longer logs the URI: update docs/embedding.md")
        core = re.compile(r" GST_URI gsturi\.c:\d+:gst_element_make_from_uri[:<]")
        self.assertEqual([line.replace(key, "****") for line in holding if not core.search(line)], [],
                         "the key in lines not from GStreamer's gsturi.c")
        # Everything else goes through the suite's leak check.
        self._captured_texts.append("\n".join(line for line in lines if key not in line))
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        rep = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertTrue(rep["eos"], rep)
        self.assertIn("broadcastsink", r.stderr)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertEqual(self.decoded_frames(rec), 60)

    def test_readme_gst_launch_example(self):
        m = re.search(r"<!-- ci: gst -->\s*```sh\n(.*?)```", (REPO_ROOT / "docs" / "embedding.md").read_text(), re.S)
        self.assertIsNotNone(m, "docs/embedding.md has no <!-- ci: gst --> example")
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

    @exclusive("A/V sync")
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

    @exclusive("audio against video time")
    def test_unpaced_non_live_audio_and_video_stay_together(self):
        # sync=false: both pads run as fast as the encoder takes them; the audio is held to the video's
        # running time, so the track is not padded with silence and flashes pair with beeps.
        seconds = 12
        video, audio = self.flash_beep_clip(seconds)
        record = self.tmp / "unpaced.flv"
        self.track_file(record)
        r = self.gst(["gst-launch-1.0",
                      "filesrc", f"location={video}", "!",
                      "rawvideoparse", "width=320", "height=180", "format=i420", "framerate=30/1", "!",
                      "broadcastsink", "name=s", "sync=false", f"record={record}",
                      "filesrc", f"location={audio}", "!", "wavparse", "!", "audioconvert", "!",
                      "audio/x-raw,format=S16LE,rate=48000,channels=2", "!", "s.app_audio"], timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        import av
        with av.open(str(record)) as c:
            audio_s = sum(f.samples for p in c.demux(audio=0) for f in p.decode()) / 48000
        self.assertEqual(self.decoded_frames(record), seconds * 30)
        self.assertLess(abs(audio_s - seconds), 0.5, f"{audio_s:.2f} s of audio for {seconds} s of video")
        p = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "avsync.py"), str(record),
                            "--tolerance-ms", "35", "--json"], capture_output=True, text=True, timeout=300)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        result = json.loads(p.stdout)
        self.assertEqual(result["unpaired"], {"flashes": [], "beeps": []}, result.get("reasons"))
        self.assertGreaterEqual(result["summary"]["events"], seconds - 2, result.get("reasons"))
        self.assertLessEqual(result["summary"]["max_abs_ms"], 35.0, result.get("reasons"))

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

    def gi_script(self, name: str, *args: str, timeout: float = 90) -> dict:
        """Runs Tests/Integration/embedding/NAME with Debian's python3 (python3-gi) and returns its JSON."""
        r = subprocess.run(["/usr/bin/python3", str(Path(__file__).parent / "embedding" / name), *args],
                           env=gst_env(self.tmp), capture_output=True, text=True, timeout=timeout)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-3000:])
        return json.loads(r.stdout.strip().splitlines()[-1])

    def decoded_frames(self, path: Path) -> int:
        import av
        with av.open(str(path)) as c:
            return sum(1 for p in c.demux(video=0) for _ in p.decode())

    def test_named_non_live_pipeline_records_every_frame(self):
        # name= on the first instance (gst-launch's parser sets it while building the element), a
        # non-live source (held back, never dropped) and a .mp4 record (MP4, not FLV).
        record = self.tmp / "named.mp4"
        self.track_file(record)
        r = self.gst(["gst-launch-1.0", "videotestsrc", "num-buffers=300", "pattern=ball", "!",
                      "video/x-raw,format=BGRx,width=640,height=360,framerate=60/1", "!",
                      "broadcastsink", "name=s", f"record={record}",
                      "audiotestsrc", "num-buffers=250", "samplesperbuffer=960", "!",
                      "audio/x-raw,rate=48000,channels=2", "!", "s.app_audio"], debug="broadcastsink:4")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertIn("non-live input: back-pressure block", r.stderr)
        self.assertEqual(record.read_bytes()[4:8], b"ftyp")
        self.assertEqual(self.decoded_frames(record), 300)
        # Unpaced (sync=false), the source runs faster than x264 at 720p: held back, not dropped.
        fast = self.tmp / "fast.mp4"
        self.track_file(fast)
        r = self.gst(["gst-launch-1.0", "videotestsrc", "num-buffers=300", "pattern=ball", "!",
                      "video/x-raw,format=BGRx,width=1280,height=720,framerate=30/1", "!",
                      "broadcastsink", "sync=false", f"record={fast}"])
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertEqual(self.decoded_frames(fast), 300)

    def test_state_matrix_live_and_non_live(self):
        # NULL -> READY -> PAUSED -> PLAYING -> PAUSED -> PLAYING -> NULL, as an application drives it.
        for mode in ("nonlive", "live"):
            with self.subTest(mode=mode):
                record = self.tmp / f"states-{mode}.flv"
                self.track_file(record)
                rep = self.gi_script("gst_states.py", mode, str(record))
                self.assertEqual(rep["name"], "s")
                self.assertEqual(rep["errors"], [])
                steps = {i: s for i, s in enumerate(rep["steps"])}
                self.assertEqual([s["reached"] for s in rep["steps"]],
                                 ["ready", "paused", "playing", "paused", "playing", "null"], rep)
                # A sink prerolls on non-live input (ASYNC), a live pipeline does not (NO_PREROLL).
                self.assertEqual(steps[1]["return"], "no-preroll" if mode == "live" else "async", rep)
                # PAUSED consumes nothing: before PLAYING and after it.
                self.assertEqual(steps[1]["frames_in"], [0, 0], rep)
                paused = steps[3]["frames_in"]
                self.assertEqual(paused[0], paused[1], rep)
                # PLAYING consumes at the source's rate (30 fps, about 0.6 s between the two reads), both times.
                for i in (2, 4):
                    before, after = steps[i]["frames_in"]
                    self.assertGreater(after - before, 8, rep)
                self.assertGreater(steps[4]["frames_in"][0], paused[1], rep)
                self.assertTrue(rep["eos"], rep)
                self.assertEqual(rep["final"]["total-drops"], 0, rep)
                self.assertEqual(self.decoded_frames(record), rep["final"]["video-frames-sent"])

    def test_runtime_controls(self):
        # video-bitrate while PLAYING, request-keyframe, an upstream force-key-unit event, save-replay,
        # stats; keyframe-interval=20 so the only keyframes after the first are the two requested.
        record, clip = self.tmp / "controls.flv", self.tmp / "clip.mp4"
        self.track_file(record)
        self.track_file(clip)
        rep = self.gi_script("gst_controls.py", str(record), str(clip))
        self.assertEqual(rep["errors"], [])
        self.assertEqual(rep["stats_before_start"], {"status": "idle"})
        self.assertEqual(rep["target_after_set"], 800, rep)
        self.assertTrue(rep["request_keyframe"], rep)
        self.assertTrue(rep["upstream_fku"], rep)
        self.assertEqual(rep["save_replay"], str(clip), rep)
        self.assertGreater(self.decoded_frames(clip), 30)
        self.assertTrue(rep["eos"], rep)
        st = rep["stats"]
        self.assertEqual(st["video-frames-sent"], self.decoded_frames(record), st)
        import av
        with av.open(str(record)) as c:
            keys = [float(p.pts * p.time_base) for p in c.demux(video=0) if p.is_keyframe and p.size]
        self.assertEqual(len(keys), 3, keys)
        self.assertAlmostEqual(keys[1], 2.0, delta=0.5)
        self.assertAlmostEqual(keys[2], 3.0, delta=0.5)

    @exclusive("drops under a rate the element cannot keep")
    def test_drops_post_qos_and_a_warning(self):
        # A live 1080p120 source into x264 medium on this machine's two cores: the encoder cannot keep
        # up, so frames are dropped (live input drops); each drop is a QoS message and there is a WARNING.
        r = self.gst(["gst-launch-1.0", "-m", "videotestsrc", "is-live=true", "num-buffers=240", "pattern=ball", "!",
                      "video/x-raw,format=I420,width=1920,height=1080,framerate=120/1", "!",
                      "broadcastsink", "name=s", f"record={self.tmp / 'drops.flv'}", "preset=medium",
                      "memory-budget=0", "audio-codec=none"], timeout=90, debug="broadcastsink:4")
        self.track_file(self.tmp / "drops.flv")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        m = re.search(r"finished: (\{.*\})", r.stderr)
        stats = json.loads(m.group(1))
        busy = stats["drops"]["encoder_busy"]
        self.assertGreater(busy, 0, stats)
        qos = len(re.findall(r'from element "s" \(qos\)', r.stdout))
        self.assertEqual(qos, busy, r.stdout[-3000:])
        self.assertIn("video buffers dropped: encoder_busy", r.stdout)

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
