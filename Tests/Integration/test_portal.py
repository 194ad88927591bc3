"""What the real xdg-desktop-portal cannot be made to do on demand, against a stand-in portal
(tools/fake_portal.py) on the private session bus of scripts/pipewire-up (a bus that activates
nothing, so an installed portal never answers in the stand-in's place): the user denying (response 2)
or cancelling (response 1) the dialog. Both exit 3 with the clear message and store no token.

Everything the real portal can do (the grant, frames, the restore token stored 0600 and reused,
--cursor, --source auto, a cast closed mid-stream) is in test_real_portal.py, against the real
portal on a headless GNOME desktop (scripts/desktop-up). docs/TEST-DEBTS.md lists the stand-in.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import REPO_ROOT, TOOLS_DIR, BroadcastTestCase  # noqa: E402

PIPEWIRE_UP = REPO_ROOT / "scripts" / "pipewire-up"
PIPEWIRE_DOWN = REPO_ROOT / "scripts" / "pipewire-down"
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
        # No screen producer: a refused dialog never gets as far as a node.
        r = subprocess.run([str(PIPEWIRE_UP), "--state", str(cls.state), "--no-screen"], capture_output=True,
                           text=True, timeout=600)
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
        proc = subprocess.Popen([sys.executable, str(FAKE_PORTAL), "--mode", mode, "--log", str(self.portal_log)],
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

    def test_bus_activates_no_installed_portal(self) -> None:
        # Issue 21 defect 4: with the standard service dirs, this call D-Bus-activated an
        # installed xdg-desktop-portal, which then owned the name in the stand-in's place.
        r = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.portal.Desktop",
                            "/org/freedesktop/portal/desktop", "org.freedesktop.DBus.Properties.Get",
                            "string:org.freedesktop.portal.ScreenCast", "string:version"],
                           env={**os.environ, **self.pw_env}, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0, f"a portal answered on the stand-in's bus: {r.stdout}")
        self.assertIn("org.freedesktop.DBus.Error.ServiceUnknown", r.stderr)

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


if __name__ == "__main__":
    unittest.main()
