import Testing
@testable import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct AudioClockTests {
    /// Simulates a device whose sample clock runs `ppm` fast with ±jitter on capture times;
    /// returns the worst |position - truth| after the filter settles, in ms.
    func worstError(ppm: Double, jitterMs: Double, frames: Int, seconds: Double, seed: UInt64) -> Double {
        var clock = AudioClock()
        var rng = SplitMixRandom(seed: seed)
        var sampleCount: Int64 = 0
        var worst = 0.0
        let total = Int64(seconds * 48_000)
        while sampleCount < total {
            // True capture time of this buffer's first sample.
            let trueNs = Double(sampleCount) / (48_000 * (1 + ppm / 1e6)) * 1e9
            let jitter = Double.random(in: -jitterMs...jitterMs, using: &rng) * 1e6
            let pos = clock.place(timelineNs: Int64(trueNs + jitter), frames: frames)
            let truthPos = trueNs * 48_000 / 1e9
            if sampleCount > 48_000 * 10 { worst = max(worst, abs(Double(pos) - truthPos) / 48) }
            sampleCount += Int64(frames)
        }
        return worst
    }

    @Test func tracksSkewWithJitterWithoutAccumulating() {
        for seed: UInt64 in [1, 2, 3] {
            let e = worstError(ppm: 300, jitterMs: 15, frames: 1024, seconds: 600, seed: seed)
            #expect(e < 8, "seed \(seed): worst error \(e) ms")
        }
        #expect(worstError(ppm: -500, jitterMs: 5, frames: 128, seconds: 120, seed: 9) < 8)
        #expect(worstError(ppm: 0, jitterMs: 0, frames: 22_050, seconds: 120, seed: 4) < 1)
    }

    @Test func reanchorsAfterGap() {
        var clock = AudioClock()
        var p = clock.place(timelineNs: 0, frames: 1024)
        #expect(p == 0)
        p = clock.place(timelineNs: 21_333_333, frames: 1024)
        #expect(p == 1024)
        // 3 s pause: the next buffer lands at its capture time, not at the sample count.
        p = clock.place(timelineNs: 3_042_666_666, frames: 1024)
        #expect(abs(p - 146_048) <= 1)
        #expect(clock.reanchors == 1)
    }
}
