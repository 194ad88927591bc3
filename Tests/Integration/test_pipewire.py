"""PipeWire capture against a real, headless PipeWire (scripts/pipewire-up): no mocks.

- capture: `broadcast --source screen-node --screen-node pw-test-screen --res 720p --duration 10`
  into a real nginx-rtmp; the recording (decoded by PyAV in tools/pw_capture_check.py) must hold
  >= 95% of the frames the producer made, counters in order, and the 1 kHz (app-sink) and
  660 Hz (virtual mic) tones;
- resize: the producer goes 1280x720 -> 1920x1080 -> 800x600 mid-run; the output stays 1280x720
  and the centred square stays square (no distortion);
- errors: no daemon (exit 2, says what is missing and how to fix it), a missing node (exit 2,
  lists the nodes that exist), --list-sources.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import REPO_ROOT, TOOLS_DIR, BroadcastTestCase, new_key, start_ingest  # noqa: E402

if str(TOOLS_DIR) not in sys.path:
    sys.path.insert(0, str(TOOLS_DIR))
import pw_capture_check  # noqa: E402

PIPEWIRE_UP = REPO_ROOT / "scripts" / "pipewire-up"
PIPEWIRE_DOWN = REPO_ROOT / "scripts" / "pipewire-down"
PRODUCER = Path(os.environ.get("PW_TEST_SCREEN", REPO_ROOT / ".build" / "release" / "pw-test-screen"))


def read_produced(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


class PipeWireCaptureTest(BroadcastTestCase):
    state: Path
    pw_env: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.state = Path(tempfile.mkdtemp(prefix="bcast-pipewire-"))
        r = subprocess.run([str(PIPEWIRE_UP), "--state", str(cls.state)], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "PW_TEST_SCREEN": str(PRODUCER)})
        if r.returncode != 0:
            subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False)
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

    def capture(self, node: str, seconds: int = 10):
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        r = self.run_broadcast(["--url", ingest.url, "--key", key, "--source", "screen-node",
                                "--screen-node", node, "--app-audio", "app-sink", "--mic", "test-mic",
                                "--res", "720p", "--duration", str(seconds)],
                               env=self.pw_env, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        rec = ingest.wait_recording(key)
        self.assertTrue(rec.exists(), f"no recording; ingest log:\n{ingest.error_log()[-2000:]}")
        return pw_capture_check.analyse(str(rec), [1000.0, 660.0]), r

    def test_capture_screen_node_into_nginx(self) -> None:
        frames_file = self.state / "frames"
        before = read_produced(frames_file)
        report, _ = self.capture("pw-test-screen")
        time.sleep(1.5)  # the producer writes its count every second
        produced = read_produced(frames_file) - before
        print(f"\npipewire capture: produced {produced}, recorded {report['video_frames']} frames, "
              f"{report['counters_read']} counters {report['first_counter']}..{report['last_counter']}, "
              f"coverage {report['coverage']:.3f}, out of order {report['out_of_order']}, "
              f"repeats {report['repeats']}, tones {report['tones']}", file=sys.stderr)
        self.assertEqual(report["sizes"], ["1280x720"])
        self.assertGreater(produced, 250, "the producer made too few frames in 10 s")
        self.assertEqual(report["out_of_order"], 0)
        self.assertGreaterEqual(report["coverage"], 0.95, report)
        distinct = len(set(range(report["first_counter"], report["last_counter"] + 1))) * report["coverage"]
        self.assertGreaterEqual(distinct / produced, 0.95, f"{distinct:.0f} of {produced} produced frames")
        self.assertGreater(report["audio_seconds"], 9.0)
        self.assertGreater(report["tones"]["1000"], 100, f"1 kHz app tone missing: {report['tones']}")
        self.assertGreater(report["tones"]["660"], 100, f"660 Hz mic tone missing: {report['tones']}")

    def test_resize_keeps_output_size_without_distortion(self) -> None:
        name = f"pw-test-screen-resize-{os.getpid()}"
        log = self.tmp / "producer.log"
        env = {**os.environ, **self.pw_env}
        with open(log, "w") as out:
            producer = subprocess.Popen([str(PRODUCER), "--name", name, "--resize-at", "3:1920x1080,6:800x600"],
                                        env=env, stdout=out, stderr=out)
        self.addCleanup(producer.wait, 10)
        self.addCleanup(producer.terminate)
        for _ in range(50):
            ls = subprocess.run(["pw-cli", "ls", "Node"], env=env, capture_output=True, text=True).stdout
            if f'node.name = "{name}"' in ls:
                break
            time.sleep(0.1)
        report, _ = self.capture(name, seconds=10)
        print(f"\npipewire resize: sizes {report['sizes']}, phases {report['phases']}, "
              f"square aspect {report['square_aspect_by_phase']}, frames {report['video_frames']}",
              file=sys.stderr)
        self.assertIn("resizing to 800x600", log.read_text(), log.read_text())
        self.assertEqual(report["sizes"], ["1280x720"])
        self.assertEqual(report["phases"], [0, 1, 2], "all three producer sizes must reach the output")
        self.assertEqual(report["out_of_order"], 0)
        self.assertGreater(report["video_frames"], 250)
        for phase, aspect in report["square_aspect_by_phase"].items():
            self.assertAlmostEqual(aspect, 1.0, delta=0.08, msg=f"phase {phase} distorted: square aspect {aspect}")

    def test_missing_node_lists_the_ones_that_exist(self) -> None:
        r = self.run_broadcast(["--source", "screen-node", "--screen-node", "no-such-screen", "--no-publish",
                                "--record", str(self.tmp / "x.flv"), "--duration", "2"], env=self.pw_env)
        self.assertEqual(r.returncode, 2, r.describe())
        err = r.stderr
        self.assertIn("no-such-screen", err)
        self.assertIn("pw-test-screen (id ", err)

    def test_list_sources(self) -> None:
        r = self.run_broadcast(["--list-sources"], env=self.pw_env)
        self.assertEqual(r.returncode, 0, r.describe())
        for name in ("pw-test-screen", "app-sink", "test-mic", "Video sources", "Audio sources"):
            self.assertIn(name, r.stdout)


class PipeWireNoDaemonTest(BroadcastTestCase):
    def test_no_daemon_says_what_is_missing(self) -> None:
        empty = self.tmp / "run"
        empty.mkdir(mode=0o700)
        env = {"XDG_RUNTIME_DIR": str(empty), "PIPEWIRE_RUNTIME_DIR": str(empty)}
        r = self.run_broadcast(["--source", "screen-node", "--screen-node", "pw-test-screen", "--no-publish",
                                "--record", str(self.tmp / "x.flv"), "--duration", "2"], env=env)
        self.assertEqual(r.returncode, 2, r.describe())
        lines = r.stderr_lines()
        self.assertTrue(any(line.startswith("broadcast: ") and "no PipeWire daemon" in line for line in lines),
                        r.describe())
        self.assertIn(str(empty), r.stderr)
        self.assertIn("start pipewire", r.stderr)
        r2 = self.run_broadcast(["--list-sources"], env=env)
        self.assertEqual(r2.returncode, 2, r2.describe())
        self.assertIn("no PipeWire daemon", r2.stderr)


if __name__ == "__main__":
    unittest.main()
