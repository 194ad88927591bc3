#!/usr/bin/env python3
"""The adaptive bitrate on a link the kernel shapes (issue 38): figures and a plot.

A private network namespace whose loopback (MTU 1500) carries a 720p test source at 2500 kbps
to nginx-rtmp. From --onset to --release the loopback gets `tc qdisc ... tbf rate RATE burst 16kb
latency L`; before and after it is unlimited. Each second the tool reads the loopback's transmitted bytes
(what the link delivered) next to the run's `--stats-json` lines (`target_video_kbps`, drops).

Figures (printed as JSON, and written to OUT/figures.json):
- settle_s: seconds from the onset until the video target is within 70-95% of what the link
  delivered (the loopback's transmitted bytes) and stays in that band;
- at_10s_share: the target's share of the link's delivered rate 10 s after the onset;
- band: min/max/median target over the settled window, and its ratio max/min;
- drop_share: frames the send queue dropped for congestion / frames encoded (encoder_busy drops,
  the machine's, are counted apart);
- recovery_s: seconds from the release until the target is >= 80% of the configured rate.

- band_outside: the seconds from 10 s after the onset to the release whose target is outside
  the issue's strict band (70-95% of the link and 500-1150 kbps), as "t:target" pairs.

With --slow-reader BYTES the link is not shaped by the kernel: a relay in the namespace
(tools/throttle_proxy.py) reads at RATE over the episode with BYTES of socket buffer on each side
(the far end whose buffers hold seconds: the sender's own queue stays empty until they fill), and
"link" is what the relay forwarded.

Run as root: tools/bitrate_shaped.py --latency 500ms --out /tmp/b500 [--plot]
(`--rate 800kbit --onset 20 --release 50 --duration 80` for the 800 kbit/s episode;
`--slow-reader 4194304` for the slow-reading relay.)
The integration test Tests/Integration/test_bitrate_shaped.py uses `run_episode` from here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BIN = Path(os.environ.get("BROADCAST_BIN", REPO_ROOT / ".build" / "release" / "broadcast"))


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=30).stdout


def parse_rate_kbit(rate: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit)", rate)
    if not m:
        raise ValueError(f"rate {rate!r}: want NNNkbit or NNmbit")
    return float(m.group(1)) * (1000 if m.group(2) == "mbit" else 1)


@dataclass
class Episode:
    """One run's settings."""
    rate: str = "1200kbit"
    latency: str = "500ms"
    burst: str = "16kb"
    onset_s: float = 20
    release_s: float = 140
    duration_s: float = 170
    res: str = "720p"
    video_kbps: int = 2500
    extra_args: list[str] = field(default_factory=list)
    # > 0: no tbf; a relay reads at `rate` with this much socket buffer on each side.
    slow_reader_bytes: int = 0


@dataclass
class Sample:
    t: float           # seconds since the broadcast started (its stats time_s)
    target: int        # target_video_kbps
    kbps: float        # what the run reports it sent (audio included)
    link_kbps: float   # what the loopback sent over the last second (both directions; ACKs are small)
    queue_ms: int
    drops: int         # congestion drops so far (the send queue's policy: what the link did not carry)
    cpu_drops: int     # encoder_busy drops so far (the machine, not the link)
    frames: int        # video_frames_encoded + drops so far (frames produced)
    shaped: bool
    probes_failed: int = 0         # failed bitrate probes so far
    failed_probe_kbps: int = 0     # the last failed probe's level
    failed_probe_ms: int = 0       # how long its target stood


# The drop reasons of the send queue's congestion policy (see CongestionPolicy).
CONGESTION_DROPS = ("congestion_p_frame", "congestion_until_idr", "queue_full")


def _link_bytes(ns: str) -> int | None:
    """Bytes the namespace's loopback transmitted (every packet both ways; ACKs are small)."""
    out = json.loads(sh("ip", "-n", ns, "-s", "-j", "link", "show", "lo"))
    try:
        return int(out[0]["stats64"]["tx"]["bytes"])
    except (LookupError, ValueError, TypeError):
        return None


def _relay_bytes(status: Path) -> int | None:
    """Bytes the relay forwarded to the ingest (its status file; None until it writes one)."""
    try:
        return int(json.loads(status.read_text())["bytes_client_to_server"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_episode(ep: Episode, workdir: Path, tag: str, broadcast_bin: Path = DEFAULT_BIN,
                key: str | None = None) -> tuple[list[Sample], dict]:
    """Runs one shaped episode in namespace `bkbr{tag}`; returns per-second samples and figures.
    Everything it starts (namespace, nginx, broadcast) is stopped by pid / name before it returns."""
    workdir.mkdir(parents=True, exist_ok=True)
    ns = f"bkbr{tag}"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    sh("ip", "netns", "add", ns)
    nginx = proc = relay = None
    try:
        sh("ip", "-n", ns, "link", "set", "lo", "mtu", "1500")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        (workdir / "rec").mkdir(exist_ok=True)
        conf = workdir / "nginx.conf"
        conf.write_text(
            "load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;\n"
            f"daemon off; master_process off; worker_processes 1; pid {workdir}/nginx.pid;\n"
            f"error_log {workdir}/error.log info;\nevents {{ worker_connections 64; }}\n"
            "rtmp { server { listen 127.0.0.1:1935; chunk_size 4096;\n"
            "  application live { live on; } } }\n")
        nginx = subprocess.Popen(["ip", "netns", "exec", ns, "nginx", "-c", str(conf), "-p", str(workdir),
                                  "-e", str(workdir / "error.log")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            if nginx.poll() is not None:
                raise RuntimeError(f"nginx exited with {nginx.returncode}")
            if sh("ip", "netns", "exec", ns, "ss", "-Hltn", "sport = :1935").strip():
                break
            if time.monotonic() > deadline:
                raise RuntimeError("nginx does not listen after 10 s")
            time.sleep(0.05)
        port = 1935
        relay_status = workdir / "relay.json"
        if ep.slow_reader_bytes > 0:
            relay_status.unlink(missing_ok=True)
            relay = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, str(REPO_ROOT / "tools" / "throttle_proxy.py"),
                 "--listen-port", "1936", "--target-port", "1935",
                 "--throttle-kbps", str(parse_rate_kbit(ep.rate)), "--throttle-from", str(ep.onset_s),
                 "--throttle-for", str(ep.release_s - ep.onset_s), "--rcvbuf", str(ep.slow_reader_bytes),
                 "--status-json", str(relay_status)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            line = relay.stdout.readline() if relay.stdout else ""
            if "listening" not in line:
                raise RuntimeError(f"the relay did not start: {line!r}")
            port = 1936
        stats = workdir / "stats.jsonl"
        stats.unlink(missing_ok=True)
        err = workdir / "stderr.txt"
        key = key or ("sk_live_" + secrets.token_hex(12))
        with err.open("wb") as e:
            proc = subprocess.Popen(["ip", "netns", "exec", ns, "env", f"STREAM_KEY={key}", str(broadcast_bin),
                                     "--source", "test", "--res", ep.res, "--video-bitrate", str(ep.video_kbps),
                                     "--duration", str(int(ep.duration_s)), "--url", f"rtmp://127.0.0.1:{port}/live",
                                     "--stats-json", str(stats), "--reconnect-attempts", "0", *ep.extra_args],
                                    stdout=subprocess.DEVNULL, stderr=e)
        start = time.monotonic()
        link: list[tuple[float, int]] = []   # (seconds since start, loopback tx bytes)
        shaped_span = (ep.onset_s, ep.release_s)
        state = "free"
        shape = ["tbf", "rate", ep.rate, "burst", ep.burst, "latency", ep.latency]
        while proc.poll() is None:
            now = time.monotonic() - start
            if ep.slow_reader_bytes > 0:
                pass  # the relay keeps its own schedule (it started just before broadcast)
            elif state == "free" and now >= shaped_span[0]:
                sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", *shape)
                state = "shaped"
            elif state == "shaped" and now >= shaped_span[1]:
                sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "lo", "root")
                state = "released"
            b = _relay_bytes(relay_status) if ep.slow_reader_bytes > 0 else _link_bytes(ns)
            if b is not None:
                link.append((now, b))
            time.sleep(0.25)
            if now > ep.duration_s + 30:
                proc.kill()
                raise RuntimeError("broadcast did not end on time")
        code = proc.returncode
        text = err.read_text(errors="replace")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for p in (relay, nginx):
            if p is not None:
                p.kill()
                p.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    lines = [json.loads(l) for l in stats.read_text().splitlines() if l.strip()]
    samples = _samples(lines, link, ep)
    figures = figures_of(samples, ep)
    figures["exit_code"] = code
    figures["stderr_tail"] = text[-2000:]
    (workdir / "samples.json").write_text(json.dumps([s.__dict__ for s in samples]))
    (workdir / "figures.json").write_text(json.dumps(figures, indent=1))
    return samples, figures


def _samples(lines: list[dict], link: list[tuple[float, int]], ep: Episode) -> list[Sample]:
    """Pairs each stats line with the loopback's rate over the second before it (the tool's clock and
    the run's start within a few tens of ms of each other)."""
    def link_rate(t: float) -> float:
        before = [p for p in link if p[0] <= t - 1.0]
        after = [p for p in link if p[0] <= t]
        if not before or not after or after[-1][0] <= before[-1][0]:
            return 0.0
        (t0, b0), (t1, b1) = before[-1], after[-1]
        return (b1 - b0) * 8 / 1000 / (t1 - t0)
    out = []
    for l in lines:
        if l.get("state") not in ("live", "running", "streaming", "reconnecting") and "time_s" not in l:
            continue
        t = float(l["time_s"])
        by = l.get("drops", {})
        drops = sum(int(by.get(k, 0)) for k in CONGESTION_DROPS)
        cpu = int(by.get("encoder_busy", 0))
        out.append(Sample(t=t, target=int(l["target_video_kbps"]), kbps=float(l["kbps"]), link_kbps=link_rate(t),
                          queue_ms=int(l.get("queue_ms", 0)), drops=drops, cpu_drops=cpu,
                          frames=int(l.get("video_frames_encoded", 0)) + cpu,
                          shaped=ep.onset_s <= t < ep.release_s,
                          probes_failed=int(l.get("probes_failed", 0)),
                          failed_probe_kbps=int(l.get("last_failed_probe_kbps", 0)),
                          failed_probe_ms=int(l.get("last_failed_probe_ms", 0))))
    return out


def figures_of(samples: list[Sample], ep: Episode) -> dict:
    """The issue's figures from one run's samples (see the module docstring)."""
    rate = parse_rate_kbit(ep.rate)
    on, off = ep.onset_s, ep.release_s
    shaped = [s for s in samples if on <= s.t < off]
    # What the link delivers while shaped: the loopback's bytes over the episode, less its first 5 s
    # (the queue filling); this is the "link" the target is compared with.
    steady = [s.link_kbps for s in shaped if s.t >= on + 5 and s.link_kbps > 0]
    link = statistics.median(steady) if steady else rate
    def share(s: Sample) -> float:
        # The measure: the video target against what the link delivers.
        return s.target / link
    at10 = [s for s in shaped if s.t >= on + 10]
    settle_window = [s for s in shaped if s.t >= on + 30] or shaped
    targets = [s.target for s in settle_window]
    # The first second after which every shaped second sits within 70-95% of the link.
    settle_s = None
    for i, s in enumerate(shaped):
        if all(0.70 <= share(x) <= 0.95 for x in shaped[i:]):
            settle_s = round(s.t - on, 1)
            break
    outside = [f"{s.t:.0f}:{s.target}" for s in at10
               if not (0.70 <= share(s) <= 0.95 and 500 <= s.target <= 1150)]
    # Every failed probe, from the stats lines that first show it: its level against the link and
    # how long its target stood. `missed`: failures between two lines after the first (their
    # levels and times are not seen).
    failed_probes, missed, seen = [], 0, samples[0].probes_failed if samples else 0
    for s in samples:
        if s.probes_failed > seen:
            missed += s.probes_failed - seen - 1
            failed_probes.append({"t": round(s.t, 1), "kbps": s.failed_probe_kbps,
                                  "share": round(s.failed_probe_kbps / link, 3),
                                  "ms": s.failed_probe_ms})
            seen = s.probes_failed
    above = [p for p in failed_probes if p["share"] > 0.95 or p["kbps"] > 1150]
    over = [p for p in failed_probes if p["share"] > 1.0]
    after = [s for s in samples if s.t >= off]
    recovery_s = next((round(s.t - off, 1) for s in after if s.target >= 0.8 * ep.video_kbps), None)
    before = [s.kbps for s in samples if on - 15 <= s.t < on]
    last15 = [s.kbps for s in samples if s.t >= samples[-1].t - 15] if samples else []
    produced = samples[-1].frames if samples else 0
    drops = samples[-1].drops if samples else 0
    shaped_drops = (shaped[-1].drops - shaped[0].drops) if shaped else 0
    return {
        "rate": ep.rate, "latency": ep.latency, "onset_s": on, "release_s": off,
        "link_delivered_kbps": round(link, 1),
        "at_10s_share": round(share(at10[0]), 3) if at10 else None,
        "settle_s": settle_s,
        "band_from_s": round(settle_window[0].t - on, 1) if settle_window else None,
        "band_min": min(targets) if targets else None,
        "band_max": max(targets) if targets else None,
        "band_median": statistics.median(targets) if targets else None,
        "band_ratio": round(max(targets) / max(1, min(targets)), 2) if targets else None,
        "band_outside": outside,
        "floor_seconds": sum(1 for s in shaped if s.target <= max(150, ep.video_kbps // 8)),
        "congestion_drops": drops, "congestion_drops_while_shaped": shaped_drops, "frames": produced,
        "encoder_busy_drops": samples[-1].cpu_drops if samples else 0,
        "drop_share": round(drops / produced, 4) if produced else None,
        "recovery_s": recovery_s,
        "failed_probes": failed_probes,
        "failed_probes_missed": missed,
        "failed_probes_above_band": len(above),
        "failed_probe_above_band_longest_ms": max((p["ms"] for p in above), default=None),
        "failed_probes_over_link": len(over),
        "failed_probe_over_link_longest_ms": max((p["ms"] for p in over), default=None),
        "kbps_before": round(statistics.mean(before), 1) if before else None,
        "kbps_last15": round(statistics.mean(last15), 1) if last15 else None,
    }


def plot(samples: list[Sample], ep: Episode, path: Path, title: str) -> bool:
    """target vs link over time as a PNG; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 4))
    ts = [s.t for s in samples]
    ax.plot(ts, [s.link_kbps for s in samples], label="link delivered (loopback tx, kbit/s)", color="tab:gray")
    ax.plot(ts, [s.kbps for s in samples], label="sent (stats kbps)", color="tab:blue", alpha=0.6)
    ax.plot(ts, [s.target for s in samples], label="target_video_kbps", color="tab:red", linewidth=2)
    rate = parse_rate_kbit(ep.rate)
    ax.hlines(rate, ep.onset_s, ep.release_s, colors="black", linestyles="dashed", label=f"tbf {ep.rate}")
    ax.axvspan(ep.onset_s, ep.release_s, color="tab:orange", alpha=0.08)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("kbit/s")
    ax.set_ylim(0, max(ep.video_kbps * 1.5, 1000))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="1200kbit")
    ap.add_argument("--latency", default="500ms")
    ap.add_argument("--onset", type=float, default=20)
    ap.add_argument("--release", type=float, default=140)
    ap.add_argument("--duration", type=float, default=170)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--bin", type=Path, default=DEFAULT_BIN)
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--slow-reader", type=int, default=0, metavar="BYTES",
                    help="no tbf: a relay reads at --rate with BYTES of socket buffer (see above)")
    a = ap.parse_args()
    # A SIGTERM ends the run through run_episode's cleanup (broadcast, nginx, the namespace).
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if os.geteuid() != 0:
        print("needs root (network namespace, tc)", file=sys.stderr)
        return 2
    ep = Episode(rate=a.rate, latency=a.latency, onset_s=a.onset, release_s=a.release, duration_s=a.duration,
                 slow_reader_bytes=a.slow_reader)
    samples, figures = run_episode(ep, a.out, f"t{os.getpid()}", a.bin)
    if a.plot:
        title = (f"relay reading {a.rate}, {a.slow_reader} B buffers" if a.slow_reader
                 else f"tbf {a.rate}, latency {a.latency}")
        plot(samples, ep, a.out / "target_vs_link.png", title)
    figures.pop("stderr_tail", None)
    print(json.dumps(figures, indent=1))
    return 0 if figures["exit_code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
