"""A local nginx-rtmp ingest (scripts/ingest), started and stopped by pid: the one copy the tests,
the benchmarks and the tools share."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
INGEST_SCRIPT = REPO_ROOT / "scripts" / "ingest"


def _bindable(port: int) -> bool:
    """Nobody holds `port` on 127.0.0.1, for TCP nor UDP (tests use it for either)."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def _port_from_block(spec: str, state: str) -> int:
    """The next free port of this worker's block (BK_PORT_RANGE "LO-HI", set by
    Tests/Integration/run.py): a counter in BK_PORT_STATE, under a lock, so every process of the
    worker (the test and the tools it starts) takes a different one, and the blocks of parallel
    workers never overlap, so two workers never pick the same port."""
    import fcntl
    lo, _, hi = spec.partition("-")
    lo_i, hi_i = int(lo), int(hi)
    span = hi_i - lo_i + 1
    with open(state, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read().strip()
        nxt = int(text) if text.isdigit() else lo_i
        for _ in range(span):
            port = lo_i + (nxt - lo_i) % span
            nxt = port + 1
            if _bindable(port):
                f.seek(0)
                f.truncate()
                f.write(str(nxt))
                return port
    raise RuntimeError(f"no free port in {spec}")


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago. Under the parallel runner, from the worker's
    own block (see _port_from_block); otherwise bind to 0 and release."""
    spec, state = os.environ.get("BK_PORT_RANGE"), os.environ.get("BK_PORT_STATE")
    if spec and state:
        return _port_from_block(spec, state)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Ingest:
    """A running nginx-rtmp ingest started through scripts/ingest (which stops it by its pid)."""

    port: int
    dir: Path
    owns_dir: bool = True

    @property
    def rec_dir(self) -> Path:
        return self.dir / "rec"

    @property
    def url(self) -> str:
        return f"rtmp://127.0.0.1:{self.port}/live"

    def recording(self, key: str) -> Path:
        return self.rec_dir / f"{key}.flv"

    def wait_recording(self, key: str, timeout: float = 5.0) -> Path:
        """Wait until the recording exists and its size has stopped changing."""
        path = self.recording(key)
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            size = path.stat().st_size if path.exists() else -1
            if size > 0 and size == last:
                return path
            last = size
            time.sleep(0.3)
        return path

    def error_log(self) -> str:
        p = self.dir / "error.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def stop(self) -> None:
        subprocess.run([str(INGEST_SCRIPT), "stop", "--dir", str(self.dir)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=30)

    def cleanup(self) -> None:
        self.stop()
        if self.owns_dir and not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(self.dir, ignore_errors=True)


def start_ingest(port: int | None = None, directory: str | Path | None = None) -> Ingest:
    """Start a private ingest; retries on another free port if one was grabbed meanwhile."""
    owns = directory is None
    d = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="bcast-ingest-"))
    last_err = ""
    for _ in range(3):
        p = port or free_port()
        r = subprocess.run([str(INGEST_SCRIPT), "start", "--port", str(p), "--dir", str(d)],
                           capture_output=True, text=True, timeout=30)
        if r.returncode == 0:
            return Ingest(port=p, dir=d, owns_dir=owns)
        last_err = r.stderr.strip()
        if port:
            break
    raise RuntimeError(f"could not start ingest: {last_err}")
