"""CLI contract: bad usage exits 2 with exactly one 'broadcast: ' line on stderr, an
unreachable server exits 3 quickly, and the stream key never appears in any output."""

import unittest

import support
from support import BroadcastTestCase


class CLIErrorTests(BroadcastTestCase):
    def setUp(self):
        super().setUp()
        garbage = self.tmp / "garbage.y4m"
        garbage.write_bytes(b"NOT-A-Y4M W640 H360\n" + bytes(1000))
        self.garbage_y4m = garbage

    def bad_usage_cases(self):
        """(name, args, env) rows that must all be rejected as usage/configuration errors."""
        key = support.new_key()
        keyed = {"STREAM_KEY": key}
        base = ["--url", "rtmp://127.0.0.1:9/live", "--duration", "1"]
        return [
            ("unknown flag", [*base, "--frobnicate"], keyed),
            ("--res 99p", [*base, "--res", "99p"], keyed),
            ("--fps 0", [*base, "--fps", "0"], keyed),
            ("--fps abc", [*base, "--fps", "abc"], keyed),
            ("--audio-codec mp3", [*base, "--audio-codec", "mp3"], keyed),
            ("--video-bitrate -5", [*base, "--video-bitrate", "-5"], keyed),
            ("--source y4m:/nonexistent", [*base, "--source", "y4m:/nonexistent"], keyed),
            ("y4m garbage header", [*base, "--source", f"y4m:{self.garbage_y4m}"], keyed),
            ("--duration x", ["--url", "rtmp://127.0.0.1:9/live", "--duration", "x"], keyed),
            ("missing key when publishing", [*base, "--source", "test"], {}),
        ]

    def test_bad_usage_exits_2_with_one_line(self):
        for name, args, env in self.bad_usage_cases():
            with self.subTest(case=name):
                r = self.run_broadcast(args, env=env, timeout=20)
                self.assertFalse(r.timed_out, f"{name}: hung\n{r.describe()}")
                self.assertEqual(r.returncode, 2, f"{name}:\n{r.describe()}")
                lines = r.stderr_lines()
                self.assertEqual(len(lines), 1, f"{name}: want exactly one stderr line, got {lines}")
                self.assertTrue(lines[0].startswith("broadcast: "), f"{name}: {lines[0]!r}")

    def test_unreachable_server_exits_3_quickly(self):
        port = support.free_port()  # nothing listens there: connection refused
        key = support.new_key()
        r = self.run_broadcast(["--url", f"rtmp://127.0.0.1:{port}/live", "--source", "test",
                                "--duration", "5"], env={"STREAM_KEY": key}, timeout=30)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(r.seconds, 10.0, f"took {r.seconds:.1f} s to give up")
        self.assertTrue(any(line.startswith("broadcast: ") for line in r.stderr_lines()),
                        f"no clear 'broadcast: ' message:\n{r.describe()}")

    def test_help_and_version(self):
        for flag in ("--help", "--version"):
            with self.subTest(flag=flag):
                r = self.run_broadcast([flag], timeout=10)
                self.assertEqual(r.returncode, 0, r.describe())
                self.assertNotEqual((r.stdout + r.stderr).strip(), "")


class KeyHandlingTests(BroadcastTestCase):
    """Each way of passing the key publishes, and none prints it."""

    @classmethod
    def setUpClass(cls):
        cls.ingest = support.start_ingest()

    @classmethod
    def tearDownClass(cls):
        cls.ingest.cleanup()

    def publish(self, args, env=None):
        stats = self.track_file(self.tmp / "stats.jsonl")
        return self.run_broadcast(["--url", self.ingest.url, "--source", "test", "--res", "360p",
                                   "--duration", "2", "--stats-json", str(stats), *args],
                                  env=env, timeout=60)

    def test_key_from_env(self):
        key = support.new_key()
        r = self.publish([], env={"STREAM_KEY": key})
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(self.ingest.wait_recording(key).exists(), "server saw no publish under the key")

    def test_key_from_file(self):
        key = support.new_key()
        kf = self.tmp / "key.txt"
        kf.write_text(key + "\n")
        r = self.publish(["--key-file", str(kf)])
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(self.ingest.wait_recording(key).exists(), "server saw no publish under the key")

    def test_key_on_argv_warns_without_printing_it(self):
        key = support.new_key()
        r = self.publish(["--key", key])
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(self.ingest.wait_recording(key).exists(), "server saw no publish under the key")
        self.assertIn("key", r.stderr.lower(), "expected a one-time warning about --key on argv")


if __name__ == "__main__":
    unittest.main()
