import Testing
@testable import BroadcastKit

/// The frame-rate gate thins only a source that really runs faster than the output rate.
@Suite(.timeLimit(.minutes(1))) struct FrameRateGateTests {
    static let base: Int64 = 5_000_000_000_000  // an absolute CLOCK_MONOTONIC-like origin
    static let period = 1e9 / 30

    /// Feeds pictures at `times` (ns from `base`); returns the admitted stamps (ns from `base`),
    /// the number skipped and the gate.
    func feed(_ times: [Double], fps: Int = 30) -> (stamps: [Double], raw: [Double], skipped: Int, gate: FrameRateGate) {
        var g = FrameRateGate(fps: fps)
        var stamps: [Double] = [], raw: [Double] = []
        var skipped = 0
        for t in times {
            let pts = Self.base + Int64(t.rounded())
            switch g.decide(pts) {
            case .admit(let s):
                stamps.append(Double(s - Self.base))
                raw.append(t)
            case .skip: skipped += 1
            }
        }
        return (stamps, raw, skipped, g)
    }

    func jittered(count: Int, periodNs: Double, jitterMs: Double, seed: UInt64, skewPPM: Double = 0) -> [Double] {
        var rng = SeededRandom(state: seed)
        var out: [Double] = []
        var last = -Double.infinity
        for n in 0..<count {
            let j = jitterMs == 0 ? 0 : Double.random(in: -jitterMs...jitterMs, using: &rng) * 1e6
            // Increasing, as the lane requires (it drops a backwards PTS before the gate).
            let t = max(last + 1, Double(n) * periodNs * (1 + skewPPM * 1e-6) + j)
            out.append(t)
            last = t
        }
        return out
    }

    /// The A/V sync test's source: 30 fps, ±15 ms of jitter, 300 ppm either way. Nothing is
    /// skipped and every picture keeps its own PTS (the timestamp smoother places it).
    @Test func jitteredThirtyFpsSourcePassesWholeOnItsOwnTimes() {
        for seed: UInt64 in [1, 2, 3, 4] {
            for skew in [-300.0, 0, 300] {
                let times = jittered(count: 30 * 600, periodNs: Self.period, jitterMs: 15, seed: seed, skewPPM: skew)
                let r = feed(times)
                #expect(r.skipped == 0, "seed \(seed) skew \(skew)")
                #expect(r.stamps == r.raw.map { $0.rounded() }, "seed \(seed) skew \(skew): a PTS was moved")
                #expect(!r.gate.isThinning)
            }
        }
    }

    /// A 60 Hz screen under 30 fps, ±2 ms of capture jitter: every other picture, stamped on a
    /// 33.3 ms grid (after the first few, while the mean interval learns the rate).
    @Test func sixtyHertzSourceIsHalvedOntoTheGrid() {
        for seed: UInt64 in [5, 6, 7] {
            let times = jittered(count: 60 * 30, periodNs: 1e9 / 60, jitterMs: 2, seed: seed)
            let r = feed(times)
            #expect(r.gate.isThinning)
            #expect(r.stamps.count >= 898 && r.stamps.count <= 906, "seed \(seed): \(r.stamps.count) admitted of 1800")
            #expect(r.skipped == times.count - r.stamps.count)
            let gaps = zip(r.stamps, r.stamps.dropFirst()).map { ($1 - $0) / 1e6 }
            // The first pictures pass before the mean has learnt the rate (fewer than 8).
            #expect(gaps.filter { $0 < 25 }.count <= 8, "seed \(seed): short gaps \(gaps.filter { $0 < 25 })")
            let settled = gaps.dropFirst(30)
            #expect(settled.allSatisfy { abs($0 - 33.333) < 1.5 }, "seed \(seed): \(settled.filter { abs($0 - 33.333) >= 1.5 })")
        }
    }

    /// Mutter on a loaded machine while the pointer moves: pictures 17, 25 or 37 ms apart, at
    /// random. Each admitted picture is stamped on a tick of one grid: the stamps are whole
    /// periods apart, and no two share a tick.
    @Test func irregularFastSourceLandsOnOneGrid() {
        var rng = SeededRandom(state: 11)
        var times: [Double] = []
        var t = 0.0
        for _ in 0..<1200 {
            times.append(t)
            let r = Double.random(in: 0..<1, using: &rng)
            t += (r < 0.6 ? 16.7 : r < 0.85 ? 25 : 37) * 1e6
        }
        let r = feed(times)
        #expect(r.gate.isThinning)
        let span = (times.last! - times.first!) / 1e9
        // At most one picture a tick, and not many ticks without one.
        #expect(Double(r.stamps.count) <= span * 30 + 8, "\(r.stamps.count) admitted in \(span) s")
        #expect(Double(r.stamps.count) >= span * 30 * 0.8, "\(r.stamps.count) admitted in \(span) s")
        let gaps = zip(r.stamps, r.stamps.dropFirst()).map { ($1 - $0) / Self.period }.dropFirst(10)
        // Whole periods apart (the grid's phase pull moves a tick by at most 0.1 period).
        #expect(gaps.allSatisfy { $0 >= 0.9 && abs($0 - $0.rounded()) < 0.11 }, "\(gaps.filter { $0 < 0.9 || abs($0 - $0.rounded()) >= 0.11 })")
    }

    /// 45 fps is thinned to 30 a second; 25 fps passes whole.
    @Test func betweenRatesTheOutputRateIsACeiling() {
        let fast = feed(jittered(count: 45 * 20, periodNs: 1e9 / 45, jitterMs: 1, seed: 3))
        #expect(fast.stamps.count >= 590 && fast.stamps.count <= 606, "\(fast.stamps.count) admitted from 45 fps over 20 s")
        let slow = feed(jittered(count: 25 * 20, periodNs: 1e9 / 25, jitterMs: 8, seed: 3))
        #expect(slow.skipped == 0)
        #expect(slow.stamps == slow.raw.map { $0.rounded() })
    }

    /// A damage-driven screen: a still spell (nothing sent for seconds) keeps the gate's
    /// knowledge that the source is fast, so the next burst is thinned from its first pictures,
    /// and the first picture after the spell always passes (new content reaches the stream).
    @Test func stillSpellThenBurst() {
        var times = (0..<60).map { Double($0) * 1e9 / 60 }
        let resume = times.last! + 3e9
        times += (0..<60).map { resume + Double($0) * 1e9 / 60 }
        var g = FrameRateGate(fps: 30)
        var decisions: [FrameRateGate.Decision] = []
        for t in times { decisions.append(g.decide(Self.base + Int64(t.rounded()))) }
        #expect(decisions[60] == .admit(Self.base + Int64(resume.rounded())), "the first picture after the spell")
        #expect(decisions[61] == .skip, "the burst is thinned from its second picture")
        let admitted = decisions[60...].filter { $0 != .skip }.count
        #expect(admitted == 30, "\(admitted) of the burst's 60")
    }

    /// A source that slows from 60 Hz to 30 fps with ±10 ms jitter is no longer thinned once the
    /// mean has followed (about ten pictures), and then loses nothing.
    @Test func sourceThatSlowsDownIsNoLongerThinned() {
        let fast = (0..<120).map { Double($0) * 1e9 / 60 }
        let start = fast.last! + Self.period
        let slow = jittered(count: 300, periodNs: Self.period, jitterMs: 10, seed: 8).map { start + $0 }
        var g = FrameRateGate(fps: 30)
        for t in fast { _ = g.decide(Self.base + Int64(t.rounded())) }
        #expect(g.isThinning)
        var skippedLate = 0
        for (i, t) in slow.enumerated() where g.decide(Self.base + Int64(t.rounded())) == .skip && i >= 20 { skippedLate += 1 }
        #expect(!g.isThinning)
        #expect(skippedLate == 0)
    }

    /// A capture thread that stalled while thinning: the lane repeated the last picture on two
    /// ticks; the 60 Hz pictures that then come late for those ticks are skipped, and the first
    /// one after them takes the tick after the repeats (never one before them).
    @Test func repeatsTakeTheirTicks() {
        var g = FrameRateGate(fps: 30)
        let p = 1e9 / 60
        var t = 0.0
        var lastTick: Int64 = 0
        for _ in 0..<60 {
            if case .admit(let s) = g.decide(Self.base + Int64(t.rounded())) { lastTick = s }
            t += p
        }
        #expect(g.isThinning)
        let r1 = lastTick + 33_333_333, r2 = r1 + 33_333_333
        g.noteRepeat(at: r1)
        g.noteRepeat(at: r2)
        var admitted: [Int64] = []
        for _ in 0..<12 {
            if case .admit(let s) = g.decide(Self.base + Int64(t.rounded())) { admitted.append(s) }
            t += p
        }
        #expect(admitted.first.map { $0 > r2 } == true, "\(admitted) after repeats at \(r1), \(r2)")
        #expect(admitted.count >= 3 && admitted.count <= 5, "\(admitted)")
        // Not thinning: a repeat changes nothing (a slow source's late picture keeps its time).
        var slow = FrameRateGate(fps: 30)
        _ = slow.decide(1_000_000_000)
        slow.noteRepeat(at: 1_033_333_333)
        #expect(slow.decide(1_030_000_000) == .admit(1_030_000_000))
    }

    /// Timestamps at the ends of Int64 (a hostile or wrapped source clock) never trap, and a
    /// clock that jumps restarts the grid on the picture.
    @Test func extremeAndJumpingClocks() {
        var g = FrameRateGate(fps: 30)
        var pts = Int64.max - 100 * 16_666_667
        for _ in 0..<99 {
            _ = g.decide(pts)
            pts += 16_666_667
        }
        var h = FrameRateGate(fps: 60)
        for p in [Int64.min + 1, Int64.min + 2, -1, 0, 1, Int64.max - 1, Int64.max] { _ = h.decide(p) }
        var j = FrameRateGate(fps: 30)
        for i in 0..<60 { _ = j.decide(Int64(i) * 16_666_667) }
        #expect(j.isThinning)
        let jump: Int64 = 3_600_000_000_000
        #expect(j.decide(jump) == .admit(jump), "a jump forward restarts the grid on the picture")
    }
}
