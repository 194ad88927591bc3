"""broadcastkit: live x264 + AAC/Opus over RTMP (and/or to an FLV file) inside a hard memory budget.

A ctypes binding over libbroadcastkit.so (the C ABI of BroadcastKit, broadcastkit.h)."""

from .session import (BroadcastError, ConfigurationError, ConnectError, Event, FrameError, InvalidValueError,
                      MemoryBudgetError, Session, StateError, StreamingError, apply_process_tuning, library, limits,
                      now_ns, version)

__all__ = ["Session", "Event", "BroadcastError", "ConfigurationError", "InvalidValueError", "MemoryBudgetError",
           "ConnectError", "StreamingError", "StateError", "FrameError", "apply_process_tuning", "library", "limits",
           "now_ns", "version"]
__version__ = "0.2.0"
