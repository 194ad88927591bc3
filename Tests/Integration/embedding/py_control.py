"""An embedder's control socket (Session(..., control=PATH), over bk_session_open_control): a subscriber
collects events while frames are pushed faster than the encoder takes them (drops, so "dropped"
events), broadcastctl asks for the version, sets the bitrate and sends stop, which arrives as the
"stop-requested" event; the embedder then finishes. Prints one JSON object.

usage: py_control.py SOCKET RECORD BROADCASTCTL
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np

import broadcastkit as bk

sock, record, ctl = sys.argv[1], sys.argv[2], sys.argv[3]
events: list = []
stop = threading.Event()


def on_event(e):
    events.append(e.type)
    if e.type == "stop-requested":
        stop.set()


def broadcastctl(*args):
    r = subprocess.run([ctl, sock, *args], capture_output=True, text=True, timeout=30)
    return json.loads(r.stdout)


report: dict = {"subscriber": []}
s = bk.Session(record=record, width=1280, height=720, audio_codec=None, memory_budget=0, control=sock,
               on_event=on_event)
s.start()
sub = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sub.connect(sock)
sub.sendall(b"subscribe\n")
lines = sub.makefile()
assert json.loads(lines.readline())["ok"]


def collect():
    for line in lines:
        report["subscriber"].append(json.loads(line))


reader = threading.Thread(target=collect, daemon=True)
reader.start()
frame = np.zeros((720, 1280, 4), np.uint8)
t0 = time.monotonic()
report["seconds"] = 2.5
i = 0
pts0 = time.monotonic_ns()
while time.monotonic() - t0 < report["seconds"]:
    frame[:, (i * 8) % 1200:(i * 8) % 1200 + 64, :] = i & 0xFF
    # As fast as Python goes, each frame on its own 30 fps tick (frames closer than a tick would be
    # skipped by the frame-rate gate, not dropped): the busy encoder drops some (drop mode).
    s.send_video(frame, pts_ns=pts0 + i * 33_333_333)
    i += 1
report["version"] = broadcastctl("version")
report["set_bitrate"] = broadcastctl("set-bitrate", "900")
report["target_after"] = broadcastctl("stats")["target_video_kbps"]
report["stop"] = broadcastctl("stop")
stop.wait(10)
time.sleep(1.2)                  # one more control tick, so the last drops are reported
s.finish()
s.close()
reader.join(10)
report["events"] = events
report["socket_left"] = os.path.exists(sock)
print(json.dumps(report))
