"""Network faults against the real CLI binary and a real nginx (issue 6).

- RTMPS: an nginx `stream` TLS terminator (certificates made here with openssl) in front of
  nginx-rtmp. Refused by default (self-signed CA), accepted with --ca-file, refused for a
  certificate issued to another host name. No key reaches the server when refused.
- Server restart: nginx stopped for 5 s mid-stream and started again on the same port/dir;
  publishing resumes, both recorded segments decode and start on a keyframe, RSS < 50 MB.
- Slow link: tools/throttle_proxy.py at audio + 50% of the measured video rate for 30 s;
  drops or bitrate adaptation engage, no broken GOP, RSS < 50 MB, target back within 20 s.

Run: .venv/bin/python -m unittest Tests/Integration/test_network.py -v
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import (BROADCAST_BIN, REPO_ROOT, TOOLS_DIR, BroadcastTestCase, clean_env,  # noqa: E402
                     free_port, new_key)
from support import exclusive  # noqa: E402

import av  # noqa: E402

BUDGET_BYTES = 50 << 20
MODULES = Path("/usr/lib/nginx/modules")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_port(port: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return True
        time.sleep(0.05)
    return False


def openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {r.stderr}")


def make_pki(d: Path) -> dict[str, Path]:
    """A private CA, a server certificate for localhost/127.0.0.1 and one for another name."""
    d.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bcast test CA",
            "-keyout", "ca.key", "-out", "ca.pem",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=d)

    def leaf(name: str, san: str) -> None:
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                "-out", f"{name}.csr", cwd=d)
        (d / f"{name}.ext").write_text(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n"
                                       "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)

    leaf("server", "DNS:localhost,IP:127.0.0.1")
    leaf("other", "DNS:wrong.example")
    return {"ca": d / "ca.pem", "server_cert": d / "server.pem", "server_key": d / "server.key",
            "other_cert": d / "other.pem", "other_key": d / "other.key"}


class Nginx:
    """Our own nginx-rtmp (record_unique on: every publish gets its own file), optionally
    with `stream` TLS terminators in front: tls = [(port, cert, key), ...]."""

    def __init__(self, directory: Path, port: int | None = None, tls=()):
        self.dir = directory
        self.port = port or free_port()
        self.tls = list(tls)
        self.proc: subprocess.Popen | None = None
        (self.dir / "rec").mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"rtmp://127.0.0.1:{self.port}/live"

    @property
    def rec_dir(self) -> Path:
        return self.dir / "rec"

    @property
    def error_log(self) -> Path:
        return self.dir / "error.log"

    def recordings(self, key: str) -> list[Path]:
        return sorted(p for p in self.rec_dir.glob(f"{key}*.flv") if p.stat().st_size > 0)

    def settled_recordings(self, key: str, timeout: float = 10.0) -> list[Path]:
        """The recordings of `key` once there is one and no file has grown for 0.3 s (nginx writes
        the end of a publish after the publisher has gone), polled with a deadline."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            now = [(p, p.stat().st_size) for p in self.recordings(key)]
            if now and now == last:
                break
            last = now
            time.sleep(0.3)
        return self.recordings(key)

    def _write_conf(self) -> Path:
        stream = ""
        if self.tls:
            servers = "".join(
                f"    server {{ listen 127.0.0.1:{p} ssl; ssl_certificate {c}; ssl_certificate_key {k};\n"
                f"             proxy_pass 127.0.0.1:{self.port}; }}\n" for p, c, k in self.tls)
            stream = f"stream {{\n{servers}}}\n"
        conf = self.dir / "nginx.conf"
        conf.write_text(
            f"load_module {MODULES / 'ngx_rtmp_module.so'};\n"
            + (f"load_module {MODULES / 'ngx_stream_module.so'};\n" if self.tls else "")
            + f"daemon off;\nmaster_process off;\nworker_processes 1;\npid {self.dir}/nginx-self.pid;\n"
            f"error_log {self.error_log} info;\nevents {{ worker_connections 64; }}\n{stream}"
            f"rtmp {{ server {{ listen 127.0.0.1:{self.port}; chunk_size 4096;\n"
            f"  application live {{ live on; record all; record_path {self.rec_dir}; record_unique on; }} }} }}\n")
        return conf

    def start(self) -> "Nginx":
        conf = self._write_conf()
        with open(self.dir / "nginx.out", "ab") as out:
            self.proc = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(self.dir), "-e", str(self.error_log)],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=out,
                                         start_new_session=True)
        ports = [self.port] + [p for p, _, _ in self.tls]
        if not all(wait_port(p) for p in ports):
            self.stop()
            raise RuntimeError(f"nginx did not listen on {ports}: {(self.dir / 'nginx.out').read_text()}")
        return self

    def stop(self) -> None:
        """Fast shutdown (SIGTERM), escalating to SIGKILL: a connected publisher must not hang it."""
        if not self.proc or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def read_stats(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line being written right now
    return out


class _Bits:
    """An H.264 RBSP bit reader (emulation-prevention bytes removed)."""

    def __init__(self, nal: bytes):
        out, zeros = bytearray(), 0
        for b in nal:
            if zeros >= 2 and b == 3:
                zeros = 0
                continue
            zeros = zeros + 1 if b == 0 else 0
            out.append(b)
        self.data, self.pos = bytes(out), 0

    def u(self, n: int) -> int:
        v = 0
        for _ in range(n):
            v = (v << 1) | ((self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
        return (1 << zeros) - 1 + self.u(zeros)


def _log2_max_frame_num(avcc: bytes) -> int:
    """From the avcC record's first SPS (no scaling matrices: x264 does not write them)."""
    sps_len = int.from_bytes(avcc[6:8], "big")
    b = _Bits(avcc[8:8 + sps_len][1:])
    profile = b.u(8)
    b.u(16)
    b.ue()
    if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
        if b.ue() == 3:
            b.u(1)
        b.ue(), b.ue(), b.u(1)
        if b.u(1):
            raise ValueError("SPS scaling matrices not supported by this checker")
    return b.ue() + 4


def video_gop_report(path: Path) -> dict:
    """Independent GOP check with PyAV's demuxer and the H.264 slice headers: the first frame is
    an IDR, and frame_num runs without a hole from each IDR on (x264 here has no B-frames, so
    every frame is a reference; a hole means a frame that others reference was dropped after
    encoding = a broken GOP). Encoder-input drops leave timestamp gaps but no frame_num hole."""
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        max_frame_num = 1 << _log2_max_frame_num(bytes(v.codec_context.extradata))
        packets, broken, expected, first_idr = 0, [], None, None
        for p in c.demux(v):
            if p.size == 0 or p.pts is None:
                continue
            data, i, idr, frame_num = bytes(p), 0, False, None
            while i + 4 <= len(data):
                n = int.from_bytes(data[i:i + 4], "big")
                nal = data[i + 4:i + 4 + n]
                i += 4 + n
                if nal and (nal[0] & 0x1F) in (1, 5):
                    idr = (nal[0] & 0x1F) == 5
                    b = _Bits(nal[1:])
                    b.ue(), b.ue(), b.ue()
                    frame_num = b.u(max_frame_num.bit_length() - 1)
                    break
            if frame_num is None:
                continue
            if first_idr is None:
                first_idr = idr
            if not idr and expected is not None and frame_num != expected:
                broken.append((round(float(p.pts * v.time_base), 3), expected, frame_num))
            expected = (frame_num + 1) % max_frame_num
            packets += 1
        return {"packets": packets, "first_is_keyframe": bool(first_idr), "broken_gops": broken}


class RTMPSTests(BroadcastTestCase):
    """rtmps:// through an nginx stream TLS terminator with a private CA."""

    @classmethod
    def setUpClass(cls):
        if not (MODULES / "ngx_stream_module.so").exists():
            raise unittest.SkipTest("libnginx-mod-stream not installed (scripts/bootstrap installs it)")

    def setUp(self):
        super().setUp()
        self.pki = make_pki(self.tmp / "pki")
        self.tls_port, self.other_port = free_port(), free_port()
        self.nginx = Nginx(self.tmp / "nginx", tls=[(self.tls_port, self.pki["server_cert"], self.pki["server_key"]),
                                                    (self.other_port, self.pki["other_cert"], self.pki["other_key"])])
        self.nginx.start()
        self.addCleanup(self.nginx.stop)

    def publish(self, url: str, key: str, extra=(), seconds: float = 4):
        return self.run_broadcast(["--url", url, "--source", "test", "--res", "360p", "--fps", "30",
                                   "--duration", str(seconds), "--reconnect-attempts", "1", *extra],
                                  env={"STREAM_KEY": key}, timeout=60)

    def assertRefused(self, r, key: str, *words: str):
        self.assertEqual(r.returncode, 3, r.describe())
        err = r.stderr.lower()
        # A refusal is final: no reconnect attempt (a count, not a wall-clock bound).
        self.assertNotIn("reconnecting", err, r.describe())
        self.assertIn("tls verification failed", err, r.describe())
        for w in words:
            self.assertIn(w, err, r.describe())
        self.assertEqual(self.nginx.recordings(key), [], "nothing may be published when TLS is refused")
        # The server's own log holds the key once a publish is accepted; a refused one must not.
        self.track_file(self.nginx.error_log)
        log = self.nginx.error_log.read_text(errors="replace")
        self.assertNotIn("publish:", log, "nginx-rtmp must not see a publish command")
        # GnuTLS prints nothing of its own.
        for noise in ("gnutls", "TLS_Connect", "RTMP_", "ERROR:"):
            self.assertNotIn(noise, r.stderr, r.describe())

    def test_self_signed_refused_by_default(self):
        key = new_key()
        r = self.publish(f"rtmps://127.0.0.1:{self.tls_port}/live", key)
        self.assertRefused(r, key, "issuer not trusted", "--ca-file")

    def test_accepted_with_ca_file_and_recording_decodes(self):
        key = new_key()
        # Through the DNS name (SNI + DNS SAN); the IP SAN is used by the other tests.
        r = self.publish(f"rtmps://localhost:{self.tls_port}/live", key,
                         extra=["--ca-file", str(self.pki["ca"])], seconds=5)
        self.assertEqual(r.returncode, 0, r.describe())
        for noise in ("gnutls", "TLS_Connect", "RTMP_"):
            self.assertNotIn(noise, r.stderr, r.describe())
        recs = self.nginx.settled_recordings(key)
        self.assertEqual(len(recs), 1, f"recordings: {recs}\n{r.describe()}")
        report = self.assertRecordingOK(recs[0], expect_video_codec="h264", expect_audio_codec="aac")
        self.assertGreater(report.first("video").frames, 100)

    def test_ip_address_accepted_with_ca_file(self):
        key = new_key()
        r = self.publish(f"rtmps://127.0.0.1:{self.tls_port}/live", key,
                         extra=["--ca-file", str(self.pki["ca"])], seconds=2)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertEqual(len(self.nginx.settled_recordings(key)), 1)

    def test_wrong_host_name_refused_even_with_ca_file(self):
        key = new_key()
        r = self.publish(f"rtmps://127.0.0.1:{self.other_port}/live", key, extra=["--ca-file", str(self.pki["ca"])])
        self.assertRefused(r, key, "different host name")

    def test_bad_ca_file_is_a_usage_error(self):
        bogus = self.tmp / "not-a-ca.pem"
        bogus.write_text("hello\n")
        r = self.publish(f"rtmps://127.0.0.1:{self.tls_port}/live", new_key(), extra=["--ca-file", str(bogus)])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertIn("--ca-file", r.stderr)


@exclusive("the time to resume after a restart")
class ServerRestartTest(BroadcastTestCase):
    """nginx stopped for 5 s mid-stream, then started again on the same port and directory."""

    def test_publishing_resumes_and_segments_decode(self):
        key = new_key()
        nginx = Nginx(self.tmp / "nginx").start()
        self.addCleanup(nginx.stop)
        stats_path = self.track_file(self.tmp / "stats.jsonl")
        log = self.track_file(self.tmp / "broadcast.log")
        with open(log, "wb") as logf:
            proc = subprocess.Popen([str(BROADCAST_BIN), "--url", nginx.url, "--source", "test", "--res", "720p",
                                     "--fps", "30", "--duration", "30", "--stats-json", str(stats_path)],
                                    env=clean_env({"STREAM_KEY": key}), cwd=REPO_ROOT,
                                    stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
            self.addCleanup(lambda: proc.poll() is None and proc.kill())
            time.sleep(8)
            nginx.stop()
            down_at = time.monotonic()
            saw_reconnecting = False
            while time.monotonic() - down_at < 5:
                saw_reconnecting |= any(s.get("state") == "reconnecting" for s in read_stats(stats_path)[-3:])
                time.sleep(0.25)
            nginx.start()
            back_at = time.monotonic()
            resumed_after = None
            while time.monotonic() - back_at < 15:
                last = read_stats(stats_path)[-1:]
                saw_reconnecting |= bool(last) and last[0].get("state") == "reconnecting"
                if last and last[0].get("state") == "live" and last[0].get("reconnects", 0) >= 1:
                    resumed_after = time.monotonic() - back_at
                    break
                time.sleep(0.2)
            rc = proc.wait(timeout=60)
        output = log.read_text(errors="replace")
        self._captured_texts.append(output)
        nginx.settled_recordings(key)   # nginx has written the end of the publish
        nginx.stop()
        stats = read_stats(stats_path)
        final = stats[-1]
        print(f"\n[server restart] resumed {resumed_after and round(resumed_after, 2)} s after nginx came back; "
              f"reconnects={final['reconnects']} peak_rss={final['peak_rss_bytes'] / 2**20:.1f} MB "
              f"video_frames_sent={final['video_frames_sent']} drops={final['drops']}", file=sys.stderr)
        self.assertEqual(rc, 0, output[-2000:])
        self.assertTrue(saw_reconnecting, "stats never said 'reconnecting' while nginx was down")
        self.assertIsNotNone(resumed_after, "publishing did not resume within 15 s")
        self.assertLess(resumed_after, 10.0, "publishing must resume within 10 s of the server coming back")
        self.assertGreaterEqual(final["reconnects"], 1)
        self.assertLess(final["peak_rss_bytes"], BUDGET_BYTES)
        self.assertIn("reconnected", output)

        segments = nginx.recordings(key)
        self.assertEqual(len(segments), 2, f"expected a segment before and after the restart: {segments}")
        for n, seg in enumerate(segments, 1):
            report = self.assertRecordingOK(seg, expect_video_codec="h264", expect_audio_codec="aac")
            gop = video_gop_report(seg)
            # nginx names recordings after the stream key: say "segment N", never the file name.
            print(f"[server restart] segment {n}: {report.first('video').frames} video frames, {gop}", file=sys.stderr)
            self.assertGreater(gop["packets"], 30, f"segment {n}")
            self.assertTrue(gop["first_is_keyframe"], f"segment {n} must start on a keyframe")
            self.assertEqual(gop["broken_gops"], [], f"segment {n}: frames missing inside a GOP")


@exclusive("the bitrate controller on a throttled link")
class SlowLinkTest(BroadcastTestCase):
    """Issue 22's steady throttle, shortened: 2500 kbps of noisy 360p through
    tools/throttle_proxy.py limited to 1200 kbit/s for THROTTLE_S seconds.

    The target settles within 10 s at a level (its median from then on) of 70-95% of the link and
    stays within ±15% of that level while the throttle lasts, with at most 1% of frames dropped once settled (the old controller sawed
    between ~500 and 2500 kbps and dropped ~11%); after the throttle it climbs back to the
    configured bitrate within RECOVER_S; the recording resumes at IDRs after every drop."""

    RES = (640, 360)
    FPS = 30
    VIDEO_KBPS = 2500
    LINK_KBPS = 1200
    WARMUP_S = 5
    THROTTLE_S = 26
    AFTER_S = 50
    SETTLE_S = 10
    # The design's bound for a link that returns within 40 s of the congestion that began its
    # throttle (this one lifts 26 s after it): the level that congestion struck is remembered for
    # 60 s, so the climb is small steps, a 3% confirmation, then 50% steps; proved over the onset's
    # counts and the lift's timing by the unit test
    # climbsBackWithin48SecondsWhenTheThrottleLiftsSoonAfterItsOnset. (After a steady throttle the
    # bound is 30 s: climbsBackWithin30SecondsWhenTheThrottleLifts.) 28 failed a run at 31.0 s in
    # rehearsal R34, and one run on 2026-12-07 was not back 30 s after the lift.
    RECOVER_S = 48

    def noisy_source(self, seconds: float) -> subprocess.Popen:
        """testsrc2 with temporal noise: x264 has to spend its whole bitrate on it."""
        w, h = self.RES
        return subprocess.Popen(
            ["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
             f"testsrc2=size={w}x{h}:rate={self.FPS},noise=alls=40:allf=t", "-t", str(seconds),
             "-f", "yuv4mpegpipe", "-pix_fmt", "yuv420p", "-"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def test_throttled_link_settles_then_recovers(self):
        key = new_key()
        nginx = Nginx(self.tmp / "nginx").start()
        self.addCleanup(nginx.stop)
        proxy_port = free_port()
        proxy = subprocess.Popen([sys.executable, str(TOOLS_DIR / "throttle_proxy.py"), "--listen-port", str(proxy_port),
                                  "--target-port", str(nginx.port), "--throttle-kbps", str(self.LINK_KBPS),
                                  "--throttle-from", str(self.WARMUP_S), "--throttle-for", str(self.THROTTLE_S)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (proxy.poll() is None and proxy.terminate(), proxy.wait(timeout=5)))
        self.assertTrue(wait_port(proxy_port), "throttle proxy did not start")
        t0 = time.monotonic()
        total = self.WARMUP_S + self.THROTTLE_S + self.AFTER_S
        stats_path = self.track_file(self.tmp / "stats.jsonl")
        src = self.noisy_source(total + 2)
        r = self.run_broadcast(["--url", f"rtmp://127.0.0.1:{proxy_port}/live", "--source", "y4m:-",
                                "--res", f"{self.RES[1]}p", "--fps", str(self.FPS), "--video-bitrate", str(self.VIDEO_KBPS),
                                "--duration", str(total), "--stats-json", str(stats_path), "--quiet"],
                               env={"STREAM_KEY": key}, stdin=src.stdout, timeout=total + 60)
        src.stdout.close()
        src.wait(timeout=10)
        offset = time.monotonic() - t0 - r.seconds  # proxy clock -> broadcast clock
        self.assertEqual(r.returncode, 0, r.describe())
        nginx.settled_recordings(key)   # nginx has written the end of the publish
        nginx.stop()

        stats = [s for s in read_stats(stats_path) if s["state"] != "finished"]
        final = read_stats(stats_path)[-1]
        thr_start = self.WARMUP_S - offset
        thr_end = thr_start + self.THROTTLE_S

        def window(a, b):
            return [s for s in stats if a <= s["time_s"] < b]

        def dropped(s):
            d = s["drops"]
            return d["congestion_p_frame"] + d["congestion_until_idr"] + d["queue_full"]

        # The noise must make x264 spend its budget, or the throttle would not congest.
        warm = window(2, thr_start)
        self.assertTrue(warm, stats)
        self.assertGreater(sorted(s["video_kbps"] for s in warm)[len(warm) // 2], 0.6 * self.VIDEO_KBPS, warm)

        settled = window(thr_start + self.SETTLE_S, thr_end)
        targets = [s["target_video_kbps"] for s in settled]
        level = sorted(targets)[len(targets) // 2]
        settled_drops = dropped(settled[-1]) - dropped(settled[0])
        frames = (settled[-1]["time_s"] - settled[0]["time_s"]) * self.FPS
        delivered = sum(s["video_kbps"] + s["audio_kbps"] for s in settled) / len(settled)
        after = window(thr_end, 1e9)
        back = next((s["time_s"] - thr_end for s in after if s["target_video_kbps"] >= self.VIDEO_KBPS), None)
        print(f"\n[slow link] link {self.LINK_KBPS} kbit/s: settled target {min(targets)}-{max(targets)} kbps "
              f"(level {level}), delivered {delivered:.0f} kbit/s, {settled_drops} of {frames:.0f} frames dropped once settled, "
              f"target back at {self.VIDEO_KBPS} {back and round(back, 1)} s after lifting; "
              f"peak RSS {final['peak_rss_bytes'] / 2**20:.1f} MB", file=sys.stderr)
        print("[slow link] target per second: " + " ".join(str(s["target_video_kbps"]) for s in stats), file=sys.stderr)
        print("[slow link] video kbps per second: " + " ".join(str(round(s["video_kbps"])) for s in stats),
              file=sys.stderr)
        # Issue 22's target: the target settles at 70-95% of the link (its median once settled) and
        # every settled second stays within 15% of that level (the old controller swung from 769 to
        # 2500 here); nothing is dropped once settled beyond 1%.
        self.assertGreaterEqual(level, 0.70 * self.LINK_KBPS, targets)
        self.assertLessEqual(level, 0.95 * self.LINK_KBPS, targets)
        for t in targets:
            self.assertLessEqual(abs(t - level), 0.15 * level, targets)
        self.assertLessEqual(settled_drops, 0.01 * frames, f"{settled_drops} of {frames:.0f} frames dropped once settled")
        self.assertLess(final["peak_rss_bytes"], BUDGET_BYTES)
        self.assertIsNotNone(back, f"target_video_kbps not back at {self.VIDEO_KBPS} after the limit was lifted")
        self.assertLessEqual(back, self.RECOVER_S)

        recs = nginx.recordings(key)
        self.assertEqual(len(recs), 1, f"{recs}")
        self.assertRecordingOK(recs[0], expect_video_codec="h264")  # y4m source: video only
        gop = video_gop_report(recs[0])
        print(f"[slow link] recording GOP check: {gop}", file=sys.stderr)
        self.assertTrue(gop["first_is_keyframe"])
        self.assertEqual(gop["broken_gops"], [], "after a drop, video must resume at an IDR (no frame_num hole)")


if __name__ == "__main__":
    unittest.main()
