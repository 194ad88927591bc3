"""Runs the integration suite like `python -m unittest discover -v`, and times every test.

The output is unittest's own, plus, at the end, the slowest tests with their wall-clock seconds.
Every test's time also goes to a tab-separated file (--times PATH) so CI time can be budgeted from
data. --results PATH writes each test's outcome as JSON (scripts/test counts from it, through
scripts/lib/test_results.py); on SIGTERM (scripts/test's timeout) the file is written with the
test that was running, and the run exits 124. --list prints the number of tests discovered.

usage: run.py [-k PATTERN ...] [--times PATH] [--results PATH] [--slowest N] [--list]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent


class TimedResult(unittest.TextTestResult):
    """unittest's verbose result, remembering how long each test took (setUp to tearDown)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.times: list[tuple[float, str]] = []
        self._started: dict[str, float] = {}
        # test id -> {"outcome": passed|failed|error|skipped|unexpected-success, "reason": ...}
        self.outcomes: dict[str, dict] = {}

    def _note(self, test, outcome: str, reason: str = "") -> None:
        tid = test.id()
        prior = self.outcomes.get(tid)
        # A failed subtest or tearDown error outranks the test's own verdict.
        if prior and prior["outcome"] in ("failed", "error"):
            return
        self.outcomes[tid] = {"outcome": outcome, "reason": reason}

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        began = self._started.pop(test.id(), None)
        if began is not None:
            self.times.append((time.monotonic() - began, test.id()))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, "failed")

    def addError(self, test, err):
        super().addError(test, err)
        # setUpClass/tearDownClass errors arrive as a _ErrorHolder whose id names the class.
        self._note(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._note(test, "skipped", reason)

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

    def results_json(self) -> dict:
        seconds = {name: t for t, name in self.times}
        tests = [{"id": tid, **o, "seconds": round(seconds.get(tid, 0.0), 1)}
                 for tid, o in self.outcomes.items()]
        return {"tests": tests, "running": sorted(self._started)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="only tests matching PATTERN (unittest -k; repeatable)")
    ap.add_argument("--times", type=Path, help="write 'seconds<TAB>test id' lines here, slowest first")
    ap.add_argument("--slowest", type=int, default=25, help="how many of the slowest tests to print (default 25)")
    ap.add_argument("--results", type=Path, help="write every test's outcome here as JSON")
    ap.add_argument("--list", action="store_true", help="print how many tests were discovered, and run none")
    args = ap.parse_args()

    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = [p if "*" in p else f"*{p}*" for p in args.patterns]
    suite = loader.discover(str(HERE), top_level_dir=str(HERE))
    if args.list:
        print(suite.countTestCases())
        return 0
    runner = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult)
    result_box: list[TimedResult] = []
    original_make = runner._makeResult
    runner._makeResult = lambda: result_box.append(original_make()) or result_box[-1]

    def write_results() -> None:
        if args.results and result_box:
            args.results.parent.mkdir(parents=True, exist_ok=True)
            args.results.write_text(json.dumps(result_box[-1].results_json(), indent=1) + "\n")

    def on_term(signum, frame):
        # scripts/test's timeout: say which test hung, keep what ran, and stop.
        running = sorted(result_box[-1]._started) if result_box else []
        print(f"\nrun.py: stopped by signal {signum} while running: {', '.join(running) or 'nothing'}",
              file=sys.stderr, flush=True)
        write_results()
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(124)  # not SystemExit: unittest would catch it as the running test's error

    signal.signal(signal.SIGTERM, on_term)
    result = runner.run(suite)
    write_results()

    times = sorted(result.times, reverse=True)
    total = sum(t for t, _ in times)
    if args.times:
        args.times.parent.mkdir(parents=True, exist_ok=True)
        args.times.write_text("".join(f"{t:.1f}\t{name}\n" for t, name in times))
    # After unittest's verdict line; scripts/test reads the last OK/FAILED line, which stays unittest's.
    print(f"\nslowest {min(args.slowest, len(times))} of {len(times)} tests "
          f"({total:.0f} s in all):", file=sys.stderr)
    for t, name in times[:args.slowest]:
        print(f"  {t:7.1f} s  {name}", file=sys.stderr)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
