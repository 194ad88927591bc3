"""The adaptive bitrate on a link the kernel shapes (issue 38, part 2).

A 720p test source at 2500 kbps to nginx-rtmp inside a private network namespace whose loopback
(MTU 1500) gets `tc qdisc add dev lo root tbf rate 1200kbit burst 16kb latency L` for SHAPED_S
seconds, unlimited before and after; L is 500 ms (a short bottleneck queue) and 2000 ms (a
bloated consumer uplink). The episode is shorter than the issue's 120 s (the assertions are the
same). From the run's --stats-json lines and the loopback's transmitted bytes
(tools/bitrate_shaped.py, which also makes the figures and the plot for BENCHMARKS.md):

- from 10 s after the onset to the link's return, every second's video target sits within
  70-95% of what the link delivers and within 500-1150 kbps (the issue's strict band), but for
  failed probes: one or two seconds above it, between seconds inside it;
- once settled, at most 1% of the frames are dropped for congestion (encoder_busy drops are the
  machine's; the onset's drops, before the first cut, are in the message);
- within 10 s of the link's return the target is back at >= 80% of the configured 2500 kbps;
- a far end that reads at 1200 kbit/s behind 1 MiB socket buffers (no tbf): from 20 s after the
  onset every second's target within 500-1150 kbps, never the floor, and back once it reads fast.

Needs root (network namespaces and tc), like test_pmtu_blackhole.

Run: scripts/test --no-bootstrap --integration-only -k test_bitrate_shaped
"""

from __future__ import annotations

import os
import shutil
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import BROADCAST_BIN, TOOLS_DIR, BroadcastTestCase, exclusive, new_key, worker_tag  # noqa: E402

sys.path.insert(0, str(TOOLS_DIR))
import bitrate_shaped  # noqa: E402


def outside_band(samples: list, low: float, high: float, link: float | None = None) -> list[str]:
    """The seconds outside [low, high] kbps (and 70-95% of `link` when given), as "t:target", less
    failed probes: a run of at most two seconds above the band between seconds inside it. (The
    issue allows probing if a failed probe costs under a second above the link; x264 reaches a new
    rate over about a second, so a probe fails at the controller's first or second tick after it,
    and the once-a-second stats lines, on their own clock, show it for one or two.)"""
    def inside(s) -> bool:
        return low <= s.target <= high and (link is None or 0.70 <= s.target / link <= 0.95)
    def above(s) -> bool:
        return s.target > high or (link is not None and s.target / link > 0.95)
    out = []
    k = 0
    while k < len(samples):
        if inside(samples[k]):
            k += 1
            continue
        run = k
        while run < len(samples) and above(samples[run]) and not inside(samples[run]):
            run += 1
        bounded = (k == 0 or inside(samples[k - 1])) and (run == len(samples) or inside(samples[run]))
        if run > k and run - k <= 2 and bounded:
            k = run
            continue
        out.append(f"{samples[k].t:.0f}:{samples[k].target}")
        k += 1
    return out


def can_make_namespaces() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None


@exclusive("the bitrate controller on a shaped link")
@unittest.skipUnless(can_make_namespaces(), "needs root, ip and tc (network namespaces)")
class ShapedLinkBitrateTest(BroadcastTestCase):
    ONSET_S = 10
    SHAPED_S = 38
    AFTER_S = 16
    VIDEO_KBPS = 2500
    SETTLE_S = 10
    RECOVER_S = 10

    def run_episode(self, ep: bitrate_shaped.Episode, name: str, tag: str) -> tuple[list, dict]:
        """Runs one episode in namespace bkbr<worker><tag> (a fresh key, its files scanned for it);
        asserts the run exited 0."""
        work = self.tmp / name
        samples, fig = bitrate_shaped.run_episode(ep, work, f"{worker_tag()}{tag}", BROADCAST_BIN, key=new_key())
        self.track_file(work / "stderr.txt")
        self.track_file(work / "stats.jsonl")
        self._captured_texts.append(fig["stderr_tail"])
        self.assertEqual(fig["exit_code"], 0, fig["stderr_tail"])
        return samples, fig

    def run_shaped(self, latency: str) -> None:
        ep = bitrate_shaped.Episode(rate="1200kbit", latency=latency, onset_s=self.ONSET_S,
                                    release_s=self.ONSET_S + self.SHAPED_S,
                                    duration_s=self.ONSET_S + self.SHAPED_S + self.AFTER_S,
                                    video_kbps=self.VIDEO_KBPS)
        samples, fig = self.run_episode(ep, f"shaped-{latency}", latency[:-2])
        link = fig["link_delivered_kbps"]
        # The shaper did shape: the loopback carried about the tbf rate while it was on.
        self.assertTrue(1000 <= link <= 1300, f"the loopback delivered {link} kbit/s under a 1200 kbit/s tbf")
        on, off = ep.onset_s, ep.release_s
        settled = [s for s in samples if on + self.SETTLE_S <= s.t < off]
        self.assertGreaterEqual(len(settled), self.SHAPED_S - self.SETTLE_S - 3, "stats lines missing")
        trace = " ".join(f"{s.t:.0f}:{s.target}" for s in samples if on - 2 <= s.t < off + self.RECOVER_S + 3)
        shares = sorted(s.target / link for s in settled)
        median = shares[len(shares) // 2]
        self.assertTrue(0.70 <= median <= 0.95,
                        f"median target/link {median:.2f} from {self.SETTLE_S} s after the onset (want 0.70-0.95 of "
                        f"{link} kbit/s); target by second: {trace}")
        # Never parked at the floor (the configured rate / 8) on a link that carries 3x that.
        floor = max(150, self.VIDEO_KBPS // 8)
        self.assertGreater(min(s.target for s in settled), floor, trace)
        # The strict band: every second from 10 s after the onset within 70-95% of the
        # link and 500-1150 kbps, but for failed probes (one or two seconds above it between
        # seconds inside it: see outside_band).
        self.assertEqual(outside_band(settled, 500, 1150, link), [],
                         f"outside 70-95% of {link} kbit/s and 500-1150 kbps (beyond failed probes); "
                         f"by second: {trace}")
        # A probe that fails costs less than a second above the link (the issue): each failed
        # probe whose video alone is 3% or more over the link (with the audio, 14% or more) stood
        # under 1000 ms, from the tick that set it to the reading that ended it (the watch
        # between ticks; the tick alone ends one at 1000 ms or later). One closer to the link
        # grows its queue by a few ms a reading and can need a keyframe's jump to show: under
        # 1500 ms. (At 3effc71: 1.018 at 713 ms, 1.049 at 822, 1.10-1.12 at 611-717.)
        self.assertEqual(fig["failed_probes_missed"], 0, f"failed probes not seen in the stats: {fig['failed_probes']}")
        over = [p for p in fig["failed_probes"] if p["share"] > 1.0 and on <= p["t"] < off]
        self.assertEqual([p for p in over if p["ms"] >= (1000 if p["share"] > 1.03 else 1500)], [],
                         f"failed probes over the {link} kbit/s link that stood too long: {over}")
        # Once settled, at most 1% of the frames dropped for congestion (the onset's own drops,
        # the second or two before the first cut, are reported in the message).
        dropped = settled[-1].drops - settled[0].drops
        encoded = settled[-1].frames - settled[0].frames
        self.assertLessEqual(dropped, 0.01 * encoded,
                             f"{dropped} of {encoded} frames dropped once settled ({fig['congestion_drops']} in all)")
        self.assertIsNotNone(fig["recovery_s"], f"never back at 80% of {self.VIDEO_KBPS}: {trace}")
        self.assertLessEqual(fig["recovery_s"], self.RECOVER_S, f"back at 80% after {fig['recovery_s']} s: {trace}")

    def test_slow_reading_far_end(self):
        """The far end reads at 1200 kbit/s behind 1 MiB socket buffers (a relay or a busy server:
        tools/throttle_proxy.py in the namespace, the link itself unshaped). Every byte is
        acknowledged at once and the RTT stays that of an empty path until the buffers are full;
        only the window the peer advertises shows it (issue 38: 312-2440 kbps and 35 s at the floor
        before the controller read it)."""
        shaped = 50
        ep = bitrate_shaped.Episode(rate="1200kbit", onset_s=self.ONSET_S, release_s=self.ONSET_S + shaped,
                                    duration_s=self.ONSET_S + shaped + 20, video_kbps=self.VIDEO_KBPS,
                                    slow_reader_bytes=1 << 20)
        samples, fig = self.run_episode(ep, "slow-reader", "sr")
        link = fig["link_delivered_kbps"]
        self.assertTrue(1000 <= link <= 1300, f"the relay forwarded {link} kbit/s reading at 1200 kbit/s")
        on, off = ep.onset_s, ep.release_s
        trace = " ".join(f"{s.t:.0f}:{s.target}" for s in samples if on - 2 <= s.t < off + 20)
        floor = max(150, self.VIDEO_KBPS // 8)
        self.assertGreater(min(s.target for s in samples if on <= s.t < off), floor, f"at the floor: {trace}")
        # The row for this far end: within 500-1150 kbps after 30 s. Here from 20 s after
        # the onset (the buffer taken in before the first cut drains in 10-15 s) to the release.
        # The issue allows probing if a failed probe costs under a second above the link: a
        # failed probe's one or two seconds over 1150 are allowed (see outside_band), nothing
        # longer, and never a second under 500.
        late = [s for s in samples if on + 20 <= s.t < off]
        self.assertGreaterEqual(len(late), shaped - 20 - 3, "stats lines missing")
        self.assertEqual(outside_band(late, 500, 1150), [],
                         f"outside 500-1150 kbps (beyond failed probes) from 20 s after the onset; by second: {trace}")
        dropped = late[-1].drops - late[0].drops
        encoded = late[-1].frames - late[0].frames
        self.assertLessEqual(dropped, 0.01 * encoded, f"{dropped} of {encoded} frames dropped once settled")
        # Back once the far end reads fast again (no 10 s target for this far end in the issue:
        # its probes hold 10 s at a level that failed, as on any link without a queue in the path).
        self.assertIsNotNone(fig["recovery_s"], f"never back at 80% of {self.VIDEO_KBPS}: {trace}")

    def test_short_bottleneck_queue_500ms(self):
        self.run_shaped("500ms")

    def test_bloated_bottleneck_queue_2000ms(self):
        self.run_shaped("2000ms")


if __name__ == "__main__":
    unittest.main()
