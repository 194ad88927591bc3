import Testing
@testable import BroadcastKit

final class MixCollector: @unchecked Sendable {
    var positions: [Int64] = []
    var firstSample: [Float] = []
    var peak: [Float] = []
}

@Suite struct AudioMixerTests {
    func buffer(_ frames: Int, value: Float) -> [Float] { Array(repeating: value, count: frames * 2) }

    @Test func mixesAlignedSourcesAndFillsGapsWithSilence() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { p, pos in
            c.positions.append(pos)
            c.firstSample.append(p[0])
            var pk: Float = 0
            for i in 0..<2048 { pk = max(pk, abs(p[i])) }
            c.peak.append(pk)
        }
        let now: Int64 = 1_000_000_000
        // App from 0, in 480-frame buffers; mic starts late at 4096 with 128-frame buffers.
        var appPos: Int64 = 0
        var micPos: Int64 = 4096
        while appPos < 48_000 {
            let a = buffer(480, value: 0.25)
            a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: appPos, nowNs: now) }
            appPos += 480
            while micPos < appPos {
                let b = buffer(128, value: 0.5)
                b.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: micPos, nowNs: now) }
                micPos += 128
            }
        }
        // Continuous output: positions step by exactly 1024 from 0.
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
        #expect(c.positions.count >= 40)
        // Before the mic starts: app only; after: the sum.
        #expect(abs(c.firstSample[0] - 0.25) < 1e-6)
        #expect(abs(c.firstSample[10] - 0.75) < 1e-6)
    }

    @Test func stalledSourceDoesNotHoldOutputBeyondWait() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 960) { _, pos in c.positions.append(pos) }
        // Both sources active, then the mic stops delivering (still "recent").
        let z = buffer(960, value: 0)
        z.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: 0, nowNs: 0) }
        var pos: Int64 = 0
        for _ in 0..<50 {
            z.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: 1_000_000) }
            pos += 960
        }
        // Output reaches within the 150 ms (7200-frame) wait of the newest app sample.
        let emittedEnd = (c.positions.last ?? -960) + 960
        #expect(pos - emittedEnd <= 7_200 + 960)
    }

    @Test func lateSamplesAreDiscardedNotMixedBackwards() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { _, pos in c.positions.append(pos) }
        let a = buffer(4096, value: 0.1)
        a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 0, nowNs: 0) }
        a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 1000, nowNs: 0) }
        #expect(m.lateFramesDiscarded == 3096)
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
    }
}

@Suite struct AudioMixerPauseTests {
    @Test func pauseOfEverySourceFlushesPaddedFrame() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { _, pos in c.positions.append(pos) }
        let b = [Float](repeating: 0.2, count: 480 * 2)
        var pos: Int64 = 0
        var now: Int64 = 0
        for _ in 0..<20 {
            b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: now) }
            b.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: pos, nowNs: now) }
            pos += 480
            now += 10_000_000
        }
        // 9600 written: 9 whole frames out, 384 samples waiting.
        #expect(c.positions.count == 9)
        m.poll(nowNs: now + 20_000_000)
        #expect(c.positions.count == 9, "not idle yet")
        m.poll(nowNs: now + 100_000_000)
        #expect(c.positions.count == 10, "the partial frame is padded and sent during the pause")
        // After the pause, the timeline continues without overlap.
        b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 48_000 * 3, nowNs: now + 3_000_000_000) }
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
    }
}
