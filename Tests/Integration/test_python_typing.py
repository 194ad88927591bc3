"""The Python binding's types (bindings/python/broadcastkit, `py.typed`), checked as a user's type checker
sees them and against the library they describe.

- `mypy --strict bindings/python` (the package and its examples) reports no error.
- A small program typed against the API passes `mypy --strict`, with assert_type on what the API
  returns (SendResult, SessionStats fields, EventType, ...); a second program with one misuse per
  line (a misspelt option word, a float32 frame, an unknown stats key, ...) gets an error on exactly
  those lines: the types are narrow, not Any.
- Every Literal and TypedDict maps what the library has: presets and drop reasons from the loaded
  library, the keys of a real stats() object, the enums of broadcastkit.h, the stats writer's keys
  (StatsReport.swift), the destination kinds and states.
- Every public name and member has a docstring.
- budget_scope: mapped to BK_BUDGET_SESSION/PROCESS through bk_config_set_memory_budget_scope when
  the library has it (a shim library that adds the symbol records the values); without it, "process"
  is refused with a ConfigurationError naming the symbol and the default still works.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

from support import REPO_ROOT, BroadcastTestCase

BUILD_DIR = REPO_ROOT / ".build" / "release"
LIB = BUILD_DIR / "libbroadcastkit.so"
HEADER = REPO_ROOT / "Sources" / "CBroadcastKitABI" / "include" / "broadcastkit.h"
PY_BINDING = REPO_ROOT / "bindings" / "python"
VENV_PY = REPO_ROOT / ".venv" / "bin" / "python"
PY = str(VENV_PY) if VENV_PY.exists() else sys.executable

TYPED_PROGRAM = '''
from __future__ import annotations

import asyncio
from typing import List, Optional, assert_type

import numpy as np
import numpy.typing as npt

import broadcastkit as bk


def on_event(e: bk.Event) -> None:
    assert_type(e.type, bk.EventType)
    assert_type(e.message, str)


def run(url: str, key: str) -> int:
    frame: npt.NDArray[np.uint8] = np.zeros((360, 640, 4), np.uint8)
    nv12 = (np.zeros((360, 640), np.uint8), np.zeros((180, 640), np.uint8))
    pcm = np.zeros((1600, 2), np.int16)
    with bk.Session(url, key, width=640, height=360, preset="veryfast", audio_codec="opus", memory_budget="80M",
                    budget_scope="session", backpressure="block", on_event=on_event) as s:
        assert_type(s, bk.Session)
        assert_type(s.send_video(frame), bk.SendResult)
        assert_type(s.send_video(nv12, format="NV12"), bk.SendResult)
        assert_type(s.send_audio(pcm, lane="mic"), bk.SendResult)
        assert_type(s.send_audio(np.zeros(960, np.float32)), bk.SendResult)
        st = s.stats()
        assert_type(st, bk.SessionStats)
        assert_type(st["state"], bk.StreamStatus)
        assert_type(st["latency_p50_ms"], Optional[float])
        assert_type(st["drops"]["encoder_busy"], int)
        assert_type(st["destinations"], List[bk.DestinationStats])
        for d in st["destinations"]:
            assert_type(d["kind"], bk.DestinationKind)
            assert_type(d["state"], bk.DestinationState)
        assert_type(s.state, bk.SessionState)
        assert_type(s.status, bk.SessionStatus)
        assert_type(s.memory_plan(), str)
    assert_type(bk.version(), str)
    assert_type(bk.now_ns(), int)
    assert_type(bk.limits()["width"]["max"], int)
    assert_type(bk.limits()["presets"], List[str])
    return st["video_frames_sent"]


async def run_async(url: str, key: str) -> int:
    async with bk.AsyncSession(url, key, width=640, height=360, backpressure="block", on_event=on_event) as s:
        assert_type(s, bk.AsyncSession)
        assert_type(await s.send_video(np.zeros((360, 640, 4), np.uint8)), bk.SendResult)
        assert_type(await s.send_audio(np.zeros((1600, 2), np.int16)), bk.SendResult)
        assert_type(s.stats(), bk.SessionStats)
    await s.close()
    return s.stats()["video_frames_sent"]


asyncio.run(run_async("rtmp://127.0.0.1/live", "k"))
'''

# One misuse per line marked "# E": mypy must report each of those lines, and no other.
MISUSE_PROGRAM = '''
import numpy as np

import broadcastkit as bk

frame = np.zeros((360, 640, 4), np.uint8)
pcm = np.zeros((1600, 2), np.int16)
floats = np.zeros((360, 640, 4), np.float32)  # (inline in the call, numpy's overloads would take the context)
pcm32 = np.zeros((1600, 2), np.int32)
bk.Session("rtmp://h/app", "k", backpressure="blok")  # E
bk.Session("rtmp://h/app", "k", audio_codec="mp3")  # E
bk.Session("rtmp://h/app", "k", preset="placebo")  # E
bk.Session("rtmp://h/app", "k", budget_scope="host")  # E
bk.Session("rtmp://h/app", "k", width="640")  # E
bk.Session("rtmp://h/app", "k", memory_budget=5.5)  # E
s = bk.Session(record="x.mp4")
s.send_video(floats)  # E
s.send_video(frame, format="YUY2")  # E
s.send_video([frame])  # E
s.send_audio(pcm32)  # E
s.send_audio(pcm, lane="left")  # E
s.stats()["video_frames_snt"]  # E
sent: str = s.stats()["video_frames_sent"]  # E
first: str = s.stats()["destinations"][0]["bytes_sent"]  # E
state: int = s.state  # E
version: int = bk.version()  # E
bk.AsyncSession("rtmp://h/app", "k", backpressur="block")  # E
bk.AsyncSession("rtmp://h/app", "k", fps="30")  # E
bk.AsyncSession("rtmp://h/app", "k").send_video(frame, format="YUV")  # E
'''

# What the loaded library says, from a process that uses the binding as a user would.
PROBE_PROGRAM = r'''
import json, sys, typing
import numpy as np
import broadcastkit as bk
from broadcastkit import _abi, _types

lib = bk.library()
s = bk.Session(record=sys.argv[1], width=320, height=240, memory_budget=0)
before = s.stats()
s.start()
t0 = bk.now_ns()
for i in range(5):
    s.send_video(np.zeros((240, 320, 4), np.uint8), pts_ns=t0 + i * 33_333_333)
running = s.stats()
s.finish()
s.close()

def keys(td):
    return sorted(td.__annotations__) if hasattr(td, "__annotations__") else []

def args(alias):
    return list(typing.get_args(alias))

print(json.dumps({
    "presets": bk.limits()["presets"],
    "drop_reasons": [lib.bk_drop_reason_name(i).decode() for i in range(1, _abi.DROP_REASON_COUNT + 1)],
    "stats": [before, running, s.stats()],
    "statuses": [before["state"], running["state"]],
    "literals": {name: args(getattr(_types, name)) for name in
                 ("Preset", "AudioCodec", "Backpressure", "BudgetScope", "PixelFormat", "AudioLane", "DropReason",
                  "SendResult", "EventType", "SessionState", "StreamStatus", "SessionStatus", "DestinationKind",
                  "DestinationState")},
    "typeddicts": {name: {"required": sorted(getattr(_types, name).__required_keys__),
                          "optional": sorted(getattr(_types, name).__optional_keys__)}
                   for name in ("SessionStats", "DropCounts", "DestinationStats", "LinkStats", "Limits", "LimitRange")},
    "limits": sorted(bk.limits()),
    "abi": {"pixel_formats": _abi.PIXEL_FORMATS, "audio_codecs": {str(k): v for k, v in _abi.AUDIO_CODECS.items()},
            "backpressure": _abi.BACKPRESSURE, "lanes": _abi.LANES, "events": _abi.EVENT_TYPES,
            "states": _abi.STATES, "budget_scopes": _abi.BUDGET_SCOPES},
}))
'''

DOCSTRING_PROGRAM = r'''
import inspect, json
import broadcastkit as bk

missing = []
for name in bk.__all__:
    obj = getattr(bk, name)
    if inspect.isclass(obj) and not hasattr(obj, "__origin__") and obj.__module__.startswith("broadcastkit"):
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        for member, value in vars(obj).items():
            public = not member.startswith("_") or member in ("__enter__", "__exit__", "__aenter__", "__aexit__")
            if public and (inspect.isfunction(value) or isinstance(value, property)):
                doc = (value.fget.__doc__ if isinstance(value, property) else value.__doc__) or ""
                if not doc.strip():
                    missing.append(f"{name}.{member}")
    elif inspect.isfunction(obj) and not (obj.__doc__ or "").strip():
        missing.append(name)
print(json.dumps({"missing": missing, "checked": len(bk.__all__)}))
'''

SHIM_C = r'''
#include <broadcastkit.h>
/* Adds the budget-scope setter to the real library (its other functions come from it, a DT_NEEDED
   dependency) and records what the binding passed. */
static int last_scope = -100, calls = 0;
bk_status bk_config_set_memory_budget_scope(bk_config *cfg, int scope) {
    (void)cfg;
    calls++;
    last_scope = scope;
    return (scope == 0 || scope == 1) ? BK_OK : BK_ERR_INVALID_ARGUMENT;
}
int shim_last_scope(void) { return last_scope; }
int shim_calls(void) { return calls; }
'''

SCOPE_PROGRAM = r'''
import json, sys
import broadcastkit as bk

lib = bk.library()
has = hasattr(lib, "bk_config_set_memory_budget_scope")
out = {"path": lib.path, "has_symbol": has}
for scope in (None, "session", "process", "host"):
    kw = {} if scope is None else {"budget_scope": scope}
    try:
        s = bk.Session(record=sys.argv[1], width=320, height=240, memory_budget=0, **kw)
        out[str(scope)] = {"ok": True}
        if s.start() is s:
            s.finish()
        s.close()
    except bk.BroadcastError as e:
        out[str(scope)] = {"ok": False, "error": type(e).__name__, "message": str(e)}
    if has and hasattr(lib, "shim_last_scope"):
        out[str(scope)]["passed"] = lib.shim_last_scope()
        out[str(scope)]["calls"] = lib.shim_calls()
print(json.dumps(out))
'''


def header_enum(prefix: str) -> dict[str, int]:
    """`PREFIX_NAME = N` entries of broadcastkit.h as {name: N}."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(rf"\b{prefix}_(\w+) = (-?\d+)", HEADER.read_text())}


class PythonTypingTest(BroadcastTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        if not LIB.exists():
            raise AssertionError(f"{LIB} not built (scripts/build)")
        r = subprocess.run([PY, "-m", "mypy", "--version"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"mypy is not in {PY} (pip install -r requirements.txt): {r.stderr}")

    def mypy(self, *paths: Path | str) -> subprocess.CompletedProcess:
        env = dict(os.environ, MYPYPATH=str(PY_BINDING))
        return subprocess.run([PY, "-m", "mypy", "--strict", "--cache-dir", str(self.tmp / "mypy-cache"),
                               "--no-color-output", "--no-error-summary", "--show-error-codes", *map(str, paths)],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)

    def python(self, code: str, *args: str, env: dict | None = None) -> dict:
        prog = self.tmp / "probe.py"
        prog.write_text(code)
        full_env = {**os.environ, "PYTHONPATH": str(PY_BINDING), "BROADCASTKIT_LIBRARY": str(LIB), **(env or {})}
        r = subprocess.run([PY, str(prog), *args], cwd=self.tmp, env=full_env, capture_output=True, text=True,
                           timeout=120)
        self._captured_texts += [r.stdout, r.stderr]
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        return json.loads(r.stdout.strip().splitlines()[-1])

    def test_mypy_strict_on_the_binding_and_its_examples(self):
        r = subprocess.run([PY, "-m", "mypy", "--strict", "--cache-dir", str(self.tmp / "mypy-cache"),
                            "bindings/python"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
        print(f"\n--- mypy --strict bindings/python: {r.stdout.strip().splitlines()[-1:]}", file=sys.stderr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^Success: no issues found in \d+ source files")
        checked = int(re.search(r"in (\d+) source files", r.stdout).group(1))
        files = list((PY_BINDING / "broadcastkit").glob("*.py")) + list((PY_BINDING / "examples").glob("*.py"))
        self.assertEqual(checked, len(files), "mypy must check every module and example")

    def test_a_typed_program_passes_and_every_misuse_is_an_error(self):
        good = self.tmp / "typed_program.py"
        good.write_text(TYPED_PROGRAM)
        r = self.mypy(good)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stdout + r.stderr)
        bad = self.tmp / "misuse.py"
        bad.write_text(MISUSE_PROGRAM)
        r = self.mypy(bad)
        expected = {i for i, line in enumerate(MISUSE_PROGRAM.splitlines(), 1) if line.endswith("# E")}
        reported = {int(m.group(1)) for m in re.finditer(rf"^{re.escape(str(bad))}:(\d+): error:", r.stdout, re.M)}
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(len(expected), 19)
        self.assertEqual(sorted(expected - reported), [], f"misuses mypy let through:\n{r.stdout}")
        self.assertEqual(sorted(reported - expected), [], f"errors on correct lines:\n{r.stdout}")

    def test_the_types_map_what_the_library_has(self):
        out = self.python(PROBE_PROGRAM, str(self.tmp / "probe.mp4"))
        lit, td, abi = out["literals"], out["typeddicts"], out["abi"]
        # From the loaded library: presets, drop reasons.
        self.assertEqual(lit["Preset"], out["presets"])
        self.assertEqual(lit["DropReason"], out["drop_reasons"])
        self.assertEqual(lit["SendResult"], ["accepted"] + out["drop_reasons"])
        # A real stats() object, before start, while running and after close: its keys are the TypedDict's.
        for stats in out["stats"]:
            self.assertEqual(sorted(stats), td["SessionStats"]["required"])
            self.assertEqual(td["SessionStats"]["optional"], [])
            self.assertEqual(sorted(stats["drops"]), td["DropCounts"]["required"])
            self.assertEqual(sorted(stats["drops"]), sorted(out["drop_reasons"]))
            self.assertIn(stats["state"], lit["StreamStatus"])
            for d in stats["destinations"]:
                self.assertEqual(sorted(d), td["DestinationStats"]["required"])
                self.assertIn(d["kind"], lit["DestinationKind"])
                self.assertIn(d["state"], lit["DestinationState"])
        self.assertEqual([d["kind"] for d in out["stats"][1]["destinations"]], ["mp4"])
        self.assertEqual(out["statuses"], ["connecting", "live"])
        self.assertEqual(out["limits"], td["Limits"]["required"])
        # The one writer of the stats JSON: every key it writes is in a TypedDict, and the reverse.
        writer = (REPO_ROOT / "Sources" / "Engine" / "BroadcastKit" / "Session" / "StatsReport.swift").read_text()
        written = set(re.findall(r'\\"([a-z0-9_]+)\\":', writer))
        typed = set()
        for name in ("SessionStats", "DestinationStats", "LinkStats"):
            typed |= set(td[name]["required"]) | set(td[name]["optional"])
        self.assertEqual(sorted(written ^ typed), [], "keys only in StatsReport.swift or only in _types.py")
        self.assertEqual(td["DestinationStats"]["optional"], ["link", "peer_estimate_kbps"])
        link_keys = re.findall(r'\\"([a-z0-9_]+)\\":', writer.split("func writeLink")[1].split("\n    }")[0])
        self.assertEqual(sorted(td["LinkStats"]["required"]), sorted(k for k in link_keys if k != "link"))
        # broadcastkit.h's enums: the Literals and the binding's maps have the same words and values.
        self.assertEqual({k.lower(): v for k, v in abi["pixel_formats"].items()},
                         {k.lower(): v for k, v in header_enum("BK_PIXEL").items()})
        self.assertEqual(lit["PixelFormat"], list(abi["pixel_formats"]))
        self.assertEqual({k: v for k, v in abi["audio_codecs"].items() if k != "None"},
                         {k.lower(): v for k, v in header_enum("BK_AUDIO").items()})
        self.assertEqual(sorted(lit["AudioCodec"]), sorted(k.lower() for k in header_enum("BK_AUDIO")))
        self.assertEqual(abi["backpressure"], {k.lower(): v for k, v in header_enum("BK_BACKPRESSURE").items()})
        self.assertEqual(lit["Backpressure"], list(abi["backpressure"]))
        self.assertEqual(abi["lanes"], {k.lower().removesuffix("_audio"): v for k, v in header_enum("BK_LANE").items()})
        self.assertEqual(lit["AudioLane"], list(abi["lanes"]))
        events = {str(v): k.lower().replace("_", "-") for k, v in header_enum("BK_EVENT").items()}
        self.assertEqual(abi["events"], events)
        self.assertEqual(lit["EventType"], list(events.values()))
        states = {str(v): k.lower() for k, v in header_enum("BK_STATE").items()}
        self.assertEqual(abi["states"], states)
        self.assertEqual(lit["SessionState"], list(states.values()) + ["closed"])
        status_doc = re.search(r'/\*\* ("[^*]*?) \(static; never free it\)\. \*/\s*const char \*bk_session_status',
                               HEADER.read_text())
        self.assertIsNotNone(status_doc, "broadcastkit.h: bk_session_status's comment lists the words")
        self.assertEqual(lit["StreamStatus"], re.findall(r'"(\w+)"', status_doc.group(1)))
        self.assertEqual(lit["SessionStatus"], lit["StreamStatus"] + ["closed"])
        self.assertEqual(lit["BudgetScope"], list(abi["budget_scopes"]))
        self.assertEqual(abi["budget_scopes"], {"session": 0, "process": 1})  # BK_BUDGET_SESSION, BK_BUDGET_PROCESS
        if header_enum("BK_BUDGET"):  # once the header declares them
            self.assertEqual(abi["budget_scopes"], {k.lower(): v for k, v in header_enum("BK_BUDGET").items()})
        # The destinations' kinds and states as the library words them.
        sink = (REPO_ROOT / "Sources" / "Engine" / "BroadcastPipeline" / "Delivery" / "DestinationSink.swift").read_text()
        cases = re.search(r"enum TagSinkKind: String, Sendable \{(.*?)\n\}", sink, re.S).group(1)
        kinds = [w for line in re.findall(r"^\s*case ([\w, ]+)$", cases, re.M) for w in re.split(r",\s*", line)]
        self.assertEqual(sorted(lit["DestinationKind"]), sorted(kinds))
        dest = (REPO_ROOT / "Sources" / "Engine" / "BroadcastPipeline" / "Delivery" / "Destination.swift").read_text()
        words = re.search(r"var statsNow: DestinationStats \{(.*?)return DestinationStats", dest, re.S).group(1)
        self.assertEqual(sorted(lit["DestinationState"]), sorted(set(re.findall(r'"(\w+)"', words))))

    def test_every_public_name_and_member_has_a_docstring(self):
        out = self.python(DOCSTRING_PROGRAM)
        self.assertEqual(out["missing"], [])
        self.assertGreater(out["checked"], 30)

    def test_budget_scope_is_bound_when_the_library_has_the_symbol(self):
        # The real library as built: without the symbol, "process" is refused with the reason.
        out = self.python(SCOPE_PROGRAM, str(self.tmp / "real.flv"))
        self.assertEqual(out["None"], {"ok": True})
        self.assertEqual(out["session"], {"ok": True})
        self.assertEqual(out["host"]["error"], "InvalidValueError", out)
        if out["has_symbol"]:
            self.assertEqual(out["process"], {"ok": True})
        else:
            self.assertEqual(out["process"]["error"], "ConfigurationError", out)
            self.assertIn("needs a libbroadcastkit with bk_config_set_memory_budget_scope", out["process"]["message"])
        # A library with the symbol (a shim over the real one): the words map to 0 and 1, every time.
        src = self.tmp / "scope_shim.c"
        src.write_text(SHIM_C)
        shim = self.tmp / "libscopeshim.so"
        r = subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(shim), str(src), f"-I{HEADER.parent}",
                            "-Wl,--no-as-needed", f"-L{BUILD_DIR}", "-lbroadcastkit", f"-Wl,-rpath,{BUILD_DIR}"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.python(SCOPE_PROGRAM, str(self.tmp / "shim.flv"), env={"BROADCASTKIT_LIBRARY": str(shim)})
        self.assertEqual(out["path"], str(shim))
        self.assertTrue(out["has_symbol"])
        self.assertEqual(out["None"], {"ok": True, "passed": 0, "calls": 1})
        self.assertEqual(out["session"], {"ok": True, "passed": 0, "calls": 2})
        self.assertEqual(out["process"], {"ok": True, "passed": 1, "calls": 3})
        self.assertEqual(out["host"]["error"], "InvalidValueError", out)
        self.assertEqual(out["host"]["calls"], 3, "an unknown word never reaches the library")


if __name__ == "__main__":
    unittest.main()
