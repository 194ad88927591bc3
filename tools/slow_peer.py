#!/usr/bin/env python3
"""Scripted hostile and slow peers for the deadline tests (issue 37), over asyncio.

    python slow_peer.py MODE [--port P] [--interval S] [--upstream PORT] [--record PATH] ...

Prints {"port": P} (one JSON line, flushed) once listening on 127.0.0.1, then serves until killed.
Every connection is logged to --log (one JSON line per event) when given.

Modes:
  rtmp-s1-trickle   read C0+C1, send S0, then S1 one byte every --interval s (never S2)
  tls-trickle       read the ClientHello, send a TLS record header (handshake, 16 KB), then one
                    byte of it every --interval s
  http-trickle      read a request, then send "HTTP/1.1 201 Created..." one byte every --interval s
  http-front        an HTTP/1.1 front for a WHIP endpoint at --upstream (whip_endpoint.py): each
                    request is forwarded as is, and the answer re-framed as asked:
                      --redirect 307|308   the first POST is answered with that status and a
                                           Location (--location, default /whip/moved); a request
                                           to the moved path goes to the upstream's /whip/live
                      --chunked            the body is sent with Transfer-Encoding: chunked, in
                                           chunks of 7..97 bytes
                      --strip-h264         the answer's H.264 payload types are removed from its
                                           m=video line (the endpoint then accepts no H.264)
                      --delete trickle     a DELETE's answer is sent one byte every --interval s
                      --delete silent      a DELETE is read and never answered
  tls-front         a TLS terminator (Python's ssl, i.e. OpenSSL: --cert/--key) in front of
                    --upstream: bytes both ways, unchanged
  tee               a plain TCP relay to --upstream that appends every byte the client sends to
                    --record (the test counts the key in it)
  udp-silent        a UDP socket that reads every datagram and never answers: a black-holed SRT
                    listener, or (on port 53 in a private network namespace) a DNS server that
                    never answers
  whip-dtls-silent  a WHIP endpoint whose ICE works and whose DTLS never answers: the POST gets a
                    201 with an SDP answer (Opus and H.264, --setup passive|active, a candidate on
                    its UDP socket), STUN binding requests get signed success responses, DTLS
                    datagrams are read and dropped; a DELETE gets 200

The stream key and the bearer token are never printed or logged.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import random
import re
import ssl
import struct
import sys
import time


def log(a, **event) -> None:
    if a.log:
        with open(a.log, "a") as f:
            f.write(json.dumps({"t": round(time.monotonic(), 3), **event}) + "\n")


async def trickle(writer: asyncio.StreamWriter, data: bytes, interval: float) -> None:
    for i in range(len(data)):
        writer.write(data[i:i + 1])
        await writer.drain()
        await asyncio.sleep(interval)


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One HTTP/1.1 request: (head, body), the body by Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    body = await reader.readexactly(int(m.group(1))) if m else b""
    return head, body


async def rtmp_s1_trickle(a, reader, writer):
    await reader.readexactly(1 + 1536)
    log(a, event="c0c1")
    writer.write(b"\x03")
    await trickle(writer, bytes(1536), a.interval)


async def tls_trickle(a, reader, writer):
    await reader.read(4096)  # the ClientHello
    log(a, event="client-hello")
    # A handshake record header announcing 16 KB, then its bytes one at a time.
    writer.write(b"\x16\x03\x03\x40\x00")
    await trickle(writer, bytes(0x4000), a.interval)


async def http_trickle(a, reader, writer):
    head, _ = await read_request(reader)
    log(a, event="request", method=head.split(b" ", 1)[0].decode())
    answer = b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nContent-Length: 60000\r\n\r\n" + bytes(60000)
    await trickle(writer, answer, a.interval)


class Front:
    """http-front: forwards to the upstream WHIP endpoint, re-framing its answers."""

    def __init__(self, a):
        self.a = a
        self.redirected = False

    async def upstream(self, head: bytes, body: bytes) -> tuple[bytes, bytes]:
        r, w = await asyncio.open_connection("127.0.0.1", self.a.upstream)
        w.write(head + body)
        await w.drain()
        rhead = await r.readuntil(b"\r\n\r\n")
        m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", rhead)
        rbody = await r.readexactly(int(m.group(1))) if m else await r.read()
        w.close()
        return rhead, rbody

    async def serve(self, reader, writer):
        a = self.a
        head, body = await read_request(reader)
        method, target = head.split(b" ", 2)[:2]
        log(a, event="request", method=method.decode(), target=target.decode())
        if method == b"POST" and a.redirect and not self.redirected:
            self.redirected = True
            writer.write(f"HTTP/1.1 {a.redirect} Moved\r\nLocation: {a.location}\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n".encode())
            await writer.drain()
            return
        if method == b"DELETE" and a.delete == "silent":
            await asyncio.sleep(3600)
            return
        if method == b"POST" and target != b"/whip/live":
            head = head.replace(target, b"/whip/live", 1)
        rhead, rbody = await self.upstream(head, body)
        if a.strip_h264:
            rbody = strip_h264(rbody)
            rhead = re.sub(rb"(?i)content-length:\s*\d+", b"Content-Length: %d" % len(rbody), rhead)
        if a.chunked:
            rhead = re.sub(rb"(?i)content-length:\s*\d+\r\n", b"Transfer-Encoding: chunked\r\n", rhead)
            out = bytearray()
            i = 0
            while i < len(rbody):
                n = random.randint(7, 97)
                piece = rbody[i:i + n]
                out += b"%x;ext=1\r\n" % len(piece) + piece + b"\r\n"
                i += n
            out += b"0\r\nX-Trailer: yes\r\n\r\n"
            rbody = bytes(out)
        data = rhead + rbody
        if method == b"DELETE" and a.delete == "trickle":
            await trickle(writer, data, a.interval)
            return
        writer.write(data)
        await writer.drain()


def strip_h264(sdp: bytes) -> bytes:
    text = sdp.decode()
    h264 = set(re.findall(r"a=rtpmap:(\d+) H264/", text))
    lines = []
    for line in text.split("\r\n"):
        if line.startswith("m=video"):
            parts = line.split(" ")
            line = " ".join(parts[:3] + [p for p in parts[3:] if p not in h264] or ["0"])
        elif any(line.startswith(f"a={k}:{pt} ") or line == f"a={k}:{pt}" for pt in h264 for k in ("rtpmap", "fmtp", "rtcp-fb")):
            continue
        lines.append(line)
    return "\r\n".join(lines).encode()


async def pipe(reader, writer, record=None):
    try:
        while data := await reader.read(65536):
            if record is not None:
                record.write(data)
                record.flush()
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def relay(a, reader, writer, record_path=None):
    log(a, event="connection")
    ur, uw = await asyncio.open_connection("127.0.0.1", a.upstream)
    record = open(record_path, "ab") if record_path else None
    try:
        await asyncio.gather(pipe(reader, uw, record), pipe(ur, writer))
    finally:
        if record:
            record.close()


class SilentUDP(asyncio.DatagramProtocol):
    """udp-silent: reads every datagram, answers none."""

    def __init__(self, a):
        self.a = a
        self.seen = 0

    def datagram_received(self, data, addr):
        self.seen += 1
        if self.seen <= 3 or self.seen % 50 == 0:
            log(self.a, event="datagram", n=self.seen, size=len(data))


STUN_COOKIE = 0x2112A442


class DTLSSilentUDP(asyncio.DatagramProtocol):
    """whip-dtls-silent's UDP side: STUN answered (RFC 5389, MESSAGE-INTEGRITY keyed with our
    ice-pwd), DTLS (first byte 20..63, RFC 7983) dropped."""

    def __init__(self, a, pwd: str):
        self.a = a
        self.pwd = pwd.encode()
        self.transport = None
        self.dtls = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        if len(data) >= 20 and data[0] < 2 and struct.unpack("!I", data[4:8])[0] == STUN_COOKIE:
            if struct.unpack("!H", data[0:2])[0] != 0x0001:
                return
            tx = data[8:20]
            ip = bytes(int(x) for x in addr[0].split("."))
            xport = addr[1] ^ (STUN_COOKIE >> 16)
            xip = bytes(b ^ c for b, c in zip(ip, struct.pack("!I", STUN_COOKIE)))
            attrs = struct.pack("!HHBBH", 0x0020, 8, 0, 1, xport) + xip
            # MESSAGE-INTEGRITY over the header (its length counting up to MI's end) and attrs.
            head = struct.pack("!HHI", 0x0101, len(attrs) + 24, STUN_COOKIE) + tx
            mac = hmac.new(self.pwd, head + attrs, hashlib.sha1).digest()
            attrs += struct.pack("!HH", 0x0008, 20) + mac
            self.transport.sendto(struct.pack("!HHI", 0x0101, len(attrs), STUN_COOKIE) + tx + attrs, addr)
        elif data and 20 <= data[0] <= 63:
            self.dtls += 1
            if self.dtls <= 3 or self.dtls % 10 == 0:
                log(self.a, event="dtls-dropped", n=self.dtls)


async def whip_dtls_silent(a, reader, writer, udp_port: int, pwd: str):
    head, _ = await read_request(reader)
    method = head.split(b" ", 1)[0].decode()
    log(a, event="request", method=method)
    if method == "DELETE":
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        return
    fp = ":".join(f"{random.randrange(256):02X}" for _ in range(32))
    media = (f"c=IN IP4 127.0.0.1\r\na=ice-ufrag:slowpeer\r\na=ice-pwd:{pwd}\r\n"
             f"a=fingerprint:sha-256 {fp}\r\na=setup:{a.setup}\r\na=rtcp-mux\r\n"
             f"a=candidate:1 1 udp 2130706431 127.0.0.1 {udp_port} typ host\r\n")
    sdp = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=ice-lite\r\n"
           "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n" + media + "a=mid:0\r\na=rtpmap:111 opus/48000/2\r\n"
           "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n" + media + "a=mid:1\r\na=rtpmap:96 H264/90000\r\n").encode()
    writer.write(b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /whip/resource/1\r\n"
                 + f"Content-Length: {len(sdp)}\r\n\r\n".encode() + sdp)
    await writer.drain()


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["rtmp-s1-trickle", "tls-trickle", "http-trickle", "http-front", "tls-front", "tee",
                                      "udp-silent", "whip-dtls-silent"])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between trickled bytes")
    p.add_argument("--upstream", type=int, help="http-front, tls-front, tee: the port behind")
    p.add_argument("--redirect", type=int, choices=[307, 308])
    p.add_argument("--location", default="/whip/moved")
    p.add_argument("--chunked", action="store_true")
    p.add_argument("--strip-h264", action="store_true")
    p.add_argument("--delete", choices=["trickle", "silent"])
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--record", help="tee: append what the client sends here")
    p.add_argument("--setup", choices=["passive", "active"], default="passive",
                   help="whip-dtls-silent: the answer's a=setup (passive: we wait for the ClientHello)")
    p.add_argument("--log", help="append one JSON line per event here")
    a = p.parse_args()

    loop = asyncio.get_running_loop()
    if a.mode == "udp-silent":
        transport, _ = await loop.create_datagram_endpoint(lambda: SilentUDP(a), local_addr=("127.0.0.1", a.port))
        print(json.dumps({"port": transport.get_extra_info("sockname")[1]}), flush=True)
        await asyncio.Event().wait()
    pwd = "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24))
    udp_port = 0
    if a.mode == "whip-dtls-silent":
        transport, _ = await loop.create_datagram_endpoint(lambda: DTLSSilentUDP(a, pwd), local_addr=("127.0.0.1", 0))
        udp_port = transport.get_extra_info("sockname")[1]

    front = Front(a)
    ctx = None
    if a.mode == "tls-front":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)

    async def handle(reader, writer):
        try:
            if a.mode == "rtmp-s1-trickle":
                await rtmp_s1_trickle(a, reader, writer)
            elif a.mode == "tls-trickle":
                await tls_trickle(a, reader, writer)
            elif a.mode == "http-trickle":
                await http_trickle(a, reader, writer)
            elif a.mode == "http-front":
                await front.serve(reader, writer)
            elif a.mode == "tls-front":
                await relay(a, reader, writer)
            elif a.mode == "tee":
                await relay(a, reader, writer, a.record)
            elif a.mode == "whip-dtls-silent":
                await whip_dtls_silent(a, reader, writer, udp_port, pwd)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ssl.SSLError):
            log(a, event="peer-gone")
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", a.port, ssl=ctx)
    port = server.sockets[0].getsockname()[1]
    print(json.dumps({"port": port}), flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
