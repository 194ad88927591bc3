"""Runs the integration suite like `python -m unittest discover -v`, and times every test.

The output is unittest's own (scripts/test counts "Ran N tests", the final OK/FAILED line and the
"... skipped" lines), plus, at the end, the slowest tests with their wall-clock seconds. Every
test's time also goes to a tab-separated file (--times PATH) so CI time can be budgeted from data.

usage: run.py [-k PATTERN ...] [--times PATH] [--slowest N]
"""

from __future__ import annotations

import argparse
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

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        began = self._started.pop(test.id(), None)
        if began is not None:
            self.times.append((time.monotonic() - began, test.id()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="only tests matching PATTERN (unittest -k; repeatable)")
    ap.add_argument("--times", type=Path, help="write 'seconds<TAB>test id' lines here, slowest first")
    ap.add_argument("--slowest", type=int, default=25, help="how many of the slowest tests to print (default 25)")
    args = ap.parse_args()

    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = [p if "*" in p else f"*{p}*" for p in args.patterns]
    suite = loader.discover(str(HERE), top_level_dir=str(HERE))
    runner = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult)
    result = runner.run(suite)

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
