#!/usr/bin/env python3
"""Counts what a test run did from its structured output, never from console symbols.

  swift EVENTS.jsonl        Swift Testing's event stream (`--event-stream-output-path`, version 0)
  unittest RESULTS.json     Tests/Integration/run.py --results

Prints one line "PASSED FAILED SKIPPED" (tests, a parameterised test counting once), writes the
skipped tests as "NAME skipped: REASON" lines to --skips FILE (for the allow-list), the failed
ones to --failed FILE, and with --running lists the tests that started and never ended (the
test a timeout interrupted). --minimum NAME fails (exit 1) when fewer tests ran (passed +
failed) than Tests/minimum-counts.txt commits for NAME; a run with a filter passes no
--minimum. Exit 2 when the file is missing or holds no run at all.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MINIMUMS = REPO_ROOT / "Tests" / "minimum-counts.txt"


class Outcome:
    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.skipped: list[str] = []   # "NAME skipped: REASON"
        self.running: list[str] = []   # started, never ended
        self.saw_run = False


def _message_text(payload: dict) -> str:
    return " ".join(m.get("text", "") for m in payload.get("messages", []))


def _instant(payload: dict) -> float:
    return float(payload.get("instant", {}).get("absolute", 0.0))


def swift_outcome(path: Path) -> Outcome:
    """Swift Testing's JSON lines: "test" records name each test, "event" records say what happened.

    A test (not a test case) passes when it ended with no issue recorded against it or any of its
    cases; a known issue (`withKnownIssue`) is not a failure. Suites are not counted."""
    out = Outcome()
    names: dict[str, str] = {}
    kinds: dict[str, str] = {}
    started: list[str] = []
    ended: set[str] = set()
    issues: set[str] = set()
    first_issue: dict[str, str] = {}
    times: dict[str, float] = {}       # testStarted's instant, then the test's seconds
    skipped: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
        payload = rec.get("payload", {})
        if rec.get("kind") == "test":
            tid = payload.get("id", "")
            kinds[tid] = payload.get("kind", "")
            names[tid] = payload.get("displayName") or payload.get("name") or tid
            continue
        if rec.get("kind") != "event":
            continue
        kind = payload.get("kind")
        tid = payload.get("testID")
        if kind == "runStarted":
            out.saw_run = True
        elif kind == "testStarted" and tid:
            started.append(tid)
            times[tid] = _instant(payload)
        elif kind == "testEnded" and tid:
            ended.add(tid)
            times[tid] = _instant(payload) - times.get(tid, _instant(payload))
        elif kind == "testSkipped" and tid:
            skipped[tid] = _message_text(payload)
        elif kind == "issueRecorded" and tid:
            issue = payload.get("issue", {})
            if not issue.get("isKnown", False):
                issues.add(tid)
                first_issue.setdefault(tid, " ".join(_message_text(payload).split()))
    for tid in started:
        if kinds.get(tid) == "suite":
            continue
        label = f"{names.get(tid, tid)} ({tid})"
        if tid not in ended:
            out.running.append(f"{label} (did not end)")
        elif tid in issues:
            # Why, on the same line: CI logs often show only these lines (scripts/test's "why").
            out.failed.append(f"{label} after {times.get(tid, 0):.1f} s: {first_issue.get(tid, '')}")
        else:
            out.passed.append(label)
    for tid, reason in skipped.items():
        if kinds.get(tid) == "suite":
            continue
        out.skipped.append(f"{names.get(tid, tid)} ({tid}) skipped: {reason}")
    # A test that started and never ended failed (the run was cut short).
    out.failed.extend(out.running)
    return out


def unittest_outcome(path: Path) -> Outcome:
    """run.py --results: {"tests": [{"id", "outcome", "seconds", "reason"}], "running": [...]}."""
    out = Outcome()
    data = json.loads(path.read_text())
    out.saw_run = True
    for t in data.get("tests", []):
        o = t.get("outcome")
        if o == "passed":
            out.passed.append(t["id"])
        elif o == "skipped":
            out.skipped.append(f"{t['id']} skipped: {t.get('reason', '')}")
        else:
            out.failed.append(f"{t['id']} ({o})")
    out.running = list(data.get("running", []))
    out.failed.extend(f"{r} (did not end)" for r in out.running)
    return out


def minimum_for(name: str) -> int | None:
    if not MINIMUMS.exists():
        return None
    for line in MINIMUMS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, value = line.rpartition(" ")
        if key.strip() == name:
            return int(value)
    return None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("format", choices=["swift", "unittest"])
    ap.add_argument("path", type=Path)
    ap.add_argument("--skips", type=Path, help="write the skipped tests here, one line each")
    ap.add_argument("--failed", type=Path, help="write the failed tests here, one line each")
    ap.add_argument("--running", action="store_true", help="print the tests that started and never ended")
    ap.add_argument("--minimum", metavar="NAME", help="fail when fewer tests ran than Tests/minimum-counts.txt says")
    args = ap.parse_args(argv)

    if not args.path.exists():
        print(f"0 0 0\n{args.path}: no results (the run did not start)", file=sys.stderr)
        print("0 0 0")
        return 2
    out = swift_outcome(args.path) if args.format == "swift" else unittest_outcome(args.path)
    if args.skips:
        args.skips.write_text("".join(s + "\n" for s in out.skipped))
    if args.failed:
        args.failed.write_text("".join(s + "\n" for s in out.failed))
    if args.running:
        for r in out.running:
            print(f"still running when stopped: {r}", file=sys.stderr)
    print(f"{len(out.passed)} {len(out.failed)} {len(out.skipped)}")
    if not out.saw_run:
        print(f"{args.path}: holds no run", file=sys.stderr)
        return 2
    if args.minimum:
        need = minimum_for(args.minimum)
        ran = len(out.passed) + len(out.failed)
        if need is None:
            print(f"no minimum for '{args.minimum}' in {MINIMUMS}", file=sys.stderr)
            return 1
        if ran < need:
            print(f"{args.minimum}: {ran} tests ran, fewer than the committed minimum {need} ({MINIMUMS.name})",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
