#!/usr/bin/env python3
"""Measure A/V sync in a recording of the broadcast test source.

The test source makes a solid white video frame at every whole second k >= 1 of capture
time and starts a 50 ms 1 kHz beep in the app audio at the same capture time. This tool
decodes the recording (any container PyAV reads: FLV, MKV, Ogg...), finds the flash frames
by their luma jump, finds the beep onsets by their 1 kHz energy, pairs them, and reports
offset = audio onset - video pts (positive: audio late).

It also checks the stream timestamps a player relies on: per-stream non-increasing or
negative packet timestamps, and audio continuity (a gap is a hole of more than 1 ms between
one audio packet's end and the next one's start).

Every flash must pair with a beep and every beep with a flash (nearest, within 0.5 s):
an unpaired event is a failure, listed with its time, unless --expect-unpaired N states
how many there are meant to be (e.g. a clip that starts with a flash but no beep). A
missing beep is exactly what a resume that loses or delays audio looks like, so dropping
it silently would hide the worst offset.

Exit status: 0 in tolerance; 1 out of tolerance, no events, unpaired events other than
--expect-unpaired, or audio gaps (unless --allow-gaps); 2 usage or decode error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field

import numpy as np

BEEP_HZ = 1000.0
# The test source's continuous tones (app 440 Hz, mic 660 Hz). The beep detector's smoothing
# filters place spectral nulls on them (offsets from 1 kHz of 560 Hz and 340 Hz).
BACKGROUND_TONES_HZ = (440.0, 660.0)
BEEP_SECONDS = 0.050
PAIR_WINDOW_S = 0.5
GAP_THRESHOLD_S = 0.001
CONTINUITY_SLACK_S = 0.0015


class DecodeFailure(Exception):
    """The input could not be opened or decoded."""


@dataclass
class StreamTiming:
    """Packet-timestamp facts for one stream."""

    kind: str
    packets: int = 0
    non_increasing: int = 0
    negative: int = 0
    # Audio packets ahead of presentation time 0 at the very start of the stream: an MP4 edit
    # list's pre-roll (a replay clip's AAC frames before its first keyframe), never presented.
    # Video has none; a negative timestamp anywhere else is counted as negative.
    pre_roll: int = 0
    gaps: int = 0
    gap_total_ms: float = 0.0
    largest_gap_ms: float = 0.0
    _last_dts: float | None = None

    def observe(self, t: float) -> None:
        self.packets += 1
        if t < 0 and self.kind == "audio" and self.packets == self.pre_roll + 1:
            self.pre_roll += 1
        elif t < 0:
            self.negative += 1
        if self._last_dts is not None and t <= self._last_dts:
            self.non_increasing += 1
        self._last_dts = t

    def as_dict(self) -> dict:
        d = {
            "kind": self.kind,
            "packets": self.packets,
            "non_increasing": self.non_increasing,
            "negative": self.negative,
            "pre_roll": self.pre_roll,
        }
        if self.kind == "audio":
            d.update(gaps=self.gaps, gap_total_ms=round(self.gap_total_ms, 3),
                     largest_gap_ms=round(self.largest_gap_ms, 3))
        return d


@dataclass
class AudioTrack:
    """Decoded mono audio with a piecewise map from sample index to presentation time."""

    rate: int = 0
    chunks: list = field(default_factory=list)
    # (start sample index, pts seconds, sample count) per decoded frame.
    segments: list = field(default_factory=list)
    total: int = 0

    def append(self, samples: np.ndarray, pts: float) -> None:
        if self.segments:
            # Container timestamps are often rounded (FLV: 1 ms). A frame that continues the
            # previous one within that rounding keeps the exact sample-count timeline.
            start, prev_pts, count = self.segments[-1]
            predicted = prev_pts + count / self.rate
            if abs(pts - predicted) <= CONTINUITY_SLACK_S:
                pts = predicted
        self.segments.append((self.total, pts, len(samples)))
        self.chunks.append(samples)
        self.total += len(samples)

    def signal(self) -> np.ndarray:
        if not self.chunks:
            return np.zeros(0, dtype=np.float64)
        return np.concatenate(self.chunks).astype(np.float64)

    def time_of(self, index: float) -> float:
        """Presentation time of a (fractional) sample index."""
        starts = [s[0] for s in self.segments]
        i = max(0, int(np.searchsorted(starts, index, side="right")) - 1)
        start, pts, _ = self.segments[i]
        return pts + (index - start) / self.rate


def _frame_time(frame, packet_time: float | None) -> float | None:
    if frame.pts is not None and frame.time_base is not None:
        return float(frame.pts * frame.time_base)
    return packet_time


def _mono(frame) -> np.ndarray:
    """Decoded audio frame -> mono float samples."""
    arr = frame.to_ndarray()
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64) / float(np.iinfo(arr.dtype).max)
    channels = len(frame.layout.channels)
    if arr.ndim == 2 and arr.shape[0] == channels and frame.format.is_planar:
        return arr.mean(axis=0)
    # Packed: (1, samples * channels) interleaved.
    flat = arr.reshape(-1)
    return flat.reshape(-1, channels).mean(axis=1) if channels > 1 else flat


def _luma(frame) -> float:
    """Mean luma of a video frame (Y plane, subsampled for speed)."""
    if frame.format.name in ("yuv420p", "yuvj420p", "nv12", "yuv422p", "yuv444p"):
        plane = frame.planes[0]
        buf = np.frombuffer(plane, dtype=np.uint8).reshape(-1, plane.line_size)
        y = buf[: frame.height, : frame.width]
    else:
        y = frame.to_ndarray(format="gray")
    return float(y[::4, ::4].mean())


def demux_and_decode(path: str):
    """Read every packet once: timestamp checks, per-frame luma, decoded audio."""
    import av

    try:
        container = av.open(path)
    except Exception as exc:  # noqa: BLE001 - PyAV raises many error types
        raise DecodeFailure(f"cannot open {path}: {exc}") from exc
    with container:
        vstreams = [s for s in container.streams if s.type == "video"]
        astreams = [s for s in container.streams if s.type == "audio"]
        if not vstreams or not astreams:
            raise DecodeFailure(f"{path}: need one video and one audio stream "
                                f"(found {len(vstreams)} video, {len(astreams)} audio)")
        vs, as_ = vstreams[0], astreams[0]
        vs.thread_type = "AUTO"
        timing = {vs.index: StreamTiming("video"), as_.index: StreamTiming("audio")}
        lumas: list[tuple[float, float]] = []
        audio = AudioTrack()
        audio_packets: list[tuple[float, float]] = []  # (pts s, duration s)
        rate_guess = vs.average_rate or vs.guessed_rate
        fps = float(rate_guess) if rate_guess else None
        try:
            for packet in container.demux(vs, as_):
                if packet.size == 0 and packet.pts is None and packet.dts is None:
                    # Flush packet at end of stream.
                    for frame in packet.decode():
                        _take(frame, packet, vs, lumas, audio)
                    continue
                tb = packet.time_base
                ts = packet.dts if packet.dts is not None else packet.pts
                if ts is not None:
                    timing[packet.stream.index].observe(float(ts * tb))
                frames = packet.decode()
                if packet.stream is as_:
                    samples = sum(f.samples for f in frames)
                    rate = as_.codec_context.sample_rate or as_.rate
                    # Decoded samples first: FLV packet durations are truncated to 1 ms.
                    if samples and rate:
                        dur = samples / rate
                    else:
                        dur = float(packet.duration * tb) if packet.duration else 0.0
                    # Continuity is judged on what a player gets: decoded frames carry the
                    # codec delay (Opus pre-skip, an MP4 edit list's AAC priming) already
                    # applied. A packet that decodes to nothing plays nothing, so it is no
                    # audio of its own (FFmpeg drops an edit list's priming samples from the
                    # first frames); a hole around it still shows between the frames that play.
                    ftimes = [_frame_time(f, None) for f in frames]
                    if frames and all(ft is not None for ft in ftimes):
                        for f, ft in zip(frames, ftimes):
                            audio_packets.append((ft, f.samples / rate if rate else 0.0))
                    elif frames and packet.pts is not None:
                        audio_packets.append((float(packet.pts * tb), dur))
                for frame in frames:
                    _take(frame, packet, vs, lumas, audio)
        except av.error.FFmpegError as exc:
            raise DecodeFailure(f"{path}: decode error: {exc}") from exc
        _audio_continuity(timing[as_.index], audio_packets)
    return lumas, audio, timing, fps


def _take(frame, packet, vs, lumas, audio: AudioTrack) -> None:
    packet_time = None
    if packet is not None and packet.pts is not None:
        packet_time = float(packet.pts * packet.time_base)
    t = _frame_time(frame, packet_time)
    if t is None:
        return
    if frame.__class__.__name__ == "VideoFrame":
        lumas.append((t, _luma(frame)))
    else:
        audio.rate = frame.sample_rate
        audio.append(_mono(frame), t)


def _audio_continuity(timing: StreamTiming, packets: list[tuple[float, float]]) -> None:
    packets = sorted(packets)
    for (p0, d0), (p1, _) in zip(packets, packets[1:]):
        hole = p1 - (p0 + d0)
        if hole > GAP_THRESHOLD_S:
            timing.gaps += 1
            timing.gap_total_ms += hole * 1000.0
            timing.largest_gap_ms = max(timing.largest_gap_ms, hole * 1000.0)


# --- video flashes -----------------------------------------------------------------------

def find_flashes(lumas: list[tuple[float, float]], min_jump: float = 60.0,
                 min_luma: float = 150.0, min_spacing_s: float = 0.5) -> list[float]:
    """Pts of frames whose luma jumps far above the running baseline of non-flash frames."""
    lumas = sorted(lumas)
    baseline: list[float] = []
    flashes: list[float] = []
    for t, y in lumas:
        base = float(np.median(baseline[-15:])) if baseline else None
        is_flash = base is not None and y >= min_luma and y - base >= max(
            min_jump, 0.5 * (235.0 - base))
        if is_flash:
            if not flashes or t - flashes[-1] >= min_spacing_s:
                flashes.append(t)
        else:
            baseline.append(y)
    return flashes


# --- audio beeps -------------------------------------------------------------------------

def _box(x: np.ndarray, length: float) -> np.ndarray:
    """Causal moving average of (fractional) length samples: a null at 1/length cycles/sample."""
    n = max(1, int(math.floor(length)))
    frac = length - n
    c = np.concatenate(([0.0], np.cumsum(x)))
    out = c[n:] - c[:-n]
    out = np.concatenate((np.full(n - 1, out[0] if len(out) else 0.0), out))
    if frac > 1e-9 and len(x) > n:
        # Add the fractional tap so the null sits at the exact frequency.
        extra = np.concatenate((np.zeros(n), x[:-n]))
        out = out + frac * extra
    return out / length


def beep_envelope(x: np.ndarray, rate: int) -> tuple[np.ndarray, float]:
    """1 kHz amplitude envelope (complex demodulation) and its group delay in samples.

    The smoothing cascade puts nulls on the background tones' offsets from 1 kHz, so the
    continuous 440/660 Hz tones leave next to nothing in the envelope."""
    n = np.arange(len(x))
    z = x * np.exp(-2j * np.pi * BEEP_HZ / rate * n)
    delay = 0.0
    for tone in BACKGROUND_TONES_HZ:
        length = rate / abs(BEEP_HZ - tone)
        z = _box(z, length)
        delay += (length - 1) / 2.0
    # Also null the 2 kHz image of the demodulation itself.
    length = rate / (2 * BEEP_HZ)
    z = _box(z, length)
    delay += (length - 1) / 2.0
    return 2.0 * np.abs(z), delay


def find_beeps(audio: AudioTrack, min_rel: float = 0.25) -> list[float]:
    """Onset times (s) of 1 kHz beeps, refined to the envelope's half-rise point."""
    x = audio.signal()
    if len(x) == 0 or not audio.rate:
        return []
    rate = audio.rate
    env, delay = beep_envelope(x, rate)
    peak = float(np.percentile(env, 99.9))
    if peak <= 1e-6:
        return []
    floor = float(np.median(env))
    threshold = floor + min_rel * (peak - floor)
    above = env > threshold
    beep_len = int(BEEP_SECONDS * rate)
    onsets: list[float] = []
    rises = np.flatnonzero(above[1:] & ~above[:-1]) + 1
    last_end = -10 * rate
    for r in rises:
        if r < last_end:
            continue
        # Local baseline: envelope before the beep; plateau: the middle of the beep.
        pre = env[max(0, r - beep_len): max(1, r - int(0.005 * rate))]
        plat = env[r + int(0.010 * rate): r + int(0.035 * rate)]
        if len(plat) < 10:
            continue
        base = float(np.median(pre)) if len(pre) else floor
        top = float(np.median(plat))
        if top - base < 0.5 * (peak - floor):
            continue  # a transient, not a full-strength beep
        half = base + 0.5 * (top - base)
        j = r
        lo = max(1, r - int(0.010 * rate))
        while j > lo and env[j - 1] >= half:
            j -= 1
        while j < len(env) - 1 and env[j] < half:
            j += 1
        # Linear interpolation between j-1 and j for sub-sample precision.
        e0, e1 = env[j - 1], env[j]
        frac = (half - e0) / (e1 - e0) if e1 != e0 else 0.0
        crossing = (j - 1) + min(max(frac, 0.0), 1.0)
        # The half-rise point of a step through the linear-phase smoother sits at its
        # group delay after the true onset.
        onsets.append(audio.time_of(crossing - delay))
        last_end = r + beep_len + int(0.1 * rate)
    return onsets


def tone_amplitude(x: np.ndarray, rate: int, hz: float = BEEP_HZ) -> float:
    """Amplitude of the `hz` component of `x` (a Hann-windowed single-bin DFT)."""
    if len(x) == 0:
        return 0.0
    w = np.hanning(len(x))
    n = np.arange(len(x))
    z = np.sum(x * w * np.exp(-2j * np.pi * hz / rate * n))
    return float(2.0 * np.abs(z) / w.sum())


def start_beep_ratio(path: str, window_s: float = 0.010) -> tuple[float, float, float]:
    """For a recording that starts on a flash (a replay clip starts on a keyframe, and the test
    pattern flashes on whole seconds): the beep's 1 kHz amplitude over the first `window_s` of
    presented audio, over the same length 20 ms later (the beep lasts 50 ms), and their ratio.
    A beep that starts with the recording gives a ratio near 1; one an edit list or a cold
    decoder delayed gives near 0. Neither detector can time this event: the flash has no frame
    before it and the beep no audio before it."""
    import av

    with av.open(path) as container:
        stream = container.streams.audio[0]
        chunks, rate, first_pts = [], 0, None
        for frame in container.decode(stream):
            if frame.pts is None:
                continue
            t = float(frame.pts * frame.time_base)
            rate = frame.sample_rate
            x = frame.to_ndarray().astype(np.float64)
            x = x.reshape(-1, frame.samples).mean(axis=0) if x.ndim == 2 and x.shape[0] <= 8 else x.reshape(-1)
            if t + len(x) / rate <= 0:
                continue  # pre-roll a player never presents
            if t < 0:
                x = x[int(round(-t * rate)):]
                t = 0.0
            if first_pts is None:
                first_pts = t
            chunks.append(x)
            if sum(len(c) for c in chunks) >= rate * (0.030 + 2 * window_s):
                break
    if not chunks or not rate:
        return 0.0, 0.0, 0.0
    x = np.concatenate(chunks)
    # Presented audio that starts after 0 (a cold decoder's first frame dropped) counts as silence.
    lead = int(round((first_pts or 0.0) * rate))
    x = np.concatenate([np.zeros(lead), x])
    n = int(window_s * rate)
    first = tone_amplitude(x[:n], rate)
    later = tone_amplitude(x[n + int(0.020 * rate): 2 * n + int(0.020 * rate)], rate)
    return first, later, (first / later if later > 0 else 0.0)


# --- pairing and summary -----------------------------------------------------------------

def pair_events(flashes: list[float], beeps: list[float],
                window_s: float = PAIR_WINDOW_S) -> list[tuple[float, float]]:
    """(video pts, audio onset) pairs: each flash with its nearest unused beep in the window."""
    pairs = []
    used = set()
    beeps_arr = np.array(beeps)
    for v in flashes:
        if len(beeps_arr) == 0:
            break
        order = np.argsort(np.abs(beeps_arr - v))
        for k in order:
            if abs(beeps_arr[k] - v) > window_s:
                break
            if int(k) not in used:
                used.add(int(k))
                pairs.append((v, float(beeps_arr[k])))
                break
    return pairs


def unpaired_events(flashes: list[float], beeps: list[float],
                    pairs: list[tuple[float, float]]) -> dict:
    """Flashes and beeps that ended up in no pair (times in seconds, ascending)."""
    paired_v = {v for v, _ in pairs}
    paired_a = {a for _, a in pairs}
    return {"flashes": [v for v in flashes if v not in paired_v],
            "beeps": [a for a in beeps if a not in paired_a]}


def summarize(pairs: list[tuple[float, float]]) -> dict:
    if not pairs:
        return {"events": 0}
    t = np.array([p[0] for p in pairs])
    off = np.array([(a - v) * 1000.0 for v, a in pairs])
    slope = 0.0
    slope_se = None  # unknown with fewer than 3 pairs
    if len(pairs) >= 2 and np.ptp(t) > 0:
        coef = np.polyfit(t, off, 1)
        slope = float(coef[0]) * 3600.0  # ms per second -> ms per hour
        if len(pairs) >= 3:
            # The slope's standard error: how finely this run can tell drift at all (a short run
            # with jittered offsets resolves tens of ms/hour, a 10-minute clean one a few).
            resid = off - np.polyval(coef, t)
            sxx = float(((t - t.mean()) ** 2).sum())
            slope_se = float(np.sqrt((resid ** 2).sum() / (len(pairs) - 2) / sxx)) * 3600.0
    return {
        "events": len(pairs),
        "mean_ms": float(off.mean()),
        "max_abs_ms": float(np.abs(off).max()),
        "stddev_ms": float(off.std()),
        "drift_ms_per_hour": slope,
        "drift_stderr_ms_per_hour": slope_se,
    }


def drift_exceeds(summary: dict, max_drift_ms_per_hour: float) -> bool:
    """True when the run shows drift beyond the bound at three standard errors: |slope| - 3 SE >
    bound. A run too short to resolve the bound cannot fail it, and cannot pass a gross drift
    (300 ppm uncorrected is 1080 ms/hour)."""
    se = summary.get("drift_stderr_ms_per_hour")
    if se is None:
        return False
    return abs(summary["drift_ms_per_hour"]) - 3.0 * se > max_drift_ms_per_hour


def plot(pairs, out_path: str, tolerance_ms: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [v for v, _ in pairs]
    off = [(a - v) * 1000.0 for v, a in pairs]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(t, off, "o-", ms=3, lw=1, label="audio - video")
    ax.axhline(tolerance_ms, color="r", ls="--", lw=1, label=f"±{tolerance_ms:g} ms")
    ax.axhline(-tolerance_ms, color="r", ls="--", lw=1)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("video pts (s)")
    ax.set_ylabel("offset (ms)")
    ax.set_title(title)
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)


def analyse(path: str, fps_hint: float | None = None) -> dict:
    lumas, audio, timing, fps = demux_and_decode(path)
    fps = fps_hint or fps or 30.0
    flashes = find_flashes(lumas, min_spacing_s=max(0.5, 5.0 / fps))
    beeps = find_beeps(audio)
    pairs = pair_events(flashes, beeps)
    return {
        "unpaired": unpaired_events(flashes, beeps, pairs),
        "file": path,
        "fps": fps,
        "flashes": len(flashes),
        "beeps": len(beeps),
        "pairs": pairs,
        "summary": summarize(pairs),
        "streams": [t.as_dict() for t in timing.values()],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="avsync", description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="recording to analyse (FLV, MKV, Ogg...)")
    ap.add_argument("--tolerance-ms", type=float, default=35.0,
                    help="max |audio - video| offset for exit 0 (default 35)")
    ap.add_argument("--plot", metavar="OUT.png", help="write offset over time as a PNG")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ap.add_argument("--fps-hint", type=float, metavar="FPS",
                    help="frame rate when the container does not tell (flash de-duplication)")
    ap.add_argument("--allow-gaps", action="store_true",
                    help="do not fail on audio continuity gaps")
    ap.add_argument("--max-drift-ms-per-hour", type=float, metavar="D",
                    help="fail when the offset's linear drift exceeds D ms/hour by more than three "
                         "standard errors of the fit (the requirement is 5)")
    ap.add_argument("--expect-unpaired", type=int, default=0, metavar="N",
                    help="number of flashes without a beep plus beeps without a flash that "
                         "the recording is meant to have (default 0: any unpaired event fails)")
    args = ap.parse_args(argv)
    if args.tolerance_ms < 0:
        ap.error("--tolerance-ms must be >= 0")
    if args.expect_unpaired < 0:
        ap.error("--expect-unpaired must be >= 0")

    try:
        result = analyse(args.file, args.fps_hint)
    except DecodeFailure as exc:
        print(f"avsync: {exc}", file=sys.stderr)
        return 2

    s = result["summary"]
    reasons = []
    if s["events"] < 1:
        reasons.append(f"no flash/beep pairs found ({result['flashes']} flashes, "
                       f"{result['beeps']} beeps)")
    elif s["max_abs_ms"] > args.tolerance_ms:
        reasons.append(f"max |offset| {s['max_abs_ms']:.1f} ms > tolerance "
                       f"{args.tolerance_ms:g} ms")
    if (args.max_drift_ms_per_hour is not None and s["events"] >= 3
            and drift_exceeds(s, args.max_drift_ms_per_hour)):
        reasons.append(f"drift {s['drift_ms_per_hour']:+.1f} ± {s['drift_stderr_ms_per_hour']:.1f} ms/hour (1 SE) "
                       f"exceeds {args.max_drift_ms_per_hour:g} ms/hour by more than 3 standard errors")
    lone_v, lone_a = result["unpaired"]["flashes"], result["unpaired"]["beeps"]
    n_unpaired = len(lone_v) + len(lone_a)
    result["unpaired_count"] = n_unpaired
    if n_unpaired != args.expect_unpaired:
        what = ([f"flash at {v:.3f} s has no beep" for v in lone_v]
                + [f"beep at {a:.3f} s has no flash" for a in lone_a])
        reasons.append(f"{n_unpaired} unpaired events (expected {args.expect_unpaired})"
                       + (": " + ", ".join(what) if what else ""))
    for st in result["streams"]:
        if st["non_increasing"]:
            reasons.append(f"{st['kind']}: {st['non_increasing']} non-increasing timestamps")
        if st["negative"]:
            reasons.append(f"{st['kind']}: {st['negative']} negative timestamps")
        if st["kind"] == "audio" and st["gaps"] and not args.allow_gaps:
            reasons.append(f"audio: {st['gaps']} gaps totalling {st['gap_total_ms']:.1f} ms")
    result["ok"] = not reasons
    result["reasons"] = reasons

    if args.plot and result["pairs"]:
        plot(result["pairs"], args.plot, args.tolerance_ms, args.file.rsplit("/", 1)[-1])

    if args.json:
        out = dict(result)
        out["events"] = [{"video_s": round(v, 4), "audio_s": round(a, 4),
                          "offset_ms": round((a - v) * 1000.0, 2)} for v, a in result["pairs"]]
        del out["pairs"]
        out["unpaired"] = {k: [round(t, 4) for t in v] for k, v in result["unpaired"].items()}
        print(json.dumps(out, indent=1))
    else:
        for v, a in result["pairs"]:
            print(f"event video={v:9.3f}s audio={a:9.3f}s offset={(a - v) * 1000.0:+7.1f} ms")
        for v in lone_v:
            print(f"unpaired flash video={v:9.3f}s (no beep within {PAIR_WINDOW_S * 1000:.0f} ms)")
        for a in lone_a:
            print(f"unpaired beep  audio={a:9.3f}s (no flash within {PAIR_WINDOW_S * 1000:.0f} ms)")
        print(f"flashes={result['flashes']} beeps={result['beeps']} events={s['events']} "
              f"unpaired={n_unpaired} (expected {args.expect_unpaired})")
        if s["events"]:
            print(f"mean={s['mean_ms']:+.1f} ms max|offset|={s['max_abs_ms']:.1f} ms "
                  f"stddev={s['stddev_ms']:.1f} ms drift={s['drift_ms_per_hour']:+.1f} "
                  f"± {s['drift_stderr_ms_per_hour'] or 0:.1f} ms/hour")
        for st in result["streams"]:
            line = (f"{st['kind']}: packets={st['packets']} non_increasing={st['non_increasing']}"
                    f" negative={st['negative']}")
            if st["kind"] == "audio":
                line += f" gaps={st['gaps']} gap_total={st['gap_total_ms']:.1f} ms"
            print(line)
        print("PASS" if result["ok"] else "FAIL: " + "; ".join(reasons))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
