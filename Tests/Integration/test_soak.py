"""CI soak (issue 3) and CI A/V sync (issue 4) through the real binary and a real nginx-rtmp.

- test_soak_720p30_50M_throttled: scripts/soak, 3 minutes of 720p30 in a 50 MB memory
  cgroup, 60 s of it through a link throttled to audio + half the video bitrate actually
  produced (measured by a 12 s calibration run); must pass.
- test_avsync_impaired_aac_and_opus: two 2-minute test-source runs at once (AAC and Opus, each
  to its own nginx) with skew 300 ppm, jitter 15 ms,
  mic delay 700 ms and a 3 s gap at 60 s; scripts/avsync on each nginx's
  recording must pair every flash with its beep (no unpaired event: the first flash after
  the gap counts like any other) and find |A-V| <= 35 ms, no bad timestamps and continuous
  audio.

- test_soak_720p_replay60_50M (issue 16's memory acceptance; LONG: about 5.5 minutes): scripts/soak
  --replay-seconds 60 --ring-reference, 3 minutes of 720p30 in a 50 MB memory cgroup saving a
  clip every 30 s, at the highest --video-bitrate whose plan fits 60 s with 1 MB to spare; then the same soak
  without the ring (REPLAY_REFERENCE_MINUTES, budget less the ring line: the same x264
  configuration). No OOM, every clip written and decodable, VmHWM within 1 MB after the ring
  filled, the plan's ring line within 10% of the VmHWM growth from enabling the ring.

These take about 14 minutes together. SKIP_LONG_TESTS=1 skips them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

from bktools import targets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import (BROADCAST_BIN, REPO_ROOT, BroadcastTestCase,  # noqa: E402
                     new_key, run_broadcast, start_ingest)
from support import exclusive  # noqa: E402

LONG = not os.environ.get("SKIP_LONG_TESTS")


def flash_frames_not_sent(rec: Path, beeps: list[float], fps: float = 30.0) -> list[float]:
    """The unpaired beeps whose flash frame is missing from the recording (a hole of more
    than one frame in the video timestamps around the beep): frames the video lane dropped
    as encoder_busy on a loaded machine, counted in the stats, not a sync failure."""
    import av

    with av.open(str(rec)) as c:
        vs = c.streams.video[0]
        vt = sorted(float(p.pts * p.time_base) for p in c.demux(vs) if p.pts is not None)
    missing = []
    for b in beeps:
        before = [t for t in vt if t <= b + 0.5 / fps]
        after = [t for t in vt if t > b + 0.5 / fps]
        if before and after and after[0] - before[-1] > 1.5 / fps:
            missing.append(b)
    return missing
PY = sys.executable
SYNC_MAX_MS = targets.SYNC_IMPAIRED_MAX_MS
DRIFT_MAX_MS_PER_HOUR = targets.DRIFT_MAX_MS_PER_HOUR

VIDEO_KBPS = 2500
REPLAY_SECONDS = 60
# How far the replay soak's budget may move without changing the x264 configuration its plan
# picks; see replay_bitrate. x264's cost at open is measured on every run and moves ~0.3 MB.
REPLAY_PLAN_BAND_MB = 0.75
# The reference only needs its steady-state VmHWM: measured, it rises 0.12 MB after its first
# 10 s, under 1% of the ring line, so one minute keeps CI time down without moving the verdict.
REPLAY_REFERENCE_MINUTES = 1


def soak_cgroup(soak_stderr: str) -> Path:
    """The cgroup scripts/soak made, as it names it ("soak: cgroup v1|v2 PATH, cap ..."): the exact
    path under either hierarchy, so the leftover check holds for cgroup v1 and v2 alike."""
    m = re.search(r"soak: cgroup v([12]) (/sys/fs/cgroup/\S+), cap", soak_stderr)
    if not m:
        raise AssertionError(f"scripts/soak did not name its cgroup:\n{soak_stderr[-2000:]}")
    return Path(m.group(2))


def cgroups_writable() -> bool:
    for root in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup"):
        if os.path.isfile(os.path.join(root, "cgroup.procs")) and os.access(root, os.W_OK):
            return True
    return False


@exclusive("a memory soak: VmHWM, bitrates")
@unittest.skipUnless(LONG, "SKIP_LONG_TESTS set")
@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class SoakTest(BroadcastTestCase):
    def measured_kbps(self) -> tuple[float, float]:
        """(video, audio) kbit/s the test source really produces at 720p30.

        The test pattern compresses far below the nominal --video-bitrate (about 100 kbit/s
        of a 2500 kbit/s target), so a link at half the *nominal* rate never congests.
        The throttle is derived from what is really sent instead."""
        stats = self.track_file(self.tmp / "calibrate.jsonl")
        r = self.run_broadcast(["--no-publish", "--record", str(self.tmp / "calibrate.flv"),
                                "--source", "test", "--res", "720p", "--fps", "30",
                                "--video-bitrate", str(VIDEO_KBPS), "--duration", "12",
                                "--stats-json", str(stats), "--quiet"], timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        lines = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()]
        steady = [x for x in lines if x.get("time_s", 0) >= 4 and x.get("state") != "finished"]
        self.assertTrue(steady, "no stats from the calibration run")
        video = sum(x["video_kbps"] for x in steady) / len(steady)
        audio = sum(x["audio_kbps"] for x in steady) / len(steady)
        return video, audio

    @unittest.skipUnless(cgroups_writable(), "needs a writable memory cgroup (root)")
    def test_soak_720p30_50M_throttled(self):
        video, audio = self.measured_kbps()
        # The link carries the audio plus half of the video the encoder really makes.
        link = int(audio + video / 2)
        print(f"\n--- soak: measured video {video:.0f} kbit/s, audio {audio:.0f} kbit/s; "
              f"link throttled to {link} kbit/s ---", file=sys.stderr)
        out = self.tmp / "soak"
        cmd = [str(REPO_ROOT / "scripts" / "soak"), "--minutes", "3", "--res", "720p",
               "--fps", "30", "--memory-cap", "50M", "--video-bitrate", str(VIDEO_KBPS),
               "--throttle-kbps", str(link), "--throttle-from", "60",
               "--throttle-for", "60", "--out", str(out)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=3 * 60 + 180)
        self._captured_texts += [p.stdout, p.stderr]
        for name in ("stats.jsonl", "broadcast.log", "proxy.log"):
            self.track_file(out / name)
        detail = f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"
        print(f"\n--- soak ---\n{p.stdout}", file=sys.stderr)
        summary = json.loads((out / "summary.json").read_text())
        self.assertEqual(p.returncode, 0, detail)
        self.assertTrue(summary["ok"], detail)
        self.assertLess(summary["peak_rss_kb"], 50 * 1024, detail)
        self.assertLessEqual(summary["growth_kb"], 1024, detail)
        self.assertTrue((out / "rss.png").stat().st_size > 0)
        # Back-pressure engaged: while the link is at half the video bitrate, what the
        # broadcast got onto the wire cannot exceed the link by much...
        during = summary["kbps_during_throttle"]
        self.assertIsNotNone(during, detail)
        self.assertLess(during, link * 1.2, detail)
        # ...and once the link is back, the bitrate climbs above the throttled rate again.
        self.assertGreater(summary["kbps_after_throttle"], link, detail)
        # No configuration-level failures hidden in the drop counters.
        self.assertEqual(summary["drops"].get("malformed", 0), 0, detail)
        self.assertEqual(summary["drops"].get("backwards_timestamp", 0), 0, detail)
        # The cgroup this soak made is gone.
        self.assertCgroupRemoved(p.stderr)

    def assertCgroupRemoved(self, soak_stderr: str) -> None:
        cg = soak_cgroup(soak_stderr)
        self.assertFalse(cg.exists(), f"scripts/soak left its cgroup {cg} behind")


@exclusive("anonymous memory across a throttle episode")
@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class ThrottleEpisodeMemoryTest(BroadcastTestCase):
    """Issue 23: a congestion episode leaves no memory behind. The 45-minute soak grew 1.32 MB of
    anon in two steps during and just after its throttle (the send queue's ring restarts at offset
    0 whenever it empties, so its pages became resident only as deep as congestion ever filled it,
    and stayed). A short run: 720p to nginx-rtmp through a link throttled below the audio rate
    alone from t = 15 s for 20 s, then free again; anon + shmem after the episode may not exceed
    what it was before by more than 0.25 MB."""

    LINK_KBPS = 100   # below the 128 kbit/s AAC alone: the queue backs up whatever the video makes

    def test_throttle_episode_leaves_anon_where_it_was(self):
        import select
        import time
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        proxy = subprocess.Popen([PY, str(REPO_ROOT / "tools" / "throttle_proxy.py"), "--listen-port", "0",
                                  "--target-port", str(ingest.port), "--throttle-kbps", str(self.LINK_KBPS),
                                  "--throttle-from", "15", "--throttle-for", "20"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(proxy.wait, 10)
        self.addCleanup(proxy.kill)
        port = None
        deadline = time.monotonic() + 10
        while port is None and time.monotonic() < deadline:
            if select.select([proxy.stdout], [], [], 1)[0]:
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", proxy.stdout.readline())
                port = int(m.group(1)) if m else None
        self.assertIsNotNone(port, "throttle proxy did not start")
        stats = self.track_file(self.tmp / "stats.jsonl")
        r = self.run_broadcast(["--url", f"rtmp://127.0.0.1:{port}/live", "--key", new_key(), "--res", "720p",
                                "--source", "test", "--duration", "55", "--quiet", "--stats-json", str(stats)],
                               timeout=70)
        self.assertEqual(r.returncode, 0, r.describe())
        lines = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()]
        live = [x for x in lines if x["state"] != "finished"]
        owned = lambda x: x["rss_anon_bytes"] + x["rss_shmem_bytes"]  # noqa: E731
        before = [owned(x) for x in live if 10 <= x["time_s"] < 15]
        during = [x for x in live if 15 <= x["time_s"] < 35]
        after = [owned(x) for x in live if x["time_s"] >= 15]
        self.assertGreaterEqual(len(before), 4, lines)
        self.assertGreaterEqual(len(after), 30, lines)
        # The episode really congested the queue: video dropped by policy, the queue backed up.
        last = live[-1]
        self.assertGreater(last["drops"]["congestion_p_frame"] + last["drops"]["congestion_until_idr"], 0, last)
        self.assertGreater(max(x["queue_ms"] for x in during), 700, [x["queue_ms"] for x in during])
        self.assertEqual(last["state"], "live", last)
        growth = max(after) - max(before)
        series = [(x["time_s"], round(owned(x) / 1048576, 2)) for x in live if x["time_s"] >= 8]
        print(f"throttle episode: anon+shmem growth {growth / 1048576:.2f} MB", file=sys.stderr)
        self.assertLessEqual(growth, 256 << 10, f"anon+shmem grew {growth / 1048576:.2f} MB: {series}")


@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
@unittest.skipUnless(cgroups_writable(), "needs a writable memory cgroup (root)")
class SoakCleanupTest(BroadcastTestCase):
    """Not long: a 6 s scripts/soak, for its cgroup bookkeeping only."""

    def test_short_soak_removes_its_cgroup(self):
        # 6 s: enough to create the cgroup, run broadcast inside it and clean up.
        out = self.tmp / "short-soak"
        p = subprocess.run([str(REPO_ROOT / "scripts" / "soak"), "--minutes", "0.1", "--res", "360p",
                            "--memory-cap", "50M", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
        self._captured_texts += [p.stdout, p.stderr]
        for name in ("stats.jsonl", "broadcast.log"):
            self.track_file(out / name)
        self.assertNotEqual(p.returncode, 2, f"soak setup failed:\n{p.stderr[-3000:]}")
        cg = soak_cgroup(p.stderr)
        self.assertTrue(cg.name.startswith("broadcast-soak-"), cg)
        self.assertFalse(cg.exists(), f"scripts/soak left its cgroup {cg} behind")


@exclusive("a memory soak: VmHWM of the replay ring")
@unittest.skipUnless(LONG, "SKIP_LONG_TESTS set")
@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
@unittest.skipUnless(cgroups_writable(), "needs a writable memory cgroup (root)")
class ReplaySoakTest(BroadcastTestCase):
    """Issue 16's memory acceptance (LONG: about 5 minutes)."""

    def replay_plan(self, kbps: int, budget_mb: float) -> tuple[bool, str, str]:
        """(fits, x264 configuration, plan text) for a 720p30 --replay-seconds 60 plan."""
        r = self.run_broadcast(["--print-memory-plan", "--res", "720p", "--fps", "30", "--source", "test",
                                "--memory-budget", f"{int(budget_mb * 1024)}K", "--video-bitrate", str(kbps),
                                "--replay-seconds", str(REPLAY_SECONDS)])
        m = re.search(r"^\s*x264 configuration\s+(.+?)\s*$", r.stdout, re.M)
        return r.returncode == 0, (m.group(1) if m else ""), r.stdout

    def replay_bitrate(self) -> int:
        """The highest --video-bitrate (100 kbps steps, from the 720p default down) whose memory plan
        fits --replay-seconds 60 in 50 MB and picks the same x264 configuration with the budget
        REPLAY_PLAN_BAND_MB lower or higher. The soak compares this run's VmHWM with a reference
        run without the ring, planned separately; both plans count x264's cost at open as measured
        on the spot, which moves ~0.3 MB between runs. Near a step of the encoder ladder that was
        enough for the two to pick different configurations (ultrafast vs veryfast-lean at 2400
        kbps; veryfast-lean with 1 pending frame vs 2 at 2300), and then they cannot be compared.
        Away from a step by the band on both sides, the noise cannot move either plan across it."""
        for kbps in range(VIDEO_KBPS, 99, -100):
            fits, config, text = self.replay_plan(kbps, 50)
            if not fits:
                continue
            lower = self.replay_plan(kbps, 50 - REPLAY_PLAN_BAND_MB)
            higher = self.replay_plan(kbps, 50 + REPLAY_PLAN_BAND_MB)
            if lower[0] and lower[1] == config and higher[1] == config:
                print(f"\n--- replay soak: --video-bitrate {kbps} is the highest whose plan fits {REPLAY_SECONDS} s "
                      f"and keeps '{config}' with the budget {REPLAY_PLAN_BAND_MB} MB either way:\n{text}",
                      file=sys.stderr)
                return kbps
        self.fail("no --video-bitrate fits --replay-seconds 60 in 50 MB away from an x264 ladder step")

    @unittest.skipUnless(cgroups_writable(), "needs a writable memory cgroup (root)")
    def test_soak_720p_replay60_50M(self):
        kbps = self.replay_bitrate()
        out = self.tmp / "soak-replay"
        cmd = [str(REPO_ROOT / "scripts" / "soak"), "--minutes", "3", "--res", "720p", "--fps", "30",
               "--memory-cap", "50M", "--video-bitrate", str(kbps), "--replay-seconds", str(REPLAY_SECONDS),
               "--ring-reference", "--reference-minutes", str(REPLAY_REFERENCE_MINUTES), "--out", str(out)]
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=(3 + REPLAY_REFERENCE_MINUTES) * 60 + 300)
        self._captured_texts += [p.stdout, p.stderr]
        for name in ("stats.jsonl", "broadcast.log", "reference/stats.jsonl", "reference/broadcast.log"):
            self.track_file(out / name)
        detail = f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"
        print(f"\n--- replay soak ---\n{p.stdout}\n{p.stderr[-1500:]}", file=sys.stderr)
        summary = json.loads((out / "summary.json").read_text())
        meta = json.loads((out / "soak.json").read_text())
        self.assertEqual(p.returncode, 0, detail)
        self.assertTrue(summary["ok"], detail)
        # The checks behind that verdict, spelled out.
        self.assertEqual(meta["cgroup_oom_kill"], 0, detail)
        self.assertEqual(meta["exit_code"], 0, detail)
        self.assertLess(summary["peak_rss_kb"], 50 * 1024, detail)
        self.assertIsNotNone(summary.get("ring_filled_s"), detail)
        self.assertLessEqual(summary["hwm_growth_after_ring_full_kb"], 1024, detail)
        growth, plan = summary["ring_growth_kb"], summary["plan_ring_kb"]
        self.assertLessEqual(abs(plan - growth), 0.10 * growth, detail)
        clips = sorted((out / "clips").glob("replay-*.mp4"))
        self.assertGreaterEqual(len(clips), 5, detail)     # 30, 60, ... 150 s of a 180 s run
        for clip in clips:
            self.assertRecordingOK(clip, expect_video_codec="h264", expect_audio_codec="aac")


@exclusive("A/V sync on an impaired link")
@unittest.skipUnless(LONG, "SKIP_LONG_TESTS set")
@unittest.skipUnless(BROADCAST_BIN.exists(), f"{BROADCAST_BIN} not built")
class AVSyncImpairedTest(BroadcastTestCase):
    SECONDS = 120

    def stream_impaired(self, codec: str, ingest):
        """Streams one impaired run to `ingest`; returns (run result, ingest, key, stats path).
        Runs on a worker thread: the caller records the output for the key-leak check."""
        key = new_key()
        local = self.tmp / f"local-{codec}.flv"
        stats = self.tmp / f"stats-{codec}.jsonl"
        # Sync is about timestamps: the static picture keeps x264 real-time on a loaded 2-core
        # machine, so a dropped flash frame (counted, but unpairable) does not mask the measure.
        args = ["--url", ingest.url, "--source", "test", "--test-pattern", "static", "--res", "720p", "--fps", "30",
                "--audio-codec", codec, "--duration", str(self.SECONDS),
                "--test-audio-skew-ppm", "300", "--test-jitter-ms", "15",
                "--test-mic-delay-ms", "700", "--test-gap-at", "60", "--test-gap-ms", "3000",
                "--record", str(local), "--stats-json", str(stats)]
        r = run_broadcast(args, env={"STREAM_KEY": key}, timeout=self.SECONDS + 90)
        return r, ingest, key, stats

    def check_impaired(self, codec: str, r, ingest, key: str, stats: Path) -> dict:
        self._captured_texts += [r.stdout, r.stderr]
        self.track_file(stats)
        self.assertEqual(r.returncode, 0, r.describe())
        ingest.stop()  # nginx finalises the recording when the publisher is gone
        rec = ingest.wait_recording(key)
        self.assertTrue(rec.exists() and rec.stat().st_size > 0, "no nginx recording")
        plot = self.tmp / f"avsync-{codec}.png"
        p = subprocess.run([PY, str(REPO_ROOT / "tools" / "avsync.py"), str(rec),
                            "--tolerance-ms", str(SYNC_MAX_MS), "--max-drift-ms-per-hour", str(DRIFT_MAX_MS_PER_HOUR), "--json", "--plot", str(plot)],
                           capture_output=True, text=True, timeout=300)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        result = json.loads(p.stdout)
        s = result["summary"]
        print(f"\n--- avsync {codec} (nginx recording) ---\n"
              f"events={s.get('events')} mean={s.get('mean_ms')} max={s.get('max_abs_ms')} "
              f"stddev={s.get('stddev_ms')} drift={s.get('drift_ms_per_hour')} ms/h "
              f"streams={result['streams']} reasons={result['reasons']}", file=sys.stderr)
        # Flashes at 1..119 s, minus the 3 s gap (a flash lost to encoder_busy on a loaded
        # machine would show up as an unpaired beep below, not pass silently).
        self.assertGreaterEqual(s["events"], self.SECONDS - 3 - 15, result["reasons"])
        # No flash without its beep (audio lost or late). A beep without its flash is only
        # accepted where the flash frame itself was dropped (encoder_busy under load).
        self.assertEqual(result["unpaired"]["flashes"], [], result["reasons"])
        lone_beeps = result["unpaired"]["beeps"]
        self.assertEqual(flash_frames_not_sent(rec, lone_beeps), lone_beeps, result["reasons"])
        last = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()][-1]
        self.assertLessEqual(len(lone_beeps), last["drops"]["encoder_busy"], result["reasons"])
        # The first flash after the gap (63 s) is measured, not skipped.
        resumed = [e for e in result["events"] if 62.9 <= e["video_s"] <= 63.2]
        self.assertEqual(len(resumed), 1, result["reasons"])
        print(f"first flash after the gap: {resumed[0]}", file=sys.stderr)
        self.assertLessEqual(s["max_abs_ms"], SYNC_MAX_MS, result["reasons"])
        # Drift (issue 12: 5 ms/hour), as far as this run resolves it (avsync: 3 standard errors).
        self.assertEqual([x for x in result["reasons"] if x.startswith("drift")], [], s)
        for st in result["streams"]:
            self.assertEqual(st["non_increasing"], 0, st)
            self.assertEqual(st["negative"], 0, st)
            if st["kind"] == "audio":
                self.assertEqual(st["gaps"], 0, st)
        if not lone_beeps:
            self.assertEqual(p.returncode, 0, result["reasons"])
        return result

    def test_avsync_impaired_aac_and_opus(self):
        # The two 2-minute runs stream at the same time (about 0.7 core each with the static
        # picture: 2 minutes of CI time saved); each is checked on its own.
        from concurrent.futures import ThreadPoolExecutor
        ingests = {}
        for codec in ("aac", "opus"):
            ingests[codec] = start_ingest()
            self.addCleanup(ingests[codec].cleanup)
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = {codec: pool.submit(self.stream_impaired, codec, ingest) for codec, ingest in ingests.items()}
            done = {codec: f.result() for codec, f in runs.items()}
        for codec, run in done.items():
            with self.subTest(codec=codec):
                self.check_impaired(codec, *run)


if __name__ == "__main__":
    unittest.main()
