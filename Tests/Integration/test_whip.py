"""WHIP output (issue 27) against an independent WebRTC stack: Tests/Integration/whip_endpoint.py
(aiortc + aiohttp; aiortc's ICE, DTLS, SRTP, jitter buffer and FFmpeg decoders via PyAV).

- basic: 20 s at 720p: H.264 + Opus negotiated, >= 95% of the frames decoded at 1280x720, >= 18 s
  of decoded audio, the resource DELETEd at the end; the endpoint's PLI (sent between two natural
  keyframes) is answered by a keyframe within 2 frames; the token appears in no output or stats;
- loss + fan-out: 2% of the datagrams dropped each way (tools/udp_relay.py in front of aiortc): NACKs
  are answered from the packet history and >= 95% of the frames decode whole (aiortc hands only
  complete frames to its decoder), while the same encode goes to nginx-rtmp, whose recording
  PyAV decodes (every frame, no error, 1280x720, Opus);
- the endpoint killed mid-stream: nothing heard for 10 s is a lost connection; a new endpoint on
  the same port gets a new POST and the stream resumes (exit 0, one reconnect);
- AAC with a WHIP URL: exit 2 from the CLI, a ConfigurationError from the library (Python);
- bad token: 401 -> exit 3 at once, one POST (no retry), the token in no output.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase, clean_env, new_key, start_ingest
from support import exclusive  # noqa: E402
from test_srt import decode

PY = sys.executable
ENDPOINT = Path(__file__).with_name("whip_endpoint.py")


class Endpoint:
    """whip_endpoint.py, started and stopped by pid; its report read after DELETE or SIGTERM."""

    def __init__(self, tmp: Path, token: str, pli_after_frames: int | None = None, relay_loss: float | None = None,
                 port: int = 0, name: str = "whip", relay_kbps: int | None = None, relay_kbps_from: float = 0,
                 tls: tuple[Path, Path] | None = None, dtls_server: bool = False, wrong_fingerprint: bool = False):
        self.report = tmp / f"{name}-report.json"
        self.log = tmp / f"{name}-endpoint.log"
        args = [PY, str(ENDPOINT), "--token", token, "--report", str(self.report), "--port", str(port)]
        if pli_after_frames is not None:
            args += ["--pli-after-frames", str(pli_after_frames)]
        if relay_loss is not None:
            args += ["--relay-loss", str(relay_loss)]
        if relay_kbps is not None:
            args += ["--relay-kbps", str(relay_kbps), "--relay-kbps-from", str(relay_kbps_from)]
        if dtls_server:
            args += ["--dtls-server"]
        if wrong_fingerprint:
            args += ["--wrong-fingerprint"]
        if tls is not None:
            args += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=open(self.log, "wb"))
        line = self.proc.stdout.readline().decode()
        if not line:
            raise AssertionError(f"whip_endpoint.py did not start: {self.log.read_text()[-2000:]}")
        self.port = json.loads(line)["port"]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/whip/live"

    def finish(self, wait: float = 10) -> dict:
        """The report: waits for the endpoint to exit after DELETE, else stops it (SIGTERM)."""
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        return json.loads(self.report.read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class WHIPTest(BroadcastTestCase):
    def endpoint(self, token: str, **kw) -> Endpoint:
        ep = Endpoint(self.tmp, token, **kw)
        self.addCleanup(ep.stop)
        return ep

    def test_basic_720p_with_pli(self):
        key = new_key()
        # Natural keyframes every 2 s (frames 1, 61, 121, ...); the PLI goes out after frame 75.
        ep = self.endpoint(key, pli_after_frames=75)
        stats = self.track_file(self.tmp / "stats.jsonl")
        r = self.run_broadcast(["--url", ep.url, "--source", "test", "--res", "720p", "--duration", "20",
                                "--stats-json", stats], env={"STREAM_KEY": key}, timeout=90)
        self.assertEqual(r.returncode, 0, r.describe())
        rep = ep.finish()
        self.track_file(ep.log)
        self.assertEqual(rep["errors"], [], rep)
        self.assertIn("h264", rep["answer_codecs"])
        self.assertIn("opus", rep["answer_codecs"])
        self.assertEqual(rep["posts"], 1, rep)
        self.assertEqual(rep["deletes"], 1, f"the resource must be DELETEd on stop: {rep}")
        produced = 20 * 30
        at720 = rep["video_sizes"].get("1280x720", 0)
        self.assertGreaterEqual(at720, 0.95 * produced, f"decoded at 1280x720: {rep['video_sizes']} of {produced}")
        self.assertEqual(set(rep["video_sizes"]), {"1280x720"}, rep["video_sizes"])
        self.assertGreaterEqual(rep["audio_seconds"], 18.0, rep)
        self.assertIsNotNone(rep["pli_sent_at"], rep)
        self.assertIsNotNone(rep["keyframe_after_pli"], f"no keyframe after the PLI: {rep}")
        self.assertLessEqual(rep["keyframe_after_pli"], 2, f"PLI answered {rep['keyframe_after_pli']} frames later: {rep}")
        # REMB: every video packet carries abs-send-time, aiortc's estimator answers with REMB, and
        # the publisher's peerEstimatedKbps (in the stats as peer_estimate_kbps) follows it.
        self.assertEqual(rep["answer_setup"], ["active"], rep)
        self.assertGreater(rep["abs_send_time_packets"], 20 * 30, rep)
        self.assertGreater(rep["remb_sent"], 0, f"aiortc sent no REMB: {rep}")
        rows = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()]
        estimates = [x["destinations"][0].get("peer_estimate_kbps") for x in rows]
        print(f"\n--- whip REMB: {rep['remb_sent']} sent, last {rep['remb_last_bps']} bit/s; stats {estimates}",
              file=sys.stderr)
        self.assertIsNone(estimates[0], f"no estimate before the first REMB: {estimates}")
        self.assertTrue(any(e is not None and e > 0 for e in estimates), f"peer_estimate_kbps never set: {estimates}")
        sent = {bps // 1000 for bps in rep["remb_bps"]}
        self.assertTrue(all(e is None or e in sent for e in estimates), f"stats {estimates} vs REMBs sent {sorted(sent)}")

    @exclusive("loss repair in time")
    def test_loss_repaired_by_nack_beside_rtmp(self):
        key = new_key()
        ep = self.endpoint(key, relay_loss=0.02)
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        stats = self.track_file(self.tmp / "stats.jsonl")
        r = self.run_broadcast(["--url", ep.url, "--url", f"rtmp://127.0.0.1:{ingest.port}/live", "--source", "test",
                                "--res", "720p", "--duration", "10", "--stats-json", stats],
                               env={"STREAM_KEY": key}, timeout=90)
        self.assertEqual(r.returncode, 0, r.describe())
        rep = ep.finish()
        self.assertEqual(rep["errors"], [], rep)
        relay = rep["relay"]
        self.assertGreater(relay["to_target_dropped"], 20, f"the relay must have dropped datagrams: {relay}")
        last = json.loads(stats.read_text().splitlines()[-1])
        whip, rtmp = last["destinations"][0], last["destinations"][1]
        self.assertEqual((whip["kind"], rtmp["kind"]), ("whip", "rtmp"))
        link = whip["link"]
        self.assertGreater(link["packets_retransmitted"], 0, link)
        produced = 10 * 30
        self.assertGreaterEqual(rep["video_sizes"].get("1280x720", 0), 0.95 * produced,
                                f"frames decoded through 2% loss: {rep['video_sizes']} of {produced}; relay {relay}; link {link}")
        rec = decode(ingest.wait_recording(key))
        self.assertEqual(rec["errors"], 0, rec)
        self.assertEqual((rec["width"], rec["height"]), (1280, 720), rec)
        self.assertIn("opus", rec["codecs"], rec)
        self.assertGreaterEqual(rec["video"], 0.99 * last["video_frames_sent"], rec)

    @exclusive("the bitrate controller on a slow link")
    def test_bitrate_follows_receiver_reports_on_a_slow_link(self):
        """A 1200 kbit/s bottleneck towards aiortc from t=3 s: the endpoint's receiver reports show
        the loss, the adaptive bitrate follows it below the link (without collapsing to the
        floor) and the picture keeps decoding."""
        key = new_key()
        ep = self.endpoint(key, relay_kbps=1200, relay_kbps_from=3)
        stats = self.track_file(self.tmp / "stats.jsonl")
        r = self.run_broadcast(["--url", ep.url, "--source", "test", "--res", "720p", "--video-bitrate", "2500",
                                "--duration", "20", "--stats-json", stats, "--quiet"], env={"STREAM_KEY": key}, timeout=70)
        self.assertEqual(r.returncode, 0, r.describe())
        rep = ep.finish()
        rows = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()]
        targets = [x["target_video_kbps"] for x in rows]
        print(f"\n--- whip slow link: targets {targets}; relay {rep.get('relay')}; frames {rep['video_frames']}",
              file=sys.stderr)
        self.assertEqual(targets[0], 2500)
        late = [x["target_video_kbps"] for x in rows if x["time_s"] >= 14]
        self.assertTrue(late and max(late) < 1200, f"the target must settle below the 1200 kbit/s link: {targets}")
        after = targets[next(i for i, t in enumerate(targets) if t < 2500):]
        self.assertGreater(min(after), 0.3 * 1200, f"the target collapsed: {targets}")
        self.assertGreater(rep["video_frames"], 300, rep)

    def test_https_endpoint_verified(self):
        """https:// signalling through the GnuTLS path rtmps:// uses: a certificate from a CA given
        with --ca-file streams; one for another name is refused (exit 3, the token never sent)."""
        from test_network import make_pki
        pki = make_pki(self.tmp / "pki")
        key = new_key()
        ep = self.endpoint(key, tls=(pki["server_cert"], pki["server_key"]))
        r = self.run_broadcast(["--url", ep.url, "--ca-file", pki["ca"], "--source", "test", "--res", "360p",
                                "--duration", "4"], env={"STREAM_KEY": key}, timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        rep = ep.finish()
        self.assertEqual((rep["posts"], rep["deletes"]), (1, 1), rep)
        self.assertGreaterEqual(rep["video_frames"], 0.9 * 4 * 30, rep)
        wrong = self.endpoint(key, tls=(pki["other_cert"], pki["other_key"]), name="wrong")
        r = self.run_broadcast(["--url", wrong.url, "--ca-file", pki["ca"], "--source", "test", "--res", "360p",
                                "--duration", "4"], env={"STREAM_KEY": key}, timeout=60)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertEqual(len(r.stderr_lines()), 1, r.describe())
        self.assertEqual(wrong.finish(wait=0)["posts"], 0, "no request may reach an endpoint that failed verification")

    def test_dtls_client_role(self):
        """aiortc as the DTLS server (a=setup:passive): our DTLS client role handshakes, keys SRTP
        and aiortc decodes the picture."""
        key = new_key()
        ep = self.endpoint(key, dtls_server=True)
        r = self.run_broadcast(["--url", ep.url, "--source", "test", "--res", "360p", "--duration", "5",
                                "--audio-codec", "opus"], env={"STREAM_KEY": key}, timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        rep = ep.finish()
        print(f"\n--- whip DTLS client: setup {rep['answer_setup']}, decoded {rep['video_sizes']}, audio {rep['audio_seconds']} s",
              file=sys.stderr)
        self.assertEqual(rep["answer_setup"], ["passive"], rep)
        self.assertEqual(rep["errors"], [], rep)
        self.assertGreaterEqual(rep["video_sizes"].get("640x360", 0), 0.9 * 5 * 30, rep)
        self.assertGreaterEqual(rep["audio_seconds"], 4.0, rep)
        self.assertEqual(rep["deletes"], 1, rep)

    @exclusive("the time to give up")
    def test_endpoint_never_returns_exit_4(self):
        """The endpoint killed mid-stream and never restarted: after 10 s of silence the destination
        reconnects once (refused: nothing listens); the run ends with exit 4 and one error line naming
        the downtime, well before its 60 s duration."""
        key = new_key()
        ep = self.endpoint(key)
        proc = subprocess.Popen([str(BROADCAST_BIN), "--url", ep.url, "--source", "test", "--res", "360p",
                                 "--duration", "60", "--reconnect-attempts", "1", "--reconnect-delay", "0.5",
                                 "--quiet"],
                                env={**clean_env(), "STREAM_KEY": key}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(3)
        ep.proc.kill()
        ep.proc.wait()
        killed = time.monotonic()
        out, err = proc.communicate(timeout=40)
        took = time.monotonic() - killed
        text = err.decode(errors="replace")
        self._captured_texts += [out.decode(errors="replace"), text]
        lines = [x for x in text.splitlines() if x.strip()]
        print(f"\n--- whip never returns: exit {proc.returncode} {took:.1f} s after the kill: {lines}", file=sys.stderr)
        self.assertEqual(proc.returncode, 4, text[-2000:])
        self.assertLess(took, 20, f"the run must end soon after the reconnects fail: {took:.1f} s")
        errors = [x for x in lines if x.startswith("broadcast: error:")]
        self.assertEqual(len(errors), 1, text[-2000:])
        down = re.search(r"down for (\d+\.\d) s", errors[0])
        self.assertIsNotNone(down, f"the error must name the downtime: {errors[0]}")
        # Counted from the loss (10 s of silence: until then every UDP send went through), so
        # at least the reconnect delay and no more than the time since the kill.
        self.assertGreater(float(down.group(1)), 0.0, errors[0])
        self.assertLessEqual(float(down.group(1)), took, errors[0])

    @exclusive("the time to come back")
    def test_endpoint_vanishes_then_returns(self):
        key = new_key()
        first = self.endpoint(key)
        stats = self.track_file(self.tmp / "stats.jsonl")
        proc = subprocess.Popen([str(BROADCAST_BIN), "--url", first.url, "--source", "test",
                                 "--res", "360p", "--duration", "22", "--stats-json", str(stats)],
                                env={**clean_env(), "STREAM_KEY": key}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(4)
        first.proc.kill()
        first.proc.wait()
        time.sleep(1)
        second = Endpoint(self.tmp, key, port=first.port, name="second")
        self.addCleanup(second.stop)
        out, err = proc.communicate(timeout=60)
        self._captured_texts += [out.decode(errors="replace"), err.decode(errors="replace")]
        rep = second.finish()
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace")[-2000:])
        self.assertIn("nothing heard from the endpoint", err.decode(errors="replace"))
        self.assertEqual(rep["posts"], 1, f"the reconnect must POST a new offer: {rep}")
        self.assertGreater(rep["video_frames"], 60, f"the stream must resume on the new endpoint: {rep}")
        self.assertEqual(rep["deletes"], 1, rep)
        last = json.loads(stats.read_text().splitlines()[-1])
        self.assertEqual(last["destinations"][0]["reconnects"], 1, last["destinations"])

    @exclusive("the time to exit")
    def test_bad_token_exit_3_no_retry(self):
        good, bad = new_key(), new_key()
        ep = self.endpoint(good)
        start = time.monotonic()
        r = self.run_broadcast(["--url", ep.url, "--source", "test", "--res", "360p", "--duration", "20"],
                               env={"STREAM_KEY": bad}, timeout=60)
        took = time.monotonic() - start
        rep = ep.finish(wait=0.5)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertLess(took, 15, f"a refused token must end the run at once: {took:.1f} s")
        self.assertEqual(rep["posts"], 1, f"401 must not be retried: {rep}")
        self.assertEqual(rep["unauthorized"], 1, rep)
        self.assertTrue(any("401" in line for line in r.stderr_lines()), r.describe())

    def test_dtls_fingerprint_mismatch_exit_3(self):
        """ICE succeeds, but the endpoint's DTLS certificate is not the one its answer names: the
        handshake is refused (exit 3, one line naming the fingerprint, within the connect timeout),
        no media is sent, and the resource is deleted."""
        key = new_key()
        ep = self.endpoint(key, wrong_fingerprint=True)
        start = time.monotonic()
        r = self.run_broadcast(["--url", ep.url, "--source", "test", "--res", "360p", "--duration", "20"],
                               env={"STREAM_KEY": key}, timeout=60)
        took = time.monotonic() - start
        rep = ep.finish(wait=0.5)
        print(f"\n--- whip wrong fingerprint: exit {r.returncode} after {took:.1f} s: {r.stderr_lines()}", file=sys.stderr)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertEqual(len(r.stderr_lines()), 1, r.describe())
        self.assertIn("fingerprint", r.stderr_lines()[0], r.describe())
        self.assertLess(took, 15, f"a refused certificate must end the run at once: {took:.1f} s")
        self.assertEqual((rep["posts"], rep["deletes"]), (1, 1), rep)
        self.assertEqual(rep["video_frames"], 0, rep)

    def test_library_refuses_aac_with_whip(self):
        # The library owns the rule: an embedder (Python over the C ABI) asking for AAC is refused at start.
        code = ("import broadcastkit as bk\n"
                "try:\n"
                "    with bk.Session('http://127.0.0.1:9/whip/live', 'k', width=640, height=360, memory_budget='80M'):\n"
                "        pass\n"
                "except bk.ConfigurationError as e:\n"
                "    print('refused:', e)\n")
        r = subprocess.run([PY, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                           env={**clean_env(), "PYTHONPATH": str(REPO_ROOT / "bindings" / "python")})
        self.assertIn("refused: a WHIP destination needs Opus audio", r.stdout, r.stdout + r.stderr)

    @exclusive("a producer faster than real time")
    def test_python_producer_faster_than_real_time(self):
        """Python over the C ABI, block mode, 150 frames of 640x360 and their Opus audio pushed as
        fast as the library takes them (media time, not wall time): every frame is encoded and
        reaches aiortc, which decodes it at 640x360."""
        key = new_key()
        ep = self.endpoint(key)
        code = ("import json, os, sys\n"
                "import numpy as np\n"
                "import broadcastkit as bk\n"
                "frames = 150\n"
                "img = np.zeros((360, 640, 4), np.uint8)\n"
                "tone = np.zeros((960, 2), np.float32)\n"
                "with bk.Session(sys.argv[1], os.environ['STREAM_KEY'], width=640, height=360, audio_codec='opus',\n"
                "                backpressure='block', memory_budget='80M') as s:\n"
                "    for n in range(frames):\n"
                "        img[:, :, 1] = (n * 7) % 256\n"
                "        img[(n * 2) % 360, :, :] = 255\n"
                "        assert s.send_video(img, pts_ns=n * 1_000_000_000 // 30) == 'accepted'\n"
                "        for k in range(2):\n"
                "            a = n * 2 + k\n"
                "            s.send_audio(tone, pts_ns=a * 20_000_000)\n"
                "st = s.stats()  # after finish: the last frames are encoded at the flush\n"
                "print(json.dumps({'encoded': st['video_frames_encoded'], 'sent': st['video_frames_sent'], 'drops': st['drops'], 'dest': st['destinations']}))\n")
        r = subprocess.run([PY, "-c", code, ep.url], cwd=REPO_ROOT, capture_output=True, text=True, timeout=90,
                           env={**clean_env(), "PYTHONPATH": str(REPO_ROOT / "bindings" / "python"), "STREAM_KEY": key})
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        out = json.loads(r.stdout.strip().splitlines()[-1])
        rep = ep.finish()
        print(f"\n--- whip python block: {out}; decoded {rep['video_sizes']}", file=sys.stderr)
        self.assertEqual(out["encoded"], 150, out)
        self.assertGreaterEqual(rep["video_sizes"].get("640x360", 0), 0.95 * 150, rep)

    @exclusive("a producer faster than real time")
    def test_c_producer_faster_than_real_time(self):
        """A C program over the C ABI (block mode, no audio) pushes 90 frames of 640x360 as fast as
        the library takes them to the WHIP URL: aiortc decodes >= 95% of them at 640x360."""
        key = new_key()
        ep = self.endpoint(key)
        src = self.tmp / "whip_push.c"
        src.write_text(C_PRODUCER)
        exe = self.tmp / "whip_push"
        build = REPO_ROOT / ".build" / "release"
        r = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(src),
                            f"-I{REPO_ROOT / 'Sources' / 'CBroadcastKitABI' / 'include'}", f"-L{build}", "-lbroadcastkit",
                            f"-Wl,-rpath,{build}"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([str(exe), ep.url], capture_output=True, text=True, timeout=90,
                           env={**clean_env(), "STREAM_KEY": key})
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        out = json.loads(r.stdout.strip().splitlines()[0])
        rep = ep.finish()
        print(f"\n--- whip C producer: {out}; decoded {rep['video_sizes']}", file=sys.stderr)
        self.assertEqual((out["accepted"], out["finish"]), (90, 0), out)
        self.assertEqual(set(rep["video_sizes"]), {"640x360"}, rep)
        self.assertGreaterEqual(rep["video_sizes"]["640x360"], 0.95 * 90, rep)
        self.assertEqual(rep["deletes"], 1, rep)

    def test_gstreamer_non_live_named_pipeline(self):
        """gst-launch with a named sink and a non-live source to a WHIP URL (location=http://…):
        the element prerolls, every buffer is encoded, aiortc decodes them."""
        key = new_key()
        ep = self.endpoint(key)
        env = {**clean_env(), "GST_PLUGIN_PATH": str(REPO_ROOT / ".build" / "release" / "gstreamer-1.0"),
               "GST_REGISTRY": str(self.tmp / "registry.bin"), "STREAM_KEY": key}
        r = subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "pattern=ball", "num-buffers=90", "!",
                            "video/x-raw,width=640,height=360,framerate=30/1", "!", "broadcastsink", "name=out",
                            f"location={ep.url}", "audio-codec=none", "memory-budget=80M"],
                           env=env, capture_output=True, text=True, timeout=90)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        rep = ep.finish()
        print(f"\n--- whip gstreamer: decoded {rep['video_sizes']}, posts {rep['posts']}, deletes {rep['deletes']}",
              file=sys.stderr)
        self.assertGreaterEqual(rep["video_sizes"].get("640x360", 0), 0.95 * 90, rep)
        self.assertEqual(rep["deletes"], 1, rep)

    def test_aac_requested_is_refused(self):
        key = new_key()
        r = self.run_broadcast(["--url", "http://127.0.0.1:9/whip/live", "--source", "test", "--audio-codec", "aac",
                                "--duration", "1"], env={"STREAM_KEY": key}, timeout=30)
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertEqual(len(r.stderr_lines()), 1, r.describe())
        self.assertIn("Opus", r.stderr)


# 90 frames of 640x360 BGRx (a moving bar), block mode, no audio, as fast as the library takes them;
# prints {"accepted", "finish"}. The key comes from $STREAM_KEY and is wiped after the copy.
C_PRODUCER = r"""
#include <broadcastkit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2 || !getenv("STREAM_KEY")) { fprintf(stderr, "usage: STREAM_KEY=... whip_push URL\n"); return 2; }
    const int w = 640, h = 360, n = 90;
    bk_config *cfg = bk_config_new();
    if (bk_config_set_video(cfg, w, h, 30, 1500) != BK_OK || bk_config_set_audio(cfg, BK_AUDIO_NONE, 0) != BK_OK
        || bk_config_set_backpressure(cfg, BK_BACKPRESSURE_BLOCK) != BK_OK
        || bk_config_set_memory_budget(cfg, 80 * 1024 * 1024) != BK_OK
        || bk_config_add_destination(cfg, argv[1], getenv("STREAM_KEY")) != BK_OK) {
        fprintf(stderr, "config: %s\n", bk_config_last_error(cfg));
        return 2;
    }
    bk_session *s = bk_session_new(cfg);
    bk_config_free(cfg);
    if (bk_session_start(s) != BK_OK) { fprintf(stderr, "start: %s\n", bk_session_last_error(s)); return 3; }
    unsigned char *px = malloc((size_t)w * h * 4);
    int accepted = 0;
    int64_t t0 = bk_now_ns();
    for (int i = 0; i < n; i++) {
        memset(px, 0x30, (size_t)w * h * 4);
        for (int y = 0; y < h; y++) memset(px + ((size_t)y * w + (size_t)(i * 6) % (w - 32)) * 4, 0xff, 32 * 4);
        bk_video_frame f = { .width = w, .height = h, .format = BK_PIXEL_BGRX, .planes = { px },
                             .strides = { w * 4 }, .plane_sizes = { (int64_t)w * h * 4 },
                             .pts_ns = t0 + (int64_t)i * 33333333 };
        if (bk_session_process_video(s, &f) == BK_ACCEPTED) accepted++;
    }
    bk_status fin = bk_session_finish(s);
    if (fin != BK_OK) fprintf(stderr, "finish: %s\n", bk_session_last_error(s));
    printf("{\"accepted\": %d, \"finish\": %d}\n", accepted, fin);
    bk_session_free(s);
    free(px);
    return 0;
}
"""
