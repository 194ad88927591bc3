#!/usr/bin/env python3
"""Plot and judge a scripts/soak run.

Reads DIR/soak.json (facts gathered by scripts/soak), DIR/rss.csv (VmRSS/VmHWM samples) and
DIR/stats.jsonl (the broadcast's per-second stats), draws DIR/rss.png (RSS over time with
the cap drawn as a line and the throttle window shaded, plus the sent bitrate), prints a
summary and the failure reasons, writes DIR/summary.json, and exits 1 if the run failed.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import sys

GROWTH_LIMIT_KB = 1024        # RSS may grow at most 1 MB from minute 2 to the end...
GROWTH_MIN_SECONDS = 180      # ...judged only on runs of at least 3 minutes.
GROWTH_FROM_S = 120.0
RING_FLAT_KB = 1024           # VmHWM may grow at most 1 MB once the replay ring has filled...
RING_FLAT_MIN_S = 30.0        # ...which must happen at least 30 s before the end.
RING_PLAN_TOLERANCE = 0.10    # the plan's ring line within 10% of the VmHWM growth the ring causes


def read_rss(path: str) -> list[dict]:
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for r in csv.DictReader(f):
            try:
                rows.append({"t": float(r["t_s"]), "rss_kb": int(r["rss_kb"]),
                             "hwm_kb": int(r["hwm_kb"]),
                             "cg": int(r["cgroup_bytes"]) if r.get("cgroup_bytes") else None,
                             # anonymous + shared pages, when the sampler recorded them
                             "owned_kb": (int(r["anon_kb"]) + int(r.get("shmem_kb") or 0)) if r.get("anon_kb") else None})
            except (KeyError, ValueError):
                continue
    return rows


def read_stats(path: str) -> list[dict]:
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
    return out


def throttle_window(meta: dict) -> tuple[float, float] | None:
    """Throttle window in seconds since broadcast start (the proxy started a bit earlier)."""
    if not meta.get("throttle_kbps"):
        return None
    lead = meta["start_epoch"] - (meta.get("proxy_start_epoch") or meta["start_epoch"])
    start = (meta.get("throttle_from_s") or 0.0) - lead
    dur = meta.get("throttle_for_s")
    end = start + dur if dur is not None else meta["end_epoch"] - meta["start_epoch"]
    return max(0.0, start), end


def mean_of(stats: list[dict], key: str, lo: float, hi: float) -> float | None:
    vals = [s[key] for s in stats
            if key in s and isinstance(s[key], (int, float)) and lo <= s.get("time_s", -1) < hi]
    return sum(vals) / len(vals) if vals else None


def evaluate(meta: dict, rss: list[dict], stats: list[dict]) -> tuple[dict, list[str]]:
    cap_kb = meta["cap_bytes"] / 1024.0
    reasons: list[str] = []
    summary: dict = {"cap_bytes": meta["cap_bytes"], "exit_code": meta["exit_code"]}

    rc = meta["exit_code"]
    killed_by = rc - 128 if rc > 128 else None
    if killed_by == signal.SIGKILL:
        reasons.append(f"broadcast was killed by SIGKILL (exit {rc}): OOM-killed or hung")
    if meta.get("cgroup_oom_kill", 0) > 0 or meta.get("cgroup_under_oom", 0) > 0:
        reasons.append(f"cgroup OOM: oom_kill={meta.get('cgroup_oom_kill', 0)} "
                       f"under_oom={meta.get('cgroup_under_oom', 0)}")
    if meta.get("cgroup_failcnt", 0) > 0:
        reasons.append(f"memory cgroup hit its limit {meta['cgroup_failcnt']} times (failcnt)")
    if meta.get("timed_out"):
        reasons.append("broadcast did not stop by itself within 60 s of --duration")

    peak_kb = max([meta.get("max_hwm_kb", 0)] + [r["hwm_kb"] for r in rss])
    summary["peak_rss_kb"] = peak_kb
    summary["cgroup_peak_bytes"] = meta.get("cgroup_peak_bytes")
    if peak_kb >= cap_kb:
        reasons.append(f"peak RSS (VmHWM) {peak_kb / 1024:.1f} MB reached the cap "
                       f"{cap_kb / 1024:.1f} MB")
    if not rss:
        reasons.append("no RSS samples (broadcast exited at once?)")

    at2 = next((r for r in rss if r["t"] >= GROWTH_FROM_S - 5), None)
    end = rss[-1] if rss else None
    summary["rss_at_2min_kb"] = at2["rss_kb"] if at2 else None
    summary["rss_at_end_kb"] = end["rss_kb"] if end else None
    if at2 and end:
        # Growth of anonymous + shared pages when sampled (heap, pools, queues, capture buffers: what a
        # leak grows). File-backed pages are code faulting back in after broadcast's start-up release,
        # bounded by the mapped files; the peak check above counts them.
        owned = at2.get("owned_kb") is not None and end.get("owned_kb") is not None
        key, what = ("owned_kb", "anon+shmem") if owned else ("rss_kb", "RSS")
        growth = end[key] - at2[key]
        summary["growth_kb"] = growth
        summary["growth_of"] = what
        summary["rss_growth_kb"] = end["rss_kb"] - at2["rss_kb"]
        if meta["seconds"] >= GROWTH_MIN_SECONDS and growth > GROWTH_LIMIT_KB:
            reasons.append(f"{what} grew {growth / 1024:.2f} MB between t={at2['t']:.0f}s and "
                           f"t={end['t']:.0f}s (limit 1 MB)")
    elif meta["seconds"] >= GROWTH_MIN_SECONDS:
        reasons.append("not enough RSS samples to judge growth from minute 2")

    if meta.get("replay_seconds"):
        judge_ring(meta, rss, stats, peak_kb, summary, reasons)

    probe = meta.get("probe_rc", 0)
    if probe == -1:
        reasons.append(f"no recording at {meta.get('recording')}")
    elif probe != 0:
        reasons.append(f"recording failed verification (tools/probe_recording.py exit {probe}; "
                       "see probe.txt)")
    if rc != 0 and killed_by != signal.SIGKILL:
        reasons.append(f"broadcast exited with status {rc} (see broadcast.log)")

    last = stats[-1] if stats else {}
    summary["drops"] = last.get("drops", {})
    summary["reconnects"] = last.get("reconnects")
    summary["stats_lines"] = len(stats)
    win = throttle_window(meta)
    if win:
        lo, hi = win
        summary["throttle_window_s"] = [round(lo, 2), round(hi, 2)]
        total = meta["end_epoch"] - meta["start_epoch"]
        for label, a, b in (("before", 5.0, lo), ("during", lo, hi), ("after", hi + 5.0, total)):
            summary[f"kbps_{label}_throttle"] = mean_of(stats, "kbps", a, b)
            summary[f"video_kbps_{label}_throttle"] = mean_of(stats, "video_kbps", a, b)
            summary[f"target_video_kbps_{label}_throttle"] = mean_of(
                stats, "target_video_kbps", a, b)
    else:
        summary["kbps_mean"] = mean_of(stats, "kbps", 5.0, 1e9)
    return summary, reasons


def judge_ring(meta: dict, rss: list[dict], stats: list[dict], peak_kb: int, summary: dict,
               reasons: list[str]) -> None:
    """The replay ring's checks: VmHWM flat once the ring has filled, and (with a reference run
    without the ring) the plan's ring line against the VmHWM growth the ring causes."""
    plan_kb = meta.get("plan_ring_kb")
    summary["plan_ring_kb"] = plan_kb
    if not plan_kb:
        reasons.append("no replay ring line in the memory plan (plan.json)")
        return
    # The ring's pages are touched as bytes first pass through it: once what was sent (everything the
    # interleaver released, which the ring also got) reaches the planned size, it has wrapped.
    filled = next((s["time_s"] for s in stats
                   if s.get("video_bytes_sent", 0) + s.get("audio_bytes_sent", 0) >= plan_kb * 1024), None)
    summary["ring_filled_s"] = filled
    if filled is None or filled > meta["seconds"] - RING_FLAT_MIN_S:
        reasons.append(f"the replay ring had not filled {RING_FLAT_MIN_S:.0f} s before the end "
                       f"(filled at {filled if filled is not None else 'never'}): VmHWM flatness not judged")
    else:
        at_fill = next((r for r in rss if r["t"] >= filled), None)
        if at_fill is None:
            reasons.append("no RSS sample after the replay ring filled")
        else:
            growth = peak_kb - at_fill["hwm_kb"]
            summary["hwm_at_ring_full_kb"] = at_fill["hwm_kb"]
            summary["hwm_growth_after_ring_full_kb"] = growth
            if growth > RING_FLAT_KB:
                reasons.append(f"VmHWM grew {growth / 1024:.2f} MB after the replay ring filled at t={filled:.0f}s "
                               f"(from t={at_fill['t']:.0f}s; limit 1 MB)")
    if not meta.get("ring_reference"):
        return
    ref = meta.get("reference_max_hwm_kb")
    summary["reference_max_hwm_kb"] = ref
    if meta.get("plan_x264") != meta.get("reference_plan_x264"):
        reasons.append(f"the ring changes the x264 configuration ({meta.get('plan_x264')!r} with it, "
                       f"{meta.get('reference_plan_x264')!r} without): the reference is not the same run")
        return
    if ref is None or meta.get("reference_rc") != 0:
        reasons.append(f"the reference run without the ring failed (exit {meta.get('reference_rc')}; "
                       "see reference.log and reference/)")
        return
    growth = peak_kb - ref
    summary["ring_growth_kb"] = growth
    summary["plan_over_ring_growth"] = plan_kb / growth if growth > 0 else None
    if growth <= 0 or abs(plan_kb - growth) > RING_PLAN_TOLERANCE * growth:
        reasons.append(f"the plan's ring line {plan_kb / 1024:.1f} MB is not within 10% of the VmHWM growth "
                       f"from enabling the ring, {growth / 1024:.2f} MB ({peak_kb / 1024:.1f} - {ref / 1024:.1f} MB)")


def draw(path: str, meta: dict, rss: list[dict], stats: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True,
                                 gridspec_kw={"height_ratios": [3, 2]})
    cap_mb = meta["cap_bytes"] / 1048576.0
    t = [r["t"] for r in rss]
    ax.plot(t, [r["rss_kb"] / 1024 for r in rss], "o-", ms=3, label="VmRSS")
    ax.plot(t, [r["hwm_kb"] / 1024 for r in rss], "--", lw=1, label="VmHWM")
    cg = [(r["t"], r["cg"] / 1048576.0) for r in rss if r["cg"] is not None]
    if cg:
        ax.plot([c[0] for c in cg], [c[1] for c in cg], ":", lw=1, label="cgroup usage")
    if stats and any("rss_bytes" in s for s in stats):
        ax.plot([s["time_s"] for s in stats if "rss_bytes" in s],
                [s["rss_bytes"] / 1048576.0 for s in stats if "rss_bytes" in s],
                lw=0.6, alpha=0.6, label="rss (stats)")
    ax.axhline(cap_mb, color="r", lw=1.5, label=f"cap {meta['cap_arg']}")
    ax.set_ylim(0, cap_mb * 1.1)
    ax.set_ylabel("MB")
    title = (f"soak {meta['res']}@{meta['fps']} {meta['audio_codec']} "
             f"{meta['minutes']} min, cap {meta['cap_arg']}")
    ax.set_title(title)
    if stats:
        st = [s.get("time_s", 0) for s in stats]
        for key, style in (("kbps", "-"), ("video_kbps", "-"), ("target_video_kbps", "--")):
            if any(key in s for s in stats):
                bx.plot(st, [s.get(key, float("nan")) for s in stats], style, lw=1, label=key)
    if meta.get("throttle_kbps"):
        bx.axhline(meta["throttle_kbps"], color="r", lw=1, ls=":",
                   label=f"link {meta['throttle_kbps']:g} kbit/s")
    bx.set_ylabel("kbit/s")
    bx.set_xlabel("seconds since broadcast start")
    win = throttle_window(meta)
    for a in (ax, bx):
        if win:
            a.axvspan(win[0], win[1], color="orange", alpha=0.2,
                      label="throttled" if a is ax else None)
        a.grid(alpha=0.3)
        a.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fmt_mb(kb) -> str:
    return "n/a" if kb is None else f"{kb / 1024:.2f} MB"


def fmt_kbps(v) -> str:
    return "n/a" if v is None else f"{v:.0f}"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: soak_plot.py SOAK_DIR", file=sys.stderr)
        return 2
    d = argv[1]
    try:
        with open(os.path.join(d, "soak.json")) as f:
            meta = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"soak_plot: cannot read soak.json: {exc}", file=sys.stderr)
        return 2
    rss = read_rss(os.path.join(d, "rss.csv"))
    stats = read_stats(os.path.join(d, "stats.jsonl"))
    summary, reasons = evaluate(meta, rss, stats)
    draw(os.path.join(d, "rss.png"), meta, rss, stats)
    summary["ok"] = not reasons
    summary["reasons"] = reasons
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)

    print(f"soak: peak RSS (VmHWM) {fmt_mb(summary['peak_rss_kb'])} of cap "
          f"{meta['cap_bytes'] / 1048576:.1f} MB; cgroup peak "
          f"{(summary.get('cgroup_peak_bytes') or 0) / 1048576:.2f} MB")
    print(f"soak: RSS at 2 min {fmt_mb(summary['rss_at_2min_kb'])}, at end "
          f"{fmt_mb(summary['rss_at_end_kb'])}, growth "
          f"{fmt_mb(summary.get('growth_kb')) if 'growth_kb' in summary else 'n/a'}")
    drops = summary["drops"]
    print("soak: drops " + (", ".join(f"{k}={v}" for k, v in sorted(drops.items()) if v) or "none")
          + f"; reconnects {summary.get('reconnects')}; {summary['stats_lines']} stats lines")
    if "throttle_window_s" in summary:
        lo, hi = summary["throttle_window_s"]
        print(f"soak: throttle {meta['throttle_kbps']:g} kbit/s during t={lo:.0f}..{hi:.0f}s")
        for label in ("before", "during", "after"):
            print(f"soak:   {label:6} kbps {fmt_kbps(summary[f'kbps_{label}_throttle'])}, video "
                  f"{fmt_kbps(summary[f'video_kbps_{label}_throttle'])}, target video "
                  f"{fmt_kbps(summary[f'target_video_kbps_{label}_throttle'])}")
    elif summary.get("kbps_mean") is not None:
        print(f"soak: mean kbps {summary['kbps_mean']:.0f}")
    if meta.get("replay_seconds"):
        print(f"soak: replay ring {meta['replay_seconds']} s: plan line {fmt_mb(summary.get('plan_ring_kb'))}, "
              f"filled at t={summary.get('ring_filled_s')}s, VmHWM then {fmt_mb(summary.get('hwm_at_ring_full_kb'))}, "
              f"growth after {fmt_mb(summary.get('hwm_growth_after_ring_full_kb'))}")
        if meta.get("ring_reference"):
            ratio = summary.get("plan_over_ring_growth")
            print(f"soak: reference without the ring: VmHWM {fmt_mb(summary.get('reference_max_hwm_kb'))}; "
                  f"growth from the ring {fmt_mb(summary.get('ring_growth_kb'))}; plan line / growth "
                  f"{'n/a' if ratio is None else f'{ratio:.3f}'}")
    print(f"soak: plot {os.path.join(d, 'rss.png')}")
    if reasons:
        for r in reasons:
            print(f"soak: FAIL: {r}")
        return 1
    print("soak: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
