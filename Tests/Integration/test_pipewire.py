"""PipeWire capture against a real, headless PipeWire (scripts/pipewire-up): no mocks.

- capture: `broadcast --source screen-node --screen-node pw-test-screen --res 720p --duration 10`
  into a real nginx-rtmp; the recording (decoded by PyAV in tools/pw_capture_check.py) must hold
  >= 95% of the frames the producer made, counters in order, and the 1 kHz (app-sink) and
  660 Hz (virtual mic) tones;
- resize: the producer goes 1280x720 -> 1920x1080 -> 800x600 mid-run; the output stays 1280x720
  and the centred square stays square (no distortion);
- memory: a 2560x1440 desktop at --res 720p stays under the 50 MiB budget (VmHWM read by the
  test: shared capture buffers are charged to the producer's cgroup, not ours); a 3840x2160
  desktop streams at --res 1080p; a producer insisting on 8 buffers costs no more than 2;
- errors: no daemon (exit 2, says what is missing and how to fix it), a missing node (exit 2,
  lists the nodes that exist), --list-sources;
- a damage-driven screen (pw-test-screen --damage: caps framerate=0/1, a frame only on change,
  as mutter's ScreenCast): a still screen for 20 s at 30 fps records >= 570 frames with keyframes
  <= 2.5 s apart (PyAV), the stats count 1 captured and the rest repeated; and with
  --no-app-audio --no-mic the stream is video-only (no audio stream, FLV header without the
  audio flag); pictures that change at given times all reach the recording, in order;
- the default sink changes mid-run (a headset plugged in: a new null sink made the default with
  wpctl): the app audio follows it, as OBS's "Default" device does;
- a node that goes away mid-stream (the screen producer exits, or the app-audio sink is
  destroyed): the run ends with exit 4 and one line naming the node, no crash, no key leak, and
  what was captured decodes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import REPO_ROOT, TOOLS_DIR, BroadcastTestCase, new_key, start_ingest  # noqa: E402
from support import exclusive  # noqa: E402

if str(TOOLS_DIR) not in sys.path:
    sys.path.insert(0, str(TOOLS_DIR))
import pw_capture_check  # noqa: E402
import pw_memory_run  # noqa: E402
from support import BROADCAST_BIN  # noqa: E402

PIPEWIRE_UP = REPO_ROOT / "scripts" / "pipewire-up"
PIPEWIRE_DOWN = REPO_ROOT / "scripts" / "pipewire-down"
PRODUCER = Path(os.environ.get("PW_TEST_SCREEN", REPO_ROOT / ".build" / "release" / "pw-test-screen"))


def read_produced(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


class ProducerRate:
    """Samples the producer's count file while a capture runs. The producer replaces the file by
    a rename each second, so each new mtime is the moment its count was true; the producer only
    makes frames while a consumer is linked, so the rate comes from the samples whose count grew."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.samples: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "ProducerRate":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        last = None
        while not self._stop.wait(0.05):
            try:
                st = self.path.stat()
                if st.st_mtime_ns == last:
                    continue
                count = int(self.path.read_text().split()[0])
                if self.path.stat().st_mtime_ns != st.st_mtime_ns:
                    continue  # replaced while read: take the next one
            except (OSError, ValueError, IndexError):
                continue
            last = st.st_mtime_ns
            self.samples.append((count, st.st_mtime_ns / 1e9))

    def fps(self) -> tuple[float, int, float]:
        """Frames per second between the first and last samples of the growing stretch."""
        grew = [i for i in range(1, len(self.samples)) if self.samples[i][0] > self.samples[i - 1][0]]
        if len(grew) < 3:
            raise AssertionError(f"the producer's count grew in only {len(grew)} of its samples: {self.samples}")
        # The stretch's ends are partial seconds (the consumer linked or left mid-second): skip them.
        (c0, t0), (c1, t1) = self.samples[grew[0]], self.samples[grew[-1] - 1]
        if t1 <= t0:
            raise AssertionError(f"too few whole seconds of production: {self.samples}")
        return (c1 - c0) / (t1 - t0), c1 - c0, t1 - t0


class PipeWireCaptureTest(BroadcastTestCase):
    state: Path
    pw_env: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.state = Path(tempfile.mkdtemp(prefix="bcast-pipewire-"))
        r = subprocess.run([str(PIPEWIRE_UP), "--state", str(cls.state)], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "PW_TEST_SCREEN": str(PRODUCER)})
        if r.returncode != 0:
            subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False)
            raise RuntimeError(f"scripts/pipewire-up failed: {r.stderr}")
        cls.pw_env = {}
        for line in r.stdout.splitlines():
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                cls.pw_env[k] = v

    @classmethod
    def tearDownClass(cls) -> None:
        subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False, timeout=60)
        if not os.environ.get("KEEP_TEST_DIRS"):
            subprocess.run(["rm", "-rf", str(cls.state)], check=False)

    def capture(self, node: str, seconds: int = 10):
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        r = self.run_broadcast(["--url", ingest.url, "--key", key, "--source", "screen-node",
                                "--screen-node", node, "--app-audio", "app-sink", "--mic", "test-mic",
                                "--res", "720p", "--duration", str(seconds)],
                               env=self.pw_env, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        rec = ingest.wait_recording(key)
        self.assertTrue(rec.exists(), f"no recording; ingest log:\n{ingest.error_log()[-2000:]}")
        return pw_capture_check.analyse(str(rec), [1000.0, 660.0]), r

    @exclusive("frames against the producer's rate")
    def test_capture_screen_node_into_nginx(self) -> None:
        frames_file = self.state / "frames"
        seconds = 10
        with ProducerRate(frames_file) as producer:
            report, _ = self.capture("pw-test-screen", seconds)
            time.sleep(1.5)  # the producer writes its count every second
        # The capture stream stops itself `seconds` after it starts, so the frames it owes the
        # ingest are the producer's rate over that window. Counting everything produced between
        # two reads before and after the run would include start-up, shutdown and each read's
        # staleness (a flake under load: 299 of 315).
        rate, counted, span = producer.fps()
        owed = rate * seconds
        print(f"\npipewire capture: producer {rate:.2f} fps ({counted} frames in {span:.2f} s), "
              f"owed {owed:.0f} in {seconds} s, recorded {report['video_frames']} frames, "
              f"{report['counters_read']} counters {report['first_counter']}..{report['last_counter']}, "
              f"coverage {report['coverage']:.3f}, out of order {report['out_of_order']}, "
              f"repeats {report['repeats']}, tones {report['tones']}", file=sys.stderr)
        self.assertEqual(report["sizes"], ["1280x720"])
        self.assertGreater(rate, 25.0, "the producer made too few frames (30 fps expected)")
        self.assertEqual(report["out_of_order"], 0)
        self.assertGreaterEqual(report["coverage"], 0.95, report)
        distinct = len(set(range(report["first_counter"], report["last_counter"] + 1))) * report["coverage"]
        self.assertGreaterEqual(distinct / owed, 0.95,
                                f"{distinct:.0f} distinct frames of the {owed:.0f} produced in the {seconds} s window")
        self.assertGreater(report["audio_seconds"], 9.0)
        self.assertGreater(report["tones"]["1000"], 100, f"1 kHz app tone missing: {report['tones']}")
        self.assertGreater(report["tones"]["660"], 100, f"660 Hz mic tone missing: {report['tones']}")

    def test_resize_keeps_output_size_without_distortion(self) -> None:
        name = f"pw-test-screen-resize-{os.getpid()}"
        log = self.tmp / "producer.log"
        env = {**os.environ, **self.pw_env}
        with open(log, "w") as out:
            producer = subprocess.Popen([str(PRODUCER), "--name", name, "--resize-at", "3:1920x1080,6:800x600"],
                                        env=env, stdout=out, stderr=out)
        self.addCleanup(producer.wait, 10)
        self.addCleanup(producer.terminate)
        for _ in range(50):
            ls = subprocess.run(["pw-cli", "ls", "Node"], env=env, capture_output=True, text=True).stdout
            if f'node.name = "{name}"' in ls:
                break
            time.sleep(0.1)
        report, _ = self.capture(name, seconds=10)
        print(f"\npipewire resize: sizes {report['sizes']}, phases {report['phases']}, "
              f"square aspect {report['square_aspect_by_phase']}, frames {report['video_frames']}",
              file=sys.stderr)
        self.assertIn("resizing to 800x600", log.read_text(), log.read_text())
        self.assertEqual(report["sizes"], ["1280x720"])
        self.assertEqual(report["phases"], [0, 1, 2], "all three producer sizes must reach the output")
        self.assertEqual(report["out_of_order"], 0)
        self.assertGreater(report["video_frames"], 250)
        self.assertEqual(sorted(map(int, report["square_aspect_by_phase"])), [0, 1, 2],
                         f"the square's aspect was not measured in every phase: {report['square_aspect_by_phase']}")
        for phase, aspect in report["square_aspect_by_phase"].items():
            self.assertAlmostEqual(aspect, 1.0, delta=0.08, msg=f"phase {phase} distorted: square aspect {aspect}")

    def measured(self, size: str, res: str, seconds: int, buffers: int | None = None,
                 extra: list[str] | None = None, producer_args: list[str] | None = None) -> dict:
        """A measured capture run (tools/pw_memory_run.py): VmHWM and the Rss split, plus the
        PyAV analysis of what nginx recorded."""
        r = pw_memory_run.run(size, res, seconds, buffers, BROADCAST_BIN.parent, {**os.environ, **self.pw_env},
                              self.tmp / "runs", extra=extra, broadcast=BROADCAST_BIN, producer_bin=PRODUCER,
                              producer_args=producer_args)
        if r["exit"] != 0:
            return r
        rec = Path(r["recording"])
        self.assertTrue(rec.exists(), f"no recording: {r}")
        rep = pw_capture_check.analyse(str(rec), [1000.0, 660.0])
        r.update(video_frames=rep["video_frames"], coverage=rep["coverage"], sizes=rep["sizes"],
                 out_of_order=rep["out_of_order"], tones=rep["tones"])
        print(f"\npipewire memory {size} -> {res} buffers {buffers or 'default'}: VmHWM {r['vmhwm_mib']} MiB "
              f"(at max {r['at_max_rss_mib']}), cpu {r['cpu_s']} s, produced {r['produced']}, "
              f"recorded {r['video_frames']}, coverage {r['coverage']:.3f}", file=sys.stderr)
        return r

    def assertStreamed(self, r: dict, size: str, seconds: int) -> None:
        self.assertEqual(r["exit"], 0, r["stderr"])
        self.assertEqual(r["sizes"], [size])
        self.assertEqual(r["out_of_order"], 0)
        self.assertGreaterEqual(r["coverage"], 0.95, r)
        # Real time on a loaded 2-core machine: x264 may fall behind and the lane drops (and counts)
        # frames; a broken capture path delivers far fewer than this.
        self.assertGreaterEqual(r["video_frames"], 0.85 * 30 * (seconds - 1), r)
        self.assertGreater(r["tones"]["1000"], 100, f"app tone missing: {r['tones']}")
        self.assertGreater(r["tones"]["660"], 100, f"mic tone missing: {r['tones']}")

    @exclusive("VmHWM")
    def test_memory_2560x1440_desktop_at_720p_under_budget(self) -> None:
        r = self.measured("2560x1440", "720p", 30)
        self.assertStreamed(r, "1280x720", 30)
        self.assertIn("2560x1440", r["producer_format"])
        self.assertLess(r["vmhwm_mib"], 50.0, r)
        # What the frames keep resident of the 2 x 14.7 MB shared buffers: a few stripes.
        self.assertLess(r["at_max_rss_mib"].get("RssShmem", 99), 2.0, r)
        self.assertPlanBounds(r)

    def assertPlanBounds(self, r: dict) -> None:
        """The plan printed for the same arguments holds what the run used: its capture line
        covers the shared buffers resident at the peak, and its total (without the headroom)
        covers VmHWM. MB in the plan are MiB (the budget's unit)."""
        plan = r["plan_mb"]
        self.assertEqual(r["plan_exit"], 0, r)
        self.assertIn("capture source buffers", plan, plan)
        self.assertLessEqual(r["at_max_rss_mib"].get("RssShmem", 99), plan["capture source buffers"], r)
        self.assertLessEqual(r["vmhwm_mib"], plan["total"], r)

    @exclusive("VmHWM")
    def test_memory_3840x2160_desktop_streams_at_1080p(self) -> None:
        r = self.measured("3840x2160", "1080p", 30)
        self.assertEqual(r["exit"], 0, r["stderr"])
        self.assertEqual(r["sizes"], ["1920x1080"])
        self.assertEqual(r["out_of_order"], 0)
        self.assertIn("3840x2160", r["producer_format"])
        # 1080p with 1 pending frame on 2 shared cores drops some frames as encoder_busy (counted).
        self.assertGreaterEqual(r["video_frames"], 0.7 * 30 * 29, r)
        # The 2 x 33 MB shared buffers stay out of our RSS: only stripes are resident.
        self.assertLess(r["at_max_rss_mib"].get("RssShmem", 99), 2.0, r)
        # The hard limit: the default 50 MB budget (50 MiB here is the budget's own unit, MB = MiB).
        self.assertLess(r["vmhwm_mib"], 50.0, r)
        self.assertPlanBounds(r)

    @exclusive("VmHWM")
    def test_memory_producer_insisting_on_8_buffers_costs_no_more_than_2(self) -> None:
        two = self.measured("2560x1440", "720p", 20, buffers=2)
        eight = self.measured("2560x1440", "720p", 20, buffers=8)
        self.assertStreamed(two, "1280x720", 20)
        self.assertStreamed(eight, "1280x720", 20)
        self.assertIn("buffers 8", eight["producer_format"])
        self.assertLessEqual(eight["vmhwm_mib"], two["vmhwm_mib"] + 1.5, (two, eight))

    def test_scaling_producer_is_asked_for_the_output_size(self) -> None:
        # A 2560x1440 desktop that can scale: the smallest size covering 720p is 1280x720.
        r = self.measured("2560x1440", "720p", 10, producer_args=["--scalable"])
        self.assertStreamed(r, "1280x720", 10)
        self.assertIn("format BGRx 1280x720", r["producer_format"])

    def wait_node(self, name: str, env: dict) -> int:
        """The id of node `name` once PipeWire lists it (within 5 s)."""
        for _ in range(50):
            ls = subprocess.run(["pw-cli", "ls", "Node"], env=env, capture_output=True, text=True).stdout
            block = None
            for chunk in ls.split("\tid ")[1:]:
                if f'node.name = "{name}"' in chunk:
                    block = chunk
            if block is not None:
                return int(block.split(",", 1)[0])
            time.sleep(0.1)
        self.fail(f"node {name} never appeared")

    def assertNodeLossEndsTheRun(self, args: list[str], remove, node_kind: str, name: str, env: dict) -> None:
        """Streams with `args` for 30 s, calls `remove()` after 4 s: the run must end at once with
        exit 4 and one error line naming the node, no crash, no key anywhere, a decodable recording."""
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        timer = threading.Timer(4.0, remove)
        timer.start()
        self.addCleanup(timer.cancel)
        r = self.run_broadcast(["--url", ingest.url, *args, "--res", "720p", "--duration", "30",
                                "--stats-json", str(stats)], env={**env, "STREAM_KEY": key}, timeout=90)
        timer.join()
        self.assertEqual(r.returncode, 4, r.describe())
        errors = [line for line in r.stderr_lines() if line.startswith("broadcast: error")]
        self.assertEqual(len(errors), 1, r.describe())
        self.assertIn(f"PipeWire {node_kind} node '{name}' went away mid-stream", errors[0])
        # Ended by the loss, not by --duration 30: the last stats line is far short of it
        # (a count of stats seconds, not a wall-clock bound on how fast it reacted).
        lines = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()]
        self.assertLess(lines[-1]["time_s"], 20, lines[-1])
        self.assertEqual(lines[-1]["state"], "finished")
        self.assertGreater(lines[-1]["video_frames_sent"], 30, "streamed before the loss")
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        report = self.assertRecordingOK(rec, expect_video_codec="h264", expect_audio_codec="aac")
        self.assertGreater(report.first("video").frames, 30)

    def test_screen_node_that_goes_away_ends_the_run_with_exit_4(self) -> None:
        name = f"pw-test-screen-vanish-{os.getpid()}"
        env = {**os.environ, **self.pw_env}
        log = self.tmp / "producer.log"
        with open(log, "w") as out:
            producer = subprocess.Popen([str(PRODUCER), "--name", name], env=env, stdout=out, stderr=out)
        self.addCleanup(lambda: (producer.poll() is None and producer.kill(), producer.wait(10)))
        self.wait_node(name, env)
        self.assertNodeLossEndsTheRun(["--source", "screen-node", "--screen-node", name, "--app-audio", "app-sink",
                                       "--mic", "test-mic"], producer.terminate, "screen", name, env)

    def test_audio_node_that_goes_away_ends_the_run_with_exit_4(self) -> None:
        name = f"vanishing-sink-{os.getpid()}"
        env = {**os.environ, **self.pw_env}
        props = (f"{{ factory.name=support.null-audio-sink node.name={name} media.class=Audio/Sink "
                 "object.linger=true audio.position=[ FL FR ] }")
        made = subprocess.run(["pw-cli", "create-node", "adapter", props], env=env, capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)
        node = self.wait_node(name, env)

        def destroy():
            subprocess.run(["pw-cli", "destroy", str(node)], env=env, capture_output=True, timeout=10)
        self.addCleanup(destroy)
        self.assertNodeLossEndsTheRun(["--source", "screen-node", "--screen-node", "pw-test-screen",
                                       "--app-audio", name, "--mic", "test-mic"], destroy, "audio", name, env)

    def damage_producer(self, damage: str) -> str:
        """Starts a damage-driven pw-test-screen (frames only when the picture changes) and
        returns its node name once PipeWire lists it."""
        name = f"pw-test-screen-damage-{os.getpid()}-{len(damage)}"
        env = {**os.environ, **self.pw_env}
        log = self.tmp / f"producer-{name}.log"
        with open(log, "w") as out:
            producer = subprocess.Popen([str(PRODUCER), "--name", name, "--damage", damage,
                                         "--count-file", str(self.tmp / f"{name}.count")],
                                        env=env, stdout=out, stderr=out)
        self.addCleanup(lambda: (producer.poll() is None and producer.terminate(), producer.wait(10)))
        self.wait_node(name, env)
        return name

    @exclusive("frame rate and gaps")
    def test_still_damage_driven_screen_streams_a_constant_frame_rate(self) -> None:
        name = self.damage_producer("never")
        rec = self.tmp / "still.flv"
        stats = self.track_file(self.tmp / "still-stats.jsonl")
        seconds = 20
        r = self.run_broadcast(["--no-publish", "--record", str(rec), "--source", "screen-node",
                                "--screen-node", name, "--no-app-audio", "--no-mic", "--res", "720p",
                                "--fps", "30", "--duration", str(seconds),
                                "--stats-json", str(stats)], env=self.pw_env, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        produced = read_produced(self.tmp / f"{name}.count")
        import av
        with av.open(str(rec)) as c:
            self.assertEqual(len(c.streams.audio), 0, "a video-only run has no audio stream")
            vs = c.streams.video[0]
            packets = [p for p in c.demux(vs) if p.pts is not None]
        times = sorted(float(p.pts * p.time_base) for p in packets)
        keys = sorted(float(p.pts * p.time_base) for p in packets if p.is_keyframe)
        key_gaps = [b - a for a, b in zip(keys, keys[1:])] + ([times[-1] - keys[-1]] if keys else [])
        last = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()][-1]
        print(f"\nstill damage-driven screen: produced {produced}, recorded {len(times)} frames in "
              f"{times[-1] - times[0]:.2f} s, keyframes {len(keys)}, largest keyframe gap "
              f"{max(key_gaps):.2f} s, captured {last['video_frames_in']}, repeated "
              f"{last.get('video_frames_repeated')}", file=sys.stderr)
        self.assertEqual(produced, 1, "the producer must send one frame for a still screen")
        self.assertGreaterEqual(len(times), 570, f"{len(times)} frames in {seconds} s")
        self.assertLessEqual(max(key_gaps), 2.5, keys)
        gaps = [b - a for a, b in zip(times, times[1:])]
        self.assertLessEqual(max(gaps), 0.07, "the grid has no holes")
        self.assertEqual(last["video_frames_in"], 1, last)
        self.assertGreaterEqual(last["video_frames_repeated"], 565, last)
        # FLV header: video flag only (0x01), no audio flag (0x04).
        self.assertEqual(rec.read_bytes()[4], 0x01)

    def test_damage_driven_changes_all_reach_the_recording(self) -> None:
        name = self.damage_producer("2,2.5,5")
        report, r = self.capture(name, seconds=8)
        produced = read_produced(self.tmp / f"{name}.count")
        print(f"\ndamage-driven changes: produced {produced}, recorded {report['video_frames']} frames, "
              f"counters {report['first_counter']}..{report['last_counter']}, out of order "
              f"{report['out_of_order']}, tones {report['tones']}", file=sys.stderr)
        self.assertEqual(produced, 4)
        self.assertEqual(report["out_of_order"], 0)
        self.assertEqual((report["first_counter"], report["last_counter"]), (0, 3), report)
        self.assertEqual(report["coverage"], 1.0, "every change reached the recording")
        self.assertGreaterEqual(report["video_frames"], 0.95 * 30 * 8, report)
        self.assertGreater(report["tones"]["1000"], 100, report["tones"])

    def test_app_audio_follows_the_default_sink(self) -> None:
        name = f"headset-{os.getpid()}"
        env = {**os.environ, **self.pw_env}
        props = (f"{{ factory.name=support.null-audio-sink node.name={name} media.class=Audio/Sink "
                 "object.linger=true audio.position=[ FL FR ] }")
        default_before = subprocess.run(["wpctl", "inspect", "@DEFAULT_AUDIO_SINK@"], env=env, capture_output=True,
                                        text=True).stdout
        self.assertIn('node.name = "app-sink"', default_before, "app-sink is the default sink at the start")
        state = {}

        def plug_in():
            made = subprocess.run(["pw-cli", "create-node", "adapter", props], env=env, capture_output=True, text=True)
            state["made"] = made.returncode
            node = self.wait_node(name, env)
            state["node"] = node
            tone = subprocess.Popen(["gst-launch-1.0", "-q", "audiotestsrc", "is-live=true", "wave=sine", "freq=440",
                                     "volume=0.3", "!", "audio/x-raw,format=F32LE,rate=48000,channels=2", "!",
                                     "pipewiresink", f"target-object={name}"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            state["tone"] = tone
            state["set"] = subprocess.run(["wpctl", "set-default", str(node)], env=env, capture_output=True,
                                          text=True).returncode

        def unplug():
            if "tone" in state:
                state["tone"].terminate()
                state["tone"].wait(10)
            if "node" in state:
                subprocess.run(["wpctl", "clear-default", "@DEFAULT_AUDIO_SINK@"], env=env, capture_output=True)
                subprocess.run(["pw-metadata", "0", "default.configured.audio.sink", "{ \"name\": \"app-sink\" }",
                                "Spa:String:JSON"], env=env, capture_output=True)
                subprocess.run(["pw-cli", "destroy", str(state["node"])], env=env, capture_output=True, timeout=10)
        self.addCleanup(unplug)
        timer = threading.Timer(4.0, plug_in)
        timer.start()
        self.addCleanup(timer.cancel)
        rec = self.tmp / "follow.flv"
        seconds = 10
        r = self.run_broadcast(["--no-publish", "--record", str(rec), "--source", "screen-node",
                                "--screen-node", "pw-test-screen", "--no-mic", "--res", "480p",
                                "--duration", str(seconds)], env=self.pw_env, timeout=seconds + 60)
        timer.join()
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertEqual((state.get("made"), state.get("set")), (0, 0), state)
        import av
        import numpy as np
        chunks: list[tuple[float, np.ndarray]] = []
        with av.open(str(rec)) as c:
            for frame in c.decode(c.streams.audio[0]):
                chunks.append((float(frame.time), frame.to_ndarray().astype(np.float64).mean(axis=0)))

        def shares(t0: float, t1: float) -> dict:
            """Each tone's share of the audio's energy between t0 and t1 (s)."""
            x = np.concatenate([a for t, a in chunks if t0 <= t < t1])
            power = np.abs(np.fft.rfft(x * np.hanning(x.size))) ** 2
            freqs = np.fft.rfftfreq(x.size, 1 / 48000)
            return {f: round(float(power[(freqs > f - 10) & (freqs < f + 10)].sum() / power.sum()), 3)
                    for f in (1000, 440)}
        early, late = shares(0.5, 3.0), shares(seconds - 4.0, seconds - 0.3)
        # WirePlumber moves the tone that played into app-sink to the new default too (as a
        # desktop moves playing apps to a headset): after the switch both tones are there,
        # and only the new sink has the 440 Hz one.
        print(f"\ndefault sink switch at 4 s: energy shares before {early}, after {late}", file=sys.stderr)
        self.assertGreater(early[1000], 0.9, early)
        self.assertLess(early[440], 0.01, early)
        self.assertGreater(late[440], 0.3, f"the capture did not move to the new default sink: {late}")

    def test_missing_node_lists_the_ones_that_exist(self) -> None:
        r = self.run_broadcast(["--source", "screen-node", "--screen-node", "no-such-screen", "--no-publish",
                                "--record", str(self.tmp / "x.flv"), "--duration", "2"], env=self.pw_env)
        self.assertEqual(r.returncode, 2, r.describe())
        err = r.stderr
        self.assertIn("no-such-screen", err)
        self.assertIn("pw-test-screen (id ", err)

    def test_list_sources(self) -> None:
        r = self.run_broadcast(["--list-sources"], env=self.pw_env)
        self.assertEqual(r.returncode, 0, r.describe())
        for name in ("pw-test-screen", "app-sink", "test-mic", "Video sources", "Audio sources"):
            self.assertIn(name, r.stdout)


class PipeWireNoAudioDeviceTest(BroadcastTestCase):
    """A desktop with no audio devices (a headless session, a server, a container): a private
    PipeWire with no sink and no source, and a still damage-driven screen (as mutter's)."""
    state: Path
    pw_env: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.state = Path(tempfile.mkdtemp(prefix="bcast-pipewire-noaudio-"))
        r = subprocess.run([str(PIPEWIRE_UP), "--state", str(cls.state), "--no-audio", "--screen-args", "--damage never"],
                           capture_output=True, text=True, timeout=600, env={**os.environ, "PW_TEST_SCREEN": str(PRODUCER)})
        if r.returncode != 0:
            subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False)
            raise RuntimeError(f"scripts/pipewire-up failed: {r.stderr}")
        cls.pw_env = {}
        for line in r.stdout.splitlines():
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                cls.pw_env[k] = v

    @classmethod
    def tearDownClass(cls) -> None:
        subprocess.run([str(PIPEWIRE_DOWN), "--state", str(cls.state)], check=False, timeout=60)
        if not os.environ.get("KEEP_TEST_DIRS"):
            subprocess.run(["rm", "-rf", str(cls.state)], check=False)

    @exclusive("audio span against video at a frame rate")
    def test_no_audio_device_streams_silence_and_says_so(self) -> None:
        listing = self.run_broadcast(["--list-sources"], env=self.pw_env)
        self.assertIn("Audio sources (--mic NODE):\n  (none)", listing.stdout, listing.stdout)
        rec = self.tmp / "noaudio.flv"
        stats = self.track_file(self.tmp / "noaudio-stats.jsonl")
        seconds = 12
        r = self.run_broadcast(["--no-publish", "--record", str(rec), "--source", "screen-node",
                                "--screen-node", "pw-test-screen", "--res", "720p", "--fps", "30",
                                "--duration", str(seconds), "--stats-json", str(stats)],
                               env=self.pw_env, timeout=seconds + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        silent = [line for line in r.stderr_lines() if "is silence" in line]
        self.assertEqual(len(silent), 2, r.describe())
        self.assertIn("app audio is silence: PipeWire has no audio output", silent[0])
        self.assertIn("mic is silence: PipeWire has no microphone", silent[1])
        import av
        with av.open(str(rec)) as c:
            self.assertEqual(len(c.streams.audio), 1, "the audio track is there")
            vt, at, samples, peak = [], [], 0, 0.0
            for frame in c.decode(c.streams.video[0], c.streams.audio[0]):
                if isinstance(frame, av.VideoFrame):
                    vt.append(float(frame.time))
                else:
                    at.append(float(frame.time))
                    samples += frame.samples
                    peak = max(peak, float(abs(frame.to_ndarray()).max()))
        video_span = max(vt) - min(vt) + 1 / 30
        audio_s = samples / 48000
        print(f"\nno audio device: video {len(vt)} frames over {video_span:.2f} s, audio {audio_s:.2f} s "
              f"from {min(at):.2f} to {max(at):.2f} s, peak {peak}", file=sys.stderr)
        self.assertGreaterEqual(len(vt), 0.95 * 30 * seconds)
        self.assertGreaterEqual(audio_s, 0.95 * video_span, "audio plays for >= 95% of the video's span")
        self.assertLess(peak, 1e-3, "the audio is silence")
        self.assertLessEqual(min(at), 0.2, "the audio starts with the video")
        last = [json.loads(x) for x in stats.read_text().splitlines() if x.strip()][-1]
        self.assertEqual(last["late_tags_clamped"], 0, last)

    def test_default_sink_that_goes_away_leaves_silence(self) -> None:
        """The only sink (the default) is unplugged mid-run: the run goes on, the app audio
        lane is silence from then on, and one line says so."""
        name = f"only-sink-{os.getpid()}"
        env = {**os.environ, **self.pw_env}
        props = (f"{{ factory.name=support.null-audio-sink node.name={name} media.class=Audio/Sink "
                 "object.linger=true audio.position=[ FL FR ] }")
        made = subprocess.run(["pw-cli", "create-node", "adapter", props], env=env, capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)
        node = PipeWireCaptureTest.wait_node(self, name, env)
        tone = subprocess.Popen(["gst-launch-1.0", "-q", "audiotestsrc", "is-live=true", "wave=sine", "freq=440",
                                 "volume=0.3", "!", "audio/x-raw,format=F32LE,rate=48000,channels=2", "!",
                                 "pipewiresink", f"target-object={name}"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def unplug():
            if tone.poll() is None:
                tone.terminate()
                tone.wait(10)
            subprocess.run(["pw-cli", "destroy", str(node)], env=env, capture_output=True, timeout=10)
        self.addCleanup(unplug)
        timer = threading.Timer(4.0, unplug)
        timer.start()
        self.addCleanup(timer.cancel)
        rec = self.tmp / "unplugged.flv"
        seconds = 10
        r = self.run_broadcast(["--no-publish", "--record", str(rec), "--source", "screen-node",
                                "--screen-node", "pw-test-screen", "--no-mic", "--res", "480p",
                                "--duration", str(seconds)], env=self.pw_env, timeout=seconds + 60)
        timer.join()
        self.assertEqual(r.returncode, 0, r.describe())
        silent = [line for line in r.stderr_lines() if "is silence" in line]
        self.assertEqual(silent, ["broadcast: app audio is silence: the default sink went away; "
                                  "capture follows the next default"], r.describe())
        import av
        import numpy as np
        vt, chunks = [], []
        with av.open(str(rec)) as c:
            for frame in c.decode(c.streams.video[0], c.streams.audio[0]):
                if isinstance(frame, av.VideoFrame):
                    vt.append(float(frame.time))
                else:
                    chunks.append((float(frame.time), frame.samples, float(np.abs(frame.to_ndarray()).max())))
        video_span = max(vt) - min(vt) + 1 / 30
        audio_s = sum(n for _, n, _ in chunks) / 48000
        before = max(p for t, _, p in chunks if 1.0 <= t < 3.5)
        after = max(p for t, _, p in chunks if t >= 5.5)
        print(f"\ndefault sink unplugged at 4 s: audio {audio_s:.2f} s over {video_span:.2f} s of video, "
              f"peak before {before:.3f}, after {after:.5f}", file=sys.stderr)
        self.assertGreaterEqual(audio_s, 0.95 * video_span)
        self.assertGreater(before, 0.1, "the tone was captured before the unplug")
        self.assertLess(after, 1e-3, "silence after it")


class PipeWireNoDaemonTest(BroadcastTestCase):
    def test_no_daemon_says_what_is_missing(self) -> None:
        empty = self.tmp / "run"
        empty.mkdir(mode=0o700)
        env = {"XDG_RUNTIME_DIR": str(empty), "PIPEWIRE_RUNTIME_DIR": str(empty)}
        r = self.run_broadcast(["--source", "screen-node", "--screen-node", "pw-test-screen", "--no-publish",
                                "--record", str(self.tmp / "x.flv"), "--duration", "2"], env=env)
        self.assertEqual(r.returncode, 2, r.describe())
        lines = r.stderr_lines()
        self.assertTrue(any(line.startswith("broadcast: ") and "no PipeWire daemon" in line for line in lines),
                        r.describe())
        self.assertIn(str(empty), r.stderr)
        self.assertIn("start pipewire", r.stderr)
        r2 = self.run_broadcast(["--list-sources"], env=env)
        self.assertEqual(r2.returncode, 2, r2.describe())
        self.assertIn("no PipeWire daemon", r2.stderr)


if __name__ == "__main__":
    unittest.main()
