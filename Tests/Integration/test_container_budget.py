"""The container-aware memory budget against a live memory cgroup.

Without --memory-budget, broadcast takes the smaller of 50 MB and its cgroup's limit less what
the cgroup charges besides its pages (1.5 MB of kernel memory, + 4 MB per recording), and its plan
says where the budget came from. These tests put the process in a real memory cgroup (v1 memory
controller or v2 memory.max, whichever this machine has), started from a shell that joins the
group and then execs broadcast.

Issue 23: 1080p from the test source, and a 3840x2160 synthetic PipeWire desktop scaled to
1080p, stream inside a 50 MiB cgroup with no OOM kill, and VmHWM (polled from /proc/PID/status
by the test, and the process's own last stats line) stays within 46 and 48 MiB.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import unittest
import uuid
from pathlib import Path

from support import BROADCAST_BIN, REPO_ROOT, clean_env, new_key, redact, start_ingest
from support import exclusive  # noqa: E402

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def make_cgroup(limit: int) -> tuple[Path, str]:
    """A fresh memory cgroup with `limit` bytes; (its directory, the limit file's name)."""
    name = f"bk-budget-{uuid.uuid4().hex[:8]}"
    if (V1 / "cgroup.procs").exists():
        cg = V1 / name
        cg.mkdir()
        (cg / "memory.limit_in_bytes").write_text(str(limit))
        return cg, "memory.limit_in_bytes"
    if (V2 / "cgroup.controllers").exists():
        cg = V2 / name
        cg.mkdir()
        (cg / "memory.max").write_text(str(limit))
        return cg, "memory.max"
    raise unittest.SkipTest("no memory cgroup on this machine")


def run_in(cg: Path, args: list[str]) -> subprocess.CompletedProcess:
    # The shell moves itself into the group, then becomes broadcast (same pid, same group).
    script = f'echo $$ > "{cg}/cgroup.procs" && exec "$0" "$@"'
    env = {k: v for k, v in os.environ.items() if k != "STREAM_KEY"}
    return subprocess.run(["sh", "-c", script, str(BROADCAST_BIN), *args], capture_output=True, text=True,
                          timeout=60, env=env)


def stream_in(cg: Path, args: list[str], env: dict, timeout: float) -> tuple[int, str, int]:
    """Runs broadcast inside `cg` until it exits; (exit code, stderr, VmHWM in bytes polled from
    /proc/PID/status every 0.2 s: the pid is broadcast's own once the shell has exec'd)."""
    script = f'echo $$ > "{cg}/cgroup.procs" && exec "$0" "$@"'
    proc = subprocess.Popen(["sh", "-c", script, str(BROADCAST_BIN), *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    hwm = 0
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            if "broadcast" in Path(f"/proc/{proc.pid}/comm").read_text():
                m = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
                if m:
                    hwm = max(hwm, int(m.group(1)) * 1024)
        except (FileNotFoundError, ProcessLookupError):
            pass
        time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err, hwm


def oom_kills(cg: Path) -> int:
    """OOM kills in the group (v1 memory.oom_control, v2 memory.events)."""
    for name in ("memory.oom_control", "memory.events"):
        f = cg / name
        if f.exists():
            m = re.search(r"^oom_kill (\d+)", f.read_text(), re.M)
            if m:
                return int(m.group(1))
    raise AssertionError(f"no oom_kill counter under {cg}")


def plan_budget(stdout: str) -> float:
    m = re.search(r"total\s+[\d.]+ MB of ([\d.]+) MB budget", stdout)
    assert m, stdout
    return float(m.group(1))


@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class ContainerBudgetTests(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("creating a memory cgroup needs root (CI runs as root)")
        self.groups: list[Path] = []

    def tearDown(self):
        for cg in self.groups:
            try:
                cg.rmdir()
            except OSError:
                pass

    def cgroup(self, limit: int) -> tuple[Path, str]:
        cg, f = make_cgroup(limit)
        self.groups.append(cg)
        return cg, f

    def assertStreamed(self, last: dict, seconds: int) -> None:
        """Every frame the lane accepted was encoded and sent (what 2 loaded cores cannot encode
        in time is refused as a counted encoder_busy drop, never lost), the source produced at
        its rate, and nothing else was dropped: memory is what these tests judge; frame rates
        are the benchmarks' business."""
        self.assertEqual(last["state"], "finished", last)
        self.assertEqual(last["video_frames_in"], last["video_frames_encoded"], last)
        # Repeated pictures (a frame that came late on a loaded machine) are encoded and sent too.
        self.assertEqual(last["video_frames_encoded"] + last.get("video_frames_repeated", 0), last["video_frames_sent"], last)
        self.assertGreaterEqual(last["video_frames_in"] + last["drops"]["encoder_busy"], seconds * 30 * 0.9, last)
        self.assertGreaterEqual(last["video_frames_sent"], seconds * 5, last)
        self.assertGreaterEqual(last["audio_frames_sent"], seconds * 46 * 0.95, last)   # AAC: 46.9 frames/s
        self.assertEqual(last["total_drops"], last["drops"]["encoder_busy"], last)

    def test_40MB_cgroup_sets_the_budget_and_says_so(self):
        cg, limit_file = self.cgroup(40 << 20)
        r = run_in(cg, ["--source", "test", "--res", "720p", "--print-memory-plan"])
        out = redact(r.stdout + r.stderr)
        # 40 MB less the 1.5 MB of kernel memory the cgroup charges besides our pages.
        self.assertAlmostEqual(plan_budget(r.stdout), 38.5, delta=0.05, msg=out)
        self.assertRegex(r.stdout, r"budget from\s+cgroup v[12] limit 40\.0 MB \(.*" + re.escape(limit_file)
                         + r"\) less 1\.5 MB the cgroup charges besides our pages \(kernel memory 1\.5 MB\)", out)

    def test_recording_adds_its_dirty_page_cache_to_the_cgroup_headroom(self):
        cg, _ = self.cgroup(40 << 20)
        with tempfile.TemporaryDirectory() as tmp:
            r = run_in(cg, ["--source", "test", "--res", "360p", "--record", f"{tmp}/a.flv", "--no-publish",
                            "--print-memory-plan=json"])
        plan = json.loads(r.stdout)["plan"]
        self.assertEqual(plan["budget_bytes"], (80 - 3 - 8) << 19, redact(r.stdout + r.stderr))
        self.assertIn("1 recording x 4.0 MB dirty page cache", plan["budget_source"])

    def test_40MB_cgroup_at_1080p_refuses_with_the_plan(self):
        # 38.5 MB of budget: even ultrafast with 1 pending frame plans about 45 MB at 1080p.
        cg, _ = self.cgroup(40 << 20)
        r = run_in(cg, ["--source", "test", "--res", "1080p", "--print-memory-plan"])
        out = redact(r.stdout + r.stderr)
        self.assertAlmostEqual(plan_budget(r.stdout), 38.5, delta=0.05, msg=out)
        self.assertEqual(r.returncode, 2, out)
        self.assertIn("DOES NOT FIT", r.stdout, out)
        self.assertIn("x264 configuration                 ultrafast, 1 pending frame", r.stdout, out)

    @exclusive("VmHWM inside a 50 MiB cgroup")
    def test_1080p_streams_inside_a_50MiB_cgroup(self):
        cg, _ = self.cgroup(50 << 20)
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        with tempfile.TemporaryDirectory() as tmp:
            stats = Path(tmp) / "stats.jsonl"
            key = new_key()
            rc, err, hwm = stream_in(cg, ["--url", ingest.url, "--source", "test", "--res", "1080p",
                                          "--duration", "40", "--quiet", "--stats-json", str(stats)],
                                     clean_env({"STREAM_KEY": key}), timeout=65)
            out = redact(err)
            self.assertEqual(rc, 0, out)
            lines = [json.loads(line) for line in stats.read_text().splitlines()]
        self.assertEqual(oom_kills(cg), 0, out)
        last = lines[-1]
        self.assertStreamed(last, seconds=40)
        peak = max(hwm, last["peak_rss_bytes"])
        print(f"1080p in a 50 MiB cgroup: VmHWM {peak / 1048576:.1f} MiB (polled {hwm / 1048576:.1f})", flush=True)
        self.assertLessEqual(peak, 46 << 20, f"VmHWM {peak / 1048576:.1f} MiB")
        self.assertTrue(ingest.wait_recording(key).stat().st_size > 1 << 20)

    # The 4K capture scaled to 1080p saturates both cores in bursts its average (0.3) hides: in this
    # session's CI rehearsal beside other tests it dropped 10 frames as encoder_busy and one capture
    # picture as backwards_timestamp (TEST-DEBTS). Planned at 2 cores, it has the machine to itself.
    @exclusive("VmHWM inside a 50 MiB cgroup", cores=2.0)
    def test_4K_desktop_to_1080p_streams_inside_a_50MiB_cgroup(self):
        state = Path(tempfile.mkdtemp(prefix="bcast-pw4k-"))
        up = subprocess.run([str(REPO_ROOT / "scripts" / "pipewire-up"), "--state", str(state),
                             "--screen-args", "--size 3840x2160"], capture_output=True, text=True, timeout=600)
        self.addCleanup(subprocess.run, ["rm", "-rf", str(state)], check=False)
        self.addCleanup(subprocess.run, [str(REPO_ROOT / "scripts" / "pipewire-down"), "--state", str(state)],
                        check=False, timeout=60)
        self.assertEqual(up.returncode, 0, up.stderr)
        env = clean_env({"STREAM_KEY": new_key()})
        for line in up.stdout.splitlines():
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                env[k] = v.strip("'\"")
        cg, _ = self.cgroup(50 << 20)
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        with tempfile.TemporaryDirectory() as tmp:
            stats = Path(tmp) / "stats.jsonl"
            rc, err, hwm = stream_in(cg, ["--url", ingest.url, "--source", "screen-node", "--screen-node",
                                          "pw-test-screen", "--app-audio", "app-sink", "--mic", "test-mic",
                                          "--res", "1080p", "--duration", "30", "--quiet", "--stats-json", str(stats)],
                                     env, timeout=65)
            out = redact(err)
            self.assertEqual(rc, 0, out)
            lines = [json.loads(line) for line in stats.read_text().splitlines()]
        self.assertEqual(oom_kills(cg), 0, out)
        produced = (state / "frames").read_text().split()
        # The screen's count and broadcast's own lines together (R18 once read '0 0 0x0' here after
        # broadcast exited 0: which side never saw a frame is what the next occurrence must show).
        self.assertEqual(produced[2], "3840x2160",
                         f"screen count {produced}; broadcast: {out}; last stats: {lines[-1] if lines else None}")
        last = lines[-1]
        self.assertStreamed(last, seconds=30)
        peak = max(hwm, last["peak_rss_bytes"])
        print(f"4K desktop -> 1080p in a 50 MiB cgroup: VmHWM {peak / 1048576:.1f} MiB", flush=True)
        self.assertLessEqual(peak, 48 << 20, f"VmHWM {peak / 1048576:.1f} MiB")

    def test_explicit_budget_wins_over_the_cgroup(self):
        cg, _ = self.cgroup(40 << 20)
        r = run_in(cg, ["--source", "test", "--res", "360p", "--memory-budget", "30M", "--print-memory-plan"])
        self.assertAlmostEqual(plan_budget(r.stdout), 30.0, delta=0.05, msg=redact(r.stdout + r.stderr))
        self.assertRegex(r.stdout, r"budget from\s+--memory-budget")

    def test_roomy_cgroup_keeps_the_50MB_default(self):
        cg, _ = self.cgroup(1 << 30)
        r = run_in(cg, ["--source", "test", "--res", "720p", "--print-memory-plan"])
        self.assertAlmostEqual(plan_budget(r.stdout), 50.0, delta=0.05, msg=redact(r.stdout + r.stderr))
        self.assertRegex(r.stdout, r"budget from\s+default")


if __name__ == "__main__":
    unittest.main()
