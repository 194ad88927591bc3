"""A pause of every source for 30 s, through the real binary and a real nginx-rtmp.

The test source stops delivering video, app audio and mic audio at 10 s and resumes at 40 s
(--test-gap-at 10 --test-gap-ms 30000), with the impairments of the CI sync runs (300 ppm
audio skew, 15 ms capture jitter, mic 700 ms late). scripts/avsync on nginx's recording
must pair every flash with its beep, including the first one after the resume, within
35 ms; the media time must advance by the gap (the stream continues in wall-clock time
rather than closing the gap) with the audio continuous through it and the video too (the
last picture repeated at the frame rate, counted as video_frames_repeated); and no tag may
have been clamped.

About 1 minute. SKIP_LONG_TESTS=1 skips it. BROADCAST_PAUSE_S=N runs the same checks with an
N-second pause instead (e.g. 300 for the 5-minute case, run by hand: about 6 minutes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

from bktools import targets

from support import (BROADCAST_BIN, REPO_ROOT, BroadcastTestCase,  # noqa: E402
                     new_key, start_ingest)
from support import exclusive  # noqa: E402
from test_soak import flash_frames_not_sent  # noqa: E402

LONG = not os.environ.get("SKIP_LONG_TESTS")
PY = sys.executable
SYNC_MAX_MS = targets.SYNC_IMPAIRED_MAX_MS
DRIFT_MAX_MS_PER_HOUR = targets.DRIFT_MAX_MS_PER_HOUR
GAP_AT = 10
GAP_S = int(os.environ.get("BROADCAST_PAUSE_S", "30"))
SECONDS = GAP_AT + GAP_S + 6


def video_times(path: Path) -> list[float]:
    """Presentation times (s) of every video packet in the recording."""
    import av

    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        return sorted(float(p.pts * p.time_base) for p in c.demux(vs) if p.pts is not None)


@exclusive("A/V sync across pauses")
@unittest.skipUnless(LONG, "SKIP_LONG_TESTS set")
@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class PauseResumeTest(BroadcastTestCase):
    def test_pause_every_source(self):
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        args = ["--url", ingest.url, "--source", "test", "--test-pattern", "static", "--res", "720p", "--fps", "30",
                "--duration", str(SECONDS), "--test-audio-skew-ppm", "300",
                "--test-jitter-ms", "15", "--test-mic-delay-ms", "700",
                "--test-gap-at", str(GAP_AT), "--test-gap-ms", str(GAP_S * 1000),
                "--stats-json", str(stats), "--quiet"]
        r = self.run_broadcast(args, env={"STREAM_KEY": key}, timeout=SECONDS + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        ingest.stop()
        rec = ingest.wait_recording(key)
        self.assertTrue(rec.exists() and rec.stat().st_size > 0, "no nginx recording")

        # The mixer keeps mixing silence out in real time through the pause: the audio
        # track is continuous.
        p = subprocess.run([PY, str(REPO_ROOT / "tools" / "avsync.py"), str(rec),
                            "--tolerance-ms", str(SYNC_MAX_MS), "--max-drift-ms-per-hour", str(DRIFT_MAX_MS_PER_HOUR), "--json"],
                           capture_output=True, text=True, timeout=300)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        result = json.loads(p.stdout)
        s = result["summary"]
        print(f"\n--- pause/resume (nginx recording) ---\nevents={s.get('events')} "
              f"max={s.get('max_abs_ms')} unpaired={result['unpaired']} "
              f"streams={result['streams']} reasons={result['reasons']}", file=sys.stderr)

        # Flashes at 1..9 s and from the resume to the end: all paired, none left over (a beep alone only where
        # its flash frame was dropped as encoder_busy on a loaded machine).
        last = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()][-1]
        self.assertEqual(result["unpaired"]["flashes"], [], result["reasons"])
        lone_beeps = result["unpaired"]["beeps"]
        self.assertEqual(flash_frames_not_sent(rec, lone_beeps), lone_beeps, result["reasons"])
        self.assertLessEqual(len(lone_beeps), last["drops"]["encoder_busy"], result["reasons"])
        self.assertTrue(all(b < GAP_AT + GAP_S - 0.5 or b > GAP_AT + GAP_S + 0.5 for b in lone_beeps),
                        "the first flash after the resume must be measured")
        self.assertGreaterEqual(s["events"] + len(lone_beeps), 9 + 5, result["reasons"])
        first = [e for e in result["events"] if e["video_s"] > GAP_AT + 1][0]
        print(f"first flash after the resume: {first}", file=sys.stderr)
        self.assertAlmostEqual(first["video_s"], GAP_AT + GAP_S, delta=0.1)
        self.assertLessEqual(abs(first["offset_ms"]), SYNC_MAX_MS, first)
        self.assertLessEqual(s["max_abs_ms"], SYNC_MAX_MS, result["reasons"])
        # Drift (issue 12: 5 ms/hour), as far as this run resolves it (avsync: 3 standard errors).
        self.assertEqual([x for x in result["reasons"] if x.startswith("drift")], [], s)
        for st in result["streams"]:
            self.assertEqual(st["non_increasing"], 0, st)
            self.assertEqual(st["negative"], 0, st)
            if st["kind"] == "audio":
                self.assertEqual(st["gaps"], 0, st)

        # Wall-clock continuity: the video continues through the pause at the frame rate (the
        # last picture before it repeated), so media time advances by the pause with no hole.
        vt = video_times(rec)
        jumps = [(b - a, a) for a, b in zip(vt, vt[1:])]
        big = max(jumps)
        self.assertLessEqual(big[0], 0.1, msg=f"largest jump {big}")
        self.assertGreaterEqual(last["video_frames_repeated"], 0.95 * 30 * GAP_S, last)
        self.assertAlmostEqual(vt[-1], SECONDS, delta=0.5)

        self.assertEqual(last["late_tags_clamped"], 0, last)


if __name__ == "__main__":
    unittest.main()
