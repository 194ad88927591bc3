"""Issue 22, defects 2, 4 and 5: the files broadcast writes, under hostile paths.

- test_replay_save_never_follows_planted_names (root; another uid plants with setpriv): in a
  sticky world-writable directory (1777) the user `nobody` plants `a.mp4.part -> victim`, the
  final name `b.mp4 -> victim`, a FIFO `c.mp4`; root makes a character device like /dev/null
  (`null`, 1:3), and nobody plants `replay-<stamp>.mp4.part -> victim` for every second the
  SIGUSR1 save may pick. Root's `save-replay` over the control socket and SIGUSR1 with
  `--replay-dir` then never change the root-owned 0600 victim, never replace the link, the FIFO
  or the device (each such save is one error naming the path), and the stream goes on.
  (fs.protected_symlinks is 0 on this machine; where it is 1 the kernel itself refuses to follow
  nobody's links in a sticky directory and the link cases cannot fail on old code.)
- test_outputs_refuse_links_fifos_and_devices: `--record`, `--stats-json` and `--heartbeat` at a
  link to a victim, a FIFO with no reader, a device: exit 2 with one line naming the path, in
  seconds (old code blocked in open() on the FIFO after going live), the victim unchanged.
- test_stats_on_a_stdout_pipe_nobody_reads: `--stats-json /dev/stdout` into a 4 KiB pipe that is
  never read: the run ends at its duration with one warning (old code blocked in write()).
- test_record_mp4_end_lost_on_a_full_disk_exits_4 (root: mounts a tmpfs): `--record a.mp4` on a
  600 KiB tmpfs where the first GOP fits and the last does not: exit 4 with one error line
  naming ENOSPC (old code: exit 0, 60 of 90 frames, silent).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import time
import unittest
from pathlib import Path

import support
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase
from support import exclusive  # noqa: E402

ROOT = os.geteuid() == 0
VICTIM_TEXT = b"precious root-only data\n"


def control(path: Path, line: str, timeout: float = 30) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return json.loads(data.decode())


def as_nobody(*argv: str) -> None:
    """Runs argv as uid/gid nobody (the other local user planting names)."""
    subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv],
                   check=True, capture_output=True, timeout=10)


class FileSafetyTests(BroadcastTestCase):
    def make_victim(self) -> tuple[Path, tuple]:
        victim = self.tmp / "victim"
        victim.write_bytes(VICTIM_TEXT)
        os.chmod(victim, 0o600)
        st = victim.stat()
        return victim, (st.st_ino, st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode))

    def assertVictimUnchanged(self, victim: Path, before: tuple) -> None:
        st = victim.stat()
        self.assertEqual(victim.read_bytes(), VICTIM_TEXT, "the victim's content changed")
        self.assertEqual((st.st_ino, st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode)), before)

    def shared_dir(self) -> Path:
        os.chmod(self.tmp, 0o711)          # nobody may pass through to the shared directory
        shared = self.tmp / "shared"
        shared.mkdir()
        os.chmod(shared, 0o1777)
        return shared

    @unittest.skipUnless(ROOT, "plants names as another uid with setpriv (root)")
    def test_replay_save_never_follows_planted_names(self):
        shared = self.shared_dir()
        victim, before = self.make_victim()
        as_nobody("ln", "-s", str(victim), str(shared / "a.mp4.part"))
        as_nobody("ln", "-s", str(victim), str(shared / "b.mp4"))
        as_nobody("mkfifo", str(shared / "c.mp4"))
        os.mknod(shared / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        sock = self.tmp / "ctl.sock"
        proc = subprocess.Popen([str(BROADCAST_BIN), "--no-publish", "--source", "test", "--res", "360p",
                                 "--replay-seconds", "2", "--replay-dir", str(shared), "--control", str(sock),
                                 "--duration", "40"], env=support.clean_env(), cwd=REPO_ROOT,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        deadline = time.monotonic() + 15
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)   # two seconds in the ring

        # A planted NAME.part link: the save must not write through it (a temporary of its own).
        a = control(sock, f"save-replay 1 {shared / 'a.mp4'}")
        self.assertVictimUnchanged(victim, before)
        self.assertTrue(a.get("ok"), a)
        self.assertTrue((shared / "a.mp4").is_file() and not (shared / "a.mp4").is_symlink())
        self.assertEqual((shared / "a.mp4").read_bytes()[4:8], b"ftyp")
        self.assertEqual(os.readlink(shared / "a.mp4.part"), str(victim), "the planted link was touched")
        # The final name taken by a link, a FIFO, a device: refused, naming it, nothing replaced.
        for name, kind in (("b.mp4", stat.S_ISLNK), ("c.mp4", stat.S_ISFIFO), ("null", stat.S_ISCHR)):
            with self.subTest(final=name):
                answer = control(sock, f"save-replay 1 {shared / name}")
                self.assertFalse(answer.get("ok"), answer)
                self.assertIn(str(shared / name), answer.get("error", ""))
                self.assertIn("already exists", answer.get("error", ""))
                self.assertTrue(kind(os.lstat(shared / name).st_mode), f"{name} was replaced")
                self.assertVictimUnchanged(victim, before)
        # SIGUSR1 names its clip replay-YYYYMMDD-HHMMSS.mp4 (UTC): nobody plants every name's .part
        # for the next seconds.
        now = int(time.time())
        for t in range(now, now + 8):
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(t))
            as_nobody("ln", "-s", str(victim), str(shared / f"replay-{stamp}.mp4.part"))
        proc.send_signal(signal.SIGUSR1)
        time.sleep(3)
        self.assertVictimUnchanged(victim, before)
        saved = [p for p in shared.iterdir() if p.name.startswith("replay-") and p.name.endswith(".mp4")]
        self.assertEqual(len(saved), 1, sorted(p.name for p in shared.iterdir()))
        self.assertTrue(saved[0].is_file() and not saved[0].is_symlink())
        stats = control(sock, "stats")
        self.assertGreater(stats["video_frames_sent"], 100, "the stream stopped")
        self.assertEqual(control(sock, "stop"), {"ok": True})
        out, err = proc.communicate(timeout=30)
        self._captured_texts += [out.decode(errors="replace"), err.decode(errors="replace")]
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace")[-2000:])
        self.assertIn("replay: saved", err.decode(errors="replace"))
        self.assertVictimUnchanged(victim, before)
        leftovers = [p.name for p in shared.iterdir() if p.name.endswith(".part") and not p.is_symlink()]
        self.assertEqual(leftovers, [], "a temporary was left behind")

    def test_outputs_refuse_links_fifos_and_devices(self):
        victim, before = self.make_victim()
        link = self.tmp / "link"
        link.symlink_to(victim)
        fifo = self.tmp / "fifo"
        os.mkfifo(fifo)
        cases = [(flag, path, why) for flag in ("--record", "--stats-json", "--heartbeat")
                 for path, why in ((link, "is a symbolic link"), (fifo, "is a FIFO"),
                                   (Path("/dev/null"), "is a character device"))]
        for flag, path, why in cases:
            with self.subTest(flag=flag, path=path.name):
                r = self.run_broadcast(["--no-publish", "--replay-seconds", "2", "--source", "test", "--res", "360p",
                                        "--duration", "2", flag, str(path)], timeout=20)
                self.assertFalse(r.timed_out, f"{flag} {path} hung: {r.describe()}")
                self.assertEqual(r.returncode, 2, r.describe())
                self.assertEqual(r.stderr_lines(), [f"broadcast: {flag} {path}: {why}, not a regular file "
                                                    "(only a regular file or a new name is written)"]
                                 if why != "is a symbolic link" else
                                 [f"broadcast: {flag} {path}: is a symbolic link (never written through)"])
                self.assertVictimUnchanged(victim, before)
                self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))

    @exclusive("the run ends on time (< 15 s for 6 s) with an unread pipe")
    def test_stats_on_a_stdout_pipe_nobody_reads(self):
        import fcntl
        r_fd, w_fd = os.pipe()
        self.addCleanup(os.close, r_fd)
        fcntl.fcntl(w_fd, 1031, 4096)   # F_SETPIPE_SZ: one page, full after about three lines
        start = time.monotonic()
        proc = subprocess.Popen([str(BROADCAST_BIN), "--no-publish", "--replay-seconds", "2", "--source", "test",
                                 "--res", "360p", "--duration", "6", "--stats-json", "/dev/stdout"],
                                env=support.clean_env(), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                                stdout=w_fd, stderr=subprocess.PIPE)
        os.close(w_fd)
        try:
            _, err = proc.communicate(timeout=25)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            self.fail(f"the run hung on a stats pipe nobody reads ({time.monotonic() - start:.0f} s)")
        text = err.decode(errors="replace")
        self._captured_texts.append(text)
        self.assertEqual(proc.returncode, 0, text[-2000:])
        self.assertLess(time.monotonic() - start, 15)
        self.assertEqual(text.count("the reader is not keeping up"), 1, text[-2000:])

    @unittest.skipUnless(ROOT, "mounts a tmpfs (root)")
    def test_record_mp4_end_lost_on_a_full_disk_exits_4(self):
        small = self.tmp / "small"
        small.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(small)],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(subprocess.run, ["umount", str(small)], capture_output=True)
        # 2000 kbps: the first GOP (2 s, ~0.5 MB) fits, the last second written at close does not.
        r = self.run_broadcast(["--no-publish", "--source", "test", "--res", "720p", "--video-bitrate", "2000",
                                "--record", small / "a.mp4", "--record-min-free", "0", "--duration", "3", "--quiet"],
                               timeout=60)
        self.assertEqual(r.returncode, 4, r.describe())
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(f"{small / 'a.mp4'}", lines[0])
        self.assertIn("No space left on device", lines[0])


if __name__ == "__main__":
    unittest.main()
