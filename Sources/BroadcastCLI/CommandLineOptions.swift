import BroadcastKit

/// Everything `broadcast` was asked to do, parsed and validated; nothing here touches the system.
public struct CommandLineOptions: Sendable {
    /// What `--source` asked for.
    public enum Source: Equatable, Sendable {
        case auto, test, screen, screenNode
        case y4m(String)
    }

    public init() {}

    public var keyFromArgv: String?
    public var keyFile: String?
    public var url: String?
    public var service: ServicePreset?
    public var resolution = Resolution(width: 1280, height: 720)
    public var fps = 30
    public var videoKbps: Int?
    public var audioCodec = AudioCodec.aac
    public var audioKbps: Int?
    public var source = Source.auto
    public var pcmPath: String?
    public var pcmFormat = "s16le:48000:2"
    public var duration: Double?
    public var recordPath: String?
    public var recordMinFree: Int?
    public var caFile: String?
    public var publish = true
    public var statsJSON: String?
    public var memoryBudget = 50 << 20
    public var printMemoryPlan = false
    public var quiet = false
    public var help = false
    public var version = false
    public var preset = "veryfast"
    public var reconnectAttempts = 20
    public var reconnectDelay = 2.0
    public var x264Threads: Int?
    // PipeWire capture.
    public var screenNode: String?
    public var appAudioNode: String?
    public var micNode: String?
    public var noAppAudio = false
    public var noMic = false
    public var listSources = false
    public var cursor = "embedded"
    // Test-source impairments.
    public var skewPPM = 0.0
    public var jitterMs = 0.0
    public var micDelayMs = 0
    public var appBufferFrames: Int?
    public var gapAt: Double?
    public var gapMs = 0
    public var testPixelFormat = PixelFormat.i420

    /// Parses argv (without the program name); throws `UsageError` with a one-line message.
    public static func parse(_ args: [String]) throws -> CommandLineOptions {
        var o = CommandLineOptions()
        var s = ArgumentScanner(args)
        while let name = try s.nextOption() {
            switch name {
            case "--key": o.keyFromArgv = try s.value()
            case "--key-file": o.keyFile = try s.value()
            case "--url": o.url = try s.value()
            case "--service": o.service = try ServicePreset.named(try s.value())
            case "--res": o.resolution = try Resolution(parsing: try s.value())
            case "--fps": o.fps = try s.int(1...120)
            case "--video-bitrate": o.videoKbps = try s.kbps(100...50_000)
            case "--audio-bitrate": o.audioKbps = try s.kbps(16...512)
            case "--audio-codec":
                let v = try s.value()
                guard let c = AudioCodec(rawValue: v.lowercased()) else {
                    throw UsageError("--audio-codec expects aac or opus, got '\(v)'")
                }
                o.audioCodec = c
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
            case "--pcm-format": o.pcmFormat = try s.value()
            case "--duration": o.duration = try s.double(0.1...1_000_000)
            case "--record": o.recordPath = try s.value()
            case "--ca-file": o.caFile = try TLSOptions.validateCAFile(try s.value())
            case "--record-min-free": o.recordMinFree = try s.bytes()
            case "--no-publish": try s.flag(); o.publish = false
            case "--stats-json": o.statsJSON = try s.value()
            case "--memory-budget": o.memoryBudget = try s.bytes()
            case "--print-memory-plan": try s.flag(); o.printMemoryPlan = true
            case "--preset":
                let v = try s.value()
                let allowed = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]
                guard allowed.contains(v) else { throw UsageError("--preset expects one of \(allowed.joined(separator: ", ")), got '\(v)'") }
                o.preset = v
            case "--x264-threads": o.x264Threads = try s.int(1...16)
            case "--reconnect-attempts": o.reconnectAttempts = try s.int(0...1_000_000)
            case "--reconnect-delay": o.reconnectDelay = try s.double(0.1...300)
            case "--quiet": try s.flag(); o.quiet = true
            case "--help", "-h": o.help = true
            case "--version": o.version = true
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
                guard let f = PixelFormat(rawValue: v) else {
                    throw UsageError("--test-pixel-format expects one of \(PixelFormat.allCases.map(\.rawValue).joined(separator: ", ")), got '\(v)'")
                }
                o.testPixelFormat = f
            default:
                throw UsageError("unknown option '\(name)' (see --help)")
            }
        }
        if (o.gapAt == nil) != (o.gapMs == 0) {
            throw UsageError("--test-gap-at and --test-gap-ms go together")
        }
        return o
    }
}
