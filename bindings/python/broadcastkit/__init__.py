"""broadcastkit: live x264 + AAC/Opus over RTMP, SRT or WHIP (and/or into a file) inside a memory budget.

A ctypes binding over libbroadcastkit.so (the C ABI of BroadcastKit, broadcastkit.h). Session is the
stream (a context manager); AsyncSession is the same for asyncio programs. The package is typed: the
options, results, events and stats are Literals and TypedDicts (broadcastkit._types), frames are numpy
arrays."""

from ._types import (AudioCodec, AudioInput, AudioLane, Backpressure, BudgetScope, DestinationKind,
                     DestinationState, DestinationStats, DropCounts, DropReason, EventType, LimitRange, Limits,
                     LinkStats, MemorySize, PixelFormat, Plane, Preset, SendResult, SessionOptions, SessionState,
                     SessionStats, SessionStatus, StreamStatus, VideoInput)
from .aio import AsyncSession
from .session import (BroadcastError, ConfigurationError, ConnectError, Event, FrameError, InvalidValueError,
                      MemoryBudgetError, Session, StateError, StreamingError, apply_process_tuning, library, limits,
                      now_ns, version)

__all__ = ["Session", "AsyncSession", "Event", "BroadcastError", "ConfigurationError", "InvalidValueError",
           "MemoryBudgetError", "ConnectError", "StreamingError", "StateError", "FrameError", "apply_process_tuning",
           "library", "limits", "now_ns", "version",
           # types
           "AudioCodec", "AudioInput", "AudioLane", "Backpressure", "BudgetScope", "DestinationKind",
           "DestinationState", "DestinationStats", "DropCounts", "DropReason", "EventType", "LimitRange", "Limits",
           "LinkStats", "MemorySize", "PixelFormat", "Plane", "Preset", "SendResult", "SessionOptions",
           "SessionState", "SessionStats", "SessionStatus", "StreamStatus", "VideoInput"]
__version__ = "0.2.0"
