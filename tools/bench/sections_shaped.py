"""The shaped section (issue 38): the adaptive bitrate on links the kernel shapes, 120 s episodes.

Runs tools/bitrate_shaped.py's episodes (root: network namespaces, tc) and keeps, per run, the
figures and the per-second series (target, link, sent) that report.py plots as
docs/bench/shaped_*.png. The CI tests (Tests/Integration/test_bitrate_shaped.py) run shorter
episodes of the same setup; these are the issue's full runs.
"""
from __future__ import annotations

import os
import sys
import time

from bench_common import REPO, log, sh

# (slug, title, Episode arguments); the 1200 kbit/s episodes are the t = 20-140 s.
RUNS = (
    ("tbf500", "tbf 1200 kbit/s, 500 ms queue", dict(rate="1200kbit", latency="500ms", onset_s=20, release_s=140,
                                                     duration_s=170)),
    ("tbf2000", "tbf 1200 kbit/s, 2000 ms queue", dict(rate="1200kbit", latency="2000ms", onset_s=20,
                                                       release_s=140, duration_s=170)),
    ("tbf800", "tbf 800 kbit/s for 30 s, then free", dict(rate="800kbit", latency="500ms", onset_s=20,
                                                          release_s=50, duration_s=80)),
    ("relay", "a relay reading 1200 kbit/s, 8 MiB receive buffer", dict(rate="1200kbit", onset_s=20,
                                                                        release_s=140, duration_s=170,
                                                                        relay=True)),
)

COMMANDS = {
    "tbf500": "sudo tools/bitrate_shaped.py --latency 500ms --out OUT",
    "tbf2000": "sudo tools/bitrate_shaped.py --latency 2000ms --out OUT",
    "tbf800": "sudo tools/bitrate_shaped.py --rate 800kbit --onset 20 --release 50 --duration 80 --out OUT",
    "relay": "sudo tools/bitrate_shaped.py --relay --out OUT",
}


class ShapedSections:
    """The shaped section (a part of `run.Bench`: it uses the shared state of `BenchBase`)."""

    def shaped(self) -> None:
        if os.geteuid() != 0:
            log("shaped: needs root (network namespaces, tc); skipped")
            return
        sys.path.insert(0, str(REPO / "tools"))
        import bitrate_shaped as bs
        runs = {}
        for slug, title, kw in RUNS:
            if self.a.quick:
                kw = dict(kw, onset_s=8, release_s=28, duration_s=40)
            ep = bs.Episode(**kw)
            load0 = sh("cat /proc/loadavg")
            samples, fig = bs.run_episode(ep, self.work / f"shaped-{slug}", f"b{os.getpid() % 10000}{slug[:4]}",
                                          self.bin / "broadcast")
            fig.pop("stderr_tail", None)
            log(f"shaped {slug}: at 10 s {fig['at_10s_share']}, band {fig['band_min']}-{fig['band_max']} "
                f"(x{fig['band_ratio']}, {fig['band_out_seconds']} s out of 500-1150), settled drops "
                f"{fig['settled_drop_share']}, recovery {fig['recovery_s']} s, last15/before {fig['last15_vs_before']}")
            runs[slug] = {"title": title, "command": COMMANDS[slug], "figures": fig,
                          "loadavg_start": load0, "loadavg_end": sh("cat /proc/loadavg"),
                          "series": [[round(s.t, 1), s.target, round(s.link_kbps), round(s.kbps)] for s in samples]}
            time.sleep(1)
        self.results["shaped"] = {
            "runs": runs, "commit": sh(f"git -C {REPO} rev-parse --short HEAD"),
            "setup": "720p test source at 2500 kbps (x264 veryfast, AAC 128 kbps) to nginx-rtmp in a private network "
                     "namespace; its loopback (MTU 1500) gets `tc qdisc add dev lo root tbf rate RATE burst 16kb "
                     "latency L` from the onset to the release (the relay run: no tbf, a TCP relay that reads at "
                     "RATE meanwhile, tools/bitrate_shaped.py --relay)"}
        self.save()
