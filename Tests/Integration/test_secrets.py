"""The stream key never shows: not on stdout/stderr, in --stats-json files, in error messages of
any path (bad flags, unreachable server, rejected publish, failure while streaming,
--print-memory-plan), nor in /proc/PID/cmdline once parsing is done (--key is scrubbed).
Issue 22: a key inside --url is scrubbed from cmdline, warned about and validated like --key; a
key inside $BROADCAST_URL is wiped from /proc/PID/environ; a query string (?token=...) is
printed as ?****; key files that are FIFOs, devices, over 4096 bytes, not UTF-8 or holding
control bytes are refused with exit 2 in bounded time, and a leading BOM is dropped.
Every key comes from support.new_key(), so BroadcastTestCase also checks each run's output."""

from __future__ import annotations

import os
import re
import time
import unittest
from pathlib import Path

import support
from support import BroadcastTestCase
from test_robustness import LiveProcess, NotifyIngest

# Shape of every key support.new_key() makes, whichever test or run made it.


class SecretTests(BroadcastTestCase):
    def assertNoKey(self, key: str, *blobs, where: str = "") -> None:
        for b in blobs:
            data = b.encode() if isinstance(b, str) else bytes(b)
            self.assertNotIn(key.encode(), data, f"key leaked {where}")
            self.assertNotIn(key.encode()[-16:], data, f"key tail leaked {where}")

    def test_bad_flags_with_key_on_argv(self):
        key = support.new_key()
        for args in (["--key", key, "--frobnicate"], ["--key", key, "--fps", "0"],
                     [f"--key={key}", "--res", "99p"], ["--key", key, "--url", "ftp://nowhere/x"]):
            with self.subTest(args=args[2:]):
                r = self.run_broadcast(args, timeout=20)
                self.assertEqual(r.returncode, 2, r.describe())
                self.assertNoKey(key, r.stdout, r.stderr, where=str(args[2:]))

    def test_unreachable_server_all_key_sources(self):
        port = support.free_port()
        url = f"rtmp://127.0.0.1:{port}/live"
        key_env, key_file, key_argv, key_url = (support.new_key() for _ in range(4))
        kf = self.tmp / "key.txt"
        kf.write_text(key_file + "\n")
        cases = [("env", ["--url", url], {"STREAM_KEY": key_env}, key_env),
                 ("file", ["--url", url, "--key-file", kf], None, key_file),
                 ("argv", ["--url", url, "--key", key_argv], None, key_argv),
                 ("url", ["--url", f"{url}/{key_url}"], None, key_url)]
        for name, args, env, key in cases:
            with self.subTest(source=name):
                r = self.run_broadcast([*args, "--source", "test", "--duration", "3"], env=env, timeout=30)
                self.assertEqual(r.returncode, 3, r.describe())
                self.assertNoKey(key, r.stdout, r.stderr, where=f"unreachable/{name}")

    def test_rejected_publish_on_publish_403_and_deny(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        for app in ("denied", "closed"):
            with self.subTest(app=app):
                key = support.new_key()
                r = self.run_broadcast(["--url", ingest.url(app), "--key", key, "--source", "test", "--duration", "5"],
                                       timeout=40)
                self.assertEqual(r.returncode, 3, r.describe())
                self.assertIn("rejected", r.stderr)
                self.assertNoKey(key, r.stdout, r.stderr, where=f"rejected by {app}")

    def test_print_memory_plan(self):
        key = support.new_key()
        r = self.run_broadcast(["--key", key, "--print-memory-plan", "--source", "test", "--res", "720p"], timeout=30)
        # 720p fits the default budget: the plan is printed and the exit is 0.
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn("memory plan", r.stdout)
        self.assertNoKey(key, r.stdout, r.stderr, where="memory plan")

    def test_live_stream_stats_and_scrubbed_cmdline(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        p = LiveProcess(["--url", ingest.url(), "--key", key, "--source", "test", "--res", "360p",
                         "--stats-json", stats, "--duration", "4"])
        self.addCleanup(p.kill)
        self.assertTrue(p.wait_for_stderr("live:"), p.describe())
        cmdlines = []
        for _ in range(10):  # sample /proc/PID/cmdline while it streams
            cmdlines.append(p.cmdline())
            time.sleep(0.2)
        rc, _ = p.wait(timeout=30)
        self._captured_texts += [p.stdout, p.stderr]
        self.assertEqual(rc, 0, p.describe())
        self.assertTrue(any(c for c in cmdlines), "could not read /proc/PID/cmdline")
        for c in cmdlines:
            self.assertNoKey(key, c, where="/proc/PID/cmdline")
        self.assertIn("warning", p.stderr, "--key on argv must warn")
        self.assertTrue(stats.exists() and stats.stat().st_size > 0, "no stats written")
        self.assertNoKey(key, stats.read_bytes(), p.stdout, p.stderr, where="stats/output")
        # The server did get the key: the test would be vacuous otherwise.
        self.assertTrue(ingest.recording(key).exists())

    def test_failure_while_streaming_with_key_file(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        kf = self.tmp / "key.txt"
        kf.write_text(key)
        stats = self.track_file(self.tmp / "stats.jsonl")
        p = LiveProcess(["--url", ingest.url(), "--key-file", kf, "--source", "test", "--res", "360p",
                         "--stats-json", stats, "--reconnect-attempts", "1", "--reconnect-delay", "0.5",
                         "--duration", "30"])
        self.addCleanup(p.kill)
        self.assertTrue(p.wait_for_stderr("live:"), p.describe())
        time.sleep(1.5)
        ingest.kill()
        rc, _ = p.wait(timeout=30)
        self._captured_texts += [p.stdout, p.stderr]
        self.assertNotEqual(rc, 0, p.describe())
        self.assertNoKey(key, p.stdout, p.stderr, p.cmdline(), where="streaming failure")
        if stats.exists():
            self.assertNoKey(key, stats.read_bytes(), where="stats after failure")

    # Issue 22, defect 7: a key inside a URL is treated like --key; key files are bounded.

    def test_key_in_url_is_scrubbed_warned_and_published(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        p = LiveProcess(["--url", f"{ingest.url()}/{key}", "--source", "test", "--res", "360p", "--duration", "3"])
        self.addCleanup(p.kill)
        self.assertTrue(p.wait_for_stderr("live:"), p.describe())
        cmdlines = [p.cmdline()]
        time.sleep(0.5)
        cmdlines.append(p.cmdline())
        rc, _ = p.wait(timeout=30)
        self._captured_texts += [p.stdout, p.stderr]
        self.assertEqual(rc, 0, p.describe())
        self.assertTrue(all(cmdlines), "could not read /proc/PID/cmdline")
        for c in cmdlines:
            self.assertNoKey(key, c, where="/proc/PID/cmdline (key inside --url)")
        self.assertIn("warning: a stream key or token in --url on the command line", p.stderr)
        self.assertTrue(ingest.recording(key).exists(), "the key in the URL was not what got published")

    def test_key_in_url_path_obeys_the_key_rules(self):
        port = support.free_port()
        for bad, what in (("a/b", "'/'"), ("a#b", "'#'")):
            with self.subTest(key=bad):
                r = self.run_broadcast(["--url", f"rtmp://127.0.0.1:{port}/live/{bad}", "--source", "test",
                                        "--duration", "1"], timeout=20)
                self.assertEqual(r.returncode, 2, r.describe())
                self.assertEqual(r.stderr_lines(), [f"broadcast: --url (the key in its path): the stream key contains "
                                                    f"{what}; a key has no '/', '#', whitespace or control characters"])

    def test_broadcast_url_is_wiped_from_environ(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        p = LiveProcess(["--source", "test", "--res", "360p", "--duration", "3"],
                        env={"BROADCAST_URL": f"{ingest.url()}/{key}"})
        self.addCleanup(p.kill)
        self.assertTrue(p.wait_for_stderr("live:"), p.describe())
        environ = Path(f"/proc/{p.pid}/environ").read_bytes()
        rc, _ = p.wait(timeout=30)
        self._captured_texts += [p.stdout, p.stderr]
        self.assertEqual(rc, 0, p.describe())
        self.assertIn(b"BROADCAST_URL", environ, "the variable itself should still be visible, blanked")
        self.assertNoKey(key, environ, where="/proc/PID/environ ($BROADCAST_URL)")
        self.assertTrue(ingest.recording(key).exists())

    def test_query_strings_are_redacted(self):
        port = support.free_port()
        token = "tok_" + support.secrets.token_hex(12)
        r = self.run_broadcast(["--url", f"rtmp://127.0.0.1:{port}/live?token={token}", "--source", "test",
                                "--duration", "2"], env={"STREAM_KEY": support.new_key()}, timeout=30)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertNotIn(token, r.stderr + r.stdout)
        self.assertIn(f"rtmp://127.0.0.1:{port}/live?****", r.stderr)

    def test_key_files_are_bounded(self):
        closed = "rtmp://127.0.0.1:9/live"   # accepting the key would end in exit 3 (nothing listens)
        fifo = self.tmp / "key.fifo"
        os.mkfifo(fifo)
        big = self.tmp / "big.key"
        big.write_bytes(b"k" * 5000)
        latin1 = self.tmp / "latin1.key"
        latin1.write_bytes(b"cl\xe9_secret\n")
        nul = self.tmp / "nul.key"
        nul.write_bytes(b"goodkey\n\x00\x1b[2J\n")
        cases = [(fifo, "not a regular file"), (Path("/dev/urandom"), "not a regular file"),
                 (big, "larger than 4096 bytes"), (latin1, "not UTF-8 text"), (nul, "holds a control byte")]
        for path, why in cases:
            for flag in (["--key-file", str(path), "--url", closed], ["--url", f"{closed},key-file={path}"]):
                with self.subTest(path=path.name, flag=flag[0]):
                    r = self.run_broadcast([*flag, "--source", "test", "--duration", "1"], timeout=15)
                    self.assertFalse(r.timed_out, f"{path} hung the start: {r.describe()}")
                    self.assertEqual(r.returncode, 2, r.describe())
                    lines = r.stderr_lines()
                    self.assertEqual(len(lines), 1, lines)
                    self.assertIn(str(path), lines[0])
                    self.assertIn(why, lines[0])

    def test_key_file_bom_is_dropped(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        kf = self.tmp / "bom.key"
        kf.write_bytes(b"\xef\xbb\xbf" + key.encode() + b"\r\n")
        r = self.run_broadcast(["--url", ingest.url(), "--key-file", kf, "--source", "test", "--res", "360p",
                                "--duration", "2"], timeout=40)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertTrue(ingest.recording(key).exists(), "not published under the key without its BOM")


if __name__ == "__main__":
    unittest.main()
