"""Video-only streams: no empty audio track anywhere.

`--no-app-audio --no-mic` (any source) and `--source y4m:` without `--pcm` make a stream with no
audio at all: the FLV header carries only the video flag, onMetaData has no audio fields and
there is no audio sequence header; an MP4 recording and a replay clip have no audio track.
Checked with ffprobe and PyAV, not our own parsers. About 10 s.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support  # noqa: E402
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase  # noqa: E402


def ffprobe(path: Path) -> dict:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"ffprobe {path}: {out.stderr}")
    return json.loads(out.stdout)


@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class VideoOnlyTest(BroadcastTestCase):
    def assertVideoOnly(self, path: Path, min_frames: int) -> None:
        info = ffprobe(path)
        kinds = [s["codec_type"] for s in info["streams"]]
        self.assertEqual(kinds, ["video"], f"{path.name}: streams {kinds}")
        tags = {k.lower() for k in info["format"].get("tags", {})}
        self.assertFalse({"audiocodecid", "audiodatarate", "audiosamplerate", "stereo"} & tags,
                         f"{path.name}: audio fields in the metadata: {sorted(tags)}")
        import av
        with av.open(str(path)) as c:
            self.assertEqual(len(c.streams.audio), 0, path.name)
            frames = sum(1 for _ in c.decode(c.streams.video[0]))
        self.assertGreaterEqual(frames, min_frames, path.name)

    def assertFLVHasNoAudio(self, path: Path) -> None:
        data = path.read_bytes()
        self.assertEqual(data[:3], b"FLV")
        self.assertEqual(data[4], 0x01, "FLV header flags: video only")
        # Walk the tags: none is an audio tag (type 8), so no AAC sequence header either.
        pos = 9 + 4
        types = set()
        while pos + 11 <= len(data):
            size = int.from_bytes(data[pos + 1:pos + 4], "big")
            types.add(data[pos])
            pos += 11 + size + 4
        self.assertNotIn(8, types, f"{path.name} has audio tags")
        self.assertIn(9, types)

    def test_test_source_without_app_audio_and_mic(self) -> None:
        flv = self.tmp / "v.flv"
        r = self.run_broadcast(["--no-publish", "--record", str(flv), "--source", "test", "--no-app-audio",
                                "--no-mic", "--res", "360p", "--duration", "3", "--quiet"], timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertFLVHasNoAudio(flv)
        self.assertVideoOnly(flv, 80)

    def test_mp4_recording_and_replay_clip_are_video_only(self) -> None:
        mp4 = self.tmp / "v.mp4"
        clips = self.tmp / "clips"
        clips.mkdir()
        stats = self.tmp / "stats.jsonl"
        proc = subprocess.Popen([str(BROADCAST_BIN), "--no-publish", "--record", str(mp4), "--source", "test",
                                 "--no-app-audio", "--no-mic", "--res", "360p", "--duration", "5",
                                 "--replay-seconds", "10", "--replay-dir", str(clips), "--stats-json", str(stats),
                                 "--quiet"],
                                env=support.clean_env(None), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(3.5)
        proc.send_signal(signal.SIGUSR1)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace")[-2000:])
        self.assertVideoOnly(mp4, 120)
        saved = sorted(clips.glob("replay-*.mp4"))
        self.assertEqual(len(saved), 1, err.decode(errors="replace")[-2000:])
        self.assertVideoOnly(saved[0], 30)
        # The recording's line in the stats names it an MP4 file (it was "custom", then "file").
        last = json.loads(stats.read_text().strip().splitlines()[-1])
        self.assertEqual([(d["kind"], d["name"]) for d in last["destinations"]], [("mp4", str(mp4))], last)

    def test_y4m_without_pcm_is_video_only(self) -> None:
        y4m = self.tmp / "in.y4m"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                        "-t", "2", "-pix_fmt", "yuv420p", str(y4m)], check=True, timeout=60)
        flv = self.tmp / "y.flv"
        r = self.run_broadcast(["--no-publish", "--record", str(flv), "--source", f"y4m:{y4m}", "--res", "360p",
                                "--quiet"], timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertFLVHasNoAudio(flv)
        self.assertVideoOnly(flv, 55)


if __name__ == "__main__":
    unittest.main()
