"""ctypes declarations of broadcastkit.h (ABI version 1) and the library lookup."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

ABI_VERSION = 1
LIB_NAME = "libbroadcastkit.so"

# bk_status
OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_CONFIGURATION = -2
ERR_MEMORY_BUDGET = -3
ERR_CONNECT = -4
ERR_STREAMING = -5
ERR_STATE = -6

# bk_process_result
ACCEPTED = 0
NOT_RUNNING = -1
INVALID_BUFFER = -2
DROPPED_MALFORMED = 3
DROP_REASON_COUNT = 9

# The enums of broadcastkit.h by the words the binding uses (_types.py has them as Literals).
PIXEL_FORMATS: Dict[str, int] = {"BGRA": 0, "BGRx": 1, "RGBA": 2, "RGBx": 3, "NV12": 4, "I420": 5}
SAMPLE_S16, SAMPLE_F32 = 0, 1
LANES: Dict[str, int] = {"app": 1, "mic": 2}
AUDIO_CODECS: Dict[Optional[str], int] = {None: -1, "none": -1, "aac": 0, "opus": 1}
MEMORY_BUDGET_AUTO = -1
BACKPRESSURE: Dict[str, int] = {"drop": 0, "block": 1}
# bk_config_set_memory_budget_scope (when the library has it): BK_BUDGET_SESSION, BK_BUDGET_PROCESS.
BUDGET_SCOPES: Dict[str, int] = {"session": 0, "process": 1}
BUDGET_SCOPE_SYMBOL = "bk_config_set_memory_budget_scope"
EVENT_TYPES: Dict[int, str] = {0: "started", 1: "warning", 2: "reconnecting", 3: "reconnected", 4: "failed",
                               5: "finished", 6: "stop-requested"}
STATES: Dict[int, str] = {0: "idle", 1: "running", 2: "finishing", 3: "finished", 4: "failed"}


class VideoFrame(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int32), ("height", ctypes.c_int32), ("format", ctypes.c_int),
                ("planes", ctypes.c_void_p * 3), ("strides", ctypes.c_int64 * 3),
                ("plane_sizes", ctypes.c_int64 * 3), ("pts_ns", ctypes.c_int64)]


class AudioBuffer(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("channels", ctypes.c_int32), ("sample_rate", ctypes.c_int32),
                ("frame_count", ctypes.c_int32), ("data", ctypes.c_void_p), ("data_size", ctypes.c_int64),
                ("pts_ns", ctypes.c_int64)]


class Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("message", ctypes.c_char_p), ("attempt", ctypes.c_int32),
                ("delay_seconds", ctypes.c_double), ("reconnects", ctypes.c_int32)]


class Stats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("monotonic_ns", ctypes.c_int64),
                ("video_frames_in", ctypes.c_int64), ("video_frames_encoded", ctypes.c_int64),
                ("video_frames_sent", ctypes.c_int64), ("audio_frames_sent", ctypes.c_int64),
                ("video_bytes_sent", ctypes.c_int64), ("audio_bytes_sent", ctypes.c_int64),
                ("bytes_sent", ctypes.c_int64), ("drops", ctypes.c_int64 * DROP_REASON_COUNT),
                ("total_drops", ctypes.c_int64), ("queue_bytes", ctypes.c_int64), ("queue_ms", ctypes.c_int64),
                ("target_video_kbps", ctypes.c_int64), ("reconnects", ctypes.c_int64),
                ("late_tags_clamped", ctypes.c_int64), ("rss_bytes", ctypes.c_int64),
                ("peak_rss_bytes", ctypes.c_int64), ("latency_p50_ms", ctypes.c_double),
                ("latency_p99_ms", ctypes.c_double)]


assert ctypes.sizeof(VideoFrame) == 96 and ctypes.sizeof(AudioBuffer) == 40
assert ctypes.sizeof(Event) == 40 and ctypes.sizeof(Stats) == 224

class Range(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("max", ctypes.c_int32), ("default", ctypes.c_int32)]


RANGE_NAMES = ("width", "height", "fps", "video_bitrate_kbps", "keyframe_interval_seconds", "aac_bitrate_kbps",
               "opus_bitrate_kbps", "replay_seconds")


class LimitTable(ctypes.Structure):
    """bk_limit_table: the library's ranges and defaults (broadcastkit.h)."""
    _fields_ = [*((name, Range) for name in RANGE_NAMES),
                ("presets", ctypes.c_char_p), ("default_preset", ctypes.c_char_p),
                ("default_memory_budget_bytes", ctypes.c_int64), ("reconnect_attempts", Range),
                ("reconnect_delay_min_seconds", ctypes.c_double), ("reconnect_delay_max_seconds", ctypes.c_double),
                ("reconnect_delay_default_seconds", ctypes.c_double)]


EVENT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.POINTER(Event), ctypes.c_void_p)

# A handle (bk_config *, bk_session *, a string to free) as ctypes returns a c_void_p: an int, or None
# for NULL. Pointer arguments (byref, callbacks) are typed `object`.
Handle = Optional[int]


class Library(ctypes.CDLL):
    """libbroadcastkit.so as loaded by load(): `path` is the file, and the functions the binding calls
    are declared here with the types ctypes hands back (their C signatures are set by _declare)."""

    path: str
    bk_version: Callable[[], bytes]
    bk_abi_version: Callable[[], int]
    bk_string_free: Callable[[Handle], None]
    bk_process_tuning_apply: Callable[[], None]
    bk_now_ns: Callable[[], int]
    bk_drop_reason_name: Callable[[int], bytes]
    bk_limits: Callable[[], "ctypes._Pointer[LimitTable]"]
    bk_config_new: Callable[[], Handle]
    bk_config_free: Callable[[Handle], None]
    bk_config_last_error: Callable[[Handle], bytes]
    bk_config_set_video: Callable[[Handle, int, int, int, int], int]
    bk_config_set_preset: Callable[[Handle, bytes], int]
    bk_config_set_keyframe_interval: Callable[[Handle, int], int]
    bk_config_set_audio: Callable[[Handle, int, int], int]
    bk_config_add_destination: Callable[[Handle, bytes, bytes], int]
    bk_config_add_file: Callable[[Handle, bytes], int]
    bk_config_clear_destinations: Callable[[Handle], None]
    bk_config_set_memory_budget: Callable[[Handle, int], int]
    bk_config_set_memory_budget_scope: Callable[[Handle, int], int]  # only when hasattr (a newer library)
    bk_config_set_reconnect: Callable[[Handle, int, float], int]
    bk_config_set_adaptive_bitrate: Callable[[Handle, int], int]
    bk_config_set_capture_reserve: Callable[[Handle, int], int]
    bk_config_set_replay: Callable[[Handle, int, Optional[bytes]], int]
    bk_config_set_backpressure: Callable[[Handle, int], int]
    bk_session_new: Callable[[Handle], Handle]
    bk_session_free: Callable[[Handle], None]
    bk_session_last_error: Callable[[Handle], bytes]
    bk_session_set_event_callback: Callable[[Handle, object, Handle], int]
    bk_session_prepare: Callable[[Handle], int]
    bk_session_open_control: Callable[[Handle, bytes], int]
    bk_session_memory_plan: Callable[[Handle], Handle]
    bk_session_start: Callable[[Handle], int]
    bk_session_process_video: Callable[[Handle, object], int]
    bk_session_process_audio: Callable[[Handle, int, object], int]
    bk_session_finish: Callable[[Handle], int]
    bk_session_save_replay: Callable[[Handle, Optional[bytes], float, object], int]
    bk_session_set_video_bitrate: Callable[[Handle, int], int]
    bk_session_request_keyframe: Callable[[Handle], int]
    bk_session_state: Callable[[Handle], int]
    bk_session_status: Callable[[Handle], bytes]
    bk_session_get_stats: Callable[[Handle, object], int]
    bk_session_stats_json: Callable[[Handle], Handle]


def _candidates() -> Iterator[str]:
    """Where the library is looked for, in order; each place is worked out only when the ones before
    it did not load (pkg-config is a process of its own, ~0.1 s on a loaded machine)."""
    # The platform wheel (scripts/wheel) carries the library inside the package.
    bundled = Path(__file__).resolve().parent / "lib" / LIB_NAME
    if bundled.exists() and not os.environ.get("BROADCASTKIT_LIBRARY"):
        yield str(bundled)
    if os.environ.get("BROADCASTKIT_LIBRARY"):
        yield os.environ["BROADCASTKIT_LIBRARY"]
    if os.environ.get("BROADCASTKIT_PREFIX"):
        yield str(Path(os.environ["BROADCASTKIT_PREFIX"]) / "lib" / LIB_NAME)
    if shutil.which("pkg-config"):
        try:
            r = subprocess.run(["pkg-config", "--variable=libdir", "broadcastkit"], capture_output=True,
                               text=True, timeout=10)
            if r.returncode == 0 and r.stdout.strip():
                yield str(Path(r.stdout.strip()) / LIB_NAME)
        except (OSError, subprocess.SubprocessError):
            pass
    # Used from the source tree: bindings/python/broadcastkit -> repository root.
    here = Path(__file__).resolve()
    roots = [here.parents[3]] if len(here.parents) > 3 else []
    for root in (*roots, Path.cwd()):
        yield str(root / ".build" / "release" / LIB_NAME)
    found = ctypes.util.find_library("broadcastkit")
    if found:
        yield found


def _declare(lib: Library) -> None:
    c = ctypes
    P = c.c_void_p
    sigs: Dict[str, Tuple[object, List[object]]] = {
        "bk_version": (c.c_char_p, []), "bk_abi_version": (c.c_int, []),
        "bk_string_free": (None, [P]), "bk_process_tuning_apply": (None, []), "bk_now_ns": (c.c_int64, []),
        "bk_drop_reason_name": (c.c_char_p, [c.c_int]),
        "bk_limits": (c.POINTER(LimitTable), []),
        "bk_config_new": (P, []), "bk_config_free": (None, [P]), "bk_config_last_error": (c.c_char_p, [P]),
        "bk_config_set_video": (c.c_int, [P, c.c_int, c.c_int, c.c_int, c.c_int]),
        "bk_config_set_preset": (c.c_int, [P, c.c_char_p]),
        "bk_config_set_keyframe_interval": (c.c_int, [P, c.c_int]),
        "bk_config_set_audio": (c.c_int, [P, c.c_int, c.c_int]),
        "bk_config_add_destination": (c.c_int, [P, c.c_char_p, c.c_char_p]),
        "bk_config_add_file": (c.c_int, [P, c.c_char_p]),
        "bk_config_clear_destinations": (None, [P]),
        "bk_config_set_memory_budget": (c.c_int, [P, c.c_int64]),
        "bk_config_set_reconnect": (c.c_int, [P, c.c_int, c.c_double]),
        "bk_config_set_adaptive_bitrate": (c.c_int, [P, c.c_int]),
        "bk_config_set_capture_reserve": (c.c_int, [P, c.c_int64]),
        "bk_config_set_replay": (c.c_int, [P, c.c_int, c.c_char_p]),
        "bk_config_set_backpressure": (c.c_int, [P, c.c_int]),
        "bk_session_new": (P, [P]), "bk_session_free": (None, [P]),
        "bk_session_last_error": (c.c_char_p, [P]),
        "bk_session_set_event_callback": (c.c_int, [P, EVENT_CALLBACK, P]),
        "bk_session_prepare": (c.c_int, [P]),
        "bk_session_open_control": (c.c_int, [P, c.c_char_p]),
        # Returned as a raw pointer so it can be handed back to bk_string_free.
        "bk_session_memory_plan": (P, [P]),
        "bk_session_start": (c.c_int, [P]),
        "bk_session_process_video": (c.c_int, [P, c.POINTER(VideoFrame)]),
        "bk_session_process_audio": (c.c_int, [P, c.c_int, c.POINTER(AudioBuffer)]),
        "bk_session_finish": (c.c_int, [P]),
        "bk_session_save_replay": (c.c_int, [P, c.c_char_p, c.c_double, c.POINTER(P)]),
        "bk_session_set_video_bitrate": (c.c_int, [P, c.c_int]),
        "bk_session_request_keyframe": (c.c_int, [P]),
        "bk_session_state": (c.c_int, [P]), "bk_session_status": (c.c_char_p, [P]),
        "bk_session_get_stats": (c.c_int, [P, c.POINTER(Stats)]),
        "bk_session_stats_json": (P, [P]),
    }
    if hasattr(lib, BUDGET_SCOPE_SYMBOL):  # added after ABI 1 was set: bound only where the library has it
        sigs[BUDGET_SCOPE_SYMBOL] = (c.c_int, [P, c.c_int])
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def load() -> Library:
    """The first library found (see _candidates) whose ABI version this binding speaks; OSError
    saying how to provide one when there is none."""
    errors: List[str] = []
    for path in _candidates():
        if os.sep in path and not Path(path).exists():
            continue
        try:
            lib = Library(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        _declare(lib)
        if lib.bk_abi_version() != ABI_VERSION:
            errors.append(f"{path}: ABI version {lib.bk_abi_version()}, this binding needs {ABI_VERSION}")
            continue
        lib.path = path
        return lib
    raise OSError("libbroadcastkit.so not found; install the platform wheel (scripts/wheel builds it), or set "
                  "BROADCASTKIT_LIBRARY=/path/to/libbroadcastkit.so or BROADCASTKIT_PREFIX=<scripts/install prefix>, "
                  "or build the repository (scripts/build)"
                  + ("".join("\n  " + e for e in errors)))


def take_string(lib: Library, ptr: Handle) -> Optional[str]:
    """Copies a string the library handed over and frees it with bk_string_free."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.bk_string_free(ptr)
