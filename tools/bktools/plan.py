"""The one reader of the memory plan (`broadcast --print-memory-plan`), and of `--stats-json`.

Every tool, soak and test reads the plan through `read_plan` (it runs the CLI) or `parse_plan`
(text already captured). When the CLI gains `--print-memory-plan=json`, `read_plan` switches to
it and builds the same `Plan`: no caller changes.

    python -m bktools.plan ring-kib PLAN.txt           the replay ring line, KiB
    python -m bktools.plan reference-budget-kib PLAN.txt BUDGET_BYTES
                                                       a budget that leaves a run without the
                                                       ring exactly the room this one has
    python -m bktools.plan x264 PLAN.txt               the x264 configuration line
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(r"^  (?P<name>\S.*?)\s{2,}(?P<value>\S.*)$")
_MB = re.compile(r"^(?P<mb>[\d.]+) MB\b")
_HEADROOM = re.compile(r"^headroom kept free \((?P<pct>[\d.]+)%\)$")
_RING = re.compile(r"^replay ring \((?P<seconds>\d+) s\)$")


@dataclass
class Plan:
    """A memory plan: each line's MB (MiB, as the CLI prints), the x264 configuration, the
    budget, the headroom fraction the plan keeps free, and whether it fits."""
    lines: dict[str, float] = field(default_factory=dict)
    x264: str | None = None
    total_mb: float | None = None
    budget_mb: float | None = None
    headroom_fraction: float | None = None
    budget_from: str | None = None
    fits: bool | None = None
    text: str = ""

    def line_mb(self, prefix: str) -> float | None:
        """The first line whose name starts with `prefix` ("replay ring", "x264 working frames")."""
        return next((v for k, v in self.lines.items() if k.startswith(prefix)), None)

    @property
    def ring_mb(self) -> float | None:
        return self.line_mb("replay ring (")

    def as_dict(self) -> dict:
        return {"lines": self.lines, "x264": self.x264, "total_mb": self.total_mb, "budget_mb": self.budget_mb,
                "headroom_fraction": self.headroom_fraction, "budget_from": self.budget_from, "fits": self.fits}


def parse_plan(text: str) -> Plan:
    """The plan in the CLI's text (stdout, or stderr where a refusal prints it)."""
    plan = Plan(text=text)
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            if raw.strip() == "fits" or raw.strip().startswith("fits"):
                plan.fits = True
            elif raw.strip().startswith("DOES NOT FIT"):
                plan.fits = False
            continue
        name, value = m.group("name").strip(), m.group("value").strip()
        if name == "x264 configuration":
            plan.x264 = value
            continue
        if name == "budget from":
            plan.budget_from = value
            continue
        if name == "total":
            nums = re.findall(r"[\d.]+ MB", value)
            if nums:
                plan.total_mb = float(nums[0].split()[0])
            if len(nums) >= 2:
                plan.budget_mb = float(nums[1].split()[0])
            continue
        h = _HEADROOM.match(name)
        if h:
            plan.headroom_fraction = float(h.group("pct")) / 100.0
        mb = _MB.match(value)
        if mb:
            plan.lines[name] = float(mb.group("mb"))
    return plan


def read_plan(broadcast: str | Path, args: list[str], env: dict | None = None, timeout: float = 60) -> Plan:
    """Runs `broadcast ARGS --print-memory-plan` and reads what it printed (a plan that does not
    fit is printed too, with exit 2)."""
    p = subprocess.run([str(broadcast), *map(str, args), "--print-memory-plan"], env=env, capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    return parse_plan(p.stdout + "\n" + p.stderr)


def reference_budget_bytes(plan: Plan, budget_bytes: int) -> int:
    """The budget that leaves a run without the replay ring exactly the room this plan's run has
    for everything else. The plan keeps `headroom_fraction` of the budget free, so the room is
    (1 - h) of the budget, and the reference's budget is this one less ring / (1 - h)."""
    ring = plan.ring_mb or 0.0
    h = plan.headroom_fraction if plan.headroom_fraction is not None else 0.0
    return budget_bytes - int(round(ring * (1 << 20) / (1.0 - h)))


def read_stats(path: str | Path) -> list[dict]:
    """The `--stats-json` lines of a run, in order (a last line cut short by a kill is left out)."""
    out = []
    for line in Path(path).read_text(errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] in ("ring-kib", "x264", "reference-budget-kib", "json"):
        plan = parse_plan(Path(argv[1]).read_text(errors="replace"))
        if argv[0] == "ring-kib":
            if plan.ring_mb is None:
                return 1
            print(int(plan.ring_mb * 1024))
        elif argv[0] == "x264":
            if plan.x264 is None:
                return 1
            print(plan.x264)
        elif argv[0] == "json":
            print(json.dumps(plan.as_dict()))
        else:
            print(reference_budget_bytes(plan, int(argv[2])) // 1024)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
