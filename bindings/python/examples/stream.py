#!/usr/bin/env python3
"""Streams numpy-generated 720p BGRx frames and a 440 Hz sine tone through broadcastkit.

    STREAM_KEY=... python stream.py rtmp://127.0.0.1:1935/live --seconds 10 [--record out.flv]

Prints one JSON line at the end: frames produced, results by kind, and the session's stats.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import broadcastkit

W, H, FPS, RATE = 1280, 720, 30, 48000


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--record")
    p.add_argument("--memory-budget", default=None,
                   help="the session's own memory budget, e.g. 40M (default: the library's, 50 MB)")
    args = p.parse_args()
    key = os.environ.get("STREAM_KEY")
    if not key:
        print("stream.py: set STREAM_KEY", file=sys.stderr)
        return 2

    def on_event(e: broadcastkit.Event) -> None:
        if e.type in ("warning", "failed", "reconnecting", "reconnected"):
            print(f"stream.py: {e.type}: {e.message}", file=sys.stderr)

    # A gradient that moves, with a band of noise so x264 has something to spend its bitrate on.
    x = np.arange(W, dtype=np.uint8)
    y = np.arange(H, dtype=np.uint8)[:, None]
    frame = np.zeros((H, W, 4), dtype=np.uint8)
    frame[:, :, 1] = y
    rng = np.random.default_rng(1)
    noise = rng.integers(0, 255, size=(40, W), dtype=np.uint8)
    spf = RATE // FPS
    t = np.arange(spf)
    results: dict[str, int] = {}

    try:
        session = broadcastkit.Session(args.url, key, record=args.record, width=W, height=H, fps=FPS,
                                       memory_budget=args.memory_budget, on_event=on_event)
    except broadcastkit.BroadcastError as e:
        print(f"stream.py: {e}", file=sys.stderr)
        return 2
    del key
    try:
        with session:
            start = broadcastkit.now_ns()
            for n in range(args.seconds * FPS):
                pts = start + n * 1_000_000_000 // FPS
                frame[:, :, 0] = x + np.uint8(4 * n % 256)
                band = (n % 18) * 40
                frame[:, :, 2] = 128
                frame[band:band + 40, :, 2] = np.roll(noise, n, axis=1)
                r = session.send_video(frame, pts_ns=pts)
                results[r] = results.get(r, 0) + 1

                tone = (np.sin(2 * np.pi * 440 * (t + n * spf) / RATE) * 8000).astype(np.int16)
                session.send_audio(np.repeat(tone[:, None], 2, axis=1), pts_ns=pts)

                wake = (pts + 1_000_000_000 // FPS - broadcastkit.now_ns()) / 1e9
                if wake > 0:
                    time.sleep(wake)
    except broadcastkit.ConnectError as e:
        print(f"stream.py: {e}", file=sys.stderr)
        return 3
    except broadcastkit.BroadcastError as e:
        print(f"stream.py: {e}", file=sys.stderr)
        return 4 if isinstance(e, broadcastkit.StreamingError) else 2
    # After the with block the session is finished and closed; stats() is its final snapshot.
    print(json.dumps({"produced": args.seconds * FPS, "results": results, "stats": session.stats()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
