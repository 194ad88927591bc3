"""The output frame rate is the one the stream declares when the source is faster (#38, part 1).

- A PipeWire screen node that sends 60 frames a second (the synthetic pw-test-screen at --fps 60,
  as mutter sends while anything moves) under `--fps 30` for 30 s: 870-930 frames in the
  recording, at most 1% of the intervals under 25 ms, the extra pictures counted as
  `video_frames_skipped` (not drops). On main before the gate (cea4dda) the issue measured 1712
  frames, 1645 intervals under 25 ms.
- A 60 fps Y4M pipe under `--fps 30`: half its frames, none closer than 25 ms.
- An embedder (the Python binding) in `drop` mode sending 60 pictures a second on their capture
  times: the stream carries 30 a second, the rest are skipped, not dropped; in `block` mode every
  frame it gives is encoded.
PyAV (not our parsers) reads every recording.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

import support
from support import REPO_ROOT, BROADCAST_BIN, BroadcastTestCase

PIPEWIRE_UP = REPO_ROOT / "scripts" / "pipewire-up"
PIPEWIRE_DOWN = REPO_ROOT / "scripts" / "pipewire-down"
PRODUCER = Path(os.environ.get("PW_TEST_SCREEN", REPO_ROOT / ".build" / "release" / "pw-test-screen"))
LIB = REPO_ROOT / ".build" / "release" / "libbroadcastkit.so"
PY_BINDING = REPO_ROOT / "bindings" / "python"


def video_times(path: Path) -> list[float]:
    import av
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        return sorted(float(p.pts * p.time_base) for p in c.demux(vs) if p.pts is not None and p.size > 0)


def short_gaps(times: list[float], under: float = 0.025) -> list[float]:
    """The times of the frames followed by one less than `under` seconds later."""
    return [round(a, 3) for a, b in zip(times, times[1:]) if b - a < under]


def last_stats(path: Path) -> dict:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()][-1]


@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
@support.exclusive("frame intervals of a real-time 60 Hz PipeWire producer")
class SixtyHertzScreenTest(BroadcastTestCase):
    state: Path
    pw_env: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.state = Path(tempfile.mkdtemp(prefix=f"bcast-fps-{support.worker_tag()}-"))
        r = subprocess.run([str(PIPEWIRE_UP), "--state", str(cls.state), "--no-audio",
                            "--screen-args", "--fps 60"], capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PW_TEST_SCREEN": str(PRODUCER)})
        if r.returncode != 0:
            subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False, timeout=60)
            raise RuntimeError(f"scripts/pipewire-up failed: {r.stderr}")
        cls.pw_env = {}
        for line in r.stdout.splitlines():
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                cls.pw_env[k] = v

    @classmethod
    def tearDownClass(cls) -> None:
        subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False, timeout=60)
        if not os.environ.get("KEEP_TEST_DIRS"):
            subprocess.run(["rm", "-rf", str(cls.state)], check=False)

    def test_60hz_screen_node_streams_30_fps_under_fps_30(self) -> None:
        rec = self.tmp / "sixty.flv"
        stats = self.track_file(self.tmp / "stats.jsonl")
        seconds = 30
        r = self.run_broadcast(["--no-publish", "--record", str(rec), "--source", "screen-node",
                                "--screen-node", "pw-test-screen", "--no-app-audio", "--no-mic",
                                "--res", "720p", "--fps", "30", "--duration", str(seconds),
                                "--stats-json", str(stats)], env=self.pw_env, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        times = video_times(rec)
        short = short_gaps(times)
        last = last_stats(stats)
        print(f"\n60 Hz screen at --fps 30: {len(times)} frames in {times[-1] - times[0]:.2f} s, "
              f"{len(short)} intervals < 25 ms (at {short[:20]}), captured {last['video_frames_in']}, "
              f"skipped {last.get('video_frames_skipped')}, repeated {last['video_frames_repeated']}, "
              f"drops {last['drops']}", file=sys.stderr)
        # Two-sided: the declared 30 fps, not ~57 (before) and not a starved stream.
        self.assertGreaterEqual(len(times), 870, f"{len(times)} frames in {seconds} s")
        self.assertLessEqual(len(times), 930, f"{len(times)} frames in {seconds} s")
        self.assertLessEqual(len(short), 0.01 * len(times), f"{len(short)} of {len(times)} intervals under 25 ms")
        # The extra pictures are skipped before conversion and counted as such, not as drops.
        self.assertGreater(last["video_frames_skipped"], 0.8 * last["video_frames_in"], last)
        # A loaded machine may drop a picture the encoder was too busy for (counted); not more than 1%.
        self.assertLessEqual(last["total_drops"], 0.01 * len(times), last)


@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class FasterInputTest(BroadcastTestCase):
    def test_60_fps_y4m_pipe_is_thinned_to_30(self) -> None:
        rec = self.tmp / "y4m60.flv"
        stats = self.track_file(self.tmp / "stats.jsonl")
        gen = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
                                "-i", "testsrc2=size=640x360:rate=60", "-frames:v", "300",
                                "-f", "yuv4mpegpipe", "-"], stdout=subprocess.PIPE)
        try:
            r = self.run_broadcast(["--no-publish", "--record", str(rec), "--source", "y4m:-",
                                    "--res", "640x360", "--fps", "30", "--stats-json", str(stats)],
                                   stdin=gen.stdout, timeout=90)
        finally:
            gen.stdout.close()
            gen.wait(timeout=30)
        self.assertEqual(r.returncode, 0, r.describe())
        times = video_times(rec)
        last = last_stats(stats)
        short = short_gaps(times)
        print(f"\n60 fps y4m at --fps 30: {len(times)} frames, {len(short)} intervals < 25 ms (at {short[:10]}), "
              f"in {last['video_frames_in']}, skipped {last.get('video_frames_skipped')}, drops {last['drops']}",
              file=sys.stderr)
        busy = last["drops"]["encoder_busy"]
        self.assertLessEqual(busy, 3, last)
        # Every picture is accounted for: taken, skipped, or (loaded machine) dropped as busy.
        self.assertEqual(last["video_frames_in"] + last["video_frames_skipped"] + busy, 300, last)
        # 300 pictures over 5 s: every other one, 150, but for the few that pass while the lane
        # learns the source's rate (at most 6), less any dropped as busy.
        self.assertGreaterEqual(len(times), 148 - busy, len(times))
        self.assertLessEqual(len(times), 156, len(times))
        self.assertGreaterEqual(last["video_frames_skipped"], 144, last)
        self.assertLessEqual(len(short), 6, short)
        self.assertEqual([t for t in short if t > 0.5], [], "a short interval after the first half second")


EMBEDDER = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import broadcastkit as bk
    record, mode = sys.argv[1], sys.argv[2]
    s = bk.Session(record=record, width=640, height=360, fps=30, audio_codec=None, memory_budget=0,
                   backpressure=mode)
    s.start()
    frame = np.zeros((360, 640, 4), np.uint8)
    results = {}
    t0 = time.monotonic_ns()
    for i in range(180):                       # 3 s of a 60 Hz producer
        due = t0 + i * 16_666_667
        if mode == "drop":                     # a live producer: in real time, on its capture times
            while time.monotonic_ns() < due:
                time.sleep(0.001)
        frame[:, (i * 8) % 600:(i * 8) % 600 + 32, :] = i & 0xFF
        r = s.send_video(frame, pts_ns=due)
        results[r] = results.get(r, 0) + 1
    s.finish()
    print(json.dumps({"results": results, "stats": s.stats()}))
    s.close()
""")


@unittest.skipUnless(LIB.exists(), f"{LIB} not built")
class EmbedderFasterThanTheFrameRateTest(BroadcastTestCase):
    def run_embedder(self, mode: str) -> tuple[dict, list[float]]:
        rec = self.tmp / f"embedder-{mode}.flv"
        script = self.tmp / "embedder.py"
        script.write_text(EMBEDDER)
        env = dict(support.clean_env(), PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        p = subprocess.run([sys.executable, str(script), str(rec), mode], capture_output=True, text=True,
                           timeout=120, env=env)
        self._captured_texts += [p.stdout, p.stderr]
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        report = json.loads(p.stdout.strip().splitlines()[-1])
        times = video_times(rec)
        print(f"\nembedder ({mode}), 180 pictures at 60 Hz: {len(times)} frames, results {report['results']}, "
              f"in {report['stats']['video_frames_in']}, skipped {report['stats'].get('video_frames_skipped')}, "
              f"drops {report['stats']['drops']}", file=sys.stderr)
        return report, times

    def test_drop_mode_producer_at_60_hz_is_skipped_to_30_not_dropped(self) -> None:
        report, times = self.run_embedder("drop")
        st = report["stats"]
        busy = st["drops"]["encoder_busy"]
        # The issue: extra pictures of a live producer are skipped (handled: "accepted"), not drops.
        self.assertEqual(st["video_frames_in"] + st["video_frames_skipped"] + busy, 180, st)
        self.assertGreaterEqual(st["video_frames_skipped"], 80, st)
        self.assertEqual(st["total_drops"], busy, st)
        self.assertLessEqual(busy, 3, st)
        self.assertEqual(report["results"].get("accepted", 0), 180 - busy, report["results"])
        # 3 s at 30 fps (and the few that pass while the lane learns the rate).
        self.assertGreaterEqual(len(times), 88 - busy, len(times))
        self.assertLessEqual(len(times), 96, len(times))
        self.assertEqual([t for t in short_gaps(times) if t > 0.5], [], "a short interval after the first half second")

    def test_block_mode_producer_keeps_every_frame(self) -> None:
        report, times = self.run_embedder("block")
        st = report["stats"]
        self.assertEqual(st["video_frames_skipped"], 0, st)
        self.assertEqual(st["video_frames_in"], 180, st)
        self.assertEqual(len(times), 180, "block mode encodes every frame the producer gives")


if __name__ == "__main__":
    unittest.main()
