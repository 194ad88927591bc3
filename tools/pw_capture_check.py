#!/usr/bin/env python3
"""Analyse a recording of the pw-test-screen producer (PipeWire capture tests).

Decodes an FLV with PyAV and reports:
- video: size(s), frame count, the frame counter read from the 24-block strip
  (16x16 px blocks from (16,16), MSB first, white = 1) on first-phase frames where it is readable,
  counters out of order, repeats, and the share of the counter span that arrived;
- the phase of each frame (background colour of pw-test-screen's size phases:
  blue = first size, green = second, red = third) and the aspect ratio of the centred
  grey square (1.0 when scaling kept the picture undistorted);
- audio: FFT magnitude of given tones relative to the median of the spectrum.

usage: pw_capture_check.py FILE.flv [--tones 1000,660] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys

import av
import numpy as np

BLOCK = 16
BITS = 24
ORIGIN = 16


def read_counter(rgb: np.ndarray) -> int | None:
    """The strip's value, or None when a block is neither clearly white nor clearly black."""
    h, w, _ = rgb.shape
    if w < ORIGIN + BITS * BLOCK or h < ORIGIN + BLOCK:
        return None
    value = 0
    for i in range(BITS):
        x0 = ORIGIN + i * BLOCK + 4
        y0 = ORIGIN + 4
        mean = rgb[y0:y0 + 8, x0:x0 + 8].mean()
        if mean > 170:
            bit = 1
        elif mean < 85:
            bit = 0
        else:
            return None
        value = (value << 1) | bit
    return value


def phase_of(rgb: np.ndarray) -> int | None:
    """0/1/2 by the dominant background channel (blue, green, red) just above the square."""
    h, w, _ = rgb.shape
    px = rgb[int(h * 0.2) - 2:int(h * 0.2) + 2, w // 2 - 2:w // 2 + 2].reshape(-1, 3).mean(axis=0)
    r, g, b = px
    if b > r + 30 and b > g + 30:
        return 0
    if g > r + 30 and g > b + 30:
        return 1
    if r > g + 30 and r > b + 30:
        return 2
    return None


def square_aspect(rgb: np.ndarray) -> float | None:
    """Width/height of the centred grey (0xa0) square, measured through the frame centre."""
    h, w, _ = rgb.shape
    row = np.abs(rgb[h // 2].astype(int) - 160).max(axis=1) < 30
    col = np.abs(rgb[:, w // 2].astype(int) - 160).max(axis=1) < 30
    if row.sum() < 4 or col.sum() < 4:
        return None
    return float(row.sum()) / float(col.sum())


def tone_levels(samples: np.ndarray, rate: int, tones: list[float]) -> dict:
    if samples.size < rate // 2:
        return {str(int(t)): 0.0 for t in tones}
    window = samples[-min(samples.size, rate * 4):] * np.hanning(min(samples.size, rate * 4))
    spectrum = np.abs(np.fft.rfft(window))
    freqs = np.fft.rfftfreq(window.size, 1.0 / rate)
    floor = float(np.median(spectrum)) or 1e-12
    out = {}
    for t in tones:
        band = (freqs > t - 5) & (freqs < t + 5)
        out[str(int(t))] = float(spectrum[band].max() / floor)
    return out


def analyse(path: str, tones: list[float]) -> dict:
    report = {"file": path, "video_frames": 0, "sizes": [], "counters_read": 0, "first_counter": None,
              "last_counter": None, "out_of_order": 0, "repeats": 0, "span": 0, "coverage": 0.0,
              "phases": [], "square_aspect_by_phase": {}, "audio_rate": 0, "audio_seconds": 0.0, "tones": {}}
    counters: list[int] = []
    sizes: list[str] = []
    phases: list[int] = []
    aspects: dict[int, list[float]] = {}
    audio: list[np.ndarray] = []
    rate = 0
    with av.open(path) as container:
        for frame in container.decode(*container.streams):
            if isinstance(frame, av.VideoFrame):
                report["video_frames"] += 1
                size = f"{frame.width}x{frame.height}"
                if size not in sizes:
                    sizes.append(size)
                rgb = frame.to_ndarray(format="rgb24")
                p = phase_of(rgb)
                # The strip is only at its native 16 px grid in the first (unscaled) size phase.
                c = read_counter(rgb) if p in (0, None) else None
                if c is not None:
                    counters.append(c)
                if p is not None:
                    if not phases or phases[-1] != p:
                        phases.append(p)
                    a = square_aspect(rgb)
                    if a is not None:
                        aspects.setdefault(p, []).append(a)
            elif isinstance(frame, av.AudioFrame):
                rate = frame.sample_rate
                data = frame.to_ndarray().astype(np.float64)
                if frame.format.is_planar:
                    mono = data.mean(axis=0)
                else:
                    mono = data.reshape(-1, len(frame.layout.channels)).mean(axis=1)
                audio.append(mono)
    report["sizes"] = sizes
    report["counters_read"] = len(counters)
    if counters:
        report["first_counter"], report["last_counter"] = counters[0], counters[-1]
        report["out_of_order"] = sum(1 for a, b in zip(counters, counters[1:]) if b < a)
        report["repeats"] = sum(1 for a, b in zip(counters, counters[1:]) if b == a)
        distinct = len(set(counters))
        span = max(counters) - min(counters) + 1
        report["span"] = span
        report["coverage"] = distinct / span
    report["phases"] = phases
    report["square_aspect_by_phase"] = {str(k): float(np.median(v)) for k, v in aspects.items()}
    if audio and rate:
        samples = np.concatenate(audio)
        report["audio_rate"] = rate
        report["audio_seconds"] = samples.size / rate
        report["tones"] = tone_levels(samples, rate, tones)
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--tones", default="1000,660", help="comma-separated frequencies in Hz")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    a = ap.parse_args()
    report = analyse(a.file, [float(t) for t in a.tones.split(",") if t])
    if a.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
