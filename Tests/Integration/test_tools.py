"""Tests of the analysis tools (tools/avsync.py, tools/throttle_proxy.py, tools/soak_plot.py)
on synthetic inputs made here with ffmpeg and plain sockets.

Run: .venv/bin/python -m pytest Tests/Integration/test_tools.py
  or .venv/bin/python -m unittest Tests/Integration/test_tools.py
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
import unittest

from bktools import avsync
from support import exclusive  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

PY = sys.executable
AVSYNC = [PY, os.path.join(REPO, "tools", "avsync.py")]
PROXY = [PY, os.path.join(REPO, "tools", "throttle_proxy.py")]


def make_clip(path: str, seconds: int = 6, offset_expr: str = "0.040", acodec: str = "aac",
              beep_amp: float = 0.5, tone_amp: float = 0.2, fps: int = 30,
              extra: list[str] | None = None, beep_gate: str = "1",
              silent: tuple[float, float] | None = None) -> None:
    """A test-source look-alike: dark moving video with a white frame at every whole second
    k >= 1, 440 + 660 Hz background tones and a 50 ms 1 kHz beep at k + offset_expr(k)
    seconds (offset_expr and beep_gate may use K, the whole second; a beep sounds where
    beep_gate is non-zero). `silent` = (from, to) s mutes all audio there."""
    off = offset_expr.replace("K", "floor(t)")
    gate = beep_gate.replace("K", "floor(t)")
    video = (f"color=c=black:s=320x240:r={fps}:d={seconds},format=yuv420p,"
             f"geq=lum='if(gt(N\\,0)*eq(mod(N\\,{fps})\\,0)\\,235\\,50+20*sin(N/5))'"
             f":cb=128:cr=128")
    # The beep is gated on the fractional second so it can be shifted per event.
    frac = "(t-floor(t))"
    mute = f"(1-gte(t\\,{silent[0]})*lt(t\\,{silent[1]}))" if silent else "1"
    audio = (f"aevalsrc='({tone_amp}*sin(2*PI*440*t)+{tone_amp}*sin(2*PI*660*t)"
             f"+{beep_amp}*sin(2*PI*1000*t)*gte(t\\,1)*({gate})*gte({frac}-({off})\\,0)"
             f"*lt({frac}-({off})\\,0.05))*{mute}':s=48000:d={seconds}")
    codec = {"aac": ["-c:a", "aac", "-b:a", "128k"],
             "opus": ["-c:a", "libopus", "-b:a", "96k"]}[acodec]
    cmd = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", video,
           "-f", "lavfi", "-i", audio, "-c:v", "libx264", "-preset", "veryfast", "-g", "60",
           "-bf", "0",
           *codec, *(extra or []), path]
    subprocess.run(cmd, check=True)


def make_gap_clip(path: str, gap: tuple[float, float], offset_expr: str = "0",
                  beep_gate: str = "1", seconds: int = 8) -> None:
    """What the broadcast sends around a pause of every source: no video frames in the gap,
    silence in the audio (the mixer fills it), and a keyframe at resume. The flashes in the
    gap are not sent and their beeps are muted, so every remaining flash should pair."""
    raw = path + ".raw.flv"
    make_clip(raw, seconds=seconds, offset_expr=offset_expr, beep_gate=beep_gate, silent=gap,
              extra=["-force_key_frames", str(gap[1])])
    import av

    with av.open(raw) as src, av.open(path, "w", format="flv") as dst:
        vi, ai = src.streams.video[0], src.streams.audio[0]
        vo = dst.add_stream_from_template(vi)
        ao = dst.add_stream_from_template(ai)
        for pkt in src.demux(vi, ai):
            if pkt.dts is None:
                continue
            t = float(pkt.pts * pkt.time_base)
            if pkt.stream is vi and gap[0] - 0.001 <= t < gap[1] - 0.001:
                continue
            pkt.stream = vo if pkt.stream is vi else ao
            dst.mux(pkt)
    os.unlink(raw)


def run_avsync(*args: str) -> tuple[int, dict | None, str]:
    p = subprocess.run([*AVSYNC, *args], capture_output=True, text=True, timeout=120)
    data = None
    if "--json" in args and p.stdout.strip():
        data = json.loads(p.stdout)
    return p.returncode, data, p.stdout + p.stderr


@unittest.skipIf(shutil.which("ffmpeg") is None, "ffmpeg missing")
class AVSyncTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="avsync-test-")
        cls.aac40 = os.path.join(cls.tmp, "aac40.flv")
        make_clip(cls.aac40, offset_expr="0.040", acodec="aac")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_aac_flv_measures_known_offset(self):
        rc, data, out = run_avsync(self.aac40, "--json", "--tolerance-ms", "45")
        self.assertEqual(rc, 0, out)
        s = data["summary"]
        self.assertEqual(s["events"], 5, out)  # flashes at 1..5 s of a 6 s clip
        self.assertAlmostEqual(s["mean_ms"], 40.0, delta=1.5)
        self.assertLess(s["stddev_ms"], 1.0)
        self.assertLess(abs(s["max_abs_ms"] - 40.0), 1.5)
        audio = [st for st in data["streams"] if st["kind"] == "audio"][0]
        self.assertEqual(audio["gaps"], 0)
        self.assertEqual(audio["non_increasing"], 0)

    def test_tolerance_decides_exit_code(self):
        rc, _, out = run_avsync(self.aac40, "--tolerance-ms", "35")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL", out)
        rc, _, out = run_avsync(self.aac40, "--tolerance-ms", "45")
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS", out)

    def test_opus_negative_offset_and_weak_beep(self):
        # NUT: ffmpeg 5.1's FLV muxer cannot write Opus, and its Matroska muxer shifts the
        # video by the Opus codec delay, which would move the truth we compare against.
        path = os.path.join(self.tmp, "opus.nut")
        # Beep 25 ms early, and quieter than each background tone.
        make_clip(path, offset_expr="-0.025+1", acodec="opus", beep_amp=0.15, tone_amp=0.3)
        rc, data, out = run_avsync(path, "--json")
        # Beeps at 1.975..5.975 s: the flash at 1 s has none within 500 ms, and the beep
        # at 5.975 s no flash (the clip ends at 6 s). NUT starts at 6.5 ms.
        self.assertEqual(rc, 1, out)
        lone = data["unpaired"]
        self.assertEqual((len(lone["flashes"]), len(lone["beeps"])), (1, 1), out)
        self.assertAlmostEqual(lone["flashes"][0], 1.0, delta=0.01)
        self.assertAlmostEqual(lone["beeps"][0], 5.975, delta=0.01)
        rc, data, out = run_avsync(path, "--json", "--expect-unpaired", "2")
        self.assertEqual(rc, 0, out)
        self.assertEqual(data["summary"]["events"], 4, out)
        # Beeps at k+0.975 pair with the flash at k+1 (nearest): -25 ms.
        self.assertAlmostEqual(data["summary"]["mean_ms"], -25.0, delta=1.5)

    def test_drift_slope(self):
        path = os.path.join(self.tmp, "drift.flv")
        # The offset grows 2 ms per second: 7200 ms/hour.
        make_clip(path, seconds=10, offset_expr="0.002*K", acodec="aac")
        rc, data, out = run_avsync(path, "--json", "--tolerance-ms", "50")
        self.assertEqual(rc, 0, out)
        s = data["summary"]
        self.assertEqual(s["events"], 9, out)
        self.assertAlmostEqual(s["drift_ms_per_hour"], 7200.0, delta=400.0)
        self.assertAlmostEqual(s["max_abs_ms"], 18.0, delta=1.5)

    def test_audio_gap_detected(self):
        import av

        path = os.path.join(self.tmp, "gap.flv")
        # Remux without ~0.5 s of audio packets starting at 2.3 s.
        with av.open(self.aac40) as src, av.open(path, "w", format="flv") as dst:
            vi, ai = src.streams.video[0], src.streams.audio[0]
            vo = dst.add_stream_from_template(vi)
            ao = dst.add_stream_from_template(ai)
            for pkt in src.demux(vi, ai):
                if pkt.dts is None:
                    continue
                t = float(pkt.pts * pkt.time_base)
                if pkt.stream is ai and 2.3 <= t < 2.8:
                    continue
                pkt.stream = vo if pkt.stream is vi else ao
                dst.mux(pkt)
        rc, data, out = run_avsync(path, "--json", "--tolerance-ms", "45")
        self.assertEqual(rc, 1, out)
        audio = [st for st in data["streams"] if st["kind"] == "audio"][0]
        self.assertEqual(audio["gaps"], 1, out)
        self.assertAlmostEqual(audio["gap_total_ms"], 500.0, delta=25.0)
        rc, _, out = run_avsync(path, "--tolerance-ms", "45", "--allow-gaps")
        self.assertEqual(rc, 0, out)

    def test_gap_all_paired_passes(self):
        path = os.path.join(self.tmp, "gap-ok.flv")
        make_gap_clip(path, gap=(3.0, 5.0))
        rc, data, out = run_avsync(path, "--json")
        self.assertEqual(rc, 0, out)
        # Flashes 1, 2, 5, 6, 7: all with their beep.
        self.assertEqual(data["summary"]["events"], 5, out)
        self.assertEqual(data["unpaired"], {"flashes": [], "beeps": []}, out)
        self.assertLess(data["summary"]["max_abs_ms"], 3.0, out)

    def test_gap_late_first_beep_fails(self):
        # The first beep after the pause is 47 ms late (the audio resumes after the video).
        path = os.path.join(self.tmp, "gap-late.flv")
        make_gap_clip(path, gap=(3.0, 5.0), offset_expr="0.047*eq(K\\,5)")
        rc, data, out = run_avsync(path, "--json")
        self.assertEqual(rc, 1, out)
        late = [e for e in data["events"] if abs(e["video_s"] - 5.0) < 0.05]
        self.assertEqual(len(late), 1, out)
        self.assertAlmostEqual(late[0]["offset_ms"], 47.0, delta=2.0)
        self.assertAlmostEqual(data["summary"]["max_abs_ms"], 47.0, delta=2.0)
        self.assertTrue(any("max |offset|" in r for r in data["reasons"]), out)

    def test_gap_lost_first_beep_is_reported(self):
        # The first beep after the pause is lost: the old checker dropped the flash silently
        # and passed on the others.
        path = os.path.join(self.tmp, "gap-lost.flv")
        make_gap_clip(path, gap=(3.0, 5.0), beep_gate="1-eq(K\\,5)")
        rc, data, out = run_avsync(path, "--json")
        self.assertEqual(rc, 1, out)
        self.assertEqual(data["summary"]["events"], 4, out)
        self.assertEqual(len(data["unpaired"]["flashes"]), 1, out)
        self.assertAlmostEqual(data["unpaired"]["flashes"][0], 5.0, delta=0.05)
        self.assertEqual(data["unpaired"]["beeps"], [], out)
        self.assertTrue(any("flash at 5.0" in r and "has no beep" in r for r in data["reasons"]), out)
        rc, _, out = run_avsync(path)
        self.assertIn("unpaired flash video=    5.02", out)
        self.assertIn("FAIL", out)
        # Stating the expected count makes it pass; a wrong count still fails.
        rc, _, out = run_avsync(path, "--expect-unpaired", "1")
        self.assertEqual(rc, 0, out)
        rc, _, out = run_avsync(path, "--expect-unpaired", "2")
        self.assertEqual(rc, 1, out)

    def test_plot_written(self):
        png = os.path.join(self.tmp, "offsets.png")
        rc, _, out = run_avsync(self.aac40, "--tolerance-ms", "45", "--plot", png)
        self.assertEqual(rc, 0, out)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_usage_and_decode_errors_exit_2(self):
        rc, _, _ = run_avsync()
        self.assertEqual(rc, 2)
        rc, _, out = run_avsync(os.path.join(self.tmp, "missing.flv"))
        self.assertEqual(rc, 2, out)
        junk = os.path.join(self.tmp, "junk.flv")
        with open(junk, "wb") as f:
            f.write(b"FLV\x01garbage" * 10)
        rc, _, out = run_avsync(junk)
        self.assertEqual(rc, 2, out)

    def test_no_events_fails(self):
        path = os.path.join(self.tmp, "nobeep.flv")
        make_clip(path, beep_amp=0.0)
        rc, data, out = run_avsync(path, "--json")
        self.assertEqual(rc, 1, out)
        self.assertEqual(data["summary"]["events"], 0)


class TimestampCheckTests(unittest.TestCase):
    def test_non_increasing_and_negative_counted(self):
        st = avsync.StreamTiming("video")
        for t in (-0.01, 0.0, 0.033, 0.033, 0.02, 0.1):
            st.observe(t)
        self.assertEqual(st.negative, 1)
        self.assertEqual(st.non_increasing, 2)

    def test_leading_audio_pre_roll_is_not_a_negative_timestamp(self):
        # An MP4 clip's AAC pre-roll sits before 0 by its edit list; a negative later is an error.
        st = avsync.StreamTiming("audio")
        for t in (-0.043, -0.021, 0.0, 0.021, -0.5):
            st.observe(t)
        self.assertEqual((st.pre_roll, st.negative), (2, 1))

    def test_pairing_uses_each_beep_once_within_window(self):
        pairs = avsync.pair_events([1.0, 2.0, 3.0], [1.02, 1.03, 3.7])
        self.assertEqual(pairs, [(1.0, 1.02)])
        lone = avsync.unpaired_events([1.0, 2.0, 3.0], [1.02, 1.03, 3.7], pairs)
        self.assertEqual(lone, {"flashes": [2.0, 3.0], "beeps": [1.03, 3.7]})


class Sink:
    """A TCP server that reads as fast as it can and timestamps what arrives."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.samples: list[tuple[float, int]] = []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        conn, _ = self.sock.accept()
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                self.samples.append((time.monotonic(), len(data)))

    def bytes_between(self, a: float, b: float) -> int:
        return sum(n for t, n in self.samples if a <= t < b)


@exclusive("throughput against a schedule")
class ThrottleProxyTests(unittest.TestCase):
    def test_throughput_follows_schedule(self):
        kbps = 800.0
        sink = Sink()
        status = tempfile.mktemp(suffix=".json")
        proc = subprocess.Popen(
            [*PROXY, "--target-port", str(sink.port), "--throttle-kbps", str(kbps),
             "--throttle-from", "1", "--throttle-for", "3", "--status-json", status],
            stdout=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            self.assertTrue(line.startswith("listening on 127.0.0.1:"), line)
            port = int(line.strip().rsplit(":", 1)[1])
            t0 = time.monotonic()  # the proxy's clock started just before its line
            client = socket.create_connection(("127.0.0.1", port))
            payload = b"x" * 16384
            sent_at_2s = None
            while time.monotonic() - t0 < 5.0:
                client.sendall(payload)
                if sent_at_2s is None and time.monotonic() - t0 >= 2.0:
                    sent_at_2s = sink.bytes_between(0, time.monotonic())
            client.close()
            # Throttled window [1, 4) s; measure its steady middle, away from the edges.
            got = sink.bytes_between(t0 + 1.5, t0 + 3.8)
            rate_kbps = got * 8 / 1000.0 / 2.3
            self.assertAlmostEqual(rate_kbps, kbps, delta=0.15 * kbps,
                                   msg=f"throttled rate {rate_kbps:.0f} kbit/s")
            # Unthrottled before and after: far above the limit.
            before = sink.bytes_between(t0, t0 + 0.9) * 8 / 1000.0 / 0.9
            after = sink.bytes_between(t0 + 4.2, t0 + 5.0) * 8 / 1000.0 / 0.8
            self.assertGreater(before, 10 * kbps)
            self.assertGreater(after, 10 * kbps)
            with open(status) as f:
                st = json.load(f)
            self.assertEqual(st["connections"], 1)
            self.assertGreater(st["bytes_client_to_server"], 0)
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=10)
            if os.path.exists(status):
                os.unlink(status)
        self.assertIn("throttling starts", out)
        self.assertIn("throttling stops", out)
        self.assertEqual(proc.returncode, 0)

    def test_backpressure_reaches_sender(self):
        """While throttled, the sender cannot run far ahead of what the server received."""
        sink = Sink()
        proc = subprocess.Popen(
            [*PROXY, "--target-port", str(sink.port), "--throttle-kbps", "400",
             "--throttle-from", "0"], stdout=subprocess.PIPE, text=True)
        try:
            port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
            client = socket.create_connection(("127.0.0.1", port))
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32768)
            client.setblocking(False)
            sent = 0
            end = time.monotonic() + 2.0
            while time.monotonic() < end:
                try:
                    sent += client.send(b"y" * 8192)
                except BlockingIOError:
                    time.sleep(0.005)
            received = sink.bytes_between(0, time.monotonic())
            client.close()
            # 2 s at 400 kbit/s is ~100 KB; kernel buffers on the way hold a bounded amount.
            self.assertLess(received, 140_000)
            self.assertLess(sent - received, 400_000, f"sent {sent}, received {received}")
        finally:
            proc.terminate()
            proc.communicate(timeout=10)


def _soak_dir(tmp: str, rss_rows, exit_code=0, seconds=180, hwm_kb=20000, probe_rc=0,
              oom_kill=0, stats=None) -> str:
    d = tempfile.mkdtemp(dir=tmp)
    meta = {"minutes": seconds / 60, "seconds": seconds, "res": "720p", "fps": 30,
            "video_bitrate_kbps": 2000, "audio_codec": "aac", "cap_bytes": 50 * 1048576,
            "cap_arg": "50M", "cgroup_version": 1, "throttle_kbps": 1000,
            "throttle_from_s": 60, "throttle_for_s": 60, "proxy_start_epoch": 1000.0,
            "start_epoch": 1000.5, "end_epoch": 1000.5 + seconds, "exit_code": exit_code,
            "timed_out": 0, "max_hwm_kb": hwm_kb, "cgroup_failcnt": 0, "cgroup_under_oom": 0,
            "cgroup_oom_kill": oom_kill, "cgroup_peak_bytes": 30 * 1048576,
            "recording": "x.flv", "probe_rc": probe_rc}
    with open(os.path.join(d, "soak.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(d, "rss.csv"), "w") as f:
        if rss_rows and len(rss_rows[0]) == 3:  # (t, rss_kb, anon_kb): the sampler's split columns
            f.write("t_s,rss_kb,hwm_kb,cgroup_bytes,anon_kb,shmem_kb\n")
            for t, rss, anon in rss_rows:
                f.write(f"{t},{rss},{hwm_kb},{rss * 1024},{anon},0\n")
        else:
            f.write("t_s,rss_kb,hwm_kb,cgroup_bytes\n")
            for t, rss in rss_rows:
                f.write(f"{t},{rss},{hwm_kb},{rss * 1024}\n")
    with open(os.path.join(d, "stats.jsonl"), "w") as f:
        for line in stats or []:
            f.write(json.dumps(line) + "\n")
    return d


class SoakPlotTests(unittest.TestCase):
    PLOT = [PY, os.path.join(REPO, "tools", "soak_plot.py")]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="soakplot-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def judge(self, d):
        p = subprocess.run([*self.PLOT, d], capture_output=True, text=True, timeout=60)
        with open(os.path.join(d, "summary.json")) as f:
            return p.returncode, json.load(f), p.stdout

    def flat(self, growth_kb=0):
        return [(t, 20000 + (growth_kb if t > 150 else 0)) for t in range(0, 181, 10)]

    def test_clean_run_passes_and_reports_throttle_bitrates(self):
        stats = [{"time_s": t, "kbps": 900 if 59.5 <= t < 119.5 else 2100, "video_kbps": 1,
                  "drops": {"congestion_p_frame": 12, "encoder_busy": 0}} for t in range(1, 181)]
        d = _soak_dir(self.tmp, self.flat(), stats=stats)
        rc, summary, out = self.judge(d)
        self.assertEqual(rc, 0, out)
        self.assertIn("PASS", out)
        self.assertAlmostEqual(summary["kbps_during_throttle"], 900, delta=40)
        self.assertAlmostEqual(summary["kbps_after_throttle"], 2100, delta=1)
        self.assertEqual(summary["drops"]["congestion_p_frame"], 12)
        self.assertIn("congestion_p_frame=12", out)
        with open(os.path.join(d, "rss.png"), "rb") as f:
            self.assertEqual(f.read(4), b"\x89PNG")

    def test_growth_over_1mb_fails(self):
        rc, summary, out = self.judge(_soak_dir(self.tmp, self.flat(growth_kb=1100)))
        self.assertEqual(rc, 1, out)
        self.assertEqual(summary["growth_kb"], 1100)
        self.assertIn("grew", out)
        rc, _, out = self.judge(_soak_dir(self.tmp, self.flat(growth_kb=900)))
        self.assertEqual(rc, 0, out)

    def test_growth_judged_on_anon_and_shmem_when_sampled(self):
        # 3 MB of file-backed pages coming back (code after the start-up release) with flat anon
        # memory passes; 1.1 MB of anon growth fails, whatever the file pages do.
        rows = [(t, 20000 + (3000 if t > 150 else 0), 15000) for t in range(0, 181, 10)]
        rc, summary, out = self.judge(_soak_dir(self.tmp, rows))
        self.assertEqual(rc, 0, out)
        self.assertEqual((summary["growth_kb"], summary["growth_of"], summary["rss_growth_kb"]), (0, "anon+shmem", 3000))
        rows = [(t, 20000, 15000 + (1100 if t > 150 else 0)) for t in range(0, 181, 10)]
        rc, summary, out = self.judge(_soak_dir(self.tmp, rows))
        self.assertEqual(rc, 1, out)
        self.assertIn("anon+shmem grew 1.07 MB", out)

    def test_growth_not_judged_on_short_runs(self):
        rows = [(t, 20000 + 5000 * (t > 60)) for t in range(0, 121, 10)]
        rc, _, out = self.judge(_soak_dir(self.tmp, rows, seconds=120))
        self.assertEqual(rc, 0, out)

    def test_peak_at_cap_fails(self):
        rc, _, out = self.judge(_soak_dir(self.tmp, self.flat(), hwm_kb=50 * 1024))
        self.assertEqual(rc, 1, out)
        self.assertIn("reached the cap", out)

    def ring_dir(self, hwm_after_fill_kb=0, plan_kb=10240, ref_kb=None, x264=("lean", "lean"), rate_kb_s=200):
        """A replay soak (--replay-seconds 60): what was sent reaches the plan's ring line at
        t = plan_kb / rate_kb_s; VmHWM climbs to 30000 KiB by t=60 and grows by `hwm_after_fill_kb`
        at t=150."""
        stats = [{"time_s": t, "kbps": 1, "video_kbps": 1, "drops": {},
                  "video_bytes_sent": t * rate_kb_s * 1024, "audio_bytes_sent": 0} for t in range(1, 181)]
        hwm = [(t, min(30000, 20000 + t * 200) + (hwm_after_fill_kb if t >= 150 else 0)) for t in range(0, 181, 10)]
        d = _soak_dir(self.tmp, self.flat(), stats=stats, hwm_kb=hwm[-1][1])
        with open(os.path.join(d, "rss.csv"), "w") as f:
            f.write("t_s,rss_kb,hwm_kb,cgroup_bytes,anon_kb,shmem_kb\n")
            for t, h in hwm:
                f.write(f"{t},{h},{h},{h * 1024},15000,0\n")
        with open(os.path.join(d, "soak.json")) as f:
            meta = json.load(f)
        meta.update(replay_seconds=60, plan_ring_kb=plan_kb, ring_reference=int(ref_kb is not None),
                    reference_max_hwm_kb=ref_kb, reference_rc=0 if ref_kb is not None else None,
                    plan_x264=x264[0], reference_plan_x264=x264[1])
        with open(os.path.join(d, "soak.json"), "w") as f:
            json.dump(meta, f)
        return d

    def test_ring_vmhwm_flat_after_the_ring_filled(self):
        rc, summary, out = self.judge(self.ring_dir(hwm_after_fill_kb=900))
        self.assertEqual(rc, 0, out)
        self.assertEqual(summary["ring_filled_s"], 52)          # 10240 KiB at 200 KiB/s
        self.assertEqual(summary["hwm_growth_after_ring_full_kb"], 900)
        rc, summary, out = self.judge(self.ring_dir(hwm_after_fill_kb=1100))
        self.assertEqual(rc, 1, out)
        self.assertIn("after the replay ring filled", out)
        rc, _, out = self.judge(self.ring_dir(rate_kb_s=60))     # fills at 171 s: too late to judge
        self.assertEqual(rc, 1, out)
        self.assertIn("had not filled", out)

    def test_ring_plan_line_against_the_reference(self):
        # Growth from the ring: 30000 - 20000 = 10000 KiB; the plan says 10240 (2.4% off).
        rc, summary, out = self.judge(self.ring_dir(ref_kb=20000))
        self.assertEqual(rc, 0, out)
        self.assertEqual(summary["ring_growth_kb"], 10000)
        self.assertIn("plan line / growth 1.024", out)
        rc, _, out = self.judge(self.ring_dir(ref_kb=21000))   # 9000: the plan is 13.8% over
        self.assertEqual(rc, 1, out)
        self.assertIn("not within 10%", out)
        rc, _, out = self.judge(self.ring_dir(ref_kb=20000, x264=("lean", "veryfast")))
        self.assertEqual(rc, 1, out)
        self.assertIn("changes the x264 configuration", out)

    def test_oom_kill_and_bad_recording_and_exit_code_fail(self):
        rc, summary, out = self.judge(_soak_dir(self.tmp, self.flat(), exit_code=137, oom_kill=1))
        self.assertEqual(rc, 1, out)
        self.assertTrue(any("SIGKILL" in r for r in summary["reasons"]), out)
        self.assertTrue(any("OOM" in r for r in summary["reasons"]), out)
        rc, _, out = self.judge(_soak_dir(self.tmp, self.flat(), probe_rc=1))
        self.assertEqual(rc, 1, out)
        self.assertIn("recording failed", out)
        rc, _, out = self.judge(_soak_dir(self.tmp, self.flat(), exit_code=4))
        self.assertEqual(rc, 1, out)
        self.assertIn("exited with status 4", out)



class ToolkitTests(unittest.TestCase):
    """tools/bktools, the one measurement package (issue 25)."""

    @exclusive("a child's VmHWM and CPU time")
    def test_run_measured_reads_the_pipes_while_it_waits(self):
        # A child that writes more than a pipe holds (64 KiB) to both pipes: the old run.py
        # helper waited without reading them, so the child blocked until the timeout killed it.
        from bktools.procmeasure import run_measured
        code = "import sys; sys.stderr.write('e' * 1000000); sys.stdout.write('o' * 1000000)"
        t0 = time.monotonic()
        r = run_measured([sys.executable, "-c", code], timeout=60)
        self.assertEqual(r["rc"], 0, r["stderr"][-200:])
        self.assertEqual(len(r["stdout"]), 1000000)
        self.assertLess(time.monotonic() - t0, 60, "the child was killed by the timeout")
        self.assertGreater(r["maxrss_bytes"], 1 << 20)   # the child's VmHWM, from /usr/bin/time
        self.assertGreater(r["cpu_s"], 0)

    def test_one_plan_reader_reads_the_cli(self):
        from bktools import plan as memplan
        bin_ = Path(REPO) / ".build" / "release" / "broadcast"
        p = memplan.read_plan(bin_, ["--res", "720p", "--source", "test", "--replay-seconds", "30",
                                     "--no-publish"])
        self.assertTrue(p.fits, p.text)
        self.assertIsNotNone(p.x264, p.text)
        self.assertIsNotNone(p.ring_mb, p.text)
        self.assertEqual(p.headroom_fraction, 0.04, p.text)
        self.assertEqual(p.budget_mb, 50.0, p.text)
        self.assertIsNotNone(p.doc, "read from --print-memory-plan=json")
        # The lines (bytes, nothing rounded) add up to the total.
        self.assertAlmostEqual(sum(p.lines.values()), p.total_mb, places=6)
        self.assertEqual(p.ring_kib, p.ring_bytes // 1024)
        # The soak's reference budget leaves the same room without the ring: budget - ring / (1 - 4%).
        budget = 50 << 20
        ref = memplan.reference_budget_bytes(p, budget)
        self.assertEqual(budget - ref, round(p.ring_bytes / 0.96))
        # The text form says the same (what older benchmark results stored): MiB to one decimal.
        t = subprocess.run([str(bin_), "--res", "720p", "--source", "test", "--replay-seconds", "30",
                            "--no-publish", "--print-memory-plan"], capture_output=True, text=True, timeout=60)
        text = memplan.parse_plan(t.stdout + t.stderr)
        self.assertEqual(text.x264, p.x264)
        self.assertEqual(text.headroom_fraction, p.headroom_fraction)
        self.assertAlmostEqual(text.ring_mb, p.ring_mb, delta=0.05)
        # The soak's command-line reader gives the exact KiB from the JSON file.
        d = Path(tempfile.mkdtemp(prefix="plan-reader-"))
        self.addCleanup(shutil.rmtree, d, True)
        f = d / "plan.json"
        f.write_text(json.dumps(p.doc) + "\n")
        r = subprocess.run([sys.executable, "-m", "bktools.plan", "ring-kib", str(f)], capture_output=True,
                           text=True, timeout=30, env=dict(os.environ, PYTHONPATH=str(Path(REPO) / "tools")))
        self.assertEqual(r.stdout.strip(), str(p.ring_bytes // 1024), r.stderr)

    def test_report_verdicts_come_from_the_targets_table(self):
        from bktools import targets
        self.assertTrue(targets.PIPELINE_CPU_VS_FLOOR.met(1.05))
        self.assertFalse(targets.PIPELINE_CPU_VS_FLOOR.met(1.051))
        self.assertIsNone(targets.PEAK_RSS_720P_MIB.met(None))
        self.assertTrue(targets.PSNR_VS_FFMPEG_DB.met(-0.30))
        self.assertFalse(targets.PSNR_VS_FFMPEG_DB.met(-0.40))
        ok = targets.sync_verdict(True, 4.0, 1.0, 5.0)
        self.assertEqual((ok.ok, ok.max_exceeded, ok.drift_exceeded), (True, False, False))
        over = targets.sync_verdict(True, 6.0, 6.0, 5.0)
        self.assertEqual((over.ok, over.max_exceeded, over.drift_exceeded), (False, True, True))
        self.assertFalse(targets.sync_verdict(False, 1.0, 0.0, 5.0).ok)
        self.assertIsNone(targets.sync_verdict(None, 1.0, 0.0, 5.0).ok)
        # report.py states no limit of its own: every comparison in its Targets section goes through bktools.targets.
        src = (Path(REPO) / "tools" / "bench" / "report.py").read_text()
        body = src[src.index("def _targets("):src.index("def _floor(")]
        self.assertNotRegex(body, r"(<=|>=|<|>) *[0-9.]+[,)]", "a verdict with a literal limit in report.py")

    def test_targets_are_the_requirements(self):
        from bktools import targets
        self.assertEqual((targets.SYNC_CLEAN_MAX_MS, targets.SYNC_IMPAIRED_MAX_MS, targets.DRIFT_MAX_MS_PER_HOUR),
                         (5.0, 20.0, 5.0))

    def test_drift_check_resolves_what_the_run_can(self):
        # 10 minutes of pairs drifting 60 ms/hour with 1 ms jitter: caught; the same jitter with
        # no drift: passes; 2 pairs: cannot judge.
        import random
        rnd = random.Random(7)
        drifting = [(t, t + (60.0 * t / 3600.0 + rnd.uniform(-1, 1)) / 1000.0) for t in range(1, 600)]
        steady = [(t, t + rnd.uniform(-1, 1) / 1000.0) for t in range(1, 600)]
        self.assertTrue(avsync.drift_exceeds(avsync.summarize(drifting), 5.0))
        self.assertFalse(avsync.drift_exceeds(avsync.summarize(steady), 5.0))
        self.assertFalse(avsync.drift_exceeds(avsync.summarize(steady[:2]), 5.0))


if __name__ == "__main__":
    unittest.main()


class RunnerScheduleTests(unittest.TestCase):
    """run.py's admission rules (docs/TESTING.md): a measurement never shares more than half the
    cores, an alone test shares nothing, the fuzz step keeps exclusive tests out, and the times file
    carries each test's load."""

    @staticmethod
    def unit(load: float, exclusive: str = "", alone: str = "", seconds: float = 10.0):
        import run
        return run.Unit([f"t.{load}.{exclusive}.{alone}"], exclusive, alone,
                        {f"t.{load}.{exclusive}.{alone}": (seconds, load)})

    def test_quiet_share_beside_an_exclusive_test(self):
        import run
        soak = self.unit(0.3, exclusive="VmHWM")
        light, heavy = self.unit(0.5), self.unit(0.8)
        self.assertTrue(run.admissible(light, [soak], 2))        # 0.8 of 1 core
        self.assertFalse(run.admissible(heavy, [soak], 2))       # 1.1 > half of 2 cores
        self.assertFalse(run.admissible(self.unit(0.8, exclusive="sync"), [light], 2))
        self.assertTrue(run.admissible(heavy, [light], 2))       # no measurement: up to 1.5 of 2 cores
        self.assertFalse(run.admissible(self.unit(1.1), [light], 2))
        self.assertTrue(run.admissible(self.unit(1.6), [], 2))   # nothing runs: it has the machine
        self.assertTrue(run.admissible(self.unit(0.2, exclusive="VmHWM"), [soak, self.unit(0.4)], 2))
        self.assertFalse(run.admissible(self.unit(0.4, exclusive="VmHWM"), [soak, self.unit(0.4)], 2))
        self.assertTrue(run.admissible(self.unit(0.5, exclusive="sync"), [self.unit(0.4)], 4))  # 0.9 of 2 (of 4)

    def test_batch_units_share_the_machine_only_with_each_other(self):
        import run
        build, install = self.unit(1.0), self.unit(1.2)
        self.assertTrue(build.batch and install.batch)
        self.assertTrue(run.admissible(install, [build], 2))                # one a core
        self.assertFalse(run.admissible(self.unit(0.95), [build, install], 2))  # no third on 2 cores
        self.assertFalse(run.admissible(install, [self.unit(0.4)], 2))      # beside a real-time stream: the load rule (1.6)
        self.assertFalse(run.admissible(self.unit(0.6), [build], 2))
        self.assertFalse(run.admissible(install, [self.unit(0.3, exclusive="sync")], 2))
        self.assertFalse(self.unit(1.0, exclusive="CPU").batch)
        # A guessed load (tests too short to have one, no unit record) is not batch work.
        guessed = run.Unit(["g.T.test_short"], "", "", {"g.T.test_short": (0.2, None)})
        self.assertEqual(guessed.load, run.UNKNOWN_LOAD)
        self.assertFalse(guessed.batch)
        self.assertFalse(run.admissible(guessed, [build], 2))

    def test_alone_and_machine_hungry_tests(self):
        import run
        rebuild = self.unit(0.1, alone="rebuilds the element")
        light = self.unit(0.1)
        self.assertFalse(run.admissible(rebuild, [light], 2))
        self.assertTrue(run.admissible(rebuild, [], 2))
        self.assertFalse(run.admissible(light, [rebuild], 2))
        self.assertTrue(run.needs_machine(rebuild, 2))
        self.assertTrue(run.needs_machine(self.unit(1.4, exclusive="A/V sync"), 2))
        self.assertFalse(run.needs_machine(self.unit(0.6, exclusive="A/V sync"), 2))
        self.assertFalse(run.needs_machine(self.unit(1.4), 2))
        declared = run.Unit(["t.4k"], "VmHWM", "", {"t.4k": (40.0, 0.3)}, cores=2.0)
        self.assertEqual(declared.load, 2.0)                       # a declared load wins over the average
        self.assertTrue(run.needs_machine(declared, 2))
        # Those go first: held behind a 300 s soak, they would keep every other start waiting.
        soak = self.unit(0.45, exclusive="VmHWM", seconds=300.0)
        order = run.order_units([self.unit(0.2, seconds=5.0), soak, declared, rebuild], cores=2)
        self.assertEqual(order[2:], [soak, order[3]])
        self.assertEqual({id(order[0]), id(order[1])}, {id(declared), id(rebuild)})
        # Then the exclusive units by CPU time (a 130 s A/V-sync run at 0.76 cores before a 300 s
        # soak at 0.2), then the rest the same way, however long.
        sync = self.unit(0.76, exclusive="A/V sync", seconds=130.0)
        thin = self.unit(0.2, exclusive="VmHWM", seconds=300.0)
        long_light = self.unit(0.1, seconds=400.0)
        heavy = self.unit(1.0, seconds=50.0)
        self.assertEqual(run.order_units([long_light, thin, heavy, sync], cores=2), [sync, thin, heavy, long_light])
        # A wide exclusive unit (over half the quiet share: it fits only beside light units) goes
        # before a narrow one with more CPU time: left for the end, it runs with a core idle beside it.
        wide_short = self.unit(0.55, exclusive="sync", seconds=20.0)
        narrow_long = self.unit(0.45, exclusive="VmHWM", seconds=300.0)
        self.assertTrue(run.is_wide(wide_short, 2) and not run.is_wide(narrow_long, 2))
        self.assertEqual(run.order_units([narrow_long, wide_short], cores=2), [wide_short, narrow_long])

    def test_times_file_round_trip_and_unknown_tests(self):
        import run
        path = Path(tempfile.mkdtemp()) / "times"
        self.addCleanup(shutil.rmtree, path.parent, True)
        path.write_text("12.5\ta.B.test_x\t0.31\n3.0\ta.B.test_old\n")
        known = run.load_times(path)
        self.assertEqual(known["a.B.test_x"], (12.5, 0.31))
        self.assertEqual(known["a.B.test_old"], (3.0, None))
        u = run.Unit(["a.B.test_x", "a.B.test_old", "a.B.test_new"], "", "", known)
        self.assertEqual(u.cost, 12.5 + 3.0 + run.UNKNOWN_TEST_SECONDS)
        # CPU over time; a test without a load counts UNKNOWN_LOAD (a busy core) for its time.
        cpu = 12.5 * 0.31 + 3.0 * run.UNKNOWN_LOAD + run.UNKNOWN_TEST_SECONDS * run.UNKNOWN_LOAD
        self.assertAlmostEqual(u.load, cpu / u.cost)
        self.assertAlmostEqual(run.Unit(["a.B.test_x"], "", "", known).load, 0.31)

    def test_a_units_own_record_counts_its_fixtures(self):
        import run
        # Three tests too short for a load of their own (each counts a busy core) in a class whose
        # setUpClass takes 15 s: without the unit's record it is 0.9 s at 1 core, and never joins
        # an exclusive test; with it, 16 s at 0.1 cores.
        ids = ["p.C.test_a", "p.C.test_b", "p.C.test_c"]
        known = {t: (0.3, None) for t in ids}
        bare = run.Unit(ids, "", "", known, name="parallel:p.C:3")
        self.assertAlmostEqual(bare.cost, 0.9)
        self.assertAlmostEqual(bare.load, run.UNKNOWN_LOAD)
        known["unit:parallel:p.C:3"] = (16.0, 0.1)
        recorded = run.Unit(ids, "", "", known, name="parallel:p.C:3")
        self.assertEqual((recorded.cost, recorded.load), (16.0, 0.1))
        self.assertTrue(run.admissible(recorded, [self.unit(0.45, exclusive="VmHWM")], 2))
        # A record of another selection of the class (run.py -k one test) is not this unit's.
        self.assertAlmostEqual(run.Unit(ids[:2], "", "", known, name="parallel:p.C:2").cost, 0.6)
        # A long fixture's idle time never dilutes the load of a test that has one.
        known2 = {"x.S.test_sync": (130.0, 0.76), "unit:exclusive:x.S:1": (145.0, 0.69)}
        sync = run.Unit(["x.S.test_sync"], "A/V sync", "", known2, name="exclusive:x.S:1")
        self.assertEqual((sync.cost, sync.load), (145.0, 0.76))


class ClassFixtureProbe(unittest.TestCase):
    """Not discovered (no test_ methods): RunnerWorkerFixtureTests loads its probes by name, as two
    units of one class, the way run.py runs a class whose exclusive tests are a unit of their own."""

    up = False

    @classmethod
    def setUpClass(cls) -> None:
        cls.up = True

    @classmethod
    def tearDownClass(cls) -> None:
        cls.up = False

    def probe_first(self) -> None:
        self.assertTrue(self.up, "setUpClass did not run for the first unit")

    def probe_second(self) -> None:
        self.assertTrue(self.up, "setUpClass did not run again for the second unit of the same class")


class RunnerWorkerFixtureTests(unittest.TestCase):
    """One worker runs two units of the same class back to back: each gets the class's fixtures
    (the second used to find them torn down: unittest remembered the class on the shared result)."""

    def test_two_units_of_one_class_each_get_their_fixtures(self) -> None:
        here = Path(__file__).resolve().parent
        r, w = os.pipe()
        p = subprocess.Popen([sys.executable, str(here / "run.py"), "--worker", "--event-fd", str(w)],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             pass_fds=(w,), cwd=here, text=True)
        os.close(w)
        try:
            assert p.stdin is not None
            for probe in ("probe_first", "probe_second"):
                p.stdin.write(json.dumps([f"test_tools.ClassFixtureProbe.{probe}"]) + "\n")
            p.stdin.close()
            with os.fdopen(r) as events:
                evs = list(map(json.loads, events))
            ends = [e for e in evs if e.get("ev") == "end"]
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual([(e["id"].rsplit(".", 1)[-1], e["outcome"]) for e in ends],
                         [("probe_first", "passed"), ("probe_second", "passed")], ends)
        # Each unit's end carries its whole time and CPU, fixtures included: the unit's own record.
        done = [e for e in evs if e.get("ev") == "unit-done"]
        self.assertEqual(len(done), 2, evs)
        for e in done:
            self.assertGreater(e["seconds"], 0.0, e)
            self.assertGreaterEqual(e["cpu"], 0.0, e)
