"""Drives broadcastsink through NULL->READY->PAUSED->PLAYING->PAUSED->PLAYING->NULL (python3-gi, as
an application would) and prints what it saw as one JSON object: each state change's return and
the state reached, the stats property's video-frames-in at each step, bus errors and warnings.

usage: gst_states.py live|nonlive RECORD_PATH
"""

import json
import sys
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

Gst.init(None)
live = sys.argv[1] == "live"
record = sys.argv[2]
flag = "true" if live else "false"
pipeline = Gst.parse_launch(
    f"videotestsrc is-live={flag} pattern=ball ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! "
    f"broadcastsink name=s record={record} "
    f"audiotestsrc is-live={flag} samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=2 ! s.app_audio")
sink = pipeline.get_by_name("s")
bus = pipeline.get_bus()
report = {"steps": [], "errors": [], "warnings": [], "name": sink.get_name()}


def drain_bus():
    while True:
        m = bus.pop()
        if m is None:
            return
        if m.type == Gst.MessageType.ERROR:
            report["errors"].append(m.parse_error()[0].message)
        elif m.type == Gst.MessageType.WARNING:
            report["warnings"].append(m.parse_warning()[0].message)


def frames_in():
    st = sink.get_property("stats")
    ok, v = st.get_int64("video-frames-in")
    return v if ok else 0


def step(state, settle=0.6):
    ret = pipeline.set_state(state)
    _, cur, _ = pipeline.get_state(10 * Gst.SECOND)
    time.sleep(settle)
    before = frames_in()
    time.sleep(settle)
    after = frames_in()
    drain_bus()
    report["steps"].append({"to": state.value_nick, "return": ret.value_nick, "reached": cur.value_nick,
                            "frames_in": [before, after]})


step(Gst.State.READY, 0.1)
step(Gst.State.PAUSED)
step(Gst.State.PLAYING)
step(Gst.State.PAUSED)
step(Gst.State.PLAYING)
# End the stream as an application does (EOS, wait for it on the bus), so the recording is complete.
pipeline.send_event(Gst.Event.new_eos())
msg = bus.timed_pop_filtered(20 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
report["eos"] = msg is not None and msg.type == Gst.MessageType.EOS
st = sink.get_property("stats")
report["final"] = {k: st.get_value(k) for k in ("video-frames-in", "video-frames-sent", "total-drops")}
step(Gst.State.NULL, 0.1)
print(json.dumps(report))
