#!/usr/bin/env python3
"""Streams numpy-generated BGRx frames (720p by default) and a 440 Hz tone with AsyncSession from an asyncio
program, while a ticker task shows that the event loop stays free.

    STREAM_KEY=... python stream_async.py rtmp://127.0.0.1:1935/live --seconds 5 [--record out.mp4] [--realtime]

Without --realtime the frames are pushed as fast as the library takes them (backpressure="block",
a transcoder's case: every frame is encoded, the sends wait for the encoder off the loop); with it,
at 30 fps. Prints one JSON line at the end: frames produced, results by kind, the loop's largest
gap between ticks of a 5 ms ticker, whether the events arrived on the loop's thread, and the stats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from typing import Dict, List

import numpy as np

import broadcastkit

FPS, RATE = 30, 48000


class Ticker:
    """Wakes every 5 ms and keeps the largest gap between wake-ups: what an asyncio host would feel.
    A plain thread does the same beside it: its gaps are the machine's (scheduling), not the loop's."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self.ticks = 0
        self._last = time.monotonic()
        self._stop = asyncio.Event()
        self.thread_max_gap = 0.0
        self._thread_stop = threading.Event()
        self._thread = threading.Thread(target=self._thread_ticks, daemon=True)

    async def run(self) -> None:
        self._thread.start()
        while not self._stop.is_set():
            await asyncio.sleep(0.005)
            self._tick()

    def _thread_ticks(self) -> None:
        last = time.monotonic()
        while not self._thread_stop.wait(0.005):
            now = time.monotonic()
            self.thread_max_gap = max(self.thread_max_gap, now - last)
            last = now

    def _tick(self) -> None:
        now = time.monotonic()
        self.max_gap = max(self.max_gap, now - self._last)
        self.ticks += 1
        self._last = now

    def stop(self) -> None:
        self._tick()  # the time since the last wake-up counts too (a loop never free has one long gap)
        self._stop.set()
        self._thread_stop.set()


async def stream(args: argparse.Namespace, key: str) -> int:
    loop_thread = threading.get_ident()
    events: List[str] = []
    off_loop: List[str] = []

    def on_event(e: broadcastkit.Event) -> None:
        events.append(e.type)
        if threading.get_ident() != loop_thread:
            off_loop.append(e.type)
        if e.type in ("warning", "failed", "reconnecting", "reconnected"):
            print(f"stream_async.py: {e.type}: {e.message}", file=sys.stderr)

    W, H = args.width, args.height
    # A gradient that moves, with a band of noise so x264 has something to spend its bitrate on.
    x = (np.arange(W) % 256).astype(np.uint8)
    frame = np.zeros((H, W, 4), dtype=np.uint8)
    frame[:, :, 1] = (np.arange(H) % 256).astype(np.uint8)[:, None]
    noise = np.random.default_rng(1).integers(0, 255, size=(40, W), dtype=np.uint8)
    spf = RATE // FPS
    t = np.arange(spf)
    results: Dict[str, int] = {}
    produced = args.seconds * FPS
    waited = 0.0

    ticker = Ticker()
    tick_task = asyncio.create_task(ticker.run())
    await asyncio.sleep(0)  # the ticker is running from here on
    started = time.monotonic()
    try:
        session = broadcastkit.AsyncSession(args.url, key, record=args.record, width=W, height=H, fps=FPS,
                                            memory_budget=args.memory_budget, on_event=on_event,
                                            backpressure="drop" if args.realtime else "block")
        async with session:
            start = broadcastkit.now_ns()
            for n in range(produced):
                pts = start + n * 1_000_000_000 // FPS
                frame[:, :, 0] = x + np.uint8(4 * n % 256)
                band = (n % (H // 40)) * 40
                frame[:, :, 2] = 128
                frame[band:band + 40, :, 2] = np.roll(noise, n, axis=1)
                tone = (np.sin(2 * np.pi * 440 * (t + n * spf) / RATE) * 8000).astype(np.int16)
                sent = time.monotonic()
                r = await session.send_video(frame, pts_ns=pts)
                await session.send_audio(np.repeat(tone[:, None], 2, axis=1), pts_ns=pts)
                waited += time.monotonic() - sent
                results[r] = results.get(r, 0) + 1
                if args.realtime:
                    await asyncio.sleep(max(0.0, (pts + 1_000_000_000 // FPS - broadcastkit.now_ns()) / 1e9))
    except broadcastkit.ConnectError as e:
        print(f"stream_async.py: {e}", file=sys.stderr)
        return 3
    except broadcastkit.BroadcastError as e:
        print(f"stream_async.py: {e}", file=sys.stderr)
        return 4 if isinstance(e, broadcastkit.StreamingError) else 2
    finally:
        ticker.stop()
        await tick_task
    await asyncio.sleep(0)  # events handed to the loop during close() run now
    # After the async with block the session is finished and closed; stats() is its final snapshot.
    print(json.dumps({"produced": produced, "results": results, "seconds": round(time.monotonic() - started, 3),
                      "send_wait_s": round(waited, 3),
                      "loop": {"max_gap_ms": round(ticker.max_gap * 1000, 1), "ticks": ticker.ticks,
                               "thread_max_gap_ms": round(ticker.thread_max_gap * 1000, 1)},
                      "events": events, "events_off_loop": off_loop, "stats": session.stats()}))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("url")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--record")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=720)
    p.add_argument("--realtime", action="store_true", help="push at 30 fps (default: as fast as the library takes)")
    p.add_argument("--memory-budget", default=None,
                   help="the session's own memory budget, e.g. 40M (default: the library's, 50 MB)")
    args = p.parse_args()
    key = os.environ.get("STREAM_KEY")
    if not key:
        print("stream_async.py: set STREAM_KEY", file=sys.stderr)
        return 2
    return asyncio.run(stream(args, key))


if __name__ == "__main__":
    sys.exit(main())
