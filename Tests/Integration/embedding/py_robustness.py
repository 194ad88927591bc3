"""Driven by test_embedding.PythonBindingTest: streams ~3 s through the Python binding and throws bad
frames at it midway. Prints one JSON object: what raised, the texts produced, stats, events."""

import json
import os
import sys
import time

import numpy as np

import broadcastkit as bk

url, key, record = sys.argv[1], os.environ["STREAM_KEY"], sys.argv[2]
texts, events, raised = [], [], []
W, H, FPS = 640, 360, 30
good = np.full((H, W, 4), 90, dtype=np.uint8)
bad_frames = {
    "three_channels": (np.zeros((H, W, 3), np.uint8), "BGRx"),
    "float_pixels": (np.zeros((H, W, 4), np.float32), "BGRx"),
    "zero_width": (np.zeros((H, 0, 4), np.uint8), "BGRx"),
    "too_large": (np.zeros((9000, 8, 4), np.uint8), "BGRx"),
    "flipped_view": (good[::-1], "BGRx"),
    "column_view": (good[:, ::2], "BGRx"),
    "bad_nv12_uv": ((np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8)), "NV12"),
    "i420_odd_rows": (np.zeros((H * 3 // 2 + 1, W), np.uint8), "I420"),
    "unknown_format": (good, "YUY2"),
}
session = bk.Session(url, key, record=record, width=W, height=H, fps=FPS, video_bitrate=800,
                     memory_budget="80M", on_event=lambda e: events.append(e))
texts.append(repr(session))
sent_after_bad = 0
with session:
    texts.append(repr(session))
    start = bk.now_ns()
    tone = np.zeros((1600, 2), np.int16)
    for n in range(90):
        pts = start + n * 1_000_000_000 // FPS
        if n == 45:
            for name, (frame, fmt) in bad_frames.items():
                try:
                    session.send_video(frame, pts_ns=pts, format=fmt)
                except bk.FrameError as e:
                    raised.append(name)
                    texts.append(str(e))
                    texts.append(repr(e))
            for name, samples in {"audio_int32": np.zeros((1600, 2), np.int32),
                                  "audio_3ch": np.zeros((1600, 3), np.int16),
                                  "audio_strided": np.zeros((1600, 4), np.int16)[:, ::2]}.items():
                try:
                    session.send_audio(samples, pts_ns=pts)
                except bk.FrameError as e:
                    raised.append(name)
                    texts.append(str(e))
        r = session.send_video(good, pts_ns=pts)
        if n >= 45 and r == "accepted":
            sent_after_bad += 1
        session.send_audio(tone, pts_ns=pts)
        texts.append(json.dumps(session.stats()))
        time.sleep(max(0, (pts + 33_333_333 - bk.now_ns()) / 1e9))
texts.append(repr(session))
stats = session.stats()

# Errors that carry library messages: a refused connection and a budget that cannot fit.
errors = {}
try:
    with bk.Session("rtmp://127.0.0.1:9/live", key, width=W, height=H, memory_budget="80M"):
        pass
except bk.BroadcastError as e:
    errors["connect"] = type(e).__name__
    texts += [str(e), repr(e)]
try:
    with bk.Session(url, key, width=1920, height=1080, memory_budget="20M"):
        pass
except bk.BroadcastError as e:
    errors["budget"] = type(e).__name__
    texts += [str(e), repr(e)]
    errors["budget_text"] = str(e)

for e in events:
    texts += [repr(e), e.message]
print(json.dumps({"raised": raised, "expected": list(bad_frames) + ["audio_int32", "audio_3ch", "audio_strided"],
                  "sent_after_bad": sent_after_bad, "stats": stats, "errors": errors, "texts": texts,
                  "events": [e.type for e in events]}))
