"""The verification tooling itself, with ffmpeg (not our code) as the publisher: the ingest
fixture records what is pushed, and probe_recording accepts a good file and rejects bad ones."""

import ctypes
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import support
from support import probe_recording


@unittest.skipUnless(shutil.which("ffmpeg"), "ffmpeg not installed")
class ToolingTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ingest = support.start_ingest()
        cls.key = support.new_key("sk_tool_")
        # 3 s of 640x360@30 + 440 Hz, paced in real time like a live publisher.
        r = subprocess.run(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-re",
             "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
             "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000", "-t", "3",
             "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac",
             "-f", "flv", f"{cls.ingest.url}/{cls.key}"],
            capture_output=True, text=True, timeout=60)
        cls.publish_rc, cls.publish_err = r.returncode, r.stderr
        cls.recording = cls.ingest.wait_recording(cls.key)

    @classmethod
    def tearDownClass(cls):
        cls.ingest.cleanup()

    def test_ingest_records_publish(self):
        self.assertEqual(self.publish_rc, 0, self.publish_err)
        self.assertTrue(self.recording.exists(), f"nothing recorded in {self.ingest.rec_dir}")

    def test_probe_accepts_good_recording(self):
        report, failures = probe_recording.verify(
            str(self.recording), expect_frames=90, tolerance=3, expect_width=640, expect_height=360,
            expect_audio_codec="aac", expect_video_codec="h264", expect_audio_seconds=3.0,
            audio_tolerance_pct=5)
        self.assertEqual(failures, [], probe_recording.format_text(report))
        self.assertEqual(report.decode_errors, 0)
        self.assertEqual(report.non_increasing_timestamps, 0)

    def test_probe_rejects_wrong_expectations(self):
        _, failures = probe_recording.verify(str(self.recording), expect_frames=300,
                                             expect_audio_codec="opus", expect_width=1280)
        self.assertEqual(len(failures), 3, failures)

    def test_probe_detects_corruption(self):
        data = bytearray(self.recording.read_bytes())
        for off in range(len(data) // 4, len(data), len(data) // 4):
            data[off:off + 1500] = bytes(1500)
        bad = Path(self.ingest.dir) / "corrupt.flv"
        bad.write_bytes(bytes(data))
        report, failures = probe_recording.verify(str(bad))
        self.assertNotEqual(failures, [], probe_recording.format_text(report))

    def test_probe_rejects_non_flv(self):
        junk = Path(self.ingest.dir) / "junk.flv"
        junk.write_bytes(b"not an flv file " * 64)
        _, failures = probe_recording.verify(str(junk))
        self.assertNotEqual(failures, [])

    def test_ingest_refuses_taken_port(self):
        r = subprocess.run([str(support.INGEST_SCRIPT), "start", "--port", str(self.ingest.port),
                            "--dir", str(self.ingest.dir / "other")],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already taken", r.stderr)

    def test_key_leak_check_catches_leak(self):
        self.assertNotEqual(support.find_key_leaks(texts=[f"url=rtmp://x/live/{self.key}"]), [])
        self.assertEqual(support.find_key_leaks(texts=["nothing secret here"]), [])


class CIMachineryTests(unittest.TestCase):
    """The checks scripts/test relies on, each against an input that must fail it (issue 25)."""

    REPO = support.REPO_ROOT

    def test_version_is_stated_once(self):
        # BuildVersion.swift is the one place; every other statement of the number must match it.
        r = subprocess.run([str(support.BROADCAST_BIN), "--version"], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        number = re.search(r"broadcast (\d+\.\d+\.\d+) \(", r.stdout).group(1)
        swift = (self.REPO / "Sources/Engine/BroadcastCore/Support/BuildVersion.swift").read_text()
        self.assertIn(f'number = "{number}"', swift)
        lib = ctypes.CDLL(str(support.BROADCAST_BIN.parent / "libbroadcastkit.so"))
        lib.bk_version.restype = ctypes.c_char_p
        self.assertEqual(lib.bk_version().decode(), r.stdout.strip().removeprefix("broadcast "))
        stated = {
            "bindings/python/pyproject.toml": r'^version = "([^"]+)"',
            "bindings/python/broadcastkit/__init__.py": r'^__version__ = "([^"]+)"',
            "gst/broadcastsink/gstbroadcastsink.c": r'^#define PACKAGE_VERSION "([^"]+)"',
            "Sources/CBroadcastKitABI/include/broadcastkit.h": r'^/\*\* "(\d+\.\d+\.\d+) \(',
        }
        for path, pattern in stated.items():
            m = re.search(pattern, (self.REPO / path).read_text(), re.M)
            self.assertIsNotNone(m, f"{path}: no version found")
            self.assertEqual(m.group(1), number, f"{path} states {m.group(1)}, BuildVersion says {number}")

    def test_key_scan_covers_every_key_the_suites_use(self):
        script = (self.REPO / "scripts/test").read_text()
        pattern = re.compile(re.search(r"^KEY_LEAK_PATTERN='([^']+)'", script, re.M).group(1))
        texts = "".join(p.read_text() for p in (self.REPO / "Tests/Integration").glob("*.py"))
        prefixes = set(re.findall(r'new_key\("([^"]+)"\)', texts)) | {"sk_live_"}
        self.assertIn("sk_tool_", prefixes)
        for prefix in prefixes:
            key = prefix + "0123456789abcdef01234567"
            self.assertTrue(pattern.search(f"x {key} y"), f"scripts/test's key scan misses {prefix} keys")
        # Literal keys built in the tests ("sk_live_" + 16 hex digits and more).
        for literal in re.findall(r'"(sk_[a-z]+_)" \+ "([0-9a-f]+)" \* (\d+)', texts):
            key = literal[0] + literal[1] * int(literal[2])
            self.assertTrue(pattern.search(key), f"scripts/test's key scan misses the literal key {key[:12]}...")
        self.assertIsNone(pattern.search("sk_live_**** and a keyframe"), "the scan must not fire on a redacted key")

    def test_results_count_from_the_event_stream(self):
        events = [
            {"kind": "test", "payload": {"id": "S", "kind": "suite", "name": "S"}},
            {"kind": "test", "payload": {"id": "S/a()", "kind": "function", "name": "a()"}},
            {"kind": "test", "payload": {"id": "S/b()", "kind": "function", "name": "b()"}},
            {"kind": "test", "payload": {"id": "S/c()", "kind": "function", "name": "c()"}},
            {"kind": "test", "payload": {"id": "S/d()", "kind": "function", "name": "d()"}},
            {"kind": "event", "payload": {"kind": "runStarted"}},
            {"kind": "event", "payload": {"kind": "testStarted", "testID": "S"}},
            {"kind": "event", "payload": {"kind": "testStarted", "testID": "S/a()"}},
            {"kind": "event", "payload": {"kind": "testEnded", "testID": "S/a()"}},
            {"kind": "event", "payload": {"kind": "testStarted", "testID": "S/b()"}},
            {"kind": "event", "payload": {"kind": "issueRecorded", "testID": "S/b()", "issue": {"isKnown": False},
                                          "messages": [{"text": "Expectation failed:\n 1 == 2"}]}},
            {"kind": "event", "payload": {"kind": "testEnded", "testID": "S/b()"}},
            {"kind": "event", "payload": {"kind": "testSkipped", "testID": "S/c()",
                                          "messages": [{"text": "needs tools/allocshim preloaded"}]}},
            {"kind": "event", "payload": {"kind": "testStarted", "testID": "S/d()"}},   # hung: never ends
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "events.jsonl"
            path.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"kind": "ev')  # cut short
            skips, failed = Path(tmp) / "skips", Path(tmp) / "failed"
            r = subprocess.run(["python3", str(self.REPO / "scripts/lib/test_results.py"), "swift", str(path),
                                "--skips", str(skips), "--failed", str(failed), "--running"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["1", "2", "1"], "a passed; b failed, d never ended; c skipped")
            self.assertIn("still running when stopped: d()", r.stderr)
            # Each failed test's line says why, on one line (CI logs show only the tail).
            self.assertEqual(failed.read_text().splitlines(),
                             ["b() (S/b()) after 0.0 s: Expectation failed: 1 == 2", "d() (S/d()) (did not end)"])
            # The skip goes through the allow-list: allowed under a sanitizer only.
            for scope, rc in (("sanitize", 0), ("plain", 1)):
                c = subprocess.run(["bash", "-c", f'REPO_ROOT="{self.REPO}"; source "$REPO_ROOT/scripts/lib/skips.sh"; '
                                    f'check_skips t "{skips}" {scope}'], capture_output=True, text=True, timeout=30)
                self.assertEqual(c.returncode, rc, f"{scope}: {c.stdout}")
            # Fewer tests than the committed minimum fail the count.
            r = subprocess.run(["python3", str(self.REPO / "scripts/lib/test_results.py"), "swift", str(path),
                                "--minimum", "unit"], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("fewer than the committed minimum", r.stderr)

    def test_time_limit_lint_finds_an_unlimited_test(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "A.swift").write_text(
                "@Suite(.timeLimit(.minutes(1))) struct Limited {\n    @Test func ok() {}\n}\n"
                "struct Unlimited {\n    @Test func hangs() {}\n}\n"
                "@Test(.timeLimit(.minutes(1))) func free() {}\n@Test func freeHangs() {}\n")
            r = subprocess.run(["python3", str(self.REPO / "scripts/lib/time_limits.py"), tmp],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(len(r.stdout.splitlines()), 2, r.stdout)
            self.assertIn("hangs()", r.stdout)
            self.assertIn("freeHangs()", r.stdout)

    def test_layers_check_fails_on_a_dependency_up_the_layers(self):
        """tools/layers.py --check (a scripts/test step) passes the package and fails a target that
        depends on a higher layer or a sibling destination, a missing engine target, and a source
        file that imports an engine module its target does not depend on."""
        tool = str(self.REPO / "tools/layers.py")
        r = subprocess.run(["python3", tool, "--check"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines()[-1], "0 layer violations")
        env = {k: v for k, v in os.environ.items() if k != "BK_UNITY"}
        manifest = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=self.REPO, env=env,
                                             capture_output=True, text=True, timeout=300, check=True).stdout)

        def with_dep(target: str, dep: str) -> dict:
            m = json.loads(json.dumps(manifest))
            for t in m["targets"]:
                if t["name"] == target:
                    t["dependencies"].append({"byName": [dep, None]})
            return m
        without_srt = json.loads(json.dumps(manifest))
        without_srt["targets"] = [t for t in without_srt["targets"] if t["name"] != "BroadcastSRT"]
        cases = {
            "up": (with_dep("BroadcastCore", "BroadcastKit"), 1, "BroadcastCore depends on BroadcastKit, a higher layer"),
            "sideways": (with_dep("BroadcastSRT", "BroadcastWHIP"), 1, "BroadcastSRT depends on BroadcastWHIP, a sibling"),
            "missing": (without_srt, 1, "BroadcastSRT: not a target of the package"),
            "down": (with_dep("BroadcastKit", "BroadcastCore"), 0, None),
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, (m, rc, line) in cases.items():
                path = Path(tmp) / f"{name}.json"
                path.write_text(json.dumps(m))
                r = subprocess.run(["python3", tool, "--check", "--manifest-json", str(path), "--root", str(self.REPO)],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, rc, f"{name}: {r.stdout}")
                if line:
                    self.assertIn(line, r.stdout.splitlines(), name)
            # A file of a lower layer that imports a higher one (its target does not depend on it).
            root = Path(tmp) / "pkg"
            (root / "Sources/Engine/BroadcastCore").mkdir(parents=True)
            (root / "Sources/Engine/BroadcastCore/A.swift").write_text("import Glibc\nimport BroadcastRTMP\n")
            path = Path(tmp) / "ok.json"
            path.write_text(json.dumps(manifest))
            r = subprocess.run(["python3", tool, "--check", "--manifest-json", str(path), "--root", str(root)],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("Sources/Engine/BroadcastCore/A.swift: imports BroadcastRTMP, which BroadcastCore does not depend on",
                          r.stdout.splitlines())

if __name__ == "__main__":
    unittest.main()
