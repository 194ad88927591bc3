"""The audio encoders' delay, derived from decoded output instead of taken from the code.

Decoders play each AAC/Opus packet late by the encoder's delay (AAC priming, Opus pre-skip);
`AudioTagWriter` stamps packets that much earlier so that audio plays at its capture time. This
test checks the result, not the constant: through the Python binding (so the timestamps are
exactly ours, no capture clock in between) it sends 3 s of 320x240 video, black with one white
frame at 1.5 s, and a tone-free audio track with a single click at 1.5 s, records FLV, and
decodes the file with PyAV (FFmpeg's decoders). The decoded click must land on the white frame's
time within 2 ms: a delay constant wrong by 100 samples (2.1 ms) or more fails, and the
measured offset says by how many samples the constant is off.

An MP4 recording keeps the AAC priming packets (stamped before 0) under its edit list, so the
stream's very first samples decode too: a second click 100 samples (2 ms) after the start must
decode at its time, and the late click still on the white frame. FLV cannot carry a time before
0, so there the first 448 samples (9.3 ms) are not sent (docs/recording.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import unittest

from support import REPO_ROOT, BroadcastTestCase
from support import exclusive  # noqa: E402

LIB = REPO_ROOT / ".build" / "release" / "libbroadcastkit.so"
PY_BINDING = REPO_ROOT / "bindings" / "python"
CLICK_S = 1.5
TOLERANCE_S = 0.002

# Runs in a child process (the library's threads stay out of the test runner). Real-time paced, so
# the mixer sees audio arrive as it would live.
SENDER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import broadcastkit

    path, codec, click_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
    early_sample = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    fps, rate, chunk = 30, 48000, 480
    black = np.zeros((240, 320, 4), np.uint8)
    white = np.full((240, 320, 4), 255, np.uint8)
    click_frame = round(click_s * fps)
    click_sample = round(click_s * rate)
    with broadcastkit.Session(record=path, width=320, height=240, fps=fps, video_bitrate=600,
                              preset="ultrafast", audio_codec=codec) as s:
        t0 = broadcastkit.now_ns() + 50_000_000
        frames = 0
        for k in range(3 * rate // chunk):
            pts = t0 + k * chunk * 1_000_000_000 // rate
            while frames * 1_000_000_000 // fps <= (k * chunk) * 1_000_000_000 // rate:
                vpts = t0 + frames * 1_000_000_000 // fps
                r = s.send_video(white if frames == click_frame else black, pts_ns=vpts)
                assert r == "accepted", f"video frame {frames}: {r}"
                frames += 1
            samples = np.zeros((chunk, 2), np.float32)
            # The early click is the quieter one: the loudest sample stays the late click.
            for c, level in ((click_sample, 0.9), (early_sample, 0.4)):
                if k * chunk <= c < (k + 1) * chunk:
                    samples[c - k * chunk, :] = level
            r = s.send_audio(samples, pts_ns=pts)
            assert r == "accepted", f"audio buffer {k}: {r}"
            wait = (pts - broadcastkit.now_ns()) / 1e9
            if wait > 0:
                time.sleep(wait)
        print(s.stats()["drops"])
""")


def decode_flash_and_click(path) -> tuple[float, float, int]:
    """(time of the brightest video frame, time of the loudest decoded audio sample, audio rate)."""
    import av
    import numpy as np

    flash_t, flash_luma = None, -1.0
    click_t, click_peak, rate = None, -1.0, 0
    with av.open(str(path)) as c:
        for frame in c.decode(c.streams.video[0]):
            luma = float(frame.to_ndarray(format="gray").mean())
            if luma > flash_luma:
                flash_luma, flash_t = luma, float(frame.pts * frame.time_base)
    with av.open(str(path)) as c:
        for frame in c.decode(c.streams.audio[0]):
            a = frame.to_ndarray()
            # Planar: (channels, samples); packed: (1, samples * channels), interleaved.
            first = a[0] if frame.format.is_planar else a.reshape(-1)[::len(frame.layout.channels)]
            peak = np.abs(first)
            i = int(peak.argmax())
            if peak[i] > click_peak:
                rate = frame.sample_rate
                click_peak, click_t = float(peak[i]), float(frame.pts * frame.time_base) + i / frame.sample_rate
    if flash_luma < 128 or click_peak < 0.1:
        raise AssertionError(f"no flash or no click decoded (luma {flash_luma:.0f}, peak {click_peak:.3f})")
    return flash_t, click_t, rate


def decode_audio(path) -> tuple[float, int, "object"]:
    """(presentation time of the first decoded sample, rate, the first channel as one array)."""
    import av
    import numpy as np

    start, rate, parts = None, 0, []
    with av.open(str(path)) as c:
        for frame in c.decode(c.streams.audio[0]):
            a = frame.to_ndarray()
            first = a[0] if frame.format.is_planar else a.reshape(-1)[::len(frame.layout.channels)]
            if start is None:
                start, rate = float(frame.pts * frame.time_base), frame.sample_rate
            parts.append(np.asarray(first, dtype=np.float32))
    if start is None:
        raise AssertionError("no audio decoded")
    return start, rate, np.concatenate(parts)


@exclusive("a click's play time against its capture time")
class AudioEncoderDelayTest(BroadcastTestCase):
    def check(self, codec: str) -> None:
        rec = self.track_file(self.tmp / f"click-{codec}.flv")
        env = dict(os.environ, PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, "-c", SENDER, str(rec), codec, str(CLICK_S)], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        flash_t, click_t, rate = decode_flash_and_click(rec)
        offset = click_t - flash_t
        print(f"\n[{codec} delay] white frame at {flash_t:.4f} s, decoded click at {click_t:.4f} s: audio "
              f"{offset * 1000:+.2f} ms ({offset * rate:+.0f} samples at {rate} Hz) from its capture time", file=sys.stderr)
        self.assertAlmostEqual(flash_t, CLICK_S, delta=0.0011, msg="the white frame keeps its time")
        self.assertLessEqual(abs(offset), TOLERANCE_S,
                             f"{codec}: the decoded click is {offset * 1000:+.2f} ms ({offset * rate:+.0f} samples) "
                             f"from its capture time: the encoder delay the tags are shifted by is off by that much")

    def test_aac_click_plays_at_its_capture_time(self) -> None:
        self.check("aac")

    def test_opus_click_plays_at_its_capture_time(self) -> None:
        self.check("opus")

    def test_aac_mp4_keeps_the_first_samples(self) -> None:
        import numpy as np

        early = 100
        rec = self.track_file(self.tmp / "click-aac.mp4")
        env = dict(os.environ, PYTHONPATH=str(PY_BINDING), BROADCASTKIT_LIBRARY=str(LIB))
        r = subprocess.run([sys.executable, "-c", SENDER, str(rec), "aac", str(CLICK_S), str(early)], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        flash_t, click_t, rate = decode_flash_and_click(rec)
        start, rate, audio = decode_audio(rec)
        head = np.abs(audio[: rate // 10])
        peak_at = start + int(head.argmax()) / rate
        print(f"\n[aac mp4] audio from {start * 1000:+.2f} ms; early click (sample {early}) decoded at "
              f"{peak_at * 1000:.2f} ms, peak {head.max():.3f}; late click {(click_t - flash_t) * 1000:+.2f} ms "
              f"from the white frame", file=sys.stderr)
        self.assertAlmostEqual(flash_t, CLICK_S, delta=0.0011, msg="the white frame keeps its time")
        self.assertLessEqual(abs(click_t - flash_t), TOLERANCE_S, "the edit list keeps the audio on the video")
        self.assertLessEqual(abs(start), 0.001, f"the audio track starts at {start * 1000:.2f} ms, not at 0")
        self.assertGreater(head.max(), 0.1, f"the click {early} samples after the start was not decoded: "
                                            f"the first samples are lost (peak {head.max():.3f} in the first 100 ms)")
        self.assertLessEqual(abs(peak_at - early / rate), TOLERANCE_S,
                             f"the early click plays at {peak_at * 1000:.2f} ms, not at {early / rate * 1000:.2f} ms")


if __name__ == "__main__":
    unittest.main()
