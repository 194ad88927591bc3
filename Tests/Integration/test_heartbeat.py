"""--heartbeat and --check-heartbeat: a liveness probe for an image with no shell.

A live stream bumps the heartbeat file once a second and `broadcast --check-heartbeat` says 0;
the same process frozen with SIGSTOP stops bumping it and the check says 1 with one line once
the file is older than --max-age; the file stays one line; a missing file is 1; an unwritable
--heartbeat path is refused before connecting (2).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from support import BROADCAST_BIN, BroadcastTestCase, clean_env, new_key, start_ingest
from support import exclusive  # noqa: E402


@exclusive("the heartbeat file's age against fixed waits")
class HeartbeatTest(BroadcastTestCase):
    def check(self, path: Path, max_age: float) -> subprocess.CompletedProcess:
        r = subprocess.run([str(BROADCAST_BIN), "--check-heartbeat", str(path), "--max-age", str(max_age)],
                           capture_output=True, text=True, timeout=30)
        self._captured_texts += [r.stdout, r.stderr]
        return r

    def test_live_then_frozen(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        beat = self.track_file(self.tmp / "heartbeat")
        proc = subprocess.Popen([str(BROADCAST_BIN), "--url", ingest.url, "--source", "test", "--res", "360p",
                                 "--duration", "60", "--heartbeat", str(beat), "--quiet"],
                                env=clean_env({"STREAM_KEY": key}), stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def stop() -> None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            out, err = proc.communicate(timeout=30)
            self._captured_texts += [out.decode(errors="replace"), err.decode(errors="replace")]
        self.addCleanup(stop)

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (beat.exists() and beat.stat().st_size > 0):
            time.sleep(0.2)
        self.assertTrue(beat.exists() and beat.stat().st_size > 0, "no heartbeat written")
        first = beat.stat().st_mtime
        time.sleep(2.5)
        self.assertGreater(beat.stat().st_mtime, first, "the heartbeat did not move while live")
        self.assertEqual(len(beat.read_text().splitlines()), 1, "the heartbeat file must stay one line")
        live = self.check(beat, 5)
        self.assertEqual((live.returncode, live.stderr), (0, ""), live.stderr)

        proc.send_signal(signal.SIGSTOP)   # a hung process: alive, but no progress
        time.sleep(4)
        frozen = self.check(beat, 3)
        self.assertEqual(frozen.returncode, 1, frozen.stderr)
        lines = [l for l in frozen.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, frozen.stderr)
        self.assertIn("is not making progress", lines[0])
        proc.send_signal(signal.SIGCONT)
        time.sleep(2.5)
        again = self.check(beat, 2)
        self.assertEqual(again.returncode, 0, again.stderr)

    def test_missing_file_and_bad_path(self):
        missing = self.check(self.tmp / "no-such-heartbeat", 10)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no-such-heartbeat", missing.stderr)
        r = self.run_broadcast(["--source", "test", "--no-publish", "--record", str(self.tmp / "x.flv"),
                                "--duration", "2", "--heartbeat", "/proc/no/such/dir/heartbeat"])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertIn("--heartbeat /proc/no/such/dir/heartbeat", r.stderr)
