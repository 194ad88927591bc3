import Testing
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

/// The six reproducers of the seeded fuzzer's fixed findings (`bk-fuzz repro NAME`, run in CI by
/// `scripts/fuzz --ci`), as unit tests so they also run under TSan and ASan. Each once crashed,
/// trapped or stalled the session; each must now survive, answer with the documented result, and
/// finish in well under the 5 s the reproducer allows.
@Suite(.serialized, .timeLimit(.minutes(1))) struct SeededFuzzReproducerTests {
    final class Inputs {
        let pixels = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 64 * 4, alignment: 64)
        let samples = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024 * 4, alignment: 16)
        init() {
            pixels.initializeMemory(as: UInt8.self, repeating: 128)
            samples.initializeMemory(as: UInt8.self, repeating: 0)
        }
        deinit { pixels.deallocate(); samples.deallocate() }
        func frame(pts: Int64, stride: Int = 64 * 4) -> SampleBuffer {
            .video(VideoFrame(width: 64, height: 64, format: .bgra, planes: (UnsafeRawPointer(pixels.baseAddress), nil, nil),
                              strides: (stride, 0, 0), planeSizes: (pixels.count, 0, 0), pts: pts))
        }
        func audio(pts: Int64) -> SampleBuffer {
            .audio(AudioBuffer(format: .s16, channels: 2, sampleRate: 48_000, frameCount: 1024,
                               data: UnsafeRawBufferPointer(samples), pts: pts))
        }
    }

    /// The reproducers' session: 160x96 ultrafast, AAC, no destination, no budget.
    static func session() throws -> BroadcastSession {
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 160, height: 96, fps: 30, bitrateKbps: 200, preset: "ultrafast", threads: 1, slicedThreads: false)
        cfg.audio = AudioEncoderSettings(codec: .aac, bitrateKbps: 64)
        cfg.destinations = [.discard]
        cfg.memoryBudgetBytes = 0
        let s = BroadcastSession(configuration: cfg)
        try s.start()
        return s
    }

    /// Finishes `s` and returns how long that took, in seconds.
    static func finish(_ s: BroadcastSession) -> Double {
        let t0 = MediaTime.now()
        s.finish()
        return Double(MediaTime.now() - t0) / 1e9
    }

    @Test func audioBeforeTheOriginIsNotMixedAtNegativeSlots() throws {
        // The first video frame fixes the origin; app audio captured 200 ms earlier once landed at
        // negative timeline positions, which AudioMixer indexed as negative ring slots (heap overwrite).
        let inputs = Inputs(), s = try Self.session()
        s.process(inputs.frame(pts: 10_000_000_000), type: .video)
        for k in 0..<200 { s.process(inputs.audio(pts: 9_800_000_000 + Int64(k) * 21_333_333), type: .appAudio) }
        #expect(Self.finish(s) < 5)
    }

    @Test func oneRowWithAHugeStrideIsMalformed() throws {
        // One row needs only minStride bytes, so a 2^40 stride passed validate() and FrameConverter's
        // Int32(stride) trapped. Strides must fit libyuv's 32-bit arguments.
        let inputs = Inputs(), s = try Self.session()
        let r = s.process(.video(VideoFrame(width: 33, height: 1, format: .bgrx, planes: (UnsafeRawPointer(inputs.pixels.baseAddress), nil, nil),
                                            strides: (1 << 40, 0, 0), planeSizes: (132, 0, 0), pts: 1)), type: .video)
        #expect(r == .dropped(.malformed))
        #expect(Self.finish(s) < 5)
    }

    @Test func strideOverflowIsMalformed() throws {
        // VideoFrame.validate computed stride * (rows - 1) + minStride without overflow checks.
        let inputs = Inputs(), s = try Self.session()
        #expect(s.process(inputs.frame(pts: 1, stride: Int.max / 2), type: .video) == .dropped(.malformed))
        #expect(Self.finish(s) < 5)
    }

    @Test func timestampOverflowDoesNotTrap() throws {
        // StreamClock.timelineNs computed pts - origin without overflow checks.
        let inputs = Inputs(), s = try Self.session()
        #expect(s.process(inputs.frame(pts: -2), type: .video) == .accepted)
        s.process(inputs.frame(pts: Int64.max), type: .video)
        #expect(Self.finish(s) < 5)
    }

    @Test func audioClockOverflowDoesNotTrap() throws {
        // AudioClock.place multiplied timeline ns by 48000, which overflows past ~53 hours.
        let inputs = Inputs(), s = try Self.session()
        #expect(s.process(inputs.audio(pts: 0), type: .appAudio) == .accepted)
        s.process(inputs.audio(pts: 60 * 3600 * 1_000_000_000), type: .appAudio)
        #expect(Self.finish(s) < 5)
    }

    @Test func anHourGapBetweenSourcesIsNotFilledWithSilence() throws {
        // Mic one hour ahead of app audio: the mixer once encoded the whole hour of silence in between.
        let inputs = Inputs(), s = try Self.session()
        for k in 0..<20 {
            s.process(inputs.audio(pts: Int64(k) * 21_333_333), type: .appAudio)
            s.process(inputs.audio(pts: 3600 * 1_000_000_000 + Int64(k) * 21_333_333), type: .micAudio)
        }
        #expect(Self.finish(s) < 5)
    }
}
