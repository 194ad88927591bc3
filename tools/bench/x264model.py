#!/usr/bin/env python3
"""Calibrates MemoryPlan's x264 model: x264's working set (resident growth over the first encodes,
beyond what it holds right after open) per configuration and resolution, each measured in its own
`bk-bench x264-memory` process (moving noise content, zerolatency, 2 sliced threads, 1 reference).

    tools/bench/x264model.py --bin-dir .build/release [--runs 2] [--write]

Prints one JSON object (the table); --write rewrites the measured table in
Sources/Engine/BroadcastPipeline/Memory/X264MemoryModel.swift (between the BEGIN/END markers), which is the
data the plan interpolates. scripts/bench runs it as the `x264model` section.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "Sources" / "Engine" / "BroadcastPipeline" / "Memory" / "X264MemoryModel.swift"
# Configuration class -> bk-bench arguments. "subpel": every preset that refines to sub-pel
# (superfast measured equal to veryfast within 0.2%); "lean": X264Tuning.lean; "ultrafast".
CLASSES = {"subpel": ["--preset", "veryfast"], "lean": ["--preset", "veryfast", "--lean"],
           "ultrafast": ["--preset", "ultrafast"]}
RESOLUTIONS = ["360p", "480p", "720p", "1080p", "1440p"]
SIZES = {"360p": "640x360", "480p": "854x480", "720p": "1280x720", "1080p": "1920x1080", "1440p": "2560x1440"}


def measure(bin_dir: Path, cls: str, res: str, runs: int) -> dict:
    best = None
    for _ in range(runs):
        out = subprocess.run([str(bin_dir / "bk-bench"), "x264-memory", "--res", SIZES[res], *CLASSES[cls]],
                             capture_output=True, text=True, timeout=600, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        # The largest of the runs: the plan must not be below what x264 can take.
        if best is None or r["working_bytes"] > best["working_bytes"]:
            best = r
    return best


def swift_table(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        lines.append(f'        .init(configuration: .{r["class"]}, width: {r["width"]}, height: {r["height"]}, '
                     f'workingBytes: {r["working_bytes"]}),')
    return "\n".join(lines)


def rewrite(text: str, rows: list[dict]) -> str:
    """The model file with its measured table replaced by `rows`."""
    return re.sub(r"(// BEGIN measured table[^\n]*\n).*?([ \t]*// END measured table)",
                  lambda m: m.group(1) + swift_table(rows) + "\n" + m.group(2), text, flags=re.S)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", type=Path, default=REPO / ".build" / "release")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--from-json", type=Path, help="write the table from an earlier run's output, measuring nothing")
    a = ap.parse_args()
    if a.from_json:
        MODEL.write_text(rewrite(MODEL.read_text(), json.loads(a.from_json.read_text())["rows"]))
        return 0
    rows = []
    for cls in CLASSES:
        for res in RESOLUTIONS:
            r = measure(a.bin_dir, cls, res, a.runs)
            rows.append({"class": cls, "res": res, "width": r["width"], "height": r["height"],
                         "working_bytes": r["working_bytes"], "at_open_bytes": r["at_open_bytes"],
                         "planned_before_bytes": r["planned_working_bytes"], "kbps": r["kbps"],
                         "command": f"bk-bench x264-memory --res {SIZES[res]} {' '.join(CLASSES[cls])}"})
            print(f"x264model: {cls} {res}: working {r['working_bytes'] / 1048576:.2f} MiB", file=sys.stderr)
    if a.write:
        text = MODEL.read_text()
        MODEL.write_text(rewrite(text, rows))
    print(json.dumps({"runs": a.runs, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
