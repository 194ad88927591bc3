"""Out of threads: every pthread_create the engine makes is checked (issue 25, "thread start").

The real `broadcast` binary records 2 s of the test source inside a cgroup v1 `pids` group whose
`pids.max` allows 1, 2, ... tasks up to what a whole run needs, so each of its thread starts
fails in turn (the x264 pool, the destination's sender, the lanes, the housekeeper, the test
source's lanes). For every limit the run either exits 0 with a complete recording (every frame
and both tracks there) or fails with a non-zero exit and a one-line reason naming the thread;
it never hangs, crashes or exits 0 with a lane that never ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import support
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase

PIDS_ROOT = Path("/sys/fs/cgroup/pids")
SECONDS = 2
FPS = 30


def pids_cgroup_usable() -> bool:
    return PIDS_ROOT.is_dir() and os.access(PIDS_ROOT, os.W_OK)


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
        # How many tasks a whole run uses: the limit above which nothing can fail.
        out, stats = self.tmp / "free.flv", self.tmp / "free.jsonl"
        p = self.run_limited(10_000, out, stats)
        self.assertEqual(p.returncode, 0, p.stderr)
        needed = self.tasks_of_a_run()
        self.assertGreater(needed, 4, "a run starts at least the main, sender, video, audio and housekeeping threads")
        failures = 0
        for limit in range(1, needed + 1):
            out, stats = self.tmp / f"out-{limit}.flv", self.tmp / f"stats-{limit}.jsonl"
            with self.subTest(limit=limit):
                p = self.run_limited(limit, out, stats)
                self._captured_texts += [p.stdout, p.stderr]
                if p.returncode == 0:
                    # A run that says it succeeded holds every frame on both tracks.
                    last = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()][-1]
                    self.assertGreater(last["video_frames_sent"], 0, f"limit {limit}: exit 0 but no video sent: {last}")
                    self.assertGreater(last["audio_frames_sent"], 0, f"limit {limit}: exit 0 but no audio sent: {last}")
                    report = self.assertRecordingOK(out, expect_video_codec="h264", expect_audio_codec="aac")
                    self.assertIsNotNone(report)
                else:
                    failures += 1
                    self.assertGreater(p.returncode, 0, f"limit {limit}: killed by a signal\n{p.stderr}")
                    lines = [x for x in p.stderr.splitlines() if x.strip()]
                    self.assertTrue(lines, f"limit {limit}: exit {p.returncode} with no reason")
                    self.assertTrue(any("thread" in x or "Resource temporarily unavailable" in x for x in lines),
                                    f"limit {limit}: the reason does not name the thread:\n{p.stderr}")
        self.assertGreater(failures, 0, "no limit made a thread start fail: the test proved nothing")

    def tasks_of_a_run(self) -> int:
        """The most tasks one unlimited run had at once, sampled from /proc while it streams."""
        out, stats = self.tmp / "count.flv", self.tmp / "count.jsonl"
        (self.group / "pids.max").write_text("max")
        procs = str(self.group / "cgroup.procs")

        def enter_group():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        proc = subprocess.Popen([str(BROADCAST_BIN), "--no-publish", "--record", str(out), "--source", "test",
                                 "--res", "360p", "--duration", str(SECONDS), "--quiet"],
                                env=support.clean_env(), cwd=REPO_ROOT, preexec_fn=enter_group,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        most = 0
        try:
            while proc.poll() is None:
                try:
                    most = max(most, len(os.listdir(f"/proc/{proc.pid}/task")))
                except FileNotFoundError:
                    break
                time.sleep(0.02)
        finally:
            proc.wait(timeout=60)
        return most


if __name__ == "__main__":
    unittest.main()
