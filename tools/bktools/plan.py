"""The one reader of the memory plan (`broadcast --print-memory-plan=json`), and of `--stats-json`.

Every tool, soak and test reads the plan through `read_plan` (it runs the CLI and reads the JSON:
bytes per line, nothing rounded), `plan_from_json` (JSON already captured) or, for plans stored
as the CLI's text by older benchmark runs, `parse_plan`.

    python -m bktools.plan ring-kib PLAN.json          the replay ring line, KiB
    python -m bktools.plan reference-budget-kib PLAN.json BUDGET_BYTES
                                                       a budget that leaves a run without the
                                                       ring exactly the room this one has
    python -m bktools.plan x264 PLAN.json              the x264 configuration
    (PLAN may also be the text form.)
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

MIB = float(1 << 20)
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
    ring_bytes: int | None = None
    doc: dict | None = None

    def line_mb(self, prefix: str) -> float | None:
        """The first line whose name starts with `prefix` ("replay ring", "x264 working frames")."""
        return next((v for k, v in self.lines.items() if k.startswith(prefix)), None)

    @property
    def ring_mb(self) -> float | None:
        return self.line_mb("replay ring (")

    @property
    def ring_kib(self) -> int | None:
        """The replay ring line in KiB: exact from the JSON plan, else from the text's MiB."""
        if self.ring_bytes is not None:
            return self.ring_bytes // 1024
        return None if self.ring_mb is None else int(self.ring_mb * 1024)

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


def plan_from_json(text: str) -> Plan:
    """The plan in `--print-memory-plan=json`'s output (an empty `Plan` when there is none: a
    refused run prints its error instead)."""
    plan = Plan(text=text)
    doc = None
    for raw in text.splitlines():
        if raw.startswith("{"):
            try:
                doc = json.loads(raw)
                break
            except json.JSONDecodeError:
                continue
    if not doc or "plan" not in doc:
        return plan
    p = doc["plan"]
    plan.doc = doc
    plan.lines = {line["label"]: line["bytes"] / MIB for line in p.get("lines", [])}
    plan.ring_bytes = next((line["bytes"] for line in p.get("lines", []) if line.get("key") == "replay_ring"), None)
    plan.x264 = p.get("x264_configuration")
    plan.total_mb = p["total_bytes"] / MIB if p.get("total_bytes") is not None else None
    budget = p.get("budget_bytes")
    plan.budget_mb = budget / MIB if budget else None
    headroom = p.get("headroom_bytes")
    plan.headroom_fraction = headroom / budget if budget and headroom is not None else None
    plan.budget_from = p.get("budget_source")
    plan.fits = p.get("fits")
    return plan


def read_any(text: str) -> Plan:
    """The plan in either form the CLI prints (JSON first, else the text)."""
    plan = plan_from_json(text)
    return plan if plan.doc is not None else parse_plan(text)


def read_plan(broadcast: str | Path, args: list[str], env: dict | None = None, timeout: float = 60) -> Plan:
    """Runs `broadcast ARGS --print-memory-plan=json` and reads the plan (a plan that does not
    fit is printed too, with exit 2)."""
    p = subprocess.run([str(broadcast), *map(str, args), "--print-memory-plan=json"], env=env, capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    return plan_from_json(p.stdout + "\n" + p.stderr)


def reference_budget_bytes(plan: Plan, budget_bytes: int) -> int:
    """The budget that leaves a run without the replay ring exactly the room this plan's run has
    for everything else. The plan keeps `headroom_fraction` of the budget free, so the room is
    (1 - h) of the budget, and the reference's budget is this one less ring / (1 - h)."""
    ring = plan.ring_bytes if plan.ring_bytes is not None else (plan.ring_mb or 0.0) * MIB
    h = plan.headroom_fraction if plan.headroom_fraction is not None else 0.0
    return budget_bytes - int(round(ring / (1.0 - h)))


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
        plan = read_any(Path(argv[1]).read_text(errors="replace"))
        if argv[0] == "ring-kib":
            if plan.ring_kib is None:
                return 1
            print(plan.ring_kib)
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
