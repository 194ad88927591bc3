"""The benchmark runner's shared part: constants, helpers, and `BenchBase` (results.json, the
private ingest, one measured `broadcast` push, the identical Y4M + PCM inputs)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bktools import plan as memplan
from bktools.ingest import free_port
from bktools.procmeasure import run_measured, thread_cpu_ns

REPO = Path(__file__).resolve().parents[2]

MIB_ = float(1 << 20)
RES = {"360p": (640, 360), "480p": (854, 480), "720p": (1280, 720), "1080p": (1920, 1080)}


def kbps_for(res: str, fps: int) -> int:
    """Mirror of broadcast's default bitrate by resolution (Resolution.defaultVideoKbps)."""
    w, h = RES[res]
    p = w * h
    base = 800 if p <= 640 * 360 else 1200 if p <= 854 * 480 else 2500 if p <= 1280 * 720 else 4500
    return base * 3 // 2 if fps > 30 else base


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def summary(values: list[float]) -> dict:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"n": 0, "median": None, "min": None, "max": None, "values": []}
    return {"n": len(vals), "median": statistics.median(vals), "min": min(vals), "max": max(vals),
            "values": vals}


def last_json_line(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as exc:  # noqa: BLE001 - machine info is best effort
        return f"unavailable ({exc})"


class BenchBase:
    """The state every section shares: arguments, binaries, work dir, results, the ingest."""
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.bin = Path(a.bin_dir)
        self.broadcast = str(self.bin / "broadcast")
        self.bkbench = str(self.bin / "bk-bench")
        self.work = Path(a.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.out = Path(a.out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.results: dict = {"meta": {}, "config": {}}
        self.port = 0
        self.ingest_dir = self.work / "ingest"
        self.t_start = time.time()

    def save(self) -> None:
        if not getattr(self, "partial", False):
            self.results["meta"]["elapsed_s"] = time.time() - self.t_start
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.results, indent=1))
        tmp.replace(self.out)

    def ingest_start(self) -> None:
        self.port = free_port()
        subprocess.run([str(REPO / "scripts/ingest"), "start", "--port", str(self.port),
                        "--dir", str(self.ingest_dir)], check=True)

    def ingest_stop(self) -> None:
        subprocess.run([str(REPO / "scripts/ingest"), "stop", "--dir", str(self.ingest_dir)], check=False)

    def url(self) -> str:
        return f"rtmp://127.0.0.1:{self.port}/live"

    def clear_recordings(self) -> None:
        rec = self.ingest_dir / "rec"
        if rec.is_dir():
            for f in rec.glob("*.flv"):
                f.unlink(missing_ok=True)

    def broadcast_run(self, key: str, args: list[str], env: dict | None = None,
                      binary: str | None = None, stdin=subprocess.DEVNULL) -> dict:
        stats = self.work / f"stats-{key}.jsonl"
        stats.unlink(missing_ok=True)
        cmd = [binary or self.broadcast, "--url", self.url(), "--quiet", "--stats-json", str(stats)] + args
        e = {"STREAM_KEY": key}
        if env:
            e.update(env)
        r = run_measured(cmd, env=e, stdin=stdin)
        last = None
        if stats.exists():
            last = last_json_line(stats.read_text())
        r["stats"] = last
        r["cmd"] = " ".join(cmd)
        r.pop("stdout", None)
        if r["rc"] != 0:
            log(f"broadcast {key} exited {r['rc']}: {r['stderr'][-400:]}")
        return r

    def make_inputs(self, res: str, fps: int, seconds: float) -> tuple[Path, Path]:
        w, h = RES[res]
        dur = seconds + 2
        y4m = self.work / f"in-{res}{fps}.y4m"
        pcm = self.work / f"in-{int(dur)}s.pcm"
        if not y4m.exists():
            log(f"generating {y4m.name} ({w}x{h}@{fps}, {dur:.0f} s)")
            subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
                            "-i", f"testsrc2=size={w}x{h}:rate={fps}", "-t", str(dur), "-pix_fmt", "yuv420p",
                            "-f", "yuv4mpegpipe", str(y4m)], check=True)
        if not pcm.exists():
            subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
                            "-i", "sine=frequency=440:sample_rate=48000", "-t", str(dur), "-ac", "2",
                            "-f", "s16le", str(pcm)], check=True)
        return y4m, pcm

    def ffmpeg_cmd(self, y4m: Path, pcm: Path, res: str, fps: int, seconds: float, key: str,
                   preset: str = "veryfast") -> list[str]:
        kb = kbps_for(res, fps)
        return ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin",
                "-re", "-i", str(y4m),
                "-re", "-f", "s16le", "-ar", "48000", "-ac", "2", "-i", str(pcm),
                "-map", "0:v", "-map", "1:a", "-t", str(seconds),
                "-c:v", "libx264", "-preset", preset, "-tune", "zerolatency", "-profile:v", "high",
                "-b:v", f"{kb}k", "-maxrate", f"{kb}k", "-bufsize", f"{kb}k",
                "-g", str(2 * fps), "-keyint_min", str(2 * fps), "-sc_threshold", "0", "-bf", "0", "-refs", "1",
                "-x264-params", "sliced-threads=1:threads=2:rc-lookahead=0", "-pix_fmt", "yuv420p",
                "-c:a", "aac", "-b:a", "128k", "-f", "flv", f"{self.url()}/{key}"]
