"""broadcastsink's runtime controls, driven from python3-gi as an application would, on a live
pipeline recording FLV: video-bitrate set while PLAYING, the request-keyframe action signal, an
upstream force-key-unit event sent to the element, the save-replay action signal, the stats
property. Prints one JSON object: what each call returned, the stats, bus errors and warnings.

usage: gst_controls.py RECORD_PATH CLIP_PATH
"""

import json
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402

Gst.init(None)
record, clip = sys.argv[1], sys.argv[2]
pipeline = Gst.parse_launch(
    "videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! "
    f"broadcastsink name=s record={record} keyframe-interval=20 replay-seconds=5 "
    "audiotestsrc is-live=true samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=2 ! s.app_audio")
sink = pipeline.get_by_name("s")
bus = pipeline.get_bus()
report = {"errors": [], "warnings": []}


def drain_bus():
    while True:
        m = bus.pop()
        if m is None:
            return
        if m.type == Gst.MessageType.ERROR:
            report["errors"].append(m.parse_error()[0].message)
        elif m.type == Gst.MessageType.WARNING:
            report["warnings"].append(m.parse_warning()[0].message)


def stats():
    st = sink.get_property("stats")
    return {st.nth_field_name(i): st.get_value(st.nth_field_name(i)) for i in range(st.n_fields())}


report["stats_before_start"] = stats()
pipeline.set_state(Gst.State.PLAYING)
pipeline.get_state(10 * Gst.SECOND)
time.sleep(1.5)
sink.set_property("video-bitrate", 800)
report["bitrate_property"] = sink.get_property("video-bitrate")
report["target_after_set"] = stats()["target-video-kbps"]
time.sleep(0.5)
report["request_keyframe"] = sink.emit("request-keyframe")
time.sleep(1.0)
report["upstream_fku"] = sink.send_event(GstVideo.video_event_new_upstream_force_key_unit(Gst.CLOCK_TIME_NONE, True, 0))
time.sleep(1.0)
report["save_replay"] = sink.emit("save-replay", clip, 0.0)
pipeline.send_event(Gst.Event.new_eos())
msg = bus.timed_pop_filtered(20 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
report["eos"] = msg is not None and msg.type == Gst.MessageType.EOS
report["stats"] = stats()
drain_bus()
pipeline.set_state(Gst.State.NULL)
print(json.dumps(report))
