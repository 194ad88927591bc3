"""broadcastsink's app_audio pad released while the stream plays (python3-gi): live video and a live
tone; 1.5 s into PLAYING the application takes the tone away as GStreamer applications do (the
tone's elements to NULL and out of the pipeline, then release_request_pad on the pad they fed), and
the stream must go on to the video's end and post EOS without an error.
Prints one JSON object: errors, EOS, the pads before and after, the stats at the release and at
the end, and how long the release call took.

usage: gst_release.py RECORD_PATH
"""

import json
import sys
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

Gst.init(None)
record = sys.argv[1]
pipeline = Gst.parse_launch(
    "videotestsrc is-live=true num-buffers=120 ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! "
    f"broadcastsink name=s record={record} "
    "audiotestsrc name=tone is-live=true samplesperbuffer=960 ! capsfilter name=tonecaps "
    "caps=audio/x-raw,rate=48000,channels=2 ! s.app_audio")
sink = pipeline.get_by_name("s")
bus = pipeline.get_bus()
report = {"errors": [], "pads_before": sorted(p.get_name() for p in sink.pads)}
STATS = ("video-frames-sent", "audio-frames-sent")
pipeline.set_state(Gst.State.PLAYING)
time.sleep(1.5)
st = sink.get_property("stats")
report["stats_at_release"] = {k: st.get_value(k) for k in STATS}
t0 = time.monotonic()
for name in ("tone", "tonecaps"):
    e = pipeline.get_by_name(name)
    e.set_state(Gst.State.NULL)
    pipeline.remove(e)
sink.release_request_pad(sink.get_static_pad("app_audio"))
report["release_s"] = round(time.monotonic() - t0, 3)
report["pads_after"] = sorted(p.get_name() for p in sink.pads)
msg = bus.timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
report["eos"] = msg is not None and msg.type == Gst.MessageType.EOS
if msg is not None and msg.type == Gst.MessageType.ERROR:
    err, dbg = msg.parse_error()
    report["errors"].append(f"{msg.src.get_name()}: {err.message} ({dbg})")
st = sink.get_property("stats")
report["stats"] = {k: st.get_value(k) for k in STATS}
pipeline.set_state(Gst.State.NULL)
print(json.dumps(report))
