"""The one table of targets. Tests assert these figures and tools/bench/report.py renders them;
nothing else states them. Each line names where the requirement comes from."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    limit: float
    unit: str
    source: str


# A/V sync (issue 12): max |audio - video| per flash/beep pair, and the offset's linear drift.
SYNC_CLEAN_MAX_MS = 5.0
SYNC_IMPAIRED_MAX_MS = 20.0
DRIFT_MAX_MS_PER_HOUR = 5.0
# The default memory budget (DESIGN: "a hard memory budget of 50 MB by default").
MEMORY_BUDGET_MB = 50.0
# Heap allocations per frame in steady state (DESIGN: "in steady state a frame costs no heap allocation").
ALLOCATIONS_PER_FRAME = 0.0

TABLE: tuple[Target, ...] = (
    Target("A/V sync, clean run: max |A-V|", SYNC_CLEAN_MAX_MS, "ms", "issue 12"),
    Target("A/V sync, impaired run (300 ppm skew, 15 ms jitter, 700 ms mic delay, gap): max |A-V|",
           SYNC_IMPAIRED_MAX_MS, "ms", "issue 12"),
    Target("A/V drift, every run", DRIFT_MAX_MS_PER_HOUR, "ms/hour", "issue 12"),
    Target("peak RSS (VmHWM) at the default budget", MEMORY_BUDGET_MB, "MB", "DESIGN"),
    Target("heap allocations per frame in steady state", ALLOCATIONS_PER_FRAME, "per frame", "DESIGN"),
)


def sync_max_ms(impaired: bool) -> float:
    """The sync bound of a run with or without impairments."""
    return SYNC_IMPAIRED_MAX_MS if impaired else SYNC_CLEAN_MAX_MS
