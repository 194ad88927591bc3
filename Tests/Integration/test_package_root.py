"""A clean Debian 12 root for the packaging tests (test_package.py, test_package_wheel.py).

`debootstrap --variant=minbase bookworm` once, cached as a tarball outside the repository
(CACHE_DIR, rebuilt when older than CACHE_DAYS), then unpacked into each test's temp dir.
The mirror is the one the host's own apt sources name (read from /etc/apt/sources.list and
/etc/apt/sources.list.d), so the repository names no registry host. The root has no Swift, no
compiler, no x264/opus/vo-aacenc/yuv: only what minbase brings, plus what a test installs.

`chroot` shares the host's network namespace, so a process in the root reaches an nginx-rtmp
the test started on the host's loopback. Holds no TestCase: the runner imports it and finds none.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

CACHE_DIR = Path(os.environ.get("BK_ROOT_CACHE", "/var/cache/broadcast-test"))
SUITE = "bookworm"
VARIANT = "minbase"
CACHE_DAYS = 30
CACHE = CACHE_DIR / f"{SUITE}-{VARIANT}.tar.zst"


def host_sources(suite: str = SUITE) -> list[tuple[str, str, str]]:
    """(URI, suite, components) of every enabled `deb` source of the host for `suite` and its
    companions (`bookworm-updates`, `bookworm-security`), in the order the host lists them; deb822
    (.sources) and one-line (.list) forms. Third-party sources (other suites) are left out."""
    found: list[tuple[str, str, str]] = []
    files = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    for f in files:
        if not f.is_file() or f.suffix not in (".list", ".sources"):
            continue
        text = f.read_text(errors="replace")
        if f.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.lstrip().startswith("#"):
                        k, v = line.split(":", 1)
                        fields[k.strip().lower()] = v.strip()
                if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
                    continue
                for uri in fields.get("uris", "").split():
                    for s in fields.get("suites", "").split():
                        if s == suite or s.startswith(suite + "-"):
                            found.append((uri, s, fields.get("components", "main")))
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(parts) >= 3 and parts[0] == "deb" and (parts[2] == suite or parts[2].startswith(suite + "-")):
                    found.append((parts[1], parts[2], " ".join(parts[3:]) or "main"))
    if not any(s == suite for _, s, _ in found):
        raise RuntimeError(f"no apt source for {suite} in /etc/apt/sources.list(.d)")
    return found


def host_mirror(suite: str = SUITE) -> str:
    """The host's first mirror for `suite` itself: what debootstrap installs from."""
    return next(uri for uri, s, _ in host_sources(suite) if s == suite)


def ensure_cache(log) -> Path:
    """The cached minbase tarball, built (debootstrap, minutes) when missing or stale.
    Concurrent workers serialise on a lock file; the tarball appears by rename, never half-written."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    import fcntl
    with open(CACHE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if CACHE.exists() and time.time() - CACHE.stat().st_mtime < CACHE_DAYS * 86400:
            return CACHE
        if shutil.which("debootstrap") is None:
            raise RuntimeError("debootstrap missing (scripts/bootstrap installs it)")
        work = CACHE_DIR / f"build-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        try:
            mirror = host_mirror()
            log(f"debootstrap --variant={VARIANT} {SUITE} from {mirror} (once; cached at {CACHE})")
            r = subprocess.run(["debootstrap", f"--variant={VARIANT}", SUITE, str(work), mirror],
                               capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                raise RuntimeError(f"debootstrap failed ({r.returncode}): {r.stderr[-2000:]}{r.stdout[-2000:]}")
            shutil.rmtree(work / "var/cache/apt/archives", ignore_errors=True)
            (work / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
            tmp = CACHE.with_suffix(".partial")
            subprocess.run(["tar", "--zstd", "-C", str(work), "-cf", str(tmp), "."], check=True, timeout=600)
            os.replace(tmp, CACHE)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return CACHE


class CleanRoot:
    """An unpacked copy of the cached root, with /proc, /dev, /dev/pts and /sys mounted and the
    host's resolv.conf; run(argv) executes inside it with chroot. It lives in /var/tmp under a name
    with `tag` (support.worker_tag()), never inside a test's temp dir: that is removed with rmtree,
    which would follow a bind mount left behind. close() unmounts (lazily if busy) in reverse order,
    then removes the tree only when nothing is mounted under it; call it from addCleanup."""

    def __init__(self, tag: str, log=print):
        import tempfile
        tarball = ensure_cache(log)
        self.mounts: list[Path] = []
        self.path = Path(tempfile.mkdtemp(prefix=f"bk-root-{tag}-", dir="/var/tmp"))
        try:
            self._populate(tarball)
        except BaseException:
            self.close()
            raise

    def _populate(self, tarball: Path) -> None:
        subprocess.run(["tar", "--zstd", "-C", str(self.path), "-xf", str(tarball)], check=True, timeout=600)
        for src, dst, opts in (("proc", "proc", ["-t", "proc"]), ("/dev", "dev", ["--bind"]),
                               ("/dev/pts", "dev/pts", ["--bind"]), ("sysfs", "sys", ["-t", "sysfs", "-o", "ro"])):
            target = self.path / dst
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", *opts, src, str(target)], check=True, timeout=30)
            self.mounts.append(target)
        shutil.copy("/etc/resolv.conf", self.path / "etc/resolv.conf")
        # The root's apt sources: the host's, for the suite and its updates and security suites, as a
        # user's machine has them (the archive keys come with the root's debian-archive-keyring).
        (self.path / "etc/apt/sources.list").write_text(
            "".join(f"deb {uri} {suite} {components}\n" for uri, suite, components in host_sources()))

    def run(self, argv, timeout: float = 600, env: dict | None = None, check: bool = False,
            stdin: bytes | None = None) -> subprocess.CompletedProcess:
        base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME": "/root", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
        base.update(env or {})
        r = subprocess.run(["chroot", str(self.path), *argv], env=base, capture_output=True,
                           timeout=timeout, input=stdin)
        r.stdout = r.stdout.decode(errors="replace")
        r.stderr = r.stderr.decode(errors="replace")
        if check and r.returncode != 0:
            raise AssertionError(f"{argv} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return r

    def apt_install(self, *packages: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """apt-get update (once) then apt-get install -y --no-install-recommends PACKAGES."""
        if not getattr(self, "_updated", False):
            self.run(["apt-get", "update", "-qq"], timeout=600, check=True)
            self._updated = True
        return self.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], timeout=timeout)

    def close(self) -> None:
        for target in reversed(self.mounts):
            if subprocess.run(["umount", str(target)], capture_output=True, timeout=30).returncode != 0:
                subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=30)
        self.mounts.clear()
        # Remove the tree only when nothing is mounted under it any more (a lazily detached mount is
        # gone from the tree at once).
        with open("/proc/mounts") as f:
            still = [l for l in f if f" {self.path}/" in l or f" {self.path} " in l]
        if not still:
            shutil.rmtree(self.path, ignore_errors=True)
