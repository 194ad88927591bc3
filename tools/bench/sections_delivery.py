"""Sections about what reaches the ingest: destinations, srt, shaped, avsync, quality."""
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
from bench_common import REPO, RES, MIB_, kbps_for, log, summary, last_json_line, sh  # noqa: F401


class DeliverySections:
    """Sections about what reaches the ingest: destinations, srt, avsync, quality. (a part of `run.Bench`: it uses the shared state and helpers of `BenchBase`)."""
    def quality(self) -> None:
        secs = min(self.a.rt_seconds, 15)
        out = {}
        # Two contents (issue 23: the gap depends on it): testsrc2 with `life` overlaid, and at 1080p
        # testsrc2 with a band of temporal noise moving down the picture.
        for name, res, content in (("720p", "720p", "life"), ("1080p", "1080p", "life"),
                                   ("1080p-noiseband", "1080p", "noiseband")):
            w, h = RES[res]
            kb = kbps_for(res, 30)
            y4m = self.work / f"moving-{name}.y4m"
            if not y4m.exists():
                if content == "life":
                    # testsrc2 alone barely moves; the life overlay keeps motion search and the VBV busy.
                    inputs = ["-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=30",
                              "-f", "lavfi", "-i", f"life=size={w}x{h}:rate=30:mold=10:ratio=0.3:"
                              "death_color=#202020:life_color=#c0c0c0"]
                    graph = "[0:v]format=yuv420p[a];[1:v]format=yuv420p[b];[a][b]blend=all_mode=overlay:all_opacity=0.5,format=yuv420p"
                else:
                    band = h // 5
                    inputs = ["-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=30",
                              "-f", "lavfi", "-i", f"color=c=gray:size={w}x{band}:rate=30"]
                    graph = (f"[1:v]format=yuv420p,noise=alls=60:allf=t[n];"
                             f"[0:v]format=yuv420p[a];[a][n]overlay=x=0:y='mod(n*6,{h - band})',format=yuv420p")
                subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *inputs,
                                "-filter_complex", graph,
                                "-t", str(secs), "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", str(y4m)], check=True)
            choice = memplan.read_plan(self.broadcast, ["--res", res, "--source", f"y4m:{y4m}", "--key", "x"]).x264 or ""
            key = f"quality-{name}"
            r = self.broadcast_run(key, ["--res", res, "--source", f"y4m:{y4m}", "--duration", str(secs)])
            time.sleep(2)  # nginx closes the recording when the publisher goes away
            rec = self.ingest_dir / "rec" / f"{key}.flv"
            ff = self.work / f"ff-quality-{name}.flv"
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

            out[name] = {
                "seconds": secs, "video_kbps": kb, "encoder_choice": choice, "res": res, "content": content,
                "ours_peak_rss_bytes": (r["stats"] or {}).get("peak_rss_bytes"),
                "ours_drops": (r["stats"] or {}).get("drops"), "ours_rc": r["rc"],
                "ours_psnr": psnr(rec) if rec.exists() else None,
                "ffmpeg_psnr": psnr(ff) if f["rc"] == 0 else None,
                "ours_cmd": r["cmd"].replace(str(self.work), "$WORK"),
                "ffmpeg_cmd": " ".join(ffcmd).replace(str(self.work), "$WORK"),
            }
            log(f"quality {name}: {choice}, ours {out[name]['ours_psnr']}, ffmpeg {out[name]['ffmpeg_psnr']}")
            self.results["quality"] = out
            self.save()
            self.clear_recordings()
            ff.unlink(missing_ok=True)
            y4m.unlink(missing_ok=True)

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
            for transport in srt_bench.TRANSPORTS:
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
                     "receivers: srt-live-transmit (SRT, 120 ms latency) and ffmpeg -listen (RTMP), decoded by PyAV; "
                     "Tests/Integration/whip_endpoint.py (WHIP: aiortc, its own decoders)",
            "loadavg_start": load0, "loadavg_end": sh("cat /proc/loadavg")}
        self.save()

    def shaped(self) -> None:
        # The adaptive bitrate against the kernel's shaper and a slow-reading relay (issue 38),
        # through tools/bitrate_shaped.py: two episodes at a time (each a 720p test source, about a
        # quarter of a core), every one in its own network namespace. Needs root.
        import threading
        sys.path.insert(0, str(REPO / "tools"))
        import bitrate_shaped as bs
        quick = self.a.quick
        on, off, end = (10, 48, 64) if quick else (20, 140, 170)
        episodes = [
            ("tbf 1200 kbit/s, 500 ms queue", bs.Episode(rate="1200kbit", latency="500ms", onset_s=on, release_s=off, duration_s=end)),
            ("tbf 1200 kbit/s, 2000 ms queue", bs.Episode(rate="1200kbit", latency="2000ms", onset_s=on, release_s=off, duration_s=end)),
            ("relay reading 1200 kbit/s, 1 MiB buffers", bs.Episode(rate="1200kbit", onset_s=on, release_s=off, duration_s=end,
                                                                   slow_reader_bytes=1 << 20)),
            ("tbf 800 kbit/s for 30 s, 500 ms queue", bs.Episode(rate="800kbit", latency="500ms", onset_s=20, release_s=50,
                                                                duration_s=80)),
        ]
        load0 = sh("cat /proc/loadavg")
        work = Path(self.a.work).resolve() / "shaped"
        rows: list[dict] = [{} for _ in episodes]

        def one(i: int) -> None:
            name, ep = episodes[i]
            try:
                samples, fig = bs.run_episode(ep, work / f"e{i}", f"bench{i}", Path(self.broadcast))
            except Exception as e:  # a failed episode is a row that says so, not a lost section
                rows[i] = {"name": name, "error": str(e)}
                return
            fig.pop("stderr_tail", None)
            rows[i] = {"name": name, "episode": {k: v for k, v in ep.__dict__.items() if k != "extra_args"},
                       "figures": fig, "samples": [[round(x.t, 1), x.target, round(x.link_kbps), round(x.kbps)]
                                                   for x in samples]}
            log(f"shaped {name}: {json.dumps({k: fig.get(k) for k in ('band_min', 'band_max', 'band_median', 'recovery_s')})}")

        for pair in ((0, 1), (2, 3)):
            threads = [threading.Thread(target=one, args=(i,)) for i in pair]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.results["shaped"] = {
            "rows": rows, "commit": sh("git -C " + str(REPO) + " rev-parse --short HEAD"),
            "command": "sudo tools/bitrate_shaped.py --latency 500ms|2000ms [--slow-reader 1048576] "
                       "[--rate 800kbit --onset 20 --release 50 --duration 80] --out DIR --plot",
            "setup": "720p test source at 2500 kbps to nginx-rtmp in a private network namespace (two episodes at once)",
            "loadavg_start": load0, "loadavg_end": sh("cat /proc/loadavg")}
        self.save()

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
