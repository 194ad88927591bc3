"""The screen through the real xdg-desktop-portal (1.16, with xdg-desktop-portal-gnome 43) on a real,
headless GNOME desktop (scripts/desktop-up: gnome-shell --headless --wayland with a 1280x720
virtual monitor, software GL, PipeWire + WirePlumber, no audio devices). desktop-up starts once for
the module and desktop-down stops it by pid. The real `broadcast` binary (a copy the desktop user
can run) streams as that unprivileged user to nginx-rtmp; PyAV decodes what arrived.

Mutter's ScreenCast is damage-driven: it sends a frame only when the screen changes. Where a test
needs frames, tools/desktop_damage.py moves the pointer through Mutter's RemoteDesktop API (real
compositor input). The grant is pre-seeded in the permission store (DESKTOP_PORTAL_TOKEN), so no
run ever sees a dialog: a dialog nobody answers would time the run out.

- the default source (`broadcast --res 720p`, no --source) with the seeded grant streams, exits 0,
  peaks at most 36 MiB (VmHWM, from wait4's rusage), keeps the token file 0600; the next run reuses
  the stored token with no dialog; --cursor embedded draws the moving pointer into the frames,
  --cursor hidden does not;
- the compositor closing the screen-cast session mid-stream (mutter does when the portal backend
  holding it goes away) ends the run with exit 4 and one line;
- RealPortalMovingPointerFrameRate: issue 38's target for a constant frame rate while the pointer
  moves (mutter then paints on its 60 Hz vblank, 17, 33 or 50 ms apart): `--res 720p` (30 fps) for
  20 s gives 570-610 frames, at most 1% of the intervals under 25 ms (PyAV on nginx's recording);
- RealPortalFrameRateAndSilenceTargets: issue 21's targets for a still screen (20 s at 30 fps with
  no damage: >= 570 frames, keyframe gap <= 2.5 s) and a desktop with no audio devices (audio for
  >= 95% of the video's span, one line saying it is silence).
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import (BROADCAST_BIN, REPO_ROOT, TOOLS_DIR, BroadcastTestCase, RunResult,  # noqa: E402
                     new_key, start_ingest)
from support import exclusive  # noqa: E402

import av  # noqa: E402
import numpy as np  # noqa: E402

DESKTOP_UP = REPO_ROOT / "scripts" / "desktop-up"
DESKTOP_DOWN = REPO_ROOT / "scripts" / "desktop-down"
DAMAGE = TOOLS_DIR / "desktop_damage.py"
VMHWM_LIMIT_KIB = 36 * 1024
PORTAL_NOTE = "capturing the screen through the desktop portal"

STATE: Path | None = None
DESKTOP_ENV: dict[str, str] = {}
BIN_DIR: Path | None = None


def setUpModule() -> None:
    global STATE, BIN_DIR
    STATE = Path(tempfile.mkdtemp(prefix="bcast-desktop-"))
    STATE.chmod(0o755)  # the desktop user walks through it
    r = subprocess.run([str(DESKTOP_UP), "--state", str(STATE)], capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        subprocess.run([str(DESKTOP_DOWN), "--state", str(STATE)], check=False, timeout=60)
        raise RuntimeError(f"scripts/desktop-up failed ({r.returncode}): {r.stderr}")
    for line in r.stdout.splitlines():
        for word in line.removeprefix("export ").split():
            if "=" in word:
                k, v = word.split("=", 1)
                DESKTOP_ENV[k] = v
    # The checkout may sit where the desktop user cannot reach (/root): run copies from the state dir.
    BIN_DIR = STATE / "bin"
    BIN_DIR.mkdir(mode=0o755)
    shutil.copy2(BROADCAST_BIN, BIN_DIR / "broadcast")
    shutil.copy2(DAMAGE, BIN_DIR / "desktop_damage.py")


def tearDownModule() -> None:
    if STATE is None:
        return
    subprocess.run([str(DESKTOP_DOWN), "--state", str(STATE)], check=False, timeout=60)
    if not os.environ.get("KEEP_TEST_DIRS"):
        shutil.rmtree(STATE, ignore_errors=True)


def as_desktop_user() -> dict:
    """Popen arguments that run a child as the desktop user (nothing to change when we are it)."""
    user = pwd.getpwnam(DESKTOP_ENV["DESKTOP_USER"])
    if os.getuid() == user.pw_uid:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def session_env(extra: dict | None = None) -> dict:
    """The desktop session's environment, as a client started in it would have it."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    for k in ("XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY", "XDG_CURRENT_DESKTOP",
              "XDG_SESSION_TYPE", "HOME"):
        env[k] = DESKTOP_ENV[k]
    env.update(extra or {})
    return env


def analyse(path: Path) -> dict:
    """PyAV: video frames, size, keyframe times, how many frames differ visibly from the one
    before (a moving cursor), and the audio track's packets and covered time."""
    out = {"frames": 0, "sizes": set(), "keyframes": [], "video_first": 0.0, "video_last": 0.0, "changed": 0,
           "audio_packets": 0, "audio_seconds": 0.0}
    with av.open(str(path)) as c:
        vs = c.streams.video[0] if c.streams.video else None
        aus = c.streams.audio[0] if c.streams.audio else None
        prev = None
        vtimes = []
        for packet in c.demux(*(s for s in (vs, aus) if s is not None)):
            if packet.size == 0:
                continue
            if packet.stream.type == "audio":
                out["audio_packets"] += 1
                if packet.duration:
                    out["audio_seconds"] += float(packet.duration * packet.time_base)
                continue
            t = float(packet.pts * packet.time_base)
            vtimes.append(t)
            if packet.is_keyframe:
                out["keyframes"].append(t)
            for frame in packet.decode():
                out["frames"] += 1
                out["sizes"].add(f"{frame.width}x{frame.height}")
                gray = frame.to_ndarray(format="gray").astype(np.int16)
                # A changed frame: at least 30 pixels differ by more than 60 levels (the cursor
                # is a black-and-white arrow; x264's noise on a still picture stays far below).
                if prev is not None and int((np.abs(gray - prev) > 60).sum()) >= 30:
                    out["changed"] += 1
                prev = gray
        if vtimes:
            out["video_first"], out["video_last"] = min(vtimes), max(vtimes)
    out["video_span"] = out["video_last"] - out["video_first"]
    # Longest stretch without a keyframe, the start and the end of the video included.
    marks = [out["video_first"], *out["keyframes"], out["video_last"]]
    out["keyframe_gap"] = max((b - a for a, b in zip(marks, marks[1:])), default=0.0)
    return out


class DesktopTestCase(BroadcastTestCase):
    """Runs the CLI as the desktop user in a per-test directory the user owns."""

    def setUp(self) -> None:
        super().setUp()
        self.work = Path(tempfile.mkdtemp(prefix="work-", dir=STATE))
        user = pwd.getpwnam(DESKTOP_ENV["DESKTOP_USER"])
        os.chown(self.work, user.pw_uid, user.pw_gid)
        self.work.chmod(0o700)
        self.addCleanup(shutil.rmtree, self.work, True)
        self.state_home = self.work / "state"
        self.token_file = self.state_home / "broadcast" / "portal-restore-token"

    def seed_token_file(self, token: str) -> None:
        """Writes the pre-seeded grant's token where broadcast reads it, as the desktop user would."""
        subprocess.run(["sh", "-c", 'umask 077 && mkdir -p "$(dirname "$1")" && printf "%s\\n" "$2" > "$1"',
                        "sh", str(self.token_file), token], check=True, env=session_env(), **as_desktop_user())

    def new_grant(self) -> str:
        """A fresh pre-seeded grant on the running desktop (scripts/desktop-up --seed-token)."""
        r = subprocess.run([str(DESKTOP_UP), "--state", str(STATE), "--seed-token"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def damage(self, seconds: float) -> subprocess.Popen:
        """Moves the pointer for `seconds` through Mutter's RemoteDesktop API."""
        proc = subprocess.Popen(["/usr/bin/python3", str(BIN_DIR / "desktop_damage.py"), str(seconds)],
                                env=session_env(), cwd=self.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, **as_desktop_user())

        def reap():
            proc.terminate()  # the run it made damage for is over
            proc.communicate(timeout=30)
        self.addCleanup(reap)
        return proc

    def run_desktop(self, args, *, key: str, timeout: float, during=None) -> tuple[RunResult, int]:
        """Runs broadcast as the desktop user with STREAM_KEY = key; returns the result and its
        peak resident set (VmHWM) in KiB. `during()` runs alongside it.

        The peak is wait4's ru_maxrss as GNU time reports it. Not our own wait4: a child's
        ru_maxrss also counts the image it was forked from, and this Python process is ~50 MB."""
        stdout, stderr, peak = self.work / "stdout", self.work / "stderr", self.work / "peak"
        env = session_env({"XDG_STATE_HOME": str(self.state_home), "STREAM_KEY": key})
        argv = [str(BIN_DIR / "broadcast"), *map(str, args)]
        start = time.monotonic()
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", str(peak), *argv], env=env, cwd=self.work,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                    **as_desktop_user())
        helper = threading.Thread(target=during, daemon=True) if during else None
        if helper:
            helper.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, 9)
            proc.wait()
        if helper:
            helper.join(timeout=30)
        err_text = stderr.read_text(errors="replace")
        # GNU time adds "Command exited with non-zero status N" to its -o file, not to stderr.
        peak_lines = peak.read_text().split() if peak.exists() else []
        code = proc.returncode
        tail = [line for line in (peak.read_text().splitlines() if peak.exists() else [])
                if line.startswith("Command terminated by signal")]
        if tail:
            code = -int(tail[0].split()[-1])
        r = RunResult(argv, code, stdout.read_text(errors="replace"), err_text, time.monotonic() - start, timed_out)
        self._captured_texts += [r.stdout, r.stderr]
        return r, int(peak_lines[-1]) if peak_lines and peak_lines[-1].isdigit() else 0

    def stream(self, seconds: int, extra=(), *, damage: bool = True, during=None):
        """`broadcast --res 720p` (the default source) for `seconds` to a private ingest."""
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        stats = self.track_file(self.work / "stats.jsonl")
        if damage:
            self.damage(seconds + 3)
        r, hwm = self.run_desktop(["--url", ingest.url, "--res", "720p", "--duration", seconds,
                                   "--stats-json", stats, *extra], key=key, timeout=seconds + 45, during=during)
        rec = ingest.wait_recording(key)
        return r, hwm, rec


@exclusive("VmHWM and run times on the real desktop (software GL)")
class RealPortalTest(DesktopTestCase):
    def test_seeded_grant_streams_then_stored_token_is_reused_both_cursor_modes(self) -> None:
        seeded = DESKTOP_ENV["DESKTOP_PORTAL_TOKEN"]
        self.seed_token_file(seeded)

        # The headline command: default source, default cursor (embedded), the seeded grant.
        r, hwm_kib, rec = self.stream(6)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn(PORTAL_NOTE, r.stderr)
        a = analyse(rec)
        print(f"\nreal portal, embedded cursor: {a['frames']} frames, {a['changed']} changed, sizes {a['sizes']}, "
              f"VmHWM {hwm_kib / 1024:.1f} MiB, {r.seconds:.1f} s", file=sys.stderr)
        self.assertEqual(a["sizes"], {"1280x720"})
        self.assertGreaterEqual(a["frames"], 30, "the moving pointer gave too few frames")
        # Counted, not a share of the frames: a constant output rate repeats frames between moves.
        self.assertGreaterEqual(a["changed"], 20, "the embedded cursor does not move in the frames")
        self.assertLessEqual(hwm_kib, VMHWM_LIMIT_KIB, f"VmHWM {hwm_kib} KiB over 36 MiB")

        # The token the portal handed back: stored 0600 in a 0700 directory, never printed.
        self.assertTrue(self.token_file.exists(), "no restore token stored")
        self.assertEqual(stat.S_IMODE(self.token_file.stat().st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(self.token_file.parent.stat().st_mode), 0o700)
        stored = self.token_file.read_text().strip()
        self.assertTrue(stored)
        self.assertNotIn(stored, r.stderr + r.stdout)

        # The next run sends the stored token: no dialog (nobody could answer one here), and the
        # hidden cursor leaves the frames still while the pointer moves.
        r2, _, rec2 = self.stream(4, ["--cursor", "hidden"])
        self.assertEqual(r2.returncode, 0, r2.describe())
        self.assertLess(r2.seconds, 4 + 15, "the second run waited: was there a dialog?")
        b = analyse(rec2)
        print(f"real portal, hidden cursor: {b['frames']} frames, {b['changed']} changed", file=sys.stderr)
        self.assertGreater(b["frames"], 0)
        self.assertLessEqual(b["changed"], 2, "--cursor hidden still shows the moving pointer")
        self.assertEqual(stat.S_IMODE(self.token_file.stat().st_mode), 0o600)

    def test_cast_closed_by_the_compositor_mid_stream_exits_4(self) -> None:
        self.seed_token_file(self.new_grant())
        closed = {}

        def close_cast() -> None:
            # Once video flows, the portal backend that holds mutter's ScreenCast session goes away
            # (stopped by the pid the bus reports for its name): mutter then closes the session
            # itself ("D-Bus client with active sessions vanished") and destroys its stream node,
            # as when the user stops the cast. The session's own Stop answers AccessDenied to
            # anyone but that backend, and the top-bar button needs a click.
            stats = self.work / "stats.jsonl"
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                lines = stats.read_text().splitlines() if stats.exists() else []
                if lines and json.loads(lines[-1]).get("video_frames_sent", 0) > 30:
                    break
                time.sleep(0.2)
            r = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                                "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                                "string:org.freedesktop.impl.portal.desktop.gnome"], env=session_env(),
                               capture_output=True, text=True, timeout=20, **as_desktop_user())
            words = r.stdout.split()
            if "uint32" in words:
                closed["backend_pid"] = int(words[words.index("uint32") + 1])
                os.kill(closed["backend_pid"], signal.SIGTERM)

        r, _, rec = self.stream(30, during=close_cast)
        print(f"\ncast closed: {closed}, exit {r.returncode} after {r.seconds:.1f} s:\n{r.stderr}", file=sys.stderr)
        self.assertIn("backend_pid", closed, "the portal backend was not found on the bus")
        self.assertEqual(r.returncode, 4, r.describe())
        self.assertLess(r.seconds, 25, "the run went on after the cast was closed")
        failure = [line for line in r.stderr_lines() if "went away" in line or "closed" in line]
        self.assertEqual(len(failure), 1, r.stderr)
        self.assertTrue(failure[0].startswith("broadcast: "), failure)
        self.assertGreater(analyse(rec)["frames"], 30, "what was captured before the close was not sent")


def video_times(path: Path) -> list[float]:
    """PyAV: the recording's video packet times in seconds, sorted (no decoding)."""
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        return sorted(float(p.pts * p.time_base) for p in c.demux(vs) if p.pts is not None and p.size > 0)


@exclusive("frame intervals of the real desktop while the pointer moves")
class RealPortalMovingPointerFrameRate(DesktopTestCase):
    """Issue 38: the stream carries the rate it declares while mutter sends pictures at its own
    irregular times (before the output grid: 646 frames in 20 s, 180 intervals under 25 ms)."""

    SECONDS = 20

    def test_moving_pointer_streams_a_constant_30_fps(self) -> None:
        self.seed_token_file(self.new_grant())
        r, _, rec = self.stream(self.SECONDS)  # the pointer moves for the whole run
        self.assertEqual(r.returncode, 0, r.describe())
        stats = [json.loads(x) for x in (self.work / "stats.jsonl").read_text().splitlines() if x.strip()]
        last = stats[-1] if stats else {}
        times = video_times(rec)
        gaps = [b - a for a, b in zip(times, times[1:])]
        short = [round(a, 3) for a, g in zip(times, gaps) if g < 0.025]
        print(f"\nmoving pointer {self.SECONDS} s: {len(times)} frames, {len(short)} of {len(gaps)} intervals < 25 ms "
              f"(at {short[:10]}), pictures in {last.get('video_frames_in')}, skipped {last.get('video_frames_skipped')}, "
              f"repeated {last.get('video_frames_repeated')}, drops {last.get('drops')}", file=sys.stderr)
        # The pointer really moved: mutter sent pictures for most of the run, not a still screen.
        self.assertGreaterEqual(last.get("video_frames_in", 0), 10 * self.SECONDS, "too few pictures: did the pointer move?")
        with self.subTest("570-610 frames in 20 s at 30 fps"):
            self.assertGreaterEqual(len(times), 570)
            self.assertLessEqual(len(times), 610)
        with self.subTest("at most 1% of the intervals under 25 ms"):
            self.assertLessEqual(len(short), 0.01 * len(gaps), f"short intervals at {short}")


@exclusive("frame rate and keyframe gaps of a still screen")
class RealPortalFrameRateAndSilenceTargets(DesktopTestCase):
    """Issue 21's targets that need a constant output frame rate and audio that always flows (the
    `frames` helper's work): on a branch without it these fail by design."""

    def test_still_screen_and_no_audio_devices(self) -> None:
        self.seed_token_file(self.new_grant())
        r, _, rec = self.stream(20, ["--fps", "30"], damage=False)
        self.assertEqual(r.returncode, 0, r.describe())
        a = analyse(rec)
        print(f"\nstill screen 20 s: {a['frames']} frames, keyframes at {[round(k, 2) for k in a['keyframes']]}, "
              f"audio {a['audio_packets']} packets {a['audio_seconds']:.2f} s over video span {a['video_span']:.2f} s",
              file=sys.stderr)
        with self.subTest("still screen: >= 570 frames in 20 s at 30 fps"):
            self.assertGreaterEqual(a["frames"], 570)
        with self.subTest("still screen: keyframe gap <= 2.5 s"):
            self.assertTrue(a["keyframes"], "no keyframe at all")
            self.assertLessEqual(a["keyframe_gap"], 2.5, f"keyframes at {a['keyframes']}")
        with self.subTest("no audio devices: audio plays for >= 95% of the video's span"):
            # The video's span, or the run's length less a second when the video itself fell short.
            self.assertGreaterEqual(a["audio_seconds"], 0.95 * max(a["video_span"], 20 - 1))
        with self.subTest("no audio devices: one line per lane says it is silence"):
            silent = [line for line in r.stderr_lines() if "silence" in line.lower()]
            self.assertEqual(len(silent), 2, r.stderr)   # app audio and mic, one line each
            self.assertTrue(any(line.startswith("broadcast: app audio is silence") for line in silent), r.stderr)
            self.assertTrue(any(line.startswith("broadcast: mic is silence") for line in silent), r.stderr)


if __name__ == "__main__":
    unittest.main()
