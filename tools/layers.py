#!/usr/bin/env python3
"""The references between BroadcastKit's folders that point up the layers.

BroadcastKit's folders are meant to become SwiftPM targets in layers (issue 41): the core (Media,
Timing, Support, Reporting), the pipeline (Codec, Convert, Lanes, Memory, Mux, Delivery, Limits), the socket
layer (Network), one per destination (RTMP, SRT, WHIP, Recording), and the public face (Session,
Control). Until they are, nothing stops a lower folder from naming a type of a higher one, or one
destination another's; this lists each such reference, by the type named, so a split knows what
has to move first.

A reference is a capitalised word in the code (comments removed) that a declaration in another
folder introduces (class, struct, enum, protocol, actor, typealias). It is a reading aid, not a
compiler: extensions are attributed to the file that declares the name; nested types are not
counted.

usage: tools/layers.py [--all] [--check] [--root DIR]
  --all     every cross-folder reference, not only the upward or sideways ones
  --check   exit 1 when any reference points up or sideways (scripts/test runs this)
  --root    the folder to read (default: Sources/BroadcastKit)
The count of upward or sideways references is the last line; exit 0 without --check.
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "BroadcastKit")
# The layer each folder is to become, lowest first.
LAYERS = {
    "Media": 0, "Timing": 0, "Support": 0, "Reporting": 0,                          # BroadcastCore
    "Codec": 1, "Convert": 1, "Lanes": 1, "Memory": 1, "Mux": 1, "Delivery": 1,   # BroadcastPipeline
    "Limits": 1,
    "Network": 2,                                  # the socket layer the network destinations share
    "RTMP": 3, "SRT": 3, "WHIP": 3, "Recording": 3,                                 # one per destination
    "Session": 4, "Control": 4, ".": 4,                                             # BroadcastKit
}
# Destinations are siblings: one naming another's type could not be its own target.
DESTINATIONS = {name for name, layer in LAYERS.items() if layer == 3}
# Top-level declarations only (column 0): a nested type's short name (Entry, State) is not a
# dependency on the file that happens to declare another type of that name.
DECL = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|private|fileprivate|final|"
                  r"nonisolated|indirect)\s+)*(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z]\w*)", re.M)


def wrong(a: str, b: str) -> bool:
    """A reference from folder a to folder b that the layered targets could not have."""
    return LAYERS.get(a, 4) < LAYERS.get(b, 4) or (a in DESTINATIONS and b in DESTINATIONS and a != b)


def folder(path: str) -> str:
    parts = os.path.relpath(path, ROOT).split(os.sep)
    return parts[0] if len(parts) > 1 else "."


def main() -> int:
    args = sys.argv[1:]
    show_all = "--all" in args
    check = "--check" in args
    global ROOT
    if "--root" in args:
        ROOT = args[args.index("--root") + 1]
    files = {}
    for d, _, names in os.walk(ROOT):
        for n in names:
            if n.endswith(".swift"):
                p = os.path.join(d, n)
                with open(p, encoding="utf-8") as f:
                    files[p] = f.read()
    owner = {}
    for p, text in files.items():
        for m in DECL.finditer(text):
            owner.setdefault(m.group(1), p)
    edges = defaultdict(set)
    for p, text in files.items():
        code = re.sub(r"//.*", "", text)
        for word in set(re.findall(r"\b[A-Z]\w+\b", code)):
            q = owner.get(word)
            if q is None or folder(q) == folder(p):
                continue
            a, b = folder(p), folder(q)
            if show_all or wrong(a, b):
                edges[(a, b)].add(f"{os.path.basename(p)} -> {word}")
    upward = 0
    for (a, b), refs in sorted(edges.items()):
        up = wrong(a, b)
        upward += len(refs) if up else 0
        tag = " (sideways)" if a in DESTINATIONS and b in DESTINATIONS else " (up)" if up else ""
        print(f"{a} -> {b}{tag}: {len(refs)}")
        for r in sorted(refs):
            print(f"    {r}")
    print(f"{upward} upward or sideways references")
    return 1 if check and upward else 0


if __name__ == "__main__":
    sys.exit(main())
