"""A new user's first minutes with the command line (issue 40): `-h`, a mistyped option that names
the closest one, the config file and its precedence as `--print-config` shows it, the refusal to
stream colour bars when there is nothing to capture, every URL scheme `--help` names, and the
man pages and completions that must list exactly the options `--help` does."""

import os
import re
import subprocess
import unittest
from pathlib import Path

import support
from support import BROADCAST_BIN, REPO_ROOT, BroadcastTestCase

BROADCASTCTL_BIN = BROADCAST_BIN.parent / "broadcastctl"
CLOSED = "127.0.0.1:9"  # the discard port: nothing listens on loopback


def no_desktop_env(tmp: Path) -> dict:
    """An environment with no session bus and an empty runtime dir: no portal, no PipeWire
    (what a server or an SSH session has), and a config home of its own."""
    runtime = tmp / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    config = tmp / "config-home"
    config.mkdir(exist_ok=True)
    return {"XDG_RUNTIME_DIR": str(runtime), "DBUS_SESSION_BUS_ADDRESS": "", "PIPEWIRE_REMOTE": "",
            "XDG_CONFIG_HOME": str(config)}


def generated(what: str) -> str:
    r = subprocess.run([str(BROADCAST_BIN), "--generate", what], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return r.stdout


def help_options(text: str) -> list[str]:
    """Option names at the start of a `--help` row (two spaces, then `-h, --help` or `--name`)."""
    names = []
    for line in text.splitlines():
        m = re.match(r"^  (-[a-z])?(?:, )?(--[a-z0-9-]+)", line)
        if m:
            names += [n for n in m.groups() if n]
    return names


class HelpAndSuggestionTests(BroadcastTestCase):
    def test_h_is_help(self):
        short = self.run_broadcast(["-h"], timeout=10)
        long = self.run_broadcast(["--help"], timeout=10)
        self.assertEqual(short.returncode, 0, short.describe())
        self.assertEqual(short.stdout, long.stdout)
        self.assertIn("Usage: broadcast [options]", short.stdout)
        self.assertEqual(short.stderr, "")

    def test_help_names_every_transport(self):
        text = self.run_broadcast(["--help"], timeout=10).stdout
        self.assertIn("WHIP", text)
        self.assertNotIn("in FLV over RTMP, inside", text)  # the old one-transport summary
        for scheme in ("rtmp://", "rtmps://", "srt://", "http://", "https://"):
            self.assertRegex(text, rf"(?m)^  {re.escape(scheme)}\s", scheme)

    def test_unknown_option_names_the_closest(self):
        for typo, meant in (("--vidoe-bitrate", "--video-bitrate"), ("--servce", "--service"),
                            ("--recrod", "--record"), ("--print-conf", "--print-config")):
            with self.subTest(typo=typo):
                r = self.run_broadcast([typo, "100"], timeout=10)
                self.assertEqual(r.returncode, 2, r.describe())
                self.assertEqual(r.stderr_lines(),
                                 [f"broadcast: unknown option '{typo}'; did you mean {meant}? (see --help)"])
        far = self.run_broadcast(["--frobnicate"], timeout=10)
        self.assertEqual(far.returncode, 2)
        self.assertEqual(far.stderr_lines(), ["broadcast: unknown option '--frobnicate' (see --help)"])

    def test_every_scheme_in_help_reaches_its_transport(self):
        """Each scheme `--help` lists is parsed and dialled (exit 3: nothing listens), never
        refused as a usage error; a scheme it does not list is (exit 2)."""
        text = self.run_broadcast(["--help"], timeout=10).stdout
        section = text.split("URL schemes (--url):", 1)[1].split("\n\n", 1)[0]
        schemes = re.findall(r"(?m)^  ([a-z]+)://", section)
        self.assertEqual(sorted(schemes), sorted(["rtmp", "rtmps", "srt", "http", "https"]), section)
        key = support.new_key()
        for scheme in schemes:
            with self.subTest(scheme=scheme):
                path = "" if scheme == "srt" else "/live"
                r = self.run_broadcast(["--source", "test", "--url", f"{scheme}://{CLOSED}{path}", "--duration", "2",
                                        "--reconnect-attempts", "1", "--quiet"],
                                       env={"STREAM_KEY": key, **no_desktop_env(self.tmp)}, timeout=60)
                self.assertFalse(r.timed_out, r.describe())
                self.assertEqual(r.returncode, 3, f"{scheme}: {r.describe()}")
        for scheme in ("rtsp", "ftp"):
            with self.subTest(refused=scheme):
                r = self.run_broadcast(["--source", "test", "--url", f"{scheme}://{CLOSED}/live", "--duration", "1"],
                                       env={"STREAM_KEY": key, **no_desktop_env(self.tmp)}, timeout=20)
                self.assertEqual(r.returncode, 2, r.describe())


class NoSilentColourBarsTests(BroadcastTestCase):
    def test_auto_without_a_screen_exits_3_and_names_the_choices(self):
        """No portal, no PipeWire: one line naming --source test and --source screen-node, exit 3,
        and nothing reaches the ingest (the old fallback streamed colour bars and exited 0)."""
        ingest = support.start_ingest()
        self.addCleanup(ingest.cleanup)
        key = support.new_key()
        record = self.tmp / "out.flv"
        r = self.run_broadcast(["--url", ingest.url, "--res", "720p", "--duration", "3", "--record", str(record)],
                               env={"STREAM_KEY": key, **no_desktop_env(self.tmp)}, timeout=30)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.returncode, 3, r.describe())
        lines = r.stderr_lines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("--source test", lines[0])
        self.assertIn("--source screen-node", lines[0])
        self.assertFalse(ingest.recording(key).exists(), "something was published")
        self.assertFalse(record.exists() and record.stat().st_size > 0, "something was recorded")

    def test_test_source_streams_when_asked(self):
        out = self.tmp / "test.flv"
        r = self.run_broadcast(["--source", "test", "--no-publish", "--record", str(out), "--duration", "1"],
                               env=no_desktop_env(self.tmp), timeout=30)
        self.assertEqual(r.returncode, 0, r.describe())
        info, err = support.ffprobe_json(out)
        self.assertTrue(info.get("streams"), err)


class ConfigFileTests(BroadcastTestCase):
    def write_config(self, env: dict, text: str) -> Path:
        path = Path(env["XDG_CONFIG_HOME"]) / "broadcast" / "config"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def print_config(self, args, env) -> dict[str, tuple[str, str]]:
        r = self.run_broadcast(["--print-config", *args], env=env, timeout=10)
        self.assertEqual(r.returncode, 0, r.describe())
        rows = {}
        for line in r.stdout.splitlines():
            if line.startswith("#"):
                continue
            setting, origin = line.rsplit("# ", 1)
            name, value = setting.split(" = ", 1)
            rows[name] = (value.strip(), origin.strip())
        return rows

    def test_precedence_command_line_environment_file(self):
        env = no_desktop_env(self.tmp)
        file_key, env_key = support.new_key(), support.new_key()
        key_file = self.tmp / "key"
        key_file.write_text(file_key + "\n")
        config = self.write_config(env, f"# mine\nurl = rtmp://file.example/app\nkey-file = {key_file}\n"
                                        f"res = 480p\nfps = 25\nservice = youtube\naudio-bitrate = 192k\n")
        where = f"config {config}"

        rows = self.print_config([], env)
        self.assertEqual(rows["url"], ("rtmp://file.example/app", f"{where}:2"))
        self.assertEqual(rows["key-file"], (str(key_file), f"{where}:3"))
        self.assertEqual(rows["res"], ("854x480", f"{where}:4"))
        self.assertEqual(rows["fps"], ("25", f"{where}:5"))
        # The audio cap is shown as the run would apply it.
        self.assertEqual(rows["audio-bitrate"], ("128 (capped by the service; 192 asked)", f"{where}:7"))

        # The environment beats the file (and a key in $BROADCAST_URL's path is not shown).
        env2 = {**env, "BROADCAST_URL": f"rtmp://env.example/live/{env_key}", "STREAM_KEY": env_key}
        rows = self.print_config([], env2)
        self.assertEqual(rows["url"], ("rtmp://env.example/live/****", "environment $BROADCAST_URL"))
        self.assertEqual(rows["key"], ("(set, not shown)", "environment $STREAM_KEY"))
        self.assertNotIn("key-file", rows)

        # The command line beats both.
        rows = self.print_config(["--url", "rtmp://cli.example/app", "--fps", "50", "--key-file", str(key_file)], env2)
        self.assertEqual(rows["url"], ("rtmp://cli.example/app", "command line"))
        self.assertEqual(rows["fps"], ("50", "command line"))
        self.assertEqual(rows["key-file"], (str(key_file), "command line"))
        self.assertEqual(rows["res"], ("854x480", f"{where}:4"))

    def test_key_line_is_refused(self):
        env = no_desktop_env(self.tmp)
        key = support.new_key()
        config = self.write_config(env, f"res = 720p\nkey = {key}\n")
        r = self.run_broadcast(["--print-config"], env=env, timeout=10)
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertEqual(len(r.stderr_lines()), 1)
        self.assertTrue(r.stderr_lines()[0].startswith(f"broadcast: config {config}:2: the stream key never goes in the config file"),
                        r.stderr)
        self.assertIn("key-file = PATH", r.stderr)

    def test_bad_line_names_file_and_line(self):
        env = no_desktop_env(self.tmp)
        config = self.write_config(env, "res = 720p\nvidoe-bitrate = 3000\n")
        r = self.run_broadcast(["--source", "test", "--no-publish", "--record", str(self.tmp / "x.flv"), "--duration", "1"],
                               env=env, timeout=10)
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertEqual(r.stderr_lines(),
                         [f"broadcast: config {config}:2: unknown setting 'vidoe-bitrate'; did you mean video-bitrate?"])

    def test_config_drives_a_real_stream(self):
        """service-less settings from the file reach nginx-rtmp: its URL, the key from its key file,
        its resolution; the recording decodes at that size."""
        ingest = support.start_ingest()
        self.addCleanup(ingest.cleanup)
        env = no_desktop_env(self.tmp)
        key = support.new_key()
        key_file = self.tmp / "key"
        key_file.write_text(key + "\n")
        self.write_config(env, f"url = {ingest.url}\nkey-file = {key_file}\nres = 640x360\nsource = test\n"
                               f"video-bitrate = 800\n")
        r = self.run_broadcast(["--duration", "2", "--quiet"], env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.describe())
        rec = ingest.wait_recording(key, timeout=10)
        self.assertTrue(rec.exists(), f"no recording for the key from the config's key file\n{ingest.error_log()}")
        self.track_file(rec)
        info, err = support.ffprobe_json(rec)
        video = [s for s in info.get("streams", []) if s.get("codec_type") == "video"]
        self.assertEqual((video[0]["width"], video[0]["height"]), (640, 360), err)

    def test_explicit_config_must_exist(self):
        r = self.run_broadcast(["--config", str(self.tmp / "missing"), "--print-config"],
                               env=no_desktop_env(self.tmp), timeout=10)
        self.assertEqual(r.returncode, 2, r.describe())
        self.assertIn("missing: No such file or directory", r.stderr)


def video_packets(path: Path) -> list[tuple[float, int]]:
    """(dts seconds from the first, bytes) of every video packet in the recording (ffprobe)."""
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=dts_time,size",
                        "-of", "json", str(path)], capture_output=True, text=True, timeout=120)
    import json
    packets = [(float(p["dts_time"]), int(p["size"])) for p in json.loads(r.stdout or "{}").get("packets", [])]
    return [(t - packets[0][0], n) for t, n in packets] if packets else []


@support.exclusive("the encoder's bitrate over 1 s windows, in real time")
class ServiceCapTests(BroadcastTestCase):
    """A capped bitrate holds from the first second, on content x264 cannot compress (moving
    noise from ffmpeg's testsrc2, not the test source)."""

    def capped_run(self, service: str, res: str, size: str, cap: int) -> list[tuple[float, int]]:
        out = self.tmp / f"{service}.flv"
        ff = subprocess.Popen(["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
                               f"testsrc2=size={size}:rate=30,noise=alls=40:allf=t+u", "-t", "6",
                               "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", "-"], stdout=subprocess.PIPE)
        try:
            r = self.run_broadcast(["--config", "none", "--source", "y4m:-", "--no-publish", "--record", str(out),
                                    "--service", service, "--res", res, "--video-bitrate", "50M"],
                                   stdin=ff.stdout, timeout=120)
        finally:
            ff.stdout.close()
            ff.wait(timeout=30)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn(f"note: {service} accepts at most {cap} kbps video; using that", r.stderr)
        packets = video_packets(out)
        self.assertGreater(len(packets), 90, "too few frames encoded")
        return packets

    def check(self, packets, cap: int):
        first = sum(n for t, n in packets if t < 1.0) * 8 / 1000
        # The promise is exact: the first second never carries more than the cap.
        self.assertLessEqual(first, cap, f"first second {first:.0f} kbit against a {cap} kbps cap")
        # ...and the cap is what the stream spends afterwards: bits per encoded frame at 30 fps
        # (frames x264 dropped under load are counted drops, not bits) within 15 % below the cap,
        # at most 5 % above (ABR's average).
        rest = [(t, n) for t, n in packets if t >= 1.0]
        per_frame_kbps = sum(n for _, n in rest) * 8 / 1000 / len(rest) * 30
        self.assertGreater(per_frame_kbps, 0.85 * cap, f"{per_frame_kbps:.0f} kbps after the first second")
        self.assertLess(per_frame_kbps, 1.05 * cap, f"{per_frame_kbps:.0f} kbps after the first second")

    def test_facebook_360p_first_second_within_its_cap(self):
        self.check(self.capped_run("facebook", "640x360", "640x360", 1000), 1000)

    def test_twitch_480p_first_second_within_its_cap(self):
        # 480p: noise there still needs more than 6000 kbps, and x264 keeps real time on a loaded
        # machine (at 720p it dropped 10-20 % of the frames, which hides the first second's excess).
        self.check(self.capped_run("twitch", "854x480", "854x480", 6000), 6000)


class DriftTests(BroadcastTestCase):
    """`--help`, the committed man pages and completions list the binary's own option table:
    regenerate with scripts/gen-docs after changing an option."""

    COMMITTED = {"man": "docs/man/broadcast.1", "man-broadcastctl": "docs/man/broadcastctl.1",
                 "bash": "completions/broadcast.bash", "zsh": "completions/_broadcast",
                 "fish": "completions/broadcast.fish"}

    def test_committed_files_are_what_the_binary_generates(self):
        for what, rel in self.COMMITTED.items():
            with self.subTest(file=rel):
                path = REPO_ROOT / rel
                self.assertTrue(path.exists(), f"{rel} missing: run scripts/gen-docs")
                self.assertEqual(path.read_text(), generated(what), f"{rel} is stale: run scripts/gen-docs")

    def test_option_lists_agree(self):
        table = generated("options").split()
        self.assertIn("--video-bitrate", table)
        self.assertIn("-h", table)
        self.assertNotIn("--generate", table)  # maintainers only
        help_names = help_options(self.run_broadcast(["--help"], timeout=10).stdout)
        man = (REPO_ROOT / self.COMMITTED["man"]).read_text()
        options_section = man.split(".SH OPTIONS", 1)[1].split(".SH ", 1)[0]
        man_names = [n.replace("\\-", "-") for n in re.findall(r"\\fB((?:\\-)+[a-z0-9\\-]+)\\fR", options_section)]
        bash = (REPO_ROOT / self.COMMITTED["bash"]).read_text()
        bash_names = re.search(r'COMPREPLY=\(\$\(compgen -W "([^"]*)" -- "\$cur"\)\)\n}', bash).group(1).split()
        zsh = (REPO_ROOT / self.COMMITTED["zsh"]).read_text()
        zsh_names = re.findall(r"(?m)^  '(--?[a-z0-9-]+)", zsh)
        fish = (REPO_ROOT / self.COMMITTED["fish"]).read_text()
        fish_names = []
        for line in fish.splitlines():
            fish_names += ["-" + s for s in re.findall(r" -s ([a-z])\b", line)]
            fish_names += ["--" + l for l in re.findall(r" -l ([a-z0-9-]+)", line)]
        for name, names in (("--help", help_names), ("man page", man_names), ("bash", bash_names),
                            ("zsh", zsh_names), ("fish", fish_names)):
            with self.subTest(source=name):
                self.assertEqual(sorted(set(names)), sorted(table), name)

    def test_broadcastctl_help_and_man_page_agree(self):
        r = subprocess.run([str(BROADCASTCTL_BIN), "--help"], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        help_cmds = re.findall(r"(?m)^  ([a-z-]+)\s", r.stdout)
        man = (REPO_ROOT / self.COMMITTED["man-broadcastctl"]).read_text()
        section = man.split(".SH COMMANDS", 1)[1].split(".SH ", 1)[0]
        man_cmds = [c.replace("\\-", "-") for c in re.findall(r"(?m)^\\fB((?:[a-z]|\\-)+)", section)]
        self.assertTrue(help_cmds)
        self.assertEqual(help_cmds, man_cmds)

    def test_man_pages_render_without_warnings(self):
        for rel in ("docs/man/broadcast.1", "docs/man/broadcastctl.1"):
            with self.subTest(page=rel):
                r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(REPO_ROOT / rel)],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_bash_completion_parses_and_completes(self):
        script = (f"source {REPO_ROOT / self.COMMITTED['bash']}; COMP_WORDS=(broadcast --vid); COMP_CWORD=1; "
                  "_broadcast; echo \"${COMPREPLY[@]}\"; COMP_WORDS=(broadcast --service tw); COMP_CWORD=2; "
                  "_broadcast; echo \"${COMPREPLY[@]}\"")
        r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["--video-bitrate", "twitch"])


if __name__ == "__main__":
    unittest.main()
