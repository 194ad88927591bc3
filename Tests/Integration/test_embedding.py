"""Embedding beyond Swift: the C ABI (libbroadcastkit.so + broadcastkit.h + broadcastkit.pc) and the
Python binding, each exercised the way an embedder would use it.

- scripts/install --prefix TMP installs the library, header, .pc file and CLI; Examples/c/stream.c is
  compiled with nothing but `pkg-config --cflags --libs broadcastkit` (PKG_CONFIG_PATH=TMP/...),
  streams 10 s of 720p BGRx + an S16 tone to a private nginx-rtmp, exits 0, and PyAV decodes the
  recording with 300 frames less the counted drops and 10 s of audio.
- The same program under tools/allocshim makes 0 heap allocations per frame in steady state.
- The library exports exactly the header's functions, with the Swift runtime linked in.
- Python (bindings/python): the example streams 10 s and decodes clean; a malformed frame raises and
  the stream continues; the key never appears in repr(), exception texts, events or stats.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from support import REPO_ROOT, BroadcastTestCase, find_key_leaks, new_key, start_ingest, video_frames_accepted
from support import alone, exclusive  # noqa: E402

BUILD_DIR = REPO_ROOT / ".build" / "release"
LIB = BUILD_DIR / "libbroadcastkit.so"
HEADER = REPO_ROOT / "Sources" / "CBroadcastKitABI" / "include" / "broadcastkit.h"
C_EXAMPLE = REPO_ROOT / "Examples" / "c" / "stream.c"
SHIM_SRC = REPO_ROOT / "tools" / "allocshim" / "allocshim.c"
PY_BINDING = REPO_ROOT / "bindings" / "python"
PY_EXAMPLE = PY_BINDING / "examples" / "stream.py"

# Video-lane drop reasons: a produced frame is either accepted (video_frames_in) or one of these.
VIDEO_LANE_DROPS = ("encoder_busy", "malformed", "backwards_timestamp")


class InstalledPrefix:
    """One scripts/install into a temp prefix, shared by the tests of a class."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bcast-prefix-"))
        self.prefix = self.dir / "prefix"
        r = subprocess.run([str(REPO_ROOT / "scripts" / "install"), "--prefix", str(self.prefix), "--no-build"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"scripts/install failed:\n{r.stderr}")
        self.env = dict(os.environ, PKG_CONFIG_PATH=str(self.prefix / "lib" / "pkgconfig"))

    def pkg_config(self, *args: str) -> str:
        r = subprocess.run(["pkg-config", *args, "broadcastkit"], env=self.env, capture_output=True, text=True,
                           check=True)
        return r.stdout.strip()

    def compile(self, source: Path, out: Path, extra: list[str] | None = None) -> subprocess.CompletedProcess:
        flags = self.pkg_config("--cflags", "--libs").split()
        return subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=c11", "-o", str(out), str(source),
                               *flags, *(extra or [])], env=self.env, capture_output=True, text=True, timeout=120)

    def cleanup(self) -> None:
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(self.dir, ignore_errors=True)


def video_lane_drops(stats: dict) -> int:
    return sum(stats["drops"][r] for r in VIDEO_LANE_DROPS)


class CABITest(BroadcastTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        if not LIB.exists():
            raise AssertionError(f"{LIB} not built (scripts/build)")
        cls.installed = InstalledPrefix()
        cls.example = cls.installed.dir / "stream"
        r = cls.installed.compile(C_EXAMPLE, cls.example)
        if r.returncode != 0:
            raise AssertionError(f"Examples/c/stream.c does not compile with pkg-config flags only:\n{r.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.installed.cleanup()

    def run_example(self, args, key: str, env_extra: dict | None = None, timeout: float = 90):
        env = dict(os.environ, STREAM_KEY=key, **(env_extra or {}))
        r = subprocess.run([str(self.example), *map(str, args)], env=env, capture_output=True, text=True,
                           timeout=timeout)
        self._captured_texts += [r.stdout, r.stderr]
        return r

    def test_install_layout_and_pc_file(self):
        p = self.installed.prefix
        for rel in ("lib/libbroadcastkit.so", "include/broadcastkit.h", "lib/pkgconfig/broadcastkit.pc",
                    "bin/broadcast", "bin/broadcastctl"):
            self.assertTrue((p / rel).exists(), rel)
        libs = self.installed.pkg_config("--libs")
        self.assertIn("-lbroadcastkit", libs)
        self.assertIn(f"-Wl,-rpath,{p / 'lib'}", libs)   # runs from the prefix without LD_LIBRARY_PATH
        self.assertEqual(self.installed.pkg_config("--cflags"), f"-I{p / 'include'}")
        # The example binary needs no Swift runtime: the library carries it.
        ldd = subprocess.run(["ldd", str(self.example)], capture_output=True, text=True).stdout
        self.assertIn(str(p / "lib" / "libbroadcastkit.so"), ldd)
        self.assertNotIn("libswiftCore", ldd)
        self.assertNotIn("not found", ldd)

    def test_header_is_self_contained_c99_and_cxx(self):
        src = self.installed.dir / "h.c"
        src.write_text("#include <broadcastkit.h>\nint main(void) { return bk_abi_version() == BK_ABI_VERSION ? 0 : 1; }\n")
        flags = self.installed.pkg_config("--cflags", "--libs").split()
        r = subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-o",
                            str(self.installed.dir / "h"), str(src), *flags], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(subprocess.run([str(self.installed.dir / "h")]).returncode, 0)
        if shutil.which("g++") or shutil.which("c++"):
            cxx = shutil.which("g++") or shutil.which("c++")
            r = subprocess.run([cxx, "-x", "c++", "-fsyntax-only", "-Wall", "-Werror", *flags[:1], str(src)],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_exports_exactly_the_header_functions(self):
        declared = set(re.findall(r"^\S.*?\b(bk_[a-z0-9_]+)\(", HEADER.read_text(), re.M))
        out = subprocess.run(["readelf", "--dyn-syms", "-W", str(LIB)], capture_output=True, text=True).stdout
        exported = {line.split()[7].split("@")[0] for line in out.splitlines()
                    if len(line.split()) >= 8 and line.split()[4] == "GLOBAL" and line.split()[6] != "UND"
                    and line.split()[3] == "FUNC"}
        self.assertEqual(exported, declared)
        needed = subprocess.run(["readelf", "-d", str(LIB)], capture_output=True, text=True).stdout
        self.assertNotIn("libswift", needed, "the Swift runtime must be linked into libbroadcastkit.so")

    def test_c_example_streams_10s_to_nginx(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        r = self.run_example([ingest.url, 10], key)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        stats = out["stats"]
        self.assertEqual(out["produced"], 300)
        # Every produced frame is accounted for: accepted, or a counted video-lane drop.
        self.assertEqual(out["accepted"], video_frames_accepted(stats), out)
        self.assertEqual(out["produced"], video_frames_accepted(stats) + video_lane_drops(stats), out)
        # The machine is shared and loaded: encoder_busy drops are allowed, as long as they are counted.
        self.assertGreater(stats["video_frames_in"], 30, f"too few frames accepted: {out}")
        # Sent = produced less every counted video drop (lane drops, then congestion at the send queue),
        # plus the pictures repeated when a frame came late (a constant output frame rate).
        # A picture the frame-rate gate skipped is accepted but never encoded, so never sent.
        expected = (300 - stats["total_drops"] + stats["drops"]["audio_lane_full"] + stats.get("video_frames_repeated", 0)
                    - stats.get("video_frames_skipped", 0))
        self.assertLessEqual(abs(stats["video_frames_sent"] - expected), stats["drops"]["queue_full"] + 2, out)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertRecordingOK(rec, expect_frames=expected, tolerance=3, expect_width=1280, expect_height=720,
                               expect_audio_codec="aac", expect_audio_seconds=10.0, audio_tolerance_pct=3.0)

    @exclusive("heap allocations per frame")
    def test_c_example_makes_no_allocations_per_frame(self):
        shim = self.installed.dir / "allocshim.so"
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(SHIM_SRC)], check=True)
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        r = self.run_example([ingest.url, 8], new_key(), env_extra={"LD_PRELOAD": str(shim)})
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        # The shim must be live (start-up allocates), or a zero would prove nothing.
        self.assertGreater(out["startup_allocations"], 100, out)
        self.assertGreater(out["stats"]["video_frames_sent"], 30, out)   # encoded and sent in the window too
        self.assertEqual(out["allocations_per_frame"], 0.0, out)

    def test_bad_configuration_and_budget_errors(self):
        key = new_key()
        # Unreachable ingest: exit 3 with a message that holds no key.
        from support import free_port
        r = self.run_example([f"rtmp://127.0.0.1:{free_port()}/live", 1], key)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("stream:", r.stderr)
        r = self.run_example(["ftp://example.invalid/live", 1], key)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("unsupported URL scheme", r.stderr)


if __name__ == "__main__":
    unittest.main()


def readme_example(kind: str) -> str:
    """The docs/embedding.md code block marked `<!-- ci: KIND -->`."""
    m = re.search(r"<!-- ci: " + kind + r" -->\s*```\w+\n(.*?)```", (REPO_ROOT / "docs" / "embedding.md").read_text(), re.S)
    if not m:
        raise AssertionError(f"docs/embedding.md has no <!-- ci: {kind} --> example")
    return m.group(1)


class ReadmeExamplesTest(BroadcastTestCase):
    """The README's C and Python examples, exactly as printed, against a private ingest."""

    def test_readme_c_example(self):
        installed = InstalledPrefix()
        self.addCleanup(installed.cleanup)
        src = installed.dir / "hello.c"
        src.write_text(readme_example("c"))
        r = installed.compile(src, installed.dir / "hello")
        self.assertEqual(r.returncode, 0, r.stderr)
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        r = subprocess.run([str(installed.dir / "hello"), ingest.url], env=dict(os.environ, STREAM_KEY=key),
                           capture_output=True, text=True, timeout=60)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr)
        stats = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(90, video_frames_accepted(stats) + video_lane_drops(stats), stats)
        self.assertRecordingOK(ingest.wait_recording(key), expect_frames=stats["video_frames_sent"], tolerance=3,
                               expect_width=640, expect_audio_codec="aac")

    def test_readme_python_example(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        script = self.tmp / "hello.py"
        script.write_text(readme_example("python"))
        env = dict(os.environ, STREAM_KEY=key, BROADCAST_URL=ingest.url, PYTHONPATH=str(PY_BINDING),
                   BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("started", r.stdout)
        sent = int(r.stdout.strip().splitlines()[-1].split()[0])
        self.assertGreater(sent, 10)
        self.assertRecordingOK(ingest.wait_recording(key), expect_frames=sent, tolerance=3, expect_width=640,
                               expect_audio_codec="aac")


def keyframe_indexes(path: Path) -> tuple[int, list[int]]:
    """(video packets, 1-based indexes of the keyframes) as PyAV reads them."""
    import av
    n, keys = 0, []
    with av.open(str(path)) as c:
        for p in c.demux(video=0):
            if p.size:
                n += 1
                if p.is_keyframe:
                    keys.append(n)
    return n, keys


@exclusive("producers faster than real time: drops per second")
class BackpressureAndControlsTest(BroadcastTestCase):
    """Producers faster than real time (a transcoder, a file) push 300 720p frames in a loop: with
    back-pressure "block" every frame is encoded; with "drop" (live sources) the busy encoder drops
    most (the contrast shows the run really outpaces the encoder). The runtime controls act while
    running: the bitrate target moves to 800 kbps, a keyframe requested after picture 201 is queued
    lands on the next picture encoded (keyframe interval 20 s, so no other), a bitrate outside the
    library's range is refused."""

    def assert_requested_keyframe(self, out: Path) -> None:
        # Requested after picture 201 was queued: the next picture the encoder takes is an IDR: one of
        # the (at most 2) still pending, 199..201, or, when the encoder had caught up with the
        # producer by then (a busy machine descheduled the producer), the next one pushed, 202.
        # No other keyframe in 10 s.
        frames, keys = keyframe_indexes(out)
        self.assertEqual(frames, 300)
        self.assertEqual(len(keys), 2, keys)
        self.assertEqual(keys[0], 1)
        self.assertIn(keys[1], (199, 200, 201, 202), keys)

    def test_c_producer_faster_than_real_time(self):
        exe = self.tmp / "block_push"
        r = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                            str(Path(__file__).parent / "embedding" / "block_push.c"), f"-I{HEADER.parent}",
                            f"-L{BUILD_DIR}", "-lbroadcastkit", f"-Wl,-rpath,{BUILD_DIR}"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        runs = {}
        for mode in ("drop", "block"):
            out = self.tmp / f"{mode}.flv"
            self.track_file(out)
            r = subprocess.run([str(exe), mode, "300", str(out)], capture_output=True, text=True, timeout=120)
            self._captured_texts += [r.stdout, r.stderr]
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.strip().splitlines()
            runs[mode] = (json.loads(lines[0]), json.loads(lines[1]), out)
        drop, _, _ = runs["drop"]
        self.assertGreater(drop["dropped"], 0, drop)
        block, stats, out = runs["block"]
        self.assertEqual((block["accepted"], block["dropped"]), (300, 0), block)
        self.assertEqual(stats["drops"]["encoder_busy"], 0, stats)
        self.assertEqual((block["set_bitrate"], block["set_bitrate_0"], block["request_keyframe"]), (0, -1, 0), block)
        self.assertEqual(block["after_finish_keyframe"], -6, block)  # BK_ERR_STATE
        self.assertEqual(stats["target_video_kbps"], 800, stats)
        self.assert_requested_keyframe(out)

    def test_python_producer_faster_than_real_time(self):
        env = dict(os.environ, PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        runs = {}
        for mode in ("drop", "block"):
            out = self.tmp / f"py-{mode}.flv"
            self.track_file(out)
            r = subprocess.run([sys.executable, str(Path(__file__).parent / "embedding" / "py_block.py"), mode, "300",
                                str(out)], env=env, capture_output=True, text=True, timeout=120)
            self._captured_texts += [r.stdout, r.stderr]
            self.assertEqual(r.returncode, 0, r.stderr)
            runs[mode] = (json.loads(r.stdout.strip().splitlines()[-1]), out)
        self.assertGreater(runs["drop"][0]["results"].get("encoder_busy", 0), 0, runs["drop"][0])
        rep, out = runs["block"]
        self.assertEqual(rep["results"], {"accepted": 300}, rep)
        self.assertEqual(rep["report"]["target_after_set"], 800, rep)
        self.assertTrue(rep["report"]["bad_bitrate"].startswith("ValueError"), rep)
        self.assertEqual(rep["report"]["after_close"], "StateError", rep)
        self.assert_requested_keyframe(out)


def send_queue_line(plan: str) -> str:
    return next(line.split(None, 3)[-1].strip() for line in plan.splitlines() if "send queues" in line)


def gst_property(inspect: str, name: str) -> tuple[float, float, float]:
    """(min, max, default) of a numeric (signed or floating) property in gst-inspect-1.0's output."""
    block = re.search(rf"\n  {re.escape(name)} .*?(?=\n  [a-z]|\n\n|\Z)", inspect, re.S).group(0)
    num = r"\s*(-?[0-9.e+]+)\s*"
    m = re.search(rf"Range:{num}-{num}Default:{num}", block)
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def gst_uint_property(inspect: str, name: str) -> tuple[int, int, int]:
    """(min, max, default) of an unsigned property in gst-inspect-1.0's output."""
    block = re.search(rf"\n  {re.escape(name)} .*?(?=\n  [a-z]|\n\n|\Z)", inspect, re.S).group(0)
    m = re.search(r"Range: (\d+) - (\d+) Default: (\d+)", block)
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@alone("rebuilds the GStreamer element the other tests load (scripts/build-gst)")
class OneSetOfRulesTest(BroadcastTestCase):
    """The library owns every range and default (BroadcastLimits, exposed as bk_limits()); the C ABI,
    Python, GStreamer and the CLI accept exactly that table, default to it, and size the send queue
    the same way for the same bitrates."""

    def test_every_front_end_maps_the_library_table(self):
        exe = self.tmp / "limits_probe"
        r = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                            str(Path(__file__).parent / "embedding" / "limits_probe.c"), f"-I{HEADER.parent}",
                            f"-L{BUILD_DIR}", "-lbroadcastkit", f"-Wl,-rpath,{BUILD_DIR}"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([str(exe), str(self.tmp / "c.flv")], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        probe = json.loads(r.stdout)
        t = probe["table"]
        presets = t["presets"].split(",")
        # C ABI: each range's edges accepted (BK_OK), one step outside refused (BK_ERR_INVALID_ARGUMENT).
        for name, results in probe["c"].items():
            if name == "presets":
                self.assertEqual(results, {**{p: 0 for p in presets}, "placebo": -1})
            elif name.endswith("_words"):
                continue
            else:
                self.assertEqual(results, [0, 0, -1, -1], name)

        # Python: the same table through the binding; outside values are ValueErrors; defaults from it.
        env = dict(os.environ, PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, str(Path(__file__).parent / "embedding" / "py_limits.py"),
                            str(self.tmp / "py.flv")], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        py = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(py["limits"]["presets"], presets)
        for name in ("width", "height", "fps", "video_bitrate_kbps", "aac_bitrate_kbps", "opus_bitrate_kbps"):
            self.assertEqual(py["limits"][name], t[name], name)
        self.assertEqual(set(py["refused"].values()), {"InvalidValueError"}, py["refused"])
        self.assertIn("width=641", py["refused"])
        self.assertEqual(len(py["accepted"]), 18, py["accepted"])
        # The reconnect settings: one table, one set of words (the CLI's, below, too).
        for name in ("reconnect_attempts", "reconnect_delay"):
            self.assertEqual(py["limits"][name], t[name], name)
            self.assertEqual(py["words"][name], probe["c"][f"{name}_words"], name)
        self.assertIn(f"{t['width']['default']}x{t['height']['default']}@{t['fps']['default']}", py["default_repr"])

        # GStreamer: property ranges and defaults read from the same table.
        r = subprocess.run(["scripts/build-gst"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        env = dict(os.environ, GST_PLUGIN_PATH=str(BUILD_DIR / "gstreamer-1.0"), GST_REGISTRY=str(self.tmp / "reg.bin"))
        inspect = subprocess.run(["gst-inspect-1.0", "broadcastsink"], env=env, capture_output=True, text=True,
                                 timeout=60).stdout
        # video-bitrate 0 = the library's default for the output size (as the C ABI's 0 and Python's None).
        self.assertEqual(gst_uint_property(inspect, "video-bitrate"), (0, t["video_bitrate_kbps"]["max"], 0))
        for prop, name in (("keyframe-interval", "keyframe_interval_seconds"), ("replay-seconds", "replay_seconds")):
            self.assertEqual(gst_uint_property(inspect, prop), (t[name]["min"], t[name]["max"], t[name]["default"]), prop)
        for prop, name in (("width", "width"), ("height", "height"), ("fps", "fps")):  # 0 = the input's
            self.assertEqual(gst_uint_property(inspect, prop), (0, t[name]["max"], 0), prop)
        self.assertEqual(gst_uint_property(inspect, "audio-bitrate"),
                         (0, max(t["aac_bitrate_kbps"]["max"], t["opus_bitrate_kbps"]["max"]), 0))  # 0 = the codec's
        self.assertEqual(gst_property(inspect, "reconnect-attempts"),
                         tuple(float(t["reconnect_attempts"][k]) for k in ("min", "max", "default")))
        self.assertEqual(gst_property(inspect, "reconnect-delay"),
                         tuple(float(t["reconnect_delay"][k]) for k in ("min", "max", "default")))
        preset_block = re.search(r"\n  preset .*?(?=\n  [a-z])", inspect, re.S).group(0)
        self.assertIn(f'Default: "{t["default_preset"]}"', preset_block)
        self.assertIn("/".join(presets), preset_block)

        # The CLI: one step outside each range refused (exit 2), the edges and every preset accepted,
        # its defaults the table's; and the send queue sized by the library as for C and Python.
        def cli(*args):
            r = subprocess.run([str(BUILD_DIR / "broadcast"), *map(str, args)], capture_output=True, text=True,
                               timeout=60)
            self._captured_texts += [r.stdout, r.stderr]
            return r
        w, h = t["width"], t["height"]
        for args in ((["--fps", t["fps"]["min"] - 1]), ["--fps", t["fps"]["max"] + 1],
                     ["--video-bitrate", t["video_bitrate_kbps"]["min"] - 1],
                     ["--video-bitrate", t["video_bitrate_kbps"]["max"] + 1],
                     ["--audio-bitrate", t["aac_bitrate_kbps"]["min"] - 1],
                     ["--audio-bitrate", t["aac_bitrate_kbps"]["max"] + 1],
                     ["--audio-codec", "opus", "--audio-bitrate", t["opus_bitrate_kbps"]["max"] + 1],
                     ["--res", f"{w['max'] + 2}x{h['min']}"], ["--res", f"{w['min']}x{h['max'] + 2}"],
                     ["--preset", "placebo"]):
            with self.subTest(args=args):
                r = cli("--print-memory-plan", "--source", "test", *args)
                self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
        # The reconnect settings: the table's edges accepted, one step outside refused in the C ABI's
        # words after the option's name (the CLI once took attempts from 0 and delays from 0.1 s,
        # the C ABI attempts from -1 and delays from 0).
        ra, rd = t["reconnect_attempts"], t["reconnect_delay"]
        for args in (["--reconnect-attempts", ra["min"]], ["--reconnect-attempts", ra["max"]],
                     ["--reconnect-delay", rd["min"]], ["--reconnect-delay", rd["max"]]):
            r = cli("--print-memory-plan", "--source", "test", *args)
            self.assertEqual(r.returncode, 0, (args, r.stderr))
        for option, value, words in (("--reconnect-attempts", ra["min"] - 1, probe["c"]["reconnect_attempts_words"]),
                                     ("--reconnect-delay", rd["min"] / 2, probe["c"]["reconnect_delay_words"])):
            r = cli("--print-memory-plan", "--source", "test", option, value)
            self.assertEqual((r.returncode, r.stderr.splitlines()), (2, [f"broadcast: {option}: {words}"]), option)
        r = cli("--print-memory-plan", "--source", "test", "--res", "64x64", "--fps", t["fps"]["max"],
                "--video-bitrate", t["video_bitrate_kbps"]["min"], "--audio-codec", "opus",
                "--audio-bitrate", t["opus_bitrate_kbps"]["max"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for preset in presets:
            r = subprocess.run([str(BUILD_DIR / "broadcast"), "--preset", preset, "--help"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 0, (preset, r.stderr))
        r = cli("--print-memory-plan", "--source", "test")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"memory plan for {w['default']}x{h['default']}@{t['fps']['default']} x264 {t['default_preset']}, "
                      f"{t['video_bitrate_kbps']['default']} kbps", r.stdout)
        r = cli("--print-memory-plan", "--source", "test", "--res", "1280x720", "--video-bitrate", "2500",
                "--audio-bitrate", "128")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(send_queue_line(probe["plan"]), send_queue_line(r.stdout))
        self.assertEqual(send_queue_line(py["plan"]), send_queue_line(r.stdout))
        # No bitrate given: the library's default for the size, the same from the C ABI (0) and the CLI.
        r = cli("--print-memory-plan", "--source", "test", "--res", "1080p", "--memory-budget", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"x264 {t['default_preset']}, {probe['default_kbps_1080p30']} kbps", r.stdout)
        self.assertGreater(probe["default_kbps_1080p30"], t["video_bitrate_kbps"]["default"])


class PythonBindingTest(BroadcastTestCase):
    """bindings/python, used from the source tree (PYTHONPATH) against .build/release's library."""

    def run_python(self, args, key: str, timeout: float = 90):
        env = dict(os.environ, STREAM_KEY=key, PYTHONPATH=str(PY_BINDING),
                   BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, *map(str, args)], env=env, capture_output=True, text=True,
                           timeout=timeout)
        self._captured_texts += [r.stdout, r.stderr]
        return r

    def test_example_streams_10s_and_decodes_clean(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        r = self.run_python([PY_EXAMPLE, ingest.url, "--seconds", "10"], key)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        stats = out["stats"]
        self.assertEqual(out["produced"], 300)
        self.assertEqual(out["results"].get("accepted", 0), video_frames_accepted(stats), out)
        self.assertEqual(300, video_frames_accepted(stats) + video_lane_drops(stats), out)
        self.assertGreater(stats["video_frames_in"], 30, out)
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertRecordingOK(rec, expect_frames=stats["video_frames_sent"], tolerance=3, expect_width=1280,
                               expect_height=720, expect_audio_codec="aac", expect_audio_seconds=10.0,
                               audio_tolerance_pct=3.0)

    def test_bad_frames_raise_the_stream_continues_and_the_key_never_shows(self):
        ingest = start_ingest()
        self.addCleanup(ingest.stop)
        key = new_key()
        record = self.tmp / "py.flv"
        r = self.run_python([Path(__file__).parent / "embedding" / "py_robustness.py", ingest.url, record], key)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(out["raised"], out["expected"])
        # Rejected in Python: nothing reached the library, so nothing was counted as malformed.
        self.assertEqual(out["stats"]["drops"]["malformed"], 0, out["stats"])
        self.assertGreater(out["sent_after_bad"], 10, out)
        self.assertEqual(out["errors"].get("connect"), "ConnectError", out["errors"])
        self.assertEqual(out["errors"].get("budget"), "MemoryBudgetError", out["errors"])
        self.assertIn("memory plan exceeds the 20 MB budget", out["errors"]["budget_text"])
        self.assertIn("x264 working frames", out["errors"]["budget_text"])
        self.assertIn("started", out["events"])
        self.assertTrue(any("rtmp://127.0.0.1" in t and "****" in t for t in out["texts"]), "repr shows the URL")
        # texts (reprs, exception texts, events, stats) were captured: the leak check covers them.
        self.assertEqual(find_key_leaks(texts=out["texts"]), [])
        rec = ingest.wait_recording(key)
        self.track_file(rec)
        self.assertRecordingOK(rec, expect_frames=out["stats"]["video_frames_sent"], tolerance=3, expect_width=640)
        self.assertRecordingOK(record, expect_frames=out["stats"]["video_frames_sent"], tolerance=3,
                               expect_width=640)

    def test_platform_wheel_installs_offline_and_carries_the_library(self):
        out = self.tmp / "dist"
        r = subprocess.run([str(REPO_ROOT / "scripts" / "wheel"), "--out", str(out)], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        wheel = Path(r.stdout.strip().splitlines()[-1])
        version = (REPO_ROOT / "VERSION").read_text().strip()
        self.assertRegex(wheel.name, rf"^broadcastkit-{re.escape(version)}-py3-none-manylinux_2_\d+_{os.uname().machine}\.whl$")
        import zipfile
        with zipfile.ZipFile(wheel) as z:
            names = set(z.namelist())
            metadata = z.read(f"broadcastkit-{version}.dist-info/METADATA").decode()
        self.assertIn("broadcastkit/lib/libbroadcastkit.so", names)
        self.assertIn("broadcastkit/py.typed", names)
        self.assertIn("License: GPL-2.0-or-later", metadata)
        # Offline: no index at all. numpy (the one dependency) comes from this venv.
        target = self.tmp / "site"
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                            str(target), str(wheel)], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROADCASTKIT_") and k != "PKG_CONFIG_PATH"}
        env["PYTHONPATH"] = str(target)
        code = ("import broadcastkit as bk, json\n"
                "s = bk.Session(record='w.flv', width=320, height=240, memory_budget=0)\n"
                "print(json.dumps({'lib': bk.library().path, 'plan': 'total' in s.memory_plan()}))")
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=self.tmp, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["lib"], str(target / "broadcastkit" / "lib" / "libbroadcastkit.so"))
        self.assertTrue(out["plan"])

    def test_import_works_without_the_library_and_first_use_says_the_fix(self):
        pkg = self.tmp / "pkg"
        shutil.copytree(PY_BINDING / "broadcastkit", pkg / "broadcastkit")
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROADCASTKIT_") and k != "PKG_CONFIG_PATH"}
        env["PYTHONPATH"] = str(pkg)
        code = ("import broadcastkit as bk\nprint('imported')\n"
                "try:\n    bk.Session(record='x.flv')\nexcept OSError as e:\n    print('OSError:', e)\n"
                "try:\n    bk.Session\nexcept Exception as e:\n    print(e)\n")
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=self.tmp, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("imported\n"), r.stdout)
        self.assertIn("OSError: libbroadcastkit.so not found; install the platform wheel (scripts/wheel", r.stdout)
        self.assertIn("BROADCASTKIT_LIBRARY=", r.stdout)

    def test_bad_values_are_value_errors(self):
        env = dict(os.environ, PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        code = ("import broadcastkit as bk\n"
                "for kw in ({'width': 641}, {'fps': 0}, {'preset': 'warp'}, {'audio_codec': 'mp3'}, {'backpressure': 'x'},"
                " {'width': '640'}):\n"
                "    try:\n        bk.Session(record='x.flv', **kw); print('accepted', kw)\n"
                "    except ValueError as e:\n        print('ValueError', type(e).__name__, e)\n")
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=self.tmp, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.strip().splitlines()
        self.assertEqual(len(lines), 6, r.stdout)
        for line in lines:
            self.assertTrue(line.startswith("ValueError InvalidValueError"), line)
        self.assertIn("video size 641x720: width and height must be even", lines[0])

    def test_pip_install_from_the_repository(self):
        target = self.tmp / "site"
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                            str(PY_BINDING)], capture_output=True, text=True, timeout=300)
        # pip builds in bindings/python: what it leaves is ignored by git (then removed, to leave the tree as it was).
        artefacts = [p for p in (PY_BINDING / "build", *PY_BINDING.glob("*.egg-info")) if p.exists()]
        not_ignored = [str(p) for p in artefacts
                       if subprocess.run(["git", "check-ignore", "-q", str(p)], cwd=REPO_ROOT).returncode != 0]
        shutil.rmtree(PY_BINDING / "build", ignore_errors=True)
        for egg in PY_BINDING.glob("*.egg-info"):
            shutil.rmtree(egg, ignore_errors=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(artefacts, "pip left no build artefacts: this check shows nothing")
        self.assertEqual(not_ignored, [], "pip's build artefacts are not ignored by git")
        env = dict(os.environ, PYTHONPATH=str(target), BROADCASTKIT_PREFIX="", BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, "-c", "import broadcastkit, sys; print(broadcastkit.version()); "
                            "print(broadcastkit.library().path)"], env=env, capture_output=True, text=True,
                           cwd=self.tmp, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("BroadcastKit", r.stdout)
        self.assertIn(str(target), subprocess.run([sys.executable, "-c", "import broadcastkit; print(broadcastkit.__file__)"],
                                                  env=env, capture_output=True, text=True, cwd=self.tmp).stdout)


BROADCASTCTL = BUILD_DIR / "broadcastctl"


def control_line(path: Path, line: str, timeout: float = 30) -> dict:
    """One request on a control socket; the answer as a dict."""
    import socket as _socket
    with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data.decode())


class ControlProtocolTest(BroadcastTestCase):
    """The control socket as docs/control-protocol.md describes it, against the CLI and an embedder:
    peer credentials, a slot kept for commands, duplicate keys, ids, version, events, stale sockets,
    broadcastctl's bounded buffer, bk_session_open_control through Python's control=."""

    def start_cli(self, sock: Path, *extra: str) -> subprocess.Popen:
        proc = subprocess.Popen([str(BUILD_DIR / "broadcast"), "--no-publish", "--source", "test", "--res", "360p",
                                 "--record", str(self.tmp / f"{sock.stem}.flv"), "--control", str(sock),
                                 "--duration", "60", *extra], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        deadline = time.monotonic() + 15
        while not sock.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(sock.exists(), proc.stderr.read().decode() if proc.poll() is not None else "no socket")
        return proc

    def finish_cli(self, proc: subprocess.Popen) -> tuple[int, str]:
        _, err = proc.communicate(timeout=60)
        text = err.decode(errors="replace")
        self._captured_texts.append(text)
        return proc.returncode, text

    def test_other_uid_is_refused_even_when_the_socket_is_world_writable(self):
        d = Path(tempfile.mkdtemp(prefix="bk-ctl-"))
        self.addCleanup(shutil.rmtree, d, True)
        d.chmod(0o755)
        sock = d / "ctl.sock"
        proc = self.start_cli(sock)
        sock.chmod(0o666)
        # Sends stop (the refusal may already have closed the connection), then reads the answer.
        probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])\n"
                 "try:\n    s.sendall(b'stop\\n')\nexcept OSError:\n    pass\nprint(s.makefile().readline().strip())")
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                            probe, str(sock)], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["ok"], False, r.stdout)
        self.assertIn("permission denied", r.stdout)
        time.sleep(1.0)
        self.assertIsNone(proc.poll(), "another uid stopped the stream")
        self.assertEqual(control_line(sock, "stop"), {"ok": True})   # the owner (root here) still can
        rc, err = self.finish_cli(proc)
        self.assertEqual(rc, 0, err[-2000:])

    def test_stop_gets_through_eight_idle_clients_and_seven_subscribers(self):
        import socket as _socket
        sock = self.tmp / "slots.sock"
        proc = self.start_cli(sock)
        held = []
        for i in range(8):
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(str(sock))
            if i < 7:
                s.sendall(b"subscribe\n")
                self.assertEqual(json.loads(s.makefile().readline()), {"ok": True, "subscribed": True})
            held.append(s)
        # An eighth subscriber would take the last slot: refused.
        refused = control_line(sock, "subscribe")
        self.assertFalse(refused["ok"])
        self.assertIn("too many subscribers", refused["error"])
        self.assertEqual(control_line(sock, "stop"), {"ok": True})
        rc, err = self.finish_cli(proc)
        self.assertEqual(rc, 0, err[-2000:])
        for s in held:
            s.close()
        # Eight idle clients, no subscriber: stop still gets through.
        sock2 = self.tmp / "idle.sock"
        proc = self.start_cli(sock2)
        idle = []
        for _ in range(8):
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            s.connect(str(sock2))
            idle.append(s)
        time.sleep(0.3)
        self.assertEqual(control_line(sock2, "stop"), {"ok": True})
        rc, err = self.finish_cli(proc)
        self.assertEqual(rc, 0, err[-2000:])
        for s in idle:
            s.close()

    def test_requests_ids_version_duplicates_and_events(self):
        import socket as _socket
        sock = self.tmp / "proto.sock"
        proc = self.start_cli(sock)
        sub = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sub.settimeout(20)
        sub.connect(str(sock))
        sub.sendall(b'{"cmd":"subscribe","id":"s1"}\n')
        events = sub.makefile()
        self.assertEqual(json.loads(events.readline()), {"id": "s1", "ok": True, "subscribed": True})
        started = json.loads(events.readline())
        self.assertEqual(started["event"], "started", started)
        self.assertEqual(started["destinations"], [str(self.tmp / "proto.flv")])
        # Duplicate keys: refused, never "the last one wins" (this used to stop the stream).
        dup = control_line(sock, '{"cmd":"stats","cmd":"stop"}')
        self.assertFalse(dup["ok"])
        self.assertIn('duplicate key "cmd"', dup["error"])
        time.sleep(0.5)
        self.assertIsNone(proc.poll(), "a request with a duplicate key stopped the stream")
        v = control_line(sock, '{"cmd":"version","id":42}')
        self.assertEqual((v["id"], v["ok"], v["protocol"]), (42, True, 1), v)
        self.assertIn(f"broadcast {(REPO_ROOT / 'VERSION').read_text().strip()} (", v["version"])
        self.assertEqual(list(v)[0], "id")
        self.assertEqual(control_line(sock, '{"cmd":"frobnicate","id":"x"}')["id"], "x")
        self.assertEqual(control_line(sock, '{"cmd":"stats","id":7}')["id"], 7)
        r = subprocess.run([str(BROADCASTCTL), str(sock), "version"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["protocol"], 1)
        self.assertEqual(control_line(sock, "set-bitrate 700"), {"ok": True, "kbps": 700})
        changed = json.loads(events.readline())
        self.assertEqual(changed["event"], "bitrate-changed", changed)
        self.assertEqual(changed["kbps"], 700)
        self.assertEqual(control_line(sock, "stop"), {"ok": True})
        stopped = json.loads(events.readline())
        self.assertEqual(stopped, {"event": "stopped", "exit_code": 0, "reason": "finished"})
        rc, err = self.finish_cli(proc)
        self.assertEqual(rc, 0, err[-2000:])
        sub.close()

    def test_stale_socket_is_taken_over_a_live_one_refused(self):
        import socket as _socket
        sock = self.tmp / "stale.sock"
        dead = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        dead.bind(str(sock))          # a socket file nobody listens on: a killed run's
        dead.close()
        self.assertTrue(sock.exists())
        proc = self.start_cli(sock)
        time.sleep(0.3)
        self.assertEqual(control_line(sock, "stop"), {"ok": True})
        rc, err = self.finish_cli(proc)
        self.assertEqual(rc, 0, err[-2000:])
        self.assertIn(f"note: --control {sock}: took over a stale control socket", err)
        self.assertFalse(sock.exists())
        live = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        live.bind(str(sock))
        live.listen(1)
        self.addCleanup(live.close)
        r = subprocess.run([str(BUILD_DIR / "broadcast"), "--no-publish", "--source", "test", "--record",
                            str(self.tmp / "live.flv"), "--control", str(sock), "--duration", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--control {sock}: already in use by a running broadcast", r.stderr)
        self.assertTrue(sock.exists(), "a live socket was removed")

    @exclusive("broadcastctl's VmHWM")
    def test_broadcastctl_buffer_is_bounded(self):
        # A server that answers 300 MB without a newline: broadcastctl stops at 1 MiB, exit 2.
        import socket as _socket
        import threading
        sock = self.tmp / "flood.sock"
        server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        server.bind(str(sock))
        server.listen(1)
        self.addCleanup(server.close)
        sent = [0]

        def flood():
            conn, _ = server.accept()
            conn.recv(4096)
            chunk = b"x" * (1 << 20)
            try:
                while sent[0] < 300 << 20:
                    conn.sendall(chunk)
                    sent[0] += len(chunk)
            except OSError:
                pass
            conn.close()
        t = threading.Thread(target=flood, daemon=True)
        t.start()
        r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M", str(BROADCASTCTL), str(sock), "stats"],
                           capture_output=True, text=True, timeout=120)
        t.join(30)
        self.assertEqual(r.returncode, 2, r.stderr[-500:])
        self.assertIn("answer longer than 1 MiB without a newline", r.stderr)
        maxrss_kb = int(re.search(r"maxrss_kb=(\d+)", r.stderr).group(1))
        print(f"\n--- broadcastctl against a 300 MB answer: VmHWM {maxrss_kb / 1024:.1f} MiB, "
              f"server sent {sent[0] >> 20} MiB ---", file=sys.stderr)
        self.assertLess(maxrss_kb, 16 * 1024)

    def test_embedder_control_socket_from_python(self):
        sock = self.tmp / "py.sock"
        env = dict(os.environ, PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, str(Path(__file__).parent / "embedding" / "py_control.py"), str(sock),
                            str(self.tmp / "py-control.flv"), str(BROADCASTCTL)], env=env, capture_output=True,
                           text=True, timeout=120)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        rep = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(rep["version"]["protocol"], 1, rep)
        self.assertIn("libbroadcastkit", rep["version"]["version"])
        self.assertEqual(rep["set_bitrate"], {"ok": True, "kbps": 900}, rep)
        self.assertEqual(rep["target_after"], 900, rep)
        self.assertEqual(rep["stop"], {"ok": True}, rep)
        self.assertIn("stop-requested", rep["events"], rep)
        kinds = [e["event"] for e in rep["subscriber"]]
        self.assertEqual(kinds[0], "started", rep)
        self.assertIn("bitrate-changed", kinds)
        self.assertIn("dropped", kinds)
        # Rate-limited: at most one dropped event per second of dropping.
        self.assertLessEqual(kinds.count("dropped"), rep["seconds"] + 1, rep)
        self.assertEqual(sum(e["count"] for e in rep["subscriber"] if e["event"] == "dropped"),
                         max(e["total"] for e in rep["subscriber"] if e["event"] == "dropped"))
        self.assertEqual(kinds[-1], "stopped", rep)
        self.assertEqual(rep["subscriber"][-1]["exit_code"], 0)
        self.assertFalse(rep["socket_left"], rep)
