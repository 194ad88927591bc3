import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

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
        var rng = SplitMixRandom(seed: seed)
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

    /// Whole periods apart, give or take the grid's largest move for one picture (0.15 period).
    func onGrid(_ stamps: [Double], periodNs: Double = period) -> [Double] {
        zip(stamps, stamps.dropFirst()).map { ($1 - $0) / periodNs }.filter { $0 < 0.8499 || abs($0 - $0.rounded()) > 0.1501 }
    }

    /// The A/V sync test's source: 30 fps, ±15 ms of jitter, 300 ppm either way. Nothing is
    /// skipped, every picture is stamped on one grid within 0.6 period of its capture time, and
    /// the grid follows the source: the mean offset is the same in the first and the last minute
    /// (no drift), and under a millisecond.
    @Test func jitteredThirtyFpsSourceKeepsEveryPictureOnAGridThatFollowsIt() {
        for seed: UInt64 in [1, 2, 3, 4] {
            for skew in [-300.0, 0, 300] {
                let times = jittered(count: 30 * 600, periodNs: Self.period, jitterMs: 15, seed: seed, skewPPM: skew)
                let r = feed(times)
                #expect(r.skipped == 0, "seed \(seed) skew \(skew)")
                #expect(!r.gate.isThinning)
                #expect(onGrid(r.stamps).isEmpty, "seed \(seed) skew \(skew): \(onGrid(r.stamps).prefix(5))")
                let offsets = zip(r.stamps, r.raw).map { ($0 - $1) / 1e6 }
                let worst = offsets.map { abs($0) }.max() ?? 0
                #expect(worst <= 0.6 * Self.period / 1e6, "seed \(seed) skew \(skew): a stamp \(worst) ms from its picture")
                let minute = 30 * 60
                let first = offsets[30..<minute].reduce(0, +) / Double(minute - 30)
                let last = offsets.suffix(minute).reduce(0, +) / Double(minute)
                #expect(abs(first) < 1 && abs(last) < 1 && abs(last - first) < 0.5,
                        "seed \(seed) skew \(skew): mean offset \(first) ms, then \(last) ms")
            }
        }
    }

    /// Mutter at about 30 fps while the pointer moves: it paints on a 60 Hz vblank, so its
    /// pictures come 17, 33 or 50 ms apart (mean 33 ms: not faster than the output). No two are
    /// stamped on one tick; a picture 17 ms after one that took its tick either takes the next
    /// tick (within 0.6 period) or is skipped; and the stream does not fall far behind the ticks.
    @Test func mutterAtAboutThirtyFpsLandsOnOneGrid() {
        for seed: UInt64 in [21, 22, 23] {
            var rng = SplitMixRandom(seed: seed)
            var times: [Double] = []
            var t = 0.0
            for _ in 0..<600 {
                times.append(t + Double.random(in: -1...1, using: &rng) * 1e6)
                let r = Double.random(in: 0..<1, using: &rng)
                t += (r < 0.25 ? 1 : r < 0.75 ? 2 : 3) * 1e9 / 60
            }
            let r = feed(times)
            #expect(!r.gate.isThinning, "seed \(seed): mean \(r.gate.meanInterval / 1e6) ms")
            #expect(onGrid(r.stamps).isEmpty, "seed \(seed): \(onGrid(r.stamps).prefix(5))")
            let span = (times.last! - times.first!) / Self.period
            let ticksUsed = (r.stamps.last! - r.stamps.first!) / Self.period
            // Most ticks hold a picture (the lane fills the rest, 1 or 2 at a time, with repeats).
            #expect(Double(r.stamps.count) >= span * 0.8, "seed \(seed): \(r.stamps.count) stamps over \(span) ticks")
            #expect(abs(ticksUsed - span) < 3, "seed \(seed): the grid ran \(ticksUsed) ticks over the source's \(span)")
            let worst = zip(r.stamps, r.raw).map { abs($0 - $1) }.max() ?? 0
            #expect(worst <= 0.6 * Self.period, "seed \(seed): a stamp \(worst / 1e6) ms from its picture")
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
        var rng = SplitMixRandom(seed: 11)
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

    /// 45 fps is thinned to 30 a second; 25 fps passes whole, on the 30 fps grid.
    @Test func betweenRatesTheOutputRateIsACeiling() {
        let fast = feed(jittered(count: 45 * 20, periodNs: 1e9 / 45, jitterMs: 1, seed: 3))
        #expect(fast.stamps.count >= 590 && fast.stamps.count <= 606, "\(fast.stamps.count) admitted from 45 fps over 20 s")
        let slow = feed(jittered(count: 25 * 20, periodNs: 1e9 / 25, jitterMs: 8, seed: 3))
        #expect(slow.skipped == 0)
        #expect(onGrid(slow.stamps).isEmpty, "\(onGrid(slow.stamps).prefix(5))")
        let worst = zip(slow.stamps, slow.raw).map { abs($0 - $1) }.max() ?? 0
        #expect(worst <= 0.6 * Self.period, "a 25 fps picture stamped \(worst / 1e6) ms from its time")
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
        // Not thinning: the repeat's tick is taken too; the stalled picture of that tick is stale
        // (skipped), and the next one takes its own tick.
        var slow = FrameRateGate(fps: 30)
        _ = slow.decide(1_000_000_000)
        slow.noteRepeat(at: 1_033_333_333)
        #expect(slow.decide(1_030_000_000) == .skip)
        #expect(slow.decide(1_063_000_000) == .admit(1_066_666_666))
    }

    /// A pause (a still screen the lane covered with repeats, a paused source) restarts the grid
    /// on the first picture back, at its own time (new content; the smoother places it after the
    /// repeats), and the grid then follows the source's new phase with no short interval.
    @Test func pauseRestartsTheGridOnThePicture() {
        var g = FrameRateGate(fps: 30)
        let p = Self.period
        for i in 0..<30 { _ = g.decide(Self.base + Int64((Double(i) * p).rounded())) }
        for i in 30..<120 { g.noteRepeat(at: Self.base + Int64((Double(i) * p).rounded())) }  // 3 s of repeats
        let back = 120 * p + p / 4
        #expect(g.decide(Self.base + Int64(back.rounded())) == .admit(Self.base + Int64(back.rounded())))
        var stamps: [Double] = [back]
        for i in 1..<30 {
            if case .admit(let s) = g.decide(Self.base + Int64((back + Double(i) * p).rounded())) { stamps.append(Double(s - Self.base)) }
        }
        #expect(stamps.count == 30)
        #expect(onGrid(stamps).isEmpty, "\(onGrid(stamps))")
        #expect(abs(stamps.last! - (back + 29 * p)) < 1, "on the source's phase: \((stamps.last! - back - 29 * p) / 1e6) ms")
    }

    /// Mutter stalled for 200 ms, then its capture thread held the pictures back another 100 ms
    /// (a loaded machine): the lane repeated the last picture on the ticks it missed; the
    /// pictures come all at once, with their old capture times. The first is shown on the tick after the repeats, those held back
    /// with it are stale (skipped), and no stamp goes back behind a repeat (the smoother would
    /// clamp each such picture 1 ms after the last: 1 ms intervals in the stream).
    @Test func picturesHeldBackBehindRepeatsNeverGoBack() {
        var g = FrameRateGate(fps: 30)
        let p = Self.period
        for i in 0..<30 { _ = g.decide(Self.base + Int64((Double(i) * p).rounded())) }
        var lastRepeat = 0.0
        for i in 30..<39 {  // the lane's repeats while nothing came
            lastRepeat = Double(i) * p
            g.noteRepeat(at: Self.base + Int64(lastRepeat.rounded()))
        }
        var stamps: [Double] = [], skipped = 0
        for i in 35..<55 {  // captured from 35 on (a 6-period gap: a pause), delivered after the repeats
            switch g.decide(Self.base + Int64((Double(i) * p + 2e6).rounded())) {
            case .admit(let s): stamps.append(Double(s - Self.base))
            case .skip: skipped += 1
            }
        }
        #expect(stamps.first.map { abs($0 - (lastRepeat + p)) < 1 } == true, "first \(stamps.first.map { $0 / 1e6 } ?? -1) ms")
        #expect(stamps.allSatisfy { $0 > lastRepeat }, "a stamp behind the repeats")
        #expect(onGrid(stamps).isEmpty, "\(onGrid(stamps))")
        #expect(skipped == 4, "\(skipped) skipped")
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
