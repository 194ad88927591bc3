#!/usr/bin/env python3
"""A throttling TCP proxy for soak tests.

Listens on 127.0.0.1:LPORT and forwards every connection to TARGET_HOST:TPORT. During the
schedule window [--throttle-from, --throttle-from + --throttle-for) seconds after start, the
client->server direction is limited to --throttle-kbps kbit/s by a token bucket. Socket
receive buffers are kept small and reads are small, so once the proxy stops reading the
back-pressure reaches the sender's own socket within a few tens of kilobytes: the sender
sees a slow link, not a fast link into a big proxy buffer.

Prints "listening on 127.0.0.1:PORT" (flushed) once ready, and one line whenever throttling
starts or stops. With --status-json it keeps a small JSON status file up to date.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time


class Schedule:
    """When the throttle is active, in seconds since the proxy started."""

    def __init__(self, kbps: float, start_s: float, duration_s: float | None, t0: float):
        self.kbps = kbps
        self.start_s = start_s
        self.duration_s = duration_s
        self.t0 = t0

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def active(self, now: float | None = None) -> bool:
        if self.kbps <= 0:
            return False
        t = (now if now is not None else time.monotonic()) - self.t0
        if t < self.start_s:
            return False
        return self.duration_s is None or t < self.start_s + self.duration_s


class TokenBucket:
    """Shared client->server budget: all connections together get K kbit/s while active."""

    def __init__(self, schedule: Schedule, burst_bytes: int):
        self.schedule = schedule
        self.rate = schedule.kbps * 1000.0 / 8.0  # bytes per second
        self.burst = max(float(burst_bytes), self.rate * 0.02)
        self.tokens = 0.0
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def take(self, n: int) -> None:
        """Block until n bytes may pass (returns at once when not throttling)."""
        while True:
            with self.lock:
                now = time.monotonic()
                if not self.schedule.active(now):
                    # Start every throttle window with an empty bucket: no burst at its edge.
                    self.tokens = 0.0
                    self.last = now
                    return
                self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
                self.last = now
                if self.tokens >= n:
                    self.tokens -= n
                    return
                wait = (n - self.tokens) / self.rate
            time.sleep(min(wait, 0.05))


class Proxy:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.t0 = time.monotonic()
        self.schedule = Schedule(args.throttle_kbps, args.throttle_from, args.throttle_for, self.t0)
        self.bucket = TokenBucket(self.schedule, args.chunk_bytes)
        self.lock = threading.Lock()
        self.bytes_up = 0
        self.bytes_down = 0
        self.connections = 0
        self.open_connections = 0
        self.stopping = threading.Event()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Set before listen(): accepted sockets inherit it, and the window scale is fixed then.
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
        self.listener.bind((args.listen_host, args.listen_port))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]

    def log(self, msg: str) -> None:
        print(f"throttle_proxy: t={self.schedule.elapsed():7.2f}s {msg}", flush=True)

    def status(self) -> dict:
        with self.lock:
            return {
                "listen_port": self.port,
                "target": f"{self.args.target_host}:{self.args.target_port}",
                "elapsed_s": round(self.schedule.elapsed(), 3),
                "throttling": self.schedule.active(),
                "throttle_kbps": self.args.throttle_kbps,
                "throttle_from_s": self.args.throttle_from,
                "throttle_for_s": self.args.throttle_for,
                "connections": self.connections,
                "open_connections": self.open_connections,
                "bytes_client_to_server": self.bytes_up,
                "bytes_server_to_client": self.bytes_down,
            }

    def write_status(self) -> None:
        path = self.args.status_json
        if not path:
            return
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump(self.status(), f)
        os.replace(tmp, path)

    def monitor(self) -> None:
        """Logs throttle transitions and refreshes the status file."""
        was = False
        while not self.stopping.is_set():
            now = self.schedule.active()
            if now != was:
                if now:
                    self.log(f"throttling starts: {self.args.throttle_kbps:g} kbit/s client->server")
                else:
                    self.log("throttling stops")
                was = now
            self.write_status()
            self.stopping.wait(0.1)

    def serve(self) -> None:
        print(f"listening on {self.args.listen_host}:{self.port}", flush=True)
        threading.Thread(target=self.monitor, daemon=True).start()
        while not self.stopping.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                break
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection((self.args.target_host, self.args.target_port), 10)
            server.settimeout(None)
        except OSError as exc:
            self.log(f"cannot reach target: {exc}")
            client.close()
            return
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.args.rcvbuf)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.args.rcvbuf)
        with self.lock:
            self.connections += 1
            self.open_connections += 1
        self.log(f"connection {self.connections} opened")
        up = threading.Thread(target=self.pump, args=(client, server, True), daemon=True)
        up.start()
        self.pump(server, client, False)
        up.join()
        for s in (client, server):
            s.close()
        with self.lock:
            self.open_connections -= 1
        self.log("connection closed")

    def pump(self, src: socket.socket, dst: socket.socket, upstream: bool) -> None:
        chunk = self.args.chunk_bytes
        try:
            while True:
                data = src.recv(chunk)
                if not data:
                    break
                if upstream:
                    # No further read until this chunk is paid for: the unread backlog stays
                    # in the small kernel buffers and pushes back on the sender.
                    self.bucket.take(len(data))
                dst.sendall(data)
                with self.lock:
                    if upstream:
                        self.bytes_up += len(data)
                    else:
                        self.bytes_down += len(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def stop(self) -> None:
        self.stopping.set()
        try:
            self.listener.close()
        except OSError:
            pass
        self.write_status()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="throttle_proxy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen-port", type=int, default=0, help="0 picks a free port (printed)")
    ap.add_argument("--listen-host", default="127.0.0.1")
    ap.add_argument("--target-port", type=int, required=True)
    ap.add_argument("--target-host", default="127.0.0.1")
    ap.add_argument("--throttle-kbps", type=float, default=0.0,
                    help="client->server limit while throttling, kbit/s (0: never throttle)")
    ap.add_argument("--throttle-from", type=float, default=0.0, help="seconds after start")
    ap.add_argument("--throttle-for", type=float, default=None,
                    help="seconds (default: until the end)")
    ap.add_argument("--status-json", metavar="PATH", help="keep a JSON status file here")
    ap.add_argument("--chunk-bytes", type=int, default=4096, help="read size (default 4096)")
    ap.add_argument("--rcvbuf", type=int, default=16384,
                    help="SO_RCVBUF of accepted sockets, bytes (default 16384)")
    args = ap.parse_args(argv)
    if args.throttle_kbps < 0 or args.throttle_from < 0 or (
            args.throttle_for is not None and args.throttle_for < 0):
        ap.error("throttle values must be >= 0")
    if args.chunk_bytes < 256:
        ap.error("--chunk-bytes must be >= 256")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        proxy = Proxy(args)
    except OSError as exc:
        print(f"throttle_proxy: cannot listen: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum, frame):  # noqa: ARG001
        proxy.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    proxy.serve()
    proxy.log(f"stopped; {proxy.bytes_up} bytes up, {proxy.bytes_down} bytes down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
