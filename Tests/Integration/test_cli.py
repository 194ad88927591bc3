"""CLI contract: bad usage exits 2 with exactly one 'broadcast: ' line on stderr, an
unreachable server exits 3 quickly, and the stream key never appears in any output."""

import time
import unittest

import support
from support import BroadcastTestCase
from support import exclusive  # noqa: E402


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
            ("--video-bitrate 2.5X", [*base, "--video-bitrate", "2.5X"], keyed),
            ("--video-bitrate 2500bps", [*base, "--video-bitrate", "2500bps"], keyed),
            ("--audio-bitrate 1M", [*base, "--audio-bitrate", "1M"], keyed),
            ("--memory-budget 50Q", [*base, "--memory-budget", "50Q"], keyed),
            ("--memory-budget 1.5", [*base, "--memory-budget", "1.5"], keyed),
            ("--record-min-free lots", [*base, "--record-min-free", "lots"], keyed),
            # --url repeats (one destination each), but never the same stream twice.
            ("--url twice, same stream", [*base, "--url", "rtmp://127.0.0.1:9/live"], keyed),
            ("--url with an unknown setting", [*base, "--url", "rtmp://127.0.0.1:9/b,key=x"], keyed),
            ("--res twice", [*base, "--res", "720p", "--res=360p"], keyed),
            ("--stats-json in a missing dir", [*base, "--source", "test", "--stats-json",
                                               str(self.tmp / "missing" / "stats.jsonl")], keyed),
            ("--stats-json a directory", [*base, "--source", "test", "--stats-json", str(self.tmp)], keyed),
            ("--record in a missing dir", [*base, "--source", "test", "--record",
                                           str(self.tmp / "missing" / "out.flv")], keyed),
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

    @exclusive("the time to give up (< 10 s)")
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

    def test_repeated_flag_names_the_flag_and_never_a_value(self):
        k1, k2 = support.new_key(), support.new_key()
        # --url is the one valued option that repeats (each is a destination; see test_destinations.py).
        for args, name in ((["--res", "720p", "--res", "1080p"], "--res"),
                           (["--key", k1, "--key", k2], "--key"),
                           (["--video-bitrate", "2500k", "--video-bitrate=3M"], "--video-bitrate"),
                           (["--memory-budget", "50M", "--memory-budget", "64M"], "--memory-budget")):
            with self.subTest(flag=name):
                r = self.run_broadcast([*args, "--source", "test", "--duration", "1"], timeout=20)
                self.assertEqual(r.returncode, 2, r.describe())
                self.assertEqual(r.stderr_lines(), [f"broadcast: {name} given twice; give it once"])

    def test_units_reach_the_memory_plan_without_a_key(self):
        # No STREAM_KEY, no --key: printing the plan connects nowhere, so it needs no key.
        for rate, budget in (("2500", "64M"), ("2500k", "67108864"), ("2.5M", "65536K")):
            with self.subTest(rate=rate, budget=budget):
                r = self.run_broadcast(["--print-memory-plan", "--source", "test", "--res", "720p",
                                        "--video-bitrate", rate, "--audio-bitrate", "0.128M",
                                        "--memory-budget", budget], timeout=30)
                self.assertEqual(r.returncode, 0, r.describe())
                self.assertIn("2500 kbps", r.stdout)
                self.assertIn("of 64.0 MB budget", r.stdout, f"budget {budget} is not 64 MB")
                self.assertTrue(r.stdout.rstrip().endswith("fits"), r.stdout)

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
        warning = ("broadcast: warning: --key on the command line is readable by local users (ps, /proc); "
                   "prefer $STREAM_KEY or --key-file")
        self.assertEqual(r.stderr_lines().count(warning), 1, f"expected the --key warning once:\n{r.stderr}")

    def test_units_publish(self):
        key = support.new_key()
        r = self.publish(["--video-bitrate", "0.8M", "--audio-bitrate", "96k", "--memory-budget", "64M",
                          "--record-min-free", "1M"], env={"STREAM_KEY": key})
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn("800 kbps", r.stderr)
        self.assertIn("96 kbps", r.stderr)
        self.assertTrue(self.ingest.wait_recording(key).exists(), "server saw no publish under the key")

    @exclusive("the time to refuse (< 5 s)")
    def test_unwritable_output_refused_before_connecting(self):
        blocker = self.tmp / "not-a-dir"
        blocker.write_text("x")
        for option, path in (("--stats-json", self.tmp / "missing" / "stats.jsonl"),
                             ("--stats-json", blocker / "stats.jsonl"),
                             ("--record", self.tmp / "missing" / "out.flv")):
            with self.subTest(option=option, path=str(path)):
                key = support.new_key()
                log_before = len(self.ingest.error_log())
                r = self.run_broadcast(["--url", self.ingest.url, "--source", "test", "--res", "360p",
                                        "--duration", "2", option, str(path)],
                                       env={"STREAM_KEY": key}, timeout=20)
                self.assertEqual(r.returncode, 2, r.describe())
                lines = r.stderr_lines()
                self.assertEqual(len(lines), 1, f"want one stderr line, got {lines}")
                self.assertTrue(lines[0].startswith(f"broadcast: {option} {path}"), lines[0])
                self.assertLess(r.seconds, 5.0)
                time.sleep(0.5)
                self.assertFalse(self.ingest.recording(key).exists(), "a refused start still published")
                new_log = self.ingest.error_log()[log_before:]
                self.assertNotIn("client connected", new_log, "a refused start still connected to the server")
                self.assertNotIn("publish", new_log, "a refused start still published")


if __name__ == "__main__":
    unittest.main()
