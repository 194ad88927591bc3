#!/usr/bin/env python3
"""Fails when a Swift Testing test can run without a time limit.

A test is limited when its own @Test(...) attribute has `.timeLimit`, or when the top-level type
it sits in carries `@Suite(... .timeLimit ...)` (a suite's limit applies to each of its tests and
to nested suites). Swift Testing has no global limit, so this lint is what keeps new suites from
hanging CI (scripts/test also wraps `swift test` in a timeout that names the test still running).

usage: time_limits.py DIR...   (prints each unlimited test as FILE:LINE, exits 1 if any)
"""
import os
import re
import sys

TOP_TYPE = re.compile(r'^(?!\s|//)(?:@.*\s)?(?:public\s+|package\s+|final\s+)*(struct|class|enum|actor|extension)\s+\w+')
ATTR_START = re.compile(r'^\s*@(Suite|Test)\b')


def attribute_text(lines, i):
    """The attribute starting at line i, joined across lines until its parentheses balance."""
    text, depth = '', 0
    for line in lines[i:i + 20]:
        text += line
        depth += line.count('(') - line.count(')')
        if depth <= 0:
            break
    return text


def unlimited_tests(path):
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    bad = []
    type_limited = False
    pending_suite_limited = None  # the @Suite attribute seen just above a top-level type
    for i, line in enumerate(lines):
        m = ATTR_START.match(line)
        if m and not line.startswith((' ', '\t')) and m.group(1) == 'Suite':
            pending_suite_limited = '.timeLimit' in attribute_text(lines, i)
        if TOP_TYPE.match(line):
            inline = '@Suite' in line and '.timeLimit' in line
            type_limited = inline or bool(pending_suite_limited)
            pending_suite_limited = None
            continue
        if m and m.group(1) == 'Test':
            own = '.timeLimit' in attribute_text(lines, i)
            top_level = not line.startswith((' ', '\t'))
            if not own and (top_level or not type_limited):
                bad.append(f'{path}:{i + 1}: {line.strip()[:80]}')
    return bad


def main(dirs):
    bad = []
    for d in dirs:
        for root, _, files in os.walk(d):
            for name in sorted(files):
                if name.endswith('.swift'):
                    bad += unlimited_tests(os.path.join(root, name))
    for b in bad:
        print(f'no time limit: {b}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:] or ['Tests']))
