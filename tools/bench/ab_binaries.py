#!/usr/bin/env python3
"""Two builds of broadcast side by side in one run: the guard rails of a renovation (issue 41).

Each run streams the test source to one nginx-rtmp (by pid) for SECONDS; the two binaries
alternate (before, after, then after, before, ...) so drift in the machine's load falls on both.
Before each run the binary's file is evicted from the page cache (posix_fadvise DONTNEED): a
freshly copied binary shows about 1 MiB more resident code than a long-cached one
(docs/memory-budget.md), which would otherwise decide the VmHWM comparison.

Per resolution and binary: CPU % of media time (user + system from wait4), VmHWM (ru_maxrss),
capture-to-socket latency p50/p99 (the medians of the stats lines'), and the plan's total with its
headroom against that VmHWM (`--print-memory-plan=json`). Written to OUT as JSON;
tools/bench/report.py renders it into BENCHMARKS.md ("Renovation A/B").

usage: tools/bench/ab_binaries.py BEFORE AFTER [MORE...] --label-before REV --label-after REV
                                  [--label-more NAME,...] [--runs 3] [--seconds 20]
                                  [--res 480p,720p,1080p] [--out docs/bench/renovation-ab.json]
More builds than two (a variant of the after build, say) take part in the same rotation, each
under its --label-more name.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from bktools.ingest import start_ingest  # noqa: E402


def evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def plan_needed_bytes(binary: str, res: str) -> int | None:
    r = subprocess.run([binary, "--source", "test", "--res", res, "--url", "rtmp://127.0.0.1:1/live",
                        "--print-memory-plan=json"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "STREAM_KEY": "ab"})
    try:
        return int(json.loads(r.stdout)["plan"]["needed_bytes"])
    except (ValueError, KeyError):
        return None


def one_run(binary: str, res: str, seconds: int, url: str, tmp: Path) -> dict:
    stats = tmp / f"stats-{os.getpid()}-{time.monotonic_ns()}.jsonl"
    evict(binary)
    p = subprocess.Popen([binary, "--source", "test", "--res", res, "--duration", str(seconds), "--quiet",
                          "--stats-json", str(stats), "--url", url],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env={**os.environ, "STREAM_KEY": "ab"})
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    lines = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()] if stats.exists() else []
    stats.unlink(missing_ok=True)
    lat = [(x["latency_p50_ms"], x["latency_p99_ms"]) for x in lines if x.get("latency_p50_ms") is not None]
    last = lines[-1] if lines else {}
    return {"exit": os.waitstatus_to_exitcode(status), "stderr_tail": err.strip().splitlines()[-1:] if err else [],
            "cpu_percent": round(100 * (ru.ru_utime + ru.ru_stime) / seconds, 2),
            "vmhwm_mib": round(ru.ru_maxrss / 1024, 2),
            "latency_p50_ms": statistics.median(a for a, _ in lat) if lat else None,
            "latency_p99_ms": statistics.median(b for _, b in lat) if lat else None,
            "video_frames_sent": last.get("video_frames_sent")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("more", nargs="*", help="further builds, named by --label-more")
    ap.add_argument("--label-before", required=True)
    ap.add_argument("--label-after", required=True)
    ap.add_argument("--label-more", default="", help="comma-separated names of the further builds")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--res", default="480p,720p,1080p")
    ap.add_argument("--out", default=str(REPO / "docs/bench/renovation-ab.json"))
    a = ap.parse_args(argv)
    more = [x for x in a.label_more.split(",") if x]
    if len(more) != len(a.more):
        ap.error(f"{len(a.more)} further builds but {len(more)} --label-more names")
    bins = {"before": a.before, "after": a.after, **dict(zip(more, a.more))}
    out: dict = {"meta": {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "seconds": a.seconds, "runs": a.runs,
                          "labels": {"before": a.label_before, "after": a.label_after, **{m: m for m in more}},
                          "loadavg_start": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(), "kernel": platform.release()},
                 "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        ingest = start_ingest(directory=str(Path(tmp) / "ingest"))
        try:
            for res in a.res.split(","):
                per = out["results"].setdefault(res, {n: {"runs": []} for n in bins})
                for name, b in bins.items():
                    per[name]["plan_needed_bytes"] = plan_needed_bytes(b, res)
                for i in range(a.runs):
                    order = list(bins.items()) if i % 2 == 0 else list(reversed(list(bins.items())))
                    for name, b in order:
                        rec = one_run(b, res, a.seconds, ingest.url, Path(tmp))
                        per[name]["runs"].append(rec)
                        print(res, name, i, json.dumps(rec), flush=True)
        finally:
            ingest.stop()
    out["meta"]["loadavg_end"] = round(os.getloadavg()[0], 2)
    out["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    bad = [(res, n) for res, d in out["results"].items() for n, e in d.items() for r in e["runs"] if r["exit"] != 0]
    for res, n in bad:
        print(f"ab_binaries: a {n} run at {res} did not exit 0", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
