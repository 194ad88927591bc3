import BroadcastCapture
import BroadcastKit

/// Everything `broadcast` was asked to do, parsed and validated; nothing here touches the system.
struct CommandLineOptions {
    enum Source: Equatable {
        case auto, test, screen, screenNode
        case y4m(String)
    }

    var keyFromArgv: String?
    var keyFile: String?
    var url: String?
    var service: ServicePreset?
    var resolution = Resolution(width: 1280, height: 720)
    var fps = 30
    var videoKbps: Int?
    var audioCodec = AudioCodec.aac
    var audioKbps: Int?
    var source = Source.auto
    var pcmPath: String?
    var pcmFormat = "s16le:48000:2"
    var duration: Double?
    var recordPath: String?
    var recordMinFree: Int?
    var caFile: String?
    var publish = true
    var statsJSON: String?
    var memoryBudget = 50 << 20
    var printMemoryPlan = false
    var quiet = false
    var help = false
    var version = false
    var preset = "veryfast"
    var reconnectAttempts = 20
    var reconnectDelay = 2.0
    var x264Threads: Int?
    // PipeWire capture.
    var screenNode: String?
    var appAudioNode: String?
    var micNode: String?
    var noAppAudio = false
    var noMic = false
    var listSources = false
    var cursor = "embedded"
    // Test-source impairments.
    var skewPPM = 0.0
    var jitterMs = 0.0
    var micDelayMs = 0
    var appBufferFrames: Int?
    var gapAt: Double?
    var gapMs = 0
    var testPixelFormat = PixelFormat.i420
    // Test-source picture: pattern kind and mid-stream rotation.
    var testPattern = TestPatternKind.moving
    var testRotateEvery: Double?

    static func parse(_ args: [String]) throws -> CommandLineOptions {
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
            case "--video-bitrate": o.videoKbps = try s.int(100...50_000)
            case "--audio-bitrate": o.audioKbps = try s.int(16...512)
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
            case "--record-min-free": o.recordMinFree = try parseBytes(try s.value(), option: name)
            case "--no-publish": try s.flag(); o.publish = false
            case "--stats-json": o.statsJSON = try s.value()
            case "--memory-budget": o.memoryBudget = try parseBytes(try s.value(), option: name)
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
            case "--test-pattern":
                let v = try s.value()
                guard let k = TestPatternKind(rawValue: v) else {
                    throw UsageError("--test-pattern expects moving or static, got '\(v)'")
                }
                o.testPattern = k
            case "--test-rotate-every": o.testRotateEvery = try s.double(0.1...1_000_000)
            default:
                throw UsageError("unknown option '\(name)' (see --help)")
            }
        }
        if (o.gapAt == nil) != (o.gapMs == 0) {
            throw UsageError("--test-gap-at and --test-gap-ms go together")
        }
        return o
    }

    /// Parses sizes like 50M, 512K, 1G or plain bytes.
    static func parseBytes(_ v: String, option: String) throws -> Int {
        let upper = v.uppercased()
        var digits = upper
        var scale = 1
        if let last = upper.last, "KMG".contains(last) {
            digits = String(upper.dropLast())
            scale = last == "K" ? 1 << 10 : (last == "M" ? 1 << 20 : 1 << 30)
        } else if upper.hasSuffix("MB") {
            digits = String(upper.dropLast(2)); scale = 1 << 20
        }
        guard let n = Double(digits), n >= 0, n * Double(scale) <= Double(1 << 40) else {
            throw UsageError("\(option) expects a size like 50M, got '\(v)'")
        }
        return Int(n * Double(scale))
    }
}
