/// Decides, before a captured picture is converted, whether it takes an output frame slot: a
/// source faster than the output rate (a 60 Hz desktop under `--fps 30`, mutter's damage-driven
/// ScreenCast while the pointer moves, 60 fps Y4M) is thinned to the output rate, so the stream
/// carries the rate it declares and the skipped pictures cost neither a conversion nor an encode.
///
/// The source's frame interval is tracked (a running mean of the gaps shorter than a pause).
/// While it is at least `decimateBelowFraction` of the output period the source is not faster
/// than the output and every picture passes: the timestamp smoother and the lane's repeats keep
/// the grid. Faster, a picture passes when it reaches the next output tick (less `marginFraction`
/// of a period for capture jitter); the tick grid is pulled gently toward the phase of the
/// pictures it admits, so a source a few hundred ppm off its nominal rate never slips a tick.
///
/// Pure and allocation-free: the video lane keeps one under its convert lock.
struct FrameRateGate: Sendable {
    /// The output frame period in ns.
    let periodNs: Double
    /// Below this fraction of the output period the mean source interval counts as faster.
    var decimateBelowFraction = 0.75
    /// A picture this fraction of a period before its tick still takes it (capture jitter).
    var marginFraction = 0.25
    /// Gaps longer than this many periods are pauses: not part of the interval mean, and the
    /// tick grid restarts on the next picture.
    var pausePeriods = 4.0
    /// Weight of each new gap in the interval mean (about a ten-picture memory).
    var intervalGain = 0.1
    /// Fraction of an admitted picture's distance from its tick by which the grid moves to it.
    var phaseGain = 0.1

    private var lastPts: Int64 = Int64.min
    private var meanIntervalNs: Double
    /// The next output tick on the source clock, valid once `hasTick`.
    private var nextTickNs: Double = 0
    private var hasTick = false
    private var hasGap = false

    /// - Parameter fps: the output frame rate.
    init(fps: Int) {
        periodNs = 1e9 / Double(max(1, fps))
        meanIntervalNs = periodNs
    }

    /// True while the source is faster than the output and pictures are being thinned.
    var isThinning: Bool { meanIntervalNs < periodNs * decimateBelowFraction }

    /// Whether the picture captured at `pts` (ns, the source clock; increasing) takes an output
    /// slot. False means skip it: count it as skipped, do not convert or encode it.
    mutating func admit(_ pts: Int64) -> Bool {
        if lastPts != Int64.min {
            let (gap, overflow) = pts.subtractingReportingOverflow(lastPts)
            if !overflow, gap > 0, Double(gap) < periodNs * pausePeriods {
                // The first gap seeds the mean, so a 60 Hz source is thinned from its second
                // picture, not after the mean has walked down from the output period.
                // (No faster than 4 pictures a period: a hostile run of 1 ns gaps is not a rate.)
                let g = max(Double(gap), periodNs / 4)
                meanIntervalNs = hasGap ? meanIntervalNs + intervalGain * (g - meanIntervalNs) : g
                hasGap = true
            }
        }
        lastPts = pts
        let t = Double(pts)
        guard hasTick, isThinning else {
            hasTick = true
            nextTickNs = t + periodNs
            return true
        }
        if t < nextTickNs - periodNs * (1 + pausePeriods) {
            // Far before the tick: the source clock went back (the lane refuses backwards PTS,
            // other callers may not). The grid starts again here.
            nextTickNs = t + periodNs
            return true
        }
        if t < nextTickNs - periodNs * marginFraction { return false }
        let late = t - nextTickNs
        if late > periodNs * pausePeriods {
            // A pause, or a clock jump: the grid starts again here.
            nextTickNs = t + periodNs
        } else {
            // Ticks this picture passed (0 when it is on or just before its tick).
            let passed = late > 0 ? (late / periodNs).rounded(.down) : 0
            nextTickNs += (passed + 1) * periodNs + phaseGain * (late - passed * periodNs)
        }
        return true
    }
}
