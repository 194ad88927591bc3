#!/usr/bin/env python3
"""A scriptable, hostile RTMP ingest for tests (issue 14), in Python over asyncio.

It speaks what a publisher needs: the plain handshake, the chunk stream (both directions, any
chunk size), AMF0 commands (connect, releaseStream, FCPublish, createStream, publish,
FCUnpublish, deleteStream), and records every received audio/video/data message as an FLV file
per session (`DIR/session-N.flv`) that PyAV can decode. The stream key is never printed: the
log names a session by its number and the key's length.

Behaviours (--mode), for the failures nginx-rtmp cannot produce on demand:
  accept                     publish normally (the default)
  refuse-badname             answer publish with NetStream.Publish.BadName (error)
  refuse-rejected            answer publish with NetStream.Publish.Rejected (error)
  stall-handshake            accept TCP, then never answer the handshake
  junk-after-connect         after connect's _result, send random bytes and keep reading
  close-after                close the first session --after S seconds into publishing
  slow-read                  read at most --kbps kbit/s (small receive buffer: real back-pressure)
  reconnect-request          --after S seconds into the first session, send the E-RTMP
                             NetConnection.Connect.ReconnectRequest (with --tc-url if given)
  stale                      close the first session --after S seconds into publishing (a lost
                             link), then answer every publish with "already publishing"
                             (BadName) for --hold T seconds, as a server still holding the old
                             session does; accept afterwards
  chunk-flood-connect        answer connect with Set Chunk Size 1, then open --streams chunk
                             streams, each announcing a --flood-length message and sending 1 byte
                             of it (issue 22: a reader that reserves per stream grows without bound)
  chunk-flood-publish        the same --after S seconds into the first publishing session, and
                             at connect in every later one (so the publisher's reconnects fail)
  ping-flood                 from publish on, send User Control ping requests as fast as the
                             publisher reads them (and keep recording what it sends)
  close-then-slow-publish    close the first session --after S seconds into publishing (a lost
                             link); every later session waits --hold T seconds before answering
                             publish (a test signals the publisher meanwhile)

Prints "listening on 127.0.0.1:PORT" (flushed) when ready. --events PATH writes one JSON object
per line per event (connect, publish, refused, closed, ...) for tests to read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import struct
import sys
import time

HANDSHAKE_SIZE = 1536
OUR_CHUNK_SIZE = 4096


# ---------------------------------------------------------------------------------------------
# AMF0


class AMFError(Exception):
    pass


def amf_decode(data: bytes, pos: int = 0) -> tuple[object, int]:
    """One AMF0 value at `pos`; returns (value, next position)."""
    if pos >= len(data):
        raise AMFError("truncated AMF0")
    marker = data[pos]
    pos += 1
    if marker == 0x00:
        return struct.unpack_from(">d", data, pos)[0], pos + 8
    if marker == 0x01:
        return data[pos] != 0, pos + 1
    if marker == 0x02:
        n = struct.unpack_from(">H", data, pos)[0]
        return data[pos + 2:pos + 2 + n].decode("utf-8", "replace"), pos + 2 + n
    if marker == 0x0C:
        n = struct.unpack_from(">I", data, pos)[0]
        return data[pos + 4:pos + 4 + n].decode("utf-8", "replace"), pos + 4 + n
    if marker in (0x03, 0x08):
        if marker == 0x08:
            pos += 4  # ECMA array count (advisory)
        obj = {}
        while True:
            if pos + 3 > len(data):
                raise AMFError("truncated AMF0 object")
            n = struct.unpack_from(">H", data, pos)[0]
            pos += 2
            if n == 0 and data[pos] == 0x09:
                return obj, pos + 1
            key = data[pos:pos + n].decode("utf-8", "replace")
            pos += n
            obj[key], pos = amf_decode(data, pos)
    if marker in (0x05, 0x06):
        return None, pos
    if marker == 0x0A:
        n = struct.unpack_from(">I", data, pos)[0]
        pos += 4
        out = []
        for _ in range(n):
            v, pos = amf_decode(data, pos)
            out.append(v)
        return out, pos
    raise AMFError(f"unsupported AMF0 marker 0x{marker:02x}")


def amf_decode_all(data: bytes) -> list:
    values, pos = [], 0
    while pos < len(data):
        v, pos = amf_decode(data, pos)
        values.append(v)
    return values


def amf_encode(v) -> bytes:
    if v is None:
        return b"\x05"
    if isinstance(v, bool):
        return b"\x01" + (b"\x01" if v else b"\x00")
    if isinstance(v, (int, float)):
        return b"\x00" + struct.pack(">d", float(v))
    if isinstance(v, str):
        b = v.encode()
        return b"\x02" + struct.pack(">H", len(b)) + b
    if isinstance(v, dict):
        out = b"\x03"
        for k, item in v.items():
            kb = k.encode()
            out += struct.pack(">H", len(kb)) + kb + amf_encode(item)
        return out + b"\x00\x00\x09"
    raise TypeError(f"cannot encode {type(v)}")


# ---------------------------------------------------------------------------------------------
# Chunk stream


class ChunkReader:
    """Reassembles RTMP messages from chunks read off an asyncio stream."""

    def __init__(self, reader: asyncio.StreamReader, on_bytes):
        self.reader = reader
        self.chunk_size = 128
        self.state: dict[int, dict] = {}
        self.on_bytes = on_bytes

    async def read(self, n: int) -> bytes:
        data = await self.reader.readexactly(n)
        await self.on_bytes(n)
        return data

    async def next_message(self) -> tuple[int, int, int, bytes]:
        """(type, stream id, timestamp, payload) of the next complete message."""
        while True:
            b0 = (await self.read(1))[0]
            fmt, csid = b0 >> 6, b0 & 0x3F
            if csid == 0:
                csid = 64 + (await self.read(1))[0]
            elif csid == 1:
                b = await self.read(2)
                csid = 64 + b[0] + b[1] * 256
            st = self.state.setdefault(csid, {"ts": 0, "delta": 0, "len": 0, "type": 0, "sid": 0,
                                              "buf": b"", "ext": False})
            if fmt <= 2:
                h = await self.read(11 if fmt == 0 else 7 if fmt == 1 else 3)
                t = int.from_bytes(h[0:3], "big")
                ext = t == 0xFFFFFF
                if fmt <= 1:
                    st["len"] = int.from_bytes(h[3:6], "big")
                    st["type"] = h[6]
                if fmt == 0:
                    st["sid"] = struct.unpack("<I", h[7:11])[0]
                if ext:
                    t = struct.unpack(">I", await self.read(4))[0]
                st["ext"] = ext
                if not st["buf"]:
                    if fmt == 0:
                        st["ts"] = t
                        st["delta"] = 0
                    else:
                        st["delta"] = t
                        st["ts"] += t
            else:
                if st["ext"]:
                    await self.read(4)
                if not st["buf"] and st["len"]:
                    st["ts"] += st["delta"]
            if st["len"] > 16 << 20:
                raise AMFError("message too large")
            need = min(self.chunk_size, st["len"] - len(st["buf"]))
            st["buf"] += await self.read(need)
            if len(st["buf"]) >= st["len"]:
                payload, st["buf"] = st["buf"], b""
                if st["type"] == 1 and len(payload) >= 4:
                    self.chunk_size = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
                    continue
                return st["type"], st["sid"], st["ts"] & 0xFFFFFFFF, payload


def chunk(csid: int, mtype: int, sid: int, ts: int, payload: bytes) -> bytes:
    """One message as fmt-0 + fmt-3 chunks of OUR_CHUNK_SIZE."""
    out = bytearray()
    ext = ts >= 0xFFFFFF
    header = bytes([csid]) + (0xFFFFFF if ext else ts).to_bytes(3, "big") + len(payload).to_bytes(3, "big") \
        + bytes([mtype]) + struct.pack("<I", sid)
    out += header + (struct.pack(">I", ts) if ext else b"")
    for i in range(0, max(1, len(payload)), OUR_CHUNK_SIZE):
        if i:
            out += bytes([0xC0 | csid]) + (struct.pack(">I", ts) if ext else b"")
        out += payload[i:i + OUR_CHUNK_SIZE]
    return bytes(out)


def chunk_flood(streams: int, length: int) -> bytes:
    """Set Chunk Size 1, then `streams` chunk streams (ids 64..), each a type-0 header announcing
    a `length`-byte message (type 20) followed by its first byte only."""
    out = bytearray(chunk(2, 1, 0, 0, struct.pack(">I", 1)))
    header = (0).to_bytes(3, "big") + length.to_bytes(3, "big") + bytes([20]) + struct.pack("<I", 0)
    for i in range(streams):
        out += bytes([0x01, i & 0xFF, i >> 8]) + header + b"\x02"
    return bytes(out)


def ping_requests(count: int, start: int) -> bytes:
    """`count` User Control ping requests (event 6) on chunk stream 2."""
    return b"".join(chunk(2, 4, 0, 0, struct.pack(">HI", 6, (start + i) & 0xFFFFFFFF)) for i in range(count))


# ---------------------------------------------------------------------------------------------
# FLV output


class FLVWriter:
    def __init__(self, path: str):
        self.f = open(path, "wb")
        self.f.write(b"FLV\x01\x05\x00\x00\x00\x09" + b"\x00\x00\x00\x00")

    def tag(self, mtype: int, ts: int, body: bytes) -> None:
        if mtype == 18:
            # "@setDataFrame" is the RTMP wrapper; an FLV file holds the onMetaData that follows.
            prefix = amf_encode("@setDataFrame")
            if body.startswith(prefix):
                body = body[len(prefix):]
        header = bytes([mtype]) + len(body).to_bytes(3, "big") + (ts & 0xFFFFFF).to_bytes(3, "big") \
            + bytes([(ts >> 24) & 0xFF]) + b"\x00\x00\x00"
        self.f.write(header + body + struct.pack(">I", 11 + len(body)))
        self.f.flush()

    def close(self) -> None:
        self.f.close()


# ---------------------------------------------------------------------------------------------
# The server


class Server:
    def __init__(self, args):
        self.args = args
        self.sessions = 0
        self.t0 = time.monotonic()
        self.stale_until: float | None = None
        self.tasks: dict[int, asyncio.Task] = {}
        self.events = open(args.events, "a") if args.events else None

    def event(self, kind: str, session: int, **extra) -> None:
        obj = {"t": round(time.monotonic() - self.t0, 3), "event": kind, "session": session, **extra}
        if self.events:
            self.events.write(json.dumps(obj) + "\n")
            self.events.flush()
        if not self.args.quiet:
            print(json.dumps(obj), flush=True)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.sessions += 1
        n = self.sessions
        self.event("tcp", n)
        flv = None
        try:
            flv = await self.session(n, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.event("closed", n, by="client")
        except AMFError as e:
            self.event("protocol-error", n, error=str(e))
        except asyncio.CancelledError:
            raise
        finally:
            task = self.tasks.pop(n, None)
            if task:
                task.cancel()
            if flv:
                flv.close()
            try:
                writer.close()
            except Exception:
                pass

    async def ping_flood(self, n: int, writer: asyncio.StreamWriter) -> None:
        self.event("ping-flood", n)
        block = ping_requests(4096, 0)  # 72 KB, written as fast as the publisher reads
        try:
            while True:
                writer.write(block)
                await writer.drain()
        except ConnectionError:
            pass

    async def session(self, n: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        a = self.args
        first = n == 1
        if a.mode == "stall-handshake":
            await reader.read()  # read until the client gives up; never answer
            self.event("closed", n, by="client")
            return None
        c0c1 = await reader.readexactly(1 + HANDSHAKE_SIZE)
        s1 = struct.pack(">II", 0, 0) + os.urandom(HANDSHAKE_SIZE - 8)
        writer.write(b"\x03" + s1 + c0c1[1:])
        await writer.drain()
        await reader.readexactly(HANDSHAKE_SIZE)
        self.event("handshake", n)

        slow = a.mode == "slow-read"
        bucket = {"t": time.monotonic(), "allow": 0.0}

        async def on_bytes(count: int) -> None:
            if not slow:
                return
            # Token bucket at --kbps: sleeping here stops reading, and the small receive buffer
            # passes the back-pressure on to the publisher.
            rate = a.kbps * 1000 / 8
            now = time.monotonic()
            bucket["allow"] = min(rate * 0.2, bucket["allow"] + (now - bucket["t"]) * rate) - count
            bucket["t"] = now
            if bucket["allow"] < 0:
                await asyncio.sleep(-bucket["allow"] / rate)

        cr = ChunkReader(reader, on_bytes)

        def send(csid: int, mtype: int, sid: int, payload: bytes) -> None:
            writer.write(chunk(csid, mtype, sid, 0, payload))

        def command(sid: int, *values) -> None:
            send(3, 20, sid, b"".join(amf_encode(v) for v in values))

        send(2, 1, 0, struct.pack(">I", OUR_CHUNK_SIZE))
        flv = None
        publishing_since: float | None = None
        scripted_done = False
        while True:
            timeout = None
            scripted = first
            if publishing_since is not None and not scripted_done and scripted and a.after is not None:
                timeout = max(0.0, publishing_since + a.after - time.monotonic())
            try:
                mtype, sid, ts, payload = await asyncio.wait_for(cr.next_message(), timeout)
            except asyncio.TimeoutError:
                scripted_done = True
                if a.mode == "chunk-flood-publish":
                    writer.write(chunk_flood(a.streams, a.flood_length))
                    await writer.drain()
                    self.event("flood", n, streams=a.streams)
                    continue
                if a.mode in ("close-after", "stale", "close-then-slow-publish"):
                    self.event("server-close", n)
                    if a.mode == "stale":
                        self.stale_until = time.monotonic() + a.hold
                    # An abortive close: the publisher's next write fails at once.
                    sock = writer.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return flv
                if a.mode == "reconnect-request":
                    info = {"level": "status", "code": "NetConnection.Connect.ReconnectRequest",
                            "description": "the server asks the publisher to reconnect"}
                    if a.tc_url:
                        info["tcUrl"] = a.tc_url
                    command(0, "onStatus", 0, None, info)
                    await writer.drain()
                    self.event("reconnect-request", n, tc_url=bool(a.tc_url))
                continue
            if mtype in (8, 9, 18):
                if flv:
                    flv.tag(mtype, ts, payload)
                continue
            if mtype in (5, 6, 3, 4):
                continue
            if mtype != 20:
                continue
            values = amf_decode_all(payload)
            if not values or not isinstance(values[0], str):
                continue
            name, txn = values[0], values[1] if len(values) > 1 else 0
            if name == "connect":
                props = values[2] if len(values) > 2 and isinstance(values[2], dict) else {}
                self.event("connect", n, app=props.get("app"),
                           caps_ex=props.get("capsEx"), fourcc=props.get("fourCcList"))
                if a.mode == "chunk-flood-connect" or (a.mode == "chunk-flood-publish" and not first):
                    writer.write(chunk_flood(a.streams, a.flood_length))
                    await writer.drain()
                    self.event("flood", n, streams=a.streams)
                    continue
                send(2, 5, 0, struct.pack(">I", 2500000))
                send(2, 6, 0, struct.pack(">IB", 2500000, 2))
                command(0, "_result", txn, {"fmsVer": "FMS/3,0,1,123", "capabilities": 31.0},
                        {"level": "status", "code": "NetConnection.Connect.Success",
                         "description": "Connection succeeded.", "objectEncoding": 0.0})
                await writer.drain()
                if a.mode == "junk-after-connect":
                    writer.write(os.urandom(4096))
                    await writer.drain()
                    self.event("junk", n)
            elif name == "createStream":
                command(0, "_result", txn, None, 1.0)
                await writer.drain()
            elif name == "publish":
                key = values[3] if len(values) > 3 and isinstance(values[3], str) else ""
                refusal = None
                if a.mode == "refuse-badname":
                    refusal = "NetStream.Publish.BadName"
                elif a.mode == "refuse-rejected":
                    refusal = "NetStream.Publish.Rejected"
                elif self.stale_until is not None and time.monotonic() < self.stale_until:
                    refusal = "NetStream.Publish.BadName"
                if a.mode == "close-then-slow-publish" and not first:
                    self.event("publish-held", n, hold=a.hold)
                    await asyncio.sleep(a.hold)
                if refusal:
                    command(sid, "onStatus", 0, None, {"level": "error", "code": refusal,
                                                       "description": "already publishing"
                                                       if refusal.endswith("BadName") else "publish rejected"})
                    await writer.drain()
                    self.event("refused", n, code=refusal, key_length=len(key))
                    continue
                command(sid, "onStatus", 0, None, {"level": "status", "code": "NetStream.Publish.Start",
                                                   "description": "Start publishing"})
                await writer.drain()
                path = os.path.join(a.dir, f"session-{n}.flv")
                flv = FLVWriter(path)
                publishing_since = time.monotonic()
                self.event("publish", n, key_length=len(key), file=os.path.basename(path))
                if a.mode == "ping-flood" and n not in self.tasks:
                    self.tasks[n] = asyncio.get_running_loop().create_task(self.ping_flood(n, writer))
            elif name in ("FCUnpublish", "deleteStream"):
                self.event(name, n)


async def main_async(args) -> None:
    os.makedirs(args.dir, exist_ok=True)
    server = Server(args)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.mode == "slow-read":
        # Inherited by accepted sockets: the kernel buffers little, so slow reading is felt at once.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 10)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(16)
    srv = await asyncio.start_server(server.handle, sock=sock,
                                     limit=64 << 10 if args.mode == "slow-read" else 1 << 20)
    print(f"listening on 127.0.0.1:{sock.getsockname()[1]}", flush=True)
    async with srv:
        await srv.serve_forever()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--dir", default=".", help="where session-N.flv recordings go")
    p.add_argument("--mode", default="accept",
                   choices=["accept", "refuse-badname", "refuse-rejected", "stall-handshake", "junk-after-connect",
                            "close-after", "slow-read", "reconnect-request", "stale", "chunk-flood-connect",
                            "chunk-flood-publish", "ping-flood", "close-then-slow-publish"])
    p.add_argument("--after", type=float, help="seconds into the first session (close-after, stale, reconnect-request)")
    p.add_argument("--hold", type=float, default=5.0, help="stale: seconds of 'already publishing' after the close")
    p.add_argument("--streams", type=int, default=65000, help="chunk-flood-*: chunk streams opened")
    p.add_argument("--flood-length", type=int, default=1 << 20, help="chunk-flood-*: bytes each flooded message announces")
    p.add_argument("--kbps", type=float, default=500.0, help="slow-read: kbit/s read")
    p.add_argument("--tc-url", help="reconnect-request: the tcUrl to move to")
    p.add_argument("--events", help="append one JSON line per event here")
    p.add_argument("--quiet", action="store_true", help="no event lines on stdout")
    a = p.parse_args(argv)
    if a.mode in ("close-after", "stale", "reconnect-request", "chunk-flood-publish",
                  "close-then-slow-publish") and a.after is None:
        p.error(f"--mode {a.mode} needs --after SECONDS")
    return a


def main(argv=None) -> int:
    try:
        asyncio.run(main_async(parse_args(argv)))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
