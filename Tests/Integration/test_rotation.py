"""A phone rotating mid-stream: the test source alternates 1280x720 and 720x1280 frames
(`--test-rotate-every`) while the output stays 1280x720. What nginx-rtmp recorded is
decoded with PyAV: every frame decodes, the size never changes, the frame count and
timestamps are continuous across each rotation, the burned-in counter reads the expected
frame on both orientations, and portrait phases are pillarboxed (black sides, content in
the centre) while landscape phases fill the frame."""

import json
import unittest

import av
import numpy as np

import support
from support import BroadcastTestCase
from support import exclusive  # noqa: E402

FPS = 30
SECONDS = 10
ROTATE_EVERY = 3
OUT_W, OUT_H = 1280, 720
# Where a 720x1280 frame lands in 1280x720 (LetterboxGeometry: even width and offset).
PORTRAIT_W = 404
PORTRAIT_X = 438
# Counter strip of the source frame (CounterStrip: 24 blocks of 16 px at (16, 16)).
STRIP_BITS, STRIP_ORIGIN, STRIP_BLOCK = 24, 16, 16
BLACK_MAX = 20


def is_portrait_phase(index: int) -> bool:
    return (index * 1000 // (FPS * ROTATE_EVERY * 1000)) % 2 == 1


def read_counter(y: np.ndarray, portrait: bool) -> int:
    """Reads the source's counter strip, scaled and shifted to where it lands in the output."""
    sx = PORTRAIT_W / 720 if portrait else 1.0
    sy = OUT_H / 1280 if portrait else 1.0
    x0 = PORTRAIT_X if portrait else 0
    cy = int(round((STRIP_ORIGIN + STRIP_BLOCK / 2) * sy))
    value = 0
    for bit in range(STRIP_BITS):
        cx = int(round(x0 + (STRIP_ORIGIN + bit * STRIP_BLOCK + STRIP_BLOCK / 2) * sx))
        sample = float(y[cy - 1:cy + 2, cx - 1:cx + 2].mean())
        value = (value << 1) | (1 if sample >= 128 else 0)
    return value


@exclusive("timestamp gaps at 1.5 frame intervals")
class RotationTests(BroadcastTestCase):
    @classmethod
    def setUpClass(cls):
        cls.ingest = support.start_ingest()

    @classmethod
    def tearDownClass(cls):
        cls.ingest.cleanup()

    def test_rotating_source_keeps_output_size_timing_and_pillars(self):
        key = support.new_key()
        stats = self.track_file(self.tmp / "stats.jsonl")
        r = self.run_broadcast(["--url", self.ingest.url, "--source", "test", "--res", "720p",
                                "--duration", str(SECONDS), "--test-rotate-every", str(ROTATE_EVERY),
                                "--stats-json", str(stats), "--quiet"],
                               env={"STREAM_KEY": key}, timeout=SECONDS + 60)
        self.assertEqual(r.returncode, 0, r.describe())
        sent = self.assertVideoAccounted(stats, produced=FPS * SECONDS)
        rec = self.ingest.wait_recording(key)

        frames = []  # (pts seconds, counter, portrait seen, problems)
        decode_errors = 0
        sizes = set()
        with av.open(str(rec)) as container:
            vs = container.streams.video[0]
            for packet in container.demux(vs):
                try:
                    decoded = packet.decode()
                except av.error.FFmpegError:
                    decode_errors += 1
                    continue
                for frame in decoded:
                    sizes.add((frame.width, frame.height))
                    y = frame.to_ndarray(format="gray")
                    left, right = y[:, :PORTRAIT_X - 8], y[:, PORTRAIT_X + PORTRAIT_W + 8:]
                    centre = y[:, PORTRAIT_X + 40:PORTRAIT_X + PORTRAIT_W - 40]
                    pillars_black = (float(np.percentile(left, 99)) <= BLACK_MAX
                                     and float(np.percentile(right, 99)) <= BLACK_MAX)
                    frames.append((float(frame.pts * vs.time_base), pillars_black,
                                   float(centre.mean()), float(centre.std()), y))

        self.assertEqual(decode_errors, 0, "decode errors")
        self.assertEqual(sizes, {(OUT_W, OUT_H)}, f"output sizes {sizes}")
        drops = {}
        lines = stats.read_text().splitlines() if stats.exists() else []
        if lines:
            drops = {k: v for k, v in json.loads(lines[-1]).get("drops", {}).items() if v}
        self.assertLessEqual(abs(len(frames) - sent), 3,
                             f"{len(frames)} frames decoded, {sent} sent (drop counters: {drops})")

        pts = [f[0] for f in frames]
        bad = [i for i in range(1, len(pts)) if pts[i] <= pts[i - 1]]
        self.assertEqual(bad, [], "timestamps not strictly increasing")

        # Source frame n has pts n / fps from the stream's start; anchor on the first
        # frame's counter (a landscape frame) in case the stream starts a frame late.
        base = read_counter(frames[0][4], False) - int(round(pts[0] * FPS))
        rotations = 0
        previous = None
        counters = []
        for t, pillars_black, centre_mean, centre_std, y in frames:
            index = int(round(t * FPS)) + base
            portrait = is_portrait_phase(index)
            counter = read_counter(y, portrait)
            counters.append(counter)
            self.assertEqual(counter, index, f"frame at {t:.3f} s: counter {counter}, expected {index}")
            flash = centre_mean > 200
            if portrait:
                self.assertTrue(pillars_black, f"frame {index} (portrait phase): side pillars not black")
            else:
                self.assertFalse(pillars_black, f"frame {index} (landscape phase): sides are black")
            if not flash:
                self.assertGreater(centre_std, 10, f"frame {index}: no content in the centre")
            if previous is not None and portrait != previous:
                rotations += 1
            previous = portrait
        self.assertGreaterEqual(rotations, 2, "fewer than two rotations seen")

        # No jump at a rotation: around every switch the frame spacing is one frame.
        for i in range(1, len(counters)):
            if is_portrait_phase(counters[i]) != is_portrait_phase(counters[i - 1]):
                self.assertEqual(counters[i] - counters[i - 1], 1, f"frames lost at the rotation to {counters[i]}")
                gap = pts[i] - pts[i - 1]
                self.assertLess(gap, 1.5 / FPS, f"timestamp jump of {gap * 1000:.0f} ms at the rotation to {counters[i]}")


if __name__ == "__main__":
    unittest.main()
