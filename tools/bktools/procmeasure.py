"""Process measurement, one copy: a child's peak RSS (VmHWM) and its split (anon, file, shmem),
CPU time from wait4, wall time; and /proc readers for a process that is still running.

`run_measured` reads the child's pipes while it runs (a child that fills a pipe nobody reads
would block for ever), and runs it under /usr/bin/time: Linux carries the exec'ing process's
RSS high-water mark into ru_maxrss, so a child forked from this Python (~18 MB) could never
report less; /usr/bin/time's own ~1 MB is the floor instead, and its %M is the child's VmHWM.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

STATUS_FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")


def status_kb(pid: int) -> dict[str, int]:
    """VmHWM, VmRSS, RssAnon, RssFile and RssShmem of a live process, in KiB ({} once it is gone)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in STATUS_FIELDS:
                out[k] = int(v.split()[0])
    except (OSError, ValueError):
        pass
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process so far (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def thread_cpu_ns(pid: int) -> tuple[int, dict[str, int]]:
    """CPU time of every thread of pid (ns on CPU, /proc/PID/task/TID/schedstat): total and per thread name."""
    total, by_name = 0, {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
            name = (task / "comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            continue
        total += ns
        by_name[name] = by_name.get(name, 0) + ns
    return total, by_name


def _drain(stream, sink: list[bytes]) -> None:
    for chunk in iter(lambda: stream.read(65536), b""):
        sink.append(chunk)


def run_measured(cmd: list[str], env: dict | None = None, timeout: float = 3600,
                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL) -> dict:
    """Run cmd; return rc, wall seconds, CPU seconds (wait4: user + system), CPU percent, peak
    RSS in bytes (VmHWM), stdout (when piped) and the tail of stderr. Past `timeout` the child's
    process group gets SIGINT, then SIGKILL 5 s later."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    fd, tfile = tempfile.mkstemp(prefix="bench-time-")
    os.close(fd)
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", tfile] + cmd, env=full_env, stdout=stdout,
                         stderr=subprocess.PIPE, stdin=stdin, start_new_session=True)
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    readers = [threading.Thread(target=_drain, args=(p.stderr, err_chunks), daemon=True)]
    if p.stdout is not None:
        readers.append(threading.Thread(target=_drain, args=(p.stdout, out_chunks), daemon=True))
    for r in readers:
        r.start()

    def stop_late() -> None:
        try:
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(5)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, stop_late)
    timer.daemon = True
    timer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join(timeout=10)
    tout = Path(tfile).read_text().strip().splitlines()
    os.unlink(tfile)
    # /usr/bin/time writes "Command exited with non-zero status N" before the figures.
    maxrss_kb = int(tout[-1]) if tout and tout[-1].strip().isdigit() else 0
    cpu = ru.ru_utime + ru.ru_stime
    return {"rc": p.returncode, "wall_s": wall, "cpu_s": cpu, "cpu_percent": 100.0 * cpu / wall if wall else 0.0,
            "maxrss_bytes": maxrss_kb * 1024, "stdout": b"".join(out_chunks).decode(errors="replace"),
            "stderr": b"".join(err_chunks).decode(errors="replace")[-2000:]}
