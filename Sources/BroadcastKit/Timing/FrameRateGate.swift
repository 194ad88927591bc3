/// Thins a live source that really runs faster than the output frame rate, before its pictures
/// are converted: a 60 Hz desktop under `--fps 30` (mutter while the pointer moves, the 60 Hz
/// PipeWire test screen), a 60 fps Y4M pipe, an embedder in `drop` mode sending 60 a second.
///
/// A source at or below the output rate is never touched: its pictures pass whole and the
/// `VideoTimestampSmoother` places them, following the source's own clock (a 30 fps capture with
/// ±15 ms of jitter and a few hundred ppm of skew keeps its A/V sync to the millisecond).
///
/// The source's picture interval is a running mean (`intervalGain`) of the gaps between its
/// pictures (a gap longer than `pausePeriods` is a pause, not a rate). The gate thins while the
/// mean is under `enterFraction` of the output period and stops once it is back above
/// `leaveFraction` (hysteresis, so a source near the threshold does not flip every picture). A
/// ±15 ms jitter on a 30 fps source moves the mean by at most 30 ms × `intervalGain` (3.75 ms,
/// to 0.89 of the period): never under `enterFraction`.
///
/// While thinning, output ticks one period apart run on the source clock: a picture at or after
/// its tick, less `marginFraction` of a period for capture jitter, takes that tick; a picture
/// before it is skipped (counted as `video_frames_skipped`, not converted, not encoded). The grid
/// is pulled by `phaseGain` toward the pictures it admits, so a 60 Hz source's admitted pictures
/// sit on their ticks and the skipped ones half a period away, a quarter period from either edge.
/// An admitted picture's time is its tick (`Decision.admit`): a regular grid on the source's own
/// clock, which the smoother locks onto, so mutter's irregular delivery (17, 25, 37, 53 ms)
/// reaches the stream on the 33 ms grid.
///
/// Pure and allocation-free: the video lane keeps one under its convert lock.
struct FrameRateGate: Sendable {
    /// The output frame period in ns.
    let periodNs: Double
    /// The source counts as faster once its mean interval is below this fraction of the period.
    var enterFraction = 0.85
    /// ... and no longer once its mean interval is above this fraction.
    var leaveFraction = 0.95
    /// A picture this fraction of a period before its tick still takes it (capture jitter).
    var marginFraction = 0.25
    /// Gaps longer than this many periods are pauses: not part of the mean; the grid restarts.
    var pausePeriods = 4.0
    /// Pictures this far before their tick (late behind repeats that took their ticks, see
    /// `noteRepeat`) are skipped; further, the source clock jumped back and the grid restarts.
    var maxLagNs: Double = 1e9
    /// Weight of each new gap in the mean interval (about an eight-picture memory).
    var intervalGain = 0.125
    /// Fraction of an admitted picture's distance from its tick by which the grid moves to it.
    var phaseGain = 0.1

    /// What to do with one picture.
    enum Decision: Equatable, Sendable {
        /// Convert and encode it, stamped with this time (ns, the source clock): its own PTS
        /// when the source is not faster than the output, else its output tick.
        case admit(Int64)
        /// Skip it: its tick is taken.
        case skip
    }

    private var lastPts: Int64 = Int64.min
    private var meanIntervalNs: Double
    private var thinning = false
    /// The next output tick on the source clock (ns); valid once a picture was admitted.
    private var nextTickNs: Double = 0
    private var hasTick = false

    /// - Parameter fps: the output frame rate.
    init(fps: Int) {
        periodNs = 1e9 / Double(max(1, fps))
        meanIntervalNs = periodNs
    }

    /// True while the source is faster than the output and its pictures are thinned.
    var isThinning: Bool { thinning }
    /// The source's mean picture interval in ns (the output period until it has sent two).
    var meanInterval: Double { meanIntervalNs }

    /// The lane encoded the last picture again at `pts` (ns, the source clock: the smoother's
    /// grid slot), because no picture came in time (a capture thread stalled on a loaded machine,
    /// or a still spell). While thinning, that tick is taken: a picture of it that comes late
    /// is skipped, and the next takes the tick after (else it would be stamped before the
    /// repeat, and the smoother would re-anchor on it).
    mutating func noteRepeat(at pts: Int64) {
        guard thinning, hasTick else { return }
        nextTickNs = max(nextTickNs, Double(pts) + periodNs)
    }

    /// The decision for the picture captured at `pts` (ns, the source clock, increasing). A lane
    /// that then cannot take the picture (no pool slot: dropped as busy) keeps its copy of the
    /// gate from before the call, so the dropped picture takes no tick.
    mutating func decide(_ pts: Int64) -> Decision {
        var pause = !hasTick
        if lastPts != Int64.min {
            let (gap, overflow) = pts.subtractingReportingOverflow(lastPts)
            if !overflow, gap > 0, Double(gap) <= periodNs * pausePeriods {
                // No faster than 4 pictures a period: a hostile run of 1 ns gaps is not a rate.
                let g = max(Double(gap), periodNs / 4)
                meanIntervalNs += intervalGain * (g - meanIntervalNs)
            } else {
                pause = true
            }
        }
        lastPts = pts
        if thinning {
            if meanIntervalNs > periodNs * leaveFraction { thinning = false }
        } else if meanIntervalNs < periodNs * enterFraction {
            thinning = true
        }
        let t = Double(pts)
        guard thinning else {
            // Every picture passes on its own time; the grid waits on it, should the next be early.
            hasTick = true
            nextTickNs = t + periodNs
            return .admit(pts)
        }
        let late = t - nextTickNs
        if pause || late > periodNs * pausePeriods || late < -maxLagNs {
            // A pause, or a clock jump either way: the grid restarts on this picture.
            hasTick = true
            nextTickNs = t + periodNs
            return .admit(pts)
        }
        if late < -periodNs * marginFraction { return .skip }
        // Ticks the picture passed with none taken (0 when it is on or just before its tick).
        let passed = late > 0 ? (late / periodNs).rounded(.down) : 0
        let tick = nextTickNs + passed * periodNs
        // Outside Int64 (a hostile clock): the grid restarts on the picture.
        guard abs(tick) < 9.2e18 else {
            nextTickNs = t + periodNs
            return .admit(pts)
        }
        nextTickNs = tick + periodNs + phaseGain * (t - tick)
        return .admit(Int64(tick.rounded()))
    }
}
