"""broadcastkit: live x264 + AAC/Opus over RTMP, SRT or WHIP (and/or into a file) inside a memory budget.

A ctypes binding over libbroadcastkit.so (the C ABI of BroadcastKit, broadcastkit.h). Session is the
stream (a context manager); AsyncSession is the same for asyncio programs. The package is typed: the
options, results, events and stats are Literals and TypedDicts (broadcastkit._types), frames are numpy
arrays."""

from typing import TYPE_CHECKING

from .session import (BroadcastError, ConfigurationError, ConnectError, Event, FrameError, InvalidValueError,
                      MemoryBudgetError, Session, StateError, StreamingError, apply_process_tuning, library, limits,
                      now_ns, version)

__all__ = ["Session", "AsyncSession", "Event", "BroadcastError", "ConfigurationError", "InvalidValueError",
           "MemoryBudgetError", "ConnectError", "StreamingError", "StateError", "FrameError", "apply_process_tuning",
           "library", "limits", "now_ns", "version",
           # the types (_types.py)
           "AudioCodec", "AudioInput", "AudioLane", "Backpressure", "BudgetScope", "DestinationKind",
           "DestinationState", "DestinationStats", "DropCounts", "DropReason", "EventType", "LimitRange", "Limits",
           "LinkStats", "MemorySize", "PixelFormat", "Plane", "Preset", "SendResult", "SessionOptions",
           "SessionState", "SessionStats", "SessionStatus", "StreamStatus", "VideoInput"]
__version__ = "0.2.0"

if TYPE_CHECKING:
    from ._types import (AudioCodec, AudioInput, AudioLane, Backpressure, BudgetScope, DestinationKind,
                         DestinationState, DestinationStats, DropCounts, DropReason, EventType, LimitRange, Limits,
                         LinkStats, MemorySize, PixelFormat, Plane, Preset, SendResult, SessionOptions, SessionState,
                         SessionStats, SessionStatus, StreamStatus, VideoInput)
    from .aio import AsyncSession
else:
    def __getattr__(name: str) -> object:
        # AsyncSession and the types are imported on first use: asyncio loads ssl (~7 MB of RSS) and the
        # typing objects take ~0.5 MB, which a process-wide memory budget would count against every
        # Session of a program that never uses them.
        if name == "AsyncSession":
            from .aio import AsyncSession
            return AsyncSession
        if name in __all__:
            from . import _types
            return getattr(_types, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
