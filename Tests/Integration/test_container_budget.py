"""The container-aware memory budget against a live memory cgroup.

Without --memory-budget, broadcast takes the smaller of 50 MB and its cgroup's limit less
max(4 MB, 10%) headroom, and its plan says where the budget came from. These tests put the
process in a real memory cgroup (v1 memory controller or v2 memory.max, whichever this machine
has), started from a shell that joins the group and then execs broadcast.
"""
from __future__ import annotations

import os
import re
import subprocess
import unittest
import uuid
from pathlib import Path

from support import BROADCAST_BIN, redact

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

    def test_40MB_cgroup_sets_the_budget_and_says_so(self):
        cg, limit_file = self.cgroup(40 << 20)
        r = run_in(cg, ["--source", "test", "--res", "720p", "--print-memory-plan"])
        out = redact(r.stdout + r.stderr)
        # 40 MB less max(4 MB, 10%) = 36 MB.
        self.assertAlmostEqual(plan_budget(r.stdout), 36.0, delta=0.05, msg=out)
        self.assertRegex(r.stdout, r"budget from\s+cgroup v[12] limit 40\.0 MB \(.*" + re.escape(limit_file)
                         + r"\) less 4\.0 MB headroom", out)

    def test_40MB_cgroup_at_1080p_downgrades_or_refuses(self):
        cg, _ = self.cgroup(40 << 20)
        r = run_in(cg, ["--source", "test", "--res", "1080p", "--print-memory-plan"])
        out = redact(r.stdout + r.stderr)
        self.assertAlmostEqual(plan_budget(r.stdout), 36.0, delta=0.05, msg=out)
        if r.returncode == 0:
            self.assertIn("memory budget:", r.stdout, out)       # the downgrade is named
        else:
            self.assertEqual(r.returncode, 2, out)
            self.assertIn("DOES NOT FIT", r.stdout, out)

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
