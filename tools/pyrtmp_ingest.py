#!/usr/bin/env python3
"""pyrtmp (a pure-Python RTMP server, PyPI `pyrtmp`, pinned in requirements.txt) as a second
independent ingest beside nginx-rtmp, for issue 37's liberal chunk header: its reply to `connect`
is the first message on chunk stream 3 but carries a type-1 (compressed) header.

    python pyrtmp_ingest.py --out PATH.flv [--port P]

Prints {"port": P} (one JSON line, flushed) once listening on 127.0.0.1; writes every audio and
video message of the first publish to PATH.flv (pyrtmp's own FLV writer), flushed per tag, and
serves until killed. The stream key (the publishing name) is never printed or logged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging

from pyrtmp.flv import FLVMediaType, FLVWriter
from pyrtmp.rtmp import RTMPProtocol, SimpleRTMPController


class RecordingController(SimpleRTMPController):
    def __init__(self, out: str):
        super().__init__()
        self.out = out

    async def on_ns_publish(self, session, message) -> None:
        writer = FLVWriter()
        session.state = (open(self.out, "wb"), writer)
        session.state[0].write(writer.write_header())
        await super().on_ns_publish(session, message)

    def _tag(self, session, message, kind) -> None:
        state = getattr(session, "state", None)
        if state:
            f, writer = state
            f.write(writer.write(message.timestamp, message.payload, kind))
            f.flush()

    async def on_video_message(self, session, message) -> None:
        self._tag(session, message, FLVMediaType.VIDEO)

    async def on_audio_message(self, session, message) -> None:
        self._tag(session, message, FLVMediaType.AUDIO)

    async def cleanup(self, session) -> None:
        state = getattr(session, "state", None)
        if state:
            state[0].close()
            session.state = None


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: RTMPProtocol(controller=RecordingController(a.out)), "127.0.0.1", a.port)
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)  # pyrtmp logs message contents (the publish command holds the key)
    asyncio.run(main())
