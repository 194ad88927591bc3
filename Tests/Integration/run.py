"""Runs the integration suite in parallel workers, like `python -m unittest discover -v`, timing every test.

The parent discovers the tests and groups them into units: a test class is one unit (its
setUpClass runs once, in one worker), and a module with setUpModule (test_real_portal's desktop) is
one unit; a class's exclusive tests (support.exclusive: they measure time, CPU or a memory peak) are
a unit of their own. Units run on up to N worker processes (`run.py --worker`), the most CPU time first (seconds x load) from
the last known times (--times, out/integration.log.times), admitted by their recorded loads (CPU
seconds over seconds, in cores): ordinary units up to the cores, and while an exclusive unit runs
(or to start one) up to half the cores, so a whole core stays idle beside every measurement; an
alone unit (support.alone) runs with nothing else. See Parent.run and docs/TESTING.md.

Every worker gets its own BK_WORKER_TAG (support.worker_tag(): global names), TMPDIR (temp dirs,
PipeWire state, ingests) and block of ports (support.free_port). A worker's output is printed
line by line with its tag in front ("[w1] "). A worker that dies takes only its own unit down:
the unit's tests that had not ended are reported as errors naming the exit status, and a fresh
worker takes the next unit.

The output is unittest's own: a verbose line per test, the failure report, "Ran N tests", then the
verdict line (OK / FAILED (...)) that scripts/test reads, then the slowest tests. Every test's time
goes to --times PATH (tab-separated, slowest first); --results PATH writes each test's outcome as
JSON (scripts/test counts from it, through scripts/lib/test_results.py); on SIGTERM (scripts/test's
timeout) the runner names the tests that were running, writes the file with them, stops its
workers and exits 124. --list prints the number of tests discovered.

usage: run.py [-k PATTERN ...] [--workers N] [--parallel-only | --exclusive-only]
              [--times PATH] [--results PATH] [--slowest N] [--list [--verbose]]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEP1 = "=" * 70
SEP2 = "-" * 70
# Each worker's block of ports for support.free_port: below the kernel's ephemeral range (32768+),
# so no connect() picks one, and disjoint between workers, so no two workers ever pick the same.
PORT_FLOOR = 20000
PORTS_PER_WORKER = 1000
COMMITTED_TIMES = HERE / "times.tsv"
# A unit with no recorded time is assumed to take this long per test (schedules it early-ish).
UNKNOWN_TEST_SECONDS = 20.0
# A test with no recorded load is assumed to keep one core busy: it never joins a quiet test.
UNKNOWN_LOAD = float(os.environ.get("BK_RUN_UNKNOWN_LOAD", "1.0"))
# Ordinary units fill up to this share of the cores (their loads are averages: the rest is room for
# bursts, so a real-time encode in a non-exclusive test keeps its frames); beside an exclusive unit, half.
BUSY_SHARE = 0.75
QUIET_SHARE = 0.5
# A unit whose recorded load is at least this is batch work (builds, installs, media generated as
# fast as the CPU goes): it has no frame deadline to miss, so two of them may share the machine,
# one a core, when nothing else runs (alone, each waited for the other at the end of the run).
BATCH_LOAD = 0.9


def machine_cores() -> int:
    """The cores this process may use (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers() -> int:
    """Two slots a core, 2-6: most tests are paced in real time and leave their core mostly idle;
    the recorded loads, not the slot count, keep the machine from being oversubscribed."""
    return max(2, min(6, 2 * machine_cores()))


def cpu_seconds() -> float:
    """CPU time of this process and of every child it has waited for (user + system)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


# --------------------------------------------------------------------------- results


class TimedResult(unittest.TextTestResult):
    """unittest's verbose result, remembering how long each test took (setUp to tearDown), its
    outcome, and (through on_event) telling the parent when a test starts and ends."""

    def __init__(self, *args, on_event=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.times: list[tuple[float, str]] = []
        self._started: dict[str, float] = {}
        self._cpu_started: dict[str, float] = {}
        # test id -> {"outcome": passed|failed|error|skipped|unexpected-success, "reason": ...}
        self.outcomes: dict[str, dict] = {}
        self.reports: dict[str, list[tuple[str, str, str]]] = {}  # id -> [(FAIL|ERROR, description, traceback)]
        self.on_event = on_event

    def _note(self, test, outcome: str, reason: str = "") -> None:
        tid = test.id()
        prior = self.outcomes.get(tid)
        # A failed subtest or tearDown error outranks the test's own verdict.
        if prior and prior["outcome"] in ("failed", "error"):
            return
        self.outcomes[tid] = {"outcome": outcome, "reason": reason}

    def _report(self, flavour: str, test, err, owner=None) -> None:
        tid = (owner or test).id()
        self.reports.setdefault(tid, []).append((flavour, self.getDescription(test),
                                                 self._exc_info_to_string(err, test)))

    def _emit(self, ev: dict) -> None:
        if self.on_event:
            self.on_event(ev)

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        self._cpu_started[test.id()] = cpu_seconds()
        self._emit({"ev": "start", "id": test.id()})
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        tid = test.id()
        began = self._started.pop(tid, None)
        cpu_began = self._cpu_started.pop(tid, None)
        seconds = 0.0
        cpu = None
        if began is not None:
            seconds = time.monotonic() - began
            self.times.append((seconds, tid))
        if cpu_began is not None:
            cpu = cpu_seconds() - cpu_began
        o = self.outcomes.get(tid, {"outcome": "error", "reason": "no outcome recorded"})
        self._emit({"ev": "end", "id": tid, **o, "seconds": seconds, "cpu": cpu,
                    "reports": self.reports.get(tid, [])})

    def _holder(self, test) -> bool:
        # setUpClass/tearDownClass/setUpModule errors arrive as a _ErrorHolder whose id names the
        # class or module; it never starts or stops, so it is reported as it comes.
        return not isinstance(test, unittest.TestCase)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, "failed")
        self._report("FAIL", test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._note(test, "error")
        self._report("ERROR", test, err)
        if self._holder(test):
            self._emit({"ev": "end", "id": test.id(), "outcome": "error", "reason": "",
                        "seconds": 0.0, "reports": self.reports.get(test.id(), [])})

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._note(test, "skipped", reason)
        if self._holder(test):  # a skipped setUpClass/setUpModule
            self._emit({"ev": "end", "id": test.id(), "outcome": "skipped", "reason": reason,
                        "seconds": 0.0, "reports": []})

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._note(test, "passed")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._note(test, "unexpected-success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._note(test, "failed" if failed else "error")
            self._report("FAIL" if failed else "ERROR", subtest, err, owner=test)


# --------------------------------------------------------------------------- discovery


def iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from iter_tests(t)
        else:
            yield t


def is_exclusive(test) -> str:
    """The reason a test must run alone ('' when it need not): support.exclusive on its method or class."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    return getattr(method, "_bk_exclusive", "") or getattr(type(test), "_bk_exclusive", "")


def declared_cores(test) -> float | None:
    """The load a test declares with support.exclusive(..., cores=N), or None."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    v = getattr(method, "_bk_cores", None)
    return v if v is not None else getattr(type(test), "_bk_cores", None)


def is_alone(test) -> str:
    """The reason a test must run with no other test at all ('' when it need not): support.alone."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    return getattr(method, "_bk_alone", "") or getattr(type(test), "_bk_alone", "")


def unit_key(test) -> str:
    """Tests that must share one worker: a module with module fixtures (or that sets BK_ONE_WORKER,
    saying why: e.g. its classes build one shared image) is one unit, otherwise a class."""
    cls = type(test)
    mod = sys.modules.get(cls.__module__)
    if mod is not None and any(hasattr(mod, a) for a in ("setUpModule", "tearDownModule", "BK_ONE_WORKER")):
        return cls.__module__
    return f"{cls.__module__}.{cls.__qualname__}"


def load_times(path: Path | None) -> dict[str, tuple[float, float | None]]:
    """test id -> (seconds, load in cores or None) from 'seconds<TAB>id[<TAB>cores]' lines."""
    times: dict[str, tuple[float, float | None]] = {}
    if path and path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            fields = line.split("\t")
            if len(fields) < 2:
                continue
            try:
                sec = float(fields[0])
                load = float(fields[2]) if len(fields) > 2 and fields[2].strip() else None
            except ValueError:
                continue
            times[fields[1].strip()] = (sec, load)
    return times


# --------------------------------------------------------------------------- worker side


def worker_main(args) -> int:
    """A worker: reads units (JSON lists of test ids) from stdin, one per line, runs each as its own
    suite (so its class/module fixtures run around it), and writes JSON events to --event-fd."""
    events = os.fdopen(args.event_fd, "w", buffering=1)
    lock = threading.Lock()

    def send(ev: dict) -> None:
        with lock:
            events.write(json.dumps(ev) + "\n")
            events.flush()

    def on_term(signum, frame):
        sys.stdout.flush()
        os._exit(124)

    signal.signal(signal.SIGTERM, on_term)
    sys.path.insert(0, str(HERE))
    loader = unittest.TestLoader()
    stream = unittest.runner._WritelnDecorator(sys.stdout)
    result = TimedResult(stream, True, 2, on_event=send)
    send({"ev": "ready"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        ids = json.loads(line)
        suite = unittest.TestSuite()
        for tid in ids:
            try:
                suite.addTests(loader.loadTestsFromName(tid))
            except Exception:  # an id that no longer loads: an error, never a silent loss
                send({"ev": "end", "id": tid, "outcome": "error", "reason": "could not load", "seconds": 0.0,
                      "reports": [("ERROR", tid, traceback.format_exc())]})
        began, cpu_began = time.monotonic(), cpu_seconds()
        suite.run(result)
        # Class and module tear-downs run at the end of a top-level suite run. unittest remembers
        # the last class on the result, and skips setUpClass/setUpModule for a test of that class
        # or module: the next unit, when it is the other half of the same class (its exclusive
        # tests are a unit of their own), would find the fixtures already torn down.
        result._previousTestClass = None
        sys.stdout.flush()
        # The whole unit, fixtures included: a class whose setUpClass starts daemons takes longer
        # than its tests, and a short test's own load is too noisy to record (see note_event).
        send({"ev": "unit-done", "seconds": time.monotonic() - began, "cpu": cpu_seconds() - cpu_began})
    return 0


# --------------------------------------------------------------------------- parent side


class Worker:
    """One `run.py --worker` child: its own process group, tag, TMPDIR and port block."""

    def __init__(self, tag: str, index: int, base_tmp: Path, out, base_port: int):
        self.tag = tag
        self.tmp = base_tmp / tag
        self.tmp.mkdir(mode=0o755, exist_ok=True)
        self.tmp.chmod(0o755)  # the desktop user of test_real_portal walks through it
        env = dict(os.environ)
        port_lo = base_port + index * PORTS_PER_WORKER
        env.update({
            "BK_WORKER_TAG": tag,
            "TMPDIR": str(self.tmp),
            "BK_PORT_RANGE": f"{port_lo}-{port_lo + PORTS_PER_WORKER - 1}",
            "BK_PORT_STATE": str(self.tmp / ".next-port"),
            "PYTHONUNBUFFERED": "1",
        })
        r_ev, w_ev = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "--event-fd", str(w_ev)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
            pass_fds=(w_ev,), cwd=os.getcwd(), start_new_session=True)
        os.close(w_ev)
        self.events = r_ev                     # raw fd: read with os.read, split into lines here
        self.ev_partial = ""
        self.out = out
        self.unit: list[str] | None = None     # the unit it is running
        self.ended: set[str] = set()           # ids of that unit that ended
        self.running: dict[str, float] = {}    # id -> start (monotonic)
        self.ready = False
        self.exited = False
        self.queued: Unit | None = None        # the unit to give once the worker is ready
        self.partial = ""

    def give(self, unit: list[str]) -> None:
        self.unit = unit
        self.ended = set()
        self.proc.stdin.write((json.dumps(unit) + "\n").encode())
        self.proc.stdin.flush()

    def close_input(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> None:
        """TERM to the worker's process group (it and the tests' children), then KILL."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Parent:
    def __init__(self, args, out):
        self.args = args
        self.out = out                      # where unittest's lines go (stderr, like unittest)
        self.outcomes: dict[str, dict] = {}
        self.times: dict[str, float] = {}
        self.reports: list[tuple[str, str, str, str]] = []   # (id, flavour, description, traceback)
        self.workers: list[Worker] = []
        self.phase_seconds: dict[str, float] = {}
        self.loads: dict[str, float] = {}    # id -> cores used (CPU seconds / seconds)
        self.unit_log: list[tuple[float, float, str, Unit]] = []   # (start, end, worker tag, unit)
        self.unit_records: dict[str, tuple[float, float]] = {}   # unit name -> (seconds, load), fixtures included
        self.busy_seconds: dict[str, float] = {}
        self.lock = threading.Lock()
        self.started_at = time.monotonic()
        self.base_tmp = Path(tempfile.mkdtemp(prefix=f"bkrun{os.getpid()}-"))
        self.base_tmp.chmod(0o755)
        # Different concurrent runs (other checkouts) start their port blocks apart.
        self.base_port = PORT_FLOOR + (os.getpid() % 2) * 6 * PORTS_PER_WORKER

    # ---- bookkeeping

    def running(self) -> list[str]:
        return sorted(t for w in self.workers for t in w.running)

    def note_event(self, w: Worker, ev: dict) -> None:
        kind = ev.get("ev")
        if kind == "ready":
            w.ready = True
        elif kind == "start":
            w.running[ev["id"]] = time.monotonic()
        elif kind == "end":
            tid = ev["id"]
            w.running.pop(tid, None)
            w.ended.add(tid)
            prior = self.outcomes.get(tid)
            if not (prior and prior["outcome"] in ("failed", "error")):
                self.outcomes[tid] = {"outcome": ev["outcome"], "reason": ev.get("reason", "")}
            if ev.get("seconds"):
                self.times[tid] = ev["seconds"]
                if ev.get("cpu") is not None and ev["seconds"] >= 0.5:
                    self.loads[tid] = max(0.0, ev["cpu"]) / ev["seconds"]
            for flavour, desc, tb in ev.get("reports", []):
                self.reports.append((tid, flavour, f"[{w.tag}] {desc}", tb))

    def lost(self, w: Worker, why: str) -> None:
        """A worker died inside a unit: every test of it that did not end is an error, named."""
        if not w.unit:
            return
        running = sorted(w.running)
        for tid in w.unit:
            if tid in w.ended:
                continue
            reason = f"worker {w.tag} {why}" + (f" while running {', '.join(running)}" if running else "")
            self.outcomes[tid] = {"outcome": "error", "reason": reason}
            self.reports.append((tid, "ERROR", f"{tid} [{w.tag}]", reason + "\n"))
            print(f"[{w.tag}] {tid} ... ERROR ({reason})", file=self.out, flush=True)
        w.running.clear()
        w.unit = None

    def write_results(self) -> None:
        if not self.args.results:
            return
        tests = [{"id": tid, **o, "seconds": round(self.times.get(tid, 0.0), 1)}
                 for tid, o in self.outcomes.items()]
        data = {"tests": tests, "running": self.running()}
        self.args.results.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.args.results.with_name(self.args.results.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(self.args.results)

    # ---- the schedule: units over up to n workers, admitted by their recorded loads

    def run(self, units: list["Unit"], n: int) -> None:
        """Runs every unit on up to `n` worker processes (see admissible): an alone unit with nothing
        else; while any exclusive unit runs, or to start one, the recorded loads of everything running
        and the new unit add up to at most QUIET_SHARE of the cores, so a whole core (of two) stays idle
        beside a measurement; batch units (BATCH_LOAD) beside batch units only, one a core; otherwise
        up to BUSY_SHARE. The units that need the machine to themselves
        (alone, or exclusive and heavier than the quiet share) go first, then the exclusive units, then
        the rest, each the most CPU time first; a unit that does not fit lets a later one that does go ahead, but a unit that needs the machine holds every
        later start until it has it, so it never starves.
        scripts/test's fuzz step runs beside the suite under SCHED_IDLE: it only gets CPU time no test
        wants, so it counts for nothing here."""
        if not units:
            return
        cores = machine_cores()
        quiet_cap = cores * QUIET_SHARE
        busy_cap = cores * BUSY_SHARE
        n = max(1, n)
        began = time.monotonic()
        excl = sum(1 for u in units if u.exclusive)
        print(f"run.py: {sum(len(u.ids) for u in units)} tests in {len(units)} units ({excl} exclusive) "
              f"on up to {n} worker(s), {cores} cores: loads up to {busy_cap:g} cores, "
              f"{quiet_cap:g} beside an exclusive test", file=self.out, flush=True)
        pending = list(units)
        sel = selectors.DefaultSelector()
        made = 0
        slots: list[Worker | None] = [None] * n
        running: dict[Worker, Unit] = {}
        self.busy_seconds = {"quiet": 0.0, "busy": 0.0}

        def spawn(slot: int) -> Worker:
            nonlocal made
            made += 1
            w = Worker(f"w{made}", slot, self.base_tmp, self.out, self.base_port)
            self.workers.append(w)
            slots[slot] = w
            sel.register(w.proc.stdout, selectors.EVENT_READ, ("out", w))
            sel.register(w.events, selectors.EVENT_READ, ("ev", w))
            return w

        def fits(u: Unit) -> bool:
            return admissible(u, list(running.values()), cores)

        def admit() -> None:
            while pending:
                free = [i for i, w in enumerate(slots) if w is None or (w.ready and w.unit is None and not w.exited)]
                if not free:
                    return
                chosen = None
                for u in pending:
                    if fits(u):
                        chosen = u
                        break
                    if needs_machine(u, cores):
                        break  # hold later starts until it gets the machine
                if chosen is None:
                    return
                slot = free[0]
                w = slots[slot]
                if w is None:
                    w = spawn(slot)
                    w.queued = chosen   # given once the worker says it is ready
                else:
                    w.give(chosen.ids)
                pending.remove(chosen)
                running[w] = chosen
                chosen.started = time.monotonic()

        def unit_done(w: Worker, ev: dict) -> None:
            u = running.pop(w, None)
            if u is not None:
                self.unit_log.append((u.started - began, time.monotonic() - began, w.tag, u))
                if u.name and ev.get("seconds", 0) >= 0.5 and ev.get("cpu") is not None:
                    self.unit_records[u.name] = (ev["seconds"], max(0.0, ev["cpu"]) / ev["seconds"])
            w.unit = None
            admit()

        admit()
        last = time.monotonic()
        while running or pending:
            now = time.monotonic()
            key = "quiet" if any(u.exclusive for u in running.values()) else "busy"
            self.busy_seconds[key] += now - last
            last = now
            for key_, _ in sel.select(timeout=1.0):
                kind, w = key_.data
                if kind == "out":
                    data = os.read(key_.fileobj.fileno(), 65536)
                    if not data:
                        sel.unregister(key_.fileobj)
                        continue
                    text = w.partial + data.decode(errors="replace")
                    *lines, w.partial = text.split("\n")
                    for line in lines:
                        print(f"[{w.tag}] {line}", file=self.out, flush=True)
                else:
                    data = os.read(w.events, 65536)
                    if not data:
                        sel.unregister(w.events)
                        os.close(w.events)
                        w.exited = True
                        continue
                    text = w.ev_partial + data.decode(errors="replace")
                    *lines, w.ev_partial = text.split("\n")
                    for line in lines:
                        try:
                            ev = json.loads(line)
                        except json.JSONDecodeError:
                            continue
                        with self.lock:
                            self.note_event(w, ev)
                        if ev.get("ev") == "ready" and w.queued is not None:
                            w.give(w.queued.ids)
                            w.queued = None
                        elif ev.get("ev") == "unit-done":
                            unit_done(w, ev)
            for i, w in enumerate(slots):
                if w is None or not (w.exited and w.proc.poll() is not None):
                    continue
                if w.partial:
                    print(f"[{w.tag}] {w.partial}", file=self.out, flush=True)
                    w.partial = ""
                try:
                    sel.unregister(w.proc.stdout)
                except (KeyError, ValueError):
                    pass
                slots[i] = None
                if w.queued is not None:       # died before it was ready: its unit never started
                    w.unit = list(w.queued.ids)
                    w.queued = None
                if w.unit is not None:
                    with self.lock:
                        self.lost(w, f"exited with status {w.proc.returncode}")
                running.pop(w, None)
                if made >= 3 * n + len(units):  # workers keep dying: stop replacing them
                    slots[i] = w                # a dead worker holds the slot: nothing more starts in it
            admit()
            if pending and not running and not any(s is None or (s.ready and s.unit is None and not s.exited)
                                                   for s in slots):
                break                           # no live slot left to run the rest
            if pending and not running and not any(fits(u) for u in pending):
                break                           # cannot happen by the rules above; never hang on it
        for w in slots:
            if w is not None:
                w.close_input()
        sel.close()
        self.phase_seconds["schedule"] = time.monotonic() - began
        print(f"run.py: done in {self.phase_seconds['schedule']:.0f} s "
              f"({self.busy_seconds['quiet']:.0f} s with an exclusive test running)", file=self.out, flush=True)
        for u in pending:  # never silently lost
            for tid in u.ids:
                reason = "not run: the workers kept exiting"
                self.outcomes[tid] = {"outcome": "error", "reason": reason}
                self.reports.append((tid, "ERROR", tid, reason + "\n"))

    def terminate(self) -> None:
        for w in self.workers:
            w.kill()

    def cleanup(self) -> None:
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(self.base_tmp, ignore_errors=True)


class Unit:
    """Tests that run together in one worker (a class, or a module with module fixtures), with
    their expected seconds and load (cores: their CPU seconds over their seconds, from the recorded
    times). `name` ("kind:class or module:tests", as main() makes it; empty: none) finds the unit's
    own record (`unit:NAME` in the times): its whole time, fixtures included, and its load."""

    def __init__(self, ids: list[str], exclusive: str, alone: str,
                 known: dict[str, tuple[float, float | None]], cores: float | None = None, name: str = ""):
        self.ids = ids
        self.exclusive = exclusive
        self.alone = alone
        self.name = name
        self.cost = sum(known.get(t, (UNKNOWN_TEST_SECONDS, None))[0] for t in ids)
        # The unit's load is its tests' CPU over their time (a test never timed with its load counts
        # as UNKNOWN_LOAD for UNKNOWN_TEST_SECONDS, or its known time), like one long test's.
        cpu = seconds = 0.0
        for t in ids:
            sec, load = known.get(t, (UNKNOWN_TEST_SECONDS, None))
            sec = max(sec, 0.1)
            cpu += sec * (load if load is not None else UNKNOWN_LOAD)
            seconds += sec
        self.load = cpu / seconds
        # Every load here was measured (a unit whose tests all lack one counts a guessed busy core).
        measured_load = all(known.get(t, (0.0, None))[1] is not None for t in ids)
        record = known.get(f"unit:{name}") if name else None
        if record is not None and record[1] is not None:
            # The unit's own record: its fixtures' time counts, and a test too short to have a load
            # of its own (under 0.5 s) no longer counts a busy core. Never under the load of its
            # tests that have one (a long fixture's idle time would dilute a measurement's load).
            self.cost = record[0]
            measured = [(max(known[t][0], 0.1), known[t][1]) for t in ids if t in known and known[t][1] is not None]
            tests_load = sum(s * l for s, l in measured) / sum(s for s, _ in measured) if measured else 0.0
            self.load = max(record[1], tests_load)
            measured_load = True
        if cores is not None:          # declared: the average hides bursts that matter
            self.load = max(self.load, cores)
        self.batch = measured_load and not exclusive and not alone and cores is None and self.load >= BATCH_LOAD
        self.started = 0.0

    def __repr__(self) -> str:
        return f"Unit({self.ids[0]}{' +%d' % (len(self.ids) - 1) if len(self.ids) > 1 else ''})"


def admissible(u: Unit, running: list[Unit], cores: int) -> bool:
    """May `u` start now, beside `running`? The rules of Parent.run: an alone unit with nothing else;
    with nothing running anything starts; batch units (BATCH_LOAD) beside batch units only, one a
    core; otherwise the recorded loads add up to at most BUSY_SHARE of the cores, or QUIET_SHARE of
    them when an exclusive unit is among them."""
    if any(r.alone for r in running):
        return False
    if u.alone or not running:
        return not running
    if u.batch and all(r.batch for r in running) and len(running) < cores:
        return True                     # batch beside batch: one a core, no deadline to miss
    load = sum(r.load for r in running) + u.load
    quiet = u.exclusive or any(r.exclusive for r in running)
    return load <= cores * (QUIET_SHARE if quiet else BUSY_SHARE) + 1e-6


def needs_machine(u: Unit, cores: int) -> bool:
    """A unit that only ever starts with nothing beside it: alone, or exclusive and heavier than the
    quiet share by itself."""
    return bool(u.alone) or bool(u.exclusive and u.load > cores * QUIET_SHARE + 1e-6)


def is_wide(u: Unit, cores: int) -> bool:
    """An exclusive unit that uses more than half the quiet share: no other unit like it fits beside
    it, only light ones."""
    return bool(u.exclusive) and u.load > cores * QUIET_SHARE / 2 + 1e-6


def order_units(units: list[Unit], cores: int | None = None) -> list[Unit]:
    """The units that need the machine to themselves first (they run at the start, one after the
    other, instead of holding every start until the long units beside them end); then the wide
    exclusive units (`is_wide`), then the other exclusive units, then the rest, each the most CPU
    time first (seconds x load; last known times, a test never timed counts UNKNOWN_TEST_SECONDS
    at UNKNOWN_LOAD). The quiet share is what the exclusive units wait for: a wide unit fits only
    beside light units, which are plentiful early and used up late, so left for the end it runs
    with a core idle beside it (R16: 212 s of such units, one after the other, at the end), and the
    ones that use most of the share must not be left for the end either."""
    c = cores if cores is not None else machine_cores()
    return sorted(units, key=lambda u: (not needs_machine(u, c), not u.exclusive, not is_wide(u, c),
                                        -u.cost * u.load))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="only tests matching PATTERN (unittest -k; repeatable)")
    ap.add_argument("--workers", type=int, default=None,
                    help=f"parallel workers (default {default_workers()}: from the core count; 1 = one at a time)")
    phase = ap.add_mutually_exclusive_group()
    phase.add_argument("--parallel-only", action="store_true", help="run only the tests that need not run alone")
    phase.add_argument("--exclusive-only", action="store_true", help="run only the exclusive tests "
                       "(still under the quiet share; with --workers 1 one at a time)")
    ap.add_argument("--times", type=Path, help="write 'seconds<TAB>test id' lines here, slowest first "
                    "(the previous file, if any, orders the schedule)")
    ap.add_argument("--slowest", type=int, default=25, help="how many of the slowest tests to print (default 25)")
    ap.add_argument("--results", type=Path, help="write every test's outcome here as JSON")
    ap.add_argument("--list", action="store_true", help="print how many tests were discovered, and run none "
                    "(with --verbose: every test id, marked [exclusive: why] where it runs alone)")
    ap.add_argument("--verbose", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--event-fd", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker_main(args)

    sys.path.insert(0, str(HERE))
    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = [p if "*" in p else f"*{p}*" for p in args.patterns]
    suite = loader.discover(str(HERE), top_level_dir=str(HERE))
    tests = list(iter_tests(suite))
    if args.list:
        if args.verbose:
            for t in tests:
                why, alone_why = is_exclusive(t), is_alone(t)
                print(t.id() + (f"  [alone: {alone_why}]" if alone_why else f"  [exclusive: {why}]" if why else ""))
        print(len(tests))
        return 0

    out = sys.stderr
    # Discovery failures (a module that does not import) run here: they are errors, reported as such.
    broken = unittest.TestSuite([t for t in tests if t.__class__.__module__.startswith("unittest.")])
    runnable = [t for t in tests if not t.__class__.__module__.startswith("unittest.")]
    # The last run's times order the schedule and give each test's load; a fresh clone has none, so
    # the committed times of a whole run (Tests/Integration/times.tsv) stand in, and any test newer
    # than both counts a guess (UNKNOWN_TEST_SECONDS at UNKNOWN_LOAD).
    known = load_times(COMMITTED_TIMES)
    for tid, (sec, load) in load_times(args.times).items():
        known[tid] = (sec, load if load is not None else known.get(tid, (0.0, None))[1])
    groups: dict[tuple[str, str], list[str]] = {}
    marks: dict[tuple[str, str], tuple[str, str]] = {}
    declared: dict[tuple[str, str], float] = {}
    for t in runnable:
        why, alone_why = is_exclusive(t), is_alone(t)
        if why and args.parallel_only or not why and args.exclusive_only:
            continue
        k = ("alone" if alone_why else "exclusive" if why else "parallel", unit_key(t))
        groups.setdefault(k, []).append(t.id())
        if k not in marks or (why and not marks[k][0]):
            marks[k] = (why, alone_why)
        c = declared_cores(t)
        if c is not None:
            declared[k] = max(declared.get(k, 0.0), c)
    units = [Unit(ids, marks[k][0], marks[k][1], known, declared.get(k), name=f"{k[0]}:{k[1]}:{len(ids)}")
             for k, ids in groups.items()]
    n = args.workers if args.workers is not None else default_workers()
    n = max(1, n)
    parent = Parent(args, out)

    def on_term(signum, frame):
        # scripts/test's timeout: say which tests hung, keep what ran, and stop.
        running = parent.running()
        print(f"\nrun.py: stopped by signal {signum} while running: {', '.join(running) or 'nothing'}",
              file=sys.stderr, flush=True)
        parent.write_results()
        parent.terminate()
        parent.cleanup()
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(124)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    if broken.countTestCases():
        res = TimedResult(unittest.runner._WritelnDecorator(out), True, 2,
                          on_event=lambda ev: parent.note_event(_LOCAL, ev) if ev.get("ev") == "end" else None)
        broken.run(res)

    # --workers 1: the parallel set still goes first, then the exclusive set: the same order as N.
    try:
        parent.run(order_units(units), n)
    finally:
        parent.terminate()
        parent.cleanup()
    elapsed = time.monotonic() - parent.started_at
    parent.write_results()

    # The failure report, as unittest prints it.
    for tid, flavour, desc, tb in parent.reports:
        print(SEP1, file=out)
        print(f"{flavour}: {desc}", file=out)
        print(SEP2, file=out)
        print(tb.rstrip("\n"), file=out)
    counts = {k: 0 for k in ("failed", "error", "skipped", "unexpected-success")}
    for o in parent.outcomes.values():
        if o["outcome"] in counts:
            counts[o["outcome"]] += 1
    # Class and module fixture errors ("setUpClass (mod.Class)") are in the outcomes, not tests.
    ran = sum(1 for tid in parent.outcomes if " " not in tid)
    print(SEP2, file=out)
    print(f"Ran {ran} test{'s' if ran != 1 else ''} in {elapsed:.3f}s on {n} worker(s)"
          f" ({sum(len(u.ids) for u in units if u.exclusive)} of them exclusive)", file=out)
    print(file=out)
    infos = [f"{label}={counts[k]}" for k, label in (("failed", "failures"), ("error", "errors"),
                                                      ("skipped", "skipped"),
                                                      ("unexpected-success", "unexpected successes"))
             if counts[k]]
    ok = counts["failed"] == 0 and counts["error"] == 0 and counts["unexpected-success"] == 0
    if ran == 0:
        ok = False
    verdict = "OK" if ok else "FAILED"
    print(verdict + (f" ({', '.join(infos)})" if infos else ""), file=out, flush=True)

    times = sorted(((t, name) for name, t in parent.times.items()), reverse=True)
    total = sum(t for t, _ in times)
    if args.times:
        args.times.parent.mkdir(parents=True, exist_ok=True)
        # seconds, id, cores (CPU seconds over seconds: the load the next run schedules by)
        args.times.write_text("".join(
            f"{t:.1f}\t{name}\t{parent.loads[name]:.2f}\n" if name in parent.loads else f"{t:.1f}\t{name}\n"
            for t, name in times) + "".join(
            # Each unit's own record, fixtures included (Unit: `unit:NAME`).
            f"{sec:.1f}\tunit:{name}\t{load:.2f}\n" for name, (sec, load) in sorted(parent.unit_records.items())))
        # When each unit ran, where, and how it was marked: the schedule, for reading after the fact.
        args.times.with_name(args.times.name + ".schedule").write_text("".join(
            f"{a:7.1f}\t{b:7.1f}\t{tag}\t{'alone' if u.alone else 'exclusive' if u.exclusive else 'parallel'}"
            f"\t{u.load:.2f}\t{u.ids[0]}{' +%d' % (len(u.ids) - 1) if len(u.ids) > 1 else ''}\n"
            for a, b, tag, u in sorted(parent.unit_log, key=lambda x: x[0])))
    # After the verdict line; scripts/test reads the last OK/FAILED line.
    phases = ", ".join(f"{k} {v:.0f} s" for k, v in parent.phase_seconds.items())
    if parent.busy_seconds:
        phases += f" ({parent.busy_seconds.get('quiet', 0):.0f} s of it with an exclusive test running)"
    print(f"\nslowest {min(args.slowest, len(times))} of {len(times)} tests "
          f"({total:.0f} s of test time in {elapsed:.0f} s of wall time{': ' + phases if phases else ''}):",
          file=sys.stderr)
    for t, name in times[:args.slowest]:
        print(f"  {t:7.1f} s  {name}", file=sys.stderr)
    return 0 if ok else 1


class _Local:
    """The parent's own stand-in for a worker (discovery errors run in the parent)."""
    tag = "main"
    running: dict = {}
    ended: set = set()


_LOCAL = _Local()

if __name__ == "__main__":
    sys.exit(main())
