import Testing
@testable import BroadcastKit

@Suite(.timeLimit(.minutes(1))) struct FrameRateGateTests {
    /// Feeds `seconds` of a source at `sourceHz` with ±`jitterMs` on each PTS (seeded) through a
    /// 30 fps gate; returns the admitted PTS in ns.
    func admitted(sourceHz: Double, jitterMs: Double = 1, seconds: Double = 60, fps: Int = 30, seed: UInt64 = 7) -> [Int64] {
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
            if gate.admit(pts) { out.append(pts) }
        }
        return out
    }

    func rate(_ pts: [Int64]) -> Double {
        Double(pts.count - 1) / (Double(pts.last! - pts.first!) / 1e9)
    }

    /// The gaps shorter than `ms`, as a fraction of all gaps.
    func shortFraction(_ pts: [Int64], under ms: Double) -> Double {
        let gaps = zip(pts, pts.dropFirst()).map { Double($1 - $0) / 1e6 }
        return Double(gaps.filter { $0 < ms }.count) / Double(gaps.count)
    }

    @Test func a60HzSourceIsThinnedToThe30fpsGridBothWays() {
        for hz in [60.0, 59.94, 60.06] {
            let pts = admitted(sourceHz: hz, jitterMs: 2)
            let fps = rate(pts)
            // Two-sided: not the ~57 fps the lane passed before, and not fewer than the output.
            #expect(fps > 29.9 && fps < 30.1, "\(hz) Hz -> \(fps) fps")
            #expect(shortFraction(pts, under: 25) < 0.01, "\(hz) Hz: short gaps")
            let longest = zip(pts, pts.dropFirst()).map { $1 - $0 }.max()!
            #expect(longest < 45_000_000, "\(hz) Hz: a gap of \(longest) ns")
        }
    }

    @Test func fasterSourcesAllComeDownToTheOutputRate() {
        for hz in [50.0, 75.0, 120.0, 144.0] {
            let fps = rate(admitted(sourceHz: hz))
            #expect(fps > 29.5 && fps < 30.6, "\(hz) Hz -> \(fps) fps")
        }
    }

    @Test func aSourceAtOrBelowTheOutputRatePassesWhole() {
        for (hz, jitter) in [(30.0, 1.0), (30.0, 8.0), (29.97, 4.0), (30.03, 4.0), (24.0, 4.0), (15.0, 1.0)] {
            let n = Int(60 * hz)
            let pts = admitted(sourceHz: hz, jitterMs: jitter)
            #expect(pts.count == n, "\(hz) Hz ±\(jitter) ms: \(pts.count) of \(n) admitted")
        }
    }

    @Test func aPauseRestartsTheGridOnTheNextPicture() {
        var gate = FrameRateGate(fps: 30)
        var t: Int64 = 1_000_000_000
        // 2 s at 60 Hz: thinning.
        for _ in 0..<120 { _ = gate.admit(t); t += 16_666_667 }
        #expect(gate.isThinning)
        // A 3 s still spell (a damage-driven screen), then a change at any phase: shown at once.
        t += 3_000_000_000 + 5_000_000
        let afterPause = gate.admit(t)
        // The next one, 16.7 ms later, is between ticks; the one after takes the next tick.
        let between = gate.admit(t + 16_666_667)
        let nextTick = gate.admit(t + 33_333_333)
        #expect(afterPause && !between && nextTick)
    }

    @Test func isolatedDamageFramesAreNeverSkipped() {
        var gate = FrameRateGate(fps: 30)
        // A damage-driven screen with changes far apart: every one is shown.
        for s in [0.0, 2.0, 2.5, 5.0, 5.2] {
            let shown = gate.admit(Int64(1e9 + s * 1e9))
            #expect(shown, "change at \(s) s")
        }
    }

    @Test func hostilePTSNeitherTrapNorStall() {
        // PTS at the ends of Int64 (a fuzzer's, a wrapped clock): no trap, and the gate still
        // admits a 30 fps source that follows.
        var gate = FrameRateGate(fps: 30)
        for pts in [Int64.min + 1, -5, 0, 1, Int64.max / 2, Int64.max - 1] {
            _ = gate.admit(pts)
        }
        var t: Int64 = 1_000_000_000
        var admitted = 0
        for _ in 0..<60 { if gate.admit(t) { admitted += 1 }; t += 33_333_333 }
        #expect(admitted == 60)
    }
}
