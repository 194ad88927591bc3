"""The xdg-desktop-portal ScreenCast path against a stand-in portal (tools/fake_portal.py) on the
private session bus of scripts/pipewire-up. The stand-in hands over a real PipeWire fd (a socket
connected to the headless daemon) and the pw-test-screen node id; everything else is real:
PipeWire, the broadcast binary and nginx-rtmp.

- grant: `broadcast --source screen --res 720p --duration 5` records frames whose counter strip
  decodes in order (tools/pw_capture_check.py), plus the app and mic tones; the restore token the
  portal returned is stored with mode 0600 under $XDG_STATE_HOME/broadcast and sent with
  SelectSources on the next run (the stand-in recognises it);
- deny (response 2) and cancel (response 1): exit 3 with the clear message, no token stored;
- --cursor hidden reaches SelectSources as cursor_mode 1; --source auto uses the portal when the
  bus offers one.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
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
FAKE_PORTAL = TOOLS_DIR / "fake_portal.py"
DENIED = "screen capture was cancelled or denied in the portal dialog"

try:
    import dbus_next  # noqa: F401
    HAVE_DBUS_NEXT = True
except ImportError:
    HAVE_DBUS_NEXT = False


@unittest.skipUnless(HAVE_DBUS_NEXT, "the stand-in portal needs dbus-next (pip install -r requirements.txt)")
class PortalTest(BroadcastTestCase):
    state: Path
    pw_env: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.state = Path(tempfile.mkdtemp(prefix="bcast-portal-"))
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

    def setUp(self) -> None:
        super().setUp()
        self.state_home = self.tmp / "state"
        self.token_file = self.state_home / "broadcast" / "portal-restore-token"
        self.portal_log = self.tmp / "portal.log"
        self.env = {**self.pw_env, "XDG_STATE_HOME": str(self.state_home)}

    def start_portal(self, mode: str) -> subprocess.Popen:
        """Runs the stand-in until the test ends; returns once it owns the portal name."""
        proc = subprocess.Popen([sys.executable, str(FAKE_PORTAL), "--mode", mode, "--log", str(self.portal_log),
                                 "--tokens", str(self.tmp / "issued-tokens")],
                                env={**os.environ, **self.pw_env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        self.addCleanup(lambda: (proc.terminate(), proc.wait(10), proc.stdout.close(), proc.stderr.close()))
        line = proc.stdout.readline()
        if not line.startswith("ready"):
            proc.terminate()
            self.fail(f"stand-in portal did not start: {line}{proc.stderr.read()}")
        return proc

    def portal_entries(self) -> list[dict]:
        if not self.portal_log.exists():
            return []
        return [json.loads(line) for line in self.portal_log.read_text().splitlines() if line.strip()]

    def broadcast_screen(self, seconds: int, extra=()):
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        r = self.run_broadcast(["--url", ingest.url, "--key", key, "--source", "screen",
                                "--app-audio", "app-sink", "--mic", "test-mic", "--res", "720p",
                                "--duration", str(seconds), *extra], env=self.env, timeout=seconds + 60)
        return r, ingest, key

    def test_grant_records_frames_and_restore_token_is_reused(self) -> None:
        self.start_portal("grant")
        r, ingest, key = self.broadcast_screen(5)
        self.assertEqual(r.returncode, 0, r.describe())
        rec = ingest.wait_recording(key)
        self.assertTrue(rec.exists(), f"no recording; ingest log:\n{ingest.error_log()[-2000:]}")
        report = pw_capture_check.analyse(str(rec), [1000.0, 660.0])
        print(f"\nportal capture: {report['video_frames']} frames, {report['counters_read']} counters "
              f"{report['first_counter']}..{report['last_counter']}, coverage {report['coverage']:.3f}, "
              f"out of order {report['out_of_order']}, tones {report['tones']}", file=sys.stderr)
        self.assertEqual(report["sizes"], ["1280x720"])
        self.assertGreater(report["video_frames"], 120)
        self.assertGreater(report["counters_read"], 100, "the counter strip did not decode")
        self.assertEqual(report["out_of_order"], 0)
        self.assertGreaterEqual(report["coverage"], 0.95, report)
        self.assertGreater(report["tones"]["1000"], 100, report["tones"])
        self.assertGreater(report["tones"]["660"], 100, report["tones"])

        log = self.portal_entries()
        calls = [e.get("call") for e in log if "call" in e]
        self.assertEqual(calls[:4], ["CreateSession", "SelectSources", "Start", "OpenPipeWireRemote"], log)
        self.assertIn("Close", calls, "the portal session was not closed at the end")
        first_select = next(e for e in log if e.get("call") == "SelectSources")["options"]
        self.assertEqual(first_select["types"], 1)
        self.assertEqual(first_select["cursor_mode"], 2)  # --cursor embedded is the default
        self.assertEqual(first_select["persist_mode"], 2)
        self.assertNotIn("restore_token", first_select)
        issued = next(e for e in log if e.get("event") == "granted")["restore_token"]

        # Stored, private, and the exact token the portal returned.
        self.assertTrue(self.token_file.exists(), f"no restore token at {self.token_file}")
        self.assertEqual(stat.S_IMODE(self.token_file.stat().st_mode), 0o600)
        self.assertEqual(self.token_file.read_text().strip(), issued)
        self.assertNotIn(issued, r.stderr + r.stdout, "the restore token must not be printed")

        # Second run: the token goes out with SelectSources and the portal recognises it.
        r2, _, _ = self.broadcast_screen(2)
        self.assertEqual(r2.returncode, 0, r2.describe())
        selects = [e for e in self.portal_entries() if e.get("call") == "SelectSources"]
        self.assertEqual(len(selects), 2)
        self.assertEqual(selects[1]["options"].get("restore_token"), issued)
        self.assertTrue(selects[1]["restore_token_known"])
        self.assertEqual(stat.S_IMODE(self.token_file.stat().st_mode), 0o600)

    def test_deny_exits_3_with_clear_message(self) -> None:
        self.start_portal("deny")
        r = self.run_broadcast(["--source", "screen", "--no-publish", "--record", str(self.tmp / "x.flv"),
                                "--res", "720p", "--duration", "5"], env=self.env, timeout=60)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn(DENIED, r.stderr)
        self.assertFalse(self.token_file.exists())
        self.assertIn("Start", [e.get("call") for e in self.portal_entries()])

    def test_cancel_exits_3(self) -> None:
        self.start_portal("cancel")
        r = self.run_broadcast(["--source", "screen", "--no-publish", "--record", str(self.tmp / "x.flv"),
                                "--res", "720p", "--duration", "5"], env=self.env, timeout=60)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn(DENIED, r.stderr)
        self.assertFalse(self.token_file.exists())

    def test_cursor_hidden_and_auto_use_the_portal(self) -> None:
        self.start_portal("grant")
        out = self.tmp / "auto.flv"
        r = self.run_broadcast(["--no-publish", "--record", str(out), "--cursor", "hidden", "--no-app-audio",
                                "--no-mic", "--res", "720p", "--duration", "2"], env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        select = next(e for e in self.portal_entries() if e.get("call") == "SelectSources")["options"]
        self.assertEqual(select["cursor_mode"], 1)
        report = pw_capture_check.analyse(str(out), [])
        self.assertGreater(report["counters_read"], 30, "--source auto did not record the portal's screen")
        self.assertEqual(report["out_of_order"], 0)


if __name__ == "__main__":
    unittest.main()
