"""End of input is the end of the stream (#38).

A Y4M pipe whose writer exits at 10 s, with 180 s of PCM beside it, ends the run within 1 s of the
EOF with exit 0, and the recording holds the frames the writer made, not repeats of the last one
(before: the last picture was repeated for as long as the PCM lasted, 1935 repeats). PyAV (not our
parsers) reads the recording.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from support import REPO_ROOT, BroadcastTestCase, BROADCAST_BIN, clean_env


def video_times(path: Path) -> list[float]:
    import av
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        return sorted(float(p.pts * p.time_base) for p in c.demux(vs) if p.pts is not None)


def audio_end(path: Path) -> float:
    """The end of the last audio packet, in seconds."""
    import av
    with av.open(str(path)) as c:
        s = c.streams.audio[0]
        return max(float((p.pts + (p.duration or 0)) * p.time_base) for p in c.demux(s) if p.pts is not None)


class EndOfInputTest(BroadcastTestCase):
    def test_y4m_writer_that_exits_ends_the_run_unpadded(self) -> None:
        rec = self.tmp / "eof.flv"
        pcm = self.tmp / "silence.pcm"
        with open(pcm, "wb") as f:  # 180 s of s16le 48 kHz stereo silence
            f.truncate(180 * 48000 * 4)
        gen = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
                                "-i", "testsrc2=size=640x360:rate=30", "-t", "10",
                                "-f", "yuv4mpegpipe", "-"], stdout=subprocess.PIPE)
        argv = [str(BROADCAST_BIN), "--no-publish", "--record", str(rec), "--source", "y4m:-",
                "--pcm", str(pcm), "--res", "640x360", "--fps", "30", "--quiet"]
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=gen.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=clean_env(), cwd=REPO_ROOT)
        gen.stdout.close()
        try:
            gen.wait(timeout=60)
            writer_exit = time.monotonic()
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        ended = time.monotonic()
        self._captured_texts += [out.decode(errors="replace"), err.decode(errors="replace")]
        print(f"\ny4m writer exited at {writer_exit - start:.2f} s, broadcast at {ended - start:.2f} s "
              f"(exit {proc.returncode})", file=sys.stderr)
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace")[-2000:])
        self.assertLessEqual(ended - writer_exit, 1.0, "the run must end within 1 s of the input's end")
        times = video_times(rec)
        # ffmpeg made 300 frames; a padded run would hold many more (1935 repeats were seen).
        self.assertGreaterEqual(len(times), 297, len(times))
        self.assertLessEqual(len(times), 303, f"{len(times)} frames from a 300-frame input: padded")
        # The PCM input runs on alone for the end-of-input grace only (0.2 s, seen at a 100 ms tick).
        tail = audio_end(rec) - (times[-1] + 1 / 30)
        self.assertLessEqual(tail, 0.45, f"audio ran {tail:.2f} s past the last picture: padded with audio alone")
