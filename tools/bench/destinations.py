#!/usr/bin/env python3
"""CPU and VmHWM of one encode to 1, 2 and 4 RTMP destinations: `broadcast` vs ffmpeg's tee muxer.

Both encoders read the same frames: a separate ffmpeg (not measured) renders testsrc2 with
temporal noise at 720p30 in real time (-re) as Y4M into the measured process's stdin, so both
pay for x264 at the same settings (veryfast, 2500 kbps CBR-ish VBV, 2 s GOP, 2 threads) and for
the fan-out, and nothing else. Video only: the Y4M pipe carries no audio. Each destination is its
own nginx-rtmp (bktools.ingest.start_ingest). CPU is user+system seconds per second
of media from wait4's rusage; VmHWM is /usr/bin/time's %M (the child's own ru_maxrss). `frames` is what the first ingest
recorded (PyAV), so a run that dropped frames shows it. The two are not the same x264 setup in
every respect: `broadcast` runs x264 for live latency (no lookahead/B-frames, and its memory
plan may pick a lighter step of its ladder), ffmpeg runs libx264's veryfast defaults.

    .venv/bin/python tools/bench/destinations.py [--seconds 30] [--counts 1,2,4]

Prints one Markdown table (for the lead to paste into BENCHMARKS.md) and one JSON line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
from bktools import probe as probe_recording  # tools/ is on PYTHONPATH (scripts/lib/common.sh)
from bktools.ingest import start_ingest

BROADCAST = REPO / ".build" / "release" / "broadcast"
W, H, FPS, KBPS = 1280, 720, 30, 2500


def generator(seconds: int) -> subprocess.Popen:
    return subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i",
                             f"testsrc2=size={W}x{H}:rate={FPS},noise=alls=40:allf=t", "-t", str(seconds),
                             "-f", "yuv4mpegpipe", "-pix_fmt", "yuv420p", "-"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def measured(argv: list[str], stdin, env: dict) -> tuple[float, int, int]:
    """Runs argv to completion; (CPU seconds, VmHWM bytes, exit status).

    Under /usr/bin/time: Linux carries the exec'ing process's RSS high-water mark into
    ru_maxrss, and a child vforked from this Python (which has PyAV loaded and grows as it
    decodes recordings) would report Python's peak instead of its own. time's %M is the child's."""
    fd, tfile = tempfile.mkstemp(prefix="dest-time-")
    os.close(fd)
    try:
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", tfile] + argv, stdin=stdin,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        lines = [x for x in Path(tfile).read_text().split() if x.isdigit()]
        hwm = int(lines[-1]) * 1024 if lines else 0
    finally:
        os.unlink(tfile)
    # /usr/bin/time exits with the child's status; its rusage covers the child (time's own
    # CPU is negligible).
    return ru.ru_utime + ru.ru_stime, hwm, p.returncode


def run(tool: str, count: int, seconds: int) -> dict:
    ingests = [start_ingest() for _ in range(count)]
    keys = [secrets.token_hex(8) for _ in ingests]
    try:
        gen = generator(seconds)
        env = {k: v for k, v in os.environ.items() if k not in ("STREAM_KEY", "BROADCAST_URL")}
        if tool == "broadcast":
            argv = [str(BROADCAST), "--source", "y4m:-", "--res", f"{H}p", "--fps", str(FPS),
                    "--video-bitrate", str(KBPS), "--preset", "veryfast", "--quiet"]
            for i, k in zip(ingests, keys):
                argv += ["--url", f"{i.url}/{k}"]
        else:
            outputs = "|".join(f"[f=flv:onfail=ignore]{i.url}/{k}" for i, k in zip(ingests, keys))
            argv = ["ffmpeg", "-v", "error", "-f", "yuv4mpegpipe", "-i", "-", "-map", "0:v",
                    "-c:v", "libx264", "-preset", "veryfast", "-b:v", f"{KBPS}k", "-maxrate", f"{KBPS}k",
                    "-bufsize", f"{KBPS}k", "-g", str(2 * FPS), "-threads", "2", "-f", "tee", outputs]
        cpu, hwm, code = measured(argv, gen.stdout, env)
        gen.stdout.close()
        gen.wait(timeout=30)
        report = probe_recording.probe(str(ingests[0].wait_recording(keys[0])))
        video = report.first("video")
        return {"tool": tool, "destinations": count, "seconds": seconds, "exit": code,
                "cpu_percent": round(100 * cpu / seconds, 1), "vmhwm_mib": round(hwm / 2**20, 1),
                "frames": video.frames if video else 0, "expected_frames": seconds * FPS}
    finally:
        for i in ingests:
            i.cleanup()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--counts", default="1,2,4")
    a = ap.parse_args()
    if not BROADCAST.exists():
        print(f"{BROADCAST} not built (scripts/build)", file=sys.stderr)
        return 2
    rows = []
    for n in (int(c) for c in a.counts.split(",")):
        for tool in ("broadcast", "ffmpeg-tee"):
            r = run(tool, n, a.seconds)
            print(json.dumps(r), flush=True)
            rows.append(r)
            time.sleep(1)
    print(f"\n{W}x{H}@{FPS}, {KBPS} kbps, {a.seconds} s; frames recorded by the first ingest of {a.seconds * FPS}")
    print(f"\n| destinations | broadcast CPU | broadcast VmHWM | broadcast frames | ffmpeg tee CPU | ffmpeg tee VmHWM | ffmpeg frames |")
    print("|---|---|---|---|---|---|---|")
    for n in sorted({r["destinations"] for r in rows}):
        b = next(r for r in rows if r["destinations"] == n and r["tool"] == "broadcast")
        f = next(r for r in rows if r["destinations"] == n and r["tool"] == "ffmpeg-tee")
        print(f"| {n} | {b['cpu_percent']}% | {b['vmhwm_mib']} MiB | {b['frames']} | "
              f"{f['cpu_percent']}% | {f['vmhwm_mib']} MiB | {f['frames']} |")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
