"""Out of threads: every pthread_create the engine makes is checked (issue 25, "thread start").

The real `broadcast` binary records 2 s of the test source inside a cgroup v1 `pids` group whose
`pids.max` allows 1, 2, ... tasks until a run gets through, so each of its thread starts fails in
turn (x264's own threads, the destination's sender, the lanes, the housekeeper, the test source's
lanes). Every refused run exits 2/3/4 with one line, and each of the engine's threads is named by
the run it failed (before the fix the failure went unnoticed and a later start was blamed); the
first run that gets through records every frame on both tracks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import support
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase
from support import exclusive  # noqa: E402

PIDS_ROOT = Path("/sys/fs/cgroup/pids")
SECONDS = 2
FPS = 30


def pids_cgroup_usable() -> bool:
    return PIDS_ROOT.is_dir() and os.access(PIDS_ROOT, os.W_OK)


@exclusive("runs under every pids limit from 1 to 64 threads")
class ThreadLimitTests(BroadcastTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(pids_cgroup_usable(), f"{PIDS_ROOT} (cgroup v1 pids controller) is not writable here")
        self.group = Path(tempfile.mkdtemp(prefix="bk-threads-", dir=PIDS_ROOT))
        self.addCleanup(self.group.rmdir)

    def run_limited(self, limit: int, out: Path, stats: Path) -> subprocess.CompletedProcess:
        (self.group / "pids.max").write_text(str(limit))
        procs = str(self.group / "cgroup.procs")

        def enter_group():  # in the child, before exec: the run starts inside the limit
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        return subprocess.run([str(BROADCAST_BIN), "--no-publish", "--record", str(out), "--source", "test",
                               "--res", "360p", "--duration", str(SECONDS), "--stats-json", str(stats), "--quiet"],
                              env=support.clean_env(), cwd=REPO_ROOT, preexec_fn=enter_group,
                              capture_output=True, text=True, timeout=60)

    def test_every_thread_start_is_checked(self):
        named: set[str] = set()
        succeeded_at = None
        for limit in range(1, 65):
            out, stats = self.tmp / f"out-{limit}.flv", self.tmp / f"stats-{limit}.jsonl"
            p = self.run_limited(limit, out, stats)
            self._captured_texts += [p.stdout, p.stderr]
            if p.returncode == 0:
                succeeded_at = limit
                # The first limit that lets the run through gives a whole recording: every lane ran.
                last = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()][-1]
                # Every frame the source made reached the video lane or was a counted drop (a
                # loaded machine may drop some as encoder_busy), and what was encoded was sent.
                arrived = last["video_frames_in"] + last["drops"]["encoder_busy"]
                self.assertGreaterEqual(arrived, SECONDS * FPS - 3, last)
                self.assertGreater(last["video_frames_sent"], 0, last)
                self.assertEqual(last["video_frames_sent"],
                                 last["video_frames_encoded"] + last.get("video_frames_repeated", 0), last)
                self.assertGreater(last["audio_frames_sent"], SECONDS * 40, last)
                self.assertRecordingOK(out, expect_video_codec="h264", expect_audio_codec="aac",
                                       expect_audio_seconds=float(SECONDS))
                break
            # Refused: a usage, connect or streaming exit with one line, never a signal or a hang.
            self.assertIn(p.returncode, (2, 3, 4), f"limit {limit}: exit {p.returncode}\n{p.stderr}")
            lines = [x for x in p.stderr.splitlines() if x.strip()]
            self.assertEqual(len(lines), 1, f"limit {limit}: not one line:\n{p.stderr}")
            m = re.search(r"cannot start thread ([\w-]+)", lines[0])
            if m:
                named.add(m.group(1))
        self.assertIsNotNone(succeeded_at, "no limit up to 64 tasks let a run through")
        # Each of the engine's own threads was the one refused at some limit, and its failure
        # was the one reported (unchecked, a refused lane or sender goes unnoticed until a
        # later start fails and names another thread).
        engine = {"bk-video", "bk-app-audio", "bk-mic-audio", "bk-housekeep"}
        self.assertTrue(engine <= named and named & {"bk-send", "bk-record"},
                        f"threads named by the refused runs: {sorted(named)}; expected {sorted(engine)} and the sender")
        print(f"\nthread limits: refused below {succeeded_at} tasks, naming {sorted(named)}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
