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


class Bench:
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

    # ---- infrastructure -------------------------------------------------------------
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

    # ---- sections ---------------------------------------------------------------------
    def machine(self) -> None:
        lscpu = sh("lscpu")
        model = re.search(r"Model name:\s*(.+)", lscpu)
        self.results["machine"] = {
            "cpu_model": model.group(1).strip() if model else platform.processor(),
            "cores": os.cpu_count(),
            "kernel": platform.release(),
            "debian": sh("cat /etc/debian_version"),
            "mem_total": sh("free -h | awk '/Mem:/{print $2}'"),
            "swift": sh("swift --version 2>&1 | head -n1"),
            "ffmpeg": sh("ffmpeg -version | head -n1"),
            "x264": sh("dpkg-query -W -f='${Package} ${Version}' 'libx264-1*' 2>/dev/null"),
            "vo_aacenc": sh("dpkg-query -W -f='${Package} ${Version}' 'libvo-aacenc0' 2>/dev/null"),
            "nginx": sh("nginx -v 2>&1"),
            "nginx_rtmp": sh("dpkg-query -W -f='${Package} ${Version}' libnginx-mod-rtmp 2>/dev/null"),
            "broadcast": sh(f"{self.broadcast} --version"),
            "git_commit": sh(f"git -C {REPO} rev-parse --short HEAD"),
            "git_dirty_files": sh(f"git -C {REPO} status --porcelain --untracked-files=no | wc -l"),
            "loadavg_start": sh("cat /proc/loadavg"),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        }

    def trivial(self) -> None:
        """Peak RSS of a trivial Swift program in each stdlib/Foundation combination."""
        d = self.work / "trivial"
        d.mkdir(exist_ok=True)
        swiftc = shutil.which("swiftc") or "/opt/swift/usr/bin/swiftc"
        variants = [
            ("static, no Foundation", "", True),
            ("dynamic, no Foundation", "", False),
            ("static, FoundationEssentials", "import FoundationEssentials\n", True),
            ("dynamic, FoundationEssentials", "import FoundationEssentials\n", False),
            ("dynamic, Foundation", "import Foundation\n", False),
        ]
        out = []
        for name, imp, static in variants:
            slug = re.sub(r"[^a-z]+", "-", name.lower()).strip("-")
            src = d / f"{slug}.swift"
            # The Foundation variants touch one type so the import cannot be considered unused.
            body = imp + ("let d = Data([1, 2, 3])\nprint(d.count)\n" if imp else "print(3)\n")
            src.write_text(body)
            exe = d / slug
            cmd = [swiftc, "-O", str(src), "-o", str(exe)] + (["-static-stdlib"] if static else [])
            if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
                c = subprocess.run(cmd, capture_output=True, text=True)
                if c.returncode != 0:
                    out.append({"variant": name, "error": c.stderr[-300:]})
                    continue
            runs = [run_measured([str(exe)])["maxrss_bytes"] for _ in range(self.a.runs)]
            out.append({"variant": name, "compile": " ".join(cmd[:1] + ["-O", src.name, "-o", slug]
                                                             + (["-static-stdlib"] if static else [])),
                        "peak_rss_bytes": summary(runs)})
            log(f"trivial {name}: {statistics.median(runs) / 1e6:.1f} MB")
        self.results["trivial"] = out

    def floor(self) -> None:
        frames, warm = self.a.frames, self.a.warmup
        shim = self.work / "allocshim.so"
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(shim),
                        str(REPO / "tools/allocshim/allocshim.c"), "-ldl"], check=True)
        res_out = {}
        for res in ("480p", "720p", "1080p"):
            fl, pl = [], []
            for i in range(self.a.runs):
                # Alternate floor and pipeline so slow drifts in machine load hit both alike.
                for mode, acc in (("floor", fl), ("pipeline", pl)):
                    r = run_measured([self.bkbench, mode, "--res", res, "--frames", str(frames),
                                      "--warmup", str(warm)])
                    j = last_json_line(r["stdout"])
                    if r["rc"] != 0 or j is None:
                        log(f"{mode} {res} failed rc={r['rc']}: {r['stderr'][-300:]}")
                        continue
                    acc.append(j)
            a = run_measured([self.bkbench, "pipeline", "--res", res, "--frames", str(frames),
                              "--warmup", str(warm), "--audio"], env={"LD_PRELOAD": str(shim)})
            aj = last_json_line(a["stdout"]) or {}
            entry = {
                "floor_cpu_ms_per_frame": summary([j["cpu_ms_per_frame"] for j in fl]),
                "floor_fps": summary([j["fps"] for j in fl]),
                "floor_wall_ms_per_frame": summary([1000.0 / j["fps"] for j in fl]),
                "pipeline_cpu_ms_per_frame": summary([j["cpu_ms_per_frame"] for j in pl]),
                "pipeline_fps": summary([j["fps"] for j in pl]),
                "alloc_run": aj,
            }
            fm, pm = entry["floor_cpu_ms_per_frame"]["median"], entry["pipeline_cpu_ms_per_frame"]["median"]
            entry["overhead_percent"] = (pm / fm - 1) * 100 if fm and pm else None
            # Per-run paired overhead (run i's pipeline over run i's floor) for the min/max spread.
            entry["overhead_percent_paired"] = summary(
                [(p["cpu_ms_per_frame"] / f["cpu_ms_per_frame"] - 1) * 100 for f, p in zip(fl, pl)])
            res_out[res] = entry
            log(f"floor/pipeline {res}: floor {fm} ms, pipeline {pm} ms, allocs/frame "
                f"{aj.get('allocations_per_frame')}")
            self.results["floor"] = {"frames": frames, "warmup": warm, "by_res": res_out,
                                     "commands": {
                                         "floor": f"bk-bench floor --res RES --frames {frames} --warmup {warm}",
                                         "pipeline": f"bk-bench pipeline --res RES --frames {frames} --warmup {warm}",
                                         "alloc": f"LD_PRELOAD=allocshim.so bk-bench pipeline --res RES "
                                                  f"--frames {frames} --warmup {warm} --audio"}}
            self.save()

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

    def realtime(self) -> None:
        secs = self.a.rt_seconds
        configs = [("480p", 30), ("720p", 30), ("1080p", 30), ("720p", 60)]
        if self.a.rt_configs:
            wanted = self.a.rt_configs.split(",")
            configs = [c for c in configs if f"{c[0]}{c[1]}" in wanted]
        # A run of some configurations keeps the others' earlier numbers.
        out = dict(self.results.get("realtime") or {}) if self.a.rt_configs else {}
        for res, fps in configs:
            name = f"{res}{fps}"
            y4m, pcm = self.make_inputs(res, fps, secs)
            ours, theirs = [], []
            # ffmpeg's preset must match ours; at 1080p the default 50M budget would pick a lighter
            # preset for us, so the peer runs raise the budget and pin veryfast (the budgeted 1080p
            # run is in the levers section).
            extra = ["--memory-budget", "200M", "--preset", "veryfast"]
            ours_args = ["--res", res, "--fps", str(fps), "--source", f"y4m:{y4m}", "--pcm", str(pcm),
                         "--duration", str(secs)] + extra
            for i in range(self.a.rt_runs):
                r = self.broadcast_run(f"ours-{name}-{i}", ours_args)
                ours.append(r)
                log(f"realtime {name} ours run {i}: cpu {r['cpu_percent']:.1f}% rss {r['maxrss_bytes'] / 1e6:.1f} MB "
                    f"p99 {(r['stats'] or {}).get('latency_p99_ms')}")
                f = run_measured(self.ffmpeg_cmd(y4m, pcm, res, fps, secs, f"ff-{name}-{i}"))
                f.pop("stdout", None)
                if f["rc"] != 0:
                    log(f"ffmpeg {name} rc={f['rc']}: {f['stderr'][-300:]}")
                theirs.append(f)
                log(f"realtime {name} ffmpeg run {i}: cpu {f['cpu_percent']:.1f}% rss {f['maxrss_bytes'] / 1e6:.1f} MB")
                self.clear_recordings()
            ok = [r for r in ours if r["rc"] == 0]
            okf = [r for r in theirs if r["rc"] == 0]
            e = {
                "res": res, "fps": fps, "seconds": secs, "video_kbps": kbps_for(res, fps),
                "ours_cpu_percent": summary([r["cpu_percent"] for r in ok]),
                "ours_cpu_s": summary([r["cpu_s"] for r in ok]),
                "ours_peak_rss_bytes": summary([r["maxrss_bytes"] for r in ok]),
                "ours_latency_p50_ms": summary([(r["stats"] or {}).get("latency_p50_ms") for r in ok]),
                "ours_latency_p99_ms": summary([(r["stats"] or {}).get("latency_p99_ms") for r in ok]),
                "ours_kbps": summary([(r["stats"] or {}).get("kbps") for r in ok]),
                "ours_drops": [(r["stats"] or {}).get("drops") for r in ours],
                "ours_rc": [r["rc"] for r in ours],
                "ffmpeg_cpu_percent": summary([r["cpu_percent"] for r in okf]),
                "ffmpeg_cpu_s": summary([r["cpu_s"] for r in okf]),
                "ffmpeg_peak_rss_bytes": summary([r["maxrss_bytes"] for r in okf]),
                "ffmpeg_rc": [r["rc"] for r in theirs],
                "ours_cmd": ours[0]["cmd"].replace(str(self.work), "$WORK") if ours else "",
                "ffmpeg_cmd": " ".join(self.ffmpeg_cmd(y4m, pcm, res, fps, secs, "KEY")).replace(str(self.work), "$WORK"),
            }
            oc, fc = e["ours_cpu_s"]["median"], e["ffmpeg_cpu_s"]["median"]
            orr, frr = e["ours_peak_rss_bytes"]["median"], e["ffmpeg_peak_rss_bytes"]["median"]
            e["measured"] = {"finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                             "commit": sh("git -C " + str(REPO) + " rev-parse --short HEAD"),
                             "runs": self.a.rt_runs, "seconds": secs}
            e["cpu_ratio"] = oc / fc if oc and fc else None
            e["rss_ratio"] = orr / frr if orr and frr else None
            out[name] = e
            self.results["realtime"] = out
            self.save()
            y4m.unlink(missing_ok=True)  # up to 5 GB each; regenerated on the next run

    def scale(self) -> None:
        out = {}
        for n in (1, 2, 4, 8):
            runs = []
            for i in range(self.a.runs):
                r = run_measured([self.bkbench, "sessions", "--count", str(n), "--res", "360p",
                                  "--seconds", str(self.a.scale_seconds), "--url", self.url()])
                j = last_json_line(r["stdout"])
                if r["rc"] != 0 or j is None:
                    log(f"sessions {n} failed rc={r['rc']}: {r['stderr'][-300:]}")
                    continue
                j["process_maxrss_bytes"] = r["maxrss_bytes"]
                runs.append(j)
                self.clear_recordings()
            out[str(n)] = {
                "count": n,
                "cpu_percent": summary([j["cpu_percent"] for j in runs]),
                "cpu_percent_per_session": summary([j["cpu_percent_per_session"] for j in runs]),
                "rss_bytes": summary([j["rss_bytes"] for j in runs]),
                "rss_per_session_bytes": summary([j["rss_bytes"] / n for j in runs]),
                "peak_rss_bytes": summary([j["peak_rss_bytes"] for j in runs]),
                "drops": [j["drops"] for j in runs],
                "video_frames_sent": [j["video_frames_sent"] for j in runs],
            }
            log(f"scale {n}: cpu/session {out[str(n)]['cpu_percent_per_session']['median']}")
        self.results["scale"] = {"seconds": self.a.scale_seconds, "by_count": out,
                                 "command": f"bk-bench sessions --count N --res 360p --seconds {self.a.scale_seconds} --url URL"}
        self.save()
        # The same streams as separate processes (how a fleet runs them: one pod or unit each):
        # N `broadcast` processes started together, each measured on its own.
        procs = {}
        secs = self.a.scale_seconds
        for n in (1, 2, 4):
            per_run = []
            for i in range(self.a.runs):
                with tempfile.TemporaryDirectory() as tmp:
                    import concurrent.futures as cf
                    def one(k: int) -> dict:
                        return self.broadcast_run(f"proc-{n}-{i}-{k}", ["--source", "test", "--res", "360p", "--fps", "30",
                                                                         "--duration", str(secs)])
                    with cf.ThreadPoolExecutor(max_workers=n) as ex:
                        rs = list(ex.map(one, range(n)))
                per_run.append(rs)
                self.clear_recordings()
            ok = [[r for r in rs if r["rc"] == 0] for rs in per_run]
            procs[str(n)] = {
                "count": n,
                "cpu_percent_total": summary([sum(r["cpu_percent"] for r in rs) for rs in ok if rs]),
                "cpu_percent_per_stream": summary([r["cpu_percent"] for rs in ok for r in rs]),
                "peak_rss_per_stream_bytes": summary([r["maxrss_bytes"] for rs in ok for r in rs]),
                "drops": [[(r["stats"] or {}).get("drops") for r in rs] for rs in per_run],
                "exits": [[r["rc"] for r in rs] for rs in per_run],
            }
            log(f"scale {n} processes: cpu/stream {procs[str(n)]['cpu_percent_per_stream']['median']}")
        self.results["scale"]["by_processes"] = procs
        self.results["scale"]["process_command"] = f"broadcast --source test --res 360p --fps 30 --duration {secs} (N at once)"
        self.save()

    def levers(self) -> None:
        secs = self.a.lever_seconds
        base = ["--source", "test", "--fps", "30", "--duration", str(secs)]
        cases = [
            ("baseline", "720p30 defaults (static stdlib, THP off, 2 arenas, 2 sliced threads, veryfast)", ["--res", "720p"], {}, None),
            ("dynamic_stdlib", "dynamic Swift stdlib", ["--res", "720p"], {}, "dyn"),
            ("thp_on", "THP left on (BROADCAST_ALLOW_THP=1)", ["--res", "720p"], {"BROADCAST_ALLOW_THP": "1"}, None),
            ("arenas_default", "glibc default arenas (BROADCAST_MALLOC_ARENA_MAX=0)", ["--res", "720p"], {"BROADCAST_MALLOC_ARENA_MAX": "0"}, None),
            ("startup_pages_kept", "start-up pages kept resident (BROADCAST_KEEP_STARTUP_PAGES=1)", ["--res", "720p"], {"BROADCAST_KEEP_STARTUP_PAGES": "1"}, None),
            ("threads_1", "--x264-threads 1", ["--res", "720p", "--x264-threads", "1"], {}, None),
            ("preset_ultrafast", "--preset ultrafast", ["--res", "720p", "--preset", "ultrafast"], {}, None),
            ("preset_superfast", "--preset superfast", ["--res", "720p", "--preset", "superfast"], {}, None),
            ("res_480p", "480p30, default 50M budget", ["--res", "480p"], {}, None),
            ("res_1080p", "1080p30, default 50M budget", ["--res", "1080p"], {}, None),
        ]
        dyn = self.a.dyn_bin_dir
        out = {}
        for slug, label, args, env, which in cases:
            binary = None
            if which == "dyn":
                if not dyn or not (Path(dyn) / "broadcast").exists():
                    out[slug] = {"label": label, "skipped": "no dynamic-stdlib build"}
                    continue
                binary = str(Path(dyn) / "broadcast")
            runs = []
            for i in range(self.a.runs):
                r = self.broadcast_run(f"lever-{slug}-{i}", base + args, env=env, binary=binary)
                if r["rc"] == 0:
                    runs.append(r)
                self.clear_recordings()
            envs = " ".join(f"{k}={v}" for k, v in env.items())
            out[slug] = {
                "label": label,
                "command": (envs + " " if envs else "") + ("broadcast(dynamic) " if binary else "broadcast ")
                           + " ".join(base + args),
                "peak_rss_bytes": summary([r["maxrss_bytes"] for r in runs]),
                "stats_peak_rss_bytes": summary([(r["stats"] or {}).get("peak_rss_bytes") for r in runs]),
                "cpu_percent": summary([r["cpu_percent"] for r in runs]),
                "drops": [(r["stats"] or {}).get("drops") for r in runs],
            }
            log(f"lever {slug}: peak {out[slug]['peak_rss_bytes']['median']}")
            self.results["levers"] = {"seconds": secs, "cases": out}
            self.save()
        plans = {}
        for res in ("480p", "720p", "1080p"):
            p = subprocess.run([self.broadcast, "--print-memory-plan", "--res", res, "--key", "x"],
                               capture_output=True, text=True)
            plans[res] = (p.stdout + p.stderr).strip()
        self.results["levers"]["memory_plans"] = plans
        self.save()

    def quality(self) -> None:
        secs = min(self.a.rt_seconds, 15)
        out = {}
        for res in ("720p", "1080p"):
            w, h = RES[res]
            kb = kbps_for(res, 30)
            y4m = self.work / f"moving-{res}.y4m"
            if not y4m.exists():
                # testsrc2 alone barely moves; the life overlay keeps motion search and the VBV busy.
                subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
                                "-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=30",
                                "-f", "lavfi", "-i", f"life=size={w}x{h}:rate=30:mold=10:ratio=0.3:"
                                "death_color=#202020:life_color=#c0c0c0",
                                "-filter_complex", "[0:v]format=yuv420p[a];[1:v]format=yuv420p[b];"
                                "[a][b]blend=all_mode=overlay:all_opacity=0.5,format=yuv420p",
                                "-t", str(secs), "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", str(y4m)], check=True)
            choice = memplan.read_plan(self.broadcast, ["--res", res, "--source", f"y4m:{y4m}", "--key", "x"]).x264 or ""
            key = f"quality-{res}"
            r = self.broadcast_run(key, ["--res", res, "--source", f"y4m:{y4m}", "--duration", str(secs)])
            time.sleep(2)  # nginx closes the recording when the publisher goes away
            rec = self.ingest_dir / "rec" / f"{key}.flv"
            ff = self.work / f"ff-quality-{res}.flv"
            ffcmd = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-i", str(y4m),
                     "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-profile:v", "high",
                     "-b:v", f"{kb}k", "-maxrate", f"{kb}k", "-bufsize", f"{kb}k", "-g", "60", "-keyint_min", "60",
                     "-sc_threshold", "0", "-bf", "0", "-refs", "1",
                     "-x264-params", "sliced-threads=1:threads=2:rc-lookahead=0", "-pix_fmt", "yuv420p", str(ff)]
            f = run_measured(ffcmd)

            def psnr(path: Path) -> dict | None:
                p = subprocess.run([sys.executable, str(REPO / "tools/bench/psnr_matched.py"), str(path), str(y4m)],
                                   capture_output=True, text=True)
                words = p.stdout.split()
                return ({words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}
                        if p.returncode == 0 and words else None)

            out[res] = {
                "seconds": secs, "video_kbps": kb, "encoder_choice": choice,
                "ours_peak_rss_bytes": (r["stats"] or {}).get("peak_rss_bytes"),
                "ours_drops": (r["stats"] or {}).get("drops"), "ours_rc": r["rc"],
                "ours_psnr": psnr(rec) if rec.exists() else None,
                "ffmpeg_psnr": psnr(ff) if f["rc"] == 0 else None,
                "ours_cmd": r["cmd"].replace(str(self.work), "$WORK"),
                "ffmpeg_cmd": " ".join(ffcmd).replace(str(self.work), "$WORK"),
            }
            log(f"quality {res}: {choice}, ours {out[res]['ours_psnr']}, ffmpeg {out[res]['ffmpeg_psnr']}")
            self.results["quality"] = out
            self.save()
            self.clear_recordings()
            ff.unlink(missing_ok=True)
            y4m.unlink(missing_ok=True)

    def embedding(self) -> None:
        secs = min(self.a.rt_seconds, 30)
        res, fps = "720p", 30
        y4m, pcm = self.make_inputs(res, fps, secs)
        prefix = self.work / "prefix"
        subprocess.run([str(REPO / "scripts/install"), "--prefix", str(prefix), "--no-build",
                        "--build-dir", str(Path(self.a.bin_dir))], check=True, capture_output=True)
        env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "broadcastkit"], env=env, check=True,
                               capture_output=True, text=True).stdout.split()
        exe = self.work / "y4m_push"
        subprocess.run(["cc", "-O2", "-o", str(exe), str(REPO / "Benchmarks/c/y4m_push.c"), *flags], check=True, env=env)
        kb = kbps_for(res, fps)
        ours, capi = [], []
        for i in range(self.a.rt_runs):
            r = self.broadcast_run(f"embed-cli-{i}", ["--res", res, "--fps", str(fps), "--source", f"y4m:{y4m}",
                                                      "--pcm", str(pcm), "--duration", str(secs)])
            ours.append(r)
            c = run_measured([str(exe), self.url(), str(y4m), str(pcm), str(int(secs)), str(kb)],
                             env={"STREAM_KEY": f"embed-capi-{i}"})
            c["stats"] = last_json_line(c.pop("stdout", ""))
            capi.append(c)
            log(f"embedding run {i}: cli cpu {r['cpu_s']:.2f} s rss {r['maxrss_bytes'] / 1e6:.1f} MB; "
                f"c-abi cpu {c['cpu_s']:.2f} s rss {c['maxrss_bytes'] / 1e6:.1f} MB (rc {r['rc']}, {c['rc']})")
            self.clear_recordings()
        ok, okc = [r for r in ours if r["rc"] == 0], [c for c in capi if c["rc"] == 0]
        e = {"res": res, "fps": fps, "seconds": secs, "video_kbps": kb,
             "cli_cpu_s": summary([r["cpu_s"] for r in ok]), "capi_cpu_s": summary([c["cpu_s"] for c in okc]),
             "cli_peak_rss_bytes": summary([r["maxrss_bytes"] for r in ok]),
             "capi_peak_rss_bytes": summary([c["maxrss_bytes"] for c in okc]),
             "cli_frames_sent": [(r["stats"] or {}).get("video_frames_sent") for r in ours],
             "capi_frames_sent": [(c["stats"] or {}).get("video_frames_sent") for c in capi],
             "cli_rc": [r["rc"] for r in ours], "capi_rc": [c["rc"] for c in capi],
             "cli_cmd": f"broadcast --res {res} --fps {fps} --source y4m:$WORK/{y4m.name} --pcm $WORK/{pcm.name} --duration {secs:.0f}",
             "capi_cmd": f"y4m_push URL $WORK/{y4m.name} $WORK/{pcm.name} {secs:.0f} {kb}"}
        oc, cc = e["cli_cpu_s"].get("median"), e["capi_cpu_s"].get("median")
        e["cpu_ratio"] = cc / oc if oc and cc else None
        self.results["embedding"] = e
        self.save()
        y4m.unlink(missing_ok=True)

    def capture(self) -> None:
        import pw_memory_run  # noqa: E402  (tools/ is on PYTHONPATH: scripts/lib/common.sh)
        secs = min(self.a.rt_seconds, 30)
        state = self.work / "pipewire"
        up = subprocess.run([str(REPO / "scripts/pipewire-up"), "--no-screen", "--state", str(state)],
                            capture_output=True, text=True)
        if up.returncode != 0:
            log(f"capture: scripts/pipewire-up failed: {up.stderr[-300:]}")
            self.results["capture"] = {"error": up.stderr[-300:]}
            return
        env = dict(os.environ)
        for line in up.stdout.splitlines():
            m = re.match(r"export (\w+)=(.*)", line.strip())
            if m:
                env[m.group(1)] = m.group(2).strip("'\"")
        cases = [("1280x720", "720p", None), ("2560x1440", "720p", None), ("2560x1440", "720p", 8),
                 ("3840x2160", "1080p", None)]
        out = {}
        # The scaling step alone: our striped, allocation-free scaler against libyuv's whole-frame one.
        scaler = []
        for src, res in (("1920x1080", "720p"), ("2560x1440", "720p"), ("3840x2160", "720p"), ("3840x2160", "1080p")):
            r = run_measured([self.bkbench, "scaler", "--src-res", src, "--res", res, "--frames", "200"])
            j = last_json_line(r["stdout"])
            if j:
                j["command"] = f"bk-bench scaler --src-res {src} --res {res} --frames 200"
                scaler.append(j)
        out["scaler"] = scaler
        try:
            for size, res, buffers in cases:
                name = f"{size}-{res}" + (f"-{buffers}buf" if buffers else "")
                runs = []
                for i in range(max(1, min(self.a.runs, 2))):
                    r = pw_memory_run.run(size, res, int(secs), buffers, Path(self.a.bin_dir), env, self.work / "capture")
                    r.pop("recording", None)
                    runs.append(r)
                    log(f"capture {name} run {i}: VmHWM {r['vmhwm_mib']} MiB, plan {r.get('plan_mb', {}).get('total')}, "
                        f"cpu {r['cpu_s']} s, exit {r['exit']}")
                ok = [r for r in runs if r["exit"] == 0]
                out[name] = {
                    "size": size, "res": res, "buffers": buffers or "default", "seconds": secs,
                    "vmhwm_mib": summary([r["vmhwm_mib"] for r in ok]),
                    "anon_mib": summary([r["at_max_rss_mib"].get("RssAnon") for r in ok]),
                    "file_mib": summary([r["at_max_rss_mib"].get("RssFile") for r in ok]),
                    "shmem_mib": summary([r["at_max_rss_mib"].get("RssShmem") for r in ok]),
                    "plan_total_mb": (ok[0]["plan_mb"].get("total") if ok else None),
                    "plan_capture_mb": (ok[0]["plan_mb"].get("capture source buffers") if ok else None),
                    "cpu_percent": summary([100 * r["cpu_s"] / secs for r in ok]),
                    "produced": [r["produced"] for r in runs], "exits": [r["exit"] for r in runs],
                    "producer_format": runs[0]["producer_format"] if runs else "",
                    "command": f"tools/pw_memory_run.py --size {size} --res {res} --seconds {int(secs)}"
                               + (f" --buffers {buffers}" if buffers else ""),
                }
                self.results["capture"] = out
                self.save()
        finally:
            subprocess.run([str(REPO / "scripts/pipewire-down"), "--state", str(state)], capture_output=True)

    def x264model(self) -> None:
        # x264's working set per configuration and size, one bk-bench process each: the table
        # MemoryPlan interpolates (tools/bench/x264model.py --write puts it in the library).
        r = subprocess.run([sys.executable, str(REPO / "tools/bench/x264model.py"), "--bin-dir", str(self.a.bin_dir),
                            "--runs", str(max(1, min(self.a.runs, 2)))], capture_output=True, text=True, timeout=3600)
        self.results["x264model"] = last_json_line(r.stdout) or {"error": r.stderr[-300:]}

    def memmatrix(self) -> None:
        # The plan against VmHWM across 360p-1080p, test source and PipeWire, with and without a
        # replay ring; and what a 50 MiB cgroup charges besides the process (tools/bench/memory_matrix.py).
        secs = 8 if self.a.quick else 20
        r = subprocess.run([sys.executable, str(REPO / "tools/bench/memory_matrix.py"), "--bin-dir", str(self.a.bin_dir),
                            "--seconds", str(secs), "--work", str(self.work / "memmatrix")],
                           capture_output=True, text=True, timeout=3600)
        self.results["memmatrix"] = last_json_line(r.stdout) or {"error": r.stderr[-300:]}

    def destinations(self) -> None:
        # One encode to 1/2/4 nginx-rtmp destinations against ffmpeg's tee muxer on the same frames
        # (tools/bench/destinations.py: each destination its own nginx, moving testsrc2 + noise).
        from bench import destinations as dst
        secs = int(min(self.a.rt_seconds, 30))
        load0 = sh("cat /proc/loadavg")
        counts = [int(c) for c in self.a.dest_counts.split(",")]
        # A partial rerun (--dest-counts 4) replaces only those rows.
        rows = [x for x in ((self.results.get("destinations") or {}).get("rows") or [])
                if x["destinations"] not in counts]
        for n in counts:
            for tool in ("broadcast", "ffmpeg-tee"):
                for i in range(self.a.rt_runs):
                    r = dst.run(tool, n, secs)
                    r["run"] = i
                    rows.append(r)
                    log(f"destinations {n} {tool}: cpu {r['cpu_percent']} % vmhwm {r['vmhwm_mib']} MiB "
                        f"frames {r['frames']}/{r['expected_frames']} exit {r['exit']}")
                    time.sleep(1)
        self.results["destinations"] = {
            "seconds": secs, "rows": rows,
            "command": ".venv/bin/python tools/bench/destinations.py --seconds SECONDS --counts 1,2,4",
            "setup": f"{dst.W}x{dst.H}@{dst.FPS}, {dst.KBPS} kbps, veryfast, video only from a Y4M pipe",
            "loadavg_start": load0, "loadavg_end": sh("cat /proc/loadavg")}
        self.save()

    def srt(self) -> None:
        # SRT vs RTMP from the same Y4M input, each to an independent receiver (tools/bench/srt.py).
        sys.path.insert(0, str(REPO / "tools" / "bench"))
        import srt as srt_bench
        secs = int(min(self.a.rt_seconds, 30))
        load0 = sh("cat /proc/loadavg")
        rows = []
        for i in range(self.a.rt_runs):
            for transport in ("rtmp", "srt"):
                r = srt_bench.run(transport, secs)
                r["run"] = i
                rows.append(r)
                log(f"srt section {transport}: cpu {r['cpu_percent']} % vmhwm {r['vmhwm_mib']} MiB "
                    f"latency p50 {r['latency_p50_ms']} p95 {r['latency_p95_ms']} ms exit {r['exit']}")
                time.sleep(1)
        self.results["srt"] = {
            "seconds": secs, "rows": rows, "commit": sh("git rev-parse --short HEAD"),
            "command": ".venv/bin/python tools/bench/srt.py --seconds SECONDS",
            "setup": f"{srt_bench.W}x{srt_bench.H}@{srt_bench.FPS}, {srt_bench.KBPS} kbps, Y4M pipe with a time code; "
                     "receivers: srt-live-transmit (SRT, 120 ms latency) and ffmpeg -listen (RTMP), decoded by PyAV",
            "loadavg_start": load0, "loadavg_end": sh("cat /proc/loadavg")}
        self.save()

    # ---- replay (issue 16) -------------------------------------------------------------
    REPLAY_BUDGET = "256M"   # roomy and the same with and without the ring: no ladder step differs

    def replay_plan(self, res: str, seconds: int) -> dict:
        """The ring line (MiB) and the x264 configuration of --print-memory-plan=json for a replay run."""
        plan = memplan.read_plan(self.broadcast, ["--res", res, "--source", "test", "--memory-budget",
                                                  self.REPLAY_BUDGET, "--replay-seconds", str(seconds), "--key", "x"])
        return {"ring_mib": plan.ring_mb, "x264": plan.x264, "plan": plan.doc}

    def replay(self) -> None:
        # (a) The ring's memory per second: VmHWM of a test-source push (moving pattern) with
        # --replay-seconds N minus the same push without, over N, next to the plan's ring line. The
        # push lasts 2 (N + GOP) + 5 s so the ring wraps (its pages are touched as it first fills);
        # bytes_into_ring / plan says whether it did.
        n = self.a.replay_seconds
        gop = 2
        secs = 2 * (n + gop) + 5
        per_res = {}
        for res in ("480p", "720p", "1080p"):
            plan = self.replay_plan(res, n)
            base = ["--res", res, "--fps", "30", "--source", "test", "--duration", str(secs),
                    "--memory-budget", self.REPLAY_BUDGET]
            without, with_ring = [], []
            for i in range(self.a.rt_runs):
                for runs, extra, tag in ((without, [], "off"), (with_ring, ["--replay-seconds", str(n)], "on")):
                    r = self.broadcast_run(f"replay-{res}-{tag}-{i}", base + extra)
                    self.clear_recordings()
                    if r["rc"] == 0:
                        runs.append(r)
                    log(f"replay {res} ring {tag} run {i}: VmHWM {r['maxrss_bytes'] / MIB_:.1f} MiB exit {r['rc']}")
            pairs = list(zip(without, with_ring))
            growth = [(w["maxrss_bytes"] - o["maxrss_bytes"]) / MIB_ for o, w in pairs]
            written = [((w["stats"] or {}).get("video_bytes_sent", 0) + (w["stats"] or {}).get("audio_bytes_sent", 0))
                       for w in with_ring]
            per_res[res] = {
                "seconds": n, "run_seconds": secs,
                "vmhwm_without_mib": summary([o["maxrss_bytes"] / MIB_ for o in without]),
                "vmhwm_with_mib": summary([w["maxrss_bytes"] / MIB_ for w in with_ring]),
                "growth_mib": summary(growth),
                "growth_mib_per_s": summary([g / n for g in growth]),
                "plan_ring_mib": plan["ring_mib"],
                "plan_ring_mib_per_s": plan["ring_mib"] / n if plan["ring_mib"] else None,
                "plan_x264": plan["x264"],
                "video_kbps": summary([(w["stats"] or {}).get("video_bytes_sent", 0) * 8 / 1000 / secs for w in with_ring]),
                # What went through the ring over the run against the plan's ring line: >= 1 means it wrapped.
                "written_over_plan": summary([b / (plan["ring_mib"] * MIB_) for b in written if plan["ring_mib"]]),
                "drops": [(w["stats"] or {}).get("drops") for w in with_ring],
                "command": f"broadcast {' '.join(base)} [--replay-seconds {n}]",
            }
            self.results["replay"] = {"memory": per_res, "budget": self.REPLAY_BUDGET}
            self.save()

        # (b) Clip save time and CPU spike: a live 720p push with a full ring; each save goes through
        # the control socket (`save-replay N PATH`), wall time from the command to the reply. The
        # process's CPU (every thread's schedstat) over the save is set against the same length of
        # time without a save, measured 2 s after it; bk-replay is the saver thread alone.
        res = "720p"
        saves = max(1, self.a.rt_runs)
        fill = 1.5 * (n + gop) + 3
        total = fill + saves * 8 + 10
        sock = self.work / "replay-ctl.sock"
        sock.unlink(missing_ok=True)
        clips = self.work / "replay-clips"
        shutil.rmtree(clips, ignore_errors=True)
        clips.mkdir(parents=True)
        stats = self.work / "stats-replay-save.jsonl"
        stats.unlink(missing_ok=True)
        cmd = [self.broadcast, "--url", self.url(), "--quiet", "--stats-json", str(stats), "--res", res, "--fps", "30",
               "--source", "test", "--replay-seconds", str(n), "--replay-dir", str(clips), "--control", str(sock),
               "--duration", str(int(total))]
        p = subprocess.Popen(cmd, env=dict(os.environ, STREAM_KEY="replay-save"), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        rows = []
        try:
            time.sleep(fill)
            for k in range(saves):
                path = clips / f"clip-{k}.mp4"
                cpu0, th0 = thread_cpu_ns(p.pid)
                t0 = time.monotonic()
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                    c.settimeout(60)
                    c.connect(str(sock))
                    c.sendall(f"save-replay {n} {path}\n".encode())
                    reply = b""
                    while not reply.endswith(b"\n"):
                        chunk = c.recv(4096)
                        if not chunk:
                            break
                        reply += chunk
                wall = time.monotonic() - t0
                cpu1, th1 = thread_cpu_ns(p.pid)
                time.sleep(2)
                b0, _ = thread_cpu_ns(p.pid)
                time.sleep(wall)
                b1, _ = thread_cpu_ns(p.pid)
                try:
                    answer = json.loads(reply.decode())
                except json.JSONDecodeError:
                    answer = {"ok": False, "error": reply.decode(errors="replace")[:200]}
                row = {"save": k, "ok": bool(answer.get("ok")), "clip_s": answer.get("duration_s"),
                       "clip_bytes": answer.get("bytes"), "error": answer.get("error"),
                       "wall_ms": wall * 1000, "process_cpu_ms": (cpu1 - cpu0) / 1e6,
                       "baseline_cpu_ms": (b1 - b0) / 1e6,
                       "saver_cpu_ms": (th1.get("bk-replay", 0) - th0.get("bk-replay", 0)) / 1e6}
                row["spike_cpu_ms"] = row["process_cpu_ms"] - row["baseline_cpu_ms"]
                rows.append(row)
                log(f"replay save {k}: {row['wall_ms']:.0f} ms wall, process CPU {row['process_cpu_ms']:.0f} ms "
                    f"(same length without a save {row['baseline_cpu_ms']:.0f} ms), bk-replay {row['saver_cpu_ms']:.0f} ms, "
                    f"clip {row['clip_s']} s {row['clip_bytes']} bytes")
                time.sleep(3)
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            err = p.communicate(timeout=60)[1].decode(errors="replace")
            self.clear_recordings()
        last = last_json_line(stats.read_text()) if stats.exists() else None
        self.results["replay"]["save"] = {
            "res": res, "seconds": n, "wait_before_first_s": fill, "rows": rows, "rc": p.returncode,
            "stderr": err[-500:], "drops": (last or {}).get("drops"), "video_kbps": (last or {}).get("video_kbps"),
            "command": f"broadcast --url URL --res {res} --fps 30 --source test --replay-seconds {n} "
                       f"--replay-dir DIR --control SOCK; then `save-replay {n} PATH` on the socket"}
        self.save()
        shutil.rmtree(clips, ignore_errors=True)

    def avsync(self) -> None:
        secs = self.a.avsync_seconds
        impair = ["--test-audio-skew-ppm", "300", "--test-jitter-ms", "15", "--test-mic-delay-ms", "700",
                  "--test-gap-at", str(secs / 2), "--test-gap-ms", "3000"]
        cases = [
            # Issue 12's bounds (issue 4 allowed 20 and 35 ms).
            ("a", "720p30, no impairments", [], 5.0),
            ("b", "720p30, skew 300 ppm, jitter 15 ms, mic delay 700 ms, 3 s gap at the midpoint", impair, 20.0),
            ("c", "(b) with --audio-codec opus", impair + ["--audio-codec", "opus"], 20.0),
        ]
        procs = {}
        self.clear_recordings()
        for slug, label, extra, tol in cases:
            key = f"avsync-{slug}"
            stats = self.work / f"stats-{key}.jsonl"
            # Sync is a timestamp measurement: the static picture keeps three concurrent encoders
            # real-time on 2 cores, so dropped flash frames do not stand in for sync errors.
            cmd = [self.broadcast, "--url", self.url(), "--quiet", "--stats-json", str(stats), "--res", "720p",
                   "--fps", "30", "--source", "test", "--test-pattern", "static", "--duration", str(secs)] + extra
            env = dict(os.environ, STREAM_KEY=key)
            procs[slug] = (subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE), cmd, label, tol, stats)
            if self.a.avsync_sequential:
                log(f"avsync {slug}: one run of {secs} s")
                procs[slug][0].wait(timeout=secs + 120)
        load0 = sh("cat /proc/loadavg")
        if not self.a.avsync_sequential:
            log(f"avsync: 3 concurrent runs of {secs} s")
        out = {}
        for slug, (p, cmd, label, tol, stats) in procs.items():
            err = p.communicate(timeout=secs + 120)[1].decode(errors="replace")
            out[slug] = {"label": label, "tolerance_ms": tol, "rc": p.returncode, "stderr": err[-500:],
                         "command": "broadcast " + " ".join(cmd[1:]).replace(str(self.work), "$WORK")
                                    .replace(self.url(), "rtmp://127.0.0.1:PORT/live"),
                         "stats": last_json_line(stats.read_text()) if stats.exists() else None}
        load1 = sh("cat /proc/loadavg")
        time.sleep(2)  # nginx closes the recordings when the publishers go away
        plots = self.out.parent
        for slug in out:
            rec = self.ingest_dir / "rec" / f"avsync-{slug}.flv"
            png = plots / f"avsync-{slug}.png"
            a = subprocess.run([str(REPO / "scripts/avsync"), str(rec), "--json", "--plot", str(png),
                                "--tolerance-ms", str(out[slug]["tolerance_ms"])],
                               capture_output=True, text=True)
            try:
                j = json.loads(a.stdout)
            except json.JSONDecodeError:
                out[slug]["analysis_error"] = (a.stdout + a.stderr)[-800:]
                continue
            j.pop("events", None)
            out[slug]["analysis"] = j
            out[slug]["avsync_rc"] = a.returncode
            out[slug]["recording_bytes"] = rec.stat().st_size if rec.exists() else None
            s = j.get("summary", {})
            log(f"avsync {slug}: max|off| {s.get('max_abs_ms')} drift {s.get('drift_ms_per_hour')} ok={j.get('ok')}")
        self.results["avsync"] = {"seconds": secs, "cases": out, "loadavg_start": load0, "loadavg_end": load1,
                                  "sequential": bool(self.a.avsync_sequential)}
        self.save()
        self.clear_recordings()


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
    ap.add_argument("--sections", default="machine,trivial,floor,realtime,scale,levers,embedding,capture,destinations,srt,replay,avsync,quality,x264model,memmatrix")
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
                  "srt", "replay", "avsync", "quality", "x264model", "memmatrix"):
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
