#!/usr/bin/env python3
"""A lossy UDP relay for SRT tests: a link that loses datagrams, on loopback.

Listens on 127.0.0.1:LPORT; the first peer that sends becomes the client. Every datagram from
the client goes to TARGET_HOST:TPORT from one upstream socket, and every datagram back goes to
the client. Each direction drops a datagram with probability --loss (seeded, so a run can be
repeated). netem is not available here, so this is how a lossy path is made.

With --kbps, the client-to-target direction is also a slow link: datagrams wait in a queue of
--queue-ms at that rate (a bottleneck router's buffer) and are dropped when it is full.

Prints "listening on 127.0.0.1:PORT" (flushed) once ready. On SIGTERM/SIGINT, or after
--seconds, it writes the counts (forwarded and dropped per direction) to --status-json and exits.
"""

from __future__ import annotations

import argparse
import json
import random
import selectors
import signal
import socket
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="udp_relay", description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen-port", type=int, default=0, help="0: pick a free port")
    ap.add_argument("--target", required=True, help="HOST:PORT of the receiver")
    ap.add_argument("--loss", type=float, default=0.0, help="drop probability per datagram, each way")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kbps", type=float, default=0, help="client-to-target rate limit (0: none)")
    ap.add_argument("--kbps-from", type=float, default=0, help="seconds after start the limit begins")
    ap.add_argument("--queue-ms", type=float, default=200, help="the bottleneck's queue, in ms at --kbps")
    ap.add_argument("--seconds", type=float, default=600, help="stop after this long (a bound)")
    ap.add_argument("--status-json", help="write the counts here when stopping")
    a = ap.parse_args(argv)
    if not 0.0 <= a.loss < 1.0:
        ap.error("--loss must be in [0, 1)")
    host, _, port = a.target.rpartition(":")
    target = (host or "127.0.0.1", int(port))
    rng = random.Random(a.seed)

    down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    down.bind(("127.0.0.1", a.listen_port))
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.connect(target)
    for s in (down, up):
        s.setblocking(False)
    counts = {"to_target": 0, "to_target_dropped": 0, "to_client": 0, "to_client_dropped": 0, "queue_dropped": 0}
    from collections import deque
    queue: deque[bytes] = deque()
    queued_bytes = 0
    credit = 0.0
    last = time.monotonic()
    started = last
    client = None
    stop = False

    def on_signal(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"listening on 127.0.0.1:{down.getsockname()[1]}", flush=True)

    sel = selectors.DefaultSelector()
    sel.register(down, selectors.EVENT_READ)
    sel.register(up, selectors.EVENT_READ)
    end = time.monotonic() + a.seconds
    while not stop and time.monotonic() < end:
        now = time.monotonic()
        limited = a.kbps > 0 and now - started >= a.kbps_from
        if limited:
            credit = min(credit + (now - last) * a.kbps * 125, 1500.0 * 4)
            while queue and credit >= len(queue[0]):
                data = queue.popleft()
                queued_bytes -= len(data)
                credit -= len(data)
                try:
                    up.send(data)
                except (BlockingIOError, ConnectionRefusedError):
                    pass
        last = now
        for key, _ in sel.select(timeout=0.002 if limited else 0.2):
            s = key.fileobj
            while True:
                try:
                    if s is down:
                        data, addr = down.recvfrom(65536)
                        client = addr
                    else:
                        data = up.recv(65536)
                except (BlockingIOError, ConnectionRefusedError):
                    break
                to_target = s is down
                name = "to_target" if to_target else "to_client"
                if rng.random() < a.loss:
                    counts[name + "_dropped"] += 1
                    continue
                counts[name] += 1
                if to_target and a.kbps > 0 and time.monotonic() - started >= a.kbps_from:
                    if queued_bytes + len(data) > a.kbps * 125 * a.queue_ms / 1000:
                        counts["queue_dropped"] += 1
                    else:
                        queue.append(data)
                        queued_bytes += len(data)
                    continue
                try:
                    if to_target:
                        up.send(data)
                    elif client is not None:
                        down.sendto(data, client)
                except (BlockingIOError, ConnectionRefusedError):
                    pass
    if a.status_json:
        with open(a.status_json, "w") as f:
            json.dump(counts, f)
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
