#!/usr/bin/env python3
"""Benchmark runner behind scripts/bench: measures, writes raw numbers to results.json.

Sections (run in this order; results.json is rewritten after each one so a partial run
keeps what it measured):
  machine   lscpu model, cores, kernel, Debian, swift/ffmpeg/x264/nginx versions
  trivial   peak RSS of a trivial Swift program: static/dynamic stdlib x Foundation flavours
  floor     bk-bench floor (x264 alone) and pipeline (BGRx -> libyuv -> x264 -> FLV -> discard)
            at 480p/720p/1080p, plus allocations per frame under tools/allocshim
  realtime  real-time pushes to a private nginx-rtmp, ours and ffmpeg on identical Y4M + PCM
            input files, same x264/AAC settings; CPU from wait4 rusage, peak RSS = /usr/bin/time's %M
  scale     bk-bench sessions: 1, 2, 4, 8 live 360p30 sessions in one process; then 1, 2, 4
            broadcast processes at once, one 360p30 stream each
  levers    720p30 test-source pushes varying one process-level lever at a time; peak RSS
            at 480p/720p/1080p under the default 50M budget (+ the memory plans)
  avsync    issues 4 and 12: 3 test-source pushes of 10 min (plain, impaired, impaired Opus), at
            once or one after another (--avsync-sequential), analysed from the nginx recordings with scripts/avsync
  embedding the CLI's Y4M + PCM push against the same job through the C ABI (Benchmarks/c/y4m_push.c
            built with pkg-config from a scripts/install prefix): CPU and VmHWM, same input files
  capture   PipeWire screen capture (pw-test-screen desktops 1280x720, 2560x1440, 3840x2160, and
            a producer insisting on 8 buffers) with desktop + mic audio, through tools/pw_memory_run.py:
            VmHWM read from /proc (shared buffers count), the Rss split, the plan of the same run
  destinations  issue 14: one 720p encode to 1, 2 and 4 nginx-rtmp destinations next to ffmpeg's
            tee muxer on the same noisy testsrc2 frames (tools/bench/destinations.py per row)
  shaped    issue 38: the adaptive bitrate on a 1200 kbit/s tbf with a 500 ms and a 2000 ms
            queue, behind a relay that reads 1200 kbit/s with 1 MiB buffers, and through 30 s of
            800 kbit/s (tools/bitrate_shaped.py, two episodes at once; root)
  replay    issue 16: the replay ring's VmHWM per second at 480p/720p/1080p (with vs without
            --replay-seconds N, next to the plan's ring line); clip save time through the control
            socket and the process CPU over the save against the same time without one
  quality   quality under the default budget: 720p/1080p pushes of a moving Y4M (testsrc2 +
            life), the x264 configuration the memory plan chose, peak RSS, PSNR of the nginx
            recording (frames matched by timestamp) next to ffmpeg -preset veryfast offline

CPU figures are CPU time (user + system) of the measured process, so a busy machine inflates
them less than wall-clock figures; the load is not controlled (shared machine).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench_common import REPO, BenchBase, log, sh
from sections_cpu import CpuSections
from sections_delivery import DeliverySections
from sections_memory import MemorySections


class Bench(BenchBase, CpuSections, MemorySections, DeliverySections):
    """Every section (a method named after it) over the shared state: see the module doc."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True, help="directory with broadcast and bk-bench (release)")
    ap.add_argument("--dyn-bin-dir", help="release build without --static-swift-stdlib (levers)")
    ap.add_argument("--out", default=str(REPO / "docs/bench/results.json"))
    ap.add_argument("--work", default=str(REPO / "out/bench"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rt-runs", type=int, default=3)
    ap.add_argument("--rt-seconds", type=float, default=60)
    ap.add_argument("--rt-configs", default="", help="realtime configurations to run, e.g. 720p30 (default: all)")
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--warmup", type=int, default=120)
    ap.add_argument("--scale-seconds", type=float, default=12)
    ap.add_argument("--lever-seconds", type=float, default=12)
    ap.add_argument("--avsync-seconds", type=float, default=600)
    ap.add_argument("--dest-counts", default="1,2,4", help="destinations section: destination counts to (re)run")
    ap.add_argument("--avsync-sequential", action="store_true",
                    help="run the A/V sync cases one after another instead of at once (a busy machine)")
    ap.add_argument("--sections", default="machine,trivial,floor,realtime,scale,levers,embedding,capture,destinations,srt,shaped,replay,avsync,quality,x264model,memmatrix")
    ap.add_argument("--replay-seconds", type=int, default=20,
                    help="replay ring length of the replay section (its pushes last 2 (N + 2) + 5 s)")
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 run each, short real-time runs")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.rt_runs, a.rt_seconds, a.frames, a.warmup = 1, 1, 10, 150, 30
        a.scale_seconds, a.lever_seconds, a.avsync_seconds, a.replay_seconds = 5, 6, 40, 5
    b = Bench(a)
    partial = set(a.sections.split(",")) != set(ap.get_default("sections").split(","))
    if partial and Path(a.out).exists():
        # A partial run refreshes only its sections; the others keep their earlier numbers
        # (BENCHMARKS.md shows when each section was measured).
        b.results = json.loads(Path(a.out).read_text())
        b.results.setdefault("meta", {})
    b.results.setdefault("section_runs", {})
    b.results["config"] = {k: v for k, v in vars(a).items() if k not in ("out", "work")}
    if not partial:
        b.results["meta"]["started"] = time.strftime("%Y-%m-%d %H:%M:%S")
    b.partial = partial
    sections = a.sections.split(",")
    b.ingest_start()
    try:
        for s in ("machine", "trivial", "floor", "realtime", "scale", "levers", "embedding", "capture", "destinations",
                  "srt", "shaped", "replay", "avsync", "quality", "x264model", "memmatrix"):
            if s in sections:
                log(f"section {s}")
                t0 = time.time()
                load0, started = sh("cat /proc/loadavg"), time.strftime("%Y-%m-%d %H:%M:%S")
                getattr(b, s)()
                b.results["meta"][f"section_{s}_s"] = time.time() - t0
                # Each section's own commit and load, measured (BENCHMARKS.md prints them per section).
                b.results.setdefault("section_meta", {})[s] = {
                    "commit": sh("git -C " + str(REPO) + " rev-parse --short HEAD"), "started": started,
                    "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg_start": load0,
                    "loadavg_end": sh("cat /proc/loadavg"), "nproc": os.cpu_count()}
                if partial:
                    b.results["section_runs"][s] = {"finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                                                    "commit": sh("git -C " + str(REPO) + " rev-parse --short HEAD")}
                b.save()
    finally:
        b.ingest_stop()
        if not partial:
            b.results["meta"]["loadavg_end"] = sh("cat /proc/loadavg")
            b.results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        b.save()
    log(f"done in {time.time() - b.t_start:.0f} s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
