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


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (bind to 0 and release)."""
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
