"""The binding's types: the words the library accepts and reports, as Literals, the stats and limits
objects as TypedDicts, and the frame types as numpy arrays.

Each Literal maps a table of the library (broadcastkit.h and the stats JSON it writes); the library
keeps the rules, and values are still checked at run time. Tests/Integration/test_python_typing.py
compares every one of them with what the loaded library reports.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, List, Literal, Optional, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from .session import Event

# -- options ---------------------------------------------------------------------------------------

#: x264 presets, lightest first (bk_limits()->presets).
Preset = Literal["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]
#: Audio codec (bk_audio_codec): "none" (or None) makes a video-only stream.
AudioCodec = Literal["aac", "opus", "none"]
#: What a send does when its lane is full (bk_backpressure): "drop" for live sources, "block" for
#: producers faster than real time.
Backpressure = Literal["drop", "block"]
#: What the memory budget counts: the session's own memory, or the whole process's (as the CLI).
BudgetScope = Literal["session", "process"]
#: Pixel layouts by byte order in memory (bk_pixel_format).
PixelFormat = Literal["BGRA", "BGRx", "RGBA", "RGBx", "NV12", "I420"]
#: The two audio lanes, mixed into the one audio track (bk_audio_lane).
AudioLane = Literal["app", "mic"]
#: A memory size: bytes, or a text such as "50M", "512K", "1G"; "auto" for the library's rule; 0 is no check.
MemorySize = Union[int, str]
#: A file-system path.
StrPath = Union[str, os.PathLike[str]]

# -- results and states ----------------------------------------------------------------------------

#: Why a buffer was dropped (bk_drop_reason_name, the keys of the stats' "drops").
DropReason = Literal["encoder_busy", "audio_lane_full", "malformed", "backwards_timestamp", "wrong_lane",
                     "congestion_p_frame", "congestion_until_idr", "queue_full", "encoder_error"]
#: What send_video / send_audio return: "accepted" or the reason of a counted drop.
SendResult = Literal["accepted", "encoder_busy", "audio_lane_full", "malformed", "backwards_timestamp",
                     "wrong_lane", "congestion_p_frame", "congestion_until_idr", "queue_full", "encoder_error"]
#: Session events (bk_event_type).
EventType = Literal["started", "warning", "reconnecting", "reconnected", "failed", "finished", "stop-requested"]
#: Session.state: bk_state, or "closed" once the session is freed.
SessionState = Literal["idle", "running", "finishing", "finished", "failed", "closed"]
#: The stream's status as the library words it (bk_session_status, the stats' "state").
StreamStatus = Literal["connecting", "live", "reconnecting", "failed", "finished"]
#: Session.status: StreamStatus, or "closed" once the session is freed.
SessionStatus = Literal["connecting", "live", "reconnecting", "failed", "finished", "closed"]
#: A destination's kind in the stats.
DestinationKind = Literal["rtmp", "srt", "whip", "flv", "mp4", "discard", "custom"]
#: A destination's state in the stats; "lost": the run ended while it was reconnecting.
DestinationState = Literal["connecting", "live", "reconnecting", "failed", "closed", "lost"]

# -- frames ----------------------------------------------------------------------------------------

#: One uint8 image or plane.
Plane = npt.NDArray[np.uint8]
#: A frame: one array ((H, W, 4) packed; (H + ceil(H/2), W) planar), or NV12 (y, uv), or I420 (y, u, v).
VideoInput = Union[Plane, Tuple[Plane, Plane], Tuple[Plane, Plane, Plane]]
#: Interleaved PCM, (N,) or (N, channels): int16, or float32 in [-1, 1].
AudioInput = Union[npt.NDArray[np.int16], npt.NDArray[np.float32]]

# -- stats (the object of bk_session_stats_json, one writer in the library: StatsReport.swift) -----


class DropCounts(TypedDict):
    """Drops counted by reason since the start."""

    encoder_busy: int
    audio_lane_full: int
    malformed: int
    backwards_timestamp: int
    wrong_lane: int
    congestion_p_frame: int
    congestion_until_idr: int
    queue_full: int
    encoder_error: int


class LinkStats(TypedDict):
    """The transport's own view of the link (SRT)."""

    rtt_ms: float
    bandwidth_mbps: float
    send_rate_mbps: float
    packets_sent: int
    packets_lost: int
    packets_retransmitted: int
    packets_dropped: int
    send_buffer_ms: int


class _DestinationStatsRequired(TypedDict):
    name: str
    kind: DestinationKind
    state: DestinationState
    kbps: float
    bytes_sent: int
    queue_bytes: int
    queue_ms: int
    drops: int
    reconnects: int
    downtime_s: float


class DestinationStats(_DestinationStatsRequired, total=False):
    """One destination's line (primary first); name is the redacted URL or the recording's path.
    `link` only for SRT, `peer_estimate_kbps` only when the receiver reports one (WHIP: REMB)."""

    link: LinkStats
    peer_estimate_kbps: int


class SessionStats(TypedDict):
    """Session.stats(): the same object as each line of the CLI's --stats-json. Rates (fps, kbps)
    are over the interval since the previous stats() call; latencies are None until known."""

    time_s: float
    state: StreamStatus
    monotonic_ns: int
    fps: float
    kbps: float
    video_kbps: float
    audio_kbps: float
    video_frames_in: int
    video_frames_repeated: int
    video_frames_skipped: int
    video_frames_encoded: int
    video_frames_sent: int
    audio_frames_sent: int
    video_bytes_sent: int
    audio_bytes_sent: int
    bytes_sent: int
    drops: DropCounts
    total_drops: int
    queue_bytes: int
    queue_ms: int
    rss_bytes: int
    peak_rss_bytes: int
    rss_anon_bytes: int
    rss_file_bytes: int
    rss_shmem_bytes: int
    target_video_kbps: int
    probes_failed: int
    last_failed_probe_kbps: int
    last_failed_probe_ms: int
    reconnects: int
    late_tags_clamped: int
    video_pts_corrections: int
    audio_non_finite_samples: int
    latency_p50_ms: Optional[float]
    latency_p99_ms: Optional[float]
    downtime_s: float
    destinations: List[DestinationStats]


# -- limits (bk_limits()) --------------------------------------------------------------------------


class LimitRange(TypedDict):
    """An accepted range and the library's default."""

    min: int
    max: int
    default: int


class SecondsRange(TypedDict):
    """An accepted range of seconds and the library's default."""

    min: float
    max: float
    default: float


class Limits(TypedDict):
    """limits(): what a Session accepts and its defaults, the library's one table."""

    width: LimitRange
    height: LimitRange
    fps: LimitRange
    video_bitrate_kbps: LimitRange
    keyframe_interval_seconds: LimitRange
    aac_bitrate_kbps: LimitRange
    opus_bitrate_kbps: LimitRange
    replay_seconds: LimitRange
    presets: List[str]
    default_preset: str
    default_memory_budget_bytes: int
    #: Session(reconnect_attempts=...): 0 retries forever, -1 never reconnects.
    reconnect_attempts: LimitRange
    #: Session(reconnect_delay=...): the first delay, in seconds.
    reconnect_delay: SecondsRange

# -- the options of a Session, for AsyncSession(**options) -----------------------------------------

class SessionOptions(TypedDict, total=False):
    """The keyword options of Session (each described there); AsyncSession takes the same."""

    record: Optional[StrPath]
    width: Optional[int]
    height: Optional[int]
    fps: Optional[int]
    video_bitrate: Optional[int]
    preset: Optional[Preset]
    keyframe_interval: Optional[int]
    audio_codec: Optional[AudioCodec]
    audio_bitrate: Optional[int]
    memory_budget: Optional[MemorySize]
    budget_scope: BudgetScope
    reconnect_attempts: Optional[int]
    reconnect_delay: Optional[float]
    adaptive_bitrate: bool
    replay_seconds: int
    replay_dir: Optional[StrPath]
    backpressure: Backpressure
    control: Optional[StrPath]
    on_event: Optional[Callable[[Event], None]]


__all__ = ["Preset", "AudioCodec", "Backpressure", "BudgetScope", "PixelFormat", "AudioLane", "MemorySize", "StrPath",
           "DropReason", "SendResult", "EventType", "SessionState", "StreamStatus", "SessionStatus",
           "DestinationKind", "DestinationState", "Plane", "VideoInput", "AudioInput", "DropCounts", "LinkStats",
           "DestinationStats", "SessionStats", "LimitRange", "SecondsRange", "Limits", "SessionOptions"]
