"""Robustness of the real CLI: disk faults for --record (a small tmpfs that fills up), clean
stop on SIGINT/SIGTERM with the server seeing the unpublish, a second SIGINT, and an ingest
that dies mid-stream (SIGPIPE must never kill us; documented exit 4).

NotifyIngest is a private nginx-rtmp whose on_publish/on_publish_done notifications go to an
HTTP endpoint run by the test, so "the server saw the unpublish" is a real observable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import support
from support import BroadcastTestCase
from support import exclusive  # noqa: E402

NGINX_MODULE = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

NGINX_CONF = """load_module {module};
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx-self.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
rtmp {{
    server {{
        listen 127.0.0.1:{port};
        chunk_size 4096;
        application live {{
            live on;
            record all;
            record_path {dir}/rec;
            record_unique off;
            on_publish http://127.0.0.1:{http_port}/publish;
            on_publish_done http://127.0.0.1:{http_port}/publish_done;
        }}
        application denied {{
            live on;
            on_publish http://127.0.0.1:{http_port}/deny;
        }}
        application closed {{
            live on;
            deny publish all;
        }}
    }}
}}
"""


class NotifyIngest:
    """nginx-rtmp + an HTTP notify endpoint: /publish and /publish_done answer 200 and are
    recorded; /deny answers 403 (a rejected key)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bcast-notify-"))
        (self.dir / "rec").mkdir()
        self.events: list[tuple[str, dict]] = []
        events = self.events

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                n = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(n).decode(errors="replace")).items()}
                path = self.path.split("?")[0]
                events.append((path, form))
                self.send_response(403 if path == "/deny" else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http_port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.port = support.free_port()
        conf = self.dir / "nginx.conf"
        conf.write_text(NGINX_CONF.format(module=NGINX_MODULE, dir=self.dir, port=self.port,
                                          http_port=self.http_port))
        self.proc = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(self.dir), "-e", str(self.dir / "error.log")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                import socket
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"nginx did not start: {self.error_log()[-500:]}")

    def url(self, app: str = "live") -> str:
        return f"rtmp://127.0.0.1:{self.port}/{app}"

    def recording(self, key: str) -> Path:
        return self.dir / "rec" / f"{key}.flv"

    def error_log(self) -> str:
        p = self.dir / "error.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def calls(self, path: str) -> list[dict]:
        return [form for p, form in list(self.events) if p == path]

    def wait_call(self, path: str, timeout: float = 5.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.calls(path):
            time.sleep(0.05)
        return self.calls(path)

    def kill(self) -> None:
        """Abrupt death: SIGKILL, no goodbye on the socket beyond the kernel's."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.http.shutdown()
        self.http.server_close()

    def cleanup(self) -> None:
        self.stop()
        if not os.environ.get("KEEP_TEST_DIRS"):
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)


class LiveProcess:
    """The CLI running in the background; stderr is collected by a thread so the pipe never fills."""

    def __init__(self, args, env=None) -> None:
        if not support.BROADCAST_BIN.exists():
            raise AssertionError(f"{support.BROADCAST_BIN} not built (run scripts/build)")
        self.proc = subprocess.Popen([str(support.BROADCAST_BIN), *map(str, args)], env=support.clean_env(env),
                                     cwd=support.REPO_ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pid = self.proc.pid
        self._err: list[bytes] = []
        self._out: list[bytes] = []
        self._threads = [threading.Thread(target=self._pump, args=(self.proc.stderr, self._err), daemon=True),
                         threading.Thread(target=self._pump, args=(self.proc.stdout, self._out), daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in iter(stream.readline, b""):
            sink.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._err).decode(errors="replace")

    @property
    def stdout(self) -> str:
        return b"".join(self._out).decode(errors="replace")

    def wait_for_stderr(self, needle: str, timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.stderr:
                return True
            if self.proc.poll() is not None:
                return needle in self.stderr
            time.sleep(0.05)
        return False

    def cmdline(self) -> bytes:
        try:
            return Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return b""

    def wait(self, timeout: float) -> tuple[int | None, float]:
        """(exit code or None on timeout, seconds waited)."""
        start = time.monotonic()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        for t in self._threads:
            t.join(timeout=2)
        if rc is not None:
            self.proc.stdout.close()
            self.proc.stderr.close()
        return rc, time.monotonic() - start

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for t in self._threads:
            t.join(timeout=2)
        for s in (self.proc.stdout, self.proc.stderr):
            if not s.closed:
                s.close()

    def describe(self) -> str:
        return f"exit {self.proc.returncode}\n--- stderr ---\n{self.stderr[-2000:]}"


class RecordDiskTests(BroadcastTestCase):
    """--record onto a 2 MB tmpfs mounted by the test (needs root)."""

    def setUp(self):
        super().setUp()
        self.disk = self.tmp / "disk"
        self.disk.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(self.disk)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs (need root): {r.stderr.strip()}")
        self.addCleanup(subprocess.run, ["umount", "-l", str(self.disk)], check=False)

    def test_start_refused_when_disk_cannot_hold_ten_minutes(self):
        out = self.disk / "rec.flv"
        r = self.run_broadcast(["--no-publish", "--record", out, "--source", "test", "--res", "360p",
                                "--duration", "3"], timeout=30)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.returncode, 2, r.describe())
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, f"want one clear line, got {lines}")
        self.assertTrue(lines[0].startswith("broadcast: "), lines[0])
        self.assertIn("free", lines[0])
        self.assertIn("need", lines[0])
        self.assertFalse(out.exists() and out.stat().st_size > 13, "refused start still recorded")

    def test_min_free_override_lets_a_small_recording_start(self):
        out = self.disk / "rec.flv"
        r = self.run_broadcast(["--no-publish", "--record", out, "--record-min-free", "512K", "--source", "test",
                                "--res", "360p", "--video-bitrate", "300", "--duration", "2"], timeout=30)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertRecordingOK(out)

    def test_enospc_mid_stream_warns_once_and_keeps_streaming(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        # The test pattern compresses to ~220 kbps at 360p: leave 96 KB free so the disk fills
        # after ~3.5 s of an 8 s stream.
        with open(self.disk / "filler", "wb") as f:
            f.write(bytes(2048 * 1024 - 96 * 1024))
        out = self.disk / "rec.flv"
        duration = 8
        r = self.run_broadcast(["--url", ingest.url(), "--record", out, "--record-min-free", "0",
                                "--source", "test", "--res", "360p", "--video-bitrate", "2000",
                                "--duration", duration], env={"STREAM_KEY": key}, timeout=60)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.returncode, 0, r.describe())
        warnings = [line for line in r.stderr_lines() if "warning" in line and "rec.flv" in line]
        self.assertEqual(len(warnings), 1, f"want exactly one warning about the recording:\n{r.describe()}")
        # The local file: cut at a tag boundary, decodes cleanly up to where the disk filled.
        size = out.stat().st_size
        self.assertGreater(size, 20_000, "the disk filled before anything was recorded?")
        self.assertLessEqual(size, 96 * 1024)
        local = self.assertRecordingOK(out)
        local_frames = local.first("video").frames
        # RTMP carried on: the server recording holds the whole duration.
        remote = self.assertRecordingOK(ingest.recording(key), expect_frames=duration * 30, tolerance=20)
        self.assertGreater(remote.first("video").frames, local_frames + 60,
                           "RTMP should have gone on well past the point the disk filled")


class CleanStopTests(BroadcastTestCase):
    def start_live(self, ingest: NotifyIngest, key: str, extra=()) -> LiveProcess:
        p = LiveProcess(["--url", ingest.url(), "--source", "test", "--res", "360p", "--duration", "60", *extra],
                        env={"STREAM_KEY": key})
        self.addCleanup(p.kill)
        self.addCleanup(lambda: self._captured_texts.extend([p.stdout, p.stderr]))
        self.assertTrue(p.wait_for_stderr("live:"), f"never went live:\n{p.describe()}")
        self.assertTrue(ingest.wait_call("/publish"), "server never saw the publish")
        return p

    def stop_with(self, sig: int) -> None:
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        p = self.start_live(ingest, key)
        time.sleep(3)
        self.assertEqual(ingest.calls("/publish_done"), [], "unpublished before the signal")
        p.proc.send_signal(sig)
        rc, waited = p.wait(timeout=10)
        self.assertEqual(rc, 0, f"{signal.Signals(sig).name}: {p.describe()}")
        # Bounded by p.wait's timeout (a hang fails there); how fast is a benchmark, not a test.
        done = ingest.wait_call("/publish_done")
        self.assertTrue(done, "the server never saw the unpublish")
        self.assertEqual(done[0].get("name"), key)
        report = self.assertRecordingOK(ingest.recording(key))
        self.assertGreater(report.first("video").frames, 60)

    @exclusive("the time to stop")
    def test_sigint_stops_cleanly_within_2s(self):
        self.stop_with(signal.SIGINT)

    @exclusive("the time to stop")
    def test_sigterm_stops_cleanly_within_2s(self):
        self.stop_with(signal.SIGTERM)

    @exclusive("the time to exit")
    def test_second_sigint_exits_at_once_with_130(self):
        """A stop over a stalled link waits up to its deadline to send what is queued; a second
        SIGINT during that wait exits at once with 130. The link is stalled by a throttling proxy
        (8 kbit/s), so the first stop is still draining when the second signal arrives; the second
        is sent only after the first was acknowledged, so the two are never merged by the kernel."""
        import re
        import select
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        proxy = subprocess.Popen([str(support.REPO_ROOT / ".venv" / "bin" / "python"),
                                  str(support.REPO_ROOT / "tools" / "throttle_proxy.py"),
                                  "--listen-port", "0", "--target-port", str(ingest.port),
                                  "--throttle-kbps", "8", "--throttle-from", "2", "--throttle-for", "600"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(proxy.kill)
        port = None
        deadline = time.monotonic() + 10
        while port is None and time.monotonic() < deadline:
            ready, _, _ = select.select([proxy.stdout], [], [], 1)
            if ready:
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", proxy.stdout.readline())
                if m:
                    port = int(m.group(1))
        self.assertIsNotNone(port, "throttle proxy did not start")
        p = LiveProcess(["--url", f"rtmp://127.0.0.1:{port}/live", "--source", "test", "--res", "360p",
                         "--duration", "60"], env={"STREAM_KEY": support.new_key()})
        self.addCleanup(p.kill)
        self.addCleanup(lambda: self._captured_texts.extend([p.stdout, p.stderr]))
        self.assertTrue(p.wait_for_stderr("live:"), f"never went live:\n{p.describe()}")
        time.sleep(6)   # throttled from 2 s: the socket and the send queue are backed up by now
        p.proc.send_signal(signal.SIGINT)
        self.assertTrue(p.wait_for_stderr("stopping", timeout=5), f"first SIGINT not acknowledged:\n{p.describe()}")
        self.assertIsNone(p.proc.poll(), f"the stop did not wait for the stalled queue:\n{p.describe()}")
        p.proc.send_signal(signal.SIGINT)
        rc, waited = p.wait(timeout=10)
        # Documented in Sources/BroadcastCLI/Signals.swift: the second signal _exit(130)s at once.
        self.assertEqual(rc, 130, p.describe())
        # Exit 130 (not the drain's 0/4) and the message prove the immediate _exit path.
        self.assertIn("second signal", p.stderr)

    def test_ingest_killed_mid_stream_exits_4_not_by_signal(self):
        ingest = NotifyIngest()
        self.addCleanup(ingest.cleanup)
        p = self.start_live(ingest, support.new_key(), extra=["--reconnect-attempts", "1", "--reconnect-delay", "0.5"])
        time.sleep(2)
        ingest.kill()
        rc, waited = p.wait(timeout=30)
        self.assertIsNotNone(rc, f"still running 30 s after the ingest died:\n{p.describe()}")
        self.assertGreaterEqual(rc, 0, f"killed by signal {-rc}:\n{p.describe()}")
        self.assertEqual(rc, 4, p.describe())
        self.assertIn("broadcast: ", p.stderr)


if __name__ == "__main__":
    unittest.main()
