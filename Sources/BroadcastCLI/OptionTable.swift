import BroadcastCapture
import BroadcastKit

/// Every `broadcast` option, in `--help` order. `CommandLineOptions.parse` refuses a name that is
/// not here (with a suggestion), `Usage`, `ManPage` and `Completions` print from here, and the
/// config file accepts the options marked `config`. A unit test parses each entry, so an option
/// the table lists but the parser ignores fails the build's tests.
package enum OptionTable {
    /// The groups, in `--help` order.
    package static let sections: [OptionSection] = [
        OptionSection(title: "Destination", options: [
            OptionSpec("--url", .required("URL"), [
                "ingest URL (else $BROADCAST_URL, the --service ingest, or the local",
                "rtmp://127.0.0.1:1935/live); may repeat, as",
                "URL[,key-file=PATH][,service=NAME]: one encode, several destinations,",
                "the first is the primary",
            ], config: true),
            OptionSpec("--service", .required("NAME"), [
                "\(ServicePreset.all.map(\.name).joined(separator: " | ")): the service's ingest URL and limits",
            ], completion: .choices(ServicePreset.all.map(\.name)), config: true),
            OptionSpec("--key-file", .required("PATH"), [
                "read the stream key from a file (a regular text file, at most 4096 bytes)",
            ], completion: .file, config: true),
            OptionSpec("--key", .required("KEY"), [
                "stream key (visible to local users; prefer $STREAM_KEY or --key-file)",
            ]),
            OptionSpec("--srt-passphrase-file", .required("PATH"), [
                "SRT encryption passphrase (10-79 characters) from a file",
            ], completion: .file, config: true),
            OptionSpec("--require-all", [
                "any lost destination fails the run (else only losing every RTMP/SRT one)",
            ], config: true),
            OptionSpec("--bitrate-follows", .required("WHICH"), [
                "primary | slowest: what the adaptive bitrate follows (default primary)",
            ], completion: .choices(["primary", "slowest"]), config: true),
            OptionSpec("--no-adaptive-bitrate", [
                "keep --video-bitrate whatever the link does (the send queue",
                "still drops what the link cannot carry)",
            ], config: true),
            OptionSpec("--no-enhanced-rtmp-connect", [
                "plain RTMP connect: no E-RTMP capsEx, server reconnect requests ignored",
            ], config: true),
            OptionSpec("--ca-file", .required("PATH"), [
                "also trust this CA (PEM) for rtmps:// and https:// (and the system store)",
            ], completion: .file, config: true),
            OptionSpec("--record", .required("PATH"), [
                "also write the stream to PATH: FLV, or fragmented MP4 if PATH ends in .mp4",
            ], completion: .file, config: true),
            OptionSpec("--record-min-free", .required("SIZE"), [
                "refuse to start with less free space (default: 10 min at the bitrates)",
            ], config: true),
            OptionSpec("--no-publish", [
                "do not connect anywhere (use with --record or --replay-seconds)",
            ]),
            OptionSpec("--reconnect-attempts", .required("N"), [
                "retries after a lost connection, 0 = forever, -1 = never (default 20)",
            ], config: true),
            OptionSpec("--reconnect-delay", .required("S"), [
                "first retry delay, then x1.5 with jitter, capped at 30 s (default 2)",
            ], config: true),
        ]),
        OptionSection(title: "Video and audio", options: [
            OptionSpec("--res", .required("R"), [
                "360p | 480p | 720p | 1080p | WxH (default 720p)",
            ], completion: .choices(Resolution.presets.map(\.0)), config: true),
            OptionSpec("--fps", .required("N"), [
                "frames per second (default 30)",
            ], config: true),
            OptionSpec("--video-bitrate", .required("RATE"), [
                "x264 target, VBV-capped: 2500, 2500k, 2.5M (default by --res)",
            ], config: true),
            OptionSpec("--preset", .required("NAME"), [
                "x264 preset: \(X264Preset.allCases.map(\.rawValue).joined(separator: " | "))",
                "(default veryfast)",
            ], completion: .choices(X264Preset.allCases.map(\.rawValue)), config: true),
            OptionSpec("--x264-threads", .required("N"), [
                "x264 worker threads, 1..16 (default: chosen from the size and cores)",
            ], config: true),
            OptionSpec("--audio-codec", .required("C"), [
                "aac | opus (default aac; opus for a WHIP destination)",
            ], completion: .choices(["aac", "opus"]), config: true),
            OptionSpec("--audio-bitrate", .required("RATE"), [
                "audio bitrate, e.g. 128k (default 128 AAC, 96 Opus)",
            ], config: true),
        ]),
        OptionSection(title: "Source", options: [
            OptionSpec("--source", .required("S"), [
                "auto | test | screen | screen-node | y4m:PATH | y4m:- (default auto: the",
                "desktop portal, else a PipeWire screen, else exit 3; the test pattern",
                "streams only with --source test)",
            ], completion: .choices(["auto", "test", "screen", "screen-node", "y4m:"]), config: true),
            OptionSpec("--screen-node", .required("NAME|ID"), [
                "capture this PipeWire Video/Source node (see --list-sources)",
            ], config: true),
            OptionSpec("--app-audio", .required("NODE"), [
                "sink whose monitor is the app audio (default: the default sink)",
            ], config: true),
            OptionSpec("--mic", .required("NODE"), [
                "microphone source node (default: the default source)",
            ], config: true),
            OptionSpec("--no-app-audio", ["no app-audio lane"], config: true),
            OptionSpec("--no-mic", ["no microphone lane"], config: true),
            OptionSpec("--cursor", .required("MODE"), [
                "embedded | hidden: the pointer in the captured screen (default embedded)",
            ], completion: .choices(["embedded", "hidden"]), config: true),
            OptionSpec("--pcm", .required("PATH|-"), [
                "raw PCM for the app-audio lane (with --source y4m:PATH)",
            ], completion: .file),
            OptionSpec("--pcm-format", .required("F"), [
                "the --pcm samples: s16le|f32le:44100|48000:CHANNELS",
                "(default s16le:48000:2)",
            ]),
            OptionSpec("--list-sources", [
                "print the PipeWire nodes that can be captured and exit",
            ]),
        ]),
        OptionSection(title: "Replay clips", options: [
            OptionSpec("--replay-seconds", .required("N"), [
                "keep the last N s (1..3600) in a fixed ring inside the memory budget;",
                "SIGUSR1 saves them as an MP4 clip; works with --no-publish alone",
            ], config: true),
            OptionSpec("--replay-dir", .required("DIR"), [
                "where clips go, as replay-YYYYMMDD-HHMMSS.mp4 (UTC) (default .)",
            ], completion: .directory, config: true),
            OptionSpec("--control", .required("PATH"), [
                "Unix socket (0600), JSON lines: save-replay [S] [PATH], stats, keyframe,",
                "set-bitrate KBPS, stop, subscribe (events); its client is broadcastctl(1)",
            ], completion: .file, config: true),
        ]),
        OptionSection(title: "Running", options: [
            OptionSpec("--config", .required("PATH"), [
                "read settings from PATH instead of $XDG_CONFIG_HOME/broadcast/config",
                "(~/.config/broadcast/config); --config none reads no file",
            ], completion: .file),
            OptionSpec("--print-config", [
                "print the merged settings, each with its origin, and exit (the key",
                "is never shown)",
            ]),
            OptionSpec("--duration", .required("SECONDS"), [
                "stop cleanly after this long",
            ]),
            OptionSpec("--stats-json", .required("PATH|-"), [
                "one JSON object per second (fps, kbps, drops, queue, RSS); - is stdout",
            ], completion: .file, config: true),
            OptionSpec("--heartbeat", .required("PATH"), [
                "bump PATH's mtime each second while the stream makes progress",
            ], completion: .file, config: true),
            OptionSpec("--check-heartbeat", .required("PATH"), [
                "only check PATH: exit 0 if fresh, else 1 (a liveness probe)",
            ], completion: .file),
            OptionSpec("--max-age", .required("S"), [
                "with --check-heartbeat: how old PATH may be (default 10)",
            ]),
            OptionSpec("--memory-budget", .required("SIZE"), [
                "hard memory budget: 50M, 512K, 1G, bytes (default 50M, or the cgroup's)",
            ], config: true),
            OptionSpec("--print-memory-plan", .optional("json"), [
                "print the memory plan for these settings and exit (=json: one JSON object)",
            ], completion: .choices(["json"])),
            OptionSpec("--quiet", [
                "no status line or notices",
            ], config: true),
            OptionSpec("--help", short: "-h", [
                "print this help and exit",
            ]),
            OptionSpec("--version", [
                "print the version and exit",
            ]),
            OptionSpec("--generate", .required("WHAT"), [
                "maintainers: print man, man-broadcastctl, bash, zsh, fish or options",
            ], completion: .choices(Generated.allCases.map(\.rawValue)), hidden: true),
        ]),
        OptionSection(title: "Test source (--source test) and its impairments", options: [
            OptionSpec("--test-pattern", .required("P"), [
                "moving (default: x264 spends its bitrate) | static (nearly free to encode)",
            ], completion: .choices(TestPatternKind.allCases.map(\.rawValue))),
            OptionSpec("--test-rotate-every", .required("SECONDS"), [
                "alternate the test frame between WxH and HxW (a rotating phone)",
            ]),
            OptionSpec("--test-pixel-format", .required("F"), [
                "i420 | bgrx: the test source's frames (default i420)",
            ], completion: .choices(["i420", "bgrx"])),
            OptionSpec("--test-audio-skew-ppm", .required("N"), ["audio clock skew against video, ppm"]),
            OptionSpec("--test-jitter-ms", .required("N"), ["random delivery jitter, ms"]),
            OptionSpec("--test-mic-delay-ms", .required("N"), ["start the mic lane this late, ms"]),
            OptionSpec("--test-app-buffer-frames", .required("N"), ["app-audio buffer size, frames"]),
            OptionSpec("--test-gap-at", .required("SECONDS"), ["stop the sources at this time (with --test-gap-ms)"]),
            OptionSpec("--test-gap-ms", .required("N"), ["for this long, ms"]),
        ]),
    ]

    /// Every option, in order, hidden ones included.
    package static let all: [OptionSpec] = sections.flatMap(\.options)

    /// The options a user sees (help, man page, completions).
    package static var visible: [OptionSpec] { all.filter { !$0.hidden } }

    /// The option called `name` (`--name` or its short alias), or nil.
    package static func named(_ name: String) -> OptionSpec? {
        all.first { $0.name == name || $0.short == name }
    }

    /// The option the config file's `key` sets, or nil if the file may not set it.
    package static func configurable(_ key: String) -> OptionSpec? {
        all.first { $0.inConfig && $0.key == key }
    }

    /// The URL schemes `--url` accepts, with what each carries; `--help` and the man page list them.
    package static let schemes: [(scheme: String, what: String)] = [
        ("rtmp", "FLV over RTMP"),
        ("rtmps", "FLV over RTMP in TLS"),
        ("srt", "MPEG-TS over SRT: srt://HOST:PORT[?streamid=ID&latency=MS]"),
        ("http", "WebRTC through WHIP (H.264 + Opus), the key as bearer token"),
        ("https", "WebRTC through WHIP in TLS"),
    ]

    /// What `--generate` prints.
    package enum Generated: String, CaseIterable, Sendable {
        case man, manBroadcastctl = "man-broadcastctl", bash, zsh, fish, options
    }
}
