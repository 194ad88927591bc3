import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct VideoTimestampSmootherTests {
    /// Feeds frames captured at `truth(n)` with ±`jitterMs` uniform jitter; returns the worst
    /// |output - truth| in ms over frames from `settleFrames` on, and the smoother.
    func run(fps: Int, frames: Int, jitterMs: Double, seed: UInt64, settleFrames: Int,
             truth: (Int) -> Double) -> (worstMs: Double, smoother: VideoTimestampSmoother) {
        var s = VideoTimestampSmoother(fps: fps)
        var rng = SplitMixRandom(seed: seed)
        var worst = 0.0
        var last = Int64.min
        let base: Int64 = 5_000_000_000_000  // an absolute CLOCK_MONOTONIC-like origin
        for n in 0..<frames {
            let j = jitterMs == 0 ? 0 : Double.random(in: -jitterMs...jitterMs, using: &rng) * 1e6
            let t = truth(n)
            let out = s.smooth(base + Int64((t + j).rounded()))
            #expect(out > last)
            last = out
            if n >= settleFrames { worst = max(worst, abs(Double(out - base) - t) / 1e6) }
        }
        return (worst, s)
    }

    @Test func absorbsFifteenMillisecondJitterAt30fps() {
        for seed: UInt64 in [1, 2, 3] {
            let r = run(fps: 30, frames: 30 * 120, jitterMs: 15, seed: seed, settleFrames: 30 * 5) {
                Double($0) * 1e9 / 30
            }
            // Raw PTS are off by up to 15 ms; smoothed ones by a few ms at most.
            #expect(r.worstMs < 5, "seed \(seed): worst \(r.worstMs) ms")
            #expect(r.smoother.reanchors == 0)
            #expect(r.smoother.corrections > 30 * 100)
        }
    }

    @Test func tracks300ppmFastClockForAnHour() {
        // The capture clock runs 300 ppm fast: frames arrive every 33.323 ms of monotonic time.
        let period = 1e9 / 30 / (1 + 300e-6)
        let clean = run(fps: 30, frames: 30 * 3600, jitterMs: 0, seed: 9, settleFrames: 30 * 10) {
            Double($0) * period
        }
        #expect(clean.worstMs < 0.5, "worst \(clean.worstMs) ms")
        #expect(clean.smoother.reanchors == 0)
        #expect(abs(clean.smoother.trackedPeriodNs / period - 1) < 10e-6)
        let jittered = run(fps: 30, frames: 30 * 3600, jitterMs: 15, seed: 10, settleFrames: 30 * 10) {
            Double($0) * period
        }
        // No slow build-up: the error an hour in is as small as after ten seconds.
        #expect(jittered.worstMs < 6, "worst \(jittered.worstMs) ms")
        #expect(jittered.smoother.reanchors == 0)
    }

    @Test func reanchorsOnOneSecondJump() {
        var s = VideoTimestampSmoother(fps: 30)
        let period: Int64 = 33_333_333
        var t: Int64 = 1_000_000_000
        for _ in 0..<60 { _ = s.smooth(t); t += period }
        #expect(s.isLocked)
        // The source jumps 1 s plus a third of a frame ahead (a clock step, a restart).
        t += 1_000_000_000 + period / 3
        let first = s.smooth(t)
        #expect(abs(first - t) <= period / 2, "the first frame after a jump stays near its PTS")
        var worstLate: Int64 = 0
        for n in 0..<60 {
            t += period
            let out = s.smooth(t)
            if n >= 15 { worstLate = max(worstLate, abs(out - t)) }
        }
        // Within half a second the grid sits on the new phase.
        #expect(worstLate < 1_000_000, "follows the new phase: \(worstLate) ns")
        #expect(s.reanchors == 1)
        #expect(s.isLocked)
        // A jump far beyond a pause (an hour) re-anchors at once on the raw PTS.
        t += 3_600_000_000_000 + period / 3
        #expect(s.smooth(t) == t)
        #expect(s.reanchors == 2)
    }

    @Test func pauseOfAFrameClockKeepsItsGrid() {
        // 30 fps with ±15 ms jitter, 3 s without frames, then the same clock again: the first
        // frame after the pause lands on its true time, not on its jittered PTS.
        var s = VideoTimestampSmoother(fps: 30)
        var rng = SplitMixRandom(seed: 21)
        var worstFirst = 0.0
        let base: Int64 = 9_000_000_000
        for n in 0..<(30 * 200) {
            let second = n / 30
            if second % 20 >= 17 { continue }   // a 3 s pause every 20 s
            let truth = Double(n) * 1e9 / 30
            let j = Double.random(in: -15...15, using: &rng) * 1e6
            let out = s.smooth(base + Int64((truth + j).rounded()))
            if n % 600 == 0 && n > 0 { worstFirst = max(worstFirst, abs(Double(out - base) - truth) / 1e6) }
        }
        #expect(worstFirst < 5, "first frame after a pause off by \(worstFirst) ms")
        #expect(s.reanchors <= 1)
    }

    @Test func handles60fps() {
        let clean = run(fps: 60, frames: 60 * 60, jitterMs: 0, seed: 4, settleFrames: 0) { Double($0) * 1e9 / 60 }
        #expect(clean.worstMs < 0.01, "worst \(clean.worstMs) ms")
        #expect(clean.smoother.corrections == 0)
        let jittered = run(fps: 60, frames: 60 * 60, jitterMs: 5, seed: 5, settleFrames: 60 * 5) {
            Double($0) * 1e9 / 60
        }
        #expect(jittered.worstMs < 2.5, "worst \(jittered.worstMs) ms")
        #expect(jittered.smoother.reanchors == 0)
    }

    @Test func passesVariableRateInputThrough() {
        // A damage-driven screen source at nominal 30 fps: frames 5..120 ms apart.
        var s = VideoTimestampSmoother(fps: 30)
        var rng = SplitMixRandom(seed: 77)
        var t: Int64 = 2_000_000_000
        var last = Int64.min
        var unchanged = 0
        let n = 3_000
        for _ in 0..<n {
            t += Int64(Double.random(in: 5...120, using: &rng) * 1e6)
            let out = s.smooth(t)
            #expect(out > last)
            #expect(abs(out - t) <= 20_000_000, "moved \(out - t) ns")
            if out == t { unchanged += 1 }
            last = out
        }
        #expect(unchanged >= n * 99 / 100, "\(unchanged) of \(n) unchanged")
    }

    @Test func shortDropsKeepTheGrid() {
        var s = VideoTimestampSmoother(fps: 30)
        let period = 1e9 / 30
        for n in 0..<300 where n % 50 != 49 {   // every 50th frame dropped by the capture
            let t = 1_000_000_000 + Int64((Double(n) * period).rounded())
            _ = s.smooth(t)
        }
        #expect(s.isLocked)
        #expect(s.reanchors == 0)
    }
}

/// Repeated pictures (a still screen) continue the grid.
@Suite(.timeLimit(.minutes(1))) struct VideoTimestampSmootherRepeatTests {
    let period: Int64 = 33_333_333

    /// A locked grid, 30 s of repeats (a paused source), then the source again on its own
    /// grid: every output one period apart, and no re-anchor.
    @Test func repeatsThroughAPauseKeepTheGrid() {
        var s = VideoTimestampSmoother(fps: 30)
        var out: [Int64] = []
        let t0: Int64 = 10_000_000_000
        for i in 0..<60 { out.append(s.smooth(t0 + Int64(i) * period)) }
        #expect(s.isLocked)
        for _ in 0..<900 { out.append(s.repeatSlot()!) }
        for i in 960..<1_020 { out.append(s.smooth(t0 + Int64(i) * period)) }
        let gaps = zip(out, out.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { abs($0 - period) <= 1_000 }, "gaps \(Set(gaps).sorted())")
        #expect(s.reanchors == 0)
        #expect(abs(out.last! - (t0 + 1_019 * period)) <= 1_000_000)
    }

    /// One picture, then repeats: they lock the grid like a steady source, and a picture at an
    /// arbitrary phase afterwards takes the nearest slot, later than the last repeat.
    @Test func stillScreenLocksAndAChangeTakesTheNearestSlot() {
        var s = VideoTimestampSmoother(fps: 30)
        let t0: Int64 = 5_000_000_000
        var last = s.smooth(t0)
        #expect(s.repeatSlot() == t0 + period)
        for _ in 0..<40 { last = s.repeatSlot()! }
        #expect(s.isLocked)
        // 1.4 periods after the last repeat: the next slot.
        let next = s.smooth(last + period * 14 / 10)
        #expect(next == last + period)
        #expect(s.reanchors == 0)
        // Before the last repeat's time (its slot was taken): the next slot, never back.
        for _ in 0..<3 { last = s.repeatSlot()! }
        let late = s.smooth(last - period / 3)
        #expect(late == last + period)
    }

    /// Pictures every 250 ms (7.5 frames) with repeats between them, as the lane makes them
    /// (repeat m of a spell fires at (m + 1) periods): every gap is one or two periods (one
    /// slot left empty when a picture comes in the second half of an interval), never back,
    /// no re-anchor once locked, and every output on the grid.
    @Test func picturesBetweenRepeatsStayOnTheGrid() {
        var s = VideoTimestampSmoother(fps: 30)
        let t0: Int64 = 3_000_000_000
        var out: [Int64] = []
        for i in 0..<24 {
            let pts = t0 + Int64(i) * 250_000_000
            out.append(s.smooth(pts))
            var m: Int64 = 1
            while (m + 1) * period < 250_000_000 {
                out.append(s.repeatSlot()!)
                m += 1
            }
        }
        let gaps = zip(out, out.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 > 0 && $0 <= 2 * period + 1_000_000 }, "gaps \(gaps)")
        #expect(s.isLocked)
        #expect(s.reanchors == 0)
        let lockedFrom = out.count / 2
        for v in out[lockedFrom...] {
            let phase = Double(v - out[lockedFrom]) / Double(period)
            #expect(abs(phase - phase.rounded()) < 0.05, "\(v) is off the grid")
        }
    }

    @Test func noRepeatBeforeTheFirstPicture() {
        var s = VideoTimestampSmoother(fps: 30)
        #expect(s.repeatSlot() == nil)
    }
}

/// Found by `scripts/fuzz` (seeded, `--wild-pts`) after the frame repeat landed: a repeat at the
/// far end of the PTS range overflowed Int64 and trapped (SIGILL) on the video lane's thread.
@Suite(.timeLimit(.minutes(1))) struct VideoTimestampSmootherRangeTests {
    @Test func repeatsAtTheEndOfTheRangeDoNotTrap() {
        var s = VideoTimestampSmoother(fps: 30)
        let top = Int64.max - 10_000_000
        _ = s.smooth(top)
        _ = s.smooth(top + 5_000_000)
        #expect(s.repeatSlot(slots: 3) == nil, "no slot fits after the last representable PTS")
        var t = VideoTimestampSmoother(fps: 30)
        _ = t.smooth(Int64.max)
        _ = t.smooth(Int64.max)
        #expect(t.repeatSlot() == nil)
    }
}
