#!/usr/bin/env python3
"""PSNR of a recording against its source Y4M, each decoded frame matched to the source frame
at its timestamp, so frames the live encoder dropped (encoder_busy) are skipped instead of
shifting every later comparison by one frame (ffmpeg's psnr filter with setpts=N does that).

usage: .venv/bin/python tools/bench/psnr_matched.py REC.flv|REC.264 SOURCE.y4m [FPS]
prints: frames N psnr_y (mean of per-frame dB) mse_psnr_y (from the mean MSE, as ffmpeg's
"y:") mse_psnr_avg (4:1:1 weighted Y/U/V MSE, as ffmpeg's "average:")
Raw .264 has no timestamps: its frame order is the index.
"""
import math
import sys

import av
import numpy as np


def yuv(frame):
    a = frame.to_ndarray(format="yuv420p")
    h, w = frame.height, frame.width
    u = a[h:h + h // 4].reshape(h // 2, w // 2)
    v = a[h + h // 4:].reshape(h // 2, w // 2)
    # Kept as uint8 (a 1080p clip of 450 frames is 1.4 GB that way); widened per comparison.
    return a[:h].copy(), u.copy(), v.copy()


def main() -> int:
    rec, src = sys.argv[1], sys.argv[2]
    fps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    decoded = {}
    with av.open(rec) as c:
        s = c.streams.video[0]
        for n, f in enumerate(c.decode(s)):
            raw = rec.endswith(".264") or f.pts is None
            decoded.setdefault(n if raw else round(float(f.pts * s.time_base) * fps), yuv(f))
    # The session's timeline starts at the first accepted frame: source frame 0 unless dropped.
    first = min(decoded)
    mse = [[], [], []]
    with av.open(src) as c:
        for n, f in enumerate(c.decode(video=0)):
            r = decoded.get(n + first)
            if r is not None:
                for i, p in enumerate(yuv(f)):
                    d = p.astype(np.int32) - r[i].astype(np.int32)
                    mse[i].append(float(np.mean(d * d)))

    def db(m):
        return 10 * math.log10(255 * 255 / m) if m > 0 else 99.0

    m = [float(np.mean(x)) for x in mse]
    print(f"frames {len(mse[0])} psnr_y {np.mean([db(x) for x in mse[0]]):.2f} mse_psnr_y {db(m[0]):.2f} "
          f"mse_psnr_avg {db((4 * m[0] + m[1] + m[2]) / 6):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
