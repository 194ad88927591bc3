import COpus
import Glibc
import Synchronization
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

/// What the mixer handed the encoder, and what the encoder made of it.
final class EncodedAudio: @unchecked Sendable {
    var mixedFrames = 0
    var nonFiniteMixed = 0
    var mixedPeak: Float = 0
    var packets = 0
    var decodedFrames = 0
    var nonFiniteDecoded = 0
    var decodedPeak: Float = 0
    var encodeFailures = 0
}

/// Interleaved float audio with a 1 kHz tone at 0.25 and NaN, +inf and -inf written over some samples.
private func poisonedBuffer(frames: Int, channels: Int, start: Int, rate: Int, poison: Bool) -> (samples: [Float], bad: Int) {
    var out = [Float](repeating: 0, count: frames * channels)
    for i in 0..<frames {
        let v = 0.25 * sinf(2 * .pi * 1000 * Float(start + i) / Float(rate))
        for c in 0..<channels { out[i * channels + c] = v }
    }
    guard poison else { return (out, 0) }
    let marks: [Float] = [.nan, .infinity, -.infinity, .signalingNaN, -.nan]
    var bad = 0
    for (k, i) in stride(from: 7, to: out.count, by: out.count / 5 + 1).enumerated() {
        out[i] = marks[k % marks.count]
        bad += 1
    }
    return (out, bad)
}

/// NaN/Inf float samples on an audio lane: replaced with silence and counted
/// (`audioNonFiniteSamples`); nothing non-finite reaches the mixer's output or the encoder, the
/// tone around them still arrives, and the encoders neither trap (AAC's float-to-16-bit
/// conversion did on NaN) nor get poisoned (Opus decodes finite audio with the tone in it).
@Suite(.timeLimit(.minutes(5)), .serialized) struct NonFiniteAudioTests {
    @Test(arguments: [AudioCodec.aac, .opus], [(48_000, 2), (48_000, 1), (44_100, 2)])
    func nonFiniteSamplesBecomeCountedSilence(codec: AudioCodec, input: (rate: Int, channels: Int)) throws {
        let encoder: AudioEncoder = codec == .aac ? try AACEncoder(settings: .init(codec: .aac))
                                                 : try BroadcastKit.OpusEncoder(settings: .init(codec: .opus))
        var error: Int32 = 0
        let opus = codec == .opus ? opus_decoder_create(48_000, 2, &error) : nil
        defer { if let opus { opus_decoder_destroy(opus) } }
        let out = EncodedAudio()
        let decoded = UnsafeMutablePointer<Float>.allocate(capacity: 960 * 2)
        defer { decoded.deallocate() }
        let mixer = AudioMixer(frameSize: encoder.frameSize) { p, position in
            out.mixedFrames += 1
            for i in 0..<(encoder.frameSize * 2) {
                if !p[i].isFinite { out.nonFiniteMixed += 1 } else { out.mixedPeak = max(out.mixedPeak, abs(p[i])) }
            }
            let ok = encoder.encode(p, timestampMs: position * 1000 / 48_000) { pkt in
                out.packets += 1
                guard let opus else { return }
                let n = opus_decode_float(opus, pkt.data.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                          Int32(pkt.data.count), decoded, 960, 0)
                guard n > 0 else { return }
                out.decodedFrames += Int(n)
                for i in 0..<(Int(n) * 2) {
                    if !decoded[i].isFinite { out.nonFiniteDecoded += 1 } else { out.decodedPeak = max(out.decodedPeak, abs(decoded[i])) }
                }
            }
            if !ok { out.encodeFailures += 1 }
        }
        let stats = BroadcastStats()
        let lane = AudioLane(lane: .appAudio, mixer: mixer, stats: stats)
        if input.rate != 48_000 { try lane.prepareResampler() }
        try lane.start()
        let frames = 480
        var injected = 0
        for k in 0..<100 {
            let (samples, bad) = poisonedBuffer(frames: frames, channels: input.channels, start: k * frames, rate: input.rate,
                                                poison: k % 4 == 1)
            injected += bad
            let pts = Int64(k) * Int64(frames) * 1_000_000_000 / Int64(input.rate) + 1_000_000
            var result = ProcessResult.notRunning
            repeat {
                result = samples.withUnsafeBytes { bytes in
                    lane.process(AudioBuffer(format: .f32, channels: input.channels, sampleRate: input.rate, frameCount: frames,
                                             data: bytes, pts: pts)) { $0 }
                }
                if result == .dropped(.audioLaneFull) { usleep(2000) }   // the lane thread catches up
            } while result == .dropped(.audioLaneFull)
            #expect(result == .accepted, "buffer \(k)")
        }
        lane.finish()
        mixer.flush()
        #expect(injected > 100)
        #expect(stats.snapshot().audioNonFiniteSamples == injected, "every NaN/Inf counted once")
        #expect(stats.snapshot().drops(.malformed) == 0, "replaced, not dropped")
        let expectedFrames = Double(100 * frames) * 48_000 / Double(input.rate) / Double(encoder.frameSize)
        #expect(Double(out.mixedFrames) >= 0.9 * expectedFrames, "\(out.mixedFrames) mixer frames of \(expectedFrames)")
        #expect(out.nonFiniteMixed == 0, "\(out.nonFiniteMixed) non-finite samples reached the encoder")
        // 0.25 tone; a silenced sample is a step the 44.1 kHz resampler rings on a little.
        #expect(out.mixedPeak > 0.2 && out.mixedPeak < 0.5, "the tone still flows around the silenced samples: peak \(out.mixedPeak)")
        #expect(out.encodeFailures == 0)
        #expect(out.packets >= out.mixedFrames - 3, "\(out.packets) packets for \(out.mixedFrames) frames")
        if codec == .opus {
            #expect(out.nonFiniteDecoded == 0)
            #expect(out.decodedFrames >= (out.packets - 1) * 960)
            #expect(out.decodedPeak > 0.15 && out.decodedPeak < 0.4, "decoded tone peak \(out.decodedPeak)")
        }
    }

    /// Through a whole session (lanes, mixer, AAC, muxer, a destination): accepted, counted, sent.
    @Test func sessionCountsAndKeepsStreaming() throws {
        var cfg = BroadcastConfiguration.default
        cfg.hasVideo = false
        cfg.destinations = [.discard]
        cfg.memoryBudgetBytes = 0
        let session = BroadcastSession(configuration: cfg)
        try session.start()
        var injected = 0
        for k in 0..<60 {
            let (samples, bad) = poisonedBuffer(frames: 1024, channels: 2, start: k * 1024, rate: 48_000, poison: k % 2 == 0)
            injected += bad
            var r = ProcessResult.notRunning
            repeat {
                r = samples.withUnsafeBytes {
                    session.process(.audio(AudioBuffer(format: .f32, channels: 2, sampleRate: 48_000, frameCount: 1024, data: $0,
                                                       pts: 1_000_000 + Int64(k) * 21_333_333)), type: .micAudio)
                }
                if r == .dropped(.audioLaneFull) { usleep(2000) }
            } while r == .dropped(.audioLaneFull)
            #expect(r == .accepted)
        }
        session.finish()
        let s = session.stats.snapshot()
        #expect(s.audioNonFiniteSamples == injected)
        #expect(s.audioFramesSent > 40, "\(s.audioFramesSent) AAC frames sent")
        #expect(s.drops(.malformed) == 0 && s.drops(.encoderError) == 0)
    }
}
