import BroadcastKit

/// The `--help` text and `--version` line.
package enum Usage {
    /// Printed by `--version`.
    package static let version = "broadcast \(BuildVersion.description)"

    /// Printed by `--help`.
    package static let text = """
    Usage: broadcast [options]

    Streams video, app audio and mic audio as H.264 + AAC/Opus in FLV over RTMP, inside a hard
    memory budget. With no options it streams the best available source to the local ingest.
    A RATE without a unit is kbps; each option that takes a value may be given once, except --url.

    Destination
      --key KEY              stream key (visible to local users; prefer $STREAM_KEY or --key-file)
      --key-file PATH        read the stream key from a file (a regular text file, at most 4096 bytes)
      --url URL              ingest base URL (else $BROADCAST_URL, else rtmp://127.0.0.1:1935/live);
                             srt://HOST:PORT[?streamid=ID&latency=MS] sends MPEG-TS over SRT to a
                             listener (the key fills streamid when the URL has none)
      --srt-passphrase-file PATH  SRT encryption passphrase (10-79 characters) from a file
      --url URL[,key-file=PATH][,service=NAME]
                             may repeat: one encode to several destinations (the first is the
                             primary); each may have its own key file and service limits
      --service NAME         twitch | youtube | facebook | kick: ingest URL and recommended limits
      --require-all          any lost destination fails the run (else only losing every RTMP/SRT one)
      --bitrate-follows W    primary | slowest: what the adaptive bitrate follows (default primary)
      --no-enhanced-rtmp-connect  plain RTMP connect: no E-RTMP capsEx, server reconnect requests ignored
      --ca-file PATH         also trust this CA (PEM) for rtmps:// and https:// (the system store is always used)
      --record PATH          also write the stream to PATH: FLV, or fragmented MP4 when PATH ends in .mp4
      --record-min-free SIZE refuse to start with less free space (default: 10 min at the bitrates)
      --no-publish           do not connect anywhere (use with --record)
      --reconnect-attempts N retries after a lost connection, 0 = forever   (default 20)
      --reconnect-delay S    first retry delay, then x1.5 with jitter, capped at 30 s (default 2)

    Video and audio
      --res R                360p | 480p | 720p | 1080p | WxH            (default 720p)
      --fps N                frames per second                             (default 30)
      --video-bitrate RATE   x264 target, VBV-capped: 2500, 2500k, 2.5M    (default by --res)
      --preset NAME          x264 preset: ultrafast .. medium              (default veryfast)
      --audio-codec C        aac | opus                                    (default aac)
      --audio-bitrate RATE   audio bitrate, e.g. 128k                      (default 128 AAC, 96 Opus)

    Source
      --source S             auto | test | screen | screen-node | y4m:PATH | y4m:-   (default auto)
      --pcm PATH|-           raw PCM for the app-audio lane (with y4m); --pcm-format s16le:48000:2
      --screen-node NAME|ID  capture a PipeWire Video/Source node
      --app-audio NODE       sink whose monitor is the app audio (default: the default sink)
      --mic NODE             microphone source node (default: the default source)
      --no-app-audio         --no-mic        --cursor embedded|hidden
      --list-sources         print the PipeWire nodes that can be captured and exit

    Replay clips
      --replay-seconds N     keep the last N s (1..3600) in a fixed ring inside the memory budget;
                             SIGUSR1 saves them as an MP4 clip; works with --no-publish alone
      --replay-dir DIR       where clips go, as replay-YYYYMMDD-HHMMSS.mp4 (UTC)  (default .)
      --control PATH         Unix socket (0600), JSON lines: save-replay [S] [PATH], stats, keyframe,
                             set-bitrate KBPS, stop, subscribe (events); client: broadcastctl

    Running
      --duration SECONDS     stop cleanly after this long
      --stats-json PATH|-    one JSON object per second (fps, kbps, drops, queue, RSS); - is stdout
      --heartbeat PATH       bump PATH's mtime each second while the stream makes progress
      --check-heartbeat PATH only check PATH: exit 0 if fresh, else 1 (a liveness probe)
      --max-age S            with --check-heartbeat: how old PATH may be          (default 10)
      --memory-budget SIZE   hard memory budget: 50M, 512K, 1G, bytes      (default 50M)
      --print-memory-plan[=json]  print the memory plan for these settings and exit
                             (=json: one JSON object, for tools)
      --quiet                no status line or notices
      --help, --version

    Test-source impairments (reproduce hard sync cases)
      --test-audio-skew-ppm N  --test-jitter-ms N  --test-mic-delay-ms N
      --test-app-buffer-frames N  --test-gap-at SECONDS --test-gap-ms N  --test-pixel-format F
      --test-pattern moving|static   moving (default) makes x264 spend its bitrate; static is nearly free
      --test-rotate-every SECONDS    alternate the test frame between WxH and HxW (a rotating phone)

    Exit codes
      0  clean stop (duration reached, end of input, SIGINT, SIGTERM or SIGHUP)
      1  --check-heartbeat: the heartbeat file is missing or too old
      2  bad usage or configuration (flags, values, input format, memory plan, an output
         path that is a link, FIFO or device, an unreadable input)
      3  could not connect or publish (unreachable, key or app rejected, TLS, portal denied)
      4  failure while streaming (every RTMP destination lost, or any with --require-all;
         a run that ends while reconnecting, with how long the stream was down; an input
         error mid-stream; a recording that lost data, its end included)
    """
}
