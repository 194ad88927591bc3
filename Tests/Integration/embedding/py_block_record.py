"""Block mode in a real host (issue 39): a Python process that has numpy and PyAV loaded pushes 600
640x360 frames and their audio (1600 samples a frame: a continuous 1 kHz tone) as fast as the library
takes them (backpressure="block"), pausing 3 s after frame 300, into an MP4 recording and, given a
URL, a network destination too (key from $STREAM_KEY). Frame i carries its index as the grey level
of its top-left block (level(i)); the audio of frame 450 is louder (the marker). Every pts is the
producer's own: t0 + i/30 s for frame i and for its audio.

Prints one JSON line: the send results by kind, the stats after close, the wall seconds.
usage: py_block_record.py OUT.mp4 [URL]
"""

import json
import os
import sys
import time

import av  # noqa: F401  (loaded as a tool author's host has it: tens of MB resident, its own FFmpeg)
import numpy as np

import broadcastkit as bk

N, FPS, W, H, RATE = 600, 30, 640, 360, 48_000
SPF = RATE // FPS
PAUSE_AFTER, PAUSE_S, MARK = 300, 3.0, 450


def level(i: int) -> int:
    """Frame i's grey level: neighbours differ by at least 32 (a decoder's luma tells them apart)."""
    return 16 + (i * 37) % 224


def main() -> None:
    out = sys.argv[1]
    url = sys.argv[2] if len(sys.argv) > 2 else None
    frame = np.zeros((H, W, 4), np.uint8)
    # Noise the encoder cannot predict: the stream runs at its bitrate (800 kbit/s), not the few
    # tens a flat picture costs, so a 1.2 Mbit/s link is slower than the encoder.
    rng = np.random.default_rng(39)
    noise = [rng.integers(0x10, 0x70, (H, W, 4), np.uint8) for _ in range(7)]
    n = np.arange(SPF)
    results: dict = {}
    options = dict(record=out, width=W, height=H, fps=FPS, backpressure="block")
    session = bk.Session(url, os.environ["STREAM_KEY"], **options) if url else bk.Session(**options)
    t0 = bk.now_ns() + 1_000_000_000
    start = time.monotonic()
    with session as s:
        for i in range(N):
            frame[:, :, :] = noise[i % len(noise)]
            x = (i * 8) % (W - 64)
            frame[:, x:x + 64, :] = 0xE0          # moving content: the encoder really works
            frame[:64, :64, :] = level(i)
            pts = t0 + i * 1_000_000_000 // FPS
            r = s.send_video(frame, pts_ns=pts)
            results[r] = results.get(r, 0) + 1
            amplitude = 0.9 if i == MARK else 0.25
            tone = amplitude * np.sin(2 * np.pi * 1000 * (i * SPF + n) / RATE)
            pcm = np.repeat((tone * 32767).astype(np.int16)[:, None], 2, axis=1)
            r = s.send_audio(pcm, pts_ns=pts)
            results["audio " + r] = results.get("audio " + r, 0) + 1
            if i == PAUSE_AFTER - 1:
                time.sleep(PAUSE_S)              # the producer pauses: a pause, not a gap
    print(json.dumps({"results": results, "stats": s.stats(), "seconds": time.monotonic() - start}))


main()
