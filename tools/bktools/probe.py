#!/usr/bin/env python3
"""Independent verification of an FLV recording: decode EVERY packet with PyAV (FFmpeg),
never with our own code, and check what a viewer would get.

Reports video codec/size/frame count, audio codec/rate/channels/decoded samples/duration,
decode errors (exceptions, corrupt frames, error-level FFmpeg log lines) and the number of
non-increasing packet timestamps per stream. Exits 0 only when every given expectation holds
(and there are no decode errors or non-increasing timestamps); prints one line per failure.

Usage: tools/probe_recording.py FILE.flv [--json] [--thumbnail OUT.png]
         [--expect-frames N --tolerance 3] [--expect-audio-seconds S --audio-tolerance-pct 2]
         [--expect-width W --expect-height H] [--expect-video-codec h264]
         [--expect-audio-codec aac|opus] [--allow-decode-errors] [--allow-timestamp-errors]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field

import av
import av.logging


@dataclass
class StreamReport:
    """What the decoder saw on one stream."""

    index: int
    kind: str
    codec: str | None = None
    packets: int = 0
    # Packets whose decode timestamp was not strictly greater than the previous one's.
    non_increasing_timestamps: int = 0
    # Where the first one happened (packet number in the stream, its time in seconds).
    first_non_increasing: str | None = None
    first_ts_s: float | None = None
    last_ts_s: float | None = None
    decode_exceptions: int = 0
    corrupt_frames: int = 0
    frames: int = 0
    # video
    width: int | None = None
    height: int | None = None
    # audio
    sample_rate: int | None = None
    channels: int | None = None
    samples: int = 0
    audio_seconds: float | None = None


@dataclass
class Report:
    """Whole-file result; `video` and `audio` are the first stream of each kind."""

    path: str
    container_error: str | None = None
    streams: list[StreamReport] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    thumbnail: str | None = None

    def first(self, kind: str) -> StreamReport | None:
        return next((s for s in self.streams if s.kind == kind), None)

    @property
    def decode_errors(self) -> int:
        return (sum(s.decode_exceptions + s.corrupt_frames for s in self.streams)
                + len(self.log_errors) + (1 if self.container_error else 0))

    @property
    def non_increasing_timestamps(self) -> int:
        return sum(s.non_increasing_timestamps for s in self.streams)

    def to_dict(self) -> dict:
        v, a = self.first("video"), self.first("audio")
        return {
            "path": self.path,
            "video_codec": v.codec if v else None,
            "width": v.width if v else None,
            "height": v.height if v else None,
            "video_frames": v.frames if v else 0,
            "audio_codec": a.codec if a else None,
            "sample_rate": a.sample_rate if a else None,
            "channels": a.channels if a else None,
            "audio_samples": a.samples if a else 0,
            "audio_seconds": a.audio_seconds if a else None,
            "decode_errors": self.decode_errors,
            "non_increasing_timestamps": self.non_increasing_timestamps,
            "container_error": self.container_error,
            "log_errors": self.log_errors[:20],
            "thumbnail": self.thumbnail,
            "streams": [asdict(s) for s in self.streams],
        }


def _packet_time(packet: av.Packet) -> int | None:
    # FLV carries one timestamp per tag: the decode time. Fall back to pts if dts is missing.
    return packet.dts if packet.dts is not None else packet.pts


def probe(path: str) -> Report:
    """Demux and decode every packet of `path`."""
    report = Report(path=path)
    av.logging.set_level(av.logging.ERROR)
    try:
        with av.logging.Capture(local=False) as logs:
            _probe_into(report, path)
    finally:
        av.logging.set_level(None)
    for level, name, message in logs:
        if level is not None and level <= av.logging.ERROR:
            report.log_errors.append(f"{name}: {message.strip()}")
    return report


def _probe_into(report: Report, path: str) -> None:
    try:
        container = av.open(path)
    except Exception as exc:  # noqa: BLE001 - any open failure is a verdict, not a crash
        report.container_error = f"open failed: {exc}"
        return
    with container:
        by_index: dict[int, StreamReport] = {}
        last_ts: dict[int, int] = {}
        for stream in container.streams:
            if stream.type not in ("video", "audio"):
                continue
            sr = StreamReport(index=stream.index, kind=stream.type,
                              codec=stream.codec_context.name if stream.codec_context else None)
            by_index[stream.index] = sr
            report.streams.append(sr)
        if not by_index:
            return
        try:
            # demux() over all streams: a damaged FLV can make the demuxer add streams midway.
            for packet in container.demux():
                sr = by_index.get(packet.stream.index)
                if sr is None:
                    if packet.stream.type in ("video", "audio") and packet.size > 0:
                        report.container_error = (f"stream {packet.stream.index} "
                                                  f"({packet.stream.type}) appeared midway")
                    continue
                if packet.size > 0 or packet.pts is not None or packet.dts is not None:
                    _account_packet(sr, packet, last_ts)
                _decode(sr, packet)
        except Exception as exc:  # noqa: BLE001 - damaged input is a verdict, not a crash
            report.container_error = f"demux failed: {type(exc).__name__}: {exc}"


def _account_packet(sr: StreamReport, packet: av.Packet, last_ts: dict[int, int]) -> None:
    ts = _packet_time(packet)
    if packet.size == 0 and ts is None:
        return  # the flush packet demux() yields at the end
    sr.packets += 1
    if ts is None:
        sr.non_increasing_timestamps += 1
        return
    seconds = float(ts * packet.time_base) if packet.time_base else None
    if sr.first_ts_s is None:
        sr.first_ts_s = seconds
    sr.last_ts_s = seconds
    prev = last_ts.get(sr.index)
    if prev is not None and ts <= prev:
        sr.non_increasing_timestamps += 1
        if sr.first_non_increasing is None:
            sr.first_non_increasing = (f"packet {sr.packets - 1} at {seconds:.3f} s "
                                       f"(previous {float(prev * packet.time_base):.3f} s)")
    last_ts[sr.index] = ts


def _decode(sr: StreamReport, packet: av.Packet) -> None:
    try:
        frames = packet.decode()
    except (av.FFmpegError, ValueError) as exc:
        sr.decode_exceptions += 1
        if sr.decode_exceptions <= 3:
            print(f"probe: {sr.kind} decode error: {exc}", file=sys.stderr)
        return
    for frame in frames:
        sr.frames += 1
        if getattr(frame, "is_corrupt", False):
            sr.corrupt_frames += 1
        if sr.kind == "video":
            sr.width, sr.height = frame.width, frame.height
        else:
            sr.samples += frame.samples
            sr.sample_rate = frame.sample_rate
            sr.channels = frame.layout.nb_channels
            sr.audio_seconds = sr.samples / sr.sample_rate if sr.sample_rate else None


def save_thumbnail(path: str, out_png: str, index: int) -> bool:
    """Decode the video stream again and save a frame at or just after number `index` as PNG.
    Skips near-uniform frames (the test source flashes solid white on whole seconds, and the
    middle frame of a 10 s clip is exactly such a flash)."""
    import numpy as np

    with av.open(path) as container:
        if not container.streams.video:
            return False
        chosen = None
        for n, frame in enumerate(container.decode(video=0)):
            if n < index:
                continue
            chosen = frame
            luma = frame.to_ndarray(format="gray")
            mostly_one_value = float(np.mean(np.abs(luma.astype(np.int16) - int(np.median(luma))) < 12)) > 0.9
            if not mostly_one_value or n >= index + 15:
                break
        if chosen is None:
            return False
        chosen.to_image().save(out_png, format="PNG")
        return True


def check(report: Report, args: argparse.Namespace) -> list[str]:
    """One human-readable line per unmet expectation."""
    failures: list[str] = []
    v, a = report.first("video"), report.first("audio")
    if report.container_error:
        failures.append(f"container: {report.container_error}")
    if not report.streams and not report.container_error:
        failures.append("no audio or video stream in the file")
    if not args.allow_decode_errors and report.decode_errors:
        detail = "; ".join(report.log_errors[:3])
        failures.append(f"{report.decode_errors} decode error(s)" + (f": {detail}" if detail else ""))
    if not args.allow_timestamp_errors and report.non_increasing_timestamps:
        per = ", ".join(f"{s.kind}={s.non_increasing_timestamps}, first: {s.first_non_increasing}"
                        for s in report.streams if s.non_increasing_timestamps)
        failures.append(f"{report.non_increasing_timestamps} non-increasing packet timestamp(s) ({per})")
    if args.expect_frames is not None:
        got = v.frames if v else 0
        if abs(got - args.expect_frames) > args.tolerance:
            failures.append(f"video frames {got}, expected {args.expect_frames} ± {args.tolerance}")
    if args.expect_width is not None and (v is None or v.width != args.expect_width):
        failures.append(f"width {v.width if v else None}, expected {args.expect_width}")
    if args.expect_height is not None and (v is None or v.height != args.expect_height):
        failures.append(f"height {v.height if v else None}, expected {args.expect_height}")
    if args.expect_video_codec is not None and (v is None or v.codec != args.expect_video_codec):
        failures.append(f"video codec {v.codec if v else None}, expected {args.expect_video_codec}")
    if args.expect_audio_codec is not None and (a is None or a.codec != args.expect_audio_codec):
        failures.append(f"audio codec {a.codec if a else None}, expected {args.expect_audio_codec}")
    if args.expect_audio_seconds is not None:
        got = a.audio_seconds if a and a.audio_seconds is not None else 0.0
        allowed = args.expect_audio_seconds * args.audio_tolerance_pct / 100.0
        if abs(got - args.expect_audio_seconds) > allowed:
            failures.append(f"audio duration {got:.3f} s, expected {args.expect_audio_seconds} s "
                            f"± {args.audio_tolerance_pct}%")
    return failures


def verify(path: str, **expect) -> tuple[Report, list[str]]:
    """Library entry for tests: probe `path` and check keyword expectations named like the
    CLI flags (expect_frames=300, tolerance=3, expect_audio_codec="aac", ...)."""
    args = parse_args([path])
    for key, value in expect.items():
        if not hasattr(args, key):
            raise TypeError(f"unknown expectation: {key}")
        setattr(args, key, value)
    report = probe(path)
    return report, check(report, args)


def format_text(report: Report) -> str:
    d = report.to_dict()
    lines = [f"file: {report.path}"]
    if d["video_codec"]:
        lines.append(f"video: {d['video_codec']} {d['width']}x{d['height']}, {d['video_frames']} frames")
    else:
        lines.append("video: none")
    if d["audio_codec"]:
        secs = d["audio_seconds"] or 0.0
        lines.append(f"audio: {d['audio_codec']} {d['sample_rate']} Hz, {d['channels']} ch, "
                     f"{d['audio_samples']} samples = {secs:.3f} s")
    else:
        lines.append("audio: none")
    for s in report.streams:
        span = ""
        if s.first_ts_s is not None and s.last_ts_s is not None:
            span = f", ts {s.first_ts_s:.3f}..{s.last_ts_s:.3f} s"
        lines.append(f"stream {s.index} ({s.kind}): {s.packets} packets{span}, "
                     f"{s.non_increasing_timestamps} non-increasing ts, "
                     f"{s.decode_exceptions} decode exceptions, {s.corrupt_frames} corrupt frames")
    lines.append(f"decode errors: {d['decode_errors']}")
    for msg in report.log_errors[:5]:
        lines.append(f"  ffmpeg: {msg}")
    if report.thumbnail:
        lines.append(f"thumbnail: {report.thumbnail}")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--thumbnail", metavar="OUT.png", help="save the middle video frame as PNG")
    p.add_argument("--expect-frames", type=int)
    p.add_argument("--tolerance", type=int, default=3, help="frame count tolerance (default 3)")
    p.add_argument("--expect-audio-seconds", type=float)
    p.add_argument("--audio-tolerance-pct", type=float, default=2.0)
    p.add_argument("--expect-width", type=int)
    p.add_argument("--expect-height", type=int)
    p.add_argument("--expect-video-codec")
    p.add_argument("--expect-audio-codec", choices=["aac", "opus"])
    p.add_argument("--allow-decode-errors", action="store_true")
    p.add_argument("--allow-timestamp-errors", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    report = probe(args.file)
    failures = check(report, args)
    if args.thumbnail:
        v = report.first("video")
        if v and v.frames and save_thumbnail(args.file, args.thumbnail, v.frames // 2):
            report.thumbnail = args.thumbnail
        else:
            failures.append("thumbnail: no decodable video frame")
    if args.json:
        out = report.to_dict()
        out["failures"] = failures
        out["ok"] = not failures
        print(json.dumps(out, indent=2))
    else:
        print(format_text(report))
    for line in failures:
        print(f"FAIL: {line}", file=sys.stderr)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
