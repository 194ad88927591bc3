#!/usr/bin/env python3
"""BENCHMARKS.md and docs/bench/*.png from docs/bench/results.json (written by tools/bench/run.py).

Every figure in the report comes from results.json; nothing is hard-coded except the targets,
which are quoted from the issues.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import statistics
from pathlib import Path

from bktools import plan as memplan
from bktools import targets

REPO = Path(__file__).resolve().parents[2]
# The A/V sync cases' targets (max |A-V| ms) from the one table (bktools.targets): a is clean,
# b and c are impaired.
AVSYNC_TARGET_MS = {"a": targets.sync_max_ms(impaired=False), "b": targets.sync_max_ms(impaired=True),
                    "c": targets.sync_max_ms(impaired=True)}
DRIFT_TARGET = targets.DRIFT_MAX_MS_PER_HOUR


def avsync_tolerance(slug: str, case: dict) -> float:
    """The bound a sync case is judged by: issue 12's target, or the checker's own if tighter."""
    return min(case["tolerance_ms"], AVSYNC_TARGET_MS.get(slug, case["tolerance_ms"]))
MB = 1e6
MIB = 2 ** 20
MIB = float(1 << 20)


def provenance(r: dict, section: str) -> str:
    """The commit and load a section was measured at, from results.json (never a fixed sentence)."""
    sm = (r.get("section_meta") or {}).get(section)
    if sm:
        return (f"*Measured at commit `{sm.get('commit')}`, {sm.get('started')} to {sm.get('finished')}; "
                f"load average `{sm.get('loadavg_start')}` → `{sm.get('loadavg_end')}` on {sm.get('nproc')} cores.*")
    own = r.get(section) or {}
    load = (f"load average `{own['loadavg_start']}` → `{own.get('loadavg_end', '?')}`"
            if isinstance(own, dict) and own.get("loadavg_start") else "this section's load was not recorded by that run")
    rerun = (r.get("section_runs") or {}).get(section)
    if rerun:
        return f"*Measured at commit `{rerun.get('commit')}` (finished {rerun.get('finished')}); {load}.*"
    m = r.get("machine") or {}
    return (f"*Measured in the full run at commit `{m.get('git_commit', '?')}`; this section's load was not "
            "recorded by that run (the full run's is at the top).*")


def med(s: dict | None):
    return None if not s else s.get("median")


def fmt(s: dict | None, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
    """'median (min–max)' of a summary, or 'n/a'."""
    if not s or s.get("median") is None:
        return "n/a"
    m, lo, hi = s["median"] / scale, s["min"] / scale, s["max"] / scale
    if s.get("n", 1) <= 1 or abs(hi - lo) < 10 ** -digits:
        return f"{m:.{digits}f}{unit}"
    return f"{m:.{digits}f}{unit} ({lo:.{digits}f}–{hi:.{digits}f})"


def summary_of(vals: list) -> dict | None:
    """The run.py summary shape ({median, min, max, n}) of raw values, or None."""
    if not vals:
        return None
    import statistics
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def num(x, digits: int = 1, unit: str = "") -> str:
    return "n/a" if x is None else f"{x:.{digits}f}{unit}"


def plots(r: dict, outdir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    fl = (r.get("floor") or {}).get("by_res") or {}
    if fl:
        names = list(fl)
        x = range(len(names))
        f = [med(fl[n]["floor_cpu_ms_per_frame"]) or 0 for n in names]
        p = [med(fl[n]["pipeline_cpu_ms_per_frame"]) or 0 for n in names]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar([i - 0.2 for i in x], f, 0.4, label="x264 floor")
        ax.bar([i + 0.2 for i in x], p, 0.4, label="pipeline (convert+encode+FLV)")
        ax.set_xticks(list(x), names)
        ax.set_ylabel("CPU ms per frame (median)")
        ax.set_title("Floor vs pipeline, veryfast, full speed")
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "floor_pipeline.png", dpi=100)
        plt.close(fig)
        made.append("floor_pipeline.png")
    rt = r.get("realtime") or {}
    if rt:
        names = list(rt)
        x = range(len(names))
        for key, ylabel, fname, scale in (("cpu_percent", "CPU % of one core (median)", "realtime_cpu.png", 1),
                                          ("peak_rss_bytes", "peak RSS, MB (median)", "realtime_rss.png", MB)):
            o = [(med(rt[n][f"ours_{key}"]) or 0) / scale for n in names]
            t = [(med(rt[n][f"ffmpeg_{key}"]) or 0) / scale for n in names]
            fig, ax = plt.subplots(figsize=(7, 4))
            ax.bar([i - 0.2 for i in x], o, 0.4, label="broadcast")
            ax.bar([i + 0.2 for i in x], t, 0.4, label="ffmpeg")
            if key == "peak_rss_bytes":
                ax.axhline(50, color="r", ls="--", lw=1, label="50 MB budget")
            ax.set_xticks(list(x), names)
            ax.set_ylabel(ylabel)
            ax.set_title(f"Real-time push to nginx-rtmp: {ylabel.split(',')[0].split(' (')[0]}")
            ax.legend()
            ax.grid(axis="y", alpha=0.3)
            fig.tight_layout()
            fig.savefig(outdir / fname, dpi=100)
            plt.close(fig)
            made.append(fname)
    sc = ((r.get("scale") or {}).get("by_count")) or {}
    if sc:
        ns = list(sc)
        fig, ax1 = plt.subplots(figsize=(7, 4))
        ax1.plot([int(n) for n in ns], [med(sc[n]["cpu_percent_per_session"]) or 0 for n in ns], "o-",
                 label="CPU % per session")
        ax1.set_xlabel("sessions in one process (360p30)")
        ax1.set_ylabel("CPU % per session")
        ax2 = ax1.twinx()
        ax2.plot([int(n) for n in ns], [(med(sc[n]["rss_per_session_bytes"]) or 0) / MB for n in ns], "s--",
                 color="C1", label="RSS per session (MB)")
        ax2.set_ylabel("RSS per session, MB")
        ax1.set_xticks([int(n) for n in ns])
        fig.legend(loc="upper right")
        ax1.set_title("Concurrent sessions")
        ax1.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "scale.png", dpi=100)
        plt.close(fig)
        made.append("scale.png")
    lv = ((r.get("levers") or {}).get("cases")) or {}
    if lv:
        items = [(k, v) for k, v in lv.items() if med(v.get("peak_rss_bytes"))]
        fig, ax = plt.subplots(figsize=(8, 4.5))
        ax.barh([k for k, _ in items], [med(v["peak_rss_bytes"]) / MB for _, v in items])
        ax.axvline(50, color="r", ls="--", lw=1, label="50 MB budget")
        if "baseline" in lv and med(lv["baseline"].get("peak_rss_bytes")):
            ax.axvline(med(lv["baseline"]["peak_rss_bytes"]) / MB, color="k", lw=0.8, label="720p30 baseline")
        ax.set_xlabel("peak RSS, MB (median)")
        ax.set_title("Memory levers (test source, pushed to nginx-rtmp)")
        ax.invert_yaxis()
        ax.legend(loc="lower right")
        ax.grid(axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "levers.png", dpi=100)
        plt.close(fig)
        made.append("levers.png")
    for i, x in enumerate(((r.get("shaped") or {}).get("rows")) or []):
        if not x or "samples" not in x:
            continue
        ep = x["episode"]
        t = [p[0] for p in x["samples"]]
        fig, ax = plt.subplots(figsize=(9, 3.6))
        ax.plot(t, [p[2] for p in x["samples"]], color="tab:gray", label="link delivered (kbit/s)")
        ax.plot(t, [p[3] for p in x["samples"]], color="tab:blue", alpha=0.6, label="sent (kbit/s)")
        ax.plot(t, [p[1] for p in x["samples"]], color="tab:red", lw=2, label="video target (kbps)")
        ax.axvspan(ep["onset_s"], ep["release_s"], color="tab:orange", alpha=0.08)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("kbit/s")
        ax.set_ylim(0, 3750)
        ax.set_title(x["name"])
        ax.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        fig.savefig(outdir / f"shaped_{i}.png", dpi=100)
        plt.close(fig)
        made.append(f"shaped_{i}.png")
    return made


def report(r: dict, made: list[str], results_rel: str) -> str:
    """BENCHMARKS.md: each section rendered by its own function, in this order. The sections only
    render; every verdict in them comes from bktools.targets."""
    L: list[str] = []
    w = L.append
    _header(r, w, made, results_rel)
    for section in SECTIONS:
        section(r, w, made)
    return "\n".join(L)


def _header(r: dict, w, made: list[str], results_rel: str) -> None:
    """The title, how to read it, the machine."""
    m = r.get("machine", {})
    meta = r.get("meta", {})
    cfg = r.get("config", {})
    w("# Benchmarks")
    w("")
    w(f"Generated by `scripts/bench` from [`{results_rel}`]({results_rel}) (raw numbers of every run). "
      "Regenerate with `scripts/bench` (full run) or `scripts/bench --quick` (smoke test, 1 run each); "
      "`scripts/bench --report-only` redraws this file from the existing results.")
    w("")
    w("**Figures are `median (min–max)` over the runs stated per section.** The load was not controlled; "
      f"the load average was `{m.get('loadavg_start', '?')}` at the start of the full run and "
      f"`{meta.get('loadavg_end', '?')}` at its end, and each section states its own commit and load. CPU figures are CPU time "
      "(user + system, from `getrusage`/`wait4`) rather than wall time, which a busy machine inflates less; "
      "CPU % = CPU time ÷ wall time of the whole process run (startup included).")
    w("")
    el = meta.get("elapsed_s")
    w(f"Run started {meta.get('started', '?')}, finished {meta.get('finished', '?')}"
      + (f", total {el / 60:.1f} min" if el else "") + (" — **quick mode (smoke test)**" if cfg.get("quick") else "") + ".")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    for k, label in (("cpu_model", "CPU"), ("cores", "cores"), ("mem_total", "memory"), ("kernel", "kernel"),
                     ("debian", "Debian"), ("swift", "Swift"), ("ffmpeg", "ffmpeg"), ("x264", "libx264"),
                     ("vo_aacenc", "vo-aacenc"), ("nginx", "nginx"), ("nginx_rtmp", "nginx-rtmp"),
                     ("broadcast", "broadcast"), ("git_commit", "commit"), ("date", "date")):
        w(f"| {label} | {str(m.get(k, 'n/a')).replace('|', '/')} |")
    if m.get("git_dirty_files") not in (None, "0"):
        w(f"| working tree | {m.get('git_dirty_files')} tracked files modified by engineers working in parallel at run time |")
    w("")
    runs = r.get("section_runs") or {}
    if runs:
        w("Sections re-measured after the full run (`scripts/bench --sections ...`); the others are from the full run above:")
        w("")
        for sec, info in runs.items():
            w(f"- `{sec}`: {info.get('finished')} at commit {info.get('commit')}")
        w("")


def _targets(r: dict, w, made: list[str]) -> None:
    """Targets."""
    fl = (r.get("floor") or {}).get("by_res") or {}
    rt = r.get("realtime") or {}
    lv = ((r.get("levers") or {}).get("cases")) or {}
    av = ((r.get("avsync") or {}).get("cases")) or {}
    w("## Targets (issues 7, 3, 4, 11, 12, 13) and where we stand")
    w("")
    w("| Measure | Target | Measured | Status |")
    w("|---|---|---|---|")

    def status(ok, miss_text=""):
        if ok is None:
            return "not measured"
        return "**met**" if ok else f"**missed**{(' — ' + miss_text) if miss_text else ''}"

    for res in ("480p", "720p", "1080p"):
        e = fl.get(res)
        if not e:
            continue
        f, p = med(e["floor_cpu_ms_per_frame"]), med(e["pipeline_cpu_ms_per_frame"])
        ratio = p / f if f and p else None
        t = targets.PIPELINE_CPU_VS_FLOOR
        w(f"| Pipeline CPU at full speed, {res} (issue 7) | ≤ {t.limit:g} × x264 floor | "
          f"{num(ratio, 3)} × ({num(p, 2)} vs {num(f, 2)} ms/frame) | "
          f"{status(t.met(ratio), f'by {num((ratio or 0) * 100 - t.limit * 100, 1)} points')} |")
    e = rt.get("720p30")
    if e:
        cr, rr = e.get("cpu_ratio"), e.get("rss_ratio")
        w(f"| Real-time 720p30 CPU (issue 7) | ≤ 1.0 × ffmpeg | {num(cr, 2)} × "
          f"({num(med(e['ours_cpu_percent']))} % vs {num(med(e['ffmpeg_cpu_percent']))} %) | "
          f"{status(targets.REALTIME_CPU_VS_FFMPEG.met(cr), f'by {num(((cr or 0) - 1) * 100, 0)} %')} |")
        w(f"| Real-time 720p30 RSS, same input files (issue 11) | ≤ 0.30 × ffmpeg | {num(rr, 2)} × "
          f"({num((med(e['ours_peak_rss_bytes']) or 0) / MB)} vs {num((med(e['ffmpeg_peak_rss_bytes']) or 0) / MB)} MB) | "
          f"{status(targets.REALTIME_RSS_VS_FFMPEG.met(rr))} |")
    for name, e in rt.items():
        p99 = med(e["ours_latency_p99_ms"])
        fres = fl.get(e["res"])
        enc = med(fres["floor_wall_ms_per_frame"]) if fres else None
        # The floor's wall time per frame at full speed stands in for the encode time (see note).
        enc_scaled = enc
        bound = targets.latency_bound_ms(e["fps"], enc_scaled)
        miss = f"by {num((p99 or 0) - (bound or 0), 1)} ms" if p99 is not None and bound is not None else ""
        w(f"| Capture-to-socket p99, {name} (issue 7) | ≤ frame interval + encode time = {num(bound, 1)} ms "
          f"| {num(p99, 1)} ms (p50 {num(med(e['ours_latency_p50_ms']), 1)}) "
          f"| {status(None if bound is None else targets.Bound(bound).met(p99), miss)} |")
    b720 = lv.get("baseline")
    if b720 and med(b720.get("peak_rss_bytes")):
        v = med(b720["peak_rss_bytes"]) / MB
        vm = med(b720["peak_rss_bytes"]) / MIB
        w(f"| Peak RSS 720p30 H.264 + AAC, test source (issue 11) | ≤ 32 MiB | {fmt(b720['peak_rss_bytes'], MIB, 1, ' MiB')} | "
          f"{status(targets.PEAK_RSS_720P_MIB.met(vm), f'by {vm - 32:.1f} MiB')} |")
    b1080 = lv.get("res_1080p")
    if b1080 and med(b1080.get("peak_rss_bytes")):
        v = b1080["peak_rss_bytes"]["max"] / MB
        preset = "see memory plan below"
        plan = ((r.get("levers") or {}).get("memory_plans") or {}).get("1080p", "")
        # The plan's "x264 configuration" line names what the budget chose (the first line only the request).
        chosen = memplan.parse_plan(plan).x264 or ""
        first = plan.splitlines()[0] if plan else ""
        if chosen:
            preset = chosen
        elif "x264 " in first:
            preset = first.split("x264 ")[1].split(",")[0]
        w(f"| Peak RSS 1080p30, default 50M budget (issue 3) | ≤ 48 MB, never 50 MB | "
          f"{fmt(b1080['peak_rss_bytes'], MB, 1, ' MB')}, x264 {preset} | {status(targets.PEAK_RSS_1080P_MB.met(v), f'max {v:.1f} MB')} |")
    for res, e in (r.get("quality") or {}).items():
        o, f = e.get("ours_psnr") or {}, e.get("ffmpeg_psnr") or {}
        if o and f:
            d = o["mse_psnr_avg"] - f["mse_psnr_avg"]
            peak = e.get("ours_peak_rss_bytes")
            w(f"| PSNR under the default budget, {e.get('res', res)} {e.get('content', 'life')}, vs ffmpeg veryfast (issues 11, 23) | within 0.35 dB | "
              f"{d:+.2f} dB ({e.get('encoder_choice') or '?'}, {num(peak / MIB if peak else None, 1, ' MiB')}, "
              f"{(e.get('ours_drops') or {}).get('encoder_busy', '?')} encoder_busy drops) | "
              f"{status(targets.PSNR_VS_FFMPEG_DB.met(d), f'by {-0.35 - d:.2f} dB')} |")
    em = r.get("embedding") or {}
    if em.get("cpu_ratio"):
        cr = em["cpu_ratio"]
        w(f"| C-ABI pipeline CPU vs the CLI, same input (issue 13) | ≤ 1.01 × | {cr:.3f} × "
          f"({fmt(em['capi_cpu_s'], 1, 2)} vs {fmt(em['cli_cpu_s'], 1, 2)} CPU s) | {status(targets.CABI_CPU_VS_CLI.met(cr), f'by {(cr - 1.01) * 100:.1f} points')} |")
    cap = {k: v for k, v in (r.get("capture") or {}).items() if isinstance(v, dict)}
    for name, bound in targets.PIPEWIRE_VMHWM_MIB.items():
        target = f"{bound.limit:g}"
        e = cap.get(name)
        if e and e["vmhwm_mib"].get("max") is not None:
            v = e["vmhwm_mib"]["max"]
            w(f"| PipeWire {e['size']} desktop → {e['res']}, desktop + mic audio (issue 11) | ≤ {target} MiB VmHWM | "
              f"{fmt(e['vmhwm_mib'], 1, 1, ' MiB')} (plan {num(e.get('plan_total_mb'), 1)} MiB) | "
              f"{status(bound.met(v), f'max {v:.1f} MiB')} |")
    two, eight = cap.get("2560x1440-720p"), cap.get("2560x1440-720p-8buf")
    if two and eight and med(two["vmhwm_mib"]) and med(eight["vmhwm_mib"]):
        d = med(eight["vmhwm_mib"]) - med(two["vmhwm_mib"])
        w(f"| Producer insisting on 8 buffers vs default, 1440p desktop (issue 11) | flat | {d:+.1f} MiB | "
          f"{status(targets.PRODUCER_BUFFERS_FLAT_MIB.met(d), f'{d:+.1f} MiB')} |")
    for res in ("480p", "720p", "1080p"):
        e = fl.get(res)
        if e and e.get("alloc_run", {}).get("allocations_per_frame") is not None:
            a = e["alloc_run"]["allocations_per_frame"]
            t = targets.BENCH_ALLOCATIONS_PER_FRAME
            w(f"| Steady-state allocations per frame, {res} with audio (issue 3) | ≤ {t.limit:g} | {a:.3f} | {status(t.met(a))} |")
    for slug, c in av.items():
        s = (c.get("analysis") or {}).get("summary") or {}
        tol = avsync_tolerance(slug, c)   # and drift <= 5 ms/h for every case
        ok = (c.get("analysis") or {}).get("ok")
        extra = f" and drift ≤ {DRIFT_TARGET:g} ms/hour" + ("" if slug == "a" else ", no negative/repeated timestamps, no audio gaps")
        sv = targets.sync_verdict(ok, s.get("max_abs_ms"), s.get("drift_ms_per_hour"), tol)
        why = ([f"max {s['max_abs_ms']:.1f} ms > {tol:g} ms"] if sv.max_exceeded else []) + \
              ([f"drift {s['drift_ms_per_hour']:.1f} ms/hour"] if sv.drift_exceeded else [])
        okd = sv.ok
        reasons = "; ".join(((c.get("analysis") or {}).get("reasons") or []) + why).replace("|", "\\|")
        w(f"| A/V sync ({slug}) {c['label']} (issues 4, 12) | max \\|A−V\\| ≤ {tol:g} ms{extra} | "
          f"max {num(s.get('max_abs_ms'))} ms, mean {num(s.get('mean_ms'))} ms, drift {num(s.get('drift_ms_per_hour'))} ms/h | "
          f"{status(okd, reasons)} |")
    w("")
    w("Where the time goes past the floor: [`docs/bench/profile.md`](docs/bench/profile.md) "
      "(`tools/bench/profile.sh`, callgrind instruction counts of the full pipeline grouped by object).")
    w("")
    w("Notes on the targets:")
    w("")
    w("- *Encode time* in the latency bound is the x264 floor's wall time per frame at full speed (median, same "
      "resolution, 2 sliced threads); `broadcast` does not export a per-frame encode-time p99 yet, so the bound is "
      "an approximation of \"one frame interval + the p99 encode time\".")
    w("- Capture-to-socket latency runs from the video buffer's capture PTS to the last byte of its tag written "
      "to the socket. It includes the interleaver's wait for audio: a video tag can only leave once audio up to "
      "its timestamp has been encoded, and AAC's 1600-sample priming shift plus a 1024-sample frame hold audio "
      "back by up to 2624 / 48000 s ≈ 55 ms (the bounded wait is ≤ 150 ms). That wait, not the encoder, "
      "dominates p50/p99 when they exceed the bound.")
    w("- The peer comparison pins our preset to veryfast at every resolution (`--memory-budget 200M --preset "
      "veryfast`) so both encoders do the same work; at 1080p the default 50 MB budget picks a lighter preset "
      "for us instead (Memory section).")
    w("")


def _floor(r: dict, w, made: list[str]) -> None:
    """Floor."""
    cfg = r.get("config", {})
    fl = (r.get("floor") or {}).get("by_res") or {}
    if fl:
        f = r["floor"]
        w("## 1. x264 floor vs our pipeline (full speed)")
        w("")
        w(provenance(r, "floor"))
        w("")
        w(f"{cfg.get('runs', '?')} runs each (floor and pipeline alternated), {f['frames']} measured frames after "
          f"{f['warmup']} warm-up frames, x264 veryfast/zerolatency, 2 sliced threads, 1 ref, VBV at the default "
          "bitrate. *Floor*: x264 alone on I420 frames already in memory. *Pipeline*: BGRx frames → libyuv → x264 → "
          "FLV tags → discard sink, through `BroadcastSession` (video only). CPU ms/frame is process CPU time over "
          "the measured frames. Allocations: one extra pipeline run with audio lanes (app F32 48 kHz stereo + mic "
          "S16 44.1 kHz mono through the resampler and mixer) under `LD_PRELOAD=allocshim.so`, counting "
          "malloc/calloc/realloc/memalign calls over the measured frames.")
        w("")
        w("| res | floor CPU ms/frame | pipeline CPU ms/frame | overhead (medians) | overhead per run pair | floor fps | pipeline fps | allocs/frame | startup allocs |")
        w("|---|---|---|---|---|---|---|---|---|")
        for res, e in fl.items():
            a = e.get("alloc_run") or {}
            w(f"| {res} | {fmt(e['floor_cpu_ms_per_frame'], 1, 2)} | {fmt(e['pipeline_cpu_ms_per_frame'], 1, 2)} | "
              f"{num(e.get('overhead_percent'), 1, ' %')} | {fmt(e.get('overhead_percent_paired'), 1, 1, ' %')} | "
              f"{fmt(e['floor_fps'], 1, 0)} | {fmt(e['pipeline_fps'], 1, 0)} | "
              f"{num(a.get('allocations_per_frame'), 3)} | {a.get('startup_allocations', 'n/a')} |")
        w("")
        if "floor_pipeline.png" in made:
            w("![floor vs pipeline](docs/bench/floor_pipeline.png)")
            w("")
        w("The pipeline's CPU per frame includes the BGRx→I420 conversion (libyuv), the FLV tag building and "
          "the lane/sender threads; a negative overhead means the difference is inside the run-to-run noise "
          "of this shared machine (x264's sliced threads make its CPU time itself vary by several %).")
        w("")


def _real_time(r: dict, w, made: list[str]) -> None:
    """Real time."""
    cfg = r.get("config", {})
    rt = r.get("realtime") or {}
    if rt:
        w("## 2. Real-time pushes to nginx-rtmp: broadcast vs ffmpeg")
        w("")
        w(provenance(r, "realtime"))
        w("")
        e0 = next(iter(rt.values()))
        w(f"{cfg.get('rt_runs', '?')} runs per tool and configuration, {e0['seconds']:.0f} s each, alternating "
          "broadcast and ffmpeg. "
          + ("**Fewer than 5 runs**: 4 configurations × 2 tools × 5 runs × 60 s would take 40 minutes on their "
             "own, taking the whole benchmark well past an hour; the spread (min–max) is shown so the noise is visible. "
             if (cfg.get("rt_runs") or 5) < 5 else "")
          + "Both tools read **identical input files**: a Y4M of ffmpeg's `testsrc2` pattern (generated once per "
          "configuration) and a 440 Hz sine as s16le 48 kHz stereo PCM, both paced to real time (`-re` for "
          "ffmpeg; `--source y4m:FILE --pcm FILE` pace themselves). Same x264 settings: veryfast, zerolatency, "
          "high profile, bitrate = maxrate = bufsize (the default for the resolution), keyint = min-keyint = 2 s, "
          "no scene cut, no B-frames, 1 ref, 2 sliced threads, rc-lookahead 0. Audio AAC-LC 128 kbps: ours is "
          "libvo-aacenc, ffmpeg's is its native `aac` encoder (Debian's ffmpeg has no libvo-aacenc/fdk) — the one "
          "setting that is not identical. CPU and peak RSS (VmHWM) of the whole process from "
          "`/usr/bin/time` + `wait4`; the nginx process is not counted for either.")
        w("")
        w("| run | kbps (video target) | ours CPU % | ffmpeg CPU % | CPU ratio | ours peak RSS MB | ffmpeg peak RSS MB | RSS ratio | latency p50 ms | latency p99 ms | our drops |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for name, e in rt.items():
            drops = e.get("ours_drops") or []
            total = []
            for d in drops:
                total.append(sum(d.values()) if isinstance(d, dict) else None)
            w(f"| {name} | {fmt(e['ours_kbps'], 1, 0)} ({e['video_kbps']}) | {fmt(e['ours_cpu_percent'])} | "
              f"{fmt(e['ffmpeg_cpu_percent'])} | {num(e.get('cpu_ratio'), 2)} | "
              f"{fmt(e['ours_peak_rss_bytes'], MB)} | {fmt(e['ffmpeg_peak_rss_bytes'], MB)} | {num(e.get('rss_ratio'), 2)} | "
              f"{fmt(e['ours_latency_p50_ms'])} | {fmt(e['ours_latency_p99_ms'])} | {total} |")
        w("")
        remeasured = [f"{n} at {e['measured']['commit']} ({e['measured']['finished']}, {e['measured']['runs']} × "
                      f"{e['measured']['seconds']:.0f} s)" for n, e in rt.items() if e.get("measured")]
        if remeasured:
            w("Re-measured alone (`--rt-configs`): " + "; ".join(remeasured) + ". The other rows are from the "
              "section's earlier full run, whose figures a configuration's own re-run does not change.")
            w("")
        w("Ratios are ours ÷ ffmpeg of the medians (CPU ratio from CPU seconds). ffmpeg has no capture-to-socket "
          "figure. Exit codes — ours: " + ", ".join(f"{n} {e.get('ours_rc')}" for n, e in rt.items())
          + "; ffmpeg: " + ", ".join(f"{n} {e.get('ffmpeg_rc')}" for n, e in rt.items()) + ".")
        w("")
        for fname, alt in (("realtime_cpu.png", "real-time CPU"), ("realtime_rss.png", "real-time peak RSS")):
            if fname in made:
                w(f"![{alt}](docs/bench/{fname})")
        w("")


def _scale(r: dict, w, made: list[str]) -> None:
    """Scale."""
    cfg = r.get("config", {})
    sc = r.get("scale") or {}
    if sc.get("by_count"):
        w("## 3. Scale: concurrent sessions in one process, and separate processes")
        w("")
        w(provenance(r, "scale"))
        w("")
        w(f"`{sc['command']}`, {cfg.get('runs', '?')} runs each: N test-source sessions at 360p30 (800 kbps, AAC), each "
          "publishing to the local nginx-rtmp. CPU % over the measurement window (after all sessions started); RSS "
          "is the process's resident set at the end of the window.")
        w("")
        w("| sessions | CPU % total | CPU % per session | RSS MB | RSS per session MB | peak RSS MB | drops per run |")
        w("|---|---|---|---|---|---|---|")
        for n, e in sc["by_count"].items():
            w(f"| {n} | {fmt(e['cpu_percent'])} | {fmt(e['cpu_percent_per_session'])} | {fmt(e['rss_bytes'], MB)} | "
              f"{fmt(e['rss_per_session_bytes'], MB)} | {fmt(e['peak_rss_bytes'], MB)} | {e.get('drops')} |")
        w("")
        bp = sc.get("by_processes") or {}
        if bp:
            w(f"The same streams as separate processes (`{sc.get('process_command')}`), started together, each "
              "measured on its own (CPU time and VmHWM from `wait4` and `/usr/bin/time`):")
            w("")
            w("| processes | CPU % total | CPU % per stream | peak RSS per stream MB | exits |")
            w("|---|---|---|---|---|")
            for n, e in bp.items():
                w(f"| {n} | {fmt(e['cpu_percent_total'])} | {fmt(e['cpu_percent_per_stream'])} | "
                  f"{fmt(e['peak_rss_per_stream_bytes'], MB)} | {e.get('exits')} |")
            w("")
        if "scale.png" in made:
            w("![scale](docs/bench/scale.png)")
            w("")

    fl_md = fleet(r)
    if fl_md:
        w("## Fleet math (also in docs/scaling.md)")
        w("")
        w("One stream's CPU (real-time section, 720p30 etc. from Y4M at veryfast) and peak RSS (levers section, "
          "default budget) turned into streams per core and per GiB; the 64 MiB column is the pod limit of "
          "`deploy/kubernetes` (a 50 MB budget from the cgroup). See docs/scaling.md for the method.")
        w("")
        w(fl_md)
        w("")


def _levers(r: dict, w, made: list[str]) -> None:
    """Levers."""
    cfg = r.get("config", {})
    lv = ((r.get("levers") or {}).get("cases")) or {}
    if lv or r.get("trivial"):
        w("## 4. Memory: process-level levers and the 50 MB budget")
        w("")
        w(provenance(r, "levers"))
        w("")
    if lv:
        lvs = r["levers"]
        base = med((lv.get("baseline") or {}).get("peak_rss_bytes"))
        w(f"Test source (`--source test`: video + app + mic audio, AAC), pushed to nginx-rtmp, "
          f"{lvs['seconds']:.0f} s per run, {cfg.get('runs', '?')} runs each; peak RSS = VmHWM of the process. "
          "One lever changed at a time against the 720p30 baseline. Δ = case − baseline: positive means the "
          "shipped default saves that much; negative means the alternative would use less memory (at a cost: "
          "one x264 thread halves encode parallelism, a faster preset lowers quality per bit).")
        w("")
        w("| case | command | peak RSS MB | Δ vs baseline MB | CPU % |")
        w("|---|---|---|---|---|")
        for slug, e in lv.items():
            if e.get("skipped"):
                w(f"| {e['label']} | — | skipped: {e['skipped']} | | |")
                continue
            v = med(e["peak_rss_bytes"])
            d = (v - base) / MB if v and base and slug != "baseline" and not slug.startswith("res_") else None
            w(f"| {e['label']} | `{e['command']}` | {fmt(e['peak_rss_bytes'], MB)} | "
              f"{'' if d is None else f'{d:+.1f}'} | {fmt(e['cpu_percent'])} |")
        w("")
        w("Levers that are facts of the build rather than switches: **rc-lookahead 0** and **sliced threads** are "
          "always set (zerolatency; `X264Encoder`), **no full Foundation** in BroadcastKit/BroadcastCapture "
          "(no `import Foundation` in either; the trivial-program table below shows what Foundation would cost), "
          "and **nothing per-frame is left to the page cache** (`--record` writes through `FLVFileSink`, which "
          "drops written pages from the cache; covered by its mincore test, not measured here).")
        w("")
        if "levers.png" in made:
            w("![levers](docs/bench/levers.png)")
            w("")
        plans = lvs.get("memory_plans") or {}
        if plans:
            w("Memory plans (`broadcast --print-memory-plan --res R`, default 50M budget):")
            w("")
            w("```")
            for res, text in plans.items():
                w(f"$ broadcast --print-memory-plan --res {res}")
                w("\n".join(l for l in text.splitlines() if not l.startswith("broadcast:")))
                w("")
            w("```")
            w("")
    em = r.get("embedding") or {}
    if em:
        w("## Embedding: the C ABI against the CLI")
        w("")
        w(provenance(r, "embedding"))
        w("")
        w(f"The same job both ways, {em['seconds']:.0f} s of {em['res']}{em['fps']} from the same Y4M + PCM files to nginx-rtmp, "
          f"{cfg.get('rt_runs', '?')} runs each: the `broadcast` CLI (`--source y4m:` + `--pcm`), and "
          "`Benchmarks/c/y4m_push.c`, a C program built with nothing but `pkg-config --cflags --libs broadcastkit` "
          "from a `scripts/install` prefix, calling `bk_session_process_video`/`_audio` with I420 frames at the "
          "file's rate. CPU time and VmHWM of each process from `wait4` and `/usr/bin/time`.")
        w("")
        w("| | CPU s | peak RSS MB | frames sent | exits |")
        w("|---|---|---|---|---|")
        w(f"| CLI | {fmt(em['cli_cpu_s'], 1, 2)} | {fmt(em['cli_peak_rss_bytes'], MB)} | {em['cli_frames_sent']} | {em['cli_rc']} |")
        w(f"| C ABI | {fmt(em['capi_cpu_s'], 1, 2)} | {fmt(em['capi_peak_rss_bytes'], MB)} | {em['capi_frames_sent']} | {em['capi_rc']} |")
        w("")
        w(f"CPU ratio C ABI ÷ CLI (medians): {num(em.get('cpu_ratio'), 3)}. Commands: `{em['cli_cmd']}`; `{em['capi_cmd']}`.")
        w("")
    cap = {k: v for k, v in (r.get("capture") or {}).items() if isinstance(v, dict)}
    if cap:
        w("## Memory: PipeWire screen capture")
        w("")
        w(provenance(r, "capture"))
        w("")
        w("`--source screen-node` capturing the project's synthetic desktop (`pw-test-screen`, BGRx, moving "
          "content) at the size given, with desktop audio and a mic, pushed to nginx-rtmp "
          f"({next(iter(cap.values()))['seconds']:.0f} s per run). VmHWM is read from `/proc/PID/status` "
          "by `tools/pw_memory_run.py`, so the shared capture buffers count (a cgroup would charge them to the "
          "producer). The split is the `Rss*` figures at the largest sample; the plan is `--print-memory-plan` "
          "for the same arguments (MB = MiB there).")
        w("")
        w("| desktop → output | producer buffers | VmHWM MiB | anon | file | shared (capture) | plan total | "
          "plan capture line | CPU % |")
        w("|---|---|---|---|---|---|---|---|---|")
        for e in cap.values():
            w(f"| {e['size']} → {e['res']} | {e['buffers']} | {fmt(e['vmhwm_mib'], 1, 1)} | {fmt(e['anon_mib'], 1, 1)} | "
              f"{fmt(e['file_mib'], 1, 1)} | {fmt(e['shmem_mib'], 1, 1)} | {num(e.get('plan_total_mb'), 1)} | "
              f"{num(e.get('plan_capture_mb'), 1)} | {fmt(e['cpu_percent'], 1, 1)} |")
        w("")
        for e in cap.values():
            w(f"- `{e['command']}` (exits {e['exits']}, frames produced {e['produced']})")
        w("")
        sc_rows = (r.get("capture") or {}).get("scaler") or []
        if sc_rows:
            w("The scaling step alone, CPU ms per frame (BGRx in, I420 out): `FrameConverter`'s striped "
              "`ARGBStripeScaler` (reads a stripe of the shared buffer at a time, allocates nothing) against "
              "libyuv's whole-frame `ARGBScale` bilinear + `ARGBToI420` (which allocates per call and needs an "
              "output-sized ARGB buffer and the whole source resident):")
            w("")
            w("| source → output | ours ms/frame | libyuv whole frame ms/frame | command |")
            w("|---|---|---|---|")
            for j in sc_rows:
                w(f"| {j['src_width']}x{j['src_height']} → {j['width']}x{j['height']} | {j['ours_cpu_ms_per_frame']:.2f} | "
                  f"{j['libyuv_whole_frame_cpu_ms_per_frame']:.2f} | `{j['command']}` |")
            w("")
    if r.get("trivial"):
        w("Peak RSS of a trivial Swift program (`print`; the Foundation variants build one `Data`), "
          f"{cfg.get('runs', '?')} runs each, measured in this run:")
        w("")
        w("| build | peak RSS MB |")
        w("|---|---|")
        for t in r["trivial"]:
            w(f"| {t['variant']} | {fmt(t.get('peak_rss_bytes'), MB, 1) if 'peak_rss_bytes' in t else 'build failed'} |")
        w("")


def _destinations(r: dict, w, made: list[str]) -> None:
    """Destinations."""
    ds = r.get("destinations") or {}
    if ds.get("rows"):
        w("## One encode, several destinations (issue 14)")
        w("")
        w(provenance(r, "destinations"))
        w("")
        w(f"{ds['setup']}, {ds['seconds']} s per run: a separate ffmpeg (not measured) renders `testsrc2` with "
          "temporal noise in real time as Y4M into the measured process's stdin. `broadcast` gets one `--url` per "
          "destination; ffmpeg encodes once with libx264 veryfast at the same bitrate/VBV/GOP and 2 threads into "
          "its `tee` muxer (`onfail=ignore`). Every destination is its own nginx-rtmp. CPU % = (user + system) ÷ "
          "media seconds from `wait4`; VmHWM is `/usr/bin/time`'s `%M` (a child vforked from Python would report Python's peak); frames = what the first destination recorded "
          "(PyAV) of the frames sent. `broadcast` runs x264 for live latency (no lookahead or B-frames, the "
          "configuration its memory plan picks), ffmpeg runs libx264's veryfast defaults, so the CPU columns "
          "compare the jobs as users run them, not identical encoder settings.")
        w("")
        w("| destinations | broadcast CPU % | broadcast VmHWM MiB | broadcast frames | ffmpeg tee CPU % | "
          "ffmpeg tee VmHWM MiB | ffmpeg frames | VmHWM ratio |")
        w("|---|---|---|---|---|---|---|---|")
        for n in sorted({x["destinations"] for x in ds["rows"]}):
            def col(tool, key):
                vals = [x[key] for x in ds["rows"] if x["destinations"] == n and x["tool"] == tool and x["exit"] == 0]
                return summary_of(vals)
            b_cpu, b_hwm, f_cpu, f_hwm = col("broadcast", "cpu_percent"), col("broadcast", "vmhwm_mib"), \
                col("ffmpeg-tee", "cpu_percent"), col("ffmpeg-tee", "vmhwm_mib")
            frames = lambda tool: ", ".join(f"{x['frames']}/{x['expected_frames']}" + ("" if x["exit"] == 0 else f" (exit {x['exit']})")
                                            for x in ds["rows"] if x["destinations"] == n and x["tool"] == tool)
            ratio = med(b_hwm) / med(f_hwm) if med(b_hwm) and med(f_hwm) else None
            w(f"| {n} | {fmt(b_cpu)} | {fmt(b_hwm)} | {frames('broadcast')} | {fmt(f_cpu)} | {fmt(f_hwm)} | "
              f"{frames('ffmpeg-tee')} | {num(ratio, 2)} |")
        w("")
        w(f"Command: `{ds['command']}` (the bench section runs the same function per row). Load average "
          f"at the start `{ds.get('loadavg_start', 'not recorded')}`, at the end `{ds.get('loadavg_end', 'not recorded')}`"
          + (f"; {ds['note']}" if ds.get("note") else "") + ".")
        w("")


def _replay(r: dict, w, made: list[str]) -> None:
    """Replay."""
    cfg = r.get("config", {})
    rp = r.get("replay") or {}
    mem = rp.get("memory") or {}
    if mem:
        first = next(iter(mem.values()))
        w("## Replay ring: memory per second and clip saves (issue 16)")
        w("")
        w(provenance(r, "replay"))
        w("")
        w(f"Test-source pushes (moving pattern, default bitrate per resolution) to nginx-rtmp, {first['run_seconds']} s each, "
          f"under `--memory-budget {rp.get('budget', '?')}` so that the plan picks the same x264 configuration with and "
          f"without the ring; {cfg.get('rt_runs', '?')} pair(s) per resolution. Growth = VmHWM (`/usr/bin/time`) with "
          f"`--replay-seconds N` minus without, per second = growth ÷ N. The plan's line is `replay ring (N s)` of "
          "`--print-memory-plan` for the same arguments (MB there = MiB); it plans the VBV maximum rate over N + one GOP "
          "plus one VBV buffer, the audio, and the clip writer's sample table. \"through ring ÷ plan\" is what the run "
          "sent (= what went into the ring) over the plan's line: at ≥ 1 the ring has wrapped, so every page of it was touched.")
        w("")
        w("| res | N s | video kbps (run mean) | VmHWM without MiB | VmHWM with MiB | growth MiB | growth MiB/s | "
          "plan ring MiB | plan MiB/s | growth ÷ plan | through ring ÷ plan | x264 (plan) |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for res, e in mem.items():
            ratio = (med(e["growth_mib"]) / e["plan_ring_mib"]) if med(e["growth_mib"]) is not None and e.get("plan_ring_mib") else None
            w(f"| {res} | {e['seconds']} | {fmt(e['video_kbps'], 1, 0)} | {fmt(e['vmhwm_without_mib'])} | {fmt(e['vmhwm_with_mib'])} | "
              f"{fmt(e['growth_mib'], 1, 2)} | {fmt(e['growth_mib_per_s'], 1, 3)} | {num(e.get('plan_ring_mib'))} | "
              f"{num(e.get('plan_ring_mib_per_s'), 3)} | {num(ratio, 2)} | {fmt(e.get('written_over_plan'), 1, 2)} | "
              f"{e.get('plan_x264') or 'n/a'} |")
        w("")
        w(f"Command: `{first['command']}`.")
        w("")
    sv = rp.get("save") or {}
    if sv.get("rows"):
        w(f"Clip saves during a live {sv['res']}30 push with a full {sv['seconds']} s ring (first save "
          f"{sv['wait_before_first_s']:.0f} s after start): `save-replay {sv['seconds']} PATH` on the control socket, "
          "wall time from sending the command to the reply (the clip written, `fsync`ed and renamed). Process CPU = "
          "every thread's time on CPU (`/proc/PID/task/*/schedstat`) over the save; the same length of time without a "
          "save is measured 2 s after it; the spike is the difference. `bk-replay` is the saver thread alone.")
        w("")
        w("| save | clip s | clip MB | wall ms | process CPU ms | same time without a save ms | spike ms | bk-replay ms |")
        w("|---|---|---|---|---|---|---|---|")
        for row in sv["rows"]:
            if not row.get("ok"):
                w(f"| {row['save']} | failed: {str(row.get('error'))[:80]} | | | | | | |")
                continue
            w(f"| {row['save']} | {num(row.get('clip_s'))} | {num((row.get('clip_bytes') or 0) / MB, 1)} | "
              f"{num(row['wall_ms'], 0)} | {num(row['process_cpu_ms'], 0)} | {num(row['baseline_cpu_ms'], 0)} | "
              f"{num(row['spike_cpu_ms'], 0)} | {num(row['saver_cpu_ms'], 0)} |")
        w("")
        drops = {k: v for k, v in (sv.get("drops") or {}).items() if v}
        w(f"Drops over that push: {drops or 0}; exit {sv.get('rc')}. Command: {sv['command']}.")
        w("")


def _avsync(r: dict, w, made: list[str]) -> None:
    """Avsync."""
    av = ((r.get("avsync") or {}).get("cases")) or {}
    if av:
        a = r["avsync"]
        w("## 5. A/V sync (issues 4 and 12)")
        w("")
        w(provenance(r, "avsync"))
        w("")
        if a.get("note"):
            w(f"**Note on this run:** {a['note']}")
            w("")
        how = ("**run one after another** (`--avsync-sequential`)" if a.get("sequential")
               else "**run concurrently with each other** (three encoders sharing the cores)")
        w(f"Three {a['seconds'] / 60:.0f}-minute test-source pushes at 720p30, {how} to the local nginx-rtmp, which records each publish; each recording is "
          "analysed with `scripts/avsync REC.flv --json --plot docs/bench/avsync-X.png` (flash frames vs 1 kHz "
          "beep onsets, decoded with PyAV). Load average at the start of these runs: "
          f"`{a.get('loadavg_start', '?')}`, at the end: `{a.get('loadavg_end', '?')}`; `encoder_busy` drops mean "
          "the lane dropped video frames because the encoder was still busy (CPU starvation).")
        w("")
        w("| run | events | mean ms | max \\|A−V\\| ms | stddev ms | drift ms/hour | video ts (non-incr / neg) | audio ts (non-incr / neg) | audio gaps | tolerance | result | our drops |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for slug, c in av.items():
            an = c.get("analysis") or {}
            s = an.get("summary") or {}
            st = {x["kind"]: x for x in an.get("streams", [])}
            v, au = st.get("video", {}), st.get("audio", {})
            res = "PASS" if an.get("ok") else ("FAIL: " + "; ".join(an.get("reasons") or [c.get("analysis_error", "no analysis")[:200]])).replace("|", "\\|")
            tol = avsync_tolerance(slug, c)
            sv = targets.sync_verdict(an.get("ok"), s.get("max_abs_ms"), s.get("drift_ms_per_hour"), tol)
            if sv.drift_exceeded:
                res = f"FAIL: drift {s['drift_ms_per_hour']:.1f} ms/hour > {DRIFT_TARGET:g}"
            elif sv.max_exceeded:
                res = f"FAIL: max {s['max_abs_ms']:.1f} ms > {tol:g}"
            w(f"| ({slug}) {c['label']} | {s.get('events', 'n/a')} | {num(s.get('mean_ms'))} | {num(s.get('max_abs_ms'))} | "
              f"{num(s.get('stddev_ms'))} | {num(s.get('drift_ms_per_hour'))} | {v.get('non_increasing', 'n/a')} / {v.get('negative', 'n/a')} | "
              f"{au.get('non_increasing', 'n/a')} / {au.get('negative', 'n/a')} | {au.get('gaps', 'n/a')} "
              f"({num(au.get('gap_total_ms'))} ms) | {tol:g} ms | {res} | "
              f"{ {k: v for k, v in ((c.get('stats') or {}).get('drops') or {}).items() if v} or 0}, "
              f"late tags clamped {(c.get('stats') or {}).get('late_tags_clamped', 'n/a')} |")
        w("")
        offs = []
        for slug, c in av.items():
            s = (c.get("analysis") or {}).get("summary") or {}
            if s.get("max_abs_ms") is not None:
                tol = avsync_tolerance(slug, c)
                offs.append(f"({slug}) {s['max_abs_ms']:.1f} ms {'≤' if s['max_abs_ms'] <= tol else '>'} {tol:g} ms")
        w("Offset criterion alone: " + ", ".join(offs) + ". Any FAIL above that is not an offset comes from the "
          "timestamp/continuity checks (audio gaps, non-increasing audio timestamps).")
        starved = [slug for slug, c in av.items()
                   if any(((c.get("stats") or {}).get("drops") or {}).values())
                   or ((c.get("stats") or {}).get("late_tags_clamped") or 0) > 0]
        if starved or not a.get("sequential"):
            w("")
            w(f"Signs of CPU starvation ({', '.join(f'({x})' for x in starved) or 'none counted'}"
              f"{'' if a.get('sequential') else '; the three encoders shared 2 cores'}): `encoder_busy` drops "
              "and the interleaver's *late tags clamped* counter (a tag that arrived after the bounded wait and was "
              "moved up to the stream's time); clamped audio tags are the likely source of any audio gaps and "
              "non-increasing timestamps. A rerun on an idle machine would tell load from defect.")
        w("")
        for slug, c in av.items():
            w(f"- ({slug}) `{c['command']}` (exit {c.get('rc')})")
        w("")
        for slug in av:
            png = REPO / "docs/bench" / f"avsync-{slug}.png"
            if png.exists():
                w(f"![avsync {slug}](docs/bench/avsync-{slug}.png)")
        w("")


def _quality_under_budget(r: dict, w, made: list[str]) -> None:
    """Quality under budget."""
    q = r.get("quality") or {}
    if q:
        w("## Quality under budget")
        w("")
        w(provenance(r, "quality"))
        w("")
        w("Moving Y4M (`testsrc2` with `life` overlaid; at 1080p also `testsrc2` with a band of temporal noise, a "
          "fifth of the height, moving down 6 px a frame), pushed live under the default 50M budget; the x264 "
          "configuration is the one the memory plan chose (`EncoderLadder`). PSNR of the nginx recording against "
          "the source with frames matched by timestamp (`tools/bench/psnr_matched.py`: frames dropped as "
          "`encoder_busy` are skipped, and they leave more bits to the rest), next to ffmpeg `-preset veryfast` "
          "encoding the same file offline at the same bitrate and VBV.")
        w("")
        w("| res | content | our x264 configuration | peak RSS | encoder_busy drops | PSNR Y / avg (ours) | "
          "PSNR Y / avg (ffmpeg veryfast) | Δ avg |")
        w("|---|---|---|---|---|---|---|---|")
        for res, e in q.items():
            o, f = e.get("ours_psnr") or {}, e.get("ffmpeg_psnr") or {}
            def pair(d):
                return f"{d['mse_psnr_y']:.2f} / {d['mse_psnr_avg']:.2f} dB" if d else "n/a"
            delta = (f"{o['mse_psnr_avg'] - f['mse_psnr_avg']:+.2f} dB" if o and f else "n/a")
            peak = e.get("ours_peak_rss_bytes")
            w(f"| {e.get('res', res)} | {e.get('content', 'life')} | {e.get('encoder_choice') or '?'} | {num(peak / MB if peak else None, 1, ' MB')} | "
              f"{(e.get('ours_drops') or {}).get('encoder_busy', 'n/a')} | {pair(o)} | {pair(f)} | {delta} |")
        w("")
        for res, e in q.items():
            w(f"- {res}: `{e.get('ours_cmd')}`; `{e.get('ffmpeg_cmd')}`")
        w("")


def _adaptive_bitrate_under_a_steady_throttle(r: dict, w, made: list[str]) -> None:
    """Adaptive bitrate under a steady throttle (issue 22)."""
    ab = r.get("abr_soak") or {}
    if ab.get("rows"):
        w("## Adaptive bitrate under a steady throttle (issue 22)")
        w("")
        w(f"{ab['setup']}. Commit {ab['commit']}; the machine was {ab['load']}. Command: `{ab['command']}`.")
        w("")
        w("| | target video kbps | drops | delivered kbit/s |")
        w("|---|---|---|---|")
        for x in ab["rows"]:
            w(f"| {x['phase']} | {x['target']} | {x['drops']} | {x['delivered']} |")
        w("")
        w(f"{ab['before']} {ab['memory']} {ab.get('not_run', '')}".strip())
        w("")


def _shaped_links(r: dict, w, made: list[str]) -> None:
    """The adaptive bitrate on links the kernel shapes (issue 38)."""
    sh_ = r.get("shaped") or {}
    rows = [x for x in sh_.get("rows") or [] if x]
    if not rows:
        return
    w("## Adaptive bitrate on shaped links (issue 38)")
    w("")
    w(provenance(r, "shaped"))
    w("")
    w(f"{sh_['setup']}. \"link\" is what the namespace's loopback carried over the episode (less its "
      "first 5 s), or what the relay forwarded; share = video target / link. The band is the target from 30 s "
      "after the onset to the link's return; \"outside\" counts the seconds from 10 s after the onset whose "
      "target left the issue's strict band (70-95% of the link and 500-1150 kbps). Recovery: seconds from "
      "the link's return until the target is back at 80% of 2500 kbps. For the 800 kbit/s episode, the "
      "last 15 s of the run against the 15 s before the onset. Failed probes over the link: probes the "
      "link did not carry whose level was over it (share > 1), with the longest time one's target stood "
      "(the stats' `last_failed_probe_ms`; the issue wants under 1000 ms).")
    w("")
    w("| episode | link kbit/s | share 10 s after onset | band kbps (median) | x max/min | seconds outside | "
      "failed probes over the link (longest ms) | drops while shaped / frames | recovery s | last 15 s / before |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for x in rows:
        if "error" in x:
            w(f"| {x['name']} | failed: {x['error']} | | | | | | | | |")
            continue
        f = x["figures"]
        ratio = (round(f["kbps_last15"] / f["kbps_before"], 2)
                 if f.get("kbps_last15") and f.get("kbps_before") else "")
        outside = f.get("band_outside") or []
        w(f"| {x['name']} | {f['link_delivered_kbps']} | {f['at_10s_share']} | {f['band_min']}-{f['band_max']} "
          f"({f['band_median']}) | {f['band_ratio']} | {len(outside)} | "
          f"{f.get('failed_probes_over_link', '')} ({f.get('failed_probe_over_link_longest_ms') or '-'}) | "
          f"{f['congestion_drops_while_shaped']} / "
          f"{f['frames']} | {f['recovery_s']} | {ratio} |")
    w("")
    for i, x in enumerate(rows):
        name = f"shaped_{i}.png"
        if name in made:
            w(f"![{x['name']}](docs/bench/{name})")
    w("")
    w(f"`{sh_['command']}`")
    w("")


def _srt_vs_rtmp(r: dict, w, made: list[str]) -> None:
    """SRT and WHIP vs RTMP."""
    sr = r.get("srt") or {}
    if sr.get("rows"):
        whip = any(row["transport"] == "whip" for row in sr["rows"])
        w("## SRT and WHIP vs RTMP from one input (issues 26 and 27)" if whip else "## SRT vs RTMP from one input (issue 26)")
        w("")
        w(f"{sr['setup']}; {sr['seconds']} s per run, commit {sr.get('commit', '?')}, load average "
          f"{sr['loadavg_start'].split()[0]} at the start and {sr['loadavg_end'].split()[0]} at the end. Glass is the "
          "moment a frame was written into `broadcast`'s stdin (its time code), receiver time the moment PyAV "
          "decoded it; a loaded machine slows the Python receiver, which inflates every transport alike and "
          "makes it miss frames. SRT's latency includes its 120 ms TSBPD buffer by design."
          + (" WHIP's latency is issue 27's glass-to-decoded: aiortc's decode time minus the capture time our RTCP "
             "sender reports map the frame's RTP time to (goal: p95 at most 150 ms)." if whip else ""))
        w("")
        plan = any("plan_total_mib" in row for row in sr["rows"])
        w("| transport | CPU % | VmHWM MiB | frames decoded / sent | glass-to-receiver p50 ms | p95 ms |"
          + (" plan MiB (budget) | the transport's plan line |" if plan else ""))
        w("|---|---|---|---|---|---|" + ("---|---|" if plan else ""))
        for row in sr["rows"]:
            w(f"| {row['transport']} | {row['cpu_percent']} | {row['vmhwm_mib']} | {row['frames_received']} / "
              f"{row['frames_sent']} | {row['latency_p50_ms']} | {row['latency_p95_ms']} |"
              + (f" {row.get('plan_total_mib')} ({row.get('plan_budget_mib')}) | {row.get('plan_transport_line', '')} |"
                 if plan else ""))
        w("")
        w(f"`{sr['command']}`")


def _memory_plan_against_vmhwm(r: dict, w, made: list[str]) -> None:
    """Memory plan against VmHWM, and the x264 model (issue 23)."""
    mm = r.get("memmatrix") or {}
    if mm.get("rows"):
        w("## Memory plan against VmHWM (issue 23)")
        w("")
        w(f"`tools/bench/memory_matrix.py --seconds {mm.get('seconds')}` at {mm.get('commit', '?')}: each row pushes to "
          "nginx-rtmp and polls VmHWM from /proc/PID/status (the larger of that and the process's own last stats "
          "line); the plan is `--print-memory-plan=json` with the same arguments. Target: the plan total within "
          f"{int(100 * mm.get('tolerance', 0.1))}% of VmHWM. The machine's load average was {mm.get('loadavg_start', '?')} "
          f"at the start and {mm.get('loadavg_end', '?')} at the end (other work shared the 2 cores); memory figures "
          "do not depend on CPU time, frame counts do.")
        w("")
        w("The CLI releases its start-up pages before the plan, so the runtime baseline is what stays resident; "
          "the plan's \"session code\" line is RssFile's growth while the pipeline is built, measured by every run. "
          "\"Code paged in after the plan\" is RssFile's peak during the run less RssFile when the plan was made: "
          "small for the test source, so no line plans it; with PipeWire it is part of each stream's client "
          "(its context, thread loop and plugins), `PipeWireStream.clientResidentBytes` in the capture line.")
        w("")
        pc, pp = mm.get("pipewire_client_per_stream_bytes"), mm.get("pipewire_client_planned_bytes")
        if pc is not None:
            w(f"One PipeWire stream's client, measured by this run: {pc / MIB:.2f} MiB (the largest PipeWire row's "
              f"VmHWM − plan, less the test row's at the same size and ring, over its three streams, plus the "
              f"{(pp or 0) / MIB:.2f} MiB the plan already counts for it).")
            w("")
        w("| row | x264 configuration | plan total MiB | VmHWM MiB | plan / VmHWM − 1 | within target | "
          "session code MiB | code paged in after the plan MiB | exit |")
        w("|---|---|---|---|---|---|---|---|---|")
        for x in mm["rows"]:
            ratio = x.get("plan_vs_vmhwm")
            sc = x.get("plan_lines", {}).get("session_code")
            paged = x.get("code_paged_in_bytes")
            w(f"| {x['name']} | {x.get('x264_configuration') or '?'} | {x['plan_total_bytes'] / MIB:.1f} | "
              f"{x['vmhwm_bytes'] / MIB:.1f} | {f'{100 * ratio:+.1f}%' if ratio is not None else 'n/a'} | "
              f"{'yes' if x.get('within_10_percent') else '**no**'} | "
              f"{f'{sc / MIB:.2f}' if sc is not None else 'n/a'} | {f'{paged / MIB:.2f}' if paged is not None else 'n/a'} | "
              f"{x['exit']} |")
        w("")
        w("Commands: " + "; ".join(f"`{x['command']}`" for x in mm["rows"][:1]) + " and the same per row "
          "(PipeWire rows: `--source screen-node` of a `pw-test-screen` at the size named, with `--app-audio app-sink "
          "--mic test-mic`; ring rows: `--replay-seconds 30`, at 1080p with `--memory-budget 80M`).")
        w("")
    if mm.get("cgroup"):
        w("What a 50 MiB cgroup (v1) charges besides the process, 1080p runs, warm page cache and after evicting "
          "the binary's and libraries' pages (cold): `MemoryBudget.kernelReserveBytes` (1.5 MB) comes from the "
          "kernel-memory column; clean page cache is reclaimed at the limit (failcnt counts those reclaims) and "
          "never led to an OOM kill.")
        w("")
        w("| run | cache | VmHWM MiB | cgroup max usage MiB | kmem max MiB | usage − RSS max MiB | failcnt | OOM kills | exit |")
        w("|---|---|---|---|---|---|---|---|---|")
        for c in mm["cgroup"]:
            umr = c.get("usage_minus_rss_max_bytes")
            w(f"| {c['name']} | {c['cache']} | {c['vmhwm_bytes'] / MIB:.1f} | {c['cgroup_max_usage_bytes'] / MIB:.1f} | "
              f"{c['kmem_max_usage_bytes'] / MIB:.2f} | {f'{umr / MIB:.1f}' if umr is not None else 'n/a'} | "
              f"{c['failcnt']} | {c['oom_kills']} | {c['exit']} |")
        w("")
    xm = r.get("x264model") or {}
    if xm.get("rows"):
        w("## x264 working set per configuration (the plan's model)")
        w("")
        w("`tools/bench/x264model.py` runs `bk-bench x264-memory` once per configuration and size, each in its own "
          f"process (moving noise, zerolatency, 2 sliced threads, 1 reference; the larger of {xm.get('runs')} runs); "
          "`--write` puts the table into `Sources/Engine/BroadcastPipeline/Memory/X264MemoryModel.swift`, which the plan "
          "interpolates in pixels. Noise is the hardest content: on the test pattern x264 holds less.")
        w("")
        w("| configuration | size | working set MiB | B/px | at open MiB | plan's earlier per-pixel figure MiB |")
        w("|---|---|---|---|---|---|")
        for x in xm["rows"]:
            w(f"| {x['class']} | {x['width']}x{x['height']} | {x['working_bytes'] / MIB:.2f} | "
              f"{x['working_bytes'] / (x['width'] * x['height']):.2f} | {x['at_open_bytes'] / MIB:.2f} | "
              f"{x['planned_before_bytes'] / MIB:.2f} |")
        w("")


def _commands(r: dict, w, made: list[str]) -> None:
    """Commands."""
    sc = r.get("scale") or {}
    meta = r.get("meta", {})
    cfg = r.get("config", {})
    fl = (r.get("floor") or {}).get("by_res") or {}
    rt = r.get("realtime") or {}
    w("## Commands")
    w("")
    w("```")
    w(f"scripts/bench            # runs: {' '.join(f'--{k.replace(chr(95), chr(45))} {v}' for k, v in cfg.items() if k not in ('bin_dir', 'dyn_bin_dir', 'quick', 'sections'))}")
    if fl:
        for k, v in r["floor"]["commands"].items():
            w(v)
    for name, e in rt.items():
        w(f"# {name}")
        w(e["ours_cmd"].split(" --quiet")[0].rsplit("/", 1)[0].split()[0].rsplit("/", 1)[-1] + " --url rtmp://127.0.0.1:PORT/live --quiet"
          + e["ours_cmd"].split("--quiet", 1)[1].replace(str(REPO), "."))
        w(re.sub(r"rtmp://127\.0\.0\.1:\d+/", "rtmp://127.0.0.1:PORT/", e["ffmpeg_cmd"]))
    if sc.get("command"):
        w(sc["command"])
    w("```")
    w("")
    w("`$WORK` is the benchmark's scratch directory (`out/bench`); inputs were generated with "
      "`ffmpeg -f lavfi -i testsrc2=size=WxH:rate=FPS -t SECONDS+2 -pix_fmt yuv420p -f yuv4mpegpipe in.y4m` and "
      "`ffmpeg -f lavfi -i sine=frequency=440:sample_rate=48000 -t SECONDS+2 -ac 2 -f s16le in.pcm`. Stream keys "
      "are passed in `$STREAM_KEY`. Section durations (s): "
      + ", ".join(f"{k[8:-2]} {v:.0f}" for k, v in meta.items() if k.startswith("section_")) + ".")
    w("")


def _renovation_ab(r: dict, w, made: list[str]) -> None:
    """Two builds side by side in one run (issue 41's guard rails), from docs/bench/renovation-ab.json
    (written by tools/bench/ab_binaries.py, not by the full bench run)."""
    path = REPO / "docs/bench/renovation-ab.json"
    if not path.exists():
        return
    ab = json.loads(path.read_text())
    meta, res = ab.get("meta", {}), ab.get("results", {})
    labels = meta.get("labels", {})
    w("## Renovation A/B: before and after in one run (issue 41)")
    w("")
    more = [k for k in labels if k not in ("before", "after")]
    extra = "".join(f", `{k}` = {meta.get('notes', {}).get(k, k)}" for k in more)
    w(f"`tools/bench/ab_binaries.py`: before = `{labels.get('before', '?')}`, after = `{labels.get('after', '?')}`{extra}, "
      f"{meta.get('runs', '?')} runs each of {meta.get('seconds', '?')} s, alternating, the binary evicted from the page "
      f"cache before each run; the test source to nginx-rtmp. {meta.get('started', '?')} to {meta.get('finished', '?')}, "
      f"load average {meta.get('loadavg_start', '?')} at the start and {meta.get('loadavg_end', '?')} at the end, "
      f"{meta.get('cpus', '?')} CPUs. CPU % of media time, VmHWM (ru_maxrss), the plan's total with its headroom over "
      "that VmHWM, capture-to-socket latency (median of the stats lines' p50 and p99): median (min-max) over the runs.")
    w("")
    w("| output | build | CPU % | VmHWM MiB | plan / VmHWM | latency p50 ms | latency p99 ms | exits |")
    w("|---|---|---|---|---|---|---|---|")

    def mm(xs: list, digits: int = 1) -> str:
        xs = [x for x in xs if x is not None]
        if not xs:
            return "—"
        return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"

    for out, d in res.items():
        for name in ("before", "after", *more):
            e = d.get(name) or {}
            runs = e.get("runs") or []
            hwm = [x["vmhwm_mib"] for x in runs]
            plan = e.get("plan_needed_bytes")
            ratio = f"{plan / MIB / statistics.median(hwm):.2f}" if plan and hwm else "—"
            w(f"| {out} | {name} | {mm([x['cpu_percent'] for x in runs])} | {mm(hwm, 2)} | {ratio} | "
              f"{mm([x['latency_p50_ms'] for x in runs])} | {mm([x['latency_p99_ms'] for x in runs])} | "
              f"{sorted({x['exit'] for x in runs})} |")
    w("")


SECTIONS = (_targets, _floor, _real_time, _scale, _levers, _destinations, _replay, _avsync, _quality_under_budget,
            _adaptive_bitrate_under_a_steady_throttle, _shaped_links, _srt_vs_rtmp, _memory_plan_against_vmhwm,
            _renovation_ab, _commands)


def fleet(r: dict) -> str:
    """Streams per core and per GB at 480p/720p/1080p from this run's measurements: CPU % of one
    stream from the real-time section (Y4M input, veryfast, like a real source) and peak RSS from
    the levers section (test source, default budget). Empty when either is missing."""
    rt = r.get("realtime") or {}
    lv = ((r.get("levers") or {}).get("cases")) or {}
    rows = []
    for res, lever in (("480p", "res_480p"), ("720p", "baseline"), ("1080p", "res_1080p")):
        e, l = rt.get(f"{res}30"), lv.get(lever)
        cpu = med(e["ours_cpu_percent"]) if e else None
        rss = med(l["peak_rss_bytes"]) if l else None
        if cpu is None or rss is None:
            continue
        rows.append((res, cpu, rss / MIB))
    if not rows:
        return ""
    L = ["| output (30 fps) | CPU % of one core per stream | streams per core (CPU) | peak RSS per stream MiB | "
         "streams per GiB (VmHWM) | streams per GiB at a 64 MiB pod limit | bound by |",
         "|---|---|---|---|---|---|---|"]
    for res, cpu, rss in rows:
        per_core, per_gib, per_pod = 100.0 / cpu, 1024.0 / rss, 1024.0 / 64
        by_memory = per_pod * 4   # streams per core that a 4 GiB-per-core node's memory allows
        L.append(f"| {res} | {cpu:.1f} | {per_core:.1f} | {rss:.1f} | {per_gib:.0f} | {per_pod:.0f} | "
                 f"{'CPU' if per_core < by_memory else 'memory'}: {per_core:.1f} per core by CPU, "
                 f"{by_memory:.0f} per core by memory at 4 GiB per core |")
    return "\n".join(L)


def scale_block(r: dict) -> str:
    """Sessions in one process against one process per stream, 360p30, from the scale section:
    CPU and memory per stream at each count, and the drops that mark where the machine runs out."""
    sc = r.get("scale") or {}
    bc, bp = sc.get("by_count") or {}, sc.get("by_processes") or {}
    if not bc:
        return ""
    L = [f"Measured at 360p30, {sc.get('seconds', '?'):g} s per run (BENCHMARKS.md § 3):", "",
         "| streams | in one process: CPU % per stream | in one process: RSS per stream MiB | drops | "
         "one process each: CPU % per stream | one process each: VmHWM per stream MiB | failed exits |",
         "|---|---|---|---|---|---|---|"]
    for n in sorted({int(k) for k in list(bc) + list(bp)}):
        e, p = bc.get(str(n)) or {}, bp.get(str(n)) or {}
        drops = sum(sum((d or {}).values()) if isinstance(d, dict) else (d or 0) for d in e.get("drops", [])) if e else None
        bad = sum(1 for rs in p.get("exits", []) for x in rs if x != 0) if p else None
        L.append(f"| {n} | {fmt(e.get('cpu_percent_per_session'))} | {fmt(e.get('rss_per_session_bytes'), MIB)} | "
                 f"{'n/a' if drops is None else drops} | {fmt(p.get('cpu_percent_per_stream'))} | "
                 f"{fmt(p.get('peak_rss_per_stream_bytes'), MIB)} | {'n/a' if bad is None else bad} |")
    return "\n".join(L)


def write_between_markers(path: Path, block: str, name: str = "fleet") -> None:
    """Replaces the text between <!-- NAME:begin --> and <!-- NAME:end --> in `path`."""
    if not path.exists() or not block:
        return
    text = path.read_text()
    a, b = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if a in text and b in text:
        head, rest = text.split(a, 1)
        tail = rest.split(b, 1)[1]
        path.write_text(head + a + "\n" + block + "\n" + b + tail)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=str(REPO / "docs/bench/results.json"))
    ap.add_argument("--out", default=str(REPO / "BENCHMARKS.md"))
    ap.add_argument("--plots", default=str(REPO / "docs/bench"))
    a = ap.parse_args()
    r = json.loads(Path(a.results).read_text())
    outdir = Path(a.plots)
    outdir.mkdir(parents=True, exist_ok=True)
    made = plots(r, outdir)
    try:
        rel = str(Path(a.results).resolve().relative_to(REPO))
    except ValueError:
        rel = a.results
    Path(a.out).write_text(report(r, made, rel))
    if Path(a.out).resolve() == (REPO / "BENCHMARKS.md").resolve():
        write_between_markers(REPO / "docs/scaling.md", fleet(r))
        write_between_markers(REPO / "docs/scaling.md", scale_block(r), "scale")
    print(f"wrote {a.out} and {len(made)} charts in {outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
