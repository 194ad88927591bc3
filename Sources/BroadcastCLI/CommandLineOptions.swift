import BroadcastCapture
import BroadcastKit

/// Everything `broadcast` was asked to do, parsed and validated; nothing here touches the system.
package struct CommandLineOptions: Sendable {
    /// What `--source` asked for.
    package enum Source: Equatable, Sendable {
        case auto, test, screen, screenNode
        case y4m(String)
    }

    /// The defaults: local ingest, 720p30, auto source, 50 MB budget.
    package init() {}

    /// `--key`: the stream key given on the command line (scrubbed from argv after parsing).
    package var keyFromArgv: String?
    /// `--key-file`: a file whose first line is the stream key.
    package var keyFile: String?
    /// `--srt-passphrase-file`: a file whose first line is the SRT passphrase (every srt:// destination).
    package var srtPassphraseFile: String?
    /// `--url`, in the order given (it may repeat: one destination each, the first is the primary).
    package var urls: [DestinationSpec] = []
    /// The first `--url`'s ingest base URL.
    package var url: String? { urls.first?.url }
    /// `--require-all`: any lost destination fails the run.
    package var requireAll = false
    /// False with `--no-enhanced-rtmp-connect`: plain RTMP connect, no reconnect requests.
    package var enhancedRTMPConnect = true
    /// `--bitrate-follows`: the destination the adaptive bitrate follows.
    package var bitrateFollows = BitrateFollows.primary
    /// False with `--no-adaptive-bitrate`: the encoder keeps `--video-bitrate` (docs/bitrate-control.md).
    package var adaptiveBitrate = true
    /// `--service`: ingest URL and limits of a streaming service.
    package var service: ServicePreset?
    /// `--res`: output size.
    package var resolution = Resolution(width: 1280, height: 720)
    /// `--fps`: output frame rate.
    package var fps = 30
    /// `--video-bitrate` in kbps; nil picks one from the size and rate.
    package var videoKbps: Int?
    /// `--audio-codec`.
    package var audioCodec = AudioCodec.aac
    /// `--audio-codec` was given (a WHIP destination picks Opus unless AAC was asked for).
    package var audioCodecGiven = false
    /// `--audio-bitrate` in kbps; nil means 128 for AAC, 96 for Opus.
    package var audioKbps: Int?
    /// `--source`.
    package var source = Source.auto
    /// `--pcm`: raw PCM file (or `-`) for the app-audio lane.
    package var pcmPath: String?
    /// `--pcm-format`, e.g. `s16le:48000:2`.
    package var pcmFormat = "s16le:48000:2"
    /// Whether `--pcm-format` was given (it needs `--pcm`).
    package var pcmFormatGiven = false
    /// `--duration` in seconds.
    package var duration: Double?
    /// `--record`: also write the FLV here.
    package var recordPath: String?
    /// `--record-min-free` in bytes; nil means 10 minutes at the bitrates.
    package var recordMinFree: Int?
    /// `--ca-file`: extra CA (PEM) for rtmps://.
    package var caFile: String?
    /// False with `--no-publish`.
    package var publish = true
    /// `--replay-seconds`: keep the last N seconds for clips (SIGUSR1, `saveReplay`).
    package var replaySeconds: Int?
    /// `--replay-dir`: where clips go (default: the current directory).
    package var replayDirectory: String?
    /// `--control`: the control socket's path.
    package var controlPath: String?
    /// `--stats-json`: one JSON object per second goes here.
    package var statsJSON: String?
    /// `--heartbeat`: bumped once a second while the stream makes progress.
    package var heartbeatPath: String?
    /// `--check-heartbeat`: only check that file's age (with `--max-age`, default 10 s) and exit.
    package var checkHeartbeat: String?
    package var maxAge = 10.0
    /// `--memory-budget` in bytes; nil: the default, lowered to the cgroup limit (`MemoryBudget.resolve`).
    package var memoryBudget: Int?
    /// `--print-memory-plan`.
    package var printMemoryPlan = false
    /// `--print-memory-plan=json`: the plan as one JSON object (`MemoryPlan.json` plus the run's settings).
    package var memoryPlanJSON = false
    /// `--quiet`.
    package var quiet = false
    /// `--help`.
    package var help = false
    /// `--version`.
    package var version = false
    /// `--preset`: the x264 preset.
    package var preset = "veryfast"
    /// `--reconnect-attempts` (0 = forever, -1 = never): the library's default and range.
    package var reconnectAttempts = ReconnectPolicy.default.maxAttempts
    /// `--reconnect-delay` in seconds.
    package var reconnectDelay = ReconnectPolicy.default.initialDelaySeconds
    /// `--x264-threads`.
    package var x264Threads: Int?
    // PipeWire capture.
    /// `--screen-node`: PipeWire node name or id.
    package var screenNode: String?
    /// `--app-audio`: sink whose monitor is the app audio.
    package var appAudioNode: String?
    /// `--mic`: microphone node.
    package var micNode: String?
    /// `--no-app-audio`.
    package var noAppAudio = false
    /// `--no-mic`.
    package var noMic = false
    /// `--list-sources`.
    package var listSources = false
    /// `--cursor`: `embedded` or `hidden`.
    package var cursor = "embedded"
    // Test-source impairments.
    /// `--test-audio-skew-ppm`.
    package var skewPPM = 0.0
    /// `--test-jitter-ms`.
    package var jitterMs = 0.0
    /// `--test-mic-delay-ms`.
    package var micDelayMs = 0
    /// `--test-app-buffer-frames`.
    package var appBufferFrames: Int?
    /// `--test-gap-at` in seconds.
    package var gapAt: Double?
    /// `--test-gap-ms`.
    package var gapMs = 0
    /// `--test-pixel-format`.
    package var testPixelFormat = PixelFormat.i420
    /// `--test-pattern`: the test source's picture.
    package var testPattern = TestPatternKind.moving
    /// `--test-rotate-every`: seconds between WxH and HxW frames, or nil for no rotation.
    package var testRotateEvery: Double?

    /// `--config PATH`: the config file to read instead of the default one (`none`: no file).
    package var configPath: String?
    /// `--print-config`.
    package var printConfig = false
    /// `--generate WHAT`: print a man page, a completion script or the option list, and exit.
    package var generate: OptionTable.Generated?
    /// Where each setting given came from, by config key (`video-bitrate`); absent: the default.
    package var origins: [String: SettingOrigin] = [:]
    /// The text each setting was given as, by config key, for `--print-config` (`--key`'s is
    /// never kept; a URL's is redacted there). `url` holds one entry per destination.
    package var givenText: [String: [String]] = [:]

    /// Parses argv (without the program name); throws `UsageError` with a one-line message.
    package static func parse(_ args: [String]) throws -> CommandLineOptions {
        try parse(args, into: CommandLineOptions(), origin: .commandLine)
    }

    /// Parses `args` over `base` (the config file's settings), recording `origin` for each
    /// option given: a single-valued option replaces the base's value, and the first `--url`
    /// replaces the base's destinations rather than adding to them.
    package static func parse(_ args: [String], into base: CommandLineOptions,
                              origin: SettingOrigin) throws -> CommandLineOptions {
        var o = base
        var s = ArgumentScanner(args)
        while let given = try s.nextOption() {
            guard let spec = OptionTable.named(given) else { throw UsageError(unknownOption(given)) }
            let name = spec.name
            if name == "--url", let was = o.origins[spec.key], was.isConfig && !origin.isConfig {
                o.urls = []
                o.givenText[spec.key] = []
            }
            if name != "--url" { o.givenText[spec.key] = nil }
            o.origins[spec.key] = origin
            switch name {
            case "--key": o.keyFromArgv = try s.value()
            case "--key-file": o.keyFile = try s.value()
            case "--srt-passphrase-file": o.srtPassphraseFile = try s.value()
            case "--url": o.urls.append(try DestinationSpec.parse(try s.repeatableValue()))
            case "--require-all": try s.flag(); o.requireAll = true
            case "--no-enhanced-rtmp-connect": try s.flag(); o.enhancedRTMPConnect = false
            case "--no-adaptive-bitrate": try s.flag(); o.adaptiveBitrate = false
            case "--bitrate-follows":
                let v = try s.value()
                guard let f = BitrateFollows(rawValue: v) else {
                    throw UsageError("--bitrate-follows expects primary or slowest, got '\(v)'")
                }
                o.bitrateFollows = f
            case "--service": o.service = try ServicePreset.named(try s.value())
            case "--res": o.resolution = try Resolution(parsing: try s.value())
            case "--fps": o.fps = try s.int(BroadcastLimits.fps)
            case "--video-bitrate": o.videoKbps = try s.kbps(BroadcastLimits.videoBitrateKbps)
            case "--audio-bitrate":
                // Either codec's range here; the codec's own is checked once both flags are known.
                o.audioKbps = try s.kbps(BroadcastLimits.aacBitrateKbps.lowerBound...BroadcastLimits.opusBitrateKbps.upperBound)
            case "--audio-codec":
                let v = try s.value()
                guard let c = AudioCodec(rawValue: v.lowercased()) else {
                    throw UsageError("--audio-codec expects aac or opus, got '\(v)'")
                }
                o.audioCodec = c
                o.audioCodecGiven = true
            case "--source":
                let v = try s.value()
                switch v {
                case "auto": o.source = .auto
                case "test": o.source = .test
                case "screen": o.source = .screen
                case "screen-node": o.source = .screenNode
                default:
                    guard v.hasPrefix("y4m:"), v.count > 4 else {
                        throw UsageError("--source expects auto, test, screen, screen-node, y4m:PATH or y4m:-, got '\(v)'")
                    }
                    o.source = .y4m(String(v.dropFirst(4)))
                }
            case "--pcm": o.pcmPath = try s.value()
            case "--pcm-format": o.pcmFormat = try s.value(); o.pcmFormatGiven = true
            case "--duration": o.duration = try s.double(0.1...1_000_000)
            case "--record": o.recordPath = try s.value()
            case "--ca-file": o.caFile = try TLSOptions.validateCAFile(try s.value())
            case "--record-min-free": o.recordMinFree = try s.bytes()
            case "--no-publish": try s.flag(); o.publish = false
            case "--stats-json": o.statsJSON = try s.value()
            case "--replay-seconds": o.replaySeconds = try s.int(1...3600)
            case "--replay-dir": o.replayDirectory = try s.value()
            case "--control": o.controlPath = try s.value()
            case "--heartbeat": o.heartbeatPath = try s.value()
            case "--check-heartbeat": o.checkHeartbeat = try s.value()
            case "--max-age": o.maxAge = try s.double(0.1...86_400)
            case "--memory-budget": o.memoryBudget = try s.bytes()
            case "--print-memory-plan":
                switch s.inlineValue() {
                case nil, "text": o.printMemoryPlan = true
                case "json": o.printMemoryPlan = true; o.memoryPlanJSON = true
                case let v?: throw UsageError("--print-memory-plan takes no value or =json, got '\(v)'")
                }
            case "--preset":
                let v = try s.value()
                guard X264Preset(rawValue: v) != nil else { throw UsageError("--preset expects one of \(X264Preset.names), got '\(v)'") }
                o.preset = v
            case "--x264-threads": o.x264Threads = try s.int(1...16)
            case "--reconnect-attempts": o.reconnectAttempts = try s.reconnectAttempts()
            case "--reconnect-delay": o.reconnectDelay = try s.reconnectDelay()
            case "--quiet": try s.flag(); o.quiet = true
            case "--help": try s.flag(); o.help = true
            case "--version": try s.flag(); o.version = true
            case "--config": o.configPath = try s.value()
            case "--print-config": try s.flag(); o.printConfig = true
            case "--generate":
                let v = try s.value()
                guard let g = OptionTable.Generated(rawValue: v) else {
                    throw UsageError("--generate expects one of \(OptionTable.Generated.allCases.map(\.rawValue).joined(separator: ", ")), got '\(v)'")
                }
                o.generate = g
            case "--screen-node": o.screenNode = try s.value(); if o.source == .auto { o.source = .screenNode }
            case "--app-audio": o.appAudioNode = try s.value()
            case "--mic": o.micNode = try s.value()
            case "--no-app-audio": try s.flag(); o.noAppAudio = true
            case "--no-mic": try s.flag(); o.noMic = true
            case "--list-sources": try s.flag(); o.listSources = true
            case "--cursor":
                let v = try s.value()
                guard v == "embedded" || v == "hidden" else { throw UsageError("--cursor expects embedded or hidden, got '\(v)'") }
                o.cursor = v
            case "--test-audio-skew-ppm": o.skewPPM = try s.double(-10_000...10_000)
            case "--test-jitter-ms": o.jitterMs = try s.double(0...500)
            case "--test-mic-delay-ms": o.micDelayMs = try s.int(0...600_000)
            case "--test-app-buffer-frames": o.appBufferFrames = try s.int(128...AudioBuffer.maxFrames)
            case "--test-gap-at": o.gapAt = try s.double(0...1_000_000)
            case "--test-gap-ms": o.gapMs = try s.int(0...600_000)
            case "--test-pixel-format":
                let v = try s.value()
                // Only the formats the test source draws (TestSourceSettings.validate).
                guard let f = PixelFormat(rawValue: v), f == .i420 || f == .bgrx else {
                    throw UsageError("--test-pixel-format expects i420 or bgrx, got '\(v)'")
                }
                o.testPixelFormat = f
            case "--test-pattern":
                let v = try s.value()
                guard let k = TestPatternKind(rawValue: v) else {
                    throw UsageError("--test-pattern expects moving or static, got '\(v)'")
                }
                o.testPattern = k
            case "--test-rotate-every": o.testRotateEvery = try s.double(0.1...1_000_000)
            default:
                // The table lists it but this switch does not: a unit test parses every entry.
                throw UsageError("\(name) is listed but not handled (a bug)")
            }
            let text = s.takeValues()
            if name != "--key" { o.givenText[spec.key, default: []] += text }
        }
        if (o.gapAt == nil) != (o.gapMs == 0) {
            throw UsageError("--test-gap-at and --test-gap-ms go together")
        }
        return o
    }

    /// "unknown option '--vidoe-bitrate'; did you mean --video-bitrate?" (the name only, never a value).
    package static func unknownOption(_ name: String) -> String {
        let names = OptionTable.visible.map(\.name)
        if let near = Suggestion.closest(to: name, in: names) {
            return "unknown option '\(name)'; did you mean \(near)? (see --help)"
        }
        return "unknown option '\(name)' (see --help)"
    }
}
