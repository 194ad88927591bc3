"""A Python host as tool authors write one: numpy and PyAV imported first, then Session with the
defaults (no memory_budget). Issue 39.

    py_host_budget.py stream URL SECONDS     streams SECONDS of 640x360@30 at real time; prints JSON
    py_host_budget.py sessions URL           six sessions one after another (five started, streamed
                                             1 s and finished); prints each one's plan total as JSON
    py_host_budget.py key URL KEY            Session(URL, KEY): prints the error's class and text
The key comes from $STREAM_KEY (except for `key`).
"""
import json
import os
import re
import sys
import time

import av  # noqa: F401  the host's libraries, resident before the session exists
import numpy as np

import broadcastkit

TOTAL = re.compile(r"^  total\s+(\d+\.\d) MB of ", re.M)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def frames(seconds: float, s: "broadcastkit.Session") -> dict:
    """640x360 BGRx frames at 30 fps, paced on the monotonic clock; results counted."""
    results: dict[str, int] = {}
    img = np.zeros((360, 640, 4), dtype=np.uint8)
    start = time.monotonic_ns()
    n = int(round(seconds * 30))
    for i in range(n):
        due = start + i * 1_000_000_000 // 30
        while time.monotonic_ns() < due:
            time.sleep(max(0.0, (due - time.monotonic_ns()) / 1e9))
        img[:, :, :3] = (i * 3) % 256
        img[(i * 4) % 360, :, 1] = 255
        r = s.send_video(img)
        results[r] = results.get(r, 0) + 1
    return {"produced": n, "results": results}


def main() -> int:
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "key":
        try:
            broadcastkit.Session(url, sys.argv[3], width=640, height=360, fps=30)
        except Exception as e:  # the class and the words are the answer
            print(json.dumps({"error": type(e).__name__, "text": str(e)}))
            return 0
        print(json.dumps({"error": None}))
        return 0
    key = os.environ["STREAM_KEY"]
    if mode == "stream":
        host = rss_mb()
        s = broadcastkit.Session(url, key, width=640, height=360, fps=30)
        plan = s.memory_plan()
        with s:
            out = frames(float(sys.argv[3]), s)
        out.update(stats=s.stats(), plan=plan, host_rss_mb=host)
        print(json.dumps(out))
        return 0
    if mode == "sessions":
        totals, hosts, plans = [], [], []
        for i in range(6):
            hosts.append(rss_mb())
            s = broadcastkit.Session(url, key, width=640, height=360, fps=30)
            plan = s.memory_plan()
            plans.append(plan)
            totals.append(float(TOTAL.search(plan).group(1)))
            if i < 5:
                with s:
                    frames(1.0, s)
            s.close()
            del s
        print(json.dumps({"totals": totals, "host_rss_mb": hosts, "first_plan": plans[0], "last_plan": plans[-1]}))
        return 0
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main())
