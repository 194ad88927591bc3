#!/usr/bin/env python3
"""Measure broadcast's peak memory while it captures a synthetic PipeWire desktop.

Needs a running private PipeWire (eval "$(scripts/pipewire-up --no-screen)"). Starts its own
pw-test-screen at --size (and --buffers), a private nginx-rtmp ingest, runs broadcast
--source screen-node with app audio + mic for --seconds, and samples /proc/PID/status every
0.5 s. VmHWM is read by us because shared capture buffers are charged to the producer's cgroup,
not to broadcast's. Prints one JSON object: vmhwm, the Rss split (anon/file/shmem) at the
largest sample, the memory plan of the same arguments (plan_mb, per line in MB), CPU seconds,
frames produced and the recording path.

  tools/pw_memory_run.py --size 2560x1440 --res 720p --seconds 30 [--buffers 8] [--bin DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bktools.ingest import start_ingest  # noqa: E402  (tools/ is on PYTHONPATH: scripts/lib/common.sh)
from bktools.plan import plan_from_json  # noqa: E402
from bktools.procmeasure import cpu_seconds, status_kb  # noqa: E402, F401


def new_key() -> str:
    """A random stream key for one measured run."""
    return "sk_live_" + secrets.token_hex(12)


def parse_plan(text: str) -> dict[str, float]:
    """`--print-memory-plan=json` output -> {line label: MiB} plus "total", "headroom" and
    "budget" (MiB, one decimal as the text form shows them) and "total_bytes"."""
    plan = plan_from_json(text)
    if plan.doc is None:
        return {}
    p = plan.doc["plan"]
    mib = lambda b: round(b / 2**20, 1)  # noqa: E731
    out: dict[str, float] = {label: round(v, 1) for label, v in plan.lines.items()}
    out["total"] = mib(p["total_bytes"])
    out["total_bytes"] = p["total_bytes"]
    out["headroom"] = mib(p["headroom_bytes"])
    out["budget"] = mib(p["budget_bytes"])
    return out


def wait_node(name: str, env: dict, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ls = subprocess.run(["pw-cli", "ls", "Node"], env=env, capture_output=True, text=True).stdout
        if f'node.name = "{name}"' in ls:
            return True
        time.sleep(0.1)
    return False


def run(size: str, res: str, seconds: int, buffers: int | None, bindir: Path, env: dict,
        workdir: Path, extra: list[str] | None = None, broadcast: Path | None = None,
        producer_bin: Path | None = None, producer_args: list[str] | None = None) -> dict:
    """One measured run; returns the figures (see the module doc). `broadcast` and
    `producer_bin` default to bindir/broadcast and bindir/pw-test-screen."""
    name = f"pw-mem-{size}-{buffers or 0}-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    count_file = workdir / f"{name}.frames"
    prod_log = workdir / f"{name}.log"
    cmd = [str(producer_bin or bindir / "pw-test-screen"), "--name", name, "--size", size, "--count-file", str(count_file)]
    if buffers:
        cmd += ["--buffers", str(buffers)]
    cmd += producer_args or []
    with open(prod_log, "w") as out:
        producer = subprocess.Popen(cmd, env=env, stdout=out, stderr=out)
    ingest = None
    try:
        if not wait_node(name, env):
            raise RuntimeError(f"producer node did not appear: {prod_log.read_text()}")
        ingest = start_ingest()
        key = new_key()
        stats = workdir / f"{name}.stats.jsonl"
        args = [str(broadcast or bindir / "broadcast"), "--url", ingest.url, "--key", key, "--source", "screen-node",
                "--screen-node", name, "--app-audio", "app-sink", "--mic", "test-mic", "--res", res,
                "--duration", str(seconds), "--stats-json", str(stats), "--quiet"] + (extra or [])
        # The plan for the same run, printed once the producer's node is up (bytes per line).
        plan_out = subprocess.run(args + ["--print-memory-plan=json"], env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=60)
        plan = parse_plan(plan_out.stdout)
        bc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        best: dict[str, int] = {}
        last: dict[str, int] = {}
        cpu = 0.0
        while bc.poll() is None:
            s = status_kb(bc.pid)
            if s:
                last = s
                if s.get("VmRSS", 0) >= best.get("VmRSS", 0):
                    best = s
                cpu = cpu_seconds(bc.pid) or cpu
            time.sleep(0.5)
        out, err = bc.communicate(timeout=30)
        rec = ingest.wait_recording(key)
        produced = 0
        try:
            produced = int(count_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
        peak_stats = 0
        try:
            for line in stats.read_text().splitlines():
                peak_stats = max(peak_stats, json.loads(line).get("peak_rss_bytes", 0))
        except (OSError, ValueError):
            pass
        size_line = next((ln for ln in prod_log.read_text().splitlines() if "format BGRx" in ln), "")
        mib = lambda kb: round(kb / 1024, 1)  # noqa: E731
        return {
            "size": size, "res": res, "buffers": buffers or "default", "seconds": seconds,
            "exit": bc.returncode, "vmhwm_mib": mib(last.get("VmHWM", 0)),
            "stats_peak_rss_mib": round(peak_stats / 2**20, 1),
            "at_max_rss_mib": {k: mib(v) for k, v in best.items()},
            "plan_mb": plan, "plan_exit": plan_out.returncode,
            "cpu_s": round(cpu, 1), "produced": produced, "producer_format": size_line, "recording": str(rec),
            "stderr": err.strip()[-600:],
        }
    finally:
        if ingest is not None:
            ingest.stop()
        producer.terminate()
        try:
            producer.wait(10)
        except subprocess.TimeoutExpired:
            producer.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--res", default="720p")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--buffers", type=int)
    ap.add_argument("--bin", type=Path, default=ROOT / ".build" / "release")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/pw-memory-run"))
    ap.add_argument("--extra", default="", help="more broadcast arguments, space-separated")
    ap.add_argument("--analyse", action="store_true", help="decode the recording (PyAV) and add coverage")
    a = ap.parse_args()
    r = run(a.size, a.res, a.seconds, a.buffers, a.bin, dict(os.environ), a.workdir, a.extra.split())
    if a.analyse and Path(r["recording"]).exists():
        import pw_capture_check
        rep = pw_capture_check.analyse(r["recording"], [1000.0, 660.0])
        r["video_frames"] = rep["video_frames"]
        r["coverage"] = round(rep["coverage"], 3)
        r["sizes"] = rep["sizes"]
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
