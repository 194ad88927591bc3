"""AsyncSession: a Session for asyncio hosts, whose blocking calls run off the event loop."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Callable, Dict, Optional, Type, TypeVar, Union

from .session import Event, Session, now_ns
from ._types import (AudioInput, AudioLane, PixelFormat, SendResult, SessionState, SessionStats, SessionStatus,
                     StrPath, VideoInput)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._types import SessionOptions

T = TypeVar("T")


class AsyncSession:
    """A live broadcast for asyncio programs: the options of Session, with the calls that can block
    awaited instead, so the event loop keeps running while the library connects, waits for room or
    flushes.

        async with broadcastkit.AsyncSession(url, key, width=1280, height=720, backpressure="block") as s:
            await s.send_video(frame, pts_ns=pts)
            await s.send_audio(samples, pts_ns=pts)
            print(s.stats()["video_frames_sent"])

    start(), finish(), close(), memory_plan() and save_replay() run on threads of their own (one
    for the lifecycle calls, one for replays), so they never stall the loop. With
    backpressure="block", send_video() and send_audio() wait for room on one thread per lane: calls
    for a lane run in the order they were made (the library wants each lane's timestamps in order)
    even when they are not awaited one by one, and the array must not change until the call's
    await returns. With backpressure="drop" they never block (a full lane is a counted drop) and
    run on the loop's thread, as a plain call would. A pts_ns left as None is taken when the call is
    made, not when its thread gets to it. stats(), state, status, set_video_bitrate() and
    request_keyframe() return at once and are plain methods. on_event is called on the event loop's
    thread (from start() on; before that, on the library's thread), so it may touch asyncio objects,
    e.g. set an asyncio.Event, or start a task that awaits finish() on "stop-requested".
    """

    def __init__(self, url: Optional[str] = None, key: Union[str, bytes, None] = None,
                 **options: Unpack[SessionOptions]) -> None:
        try:
            self._loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._on_event = options.get("on_event")
        options["on_event"] = self._deliver if self._on_event else None  # options: this call's own dict
        self._block = options.get("backpressure", "drop") == "block"
        self._session = Session(url, key, **options)
        self._lifecycle = ThreadPoolExecutor(1, thread_name_prefix="broadcastkit-lifecycle")
        self._threads: Dict[str, ThreadPoolExecutor] = {}
        self._closed = False

    def _deliver(self, event: Event) -> None:
        # On a library thread: hand the event to the loop, or call it here when there is none.
        handler, loop = self._on_event, self._loop
        if handler is None:
            return
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(handler, event)
                return
            except RuntimeError:  # the loop closed meanwhile
                pass
        handler(event)

    def _thread(self, name: str) -> ThreadPoolExecutor:
        ex = self._threads.get(name)
        if ex is None:
            ex = self._threads[name] = ThreadPoolExecutor(1, thread_name_prefix=f"broadcastkit-{name}")
        return ex

    async def _run(self, executor: ThreadPoolExecutor, call: Callable[[], T]) -> T:
        self._loop = asyncio.get_running_loop()
        if self._closed:
            return call()  # a freed session answers at once (StateError, or nothing to do)
        return await self._loop.run_in_executor(executor, call)

    @property
    def session(self) -> Session:
        """The underlying Session (its blocking calls are the ones this class awaits)."""
        return self._session

    async def start(self) -> AsyncSession:
        """Session.start() off the loop: prepares, checks the memory plan, connects every destination;
        returns self. Raises what Session.start() raises."""
        await self._run(self._lifecycle, self._session.start)
        return self

    async def finish(self) -> None:
        """Session.finish() off the loop: encodes what is pending, sends what is queued, closes every
        destination. Raises StreamingError if the stream had failed."""
        await self._run(self._lifecycle, self._session.finish)

    async def close(self) -> None:
        """Finishes (if running), waits for the send and replay calls still in flight, and frees the
        session (Session.close()), off the loop. Idempotent."""
        def close() -> None:
            if self._session.state == "running":
                try:
                    self._session.finish()  # in-flight sends now return at once
                except Exception:
                    pass                    # close() reports nothing; finish() is where errors show
            for ex in list(self._threads.values()):
                ex.shutdown(wait=True)      # nothing may run on the session once it is freed
            self._session.close()

        if self._closed:
            return
        await self._run(self._lifecycle, close)
        self._closed = True
        self._lifecycle.shutdown(wait=False)

    async def memory_plan(self) -> str:
        """Session.memory_plan() off the loop (it opens the encoders on first use)."""
        return await self._run(self._lifecycle, self._session.memory_plan)

    async def save_replay(self, path: Optional[StrPath] = None, seconds: Optional[float] = None) -> str:
        """Session.save_replay() off the loop: the clip's path once it is written."""
        return await self._run(self._thread("replay"), lambda: self._session.save_replay(path, seconds))

    async def send_video(self, frame: VideoInput, pts_ns: Optional[int] = None,
                         format: PixelFormat = "BGRx") -> SendResult:
        """Session.send_video(): "accepted" or the drop reason. With backpressure="block" it waits
        for room on the video lane's thread, the loop running meanwhile."""
        pts = now_ns() if pts_ns is None else pts_ns
        if not self._block:
            return self._session.send_video(frame, pts, format)
        return await self._run(self._thread("video"), lambda: self._session.send_video(frame, pts, format))

    async def send_audio(self, samples: AudioInput, pts_ns: Optional[int] = None, lane: AudioLane = "app",
                         sample_rate: int = 48000) -> SendResult:
        """Session.send_audio(): "accepted" or the drop reason. With backpressure="block" it waits
        for room on the lane's own thread, the loop running meanwhile."""
        pts = now_ns() if pts_ns is None else pts_ns
        if not self._block:
            return self._session.send_audio(samples, pts, lane, sample_rate)
        return await self._run(self._thread(f"{lane}-audio"),
                               lambda: self._session.send_audio(samples, pts, lane, sample_rate))

    def set_video_bitrate(self, kbps: int) -> None:
        """Session.set_video_bitrate(): returns at once."""
        self._session.set_video_bitrate(kbps)

    def request_keyframe(self) -> None:
        """Session.request_keyframe(): returns at once."""
        self._session.request_keyframe()

    def stats(self) -> SessionStats:
        """Session.stats(): returns at once."""
        return self._session.stats()

    @property
    def state(self) -> SessionState:
        """Session.state."""
        return self._session.state

    @property
    def status(self) -> SessionStatus:
        """Session.status."""
        return self._session.status

    async def __aenter__(self) -> AsyncSession:
        """Starts the session (see start) and returns it."""
        return await self.start()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        """Finishes (raising StreamingError if the stream had failed) unless the block raised, then
        closes."""
        try:
            if exc_type is None:
                await self.finish()
        finally:
            await self.close()

    def __repr__(self) -> str:
        return repr(self._session).replace("<broadcastkit.Session", "<broadcastkit.AsyncSession", 1)
