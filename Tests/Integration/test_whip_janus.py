"""WHIP output (issue 27) against an ICE-lite endpoint: Janus (Debian's janus 1.1.2, `ice_lite = true`,
its Record&Play plugin) behind Tests/Integration/janus_whip.py, a small WHIP front to Janus's HTTP API.

An ICE-lite endpoint never sends connectivity checks of its own: our agent must be the controlling
side, check Janus's candidate and nominate the pair (USE-CANDIDATE), or Janus never selects a pair,
DTLS never starts and nothing arrives. Janus records what it received (.mjr), janus-pp-rec
converts it, and PyAV decodes it: 10 s at 720p, every frame at 1280x720, >= 9 s of Opus, one POST,
one DELETE, the key in no output. (aiortc, the other tests' endpoint, is full ICE.)
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from support import REPO_ROOT, BroadcastTestCase, new_key

PY = sys.executable
FRONT = Path(__file__).with_name("janus_whip.py")


class JanusEndpoint:
    """janus_whip.py (which starts janus by pid), started and stopped by pid."""

    def __init__(self, work: Path, token: str):
        self.work = work
        self.report = work / "janus-report.json"
        self.log = work / "janus-front.log"
        self.proc = subprocess.Popen([PY, str(FRONT), "--token", token, "--report", str(self.report),
                                      "--work", str(work)], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                     stderr=open(self.log, "wb"))
        line = self.proc.stdout.readline().decode()
        info = json.loads(line) if line else {}
        if "port" not in info:
            self.stop()
            raise AssertionError(f"janus_whip.py did not start: {line} {self.log.read_text()[-2000:]} "
                                 f"{(work / 'janus.log').read_text()[-2000:] if (work / 'janus.log').exists() else ''}")
        self.url = f"http://127.0.0.1:{info['port']}/whip/live"

    def finish(self, wait: float = 30) -> dict:
        """The report: the front exits after DELETE (it stops Janus and converts the recordings)."""
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        return json.loads(self.report.read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def decode(path: str | None) -> dict:
    """PyAV: decoded video frames by size, decoded audio seconds, decode errors."""
    import av
    out = {"sizes": {}, "audio_seconds": 0.0, "errors": 0}
    if not path:
        return out
    with av.open(path) as c:
        for packet in c.demux():
            try:
                for frame in packet.decode():
                    if packet.stream.type == "video":
                        k = f"{frame.width}x{frame.height}"
                        out["sizes"][k] = out["sizes"].get(k, 0) + 1
                    elif packet.stream.type == "audio":
                        out["audio_seconds"] += frame.samples / frame.sample_rate
            except av.error.InvalidDataError:
                out["errors"] += 1
    return out


class JanusICELiteTest(BroadcastTestCase):
    def test_720p_to_an_ice_lite_endpoint(self):
        key = new_key()
        ep = JanusEndpoint(self.tmp, key)
        self.addCleanup(ep.stop)
        self.track_file(ep.log)
        self.track_file(self.tmp / "janus.log")
        r = self.run_broadcast(["--url", ep.url, "--source", "test", "--res", "720p", "--duration", "10"],
                               env={"STREAM_KEY": key}, timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        rep = ep.finish()
        self.assertEqual(rep["errors"], [], rep)
        self.assertTrue(rep["answer_ice_lite"], f"Janus's answer did not say a=ice-lite: {rep}")
        self.assertIn("h264", rep["answer_codecs"])
        self.assertIn("opus", rep["answer_codecs"])
        self.assertEqual(rep["posts"], 1, rep)
        self.assertEqual(rep["deletes"], 1, f"the resource must be DELETEd on stop: {rep}")
        video, audio = decode(rep["converted"]["video"]), decode(rep["converted"]["audio"])
        print(f"\n--- janus ice-lite: video {video['sizes']}, audio {audio['audio_seconds']:.2f} s, "
              f"errors {video['errors'] + audio['errors']}", file=sys.stderr)
        # 300 frames were produced. Janus records every RTP packet it got and janus-pp-rec rebuilds
        # the frames; on loopback nothing is lost (300 of 300 by hand), and the first frames may
        # precede the recorder's start by a packet or two: 95% leaves room for that and no more.
        self.assertEqual(set(video["sizes"]), {"1280x720"}, video)
        self.assertGreaterEqual(video["sizes"]["1280x720"], 0.95 * 300, video)
        self.assertEqual(video["errors"] + audio["errors"], 0, (video, audio))
        self.assertGreaterEqual(audio["audio_seconds"], 9.0, audio)
        for text in (r.stdout, r.stderr, ep.log.read_text(errors="replace")):
            self.assertNotIn(key, text)
