"""The minimal OCI image (scripts/image) run with podman against a real nginx-rtmp on the host.

- The image is built by scripts/image, or reused when an image of the same commit and the same
  binary (labels org.opencontainers.image.revision and broadcast.binary-sha256) exists.
- 10 s of 720p from inside the container, under --memory 50m, the key as a read-only secret
  file: ~300 frames and the audio decode (PyAV), the process ran as uid 10001, the key is in no
  output and not in the container's environment or command line.
- --print-memory-plan under --memory 40m: the budget comes from the container's cgroup.
- What the Kubernetes manifests rely on: a read-only root, --stats-json /dev/stdout, SIGTERM to
  PID 1 stops cleanly (exit 0) within the grace period; rtmps:// works (GnuTLS and the CA
  bundle are in the image); no shell, numeric non-root user.

Nothing is skipped: without podman or runc every test fails and says what is missing.
Run flags are the ones this machine needs (docs: /work/shared/DESIGN.md "Containers"):
--runtime runc (crun fails on the hybrid cgroup setup) and explicit nofile/nproc ulimits.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
import unittest
import uuid
from pathlib import Path

from support import (BROADCAST_BIN, REPO_ROOT, BroadcastTestCase, free_port, new_key, redact,
                     start_ingest)
from support import exclusive  # noqa: E402

# Both classes build (scripts/image, staged in out/image) or reuse the one image of this commit:
# run.py keeps the module in one worker, so two builds never race.
BK_ONE_WORKER = "one scripts/image build (out/image) for the module"
from test_network import Nginx, make_pki

IMAGE_REPO = "localhost/broadcast"
APP_UID = 10001
PODMAN_RUN = ["podman", "run", "--rm", "--runtime", "runc",
              "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]

_image_ref: str | None = None


def _git_head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def _sha256(path: Path) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def missing_tools() -> list[str]:
    missing = [t for t in ("podman", "runc", "openssl") if shutil.which(t) is None]
    if not BROADCAST_BIN.exists():
        missing.append(f"{BROADCAST_BIN} (run scripts/build)")
    return missing


def image_ref() -> str:
    """The image of this commit and this binary: reused if present, else built by scripts/image."""
    global _image_ref
    if _image_ref:
        return _image_ref
    head, bin_sha = _git_head(), _sha256(BROADCAST_BIN)
    # (podman ORs repeated label filters: filter on the binary, check the commit here.)
    r = subprocess.run(["podman", "images", "--filter", f"label=broadcast.binary-sha256={bin_sha}",
                        "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, timeout=60)
    for ref in (line for line in r.stdout.split() if line.startswith(IMAGE_REPO + ":")):
        rev = subprocess.run(["podman", "image", "inspect", "--format",
                              '{{index .Labels "org.opencontainers.image.revision"}}', ref],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        if rev == head:
            _image_ref = ref
            return _image_ref
    b = subprocess.run([str(REPO_ROOT / "scripts" / "image")], capture_output=True, text=True, timeout=600)
    if b.returncode != 0:
        raise AssertionError(f"scripts/image failed (exit {b.returncode}):\n{b.stderr[-3000:]}")
    _image_ref = b.stdout.strip().splitlines()[-1]
    return _image_ref


def container_processes(marker: str) -> list[int]:
    """Host pids of broadcast processes whose command line contains `marker` and that run in a
    podman (libpod) cgroup."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "comm").read_text().strip() != "broadcast":
                continue
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cgroup = (d / "cgroup").read_text()
        except OSError:
            continue
        if marker in cmdline and "libpod" in cgroup:
            pids.append(int(d.name))
    return pids


def uids_of(pid: int) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError(f"no Uid line for pid {pid}")


class ImageTestCase(BroadcastTestCase):
    @classmethod
    def setUpClass(cls):
        missing = missing_tools()
        if missing:
            raise AssertionError("the image tests need: " + ", ".join(missing)
                                 + " (scripts/bootstrap installs podman, runc, openssl)")
        if os.geteuid() != 0:
            raise AssertionError("the image tests run rootful podman (CI runs as root)")
        cls.image = image_ref()

    def key_file(self, key: str, name: str = "stream-key") -> Path:
        """The key as a secret file readable only by the container's user (as a Secret volume
        with fsGroup / defaultMode would be)."""
        path = self.tmp / name
        path.write_text(key + "\n")
        os.chown(path, APP_UID, APP_UID)
        path.chmod(0o400)
        return path

    def podman(self, args, timeout=120) -> subprocess.CompletedProcess:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        self._captured_texts += [r.stdout, r.stderr]
        return r

    def watch_process(self, proc: subprocess.Popen, marker: str, timeout: float = 30) -> dict:
        """While `proc` (podman run) is alive: the container's broadcast process's uids,
        environment and command line, read on the host."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            for pid in container_processes(marker):
                try:
                    info = {"pid": pid, "uids": uids_of(pid),
                            "environ": Path(f"/proc/{pid}/environ").read_bytes(),
                            "cmdline": Path(f"/proc/{pid}/cmdline").read_bytes()}
                except OSError:
                    continue
                return info
            time.sleep(0.1)
        return {}


class ImageStreamTests(ImageTestCase):
    @exclusive("memory under a 50 MB container limit")
    def test_stream_720p_with_key_file_under_50m(self):
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        keyfile = self.key_file(key)
        argv = [*PODMAN_RUN, "--memory", "50m", "--network", "host",
                "-v", f"{keyfile}:/run/secrets/stream-key:ro", self.image,
                "--source", "test", "--res", "720p", "--url", f"rtmp://127.0.0.1:{ingest.port}/live",
                "--key-file", "/run/secrets/stream-key", "--duration", "10", "--stats-json", "/dev/stdout"]
        env = {k: v for k, v in os.environ.items() if k not in ("STREAM_KEY", "BROADCAST_URL")}
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            seen = self.watch_process(proc, f"127.0.0.1:{ingest.port}/live")
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        seconds = time.monotonic() - start
        out, err = out.decode(errors="replace"), err.decode(errors="replace")
        self._captured_texts += [out, err]
        self.assertEqual(proc.returncode, 0, redact(f"podman run: exit {proc.returncode} after {seconds:.1f} s\n"
                                                    f"{err[-2000:]}\n{out[-1000:]}"))
        # Non-root: every uid of the process (real, effective, saved, fs) is the image's user.
        self.assertTrue(seen, "the container's broadcast process was never seen on the host")
        self.assertEqual(seen["uids"], [APP_UID] * 4, f"process uids {seen['uids']}, expected {APP_UID}")
        # The key came from the file: not in the environment, not on the command line.
        self.assertNotIn(key.encode(), seen["environ"], "stream key in the container's environment")
        self.assertNotIn(key.encode(), seen["cmdline"], "stream key on the container's command line")
        self.assertIn(b"/run/secrets/stream-key", seen["cmdline"])
        rec = ingest.wait_recording(key, timeout=10)
        # Every one of the 300 frames is sent or a counted drop; the recording holds what was sent.
        stats = self.tmp / "container-stats.jsonl"
        stats.write_text("\n".join(l for l in out.splitlines() if l.startswith("{")))
        sent = self.assertVideoAccounted(stats, produced=300)
        self.assertRecordingOK(rec, expect_frames=sent, tolerance=3, expect_width=1280, expect_height=720,
                               expect_video_codec="h264", expect_audio_codec="aac",
                               expect_audio_seconds=10.0, audio_tolerance_pct=3)
        self.track_file(ingest.dir / "error.log")

    def test_memory_plan_budget_from_cgroup(self):
        r = self.podman([*PODMAN_RUN, "--memory", "40m", self.image, "--source", "test", "--print-memory-plan"])
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        line = next((ln for ln in r.stdout.splitlines() if ln.strip().startswith("budget from")), "")
        self.assertRegex(line, r"budget from\s+cgroup v[12] limit 40\.0 MB",
                         f"the plan inside the container must take its budget from the cgroup:\n{r.stdout}")
        self.assertRegex(r.stdout, r"total\s+[\d.]+ MB of 38\.5 MB budget", r.stdout)

    @exclusive("the time to stop on SIGTERM")
    def test_read_only_root_stats_to_stdout_and_sigterm(self):
        """What the Deployment relies on: readOnlyRootFilesystem, stats JSON on stdout for the
        log collector, and SIGTERM to PID 1 (podman forwards it) -> clean stop, exit 0, < 2 s."""
        ingest = start_ingest()
        self.addCleanup(ingest.cleanup)
        key = new_key()
        keyfile = self.key_file(key)
        argv = [*PODMAN_RUN, "--memory", "64m", "--network", "host", "--read-only", "--tmpfs", "/tmp",
                "-v", f"{keyfile}:/run/secrets/stream-key:ro", self.image,
                "--source", "test", "--res", "480p", "--url", ingest.url, "--quiet",
                "--key-file", "/run/secrets/stream-key", "--duration", "120", "--stats-json", "/dev/stdout"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            rec = ingest.recording(key)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (rec.exists() and rec.stat().st_size > 200_000):
                self.assertIsNone(proc.poll(), "the container stopped before it was signalled")
                time.sleep(0.2)
            self.assertTrue(rec.exists(), "nothing recorded by the ingest within 30 s")
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
            stop_s = time.monotonic() - signalled
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        out, err = out.decode(errors="replace"), err.decode(errors="replace")
        self._captured_texts += [out, err]
        self.assertEqual(proc.returncode, 0, redact(f"exit {proc.returncode}\n{err[-2000:]}"))
        # broadcast stops in <= 2 s; allow podman's own teardown on top.
        self.assertLess(stop_s, 5.0, f"SIGTERM to exit took {stop_s:.1f} s")
        stats = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        self.assertGreaterEqual(len(stats), 2, f"no stats JSON lines on stdout:\n{out[-1000:]}")
        self.assertTrue(any(s.get("state") == "live" for s in stats), stats[-1])
        self.assertGreater(stats[-1]["video_frames_sent"], 0, stats[-1])
        self.assertRecordingOK(ingest.wait_recording(key, timeout=10), expect_width=854, expect_height=480,
                               expect_audio_codec="aac")

    def test_rtmps_with_private_ca(self):
        """GnuTLS (linked or dlopen'ed) and what it loads are in the image: rtmps:// publishes."""
        pki = make_pki(self.tmp / "pki")
        for f in pki.values():
            f.chmod(0o644)
        (self.tmp / "pki").chmod(0o755)
        tls_port = free_port()
        nginx = Nginx(self.tmp / "nginx", tls=[(tls_port, pki["server_cert"], pki["server_key"])]).start()
        self.addCleanup(nginx.stop)
        key = new_key()
        keyfile = self.key_file(key)
        r = self.podman([*PODMAN_RUN, "--memory", "50m", "--network", "host",
                         "-v", f"{keyfile}:/run/secrets/stream-key:ro", "-v", f"{pki['ca']}:/run/secrets/ca.pem:ro",
                         self.image, "--source", "test", "--res", "360p", "--quiet",
                         "--url", f"rtmps://127.0.0.1:{tls_port}/live", "--ca-file", "/run/secrets/ca.pem",
                         "--key-file", "/run/secrets/stream-key", "--duration", "4", "--reconnect-attempts", "1"])
        self.assertEqual(r.returncode, 0, redact(r.stderr[-2000:]))
        recs = nginx.recordings(key)
        self.assertTrue(recs, "nothing recorded through the TLS terminator")
        self.assertRecordingOK(recs[0], expect_width=640, expect_height=360, expect_audio_codec="aac")


class ImageContentTests(ImageTestCase):
    def test_config_user_entrypoint_and_files(self):
        r = self.podman(["podman", "image", "inspect", self.image])
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)[0]
        cfg = info["Config"]
        self.assertEqual(cfg.get("User"), f"{APP_UID}:{APP_UID}", "numeric non-root user in the config")
        self.assertEqual(cfg.get("Entrypoint"), ["/usr/local/bin/broadcast"])
        self.assertFalse(cfg.get("Env") and any(e.startswith("STREAM_KEY") for e in cfg["Env"]))
        size = int(info["Size"])
        print(f"\nimage {self.image}: podman image inspect Size {size} bytes", flush=True)
        self.assertLess(size, 60 * 1024 * 1024, "the image grew past 60 MB")

        # The root filesystem, as exported from a created (never started) container.
        name = f"bcast-export-{uuid.uuid4().hex[:8]}"
        c = self.podman(["podman", "create", "--name", name, self.image])
        self.assertEqual(c.returncode, 0, c.stderr)
        try:
            tar_bytes = subprocess.run(["podman", "export", name], capture_output=True, timeout=120,
                                       check=True).stdout
        finally:
            subprocess.run(["podman", "rm", "-f", name], capture_output=True, timeout=60)
        print(f"image {self.image}: exported root filesystem tar {len(tar_bytes)} bytes", flush=True)
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            members = {m.name.lstrip("./"): m for m in tar.getmembers()}
            passwd = tar.extractfile(members["etc/passwd"]).read().decode()
        files = sorted(n for n, m in members.items() if m.isfile())
        for shell in ("bin/sh", "bin/bash", "usr/bin/sh", "bin/busybox"):
            self.assertNotIn(shell, members, f"{shell} must not be in the image")
        self.assertIn("usr/local/bin/broadcast", files)
        self.assertIn("lib64/ld-linux-x86-64.so.2", files)
        self.assertIn("etc/ssl/certs/ca-certificates.crt", files)
        self.assertRegex(passwd, rf"(?m)^broadcast:x:{APP_UID}:{APP_UID}:")
        # Only the binary, shared objects and a few /etc files; nothing else.
        allowed_etc = {"etc/passwd", "etc/group", "etc/nsswitch.conf", "etc/ssl/certs/ca-certificates.crt"}
        others = [f for f in files if f != "usr/local/bin/broadcast" and f not in allowed_etc
                  and not re.search(r"\.so(\.[0-9]+)*$", f)]
        self.assertEqual(others, [], "unexpected files in the image")
        # Every library the host binary is linked against is there.
        ldd = subprocess.run(["ldd", str(BROADCAST_BIN)], capture_output=True, text=True, check=True).stdout
        for lib in re.findall(r"=> (/\S+)", ldd):
            self.assertIn(lib.lstrip("/"), files, f"{lib} missing from the image")

    def test_no_shell_to_exec(self):
        r = self.podman([*PODMAN_RUN, "--entrypoint", "/bin/sh", self.image, "-c", "true"])
        self.assertNotEqual(r.returncode, 0, "a shell ran inside the image")


if __name__ == "__main__":
    unittest.main()
