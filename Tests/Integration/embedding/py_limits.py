"""The Python binding against the library's table: limits() as read through bk_limits(), a value just
outside each range raises a ValueError before anything starts, defaults come from the table.
Prints one JSON object. usage: py_limits.py OUT.flv"""

import json
import sys

import broadcastkit as bk

out = sys.argv[1]
t = bk.limits()
report = {"limits": t, "refused": {}, "accepted": {}}
for name, field in (("width", "width"), ("height", "height"), ("fps", "fps"), ("video_bitrate", "video_bitrate_kbps"),
                    ("keyframe_interval", "keyframe_interval_seconds"), ("audio_bitrate", "aac_bitrate_kbps"),
                    ("replay_seconds", "replay_seconds")):
    step = 2 if name in ("width", "height") else 1
    for value in (t[field]["min"] - step, t[field]["max"] + step) + ((641,) if name == "width" else ()):
        try:
            bk.Session(record=out, **{name: value}).close()
            report["refused"][f"{name}={value}"] = "accepted"
        except ValueError as e:
            report["refused"][f"{name}={value}"] = type(e).__name__
    for value in (t[field]["min"], t[field]["max"]):
        s = bk.Session(record=out, **{name: value})
        report["accepted"][f"{name}={value}"] = True
        s.close()
# The reconnect settings: the library's ranges (bk_limits()), refused in its words (the CLI's).
report["words"] = {}
for name, r, step in (("reconnect_attempts", t["reconnect_attempts"], 1), ("reconnect_delay", t["reconnect_delay"], None)):
    outside = (r["min"] - 1, r["max"] + 1) if step else (r["min"] / 2, r["max"] + 0.5)
    for value in outside:
        try:
            bk.Session(record=out, **{name: value}).close()
            report["refused"][f"{name}={value}"] = "accepted"
        except ValueError as e:
            report["refused"][f"{name}={value}"] = type(e).__name__
            report["words"].setdefault(name, str(e))
    for value in (r["min"], r["max"]):
        s = bk.Session(record=out, **{name: value})
        report["accepted"][f"{name}={value}"] = True
        s.close()
try:
    bk.Session(record=out, audio_codec="opus", audio_bitrate=t["opus_bitrate_kbps"]["max"] + 1)
    report["refused"]["opus"] = "accepted"
except ValueError as e:
    report["refused"]["opus"] = type(e).__name__
s = bk.Session(record=out)
report["default_repr"] = repr(s)
report["plan"] = bk.Session(record=out, width=1280, height=720, video_bitrate=2500, audio_bitrate=128,
                            memory_budget=0).memory_plan()
s.close()
print(json.dumps(report))
