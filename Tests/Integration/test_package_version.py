"""One version string (issue 40): the VERSION file, and everything that states the number.

`broadcast --version`, `bk_version()`, `pkg-config --modversion broadcastkit` of a scripts/install
prefix, the Python package, the GStreamer element, the C header and the newest CHANGELOG release
must all say what VERSION says (the .deb's and the wheel's are checked by test_package.py and
test_package_wheel.py, which build them). On 82e7fca pkg-config said 0.0.0.
"""

from __future__ import annotations

import ctypes
import re
import subprocess
import unittest

import support
from support import REPO_ROOT, BroadcastTestCase

VERSION = (REPO_ROOT / "VERSION").read_text().strip()


class OneVersionTests(BroadcastTestCase):

    def test_version_file_is_one_semver_line(self):
        self.assertRegex((REPO_ROOT / "VERSION").read_text(), r"^\d+\.\d+\.\d+\n$")

    def test_the_binaries_say_the_version(self):
        r = subprocess.run([str(support.BROADCAST_BIN), "--version"], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(f"broadcast {VERSION} ("), r.stdout)
        lib = ctypes.CDLL(str(support.BROADCAST_BIN.parent / "libbroadcastkit.so"))
        lib.bk_version.restype = ctypes.c_char_p
        self.assertTrue(lib.bk_version().decode().startswith(f"{VERSION} ("))

    def test_every_statement_in_the_sources_agrees(self):
        stated = {
            "Sources/Engine/BroadcastCore/Support/BuildVersion.swift": r'static let number = "([^"]+)"',
            "bindings/python/pyproject.toml": r'^version = "([^"]+)"',
            "bindings/python/broadcastkit/__init__.py": r'^__version__ = "([^"]+)"',
            "gst/broadcastsink/gstbroadcastsink.c": r'^#define PACKAGE_VERSION "([^"]+)"',
            "Sources/CBroadcastKitABI/include/broadcastkit.h": r'^/\*\* "(\d+\.\d+\.\d+) \(',
            # Keep a Changelog: the first release heading after [Unreleased].
            "CHANGELOG.md": r'^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$',
        }
        for path, pattern in stated.items():
            m = re.search(pattern, (REPO_ROOT / path).read_text(), re.M)
            self.assertIsNotNone(m, f"{path}: no version found")
            self.assertEqual(m.group(1), VERSION, f"{path} states {m.group(1)}, VERSION says {VERSION}")

    def test_pkg_config_of_an_install_says_the_version_and_the_soname(self):
        prefix = self.tmp / "prefix"
        r = subprocess.run([str(REPO_ROOT / "scripts" / "install"), "--no-build", "--prefix", str(prefix)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        env = {"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig"), "PATH": "/usr/bin:/bin"}
        r = subprocess.run(["pkg-config", "--modversion", "broadcastkit"], env=env, capture_output=True, text=True,
                           timeout=10)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, VERSION), r.stderr)
        self.assertTrue((prefix / "lib" / "libbroadcastkit.so.0").is_file())
        self.assertEqual((prefix / "lib" / "libbroadcastkit.so").readlink().name, "libbroadcastkit.so.0")
        dyn = subprocess.run(["readelf", "-d", str(prefix / "lib" / "libbroadcastkit.so.0")], capture_output=True,
                             text=True).stdout
        self.assertIn("Library soname: [libbroadcastkit.so.0]", dyn)


if __name__ == "__main__":
    unittest.main()
