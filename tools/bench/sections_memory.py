"""Sections about memory: levers, capture, x264model, memmatrix, replay."""
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


class MemorySections:
    """Sections about memory: levers, capture, x264model, memmatrix, replay. (a part of `run.Bench`: it uses the shared state and helpers of `BenchBase`)."""
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
