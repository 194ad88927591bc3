"""Python producer faster than real time: N 1280x720 BGRx frames pushed in a loop with the given
back-pressure into a file; set_video_bitrate(800) at N/3, request_keyframe() at 2N/3, then a bad
bitrate (ValueError expected). Prints one JSON line: results by kind, what the controls did, stats.

usage: py_block.py drop|block N OUT.flv
"""

import json
import sys

import numpy as np

import broadcastkit as bk

mode, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# memory_budget=0: the interpreter and numpy alone hold ~35 MB, which is not what this measures.
frame = np.full((720, 1280, 4), 0x20, np.uint8)
results: dict = {}
report: dict = {}
t0 = bk.now_ns()
with bk.Session(record=out, width=1280, height=720, keyframe_interval=20, audio_codec=None, memory_budget=0,
                backpressure=mode) as s:
    for i in range(n):
        frame[:, :, :] = 0x20
        x = (i * 8) % (1280 - 64)
        frame[:, x:x + 64, :] = 0xFF
        r = s.send_video(frame, pts_ns=t0 + i * 33_333_333)
        results[r] = results.get(r, 0) + 1
        if i == n // 3:
            s.set_video_bitrate(800)
            report["target_after_set"] = s.stats()["target_video_kbps"]
            try:
                s.set_video_bitrate(0)
                report["bad_bitrate"] = "accepted"
            except ValueError as e:
                report["bad_bitrate"] = f"ValueError: {e}"
        if i == 2 * n // 3:
            s.request_keyframe()
stats = s.stats()
try:
    s.request_keyframe()
    report["after_close"] = "accepted"
except bk.StateError:
    report["after_close"] = "StateError"
print(json.dumps({"results": results, "report": report, "stats": stats}))
