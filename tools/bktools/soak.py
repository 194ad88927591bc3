"""The soak: `broadcast` under a hard memory cgroup cap, pushing to a private nginx-rtmp, sampled
and judged. `scripts/soak` only calls this (`python -m bktools.soak ARGS`); the usage text is
scripts/soak's. The plan comes from `--print-memory-plan=json` (bktools.plan), never copied.

Exit codes: 0 passed, 1 failed (reasons printed by tools/soak_plot.py), 2 bad usage or setup.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bktools import plan as memplan
from bktools.procmeasure import status_kb

REPO = Path(__file__).resolve().parents[2]
SAMPLE_EVERY_S = 10          # rss.csv rows; VmHWM is read every second in between
DEADLINE_GRACE_S = 60        # broadcast still running this long past --duration is stopped
SAVE_STOP_BEFORE_END_S = 5   # no replay save requested in the run's last seconds


class UsageFailure(Exception):
    """A bad argument or a setup that could not be made: exit 2."""


def say(msg: str) -> None:
    print(f"==> {msg}", file=sys.stderr, flush=True)


def warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr, flush=True)


_NUM = re.compile(r"^[0-9]+([.][0-9]+)?$")
_SIZE = re.compile(r"^([0-9]+(?:[.][0-9]+)?)([A-Za-z]*)$")
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30}


def to_bytes(s: str) -> int:
    """50M / 50MB / 51200K / 1G / plain bytes -> bytes."""
    m = _SIZE.match(s)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(s)
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


@dataclass
class Options:
    minutes: str = ""
    res: str = "720p"
    cap_arg: str = "50M"
    budget_arg: str = ""
    fps: str = "30"
    vbitrate: str = ""
    acodec: str = "aac"
    tkbps: str = ""
    tfrom: str = ""
    tfor: str = ""
    source: str = "test"
    out: str = ""
    replay: str = ""
    replay_every: str = "30"
    ring_reference: bool = False
    ref_minutes: str = ""
    extra: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> int:
        s = float(self.minutes) * 60
        return 1 if s < 1 else int(s + 0.5)


_VALUED = {"--minutes": "minutes", "--res": "res", "--memory-cap": "cap_arg", "--memory-budget": "budget_arg",
           "--fps": "fps", "--video-bitrate": "vbitrate", "--audio-codec": "acodec", "--throttle-kbps": "tkbps",
           "--throttle-from": "tfrom", "--throttle-for": "tfor", "--source": "source", "--replay-seconds": "replay",
           "--replay-every": "replay_every", "--reference-minutes": "ref_minutes", "--out": "out"}


def parse_args(argv: list[str]) -> Options:
    o = Options()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in _VALUED:
            if i + 1 >= len(argv):
                raise UsageFailure(f"{a} needs a value")
            setattr(o, _VALUED[a], argv[i + 1])
            i += 2
            continue
        if a == "--ring-reference":
            o.ring_reference = True
        elif a == "--":
            o.extra = argv[i + 1:]
            break
        else:
            raise UsageFailure(f"unknown argument: {a}")
        i += 1
    if not o.minutes:
        raise UsageFailure("--minutes is required")
    checks = [(_NUM.match(o.minutes), f"bad --minutes: {o.minutes}"),
              (o.fps.isdigit(), f"bad --fps: {o.fps}"),
              (not o.vbitrate or o.vbitrate.isdigit(), f"bad --video-bitrate: {o.vbitrate}"),
              (not o.replay or o.replay.isdigit(), f"bad --replay-seconds: {o.replay}"),
              (not o.ring_reference or o.replay, "--ring-reference needs --replay-seconds"),
              (not o.ref_minutes or o.ring_reference, "--reference-minutes needs --ring-reference"),
              (not o.ref_minutes or _NUM.match(o.ref_minutes), f"bad --reference-minutes: {o.ref_minutes}"),
              (o.acodec in ("aac", "opus"), f"bad --audio-codec: {o.acodec} (aac|opus)"),
              (o.replay_every.isdigit(), f"bad --replay-every: {o.replay_every}")]
    for ok, msg in checks:
        if not ok:
            raise UsageFailure(msg)
    o.ref_minutes = o.ref_minutes or o.minutes
    if o.tkbps or o.tfrom or o.tfor:
        if not o.tkbps:
            raise UsageFailure("--throttle-from/--throttle-for need --throttle-kbps")
        o.tfrom = o.tfrom or "0"
        for name, v in (("--throttle-kbps", o.tkbps), ("--throttle-from", o.tfrom), ("--throttle-for", o.tfor)):
            if v and not _NUM.match(v):
                raise UsageFailure(f"bad {name}: {v}")
    o.budget_arg = o.budget_arg or o.cap_arg
    return o


class MemoryCgroup:
    """A memory cgroup made for one run (v1 limit + memsw, or v2 max with no swap), removed after."""

    def __init__(self, name: str, cap_bytes: int):
        v1 = Path("/sys/fs/cgroup/memory")
        if (v1 / "cgroup.procs").is_file():
            self.version, self.path = 1, v1 / name
            self._mkdir()
            (self.path / "memory.limit_in_bytes").write_text(str(cap_bytes))
            # memsw (memory + swap) must be >= the memory limit, so it is set second.
            if (self.path / "memory.memsw.limit_in_bytes").exists():
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(cap_bytes))
        elif Path("/sys/fs/cgroup/cgroup.controllers").is_file():
            root = Path("/sys/fs/cgroup")
            if "memory" not in (root / "cgroup.controllers").read_text().split():
                raise UsageFailure("cgroup v2 without the memory controller")
            try:
                if "memory" not in (root / "cgroup.subtree_control").read_text().split():
                    (root / "cgroup.subtree_control").write_text("+memory")
            except OSError:
                pass
            self.version, self.path = 2, root / name
            self._mkdir()
            if not (self.path / "memory.max").exists():
                raise UsageFailure(f"cgroup v2: memory.max missing in {self.path}")
            (self.path / "memory.max").write_text(str(cap_bytes))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
        else:
            raise UsageFailure("no memory cgroup (neither v1 /sys/fs/cgroup/memory nor v2) on this machine")

    def _mkdir(self) -> None:
        try:
            self.path.mkdir()
        except OSError as e:
            raise UsageFailure(f"cannot create cgroup {self.path} (need root): {e.strerror}") from None

    def _read(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except OSError:
            return ""

    def _field(self, name: str, key: str) -> int:
        for line in self._read(name).splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
        return 0

    def usage(self) -> str:
        return self._read("memory.usage_in_bytes" if self.version == 1 else "memory.current").strip()

    def verdicts(self) -> dict:
        """failcnt (times the limit was hit), under_oom, oom_kill and the peak usage."""
        if self.version == 1:
            return {"cgroup_failcnt": int(self._read("memory.failcnt") or 0),
                    "cgroup_under_oom": self._field("memory.oom_control", "under_oom"),
                    "cgroup_oom_kill": self._field("memory.oom_control", "oom_kill"),
                    "cgroup_peak_bytes": int(self._read("memory.max_usage_in_bytes") or 0)}
        return {"cgroup_failcnt": self._field("memory.events", "max"), "cgroup_under_oom": 0,
                "cgroup_oom_kill": self._field("memory.events", "oom_kill"),
                "cgroup_peak_bytes": int(self._read("memory.peak").strip() or 0)}

    def remove(self) -> None:
        """A cgroup can only be removed once empty. Anything still in it was started by broadcast
        under this soak (a helper it forked): those pids are stopped."""
        for i in range(10):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                pass
            for p in self._read("cgroup.procs").split():
                try:
                    os.kill(int(p), signal.SIGTERM if i < 5 else signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            time.sleep(0.3)
        if self.path.exists():
            warn(f"could not remove cgroup {self.path}")


def free_port() -> int:
    # The one port picker: from the parallel test runner's per-worker block when under it.
    from bktools.ingest import free_port as pick
    return pick()


def stop(proc: subprocess.Popen | None, wait_s: float = 5.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Soak:
    def __init__(self, o: Options, broadcast: Path, out: Path):
        self.o, self.broadcast, self.out = o, broadcast, out
        self.cg: MemoryCgroup | None = None
        self.proc: subprocess.Popen | None = None
        self.proxy: subprocess.Popen | None = None
        self.ingest_dir = out / "ingest"
        self.ingest_started = False
        self.ref_budget = ""
        self.reference_proc: subprocess.Popen | None = None

    # --- setup -------------------------------------------------------------------------------
    def prepare_out(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        for name in ("rss.csv", "rss.png", "stats.jsonl", "broadcast.log", "proxy.log", "proxy.json", "soak.json",
                     "summary.json", "plan.txt", "plan.json", "reference.log", "reference-plan.txt",
                     "reference-plan.json"):
            (self.out / name).unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(self.out / "reference")], check=False)

    def plan_args(self, budget: str, replay: str | None) -> list[str]:
        o = self.o
        a = ["--key", "x", "--res", o.res, "--fps", o.fps, "--audio-codec", o.acodec, "--source", o.source]
        if o.vbitrate:
            a += ["--video-bitrate", o.vbitrate]
        a += ["--memory-budget", budget]
        if replay:
            a += ["--replay-seconds", replay]
        return a + o.extra

    def write_plan(self, name: str, budget: str, replay: str | None) -> memplan.Plan:
        """The plan for this run's arguments, kept as DIR/NAME.json (the data) and NAME.txt (to read)."""
        args = [str(self.broadcast), *self.plan_args(budget, replay)]
        js = subprocess.run(args + ["--print-memory-plan=json"], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=120)
        (self.out / f"{name}.json").write_text(js.stdout + js.stderr)
        txt = subprocess.run(args + ["--print-memory-plan"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=120)
        (self.out / f"{name}.txt").write_text(txt.stdout + txt.stderr)
        return memplan.plan_from_json(js.stdout)

    def start_ingest(self) -> int:
        port = free_port()
        r = subprocess.run([str(REPO / "scripts" / "ingest"), "start", "--port", str(port), "--dir",
                            str(self.ingest_dir)], stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            raise UsageFailure(f"could not start the ingest (see {self.ingest_dir}/error.log)")
        self.ingest_started = True
        return port

    def stop_ingest(self) -> None:
        if self.ingest_started:
            subprocess.run([str(REPO / "scripts" / "ingest"), "stop", "--dir", str(self.ingest_dir)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.ingest_started = False

    def start_proxy(self, port: int) -> tuple[int, float]:
        o = self.o
        args = [sys.executable, str(REPO / "tools" / "throttle_proxy.py"), "--target-port", str(port),
                "--throttle-kbps", o.tkbps, "--throttle-from", o.tfrom, "--status-json", str(self.out / "proxy.json")]
        if o.tfor:
            args += ["--throttle-for", o.tfor]
        started = time.time()
        log = open(self.out / "proxy.log", "w")
        self.proxy = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        for _ in range(100):
            m = re.search(r"^listening on 127\.0\.0\.1:(\d+)$", (self.out / "proxy.log").read_text(), re.M)
            if m:
                say(f"soak: throttle proxy :{m.group(1)} -> :{port}, {o.tkbps} kbit/s from {o.tfrom}s "
                    f"for {o.tfor or 'all'}s")
                return int(m.group(1)), started
            if self.proxy.poll() is not None:
                break
            time.sleep(0.05)
        raise UsageFailure(f"throttle proxy did not start: {(self.out / 'proxy.log').read_text()}")

    # --- the run -------------------------------------------------------------------------------
    def run_broadcast(self, push_port: int, key: str) -> None:
        o = self.o
        bargs = ["--url", f"rtmp://127.0.0.1:{push_port}/live", "--res", o.res, "--fps", o.fps,
                 "--audio-codec", o.acodec, "--source", o.source, "--duration", str(o.seconds),
                 "--memory-budget", o.budget_arg, "--stats-json", str(self.out / "stats.jsonl")]
        if o.vbitrate:
            bargs += ["--video-bitrate", o.vbitrate]
        if o.replay:
            (self.out / "clips").mkdir(exist_ok=True)
            bargs += ["--replay-seconds", o.replay, "--replay-dir", str(self.out / "clips")]
        bargs += o.extra
        say(f"soak: broadcast {' '.join(bargs)} (for {o.seconds} s)")
        cgroup = self.cg.path

        def join_cgroup() -> None:
            # broadcast joins the cgroup before exec: it never runs an instruction outside the cap.
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        env = dict(os.environ, STREAM_KEY=key)
        log = open(self.out / "broadcast.log", "w")
        self.proc = subprocess.Popen([str(self.broadcast), *bargs], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, preexec_fn=join_cgroup)
        log.close()

    def sample(self, start: float) -> dict:
        """rss.csv every 10 s, VmHWM every second, a replay save every --replay-every s; stops a
        broadcast still running a minute past its duration."""
        o = self.o
        res = {"max_hwm": 0, "timed_out": 0, "saves": 0}
        every = int(o.replay_every)
        next_sample, next_save = 0.0, float(every)
        with open(self.out / "rss.csv", "w") as csv:
            csv.write("t_s,rss_kb,hwm_kb,cgroup_bytes,anon_kb,shmem_kb\n")
            time.sleep(0.2)
            while self.proc.poll() is None:
                t = round(time.time() - start, 1)
                s = status_kb(self.proc.pid)
                if "VmRSS" in s and "VmHWM" in s:
                    res["max_hwm"] = max(res["max_hwm"], s["VmHWM"])
                    if t >= next_sample:
                        csv.write(f"{t:.1f},{s['VmRSS']},{s['VmHWM']},{self.cg.usage()},"
                                  f"{s.get('RssAnon', '')},{s.get('RssShmem', '')}\n")
                        csv.flush()
                if t >= next_sample:
                    next_sample += SAMPLE_EVERY_S
                if o.replay and t >= next_save and t < o.seconds - SAVE_STOP_BEFORE_END_S:
                    try:
                        self.proc.send_signal(signal.SIGUSR1)
                        res["saves"] += 1
                    except OSError:
                        pass
                    next_save += every
                if t > o.seconds + DEADLINE_GRACE_S:
                    warn(f"soak: broadcast still running {o.seconds + DEADLINE_GRACE_S}s after start; stopping it")
                    res["timed_out"] = 1
                    stop(self.proc)
                    break
                time.sleep(1)
        res["rc"] = self.proc.wait()
        return res

    def probe(self, rec: Path) -> int:
        if not (rec.exists() and rec.stat().st_size > 0):
            return -1
        with open(self.out / "probe.txt", "w") as f:
            return subprocess.run([sys.executable, str(REPO / "tools" / "probe_recording.py"), str(rec),
                                   "--expect-audio-codec", self.o.acodec], stdout=f, stderr=subprocess.STDOUT).returncode

    def reference(self) -> tuple[int | None, int | None]:
        """This soak again without the ring (its budget less the ring): its VmHWM and exit code."""
        o = self.o
        args = ["--minutes", o.ref_minutes, "--res", o.res, "--memory-cap", o.cap_arg, "--memory-budget",
                self.ref_budget, "--fps", o.fps, "--audio-codec", o.acodec, "--source", o.source,
                "--out", str(self.out / "reference")]
        if o.vbitrate:
            args += ["--video-bitrate", o.vbitrate]
        if o.tkbps:
            args += ["--throttle-kbps", o.tkbps, "--throttle-from", o.tfrom]
        if o.tfor:
            args += ["--throttle-for", o.tfor]
        say(f"soak: reference run without the ring: scripts/soak {' '.join(args)} (log in {self.out}/reference.log)")
        with open(self.out / "reference.log", "w") as log:
            self.reference_proc = subprocess.Popen([str(REPO / "scripts" / "soak"), *args, "--", *o.extra],
                                                   stdout=log, stderr=subprocess.STDOUT)
            rc = self.reference_proc.wait()
            self.reference_proc = None
        try:
            return json.loads((self.out / "reference" / "soak.json").read_text())["max_hwm_kb"], rc
        except (OSError, ValueError, KeyError):
            return None, rc

    def judge_clips(self, saves: int) -> bool:
        clips = sorted((self.out / "clips").glob("replay-*.mp4"))
        failed = (self.out / "broadcast.log").read_text(errors="replace").count("warning: replay:")
        say(f"soak: replay: {saves} saves requested, {len(clips)} clips written, {failed} failed")
        ok = True
        if len(clips) != saves or failed:
            warn(f"soak: FAIL: replay saves: {saves} requested, {len(clips)} written, {failed} failed")
            ok = False
        for c in clips:
            r = subprocess.run([sys.executable, str(REPO / "tools" / "probe_recording.py"), str(c)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                warn(f"soak: FAIL: clip {c} does not decode cleanly")
                ok = False
        return ok

    def run(self) -> int:
        o = self.o
        try:
            cap_bytes = to_bytes(o.cap_arg)
        except ValueError:
            raise UsageFailure(f"bad --memory-cap: {o.cap_arg}") from None
        if cap_bytes < 4 << 20:
            raise UsageFailure(f"--memory-cap below 4M makes no sense: {o.cap_arg}")
        self.prepare_out()
        self.cg = MemoryCgroup(f"broadcast-soak-{os.getpid()}", cap_bytes)
        say(f"soak: cgroup v{self.cg.version} {self.cg.path}, cap {o.cap_arg} ({cap_bytes} bytes)")

        plan = ref_plan = None
        if o.replay:
            plan = self.write_plan("plan", o.budget_arg, o.replay)
            say(f"soak: plan's replay ring line: {plan.ring_kib if plan.ring_kib is not None else 'missing'} KiB "
                f"(plan in {self.out}/plan.json)")
            if o.ring_reference:
                # The reference must run the same x264 configuration, or its VmHWM differs by more than
                # the ring: its budget leaves it exactly the room this run has for everything but the
                # ring (the plan's own headroom, from the plan), so the ladder stops at the same step.
                if plan.ring_bytes is None:
                    raise UsageFailure(f"no replay ring line in {self.out}/plan.json")
                try:
                    budget_bytes = to_bytes(o.budget_arg)
                except ValueError:
                    raise UsageFailure(f"bad --memory-budget: {o.budget_arg}") from None
                self.ref_budget = f"{memplan.reference_budget_bytes(plan, budget_bytes) // 1024}K"
                ref_plan = self.write_plan("reference-plan", self.ref_budget, None)

        port = self.start_ingest()
        push_port, proxy_start = port, None
        if o.tkbps:
            push_port, proxy_start = self.start_proxy(port)

        # A fresh random key each run, so the leak check can fire: it must appear in no output. It
        # names the recording on our own throwaway ingest; the file is renamed after the run.
        key = "soak-" + os.urandom(8).hex()
        start = time.time()
        self.run_broadcast(push_port, key)
        s = self.sample(start)
        end = time.time()
        self.proc = None
        cgv = self.cg.verdicts()

        stop(self.proxy)
        self.proxy = None
        self.stop_ingest()
        rec = self.out / "recording.flv"
        got = self.ingest_dir / "rec" / f"{key}.flv"
        if got.exists():
            got.rename(rec)
        # The key must not appear in anything broadcast wrote or we derived from it (the ingest's own
        # logs name the stream, which is the key: the server is allowed to know it).
        key_leaks = 0
        for name in ("broadcast.log", "stats.jsonl", "rss.csv"):
            f = self.out / name
            if f.exists() and key in f.read_text(errors="replace"):
                key_leaks += 1
                warn(f"soak: the stream key appears in {name}")
        probe_rc = self.probe(rec)
        ref_hwm, ref_rc = self.reference() if o.ring_reference else (None, None)

        num = lambda v: None if not v else (float(v) if "." in v else int(v))  # noqa: E731
        meta = {"minutes": num(o.minutes), "seconds": o.seconds, "res": o.res, "fps": int(o.fps),
                "video_bitrate_kbps": num(o.vbitrate), "audio_codec": o.acodec, "memory_budget": o.budget_arg,
                "cap_bytes": cap_bytes, "cap_arg": o.cap_arg, "cgroup_version": self.cg.version,
                "throttle_kbps": num(o.tkbps), "throttle_from_s": num(o.tfrom), "throttle_for_s": num(o.tfor),
                "proxy_start_epoch": proxy_start, "start_epoch": start, "end_epoch": end,
                "exit_code": s["rc"], "timed_out": s["timed_out"], "max_hwm_kb": s["max_hwm"], **cgv,
                "recording": str(rec), "probe_rc": probe_rc, "key_leaks": key_leaks,
                "replay_seconds": num(o.replay), "plan_ring_kb": plan.ring_kib if plan else None,
                "plan_x264": (plan.x264 if plan else None) or "",
                "reference_plan_x264": (ref_plan.x264 if ref_plan else None) or "",
                "ring_reference": int(o.ring_reference), "reference_minutes": num(o.ref_minutes),
                "reference_max_hwm_kb": ref_hwm, "reference_rc": ref_rc,
                # Added for tools/bench/abr_soak.py, which rebuilds the command from this file.
                "source": o.source, "replay_every_s": int(o.replay_every) if o.replay else None,
                "extra_args": o.extra}
        (self.out / "soak.json").write_text(json.dumps(meta, indent=1) + "\n")

        verdict = subprocess.run([sys.executable, str(REPO / "tools" / "soak_plot.py"), str(self.out)]).returncode
        if verdict not in (0, 1):
            warn(f"soak_plot.py failed ({verdict})")
            verdict = 1
        if key_leaks:
            warn(f"soak: FAIL: the stream key leaked into {key_leaks} file(s)")
            verdict = 1
        if o.replay and not self.judge_clips(s["saves"]):
            verdict = 1
        return verdict

    def cleanup(self) -> None:
        # A reference soak still running gets TERM and cleans up its own cgroup and ingest.
        stop(self.reference_proc, wait_s=30)
        stop(self.proc)
        stop(self.proxy)
        self.stop_ingest()
        if self.cg is not None:
            self.cg.remove()


def main(argv: list[str]) -> int:
    try:
        o = parse_args(argv)
    except UsageFailure as e:
        print(f"error: {e} (scripts/soak --help for usage)", file=sys.stderr)
        return 2
    broadcast = Path(os.environ.get("BROADCAST_BIN") or REPO / ".build" / "release" / "broadcast")
    if not os.access(broadcast, os.X_OK):
        print(f"error: {broadcast} not built (run scripts/build)", file=sys.stderr)
        return 2
    caller = Path(os.environ.get("SOAK_CALLER_PWD") or os.getcwd())
    out = Path(o.out) if o.out else REPO / "out" / f"soak-{time.strftime('%Y%m%d-%H%M%S')}"
    if not out.is_absolute():
        out = caller / out
    soak = Soak(o, broadcast, out)
    # INT/TERM end the run through cleanup (130/143), as for any other exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return soak.run()
    except UsageFailure as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        soak.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
