"""The Pythonic face of libbroadcastkit: Session (a context manager), numpy frames, typed stats."""

from __future__ import annotations

import ctypes
import json
import re
import sys
import threading
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Type, Union, cast

import numpy as np

from . import _abi

if TYPE_CHECKING:  # not imported at run time: see __init__.py (casts name these types as strings)
    import numpy.typing as npt

    from ._types import (AudioCodec, AudioInput, AudioLane, Backpressure, BudgetScope, EventType, Limits, MemorySize,
                         PixelFormat, Plane, Preset, SendResult, SessionState, SessionStats, SessionStatus, StrPath,
                         VideoInput)

_lib: Optional[_abi.Library] = None
_lib_lock = threading.Lock()


def library() -> _abi.Library:
    """The loaded libbroadcastkit (a ctypes.CDLL; `.path` is its file). Loaded on first use, from the
    package's own copy, $BROADCASTKIT_LIBRARY, $BROADCASTKIT_PREFIX/lib, pkg-config's libdir, the
    repository's .build/release, then the system's library path; OSError saying how to provide it."""
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = _abi.load()
        return _lib


def version() -> str:
    """The library's version text, e.g. "0.2.0 (BroadcastKit; x264, vo-aacenc, libopus, libyuv; native RTMP)"
    (bk_version)."""
    return library().bk_version().decode()


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns: the clock frame and audio timestamps are expected on."""
    return library().bk_now_ns()


def limits() -> Limits:
    """The library's ranges and defaults (bk_limits()): {"width": {"min", "max", "default"}, ...,
    "presets": [...], "default_preset", "default_memory_budget_bytes"}. Session maps to these."""
    t = library().bk_limits().contents
    out: Dict[str, object] = {}
    for name in _abi.RANGE_NAMES:
        r = getattr(t, name)
        out[name] = {"min": int(r.min), "max": int(r.max), "default": int(r.default)}
    out["presets"] = t.presets.decode().split(",")
    out["default_preset"] = t.default_preset.decode()
    out["default_memory_budget_bytes"] = int(t.default_memory_budget_bytes)
    r = t.reconnect_attempts
    out["reconnect_attempts"] = {"min": int(r.min), "max": int(r.max), "default": int(r.default)}
    out["reconnect_delay"] = {"min": float(t.reconnect_delay_min_seconds), "max": float(t.reconnect_delay_max_seconds),
                              "default": float(t.reconnect_delay_default_seconds)}
    return cast("Limits", out)


def apply_process_tuning() -> None:
    """Two malloc arenas and no transparent huge pages for this process (what the CLI does)."""
    library().bk_process_tuning_apply()


class BroadcastError(Exception):
    """A failed library call; `status` is the bk_status code. Texts never contain the stream key."""

    def __init__(self, message: str, status: int = _abi.ERR_INVALID_ARGUMENT):
        super().__init__(message)
        self.status = status


class ConfigurationError(BroadcastError):
    """The configuration cannot be used (no destination, an unusable URL, an option this library lacks)."""


class InvalidValueError(ConfigurationError, ValueError):
    """A value outside the library's range (see limits()), e.g. an odd width: also a ValueError."""


class MemoryBudgetError(BroadcastError):
    """The memory plan does not fit the budget; the message ends with the plan."""


class ConnectError(BroadcastError):
    """A destination could not connect or publish (unreachable, key or app refused, TLS)."""


class StreamingError(BroadcastError):
    """The stream failed while running (the primary destination was lost and not recovered)."""


class StateError(BroadcastError):
    """The call is not valid in the session's state (not running, closed, started twice)."""


class FrameError(ValueError):
    """A frame or audio buffer that cannot be used (shape, dtype, strides, size). Nothing was sent;
    the stream goes on."""


_ERRORS: Dict[int, Type[BroadcastError]] = {
    _abi.ERR_CONFIGURATION: ConfigurationError, _abi.ERR_MEMORY_BUDGET: MemoryBudgetError,
    _abi.ERR_CONNECT: ConnectError, _abi.ERR_STREAMING: StreamingError, _abi.ERR_STATE: StateError}


def _error(status: int, message: str) -> BroadcastError:
    return _ERRORS.get(status, BroadcastError)(message, status)


@dataclass(frozen=True)
class Event:
    """A session event (bk_event): type is "started" (message: the destinations, keys redacted),
    "warning", "reconnecting" (attempt, delay_seconds), "reconnected" (reconnects so far), "failed"
    (message: why), "finished" or "stop-requested" (a control client's `stop`). An event type this
    binding does not know arrives as a "warning" whose message starts with "event N: "."""

    type: EventType
    message: str
    attempt: int = 0
    delay_seconds: float = 0.0
    reconnects: int = 0


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?\s*$", re.I)


def _bytes(value: MemorySize) -> int:
    if isinstance(value, int):
        return value
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"memory size {value!r}: expected bytes or e.g. '50M', '512K', '1G'")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()])


def _redacted(url: str) -> str:
    if url.lower().startswith("srt://"):
        # The query holds the stream id and passphrase.
        return url.split("?", 1)[0] + ("?****" if "?" in url else "")
    return url.rstrip("/") + "/****"


class Session:
    """A live broadcast.

        with broadcastkit.Session("rtmp://127.0.0.1:1935/live", key, width=1280, height=720) as s:
            s.send_video(frame)                     # numpy uint8 (H, W, 4), BGRx by default
            s.send_audio(samples)                   # numpy int16/float32 (N, 2) at 48 kHz
            print(s.stats()["video_frames_sent"])

    Entering starts the stream (connects); leaving finishes it (flush, send what is queued, close).
    url is rtmp(s)://host[:port]/app (with key, the stream key), srt://host:port[?streamid=...] or a
    WHIP endpoint http(s)://...; record is a file (fragmented MP4 when it ends in .mp4, else FLV).
    A value left as None is the library's default, and every value is checked against the library's
    ranges (limits()): one outside raises InvalidValueError, a ValueError.
    memory_budget is bytes or "50M"-style text, "auto" (the library's rule) or 0 (no check);
    budget_scope says what it counts: "session" (the default: the session's own memory) or "process"
    (the whole process, as the CLI does). A library without bk_config_set_memory_budget_scope
    applies its own rule; asking it for "process" raises ConfigurationError.
    backpressure="drop" (live sources) returns a drop reason when a lane is full; "block" (a file, a
    transcoder: producers faster than real time) waits for room, so every buffer is encoded; the
    recording and a network destination slower than the encoder then slow the producer too, and a
    pause of the producer is a pause: every frame and sample keeps its pts_ns.
    control=PATH opens the control socket of `broadcast --control` for this session
    (docs/control-protocol.md); a client's `stop` arrives as an Event of type "stop-requested".
    reconnect_attempts (0 retries forever, -1 never) and reconnect_delay (the first delay, seconds)
    default to and are checked against limits()["reconnect_attempts"] and ["reconnect_delay"], the
    CLI's --reconnect-attempts/--reconnect-delay ranges.
    on_event runs on the library's threads (see Event); it must return quickly.
    The key is handed to the library at once (which keeps its own copy) and is not kept by this
    object. send_video/send_audio may be called from different threads for different lanes; they
    release the GIL while the library converts or copies the buffer. For asyncio, see AsyncSession.
    """

    def __init__(self, url: Optional[str] = None, key: Union[str, bytes, None] = None, *,
                 record: Optional[StrPath] = None, width: Optional[int] = None, height: Optional[int] = None,
                 fps: Optional[int] = None, video_bitrate: Optional[int] = None, preset: Optional[Preset] = None,
                 keyframe_interval: Optional[int] = None, audio_codec: Optional[AudioCodec] = "aac",
                 audio_bitrate: Optional[int] = None, memory_budget: Optional[MemorySize] = None,
                 budget_scope: BudgetScope = "session", reconnect_attempts: Optional[int] = None,
                 reconnect_delay: Optional[float] = None,
                 adaptive_bitrate: bool = True, replay_seconds: int = 0, replay_dir: Optional[StrPath] = None,
                 backpressure: Backpressure = "drop", control: Optional[StrPath] = None,
                 on_event: Optional[Callable[[Event], None]] = None):
        lib = library()
        self._lib = lib
        self._session: Optional[int] = None
        self._callback: Optional[object] = None
        self._final_stats: Optional[SessionStats] = None
        t = lib.bk_limits().contents

        def default(value: Optional[int], field: str) -> int:
            return int(getattr(t, field).default) if value is None else value

        width, height, fps = default(width, "width"), default(height, "height"), default(fps, "fps")
        video_bitrate = 0 if video_bitrate is None else video_bitrate  # 0: the library's default for the size
        keyframe_interval = default(keyframe_interval, "keyframe_interval_seconds")
        preset = cast("Preset", t.default_preset.decode()) if preset is None else preset
        if reconnect_attempts is None:
            reconnect_attempts = int(t.reconnect_attempts.default)
        if reconnect_delay is None:
            reconnect_delay = float(t.reconnect_delay_default_seconds)
        if audio_bitrate is None:
            audio_bitrate = int((t.opus_bitrate_kbps if audio_codec == "opus" else t.aac_bitrate_kbps).default)
        self._describe = f"{width}x{height}@{fps}"
        self._destinations: List[str] = []
        cfg = lib.bk_config_new()
        if not cfg:
            raise MemoryError("bk_config_new")
        try:
            def check(status: int) -> None:
                if status == _abi.ERR_INVALID_ARGUMENT:
                    raise InvalidValueError(lib.bk_config_last_error(cfg).decode(errors="replace"), status)
                if status != _abi.OK:
                    raise _error(status, lib.bk_config_last_error(cfg).decode(errors="replace"))

            for name, value in (("width", width), ("height", height), ("fps", fps), ("video_bitrate", video_bitrate),
                                ("keyframe_interval", keyframe_interval), ("audio_bitrate", audio_bitrate),
                                ("replay_seconds", replay_seconds), ("reconnect_attempts", reconnect_attempts)):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise InvalidValueError(f"{name} {value!r}: expected an integer", _abi.ERR_INVALID_ARGUMENT)

            check(lib.bk_config_set_video(cfg, width, height, fps, video_bitrate))
            check(lib.bk_config_set_preset(cfg, str(preset).encode()))
            check(lib.bk_config_set_keyframe_interval(cfg, keyframe_interval))
            if audio_codec not in _abi.AUDIO_CODECS:
                raise InvalidValueError(f"audio codec {audio_codec!r}: expected 'aac', 'opus' or None",
                                        _abi.ERR_INVALID_ARGUMENT)
            check(lib.bk_config_set_audio(cfg, _abi.AUDIO_CODECS[audio_codec], audio_bitrate))
            if memory_budget is not None:  # else the library's default, and its plan says so
                budget = _abi.MEMORY_BUDGET_AUTO if memory_budget == "auto" else _bytes(memory_budget)
                check(lib.bk_config_set_memory_budget(cfg, budget))
            if budget_scope not in _abi.BUDGET_SCOPES:
                raise InvalidValueError(f"budget scope {budget_scope!r}: expected 'session' (the session's own "
                                        "memory) or 'process' (the whole process)", _abi.ERR_INVALID_ARGUMENT)
            if hasattr(lib, _abi.BUDGET_SCOPE_SYMBOL):
                check(lib.bk_config_set_memory_budget_scope(cfg, _abi.BUDGET_SCOPES[budget_scope]))
            elif budget_scope != "session":
                raise ConfigurationError(
                    f"budget_scope={budget_scope!r} needs a libbroadcastkit with {_abi.BUDGET_SCOPE_SYMBOL}, "
                    f"which {lib.path} ({lib.bk_version().decode()}) does not have: use a newer library, or leave "
                    "budget_scope at 'session'", _abi.ERR_CONFIGURATION)
            if not isinstance(reconnect_delay, (int, float)) or isinstance(reconnect_delay, bool):
                raise InvalidValueError(f"reconnect_delay {reconnect_delay!r}: expected a number of seconds",
                                        _abi.ERR_INVALID_ARGUMENT)
            # The library's ranges and words (bk_limits()->reconnect_*), as the CLI reports them.
            check(lib.bk_config_set_reconnect(cfg, reconnect_attempts, float(reconnect_delay)))
            check(lib.bk_config_set_adaptive_bitrate(cfg, 1 if adaptive_bitrate else 0))
            if backpressure not in _abi.BACKPRESSURE:
                raise InvalidValueError(f"backpressure {backpressure!r}: expected 'drop' (live sources) or 'block' "
                                        "(producers faster than real time)", _abi.ERR_INVALID_ARGUMENT)
            check(lib.bk_config_set_backpressure(cfg, _abi.BACKPRESSURE[backpressure]))
            if replay_seconds:
                check(lib.bk_config_set_replay(cfg, replay_seconds, str(replay_dir).encode() if replay_dir else None))
            if url is not None:
                is_srt = url.lower().startswith("srt://")
                if not key and not is_srt:
                    raise ConfigurationError("an RTMP url needs a stream key", _abi.ERR_CONFIGURATION)
                key = key or ""  # srt://: the key only fills the stream id when the URL has none
                check(lib.bk_config_add_destination(cfg, url.encode(), key.encode() if isinstance(key, str) else bytes(key)))
                self._destinations.append(_redacted(url))
            if record is not None:
                check(lib.bk_config_add_file(cfg, str(record).encode()))
                self._destinations.append(str(record))
            if not self._destinations:
                raise ConfigurationError("no destination: give url and key, or record", _abi.ERR_CONFIGURATION)
            self._session = lib.bk_session_new(cfg)
            if not self._session:
                raise MemoryError("bk_session_new")
        finally:
            lib.bk_config_free(cfg)  # wipes the config's copy of the key
        if on_event is not None:
            self._set_event_callback(on_event)
        if control is not None:
            # After the callback, so a stale socket's takeover note reaches on_event as a warning.
            self._check(lib.bk_session_open_control(self._session, str(control).encode()))

    # -- lifecycle ---------------------------------------------------------------------------

    def _set_event_callback(self, on_event: Callable[[Event], None]) -> None:
        def trampoline(ev: Any, _user: Optional[int]) -> None:
            e = ev.contents
            try:
                message = (e.message or b"").decode(errors="replace")
                kind = _abi.EVENT_TYPES.get(e.type)
                if kind is None:
                    kind, message = "warning", f"event {e.type}: {message}"
                on_event(Event(cast("EventType", kind), message, e.attempt, e.delay_seconds, e.reconnects))
            except Exception:  # an exception must not unwind into the library's threads
                traceback.print_exc(file=sys.stderr)

        self._callback = _abi.EVENT_CALLBACK(trampoline)  # kept alive as long as the session
        self._check(self._lib.bk_session_set_event_callback(self._session, self._callback, None))

    def _handle(self) -> int:
        if self._session is None:
            raise StateError("session is closed", _abi.ERR_STATE)
        return self._session

    def _check(self, status: int) -> None:
        if status != _abi.OK:
            raise _error(status, self._lib.bk_session_last_error(self._session).decode(errors="replace"))

    def memory_plan(self) -> str:
        """The memory plan as text, one item per line, the last lines naming the budget and whether it
        fits (opens the encoders if not yet done; connects nothing). ConfigurationError on failure."""
        text = _abi.take_string(self._lib, self._lib.bk_session_memory_plan(self._handle()))
        if text is None:
            self._check(_abi.ERR_CONFIGURATION if self._lib.bk_session_last_error(self._session) else _abi.OK)
        return text or ""

    def start(self) -> Session:
        """Prepares the encoders and pools, checks the memory plan against the budget, connects every
        destination and starts the lanes; returns self. Blocks while connecting. Raises
        ConfigurationError, MemoryBudgetError (the message ends with the plan), ConnectError, or
        StateError when started twice or closed."""
        self._check(self._lib.bk_session_start(self._handle()))
        return self

    def finish(self) -> None:
        """Stops taking buffers, encodes what is pending, sends what is queued (up to 1.5 s) and closes
        every destination; blocks until done. Raises StreamingError if the stream had failed. A second
        call does nothing (and raises the same); after close() it does nothing."""
        if self._session is not None:
            self._check(self._lib.bk_session_finish(self._session))

    def close(self) -> None:
        """Finishes (if running) and frees the session; stats() then keeps the last snapshot.
        Idempotent. No other call on this session may be running."""
        if self._session is not None:
            if self.state == "running":
                self._lib.bk_session_finish(self._session)
            self._final_stats = self.stats()
            s, self._session = self._session, None
            self._lib.bk_session_free(s)
        self._callback = None

    def __enter__(self) -> Session:
        """Starts the session (see start) and returns it."""
        return self.start()

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        """Finishes (raising StreamingError if the stream had failed) unless the block raised, then
        closes."""
        try:
            if exc_type is None:
                self.finish()
        finally:
            self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @property
    def state(self) -> SessionState:
        """The lifecycle state: "idle" (not started), "running", "finishing", "finished", "failed",
        or "closed" after close()."""
        if not self._session:
            return "closed"
        return cast("SessionState", _abi.STATES.get(self._lib.bk_session_state(self._session), "failed"))

    @property
    def status(self) -> SessionStatus:
        """The stream as the library words it: "connecting" (also before start), "live",
        "reconnecting", "failed", "finished", or "closed" after close(). Any thread, any time."""
        if not self._session:
            return "closed"
        return cast("SessionStatus", self._lib.bk_session_status(self._session).decode())

    def __repr__(self) -> str:
        return f"<broadcastkit.Session {self._describe} -> {', '.join(self._destinations)} ({self.status})>"

    # -- buffers -----------------------------------------------------------------------------

    def _result(self, r: int) -> SendResult:
        if r == _abi.ACCEPTED:
            return "accepted"
        if r == _abi.NOT_RUNNING:
            raise StateError(f"session is not running ({self.status})", _abi.ERR_STATE)
        if r == _abi.INVALID_BUFFER:
            raise FrameError("buffer rejected by the library (bad format or lane)")
        if r == _abi.DROPPED_MALFORMED:
            raise FrameError("buffer rejected by the library as malformed (counted as a 'malformed' drop)")
        return cast("SendResult", self._lib.bk_drop_reason_name(r).decode())

    def send_video(self, frame: VideoInput, pts_ns: Optional[int] = None, format: PixelFormat = "BGRx") -> SendResult:
        """Sends one frame; returns "accepted" or the drop reason ("encoder_busy"...).

        Packed formats (BGRx, BGRA, RGBA, RGBx): a uint8 array of shape (H, W, 4) whose rows may be
        padded (stride >= W*4, e.g. a slice of a wider buffer) but whose pixels are contiguous.
        NV12: (y, uv) with y (H, W) and uv (ceil(H/2), 2*ceil(W/2)) uint8, or one (H + ceil(H/2), W)
        array. I420: (y, u, v), or one C-contiguous (H + ceil(H/2), W) array holding Y, U, V back
        to back. pts_ns: capture time on now_ns()'s clock (default: now). Raises FrameError for
        anything else (the stream is not affected), StateError when the session is not running.
        With backpressure="block" it waits for room in the encoder (up to 5 s)."""
        if format not in _abi.PIXEL_FORMATS:
            raise FrameError(f"pixel format {format!r} not one of {', '.join(_abi.PIXEL_FORMATS)}")
        planes = _video_planes(frame, format)
        f = _abi.VideoFrame()
        f.width, f.height = planes.width, planes.height
        f.format = _abi.PIXEL_FORMATS[format]
        for i, (addr, stride, size) in enumerate(planes.planes):
            f.planes[i], f.strides[i], f.plane_sizes[i] = addr, stride, size
        f.pts_ns = self._lib.bk_now_ns() if pts_ns is None else int(pts_ns)
        r = self._lib.bk_session_process_video(self._handle(), ctypes.byref(f))
        del planes  # the arrays stay referenced until the library returned
        return self._result(r)

    def send_audio(self, samples: AudioInput, pts_ns: Optional[int] = None, lane: AudioLane = "app",
                   sample_rate: int = 48000) -> SendResult:
        """Sends interleaved PCM: a C-contiguous int16 or float32 array of shape (N,) (mono) or
        (N, channels) with 1 or 2 channels, at 44100 or 48000 Hz, on lane "app" or "mic"; returns
        "accepted" or the drop reason ("audio_lane_full"...). pts_ns: capture time of the first
        sample (default: now). FrameError for anything else; StateError when not running. With
        backpressure="block" it waits for room in the lane's ring (up to 5 s)."""
        if lane not in _abi.LANES:
            raise FrameError(f"audio lane {lane!r} not 'app' or 'mic'")
        a: npt.NDArray[Any] = samples if isinstance(samples, np.ndarray) else np.asarray(samples)
        if a.dtype == np.int16:
            fmt = _abi.SAMPLE_S16
        elif a.dtype == np.float32:
            fmt = _abi.SAMPLE_F32
        else:
            raise FrameError(f"audio dtype {a.dtype} not int16 or float32")
        if a.ndim == 1:
            channels = 1
        elif a.ndim == 2 and a.shape[1] in (1, 2):
            channels = int(a.shape[1])
        else:
            raise FrameError(f"audio shape {a.shape} not (N,) or (N, 1|2)")
        if not a.flags.c_contiguous:
            raise FrameError("audio must be C-contiguous (interleaved); use np.ascontiguousarray")
        if not 1 <= a.shape[0] <= 22050:
            raise FrameError(f"audio buffer of {a.shape[0]} frames outside 1..22050")
        if sample_rate not in (44100, 48000):
            raise FrameError(f"sample rate {sample_rate} not 44100 or 48000")
        b = _abi.AudioBuffer()
        b.format, b.channels, b.sample_rate, b.frame_count = fmt, channels, sample_rate, a.shape[0]
        b.data, b.data_size = a.ctypes.data, a.nbytes
        b.pts_ns = self._lib.bk_now_ns() if pts_ns is None else int(pts_ns)
        r = self._lib.bk_session_process_audio(self._handle(), _abi.LANES[lane], ctypes.byref(b))
        return self._result(r)

    # -- runtime controls --------------------------------------------------------------------

    def set_video_bitrate(self, kbps: int) -> None:
        """Sets the x264 target bitrate while running (the adaptive bitrate may still lower it).
        ValueError outside the library's range; StateError when not running."""
        status = self._lib.bk_session_set_video_bitrate(self._handle(), int(kbps))
        if status == _abi.ERR_INVALID_ARGUMENT:
            raise ValueError(self._lib.bk_session_last_error(self._session).decode(errors="replace"))
        self._check(status)

    def request_keyframe(self) -> None:
        """Makes the next encoded picture a keyframe. StateError when not running."""
        self._check(self._lib.bk_session_request_keyframe(self._handle()))

    # -- stats -------------------------------------------------------------------------------

    def save_replay(self, path: Optional[StrPath] = None, seconds: Optional[float] = None) -> str:
        """Saves the replay ring's last `seconds` (default: all of it) as an MP4 clip at `path`
        (default: a timestamped name in replay_dir); blocks until written; returns the path."""
        out = ctypes.c_void_p()
        self._check(self._lib.bk_session_save_replay(self._handle(), str(path).encode() if path else None,
                                                     float(seconds or 0), ctypes.byref(out)))
        return _abi.take_string(self._lib, out.value) or ""

    def stats(self) -> SessionStats:
        """Counters as a dict (SessionStats: the keys of the CLI's --stats-json: video_frames_sent,
        drops{...}, destinations[...], ...). Any thread. After close(), the last snapshot taken
        before the session was freed."""
        if self._session is None:
            if self._final_stats is None:
                raise StateError("session was never created", _abi.ERR_STATE)
            return self._final_stats.copy()
        text = _abi.take_string(self._lib, self._lib.bk_session_stats_json(self._handle()))
        if text is None:
            raise MemoryError("bk_session_stats_json")
        return cast("SessionStats", json.loads(text))


@dataclass
class _Planes:
    width: int
    height: int
    planes: List[Tuple[int, int, int]]  # (address, stride, readable bytes)
    keep: Tuple[object, ...]            # the arrays, alive for the call


def _u8(a: object, what: str) -> Plane:
    arr: npt.NDArray[Any] = a if isinstance(a, np.ndarray) else np.asarray(a)
    if arr.dtype != np.uint8:
        raise FrameError(f"{what}: dtype {arr.dtype}, expected uint8")
    if any(s <= 0 for s in arr.strides):
        raise FrameError(f"{what}: strides {arr.strides} must be positive (use np.ascontiguousarray)")
    return cast("Plane", arr)


def _plane2d(a: object, what: str, rows: int, row_bytes: int) -> Tuple[Tuple[int, int, int], Plane]:
    arr = _u8(a, what)
    if arr.ndim != 2 or arr.shape[0] != rows or arr.shape[1] != row_bytes:
        raise FrameError(f"{what}: shape {arr.shape}, expected ({rows}, {row_bytes})")
    if arr.strides[1] != 1:
        raise FrameError(f"{what}: bytes within a row must be contiguous (strides {arr.strides})")
    return (arr.ctypes.data, arr.strides[0], arr.strides[0] * (rows - 1) + row_bytes), arr


def _check_size(w: int, h: int) -> None:
    if not (1 <= w <= 8192 and 1 <= h <= 8192):
        raise FrameError(f"frame size {w}x{h} outside 1..8192")


def _video_planes(frame: object, fmt: str) -> _Planes:
    if fmt in ("BGRA", "BGRx", "RGBA", "RGBx"):
        arr = _u8(frame, f"{fmt} frame")
        if arr.ndim != 3 or arr.shape[2] != 4:
            raise FrameError(f"{fmt} frame: shape {arr.shape}, expected (height, width, 4)")
        h, w = arr.shape[0], arr.shape[1]
        _check_size(w, h)
        if arr.strides[2] != 1 or arr.strides[1] != 4:
            raise FrameError(f"{fmt} frame: pixels must be contiguous within a row (strides {arr.strides})")
        return _Planes(w, h, [(arr.ctypes.data, arr.strides[0], arr.strides[0] * (h - 1) + w * 4)], (arr,))
    # Planar 4:2:0.
    if isinstance(frame, (tuple, list)):
        y = _u8(frame[0], f"{fmt} Y plane")
        if y.ndim != 2:
            raise FrameError(f"{fmt} Y plane: shape {y.shape}, expected (height, width)")
        h, w = y.shape
        _check_size(w, h)
        ch, cw = (h + 1) // 2, (w + 1) // 2
        want = 2 if fmt == "NV12" else 3
        if len(frame) != want:
            raise FrameError(f"{fmt}: {len(frame)} planes given, expected {want}")
        py, ky = _plane2d(y, f"{fmt} Y plane", h, w)
        if fmt == "NV12":
            puv, kuv = _plane2d(frame[1], "NV12 UV plane", ch, cw * 2)
            return _Planes(w, h, [py, puv], (ky, kuv))
        pu, ku = _plane2d(frame[1], "I420 U plane", ch, cw)
        pv, kv = _plane2d(frame[2], "I420 V plane", ch, cw)
        return _Planes(w, h, [py, pu, pv], (ky, ku, kv))
    arr = _u8(frame, f"{fmt} frame")
    if arr.ndim != 2 or not arr.flags.c_contiguous:
        raise FrameError(f"{fmt} frame: expected a C-contiguous (height + height/2, width) array or a tuple of planes")
    w = arr.shape[1]
    h = arr.shape[0] * 2 // 3
    ch, cw = (h + 1) // 2, (w + 1) // 2
    if h < 1 or h + ch != arr.shape[0]:
        raise FrameError(f"{fmt} frame: shape {arr.shape} is not (height + ceil(height/2), width)")
    _check_size(w, h)
    base = arr.ctypes.data
    if fmt == "NV12":
        if w % 2:
            raise FrameError("NV12 in one array needs an even width (use a (y, uv) tuple)")
        return _Planes(w, h, [(base, w, w * h), (base + w * h, w, w * ch)], (arr,))
    if w % 2:
        raise FrameError("I420 in one array needs an even width (use a (y, u, v) tuple)")
    u = base + w * h
    v = u + cw * ch
    return _Planes(w, h, [(base, w, w * h), (u, cw, cw * ch), (v, cw, cw * ch)], (arr,))
