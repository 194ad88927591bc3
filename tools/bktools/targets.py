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


@dataclass(frozen=True)
class Bound:
    """A benchmark target: a limit a figure must stay at or below (or, `at_least`, at or above)."""
    limit: float
    at_least: bool = False

    def met(self, value: float | None) -> bool | None:
        """True/False, or None when the figure was not measured."""
        if value is None:
            return None
        return value >= self.limit if self.at_least else value <= self.limit


# The benchmark report's targets (BENCHMARKS.md "Targets"): tools/bench/report.py renders these
# verdicts and judges nothing itself.
PIPELINE_CPU_VS_FLOOR = Bound(1.05)          # issue 7: pipeline CPU per frame ÷ the x264 floor's
REALTIME_CPU_VS_FFMPEG = Bound(1.0)          # issue 7: real-time 720p30 CPU ÷ ffmpeg's
REALTIME_RSS_VS_FFMPEG = Bound(0.30)         # issue 11: real-time 720p30 peak RSS ÷ ffmpeg's
PEAK_RSS_720P_MIB = Bound(32.0)              # issue 11
PEAK_RSS_1080P_MB = Bound(48.0)              # issue 3: ≤ 48 MB at the default budget, never 50
PSNR_VS_FFMPEG_DB = Bound(-0.35, at_least=True)  # issue 11: within 0.35 dB of ffmpeg veryfast
CABI_CPU_VS_CLI = Bound(1.01)                # issue 13
PIPEWIRE_VMHWM_MIB = {"1280x720-720p": Bound(40.0), "2560x1440-720p": Bound(40.0),
                      "3840x2160-1080p": Bound(48.0)}   # issue 11
PRODUCER_BUFFERS_FLAT_MIB = Bound(1.0)       # issue 11: a producer insisting on 8 buffers costs ≤ 1 MiB more
BENCH_ALLOCATIONS_PER_FRAME = Bound(0.05)    # issue 3's benchmark row (the tests assert 0: ALLOCATIONS_PER_FRAME)


def latency_bound_ms(fps: float, encode_ms: float | None) -> float | None:
    """Issue 7's capture-to-socket p99 bound: one frame interval plus the encode time."""
    return None if encode_ms is None else 1000.0 / fps + encode_ms


@dataclass(frozen=True)
class SyncVerdict:
    """A benchmark A/V sync case judged: the checker's own verdict, then the bound and drift target."""
    ok: bool | None
    max_exceeded: bool
    drift_exceeded: bool


def sync_verdict(checker_ok: bool | None, max_abs_ms: float | None, drift_ms_per_hour: float | None,
                 tolerance_ms: float) -> SyncVerdict:
    """Met when the checker passed, max |A-V| is within `tolerance_ms` and the drift within the target
    (None when the checker gave no verdict)."""
    if checker_ok is None:
        return SyncVerdict(None, False, False)
    over = bool(checker_ok) and max_abs_ms is not None and max_abs_ms > tolerance_ms
    drift = bool(checker_ok) and drift_ms_per_hour is not None and abs(drift_ms_per_hour) > DRIFT_MAX_MS_PER_HOUR
    return SyncVerdict(bool(checker_ok) and not over and not drift, over, drift)
