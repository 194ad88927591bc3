import Testing
@testable import BroadcastKit

@Suite(.timeLimit(.minutes(1))) struct FrameRateGateTests {
    /// Feeds `seconds` of a source at `sourceHz` with ±`jitterMs` on each PTS (seeded) through a
    /// 30 fps gate; returns the stamps of the admitted pictures, in ns.
    func stamps(sourceHz: Double, jitterMs: Double = 1, seconds: Double = 60, fps: Int = 30, seed: UInt64 = 7) -> [Int64] {
        var gate = FrameRateGate(fps: fps)
        var rng = SeededRandom(state: seed)
        var out: [Int64] = []
        let base: Double = 5e12  // an absolute CLOCK_MONOTONIC-like origin
        let n = Int(seconds * sourceHz)
        var last = Int64.min
        for i in 0..<n {
            let jitter = jitterMs > 0 ? Double.random(in: -jitterMs...jitterMs, using: &rng) * 1e6 : 0
            var pts = Int64(base + Double(i) / sourceHz * 1e9 + jitter)
            pts = max(pts, last + 1)
            last = pts
            if let s = gate.stamp(pts) { out.append(s) }
        }
        return out
    }

    /// Gaps between consecutive stamps, in periods of `fps`.
    func gapsInPeriods(_ s: [Int64], fps: Int = 30) -> [Double] {
        zip(s, s.dropFirst()).map { Double($1 - $0) * Double(fps) / 1e9 }
    }

    @Test func a60HzSourceTakesEveryTickOnce() {
        for hz in [60.0, 59.94, 60.06] {
            let s = stamps(sourceHz: hz, jitterMs: 2)
            let gaps = gapsInPeriods(s)
            // Two-sided: one picture a tick, none twice (the lane passed ~57 fps before).
            #expect(gaps.allSatisfy { $0 > 0.97 }, "\(hz) Hz: a stamp less than a period after the one before")
            let holes = gaps.filter { $0 > 1.5 }.count
            #expect(holes == 0, "\(hz) Hz: \(holes) ticks with no picture")
            #expect(abs(s.count - 1800) <= 3, "\(hz) Hz: \(s.count) pictures in 60 s")
        }
    }

    @Test func fasterAndIrregularSourcesStayOnTheGrid() {
        for hz in [50.0, 75.0, 120.0, 144.0, 40.0] {
            let s = stamps(sourceHz: hz, jitterMs: 4)
            let gaps = gapsInPeriods(s)
            #expect(gaps.allSatisfy { $0 > 0.97 }, "\(hz) Hz: two pictures on one tick")
            let perSecond = Double(s.count) / 60
            #expect(perSecond > 29.5 && perSecond <= 30.1, "\(hz) Hz -> \(perSecond) fps")
        }
    }

    @Test func aSourceAtOrBelowTheOutputRatePassesWhole() {
        for (hz, jitter) in [(30.0, 1.0), (30.0, 8.0), (29.97, 4.0), (30.03, 4.0), (24.0, 4.0), (15.0, 1.0)] {
            let n = Int(60 * hz)
            let s = stamps(sourceHz: hz, jitterMs: jitter)
            #expect(s.count == n, "\(hz) Hz ±\(jitter) ms: \(s.count) of \(n) admitted")
            #expect(gapsInPeriods(s).allSatisfy { $0 > 0.97 }, "\(hz) Hz ±\(jitter) ms: off the grid")
        }
    }

    @Test func aChangeAfterRepeatsIsNeverSkipped() {
        var gate = FrameRateGate(fps: 30)
        let p: Int64 = 33_333_333
        var t: Int64 = 1_000_000_000
        let first = gate.stamp(t)
        #expect(first == t)
        // A still spell: the lane repeats the picture on the next three ticks.
        for k in 1...3 { gate.noteRepeat(at: t + Int64(k) * p) }
        // A change arrives just after the third repeat's tick (nearest tick taken): next tick.
        let change = gate.stamp(t + 3 * p + 2_000_000)
        #expect(change.map { abs($0 - (t + 4 * p)) <= 1 } == true, "\(String(describing: change))")
        // Then a picture on the same tick from a 60 Hz burst is skipped, the next tick's is not.
        let burst = gate.stamp(t + 4 * p + 1_000_000)
        #expect(burst == nil)
        t += 5 * p
        #expect(gate.stamp(t) != nil)
    }

    @Test func isolatedDamageFramesAreNeverSkipped() {
        var gate = FrameRateGate(fps: 30)
        for s in [0.0, 2.0, 2.5, 5.0, 5.2] {
            let shown = gate.stamp(Int64(1e9 + s * 1e9))
            #expect(shown != nil, "change at \(s) s")
        }
    }

    @Test func hostilePTSNeitherTrapNorStall() {
        // PTS at the ends of Int64 (a fuzzer's, a wrapped clock): no trap, and the gate still
        // admits a 30 fps source that follows.
        var gate = FrameRateGate(fps: 30)
        for pts in [Int64.min + 1, -5, 0, 1, Int64.max / 2, Int64.max - 1, Int64.max] {
            _ = gate.stamp(pts)
            gate.noteRepeat(at: pts)
        }
        var t: Int64 = 1_000_000_000
        var admitted = 0
        for _ in 0..<60 { if gate.stamp(t) != nil { admitted += 1 }; t += 33_333_333 }
        #expect(admitted == 60)
    }
}
