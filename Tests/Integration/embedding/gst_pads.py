"""broadcastsink's audio request pads, driven as an application does (python3-gi): requests
app_audio and mic_audio, releases both before the stream starts (so it is video-only), streams
60 frames of videotestsrc to RECORD_PATH, and after the stream started requests app_audio again
(refused: the tracks are fixed when the stream starts). Prints one JSON object.

usage: gst_pads.py RECORD_PATH
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
    "videotestsrc num-buffers=60 ! video/x-raw,format=I420,width=320,height=180,framerate=30/1 ! "
    f"broadcastsink name=s record={record}")
sink = pipeline.get_by_name("s")
report = {"errors": []}
report["pads_at_start"] = sorted(p.get_name() for p in sink.pads)
app = sink.request_pad_simple("app_audio")
mic = sink.request_pad_simple("mic_audio")
report["unknown_request"] = sink.request_pad_simple("video_audio") is not None
report["pads_requested"] = sorted(p.get_name() for p in sink.pads)
report["templates"] = {t.name_template: t.presence.value_nick for t in sink.get_pad_template_list()}
sink.release_request_pad(app)
sink.release_request_pad(mic)
report["pads_released"] = sorted(p.get_name() for p in sink.pads)
pipeline.set_state(Gst.State.PLAYING)
deadline = time.monotonic() + 20
while sink.get_property("stats").get_string("status") == "idle" and time.monotonic() < deadline:
    time.sleep(0.02)
report["late_request"] = sink.request_pad_simple("app_audio") is not None
bus = pipeline.get_bus()
msg = bus.timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
report["eos"] = msg is not None and msg.type == Gst.MessageType.EOS
if msg is not None and msg.type == Gst.MessageType.ERROR:
    report["errors"].append(msg.parse_error()[0].message)
st = sink.get_property("stats")
report["stats"] = {k: st.get_value(k) for k in ("video-frames-sent", "audio-frames-sent")}
pipeline.set_state(Gst.State.NULL)
print(json.dumps(report))
