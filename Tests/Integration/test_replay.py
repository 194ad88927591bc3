"""Replay clips and MP4 recording (issue #16), against a real nginx-rtmp, verified by PyAV,
ffprobe and tools/avsync.py (never by our own MP4 parser).

- test_clip_on_sigusr1_while_streaming: 720p test source (static pattern, flash + beep every
  second) with --replay-seconds 30 for 60 s, published to nginx; SIGUSR1 at 44 s and
  `save-replay` on the control socket at 52 s. Each clip decodes with no error, lasts 30 s + at
  most one GOP, starts on a keyframe, and its A/V sync is within 35 ms, the first flash (the
  clip's first frame) included: its beep starts with the clip (within 5 ms); nginx's recording has
  no video or audio gap around either save.
- test_control_socket: mode 0600; stats (the --stats-json object), keyframe, set-bitrate,
  subscribe (a saved clip is an event), errors for garbage, an unknown command, a bad bitrate
  and an over-long line; a garbage client and an idle client do not hold up the stream; stop
  ends the run with exit 0 and removes the socket; broadcastctl speaks the same. A path that
  exists or sits in a missing directory: exit 2 with one line.
- test_local_clipping_and_failed_save: --no-publish --replay-seconds alone, Opus audio (Opus/dOps); a save into a
  directory removed mid-run is one warning line and the run still ends cleanly; a save that
  hits the file size limit (a full disk, by RLIMIT_FSIZE) likewise, leaving no partial file.
- test_record_mp4_sigkill_and_sigint: --record out.mp4 killed with SIGKILL at 20 s decodes up
  to its last fragment, a whole GOP, losing only the GOP being staged; stopped with SIGINT at
  20 s it is complete with the right duration.
- test_save_replay_through_the_c_abi: bindings/python (ctypes over libbroadcastkit.so) with
  replay_seconds=3: save_replay(seconds=2) while frames keep coming gives a clip that decodes,
  starts on a keyframe and lasts 2 s + at most one GOP; with no ring, save_replay raises.
- test_bad_input: --replay-seconds 0, negative, too large for the budget (names the longest
  that fits), --replay-dir missing or not a directory: exit 2 with one line.
- test_read_only_dir_and_full_tmpfs (root: mounts tmpfs): a --replay-dir on a read-only file
  system is refused (exit 2, "not writable"); a save into a 256 KiB tmpfs runs out of space
  mid-clip: one warning line naming ENOSPC, no file left, and the stream, recorded as FLV next
  to it, goes on to the end with no hole.
- test_aac_priming_edit_list: one run streams to nginx, records out.mp4 and saves a clip. In the
  MP4 recording and the clip, ffprobe reads one edit list, on the audio track, starting at a
  positive media time (the AAC encoder's priming, whose packets the recording keeps; a clip's
  pre-roll), and applies it: the audio a player presents starts within one AAC frame after the
  video, not a priming later. Each MP4's A/V offset (flash/beep
  analyser) equals that of the FLV nginx recorded from the same run, within 2 ms.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

import av

from bktools import avsync as avsync_tool

import support
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase
from support import exclusive  # noqa: E402
from test_soak import flash_frames_not_sent

PY = sys.executable
BROADCASTCTL = BROADCAST_BIN.parent / "broadcastctl"


def control(path: Path, line: str, timeout: float = 60) -> dict:
    """Sends one command on the control socket and returns the answer."""
    import socket as _socket
    with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return json.loads(data.decode())
GOP_S = 2.0          # the CLI's keyframe interval


def wait_live(stats_path: Path, proc: subprocess.Popen, timeout: float = 30.0) -> float:
    """Polls --stats-json until a line says "live"; the time.monotonic() it was seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"broadcast exited with {proc.returncode} before going live")
        if stats_path.exists():
            for line in stats_path.read_text(errors="replace").splitlines():
                try:
                    if json.loads(line).get("state") == "live":
                        return time.monotonic()
                except json.JSONDecodeError:
                    pass  # a line being written
        time.sleep(0.1)
    raise AssertionError(f"no live stats line within {timeout:.0f} s")


def video_keyframe_first_and_span(path: Path) -> tuple[bool, float, float]:
    """(first video packet is a keyframe, first video pts in s, last frame end in s) by PyAV."""
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        first_key, first, last = None, None, None
        for p in c.demux(v):
            if p.pts is None:
                continue
            t = float(p.pts * v.time_base)
            if first_key is None:
                first_key, first = bool(p.is_keyframe), t
            end = t + float((p.duration or 0) * v.time_base)
            last = end if last is None else max(last, end)
    return bool(first_key), first or 0.0, last or 0.0


def video_gaps(path: Path) -> list[tuple[float, float]]:
    """(time, gap) for consecutive video packets of `path`, in seconds."""
    out = []
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        prev = None
        for p in c.demux(v):
            if p.dts is None:
                continue
            t = float(p.dts * v.time_base)
            if prev is not None:
                out.append((t, t - prev))
            prev = t
    return out


def avsync(path: Path) -> dict:
    p = subprocess.run([PY, str(REPO_ROOT / "tools" / "avsync.py"), str(path), "--json"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 1):
        raise AssertionError(f"avsync failed on {path}: {p.stderr}")
    return json.loads(p.stdout)


def ffprobe_edits(path: Path) -> list[tuple[str, int, int]]:
    """(codec_type of the track, segment_duration, media_time) of each edit list entry, as ffprobe's
    mov demuxer logs them at trace level ("track[N].edit_count = K", then one "duration=D time=T
    rate=R" line per entry)."""
    p = subprocess.run(["ffprobe", "-v", "trace", "-show_entries", "stream=index,codec_type", "-of", "json", str(path)],
                       capture_output=True, text=True, timeout=60)
    kinds = {x["index"]: x["codec_type"] for x in json.loads(p.stdout)["streams"]}
    edits, track = [], None
    for line in p.stderr.splitlines():
        m = re.search(r"track\[(\d+)\]\.edit_count = (\d+)", line)
        if m:
            track = int(m.group(1))
            continue
        m = re.search(r"duration=(-?\d+) time=(-?\d+) rate=", line)
        if m:
            edits.append((kinds.get(track, f"track {track}"), int(m.group(1)), int(m.group(2))))
    return edits


def ffprobe_start_times(path: Path) -> dict[str, float]:
    """codec_type -> start_time of each stream, by ffprobe."""
    p = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,start_time", "-of", "json",
                        str(path)], capture_output=True, text=True, timeout=60)
    return {x["codec_type"]: float(x["start_time"]) for x in json.loads(p.stdout)["streams"]}


def first_frame_is_flash(path) -> bool:
    """True when a clip's first picture is the test source's white flash frame. Repeated pictures
    (a late frame) can move x264's keyframes off whole seconds, so a clip need not start on one,
    and then its first beep cannot be timed (in the CI run of 2026-12-02 the SIGUSR1 clip started on
    a flash and was checked: 0.798 against 0.799; the control-socket clip did not)."""
    import av
    with av.open(str(path)) as c:
        for frame in c.decode(c.streams.video[0]):
            return float(frame.to_ndarray(format="gray").mean()) > 200
    return False


class ReplayTests(BroadcastTestCase):
    def popen(self, args, env=None, preexec=None) -> subprocess.Popen:
        return subprocess.Popen([str(BROADCAST_BIN), *map(str, args)], env=support.clean_env(env), cwd=REPO_ROOT,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=preexec)

    def finish(self, proc: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
        out, err = proc.communicate(timeout=timeout)
        text = err.decode(errors="replace")
        self._captured_texts += [out.decode(errors="replace"), text]
        return proc.returncode, text

    def assertClip(self, clip: Path, seconds: float, audio: str = "aac") -> None:
        """Decodes, starts on a keyframe, lasts `seconds` + at most one GOP, A/V in sync."""
        self.assertRecordingOK(clip, expect_video_codec="h264", expect_audio_codec=audio)
        key, first, end = video_keyframe_first_and_span(clip)
        self.assertTrue(key, f"{clip.name} does not start on a keyframe")
        self.assertAlmostEqual(first, 0.0, delta=0.001)
        self.assertGreaterEqual(end, seconds - 0.1, f"{clip.name} lasts {end:.2f} s")
        self.assertLessEqual(end, seconds + GOP_S + 0.1, f"{clip.name} lasts {end:.2f} s")
        r = avsync(clip)
        s = r["summary"]
        print(f"\n--- {clip.name}: {end:.2f} s, events={s.get('events')} max={s.get('max_abs_ms')} ms "
              f"unpaired={r['unpaired']} reasons={r['reasons']}", file=sys.stderr)
        self.assertLessEqual(s["max_abs_ms"], 35.0)
        # A beep may lack its flash only where the flash frame is missing from the clip (dropped
        # as encoder_busy on a loaded machine, counted in the stats), or at the clip's very first
        # frame (a keyframe on a whole second: the flash detector needs a frame before it).
        self.assertEqual(r["unpaired"]["flashes"], [], r["reasons"])
        lone = [b for b in r["unpaired"]["beeps"] if b >= 0.1]
        self.assertEqual(flash_frames_not_sent(clip, lone), lone, r["reasons"])
        self.assertGreaterEqual(s["events"] + len(r["unpaired"]["beeps"]), int(seconds) - 1)
        # The clip's first frame is a flash (a keyframe on a whole second), which neither detector
        # can time (no frame, no audio before it): its beep must sound from the clip's first
        # sample, at full level, not an edit list's worth of priming later (AAC clips carry
        # pre-roll frames and an edit that skips exactly them). Opus clips have no edit list.
        if audio == "aac" and first_frame_is_flash(clip):
            first_level, later_level, ratio = avsync_tool.start_beep_ratio(str(clip))
            print(f"{clip.name}: first-beep level {first_level:.3f} in its first 10 ms, {later_level:.3f} 20 ms on",
                  file=sys.stderr)
            self.assertGreater(later_level, 0.1, f"{clip.name}: no beep 30 ms into the clip (its first flash)")
            self.assertGreaterEqual(ratio, 0.8, f"{clip.name}: the first flash's beep starts late "
                                                f"(1 kHz level {first_level:.3f} in the first 10 ms vs {later_level:.3f})")
        gaps = [x for x in r["streams"] if x.get("kind") == "audio"]
        self.assertTrue(all(g.get("gaps", 0) == 0 for g in gaps), r["streams"])

    @exclusive("clip lengths and A/V sync against wall-clock saves")
    def test_clip_on_sigusr1_while_streaming(self):
        ingest = support.start_ingest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        clips = self.tmp / "clips"
        clips.mkdir()
        sock = self.tmp / "ctl.sock"
        stats_path = self.track_file(self.tmp / "stats.jsonl")
        proc = self.popen(["--url", ingest.url, "--source", "test", "--test-pattern", "static", "--res", "720p",
                           "--replay-seconds", "30", "--replay-dir", clips, "--duration", "60", "--control", sock,
                           "--stats-json", stats_path],
                          env={"STREAM_KEY": key})
        # The saves' times are on the stream's clock: from the first "live" stats line, polled
        # (start-up on a loaded machine is not a fixed time), not from the process start.
        started = wait_live(stats_path, proc)
        time.sleep(max(0.0, 44 - (time.monotonic() - started)))
        saves = [time.monotonic() - started]
        proc.send_signal(signal.SIGUSR1)
        time.sleep(52 - (time.monotonic() - started))
        saves.append(time.monotonic() - started)
        answer = control(sock, "save-replay")
        rc, err = self.finish(proc, timeout=90)
        self.assertEqual(rc, 0, err[-2000:])
        self.assertTrue(answer.get("ok"), answer)
        saved = sorted(clips.glob("replay-*.mp4"))
        self.assertEqual(len(saved), 2, f"{list(clips.iterdir())}\n{err[-2000:]}")
        self.assertIn(f"replay: saved {saved[0]}", err)
        self.assertEqual(answer["path"], str(saved[1]))
        self.assertEqual(answer["bytes"], saved[1].stat().st_size)
        self.assertEqual(list(clips.glob("*.part")), [])
        for clip in saved:
            self.assertClip(clip, 30)

        ingest.stop()
        rec = ingest.wait_recording(key)
        self.assertRecordingOK(rec)
        # No gap at the saves: every frame missing from nginx's recording around a save is a
        # counted encoder_busy drop (a loaded 2-core machine drops some anywhere in the run; a
        # save that held the pipeline up would lose frames beyond those, or leave a long hole).
        gaps = video_gaps(rec)
        stats = [json.loads(l) for l in stats_path.read_text().splitlines() if l.strip()]
        last = stats[-1]["drops"]
        self.assertEqual(last["congestion_p_frame"] + last["congestion_until_idr"] + last["queue_full"], 0, last)

        def busy_at(t: float) -> int:
            before = [x["drops"]["encoder_busy"] for x in stats if x["time_s"] <= t]
            return before[-1] if before else 0

        # The longest hole away from the saves (after start-up) is what this machine's load does anyway.
        elsewhere = [g for t, g in gaps if t > 5 and all(not (s - 1 <= t <= s + 5) for s in saves)]
        background = max(elsewhere, default=0.0)
        for save_at in saves:
            lo, hi = save_at - 1, save_at + 5
            near = [g for t, g in gaps if lo <= t <= hi]
            self.assertTrue(near, f"no video around the save at {save_at:.1f} s in nginx's recording")
            missing = sum(max(0, round(g * 30) - 1) for g in near)
            counted = busy_at(hi + 1.5) - busy_at(lo - 1.5)
            print(f"--- save at {save_at:.1f} s: longest gap {max(near) * 1000:.0f} ms (elsewhere {background * 1000:.0f} ms), "
                  f"{missing} frames missing in nginx's recording, {counted} encoder_busy drops counted", file=sys.stderr)
            self.assertLessEqual(max(near), max(0.5, background + 0.1),
                                 f"a {max(near) * 1000:.0f} ms hole near the save at {save_at:.1f} s "
                                 f"(longest elsewhere {background * 1000:.0f} ms)")
            self.assertLessEqual(missing, counted + 1, f"frames lost near the save at {save_at:.1f} s beyond counted drops")
        r = avsync(rec)
        audio = [x for x in r["streams"] if x.get("kind") == "audio"]
        self.assertTrue(audio and all(a.get("gaps", 0) == 0 for a in audio), r["streams"])

    @exclusive("VmHWM")
    def test_first_clip_does_not_raise_vmhwm(self):
        """The CLI drops its start-up code pages once live; the first clip's save path (naming,
        the MP4 writer, number formatting) used to fault about 1.2 MB of them back in, a VmHWM step
        long after the ring filled (the 45-minute soak: +1.49 MB). A rehearsal at start keeps them."""
        clips = self.tmp / "clips"
        clips.mkdir()
        proc = self.popen(["--no-publish", "--source", "test", "--res", "720p", "--replay-seconds", "5",
                           "--replay-dir", clips, "--duration", "16", "--quiet"])

        def hwm_kb() -> int:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
            raise AssertionError("no VmHWM")
        time.sleep(9)                          # the 5 s ring is full
        before = hwm_kb()
        proc.send_signal(signal.SIGUSR1)
        time.sleep(3)
        after = hwm_kb()
        rc, err = self.finish(proc)
        print(f"\n--- first clip: VmHWM {before} -> {after} kB", file=sys.stderr)
        self.assertEqual(rc, 0, err[-2000:])
        self.assertEqual(len(list(clips.glob("replay-*.mp4"))), 1, err[-2000:])
        self.assertEqual([p.name for p in clips.iterdir() if not p.name.startswith("replay-") or p.suffix != ".mp4"], [],
                         "the rehearsal leaves no file")
        self.assertLessEqual(after - before, 512, f"the first clip raised VmHWM by {after - before} kB")

    def test_local_clipping_and_failed_save(self):
        clips = self.tmp / "clips"
        clips.mkdir()
        args = ["--no-publish", "--source", "test", "--test-pattern", "static", "--res", "480p",
                "--audio-codec", "opus", "--replay-seconds", "5", "--replay-dir", clips, "--duration", "16"]
        proc = self.popen(args)
        time.sleep(9)
        proc.send_signal(signal.SIGUSR1)
        time.sleep(3)
        clips_gone = self.tmp / "moved"
        saved_first = sorted(clips.glob("replay-*.mp4"))
        clips.rename(clips_gone)               # the directory disappears under the run
        proc.send_signal(signal.SIGUSR1)
        rc, err = self.finish(proc)
        self.assertEqual(rc, 0, err[-2000:])
        self.assertEqual(len(saved_first), 1, err[-2000:])
        self.assertClip(clips_gone / saved_first[0].name, 5, audio="opus")
        warnings = [l for l in err.splitlines() if "warning: replay:" in l]
        self.assertEqual(len(warnings), 1, err[-2000:])
        self.assertIn("No such file or directory", warnings[0])
        self.assertIn("finished:", err)

        # A save that runs out of space: the file size limit stands in for a full disk.
        full = self.tmp / "full"
        full.mkdir()

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))

        proc = self.popen(["--no-publish", "--source", "test", "--res", "480p", "--replay-seconds", "5",
                           "--replay-dir", full, "--duration", "10"], preexec=limit)
        time.sleep(7)
        proc.send_signal(signal.SIGUSR1)
        rc, err = self.finish(proc)
        self.assertEqual(rc, 0, err[-2000:])
        warnings = [l for l in err.splitlines() if "warning: replay:" in l]
        self.assertEqual(len(warnings), 1, err[-2000:])
        self.assertIn("File too large", warnings[0])
        self.assertEqual(list(full.iterdir()), [], "a failed save leaves no file")

    def test_record_mp4_sigkill_and_sigint(self):
        killed = self.tmp / "killed.mp4"
        stopped = self.tmp / "stopped.mp4"
        for path, sig in ((killed, signal.SIGKILL), (stopped, signal.SIGINT)):
            proc = self.popen(["--no-publish", "--source", "test", "--test-pattern", "static", "--res", "480p",
                               "--record", path, "--duration", "60"])
            time.sleep(20)
            proc.send_signal(sig)
            rc, err = self.finish(proc)
            self.assertEqual(rc, -9 if sig == signal.SIGKILL else 0, err[-2000:])
            report = self.assertRecordingOK(path, expect_video_codec="h264", expect_audio_codec="aac")
            key, first, end = video_keyframe_first_and_span(path)
            self.assertTrue(key)
            fmt = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_format", "-of", "json", str(path)],
                                            capture_output=True, text=True, timeout=60).stdout)["format"]
            duration = float(fmt["duration"])
            print(f"\n--- {path.name}: ffprobe {duration:.2f} s, PyAV video end {end:.2f} s, "
                  f"{report.first('video').frames} frames", file=sys.stderr)
            if sig == signal.SIGKILL:
                # What decodes ends where a fragment (one GOP) ends, and only the GOP being staged
                # at the kill is lost (start-up takes under 1.5 s of the 20).
                with av.open(str(path)) as c:
                    v = c.streams.video[0]
                    keys = [float(p.pts * v.time_base) for p in c.demux(v) if p.pts is not None and p.is_keyframe]
                self.assertGreaterEqual(end - keys[-1], GOP_S - 1.5 / 30,
                                        f"{path.name}: its last GOP ({keys[-1]:.3f} s to {end:.3f} s) is cut")
                self.assertGreaterEqual(end, 20 - GOP_S - 1.5)
            else:
                self.assertAlmostEqual(duration, end, delta=0.1)
                self.assertGreaterEqual(duration, 18.5)
                self.assertLessEqual(duration, 21.0)
                r = avsync(path)
                self.assertLessEqual(r["summary"]["max_abs_ms"], 35.0, r["reasons"])

    def test_save_replay_through_the_c_abi(self):
        script = self.tmp / "embed.py"
        script.write_text(f"""
import json, sys, time
import numpy as np
import broadcastkit as bk
out = {{}}
with bk.Session(record={str(self.tmp / 'rec.flv')!r}, width=320, height=240, fps=30, video_bitrate=500,
                replay_seconds=3, replay_dir={str(self.tmp)!r}) as s:
    start = time.monotonic()
    for i in range(150):
        frame = np.full((240, 320, 4), (i * 7) % 256, dtype=np.uint8)
        s.send_video(frame)
        s.send_audio(np.zeros((1600, 2), dtype=np.float32))
        if i == 120:
            out["clip"] = s.save_replay(seconds=2)
        time.sleep(max(0, start + (i + 1) / 30 - time.monotonic()))
with bk.Session(record={str(self.tmp / 'rec2.flv')!r}, width=320, height=240) as s:
    try:
        s.save_replay()
    except bk.BroadcastError as e:
        out["no_ring"] = str(e)
print(json.dumps(out))
""")
        lib = REPO_ROOT / ".build" / "release" / "libbroadcastkit.so"
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "bindings" / "python"), BROADCASTKIT_LIBRARY=str(lib))
        r = subprocess.run([PY, str(script)], env=env, capture_output=True, text=True, timeout=120)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        out = json.loads(r.stdout.strip().splitlines()[-1])
        clip = Path(out["clip"])
        self.assertEqual(clip.parent, self.tmp)
        self.assertRegex(clip.name, r"^replay-\d{8}-\d{6}(-\d+)?\.mp4$")
        self.assertRecordingOK(clip, expect_video_codec="h264", expect_audio_codec="aac", expect_width=320)
        key, first, end = video_keyframe_first_and_span(clip)
        self.assertTrue(key)
        self.assertGreaterEqual(end, 2 - 0.1)
        self.assertLessEqual(end, 2 + GOP_S + 0.1)
        self.assertIn("replay buffer is off", out["no_ring"])

    def test_control_socket(self):
        import socket as _socket
        import stat as _stat
        clips = self.tmp / "clips"
        clips.mkdir()
        sock = self.tmp / "ctl.sock"
        stats_path = self.track_file(self.tmp / "stats.jsonl")
        proc = self.popen(["--no-publish", "--source", "test", "--res", "480p", "--replay-seconds", "4",
                           "--replay-dir", clips, "--control", sock, "--stats-json", stats_path, "--duration", "60"])
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(_stat.S_IMODE(sock.stat().st_mode), 0o600)
        # Clients that misbehave: one idle, one sending garbage without a newline, one a garbage line.
        idle = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        idle.connect(str(sock))
        partial = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        partial.connect(str(sock))
        partial.sendall(b"\x00\xff{{{ not a command")
        self.assertFalse(control(sock, "\x01\x02 garbage")["ok"])
        self.assertIn("unknown command", control(sock, "frobnicate")["error"])
        self.assertIn("not a JSON object", control(sock, '{"cmd": [1,2]}')["error"])
        self.assertIn("100...50000", control(sock, "set-bitrate 5")["error"])
        with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(str(sock))
            s.sendall(b"x" * 10000)
            answer = s.recv(4096)
            self.assertIn(b"line longer than", answer)
        sub = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sub.settimeout(30)
        sub.connect(str(sock))
        sub.sendall(b"subscribe\n")
        sub_lines = sub.makefile()
        self.assertEqual(json.loads(sub_lines.readline()), {"ok": True, "subscribed": True})
        stats = control(sock, '{"cmd":"stats"}')
        last_line = None
        deadline = time.monotonic() + 5
        while last_line is None and time.monotonic() < deadline:
            lines = [l for l in stats_path.read_text().splitlines() if l.strip()]
            last_line = json.loads(lines[-1]) if lines else None
            time.sleep(0.2)
        self.assertIsNotNone(last_line)
        self.assertEqual(set(stats), set(last_line))
        self.assertEqual(control(sock, "keyframe"), {"ok": True})
        self.assertEqual(control(sock, "set-bitrate 800"), {"ok": True, "kbps": 800})
        time.sleep(6)
        clip = self.tmp / "ctl-clip.mp4"
        r = subprocess.run([str(BROADCASTCTL), str(sock), "save-replay", "3", str(clip)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        answer = json.loads(r.stdout)
        self.assertTrue(answer["ok"] and answer["path"] == str(clip) and answer["bytes"] == clip.stat().st_size, answer)
        self.assertGreaterEqual(answer["duration_s"], 3 - 0.1)
        # Other events (started, bitrate-changed: docs/control-protocol.md) come first; the save's is next.
        event = json.loads(sub_lines.readline())
        while event["event"] in ("started", "bitrate-changed", "dropped"):
            event = json.loads(sub_lines.readline())
        self.assertEqual(event["event"], "replay-saved")
        self.assertEqual(event["path"], str(clip))
        self.assertClip(clip, 3)
        bad = subprocess.run([str(BROADCASTCTL), str(sock), "save-replay", "2", str(self.tmp / "no" / "x.mp4")],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("No such file or directory", json.loads(bad.stdout)["error"])
        # The stream kept going through all of it.
        before = json.loads(stats_path.read_text().splitlines()[-1])["video_frames_sent"]
        time.sleep(2)
        self.assertGreater(json.loads(stats_path.read_text().splitlines()[-1])["video_frames_sent"], before + 30)
        self.assertEqual(control(sock, "stop"), {"ok": True})
        rc, err = self.finish(proc)
        self.assertEqual(rc, 0, err[-2000:])
        self.assertFalse(sock.exists(), "the socket file is removed at exit")
        for s_ in (idle, partial, sub):
            s_.close()

        # A path that exists, or in a missing directory: exit 2 before anything starts.
        taken = self.tmp / "taken"
        taken.write_text("")
        for path, why in ((taken, "already exists"), (self.tmp / "missing" / "c.sock", "No such file or directory")):
            r = self.run_broadcast(["--no-publish", "--source", "test", "--replay-seconds", "5", "--control", path,
                                    "--duration", "1"])
            self.assertEqual(r.returncode, 2, r.describe())
            self.assertIn(f"--control {path}: {why}", r.stderr)

    def test_bad_input(self):
        for value in ("0", "-5", "x"):
            r = self.run_broadcast(["--no-publish", "--replay-seconds", value])
            self.assertEqual(r.returncode, 2, r.describe())
            self.assertIn("--replay-seconds expects an integer in 1...3600", r.stderr)
        r = self.run_broadcast(["--no-publish", "--source", "test", "--replay-seconds", "3600", "--print-memory-plan"])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertRegex(r.stdout, r"replay: at most --replay-seconds \d+ fits this budget")
        r = self.run_broadcast(["--no-publish", "--source", "test", "--replay-seconds", "3600", "--duration", "1"])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertRegex(r.stderr, r"replay: at most --replay-seconds \d+ fits this budget")
        missing = self.tmp / "missing"
        r = self.run_broadcast(["--no-publish", "--source", "test", "--replay-seconds", "5", "--replay-dir", missing])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertIn(f"--replay-dir {missing}: No such file or directory", r.stderr)
        afile = self.tmp / "file"
        afile.write_text("x")
        r = self.run_broadcast(["--no-publish", "--source", "test", "--replay-seconds", "5", "--replay-dir", afile])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertIn("not a directory", r.stderr)

    def test_aac_priming_edit_list(self):
        ingest = support.start_ingest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        clips = self.tmp / "clips"
        clips.mkdir()
        rec = self.tmp / "out.mp4"
        proc = self.popen(["--url", ingest.url, "--source", "test", "--test-pattern", "static", "--res", "480p",
                           "--record", rec, "--replay-seconds", "8", "--replay-dir", clips, "--duration", "18"],
                          env={"STREAM_KEY": key})
        time.sleep(13)
        proc.send_signal(signal.SIGUSR1)
        rc, err = self.finish(proc)
        self.assertEqual(rc, 0, err[-2000:])
        saved = sorted(clips.glob("replay-*.mp4"))
        self.assertEqual(len(saved), 1, err[-2000:])
        ingest.stop()
        flv = ingest.wait_recording(key)
        reference = avsync(flv)["summary"]
        for mp4 in (rec, saved[0]):
            edits = ffprobe_edits(mp4)
            self.assertEqual(len(edits), 1, f"{mp4.name}: edit lists {edits}")
            kind, _, media_time = edits[0]
            self.assertEqual(kind, "audio", f"{mp4.name}: the edit list belongs to the audio track: {edits}")
            self.assertGreater(media_time, 0, f"{mp4.name}: {edits}")
            starts = ffprobe_start_times(mp4)
            # Both files open their audio with packets the edit skips exactly: the recording with
            # the encoder's priming, a clip with the AAC frames before its first keyframe as pre-roll.
            # FFmpeg gives those packets times before the video's, so the audio a player presents
            # starts media_time later than the first packet.
            lead = starts["audio"] - starts["video"] + media_time / 48000
            r = avsync(mp4)
            s = r["summary"]
            print(f"\n--- {mp4.name}: edit media_time {media_time}, audio starts {lead * 1000:.1f} ms after video; "
                  f"A/V mean {s.get('mean_ms'):.1f} ms (nginx's FLV {reference.get('mean_ms'):.1f} ms), "
                  f"max {s.get('max_abs_ms'):.1f} ms", file=sys.stderr)
            # The file starts on a keyframe with the audio from that instant: the first audio sample
            # presented plays within one AAC frame (1024 samples) of the first video frame.
            self.assertGreaterEqual(lead, -0.001, f"{mp4.name}: {starts}")
            self.assertLessEqual(lead, 1024 / 48000 + 0.001, f"{mp4.name}: {starts}")
            self.assertLessEqual(s["max_abs_ms"], 35.0, r["reasons"])
            self.assertAlmostEqual(s["mean_ms"], reference["mean_ms"], delta=2.0)

    def mount_tmpfs(self, path: Path, options: str) -> Path:
        path.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"mount -t tmpfs -o {options}: {r.stderr}")
        # Cleanups run last-registered first: unmounted before the test directory is removed.
        self.addCleanup(subprocess.run, ["umount", str(path)], capture_output=True)
        return path

    @unittest.skipUnless(os.geteuid() == 0, "mounts tmpfs file systems (root)")
    def test_read_only_dir_and_full_tmpfs(self):
        ro = self.mount_tmpfs(self.tmp / "ro", "ro,size=1m")
        r = self.run_broadcast(["--no-publish", "--source", "test", "--replay-seconds", "5", "--replay-dir", ro,
                                "--duration", "1"])
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertIn(f"--replay-dir {ro}: not writable: Read-only file system", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

        full = self.mount_tmpfs(self.tmp / "full", "size=256k")
        live = self.tmp / "live.flv"
        stats = self.track_file(self.tmp / "stats.jsonl")
        # The moving pattern spends the whole bitrate: a 5 s clip is far over 256 KiB.
        proc = self.popen(["--no-publish", "--source", "test", "--res", "480p",
                           "--record", live, "--replay-seconds", "5", "--replay-dir", full, "--duration", "14",
                           "--stats-json", stats])
        time.sleep(8)
        proc.send_signal(signal.SIGUSR1)
        rc, err = self.finish(proc)
        self.assertEqual(rc, 0, err[-2000:])
        warnings = [l for l in err.splitlines() if "warning: replay:" in l]
        self.assertEqual(len(warnings), 1, err[-2000:])
        self.assertIn("No space left on device", warnings[0])
        self.assertIn("the stream is unaffected", warnings[0])
        self.assertEqual(list(full.iterdir()), [], "a failed save leaves no file")
        self.assertIn("finished:", err)
        # The stream went on through the failed save: the recording decodes to the end, with no hole.
        self.assertRecordingOK(live, expect_video_codec="h264", expect_audio_codec="aac")
        _, _, end = video_keyframe_first_and_span(live)
        self.assertGreaterEqual(end, 14 - 1.0)
        last = json.loads(stats.read_text().splitlines()[-1])
        worst = max(g for _, g in video_gaps(live))
        self.assertLessEqual(worst, 0.5, f"a {worst * 1000:.0f} ms hole in the recording; drops {last['drops']}")


if __name__ == "__main__":
    unittest.main()
