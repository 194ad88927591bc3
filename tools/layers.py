#!/usr/bin/env python3
"""The engine's SwiftPM targets keep their layers: each depends only on layers below it.

The engine is nine targets (Package.swift, `engineLayers`): the core, the pipeline, the socket
layer and FLV beside it, one target per destination kind, and the public face. The compiler keeps a target from
naming a type of one it does not depend on, and SwiftPM refuses a cycle; what neither checks is
that the graph has the intended shape. This does, from the manifest as SwiftPM reads it
(`swift package dump-package`, in the layered mode: BK_UNITY unset):
- every engine target is there;
- a target depends only on targets of lower layers (never up, never a sibling destination);
- each source file imports only engine modules its target depends on directly. (scripts/test also
  builds with --explicit-target-dependency-import-check error, which refuses an import of a target
  that is no dependency at all, but lets an import of a transitive one through.)
The layer table below is kept apart from Package.swift's `engineLayers` on purpose: it is the
intended shape the manifest is checked against, not a copy read from it.

usage: tools/layers.py [--check] [--manifest-json FILE] [--root DIR]
  --check             exit 1 on any violation (scripts/test runs this)
  --manifest-json F   read the manifest from F (dump-package's JSON) instead of running SwiftPM
  --root DIR          the package (default: this repository)
The number of violations is the last line; exit 0 without --check.
"""
import json
import os
import re
import subprocess
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# The layer each engine target is, lowest first.
LAYERS = {
    "BroadcastCore": 0,
    "BroadcastPipeline": 1,
    "BroadcastNetwork": 2, "BroadcastFLV": 2,
    "BroadcastRTMP": 3, "BroadcastSRT": 3, "BroadcastWHIP": 3, "BroadcastRecording": 3,
    "BroadcastKit": 4,
}
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*import\s+(Broadcast\w+)\s*$", re.M)


def target_deps(manifest: dict) -> dict:
    deps = {}
    for t in manifest.get("targets", []):
        names = []
        for d in t.get("dependencies", []):
            for kind in ("byName", "target", "product"):
                if kind in d:
                    names.append(d[kind][0])
        deps[t["name"]] = (names, t.get("path"))
    return deps


def violations(manifest: dict, root: str) -> list:
    found = []
    deps = target_deps(manifest)
    for name in LAYERS:
        if name not in deps:
            found.append(f"{name}: not a target of the package")
    for name, (uses, path) in deps.items():
        if name not in LAYERS:
            continue
        for u in uses:
            if u in LAYERS and LAYERS[u] >= LAYERS[name]:
                how = "a sibling" if LAYERS[u] == LAYERS[name] else "a higher layer"
                found.append(f"{name} depends on {u}, {how}")
        folder = os.path.join(root, path or os.path.join("Sources", name))
        for d, _, files in os.walk(folder):
            for f in sorted(files):
                if not f.endswith(".swift"):
                    continue
                p = os.path.join(d, f)
                with open(p, encoding="utf-8") as fh:
                    text = fh.read()
                for m in IMPORT.finditer(text):
                    mod = m.group(1)
                    if mod in LAYERS and mod != name and mod not in uses:
                        found.append(f"{os.path.relpath(p, root)}: imports {mod}, which {name} does not depend on")
    return found


def main() -> int:
    args = sys.argv[1:]
    check = "--check" in args
    root = args[args.index("--root") + 1] if "--root" in args else REPO
    if "--manifest-json" in args:
        with open(args[args.index("--manifest-json") + 1], encoding="utf-8") as f:
            manifest = json.load(f)
    else:
        env = {k: v for k, v in os.environ.items() if k != "BK_UNITY"}
        r = subprocess.run(["swift", "package", "dump-package"], cwd=root, env=env,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "swift package dump-package failed")
            return 1
        manifest = json.loads(r.stdout)
    found = violations(manifest, root)
    for line in found:
        print(line)
    print(f"{len(found)} layer violations")
    return 1 if check and found else 0


if __name__ == "__main__":
    sys.exit(main())
