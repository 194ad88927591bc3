#!/usr/bin/env python3
"""SRT and WHIP vs RTMP from the same input, in one run: CPU, VmHWM, the memory plan and
glass-to-receiver latency.

The input is made here: a Y4M stream at 720p30 (moving noise under a time code) written in real
time into `broadcast --source y4m:-`. Each frame carries, as a 64-bit barcode of 20x20 luma blocks,
the CLOCK_MONOTONIC nanosecond at which it was written into the pipe ("glass"). The receiver is
independent of us:
- SRT: `srt-live-transmit srt://:PORT?mode=listener file://con` (libsrt, default 120 ms latency,
  what TSBPD delivers) piped into PyAV;
- RTMP: `ffmpeg -listen 1 -i rtmp://… -c copy -f mpegts pipe:1` (nobuffer, flush per packet) into PyAV.
PyAV decodes every frame as it arrives, reads its barcode, and the latency is arrival minus glass.
- WHIP: `Tests/Integration/whip_endpoint.py` (aiortc + aiohttp, an independent WebRTC stack), which
  decodes every frame and reports glass-to-decoded latency as issue 27 defines it: the decode time
  minus the capture time that our RTCP sender reports map the frame's RTP time to (the capture
  time of a Y4M frame is when `broadcast` read it from the pipe, right after the barcode's glass).
CPU is user+system seconds per second of media and VmHWM the peak RSS, both from /usr/bin/time.

    .venv/bin/python tools/bench/srt.py [--seconds 30] [--json OUT] [--only rtmp|srt|whip]

Prints a Markdown table and one JSON line per transport.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
BROADCAST = Path(os.environ.get("BROADCAST_BIN", REPO / ".build" / "release" / "broadcast"))
W, H, FPS, KBPS = 1280, 720, 30, 2500
TRANSPORTS = ("rtmp", "srt", "whip")
BLOCK, BITS = 20, 64
EXTRA = os.environ.get("BENCH_EXTRA_ARGS", "").split()


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_frames(pipe, seconds: int) -> None:
    """Real-time Y4M: noise that moves (x264 has work to do) and the time code on top."""
    rng = np.random.default_rng(1)
    noise = rng.integers(16, 235, size=(H + 64, W), dtype=np.uint8)
    chroma = np.full((H // 2) * (W // 2) * 2, 128, dtype=np.uint8).tobytes()
    try:
        pipe.write(f"YUV4MPEG2 W{W} H{H} F{FPS}:1 Ip A1:1 C420jpeg\n".encode())
        start = time.monotonic()
        for n in range(seconds * FPS):
            due = start + n / FPS
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            y = noise[n % 64:n % 64 + H].copy()
            glass = time.monotonic_ns()
            for b in range(BITS):
                v = 235 if (glass >> b) & 1 else 16
                r, c = divmod(b, 32)
                y[r * BLOCK:(r + 1) * BLOCK, c * BLOCK:(c + 1) * BLOCK] = v
            pipe.write(b"FRAME\n" + y.tobytes() + chroma)
        pipe.close()
    except BrokenPipeError:
        pass


def read_code(luma: np.ndarray) -> int:
    code = 0
    for b in range(BITS):
        r, c = divmod(b, 32)
        block = luma[r * BLOCK + 5:(r + 1) * BLOCK - 5, c * BLOCK + 5:(c + 1) * BLOCK - 5]
        if block.mean() > 125:
            code |= 1 << b
    return code


def receive(stream, latencies: list[float], done: threading.Event) -> None:
    import av
    try:
        with av.open(stream, format="mpegts", options={"probesize": "32768", "analyzeduration": "0",
                                                       "fflags": "nobuffer"}) as c:
            v = c.streams.video[0]
            v.thread_type = "NONE"
            for packet in c.demux(v):
                for frame in packet.decode():
                    now = time.monotonic_ns()
                    plane = frame.planes[0]
                    luma = np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)[:2 * BLOCK, :32 * BLOCK]
                    glass = read_code(luma)
                    ms = (now - glass) / 1e6
                    if 0 < ms < 10_000:
                        latencies.append(ms)
    except Exception as e:  # a torn stream at the end is expected
        print(f"receiver: {e}", file=sys.stderr)
    finally:
        done.set()


def run(transport: str, seconds: int) -> dict:
    key = "sk_bench_" + secrets.token_hex(8)
    if transport == "srt":
        port = free_port(socket.SOCK_DGRAM)
        receiver = subprocess.Popen(["srt-live-transmit", "-q", f"srt://:{port}?mode=listener", "file://con"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        url = f"srt://127.0.0.1:{port}"
    elif transport == "whip":
        report = Path(f"/tmp/bench-whip-{os.getpid()}.json")
        receiver = subprocess.Popen([sys.executable, str(REPO / "Tests" / "Integration" / "whip_endpoint.py"),
                                     "--token", key, "--report", str(report)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = json.loads(receiver.stdout.readline())["port"]
        url = f"http://127.0.0.1:{port}/whip/live"
    else:
        port = free_port()
        receiver = subprocess.Popen(["ffmpeg", "-v", "error", "-fflags", "nobuffer", "-listen", "1",
                                     "-i", f"rtmp://127.0.0.1:{port}/live/{key}", "-c", "copy",
                                     "-flush_packets", "1", "-f", "mpegts", "pipe:1"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        url = f"rtmp://127.0.0.1:{port}/live"
    time.sleep(1.0)
    latencies: list[float] = []
    done = threading.Event()
    if transport != "whip":
        t = threading.Thread(target=receive, args=(receiver.stdout, latencies, done), daemon=True)
        t.start()
    else:
        done.set()
    # /usr/bin/time measures: wait4's ru_maxrss would also count the forked Python's pages held
    # before exec (signal->maxrss keeps the larger of the old and new images).
    timing = Path(f"/tmp/bench-srt-{os.getpid()}-{transport}.time")
    args = [str(BROADCAST), "--url", url, "--source", "y4m:-", "--res", f"{W}x{H}", "--fps", str(FPS),
            "--video-bitrate", str(KBPS), "--quiet", *EXTRA]
    plan = json.loads(subprocess.run(args + ["--print-memory-plan=json"], capture_output=True, text=True,
                                     input=f"YUV4MPEG2 W{W} H{H} F{FPS}:1 Ip A1:1 C420jpeg\n",
                                     env=dict(os.environ, STREAM_KEY=key)).stdout)["plan"]
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%M %U %S", "-o", str(timing), *args],
                            stdin=subprocess.PIPE, env=dict(os.environ, STREAM_KEY=key))
    writer = threading.Thread(target=write_frames, args=(proc.stdin, seconds), daemon=True)
    writer.start()
    status = proc.wait()
    writer.join(timeout=5)
    done.wait(timeout=10)
    receiver.terminate()
    receiver.wait(timeout=10)
    times = timing.read_text().split()[-3:]
    timing.unlink()
    lat = np.array(latencies[FPS:]) if len(latencies) > FPS else np.array(latencies)  # skip the first second
    p50 = round(float(np.percentile(lat, 50)), 1) if len(lat) else None
    p95 = round(float(np.percentile(lat, 95)), 1) if len(lat) else None
    received = len(latencies)
    if transport == "whip":
        r = json.loads(report.read_text())
        report.unlink()
        received = r.get("video_frames", 0)
        p50, p95 = (r.get("latency_ms") or {}).get("p50"), (r.get("latency_ms") or {}).get("p95")
    transport_line = next((x for x in plan["lines"] if x["key"].startswith(("whip", "srt", "rtmp_readers"))), None)
    return {
        "transport": transport,
        "exit": status,
        "cpu_percent": round(100 * (float(times[1]) + float(times[2])) / seconds, 1),
        "vmhwm_mib": round(int(times[0]) / 1024, 1),
        "frames_received": received,
        "frames_sent": seconds * FPS,
        "latency_p50_ms": p50,
        "latency_p95_ms": p95,
        "plan_total_mib": round(plan["needed_bytes"] / 2**20, 1),
        "plan_budget_mib": round(plan["budget_bytes"] / 2**20, 1),
        "plan_transport_line": (f"{transport_line['label']} {transport_line['bytes'] / 2**20:.1f} MiB"
                                if transport_line else ""),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--only", choices=TRANSPORTS)
    a = ap.parse_args(argv)
    rows = []
    for transport in (a.only,) if a.only else TRANSPORTS:
        r = run(transport, a.seconds)
        print(json.dumps(r), flush=True)
        rows.append(r)
    print("\n| transport | CPU % | VmHWM MiB | frames received / sent | glass-to-receiver p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['transport']} | {r['cpu_percent']} | {r['vmhwm_mib']} | {r['frames_received']} / {r['frames_sent']} "
              f"| {r['latency_p50_ms']} | {r['latency_p95_ms']} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"seconds": a.seconds, "rows": rows}, indent=1))
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
