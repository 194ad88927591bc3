"""A WHIP endpoint (RFC 9725) on an independent WebRTC stack, aiortc + aiohttp, for the WHIP tests.

    python whip_endpoint.py --token TOKEN --report OUT.json [--pli-after-frames N] [--relay-loss P]
                            [--relay-kbps K --relay-kbps-from S] [--tls-cert PEM --tls-key KEY]

Listens on 127.0.0.1 (`--port`, else a free port, printed as {"port": P} on stdout), answers POST /whip/live with
201 + Location when the bearer token matches (401 otherwise, counted), decodes every frame that
arrives through aiortc's own decoders (FFmpeg via PyAV), and writes the report when the resource is
DELETEd, or on SIGTERM:

    {"posts", "unauthorized", "deletes", "answer_codecs", "video_frames", "video_sizes", "keyframes",
     "audio_seconds", "pli_sent_at", "keyframe_after_pli", "latency_ms": {"frames", "p50", "p95"}}

latency_ms is glass-to-decoded: the decode time minus the capture time the client's RTCP sender
reports give the frame's RTP time (video frames after the first video report).

`--pli-after-frames N` sends one PLI once N frames have decoded and reports how many frames later
the first keyframe decoded (keyframe_after_pli; 1 = the very next frame).

`--relay-loss P` puts tools/udp_relay.py (P loss each way) in front of aiortc's first host
candidate and answers with the relay's address as the only candidate, so every datagram the
client sends (and what aiortc answers) crosses the lossy path; the relay's counts are in "relay".
`--relay-kbps K` (with `--relay-kbps-from S`) makes that relay a K kbit/s bottleneck towards aiortc
from S s on, with a 150 ms queue that drops what overflows (loss 0 unless --relay-loss is given).
`--dtls-server` makes aiortc the DTLS server (`a=setup:passive`), so the client runs its DTLS client role.
The report also has "answer_setup", "abs_send_time_packets" (video packets that carried the
extension), "remb_sent", "remb_last_bps" and "remb_bps" (the first 1000) (the REMBs aiortc's estimator sent back).
`--tls-cert`/`--tls-key` serve the signalling over HTTPS (then the URL is https://).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from aiortc.rtcrtpreceiver import RTCRtpReceiver
from aiortc.rtp import RTCP_PSFB_APP, RtcpPsfbPacket, RtcpSrPacket, unpack_remb_fci

# The last sender report per SSRC: (NTP time, RTP time). The client's reports map RTP time to the
# capture clock, so a decoded frame's RTP time gives its capture time (glass-to-decoded latency).
SENDER_REPORTS: dict[int, tuple[int, int]] = {}
_handle_rtcp = RTCRtpReceiver._handle_rtcp_packet


async def _note_sender_report(self, packet):
    if isinstance(packet, RtcpSrPacket):
        SENDER_REPORTS[packet.ssrc] = (packet.sender_info.ntp_timestamp, packet.sender_info.rtp_timestamp)
    return await _handle_rtcp(self, packet)


RTCRtpReceiver._handle_rtcp_packet = _note_sender_report

# aiortc's frames count RTP time from each stream's first packet: keep that first RTP time per SSRC.
FIRST_RTP: dict[int, int] = {}
_handle_rtp = RTCRtpReceiver._handle_rtp_packet


# Video packets that carried abs-send-time, and the REMBs aiortc's estimator sent back (its own
# RemoteBitrateEstimator, fed only by packets with that extension).
REMB = {"abs_send_time_packets": 0, "remb_sent": 0, "remb_last_bps": None, "remb_bps": []}


async def _note_first_rtp(self, packet, arrival_time_ms):
    FIRST_RTP.setdefault(packet.ssrc, packet.timestamp)
    if packet.extensions.abs_send_time is not None:
        REMB["abs_send_time_packets"] += 1
    return await _handle_rtp(self, packet, arrival_time_ms)


RTCRtpReceiver._handle_rtp_packet = _note_first_rtp
_send_rtcp = RTCRtpReceiver._send_rtcp


async def _note_remb(self, packet):
    if isinstance(packet, RtcpPsfbPacket) and packet.fmt == RTCP_PSFB_APP:
        REMB["remb_sent"] += 1
        REMB["remb_last_bps"] = unpack_remb_fci(packet.fci)[0]
        if len(REMB["remb_bps"]) < 1000:
            REMB["remb_bps"].append(REMB["remb_last_bps"])
    return await _send_rtcp(self, packet)


RTCRtpReceiver._send_rtcp = _note_remb


def capture_unix_seconds(pts: int) -> float | None:
    """Capture time of a video frame (aiortc's pts: RTP time since the stream's first packet) by the
    latest video sender report (90 kHz)."""
    for ssrc, (ntp, rtp) in list(SENDER_REPORTS.items()):
        if ssrc not in FIRST_RTP:
            continue
        delta = (FIRST_RTP[ssrc] + pts - rtp) & 0xFFFFFFFF
        if delta >= 1 << 31:
            delta -= 1 << 32
        if abs(delta) > 90000 * 10:
            continue  # the audio stream's report (48 kHz clock, another origin)
        return (ntp >> 32) - 2208988800 + (ntp & 0xFFFFFFFF) / 2**32 + delta / 90000
    return None


class Endpoint:
    def __init__(self, token: str, report: str, pli_after: int | None, relay_loss: float | None = None,
                 relay_kbps: int | None = None, relay_kbps_from: float = 0, dtls_server: bool = False,
                 wrong_fingerprint: bool = False):
        self.dtls_server = dtls_server
        self.wrong_fingerprint = wrong_fingerprint
        self.relay_loss = relay_loss
        self.relay_kbps = relay_kbps
        self.relay_kbps_from = relay_kbps_from
        self.relay: subprocess.Popen | None = None
        self.token = token
        self.report_path = report
        self.pli_after = pli_after
        self.r = {"posts": 0, "unauthorized": 0, "deletes": 0, "answer_codecs": [], "video_frames": 0,
                  "video_sizes": {}, "keyframes": 0, "audio_seconds": 0.0, "pli_sent_at": None,
                  "keyframe_after_pli": None, "errors": []}
        self.pcs: list[RTCPeerConnection] = []
        self.resources: set[str] = set()
        self.latencies: list[float] = []
        self.done = asyncio.Event()

    def authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization", "") == f"Bearer {self.token}"

    async def post(self, request: web.Request) -> web.Response:
        self.r["posts"] += 1
        if not self.authorized(request):
            self.r["unauthorized"] += 1
            return web.Response(status=401, text="bad token")
        if request.content_type != "application/sdp":
            return web.Response(status=415)
        offer = await request.text()
        pc = RTCPeerConnection()
        self.pcs.append(pc)

        @pc.on("track")
        def on_track(track):
            asyncio.ensure_future(self.consume(pc, track))

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        if self.dtls_server:
            # aiortc answers an actpass offer as the DTLS client unless its transport's role is
            # already set: take the server role, so the answer says a=setup:passive.
            for t in pc.getTransceivers():
                t.receiver.transport._set_role("server")  # noqa: SLF001
        answer = await pc.createAnswer()
        await pc.setLocalDescription(answer)
        sdp = pc.localDescription.sdp
        if self.relay_loss is not None or self.relay_kbps is not None:
            sdp = self.through_relay(sdp)
        if self.wrong_fingerprint:
            # ICE answers as usual; the DTLS certificate is not the one the answer names (a
            # man in the middle, or a broken endpoint).
            sdp = re.sub(r"(a=fingerprint:sha-256 )([0-9A-Fa-f]{2})",
                         lambda m: m.group(1) + ("00" if m.group(2) != "00" else "11"), sdp)
        self.r["answer_setup"] = sorted({line.split(":", 1)[1] for line in sdp.splitlines() if line.startswith("a=setup:")})
        self.r["answer_codecs"] = sorted({line.split(" ", 1)[1].split("/")[0].lower()
                                          for line in sdp.splitlines() if line.startswith("a=rtpmap:")})
        rid = secrets.token_hex(8)
        self.resources.add(rid)
        return web.Response(status=201, text=sdp, content_type="application/sdp",
                            headers={"Location": f"/whip/resource/{rid}"})

    def through_relay(self, sdp: str) -> str:
        m = re.search(r"a=candidate:\S+ 1 udp \d+ (\d+\.\d+\.\d+\.\d+) (\d+) typ host", sdp)
        if not m:
            raise RuntimeError("no IPv4 host candidate in aiortc's answer")
        relay_py = Path(__file__).resolve().parents[2] / "tools" / "udp_relay.py"
        shape = ["--kbps", str(self.relay_kbps), "--kbps-from", str(self.relay_kbps_from), "--queue-ms", "150"] \
            if self.relay_kbps else []
        self.relay = subprocess.Popen([sys.executable, str(relay_py), "--target", f"{m.group(1)}:{m.group(2)}",
                                       "--loss", str(self.relay_loss or 0), "--seed", "7", "--seconds", "120", *shape],
                                      stdout=subprocess.PIPE, text=True)
        port = int(self.relay.stdout.readline().strip().rsplit(":", 1)[1])
        out, first = [], set()
        section = -1
        for line in sdp.splitlines():
            if line.startswith("m="):
                section += 1
            if line.startswith("a=candidate:"):
                if section not in first:
                    first.add(section)
                    out.append(f"a=candidate:1 1 udp 2130706431 127.0.0.1 {port} typ host")
                continue
            out.append(line)
        return "\r\n".join(out) + "\r\n"

    def stop_relay(self) -> None:
        if self.relay is None:
            return
        self.relay.send_signal(signal.SIGTERM)
        out, _ = self.relay.communicate(timeout=10)
        lines = [x for x in out.splitlines() if x.startswith("{")]
        self.r["relay"] = json.loads(lines[-1]) if lines else None

    async def consume(self, pc: RTCPeerConnection, track) -> None:
        try:
            while True:
                frame = await track.recv()
                if track.kind == "video":
                    self.r["video_frames"] += 1
                    size = f"{frame.width}x{frame.height}"
                    self.r["video_sizes"][size] = self.r["video_sizes"].get(size, 0) + 1
                    captured = capture_unix_seconds(frame.pts) if frame.pts is not None else None
                    if captured is not None:
                        self.latencies.append(time.time() - captured)
                    if frame.key_frame:
                        self.r["keyframes"] += 1
                        if self.r["pli_sent_at"] is not None and self.r["keyframe_after_pli"] is None:
                            self.r["keyframe_after_pli"] = self.r["video_frames"] - self.r["pli_sent_at"]
                    if self.pli_after is not None and self.r["pli_sent_at"] is None and self.r["video_frames"] >= self.pli_after:
                        for t in pc.getTransceivers():
                            if t.kind == "video":
                                ssrc = t.receiver._RTCRtpReceiver__remote_streams  # noqa: SLF001
                                for s in list(ssrc.keys()):
                                    await t.receiver._send_rtcp_pli(s)
                        self.r["pli_sent_at"] = self.r["video_frames"]
                else:
                    self.r["audio_seconds"] += frame.samples / frame.sample_rate
        except MediaStreamError:
            pass
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            self.r["errors"].append(repr(e))

    async def delete(self, request: web.Request) -> web.Response:
        if not self.authorized(request):
            self.r["unauthorized"] += 1
            return web.Response(status=401)
        if request.match_info["n"] not in self.resources:
            # Another endpoint's resource (one that ran on this port before): not ours to end.
            self.r["unknown_deletes"] = self.r.get("unknown_deletes", 0) + 1
            return web.Response(status=404)
        self.r["deletes"] += 1
        await asyncio.sleep(0.2)
        self.done.set()
        return web.Response(status=200)

    def write_report(self) -> None:
        self.r["audio_seconds"] = round(self.r["audio_seconds"], 3)
        self.r.update(REMB)
        if self.latencies:
            lat = sorted(self.latencies)
            self.r["latency_ms"] = {"frames": len(lat), "p50": round(1000 * lat[len(lat) // 2], 1),
                                    "p95": round(1000 * lat[min(len(lat) - 1, int(len(lat) * 0.95))], 1)}
        with open(self.report_path, "w") as f:
            json.dump(self.r, f)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--token", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--pli-after-frames", type=int)
    ap.add_argument("--relay-loss", type=float)
    ap.add_argument("--relay-kbps", type=int)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--relay-kbps-from", type=float, default=0)
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--dtls-server", action="store_true", help="answer a=setup:passive (the client is the DTLS client)")
    ap.add_argument("--wrong-fingerprint", action="store_true", help="the answer names another certificate's fingerprint")
    a = ap.parse_args()
    ep = Endpoint(a.token, a.report, a.pli_after_frames, a.relay_loss, a.relay_kbps, a.relay_kbps_from, a.dtls_server,
                  a.wrong_fingerprint)
    app = web.Application()
    app.router.add_post("/whip/live", ep.post)
    app.router.add_delete("/whip/resource/{n}", ep.delete)
    runner = web.AppRunner(app)
    await runner.setup()
    tls = None
    if a.tls_cert:
        import ssl
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(a.tls_cert, a.tls_key)
    site = web.TCPSite(runner, "127.0.0.1", a.port, reuse_address=True, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # noqa: SLF001
    print(json.dumps({"port": port}), flush=True)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, ep.done.set)
    await ep.done.wait()
    ep.stop_relay()
    ep.write_report()
    for pc in ep.pcs:
        await pc.close()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
