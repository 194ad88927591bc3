"""The manylinux wheel on a clean Debian 12 (issue 40).

scripts/wheel builds the binding's wheel and runs `auditwheel repair`, which bundles x264, Opus,
vo-aacenc and libyuv (and libyuv's libjpeg) into broadcastkit.libs/. In a `debootstrap
--variant=minbase bookworm` root with only python3-venv installed (none of those libraries, no
Swift, no compiler): a fresh venv, `pip install --no-index` of the wheel from a local file (numpy,
its one dependency, downloaded beforehand by the host's pip), `import broadcastkit`, and 5 s of the
binding's example stream to an nginx-rtmp on the host's loopback; PyAV decodes the recording on
the host. On 82e7fca the wheel was tagged linux_x86_64 and NEEDed Debian's libx264.so.164.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import unittest
import zipfile
from pathlib import Path

import support
from support import REPO_ROOT, BroadcastTestCase, new_key, start_ingest
from test_package_root import CleanRoot

VERSION = (REPO_ROOT / "VERSION").read_text().strip()
EXAMPLE = REPO_ROOT / "bindings" / "python" / "examples" / "stream.py"
BUNDLED = ("libx264", "libopus", "libvo-aacenc", "libyuv")


class WheelTests(BroadcastTestCase):

    def build_wheel(self) -> Path:
        r = subprocess.run([str(REPO_ROOT / "scripts" / "wheel"), "--out", str(self.tmp / "dist")],
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(r.returncode, 0, f"scripts/wheel failed:\n{r.stderr[-4000:]}")
        wheel = Path(r.stdout.strip().splitlines()[-1])
        self.assertRegex(wheel.name, rf"^broadcastkit-{re.escape(VERSION)}-py3-none-manylinux_2_\d+_x86_64\.whl$")
        return wheel

    def test_wheel_is_manylinux_and_bundles_the_codecs(self):
        wheel = self.build_wheel()
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
        libs = [n for n in names if n.startswith("broadcastkit.libs/")]
        for lib in BUNDLED:
            self.assertTrue(any(Path(n).name.startswith(lib + "-") for n in libs), f"{lib} not bundled: {libs}")
        self.assertIn("broadcastkit/lib/libbroadcastkit.so", names)
        # auditwheel's own verdict on the repaired wheel: the tag in its name is one it meets.
        tag = re.search(r"-(manylinux_2_\d+_x86_64)\.whl$", wheel.name).group(1)
        r = subprocess.run([str(REPO_ROOT / ".build" / "wheel-tools" / "bin" / "auditwheel"), "show", str(wheel)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f'"{tag}"', " ".join(r.stdout.split()))
        self.assertLess(wheel.stat().st_size, 15 * 1024 * 1024)

    def test_pip_install_in_a_clean_root_imports_and_streams(self):
        wheel = self.build_wheel()
        root = CleanRoot(support.worker_tag())
        self.addCleanup(root.close)
        r = root.apt_install("python3-venv")
        self.assertEqual(r.returncode, 0, f"apt-get install python3-venv failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        # The root has none of the libraries the wheel must bring, and no Swift.
        r = root.run(["sh", "-c", "command -v swift cc gcc; ls /usr/lib/x86_64-linux-gnu /usr/lib | "
                      "grep -E 'libx264|libopus|libvo-aacenc|libyuv|libswift'"])
        self.assertEqual(r.stdout.strip(), "", "the clean root already holds what the wheel must bring")
        shutil.copy(wheel, root.path / "tmp")
        shutil.copy(EXAMPLE, root.path / "tmp" / "stream.py")
        root.run(["python3", "-m", "venv", "/opt/venv"], timeout=300, check=True)
        # numpy, the wheel's one dependency, is fetched by the host's pip (its index, proxy and CA settings
        # are the host's) for the root's Python, so the install in the root needs no network.
        pyver = root.run(["python3", "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                         check=True).stdout.strip()
        deps = root.path / "tmp" / "deps"
        r = subprocess.run([support.sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps",
                            "--python-version", pyver, "--platform", "manylinux2014_x86_64", "-d", str(deps), "numpy"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, f"pip download numpy on the host failed:\n{r.stderr[-3000:]}")
        r = root.run(["/opt/venv/bin/pip", "install", "-q", "--no-index", "--find-links", "/tmp/deps",
                      f"/tmp/{wheel.name}"], timeout=900)
        self.assertEqual(r.returncode, 0, f"pip install failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        r = root.run(["/opt/venv/bin/python", "-c",
                      "import broadcastkit as bk, json; "
                      "print(json.dumps({'version': bk.__version__, 'lib': bk.library().path, 'abi': bk.version()}))"],
                     timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        self.assertEqual(info["version"], VERSION)
        self.assertTrue(info["abi"].startswith(f"{VERSION} ("), info)
        self.assertRegex(info["lib"], r"^/opt/venv/lib/python3\.\d+/site-packages/broadcastkit/lib/libbroadcastkit\.so$")

        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        r = root.run(["/opt/venv/bin/python", "/tmp/stream.py", ingest.url, "--seconds", "5"],
                     env={"STREAM_KEY": key}, timeout=120)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, support.redact(r.stderr[-3000:]))
        out = json.loads(r.stdout.strip().splitlines()[-1])
        stats = out["stats"]
        self.assertEqual(out["produced"], 150)
        self.assertGreater(stats["video_frames_in"], 30, out)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertRecordingOK(rec, expect_frames=stats["video_frames_sent"], tolerance=3, expect_width=1280,
                               expect_height=720, expect_audio_codec="aac", expect_audio_seconds=5.0,
                               audio_tolerance_pct=4.0)


if __name__ == "__main__":
    unittest.main()
