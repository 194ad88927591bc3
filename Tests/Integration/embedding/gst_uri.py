"""broadcastsink as a URI handler (python3-gi, as playbin-style code picks a sink by URL): reads
publish URLs, one per line, from the file given (never argv: they hold keys), makes a sink for each
with Gst.Element.make_from_uri(SINK, ...), streams 60 frames of videotestsrc through the first one
and prints one JSON object: for each URL the factory (or the error), the URI and location read back;
the stream's bus errors, EOS and stats.

usage: gst_uri.py URLS_FILE
"""

import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

Gst.init(None)
with open(sys.argv[1]) as f:
    urls = [line.strip() for line in f if line.strip()]
report = {"made": [], "errors": []}
elements = []
for url in urls:
    try:
        e = Gst.Element.make_from_uri(Gst.URIType.SINK, url, None)
    except GLib.Error as err:
        report["made"].append({"error": err.message})
        elements.append(None)
        continue
    elements.append(e)
    report["made"].append({"factory": e.get_factory().get_name(), "uri": e.get_uri(),
                           "location": e.get_property("location"),
                           "uri_type": Gst.URIHandler.get_uri_type(e).value_nick})

sink = elements[0]
pipeline = Gst.Pipeline.new("p")
src = Gst.ElementFactory.make("videotestsrc")
src.set_property("num-buffers", 60)
caps = Gst.ElementFactory.make("capsfilter")
caps.set_property("caps", Gst.Caps.from_string("video/x-raw,format=I420,width=320,height=180,framerate=30/1"))
for e in (src, caps, sink):
    pipeline.add(e)
src.link(caps)
caps.link(sink)
pipeline.set_state(Gst.State.PLAYING)
bus = pipeline.get_bus()
msg = bus.timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
report["eos"] = msg is not None and msg.type == Gst.MessageType.EOS
if msg is not None and msg.type == Gst.MessageType.ERROR:
    report["errors"].append(msg.parse_error()[0].message)
st = sink.get_property("stats")
report["stats"] = {k: st.get_value(k) for k in ("video-frames-sent", "audio-frames-sent")}
pipeline.set_state(Gst.State.NULL)
print(json.dumps(report))
