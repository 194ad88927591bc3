#!/usr/bin/env python3
"""The memory plan against what the process really holds (issue 23), and what a cgroup charges
besides it.

Rows: the test source at 360p, 480p, 720p and 1080p, with and without a 30 s replay ring; the
synthetic PipeWire desktop (pw-test-screen, 1280x720 -> 720p and 3840x2160 -> 1080p, desktop audio
and a mic), with and without the ring. Each row: the plan (`--print-memory-plan=json`, same
arguments) and VmHWM polled from /proc/PID/status during a push to nginx-rtmp (the larger of that
and the process's own last stats line). The verdict per row: |plan total / VmHWM - 1| <= 10%.

Cgroup charges: 1080p from the test source and the 4K desktop -> 1080p, each inside a 50 MiB
memory cgroup (v1): memory.max_usage_in_bytes, memory.kmem.max_usage_in_bytes and VmHWM, with the
page cache of the binary and its libraries warm (the usual case) and evicted first (cold).

    tools/bench/memory_matrix.py [--bin-dir .build/release] [--seconds 20] [--sections plan,cgroup]

Needs root (cgroups) and, for the PipeWire rows, a private PipeWire (scripts/pipewire-up
--no-screen; this tool starts one when PIPEWIRE_REMOTE is unset). Prints one JSON object.
scripts/bench runs it as the `memmatrix` section.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "Tests" / "Integration"))
import pw_memory_run  # noqa: E402
from support import new_key, start_ingest  # noqa: E402

TEST_ROWS = ["360p", "480p", "720p", "1080p"]
PW_ROWS = [("1280x720", "720p"), ("3840x2160", "1080p")]
RING = 30
TOLERANCE = 0.10


def ring_args(res: str, work: Path) -> list[str]:
    """A 30 s ring; at 1080p (17 MB of ring at 4500 kbps) it needs more than the default 50M budget."""
    extra = ["--replay-seconds", str(RING), "--replay-dir", str(work)]
    return extra + (["--memory-budget", "80M"] if res == "1080p" else [])


def plan_json(args: list[str], env: dict) -> dict:
    p = subprocess.run(args + ["--print-memory-plan=json"], env=env, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    return json.loads(p.stdout)


def run_polled(args: list[str], env: dict, stats: Path, cgroup: Path | None = None) -> dict:
    """Runs broadcast (inside `cgroup` when given) and polls its VmHWM and the cgroup's charges."""
    argv = args
    if cgroup is not None:
        argv = ["sh", "-c", f'echo $$ > "{cgroup}/cgroup.procs" && exec "$0" "$@"', *args]
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    hwm_kb, file_kb, usage_minus_rss = 0, 0, None
    while p.poll() is None:
        s = pw_memory_run.status_kb(p.pid)
        if s.get("VmHWM"):
            hwm_kb = max(hwm_kb, s["VmHWM"])
            file_kb = max(file_kb, s.get("RssFile", 0))
            if cgroup is not None:
                try:
                    d = int((cgroup / "memory.usage_in_bytes").read_text()) - s["VmRSS"] * 1024
                    usage_minus_rss = d if usage_minus_rss is None else max(usage_minus_rss, d)
                except (OSError, ValueError):
                    pass
        time.sleep(0.2)
    _, err = p.communicate(timeout=30)
    lines = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()] if stats.exists() else []
    peak = max([hwm_kb * 1024] + [x.get("peak_rss_bytes", 0) for x in lines])
    out = {"exit": p.returncode, "vmhwm_bytes": peak, "peak_file_bytes": file_kb * 1024, "frames_sent": lines[-1]["video_frames_sent"] if lines else 0,
           "stderr": err.strip()[-400:]}
    if cgroup is not None:
        rd = lambda f: int((cgroup / f).read_text())  # noqa: E731
        oom = re.search(r"^oom_kill (\d+)", (cgroup / "memory.oom_control").read_text(), re.M)
        out.update({"cgroup_max_usage_bytes": rd("memory.max_usage_in_bytes"),
                    "kmem_max_usage_bytes": rd("memory.kmem.max_usage_in_bytes"),
                    "failcnt": rd("memory.failcnt"), "oom_kills": int(oom.group(1)) if oom else None,
                    "usage_minus_rss_max_bytes": usage_minus_rss})
    return out


def row(name: str, source: str, args: list[str], env: dict, work: Path, ingest) -> dict:
    key = new_key()
    env = {**env, "STREAM_KEY": key}
    stats = work / f"{name}.jsonl"
    full = args + ["--url", ingest.url, "--quiet", "--stats-json", str(stats)]
    plan = plan_json(full, env)
    r = run_polled(full, env, stats)
    total = plan["plan"]["total_bytes"]
    ratio = total / r["vmhwm_bytes"] - 1 if r["vmhwm_bytes"] else None
    cmd = " ".join(a for a in args[1:] if not a.startswith("/"))
    return {"name": name, "source": source, "exit": r["exit"], "vmhwm_bytes": r["vmhwm_bytes"],
            "plan_total_bytes": total, "plan_needed_bytes": plan["plan"]["needed_bytes"],
            "x264_configuration": plan["plan"]["x264_configuration"], "plan_vs_vmhwm": ratio,
            "within_10_percent": ratio is not None and abs(ratio) <= TOLERANCE, "frames_sent": r["frames_sent"],
            "plan_lines": {x["key"]: x["bytes"] for x in plan["plan"]["lines"]}, "command": f"broadcast {cmd}",
            # Code and read-only data paged in after the plan (its streaming-code line's measure).
            "file_bytes_at_plan": plan["plan"]["file_bytes_at_plan"], "peak_file_bytes": r["peak_file_bytes"],
            "code_paged_in_bytes": r["peak_file_bytes"] - plan["plan"]["file_bytes_at_plan"]}


def pipewire_client(rows: list[dict]) -> dict:
    """What one PipeWire stream's client costs beyond the plan's other lines: the largest
    (VmHWM - plan) of a PipeWire row less that of the test-source row at the same output size and
    ring, over its three streams, plus what the plan already counts for it
    (`PipeWireStream.clientResidentBytes`, read from the source)."""
    src = (REPO / "Sources/BroadcastCapture/PipeWire/PipeWireStream.swift").read_text()
    m = re.search(r"static let clientResidentBytes = (\d+) << (\d+)", src)
    planned = int(m.group(1)) << int(m.group(2)) if m else 0
    by_name = {r["name"]: r for r in rows}
    best = None
    for r in rows:
        if r["source"] != "pipewire":
            continue
        res, ring = r["name"].split("-")[2], "-ring" in r["name"]
        t = by_name.get(f"test-{res}" + (f"-ring{RING}" if ring else ""))
        if t is None:
            continue
        extra = (r["vmhwm_bytes"] - r["plan_total_bytes"]) - (t["vmhwm_bytes"] - t["plan_total_bytes"])
        per = planned + extra // 3
        best = per if best is None else max(best, per)
    return {"pipewire_client_per_stream_bytes": best, "pipewire_client_planned_bytes": planned}


def pipewire_env(work: Path) -> tuple[dict, Path | None]:
    env = dict(os.environ)
    if env.get("PIPEWIRE_REMOTE") or env.get("PIPEWIRE_RUNTIME_DIR"):
        return env, None
    state = work / "pipewire"
    up = subprocess.run([str(REPO / "scripts/pipewire-up"), "--no-screen", "--state", str(state)],
                        capture_output=True, text=True, timeout=600)
    if up.returncode != 0:
        raise RuntimeError(f"scripts/pipewire-up failed: {up.stderr[-300:]}")
    for line in up.stdout.splitlines():
        m = re.match(r"export (\w+)=(.*)", line.strip())
        if m:
            env[m.group(1)] = m.group(2).strip("'\"")
    return env, state


def start_producer(size: str, env: dict, work: Path, bin_dir: Path) -> tuple[subprocess.Popen, str]:
    name = f"pw-matrix-{size}-{os.getpid()}"
    log = open(work / f"{name}.log", "w")
    p = subprocess.Popen([str(bin_dir / "pw-test-screen"), "--name", name, "--size", size], env=env,
                         stdout=log, stderr=log)
    if not pw_memory_run.wait_node(name, env):
        p.kill()
        raise RuntimeError(f"producer {name} did not appear")
    return p, name


def make_cgroup(limit: int) -> Path:
    cg = Path("/sys/fs/cgroup/memory") / f"bk-matrix-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    (cg / "memory.limit_in_bytes").write_text(str(limit))
    return cg


def evict_page_cache(bin_dir: Path) -> None:
    """Drops the binary's and its libraries' pages from the page cache (POSIX_FADV_DONTNEED), so the
    next start reads them from disk inside the cgroup: the cold case."""
    files = [bin_dir / "broadcast"]
    ldd = subprocess.run(["ldd", str(bin_dir / "broadcast")], capture_output=True, text=True).stdout
    files += [Path(m.group(1)) for m in re.finditer(r"=> (/\S+)", ldd)]
    for f in files:
        try:
            fd = os.open(os.path.realpath(f), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        except OSError:
            pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", type=Path, default=REPO / ".build" / "release")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--sections", default="plan,cgroup")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bk-memory-matrix"))
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    bc = str(a.bin_dir / "broadcast")
    secs = ["--duration", str(a.seconds)]
    result: dict = {"seconds": a.seconds, "tolerance": TOLERANCE, "loadavg_start": Path("/proc/loadavg").read_text().strip()}
    ingest = start_ingest()
    env, pw_state = pipewire_env(a.work)
    producers = []
    try:
        if "plan" in a.sections:
            rows = []
            for res in TEST_ROWS:
                for ring in (0, RING):
                    extra = ring_args(res, a.work) if ring else []
                    name = f"test-{res}" + (f"-ring{ring}" if ring else "")
                    rows.append(row(name, "test", [bc, "--source", "test", "--res", res, *secs, *extra], env, a.work, ingest))
                    print(f"memory_matrix: {name}: plan {rows[-1]['plan_total_bytes'] / 2**20:.1f} MiB, "
                          f"VmHWM {rows[-1]['vmhwm_bytes'] / 2**20:.1f} MiB", file=sys.stderr)
            for size, res in PW_ROWS:
                p, node = start_producer(size, env, a.work, a.bin_dir)
                producers.append(p)
                for ring in (0, RING):
                    extra = ring_args(res, a.work) if ring else []
                    name = f"pipewire-{size}-{res}" + (f"-ring{ring}" if ring else "")
                    rows.append(row(name, "pipewire", [bc, "--source", "screen-node", "--screen-node", node,
                                                       "--app-audio", "app-sink", "--mic", "test-mic", "--res", res,
                                                       *secs, *extra], env, a.work, ingest))
                    print(f"memory_matrix: {name}: plan {rows[-1]['plan_total_bytes'] / 2**20:.1f} MiB, "
                          f"VmHWM {rows[-1]['vmhwm_bytes'] / 2**20:.1f} MiB", file=sys.stderr)
                p.terminate()
                p.wait(10)
            result["rows"] = rows
            result.update(pipewire_client(rows))
        if "cgroup" in a.sections:
            charges = []
            cases = [("test-1080p", [bc, "--source", "test", "--res", "1080p"], None)]
            cases.append(("pipewire-3840x2160-1080p", None, "3840x2160"))
            for name, args, size in cases:
                producer = None
                if size:
                    producer, node = start_producer(size, env, a.work, a.bin_dir)
                    producers.append(producer)
                    args = [bc, "--source", "screen-node", "--screen-node", node, "--app-audio", "app-sink",
                            "--mic", "test-mic", "--res", "1080p"]
                for cache in ("warm", "cold"):
                    if cache == "cold":
                        evict_page_cache(a.bin_dir)
                    cg = make_cgroup(50 << 20)
                    try:
                        stats = a.work / f"cg-{name}-{cache}.jsonl"
                        key = new_key()
                        r = run_polled([*args, *secs, "--url", ingest.url, "--quiet", "--stats-json", str(stats)],
                                       {**env, "STREAM_KEY": key}, stats, cgroup=cg)
                    finally:
                        cg.rmdir()
                    r.update({"name": name, "cache": cache})
                    charges.append(r)
                    print(f"memory_matrix: cgroup {name} {cache}: VmHWM {r['vmhwm_bytes'] / 2**20:.1f} MiB, "
                          f"kmem max {r['kmem_max_usage_bytes'] / 2**20:.2f} MiB, failcnt {r['failcnt']}, "
                          f"oom {r['oom_kills']}", file=sys.stderr)
                if producer:
                    producer.terminate()
                    producer.wait(10)
            result["cgroup"] = charges
    finally:
        for p in producers:
            if p.poll() is None:
                p.kill()
        ingest.stop()
        if pw_state:
            subprocess.run([str(REPO / "scripts/pipewire-down"), "--state", str(pw_state)], capture_output=True)
    result["loadavg_end"] = Path("/proc/loadavg").read_text().strip()
    result["commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                      text=True).stdout.strip()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
