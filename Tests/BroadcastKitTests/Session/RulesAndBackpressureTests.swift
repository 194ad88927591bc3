import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// The library's own rules (BroadcastLimits through validate()) and its two back-pressure modes.
@Suite(.serialized, .timeLimit(.minutes(1))) struct RulesAndBackpressureTests {
    private func session(_ mode: Backpressure) throws -> BroadcastSession {
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 800, preset: "veryfast")
        cfg.destinations = [.discard]
        cfg.memoryBudgetBytes = 0
        cfg.backpressure = mode
        let s = BroadcastSession(configuration: cfg)
        try s.start()
        return s
    }

    @Test func blockModeEncodesEveryFrameOfAFastProducer() throws {
        let frames = NoiseFrames()
        var results: [Backpressure: (accepted: Int, busy: Int)] = [:]
        for mode in [Backpressure.drop, .block] {
            let s = try session(mode)
            var accepted = 0, busy = 0
            for i in 0..<120 {
                switch s.process(.video(frames.frame(i, pts: 1_000_000_000 + Int64(i) * 33_333_333)), type: .video) {
                case .accepted: accepted += 1
                case .dropped(.encoderBusy): busy += 1
                default: break
                }
            }
            s.finish()
            results[mode] = (accepted, busy)
            if mode == .block { #expect(s.stats.snapshot().videoFramesEncoded == 120) }
        }
        #expect(results[.block]! == (120, 0))
        #expect(results[.drop]!.busy > 0, "the producer did not outpace the encoder: this run shows nothing")
    }

    @Test func blockModeWaitsForTheAudioRing() throws {
        // 10 s of 48 kHz stereo in 1024-frame buffers, pushed at once: the ~1 s ring fills; block waits.
        let samples = UnsafeMutableBufferPointer<Float>.allocate(capacity: 1024 * 2)
        samples.initialize(repeating: 0.05)
        defer { samples.deallocate() }
        for mode in [Backpressure.drop, .block] {
            let s = try session(mode)
            var full = 0
            for i in 0..<469 {
                let buf = AudioBuffer(format: .f32, channels: 2, sampleRate: 48_000, frameCount: 1024,
                                      data: UnsafeRawBufferPointer(samples), pts: 1_000_000_000 + Int64(i) * 21_333_333)
                if s.process(.audio(buf), type: .appAudio) == .dropped(.audioLaneFull) { full += 1 }
            }
            s.finish()
            if mode == .block { #expect(full == 0) } else { #expect(full > 0, "the ring never filled: this run shows nothing") }
        }
    }

    @Test func validateNamesTheValueAndTheLibrarysRange() {
        var c = BroadcastConfiguration.default
        #expect(throws: Never.self) { try c.validate() }
        c.video.width = 641
        #expect(throws: BroadcastError.configuration("video size 641x720: width and height must be even, 16...3840 x 16...2160")) {
            try c.validate()
        }
        c = .default
        c.video.fps = BroadcastLimits.fps.upperBound + 1
        #expect(throws: BroadcastError.configuration("fps 121 outside 1...120")) { try c.validate() }
        c = .default
        c.video.preset = "placebo"
        #expect(throws: BroadcastError.self) { try c.validate() }
        c = .default
        c.audio = AudioEncoderSettings(codec: .aac, bitrateKbps: BroadcastLimits.aacBitrateKbps.upperBound + 1)
        #expect(throws: BroadcastError.self) { try c.validate() }
        c.audio = AudioEncoderSettings(codec: .opus, bitrateKbps: BroadcastLimits.aacBitrateKbps.upperBound + 1)
        #expect(throws: Never.self) { try c.validate() }
        // prepare() refuses before opening anything.
        var bad = BroadcastConfiguration.default
        bad.video.bitrateKbps = 5
        bad.destinations = [.discard]
        #expect(throws: BroadcastError.self) { try BroadcastSession(configuration: bad).prepare() }
    }

    @Test func theSendQueueIsSizedByBitrateUnlessGiven() {
        var c = BroadcastConfiguration.default
        #expect(c.sendQueueBytes == CongestionPolicy.sendQueueBytes(videoKbps: 2500, audioKbps: 128))
        c.video.bitrateKbps = 100
        c.hasAudio = false
        #expect(c.sendQueueBytes == 512 << 10)
        c.congestion = CongestionPolicy(maxBytes: 3 << 20)
        #expect(c.sendQueueBytes == 3 << 20)
        #expect(X264Preset.allCases.map(\.rawValue) == ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"])
    }
}
