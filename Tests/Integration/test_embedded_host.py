"""Issue 39: embedding that works in a real host.

- A Python process that imports numpy and PyAV first (tens of MB resident before any session)
  streams Session(url, key, width=640, height=360, fps=30) with the defaults (no memory_budget) for
  5 s to nginx-rtmp: the plan's budget is the session's own memory (`budget scope  session`), the
  start succeeds, and PyAV counts at least 95% of the produced frames in nginx's recording.
- In one such process, five sessions started, streamed and finished, then a sixth plans the same
  total as the first (within 1 MB): opening and closing sessions does not ratchet the plan, nor
  the host's RSS after the first session (within 3 MB).
- The key `a/b` is refused in the CLI's words by the CLI, Python, a C program and gst-launch-1.0.
- A C program built with nothing but `pkg-config --cflags --libs broadcastkit` adds an rtmp:// and
  an srt:// destination with bk_config_add_destination and streams to nginx-rtmp and
  srt-live-transmit; both receivers' files decode with the frames sent. bk_config_add_rtmp is the
  alias (same refusal); BK_BUDGET_SESSION is the default and BK_BUDGET_PROCESS the opt-in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import test_embedding as embedding  # InstalledPrefix (a module, so its tests are not collected here)
from support import REPO_ROOT, BroadcastTestCase, exclusive, free_port, new_key, start_ingest

BUILD_DIR = REPO_ROOT / ".build" / "release"
LIB = BUILD_DIR / "libbroadcastkit.so"
HERE = Path(__file__).parent
HOST = HERE / "embedding" / "py_host_budget.py"
C_PROGRAM = HERE / "embedding" / "add_destination.c"
PLUGIN_DIR = BUILD_DIR / "gstreamer-1.0"
CLI_WORDS = "the stream key contains '/'; a key has no '/', '#', whitespace or control characters"


def decoded_video_frames(path: Path) -> int:
    import av
    n = 0
    with av.open(str(path)) as c:
        for packet in c.demux(video=0):
            n += len(packet.decode())
    return n


def udp_bound(port: int) -> bool:
    needle = f":{port:04X} "
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(table) as f:
                if any(needle in line[:40] for line in f.readlines()[1:]):
                    return True
        except OSError:
            pass
    return False


class PythonHostMixin:
    def run_host(self, args, key: str | None = None, timeout: float = 120):
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "bindings" / "python"), BROADCASTKIT_LIBRARY=str(LIB))
        if key is not None:
            env["STREAM_KEY"] = key
        r = subprocess.run([sys.executable, str(HOST), *map(str, args)], env=env, capture_output=True, text=True,
                           timeout=timeout)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        return json.loads(r.stdout.strip().splitlines()[-1])


@exclusive("memory plans of a host process, and frames delivered at real time")
class EmbeddedBudgetTest(PythonHostMixin, BroadcastTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.assertTrue(LIB.exists(), f"{LIB} not built (scripts/build)")

    def test_numpy_and_pyav_host_streams_with_the_defaults(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        out = self.run_host(["stream", ingest.url, 5], key)
        plan = out["plan"]
        self.assertIn("budget scope                       session: ", plan)
        self.assertNotIn("runtime baseline (measured)", plan)
        # The host (numpy, PyAV, the interpreter) is shown, not charged: it is what broke the default.
        self.assertGreater(out["host_rss_mb"], 30, out["host_rss_mb"])
        self.assertEqual(out["produced"], 150)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        frames = decoded_video_frames(rec)
        self.assertGreaterEqual(frames, 0.95 * out["produced"], (frames, out["results"], out["stats"]["drops"]))
        self.assertEqual(frames, out["stats"]["video_frames_sent"])

    def test_sessions_opened_and_closed_do_not_ratchet_the_plan(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        out = self.run_host(["sessions", ingest.url], new_key(), timeout=180)
        totals = out["totals"]
        self.assertEqual(len(totals), 6)
        self.assertLessEqual(abs(totals[5] - totals[0]), 1.0, (totals, out["host_rss_mb"], out["last_plan"]))
        self.assertLessEqual(max(totals) - min(totals), 1.0, totals)
        self.assertIn("session: ", out["last_plan"])
        # The host's own RSS does not climb by each session's peak either (bk_session_free hands
        # malloc's free pages back): from the second session on it stays within 3 MB.
        hosts = out["host_rss_mb"]
        self.assertLessEqual(max(hosts[1:]) - hosts[1], 3.0, hosts)


class KeyRuleEveryFrontEndTest(PythonHostMixin, BroadcastTestCase):
    """The key `a/b` (nginx would publish it under another name) is refused in the CLI's words."""

    def test_cli_python_and_gstreamer_refuse_a_slash(self):
        r = self.run_broadcast(["--print-memory-plan", "--source", "test", "--url", "rtmp://127.0.0.1:9/live",
                                "--key", "a/b"])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertEqual(r.stderr_lines(), [f"broadcast: --key: {CLI_WORDS}"])

        py = self.run_host(["key", "rtmp://127.0.0.1:9/live", "a/b"])
        self.assertEqual(py, {"error": "ConfigurationError", "text": CLI_WORDS})
        py = self.run_host(["key", "srt://127.0.0.1:9000", "a/b"])
        self.assertEqual(py, {"error": "ConfigurationError", "text": CLI_WORDS})

        self.assertTrue((PLUGIN_DIR / "libgstbroadcastsink.so").exists(), "GStreamer element not built (scripts/build-gst)")
        env = dict(os.environ, GST_PLUGIN_PATH=str(PLUGIN_DIR), GST_REGISTRY=str(self.tmp / "registry.bin"))
        r = subprocess.run(["gst-launch-1.0", "videotestsrc", "num-buffers=10", "!", "broadcastsink",
                            "location=rtmp://127.0.0.1:9/live", "stream-key=a/b"], env=env, capture_output=True,
                           text=True, timeout=60)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"broadcastsink: location: {CLI_WORDS}\n", r.stdout + r.stderr)


class BindingsUseTheNewNameTest(BroadcastTestCase):
    """The GStreamer element and the Python binding call bk_config_add_destination; bk_config_add_rtmp
    stays in the header as the documented alias, for existing C callers only."""

    def test_element_and_binding_call_bk_config_add_destination(self):
        plugin = PLUGIN_DIR / "libgstbroadcastsink.so"
        self.assertTrue(plugin.exists(), "GStreamer element not built (scripts/build-gst)")
        imports = subprocess.run(["nm", "-D", "--undefined-only", str(plugin)], capture_output=True, text=True,
                                 timeout=30).stdout
        self.assertIn("bk_config_add_destination", imports)
        self.assertNotIn("bk_config_add_rtmp", imports)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "bindings" / "python"), BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, "-c", "import broadcastkit._abi as a, inspect; "
                            "print(sorted(n for n in inspect.get_annotations(a.Library) if n.startswith('bk_config_add')))"],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["['bk_config_add_destination',", "'bk_config_add_file']"])
        header = (REPO_ROOT / "Sources" / "CBroadcastKitABI" / "include" / "broadcastkit.h").read_text()
        self.assertIn("bk_status bk_config_add_rtmp(", header)
        self.assertIn("alias of bk_config_add_destination()", " ".join(header.split()))


class CDestinationTest(BroadcastTestCase):
    def test_c_program_from_pkg_config_adds_rtmp_and_srt(self):
        installed = embedding.InstalledPrefix()
        self.addCleanup(installed.cleanup)
        self.assertEqual(installed.pkg_config("--modversion"), (REPO_ROOT / "VERSION").read_text().strip())
        exe = self.tmp / "add_destination"
        r = installed.compile(C_PROGRAM, exe)
        self.assertEqual(r.returncode, 0, r.stderr)

        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        port = free_port()
        ts = self.tmp / "srt.ts"
        with open(ts, "wb") as f:
            recv = subprocess.Popen(["srt-live-transmit", "-q", f"srt://:{port}?mode=listener", "file://con"],
                                    stdout=f, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: recv.poll() is None and (recv.kill(), recv.wait(timeout=10)))
        deadline = time.monotonic() + 10
        while not udp_bound(port):
            self.assertLess(time.monotonic(), deadline, "srt-live-transmit did not listen")
            time.sleep(0.05)

        key = new_key()
        r = subprocess.run([str(exe), ingest.url, f"srt://127.0.0.1:{port}", "4"], env=dict(installed.env, STREAM_KEY=key),
                           capture_output=True, text=True, timeout=90)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["refused_destination"], out["message_destination"]), (-2, CLI_WORDS))
        self.assertEqual((out["refused_rtmp"], out["message_rtmp"]), (-2, CLI_WORDS))
        self.assertEqual(out["bad_scope"], -1)
        self.assertEqual((out["plan_scope_session"], out["session_has_baseline"]), (1, 0))
        self.assertEqual((out["plan_scope_process"], out["process_has_baseline"]), (1, 1))
        self.assertEqual(out["finish"], 0)
        sent = out["stats"]["video_frames_sent"]
        self.assertGreaterEqual(sent, 0.9 * out["produced"], out)
        time.sleep(0.5)
        recv.terminate()
        recv.wait(timeout=10)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertEqual(decoded_video_frames(rec), sent)
        # SRT is a second destination: its frames are counted in its own stats line, not the primary's.
        self.assertGreaterEqual(decoded_video_frames(ts), sent - 2)
