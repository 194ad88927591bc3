/// Puts a live source's pictures on the output frame grid before they are converted: each output
/// tick takes at most one picture, the picture is stamped with its tick, and a picture whose tick
/// is taken is skipped (neither converted nor encoded, counted as `video_frames_skipped`).
///
/// The grid runs on the source's own clock: anchored on its first picture and pulled toward the
/// pictures it admits, so its phase follows the source and the stamps never drift from the
/// pictures' capture times (a 30 fps capture with ±15 ms of jitter and a few hundred ppm of skew
/// keeps its A/V sync). Only the stamps are snapped; the clock is never moved.
///
/// Two rules, by the source's mean picture interval (a running mean, `intervalGain`; a gap longer
/// than `pausePeriods` is a pause, not a rate):
/// - **At or below the output rate** (mutter at ~30 fps with its 60 Hz jitter: 17, 33, 50 ms
///   apart; a 25 fps camera; the A/V test source): a picture takes the earliest free tick within
///   `toleranceFraction` of a period of its time, else the nearest later one. A picture that
///   comes more than that before the next free tick (a second picture within one tick) is skipped.
///   The grid's phase follows the admitted pictures by `followGain` (faster while it settles after
///   an anchor: the running mean of the first `settleFrames`).
/// - **Faster than the output** (mean under `enterFraction` of the period, until it is back above
///   `leaveFraction`: a 60 Hz desktop under `--fps 30`, 60 fps Y4M): a picture at or after its tick,
///   less `marginFraction` of a period, takes that tick (a later one, its nearest tick); one
///   before it is skipped. The grid is
///   pulled by `phaseGain`, so a 60 Hz source's admitted pictures sit on their ticks and the
///   skipped ones half a period away, a quarter period from either edge.
///
/// A grid move is at most `maxShiftFraction` of a period a picture, so stamps are whole periods
/// apart give or take that (never under 25 ms at 30 fps). Ticks a repeat took (`noteRepeat`) are
/// taken: a picture of such a tick that comes late (a capture thread stalled on a loaded machine)
/// is stale, skipped, and the next picture takes its own tick. A pause (no picture for more than
/// `pausePeriods`: a still screen, a paused source), or a clock jump, restarts the grid on the
/// picture, at its own time: it is new content, and the timestamp smoother places it after the
/// repeats. A picture after a pause captured before the repeats' last tick (held back by a
/// stalled thread) is new content too: it takes the tick after the repeats, and the grid goes
/// on from there (the pictures held back with it are stale).
///
/// Pure and allocation-free: the video lane keeps one under its convert lock.
struct FrameRateGate: Sendable {
    /// The output frame period in ns.
    let periodNs: Double
    /// The source counts as faster once its mean interval is below this fraction of the period.
    var enterFraction = 0.85
    /// ... and no longer once its mean interval is above this fraction.
    var leaveFraction = 0.95
    /// Faster source: a picture this fraction of a period before its tick still takes it.
    var marginFraction = 0.25
    /// Source at or below the rate: a picture takes a tick within this fraction of a period of it
    /// (above one half: ±15 ms of jitter at 30 fps plus the grid's own error still finds its tick).
    var toleranceFraction = 0.6
    /// Gaps longer than this many periods are pauses: not part of the mean.
    var pausePeriods = 4.0
    /// Pictures this far before their tick (late behind repeats that took their ticks) are
    /// skipped; further, the source clock jumped back and the grid restarts.
    var maxLagNs: Double = 1e9
    /// Weight of each new gap in the mean interval (about an eight-picture memory).
    var intervalGain = 0.125
    /// Faster source: fraction of an admitted picture's distance from its tick the grid moves by.
    var phaseGain = 0.1
    /// Source at or below the rate: the same, once settled (about a 20-picture memory).
    var followGain = 0.05
    /// Pictures after an anchor whose running mean places the grid (gain 1/n).
    var settleFrames = 8
    /// Most the grid moves for one picture, as a fraction of a period.
    var maxShiftFraction = 0.15

    /// What to do with one picture.
    enum Decision: Equatable, Sendable {
        /// Convert and encode it, stamped with this time (ns, the source clock): its output tick.
        case admit(Int64)
        /// Skip it: its tick is taken.
        case skip
    }

    private var lastPts: Int64 = Int64.min
    private var meanIntervalNs: Double
    private var thinning = false
    /// The last tick taken (by a picture or a repeat), on the source clock (ns); valid with `hasTick`.
    private var lastTickNs: Double = 0
    private var hasTick = false
    /// Pictures admitted since the grid was anchored (the settling gain's count).
    private var settled = 0

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
    /// grid slot), because no picture came in time (a still screen, a capture thread stalled on a
    /// loaded machine). That tick is taken: the next picture takes a later one.
    mutating func noteRepeat(at pts: Int64) {
        guard hasTick else { return }
        lastTickNs = max(lastTickNs, Double(pts))
    }

    /// The decision for the picture captured at `pts` (ns, the source clock, increasing). A lane
    /// that then cannot take the picture (no pool slot: dropped as busy) keeps its copy of the
    /// gate from before the call, so the dropped picture takes no tick.
    mutating func decide(_ pts: Int64) -> Decision {
        var pause = false
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
            if meanIntervalNs > periodNs * leaveFraction {
                thinning = false
                settled = 0  // the thinned grid sat on the fast pictures: find the source's phase again
            }
        } else if meanIntervalNs < periodNs * enterFraction {
            thinning = true
        }
        let t = Double(pts)
        let x = (t - lastTickNs) / periodNs  // periods since the last tick taken
        if pause, hasTick, x < 1 - toleranceFraction, x * periodNs >= -maxLagNs {
            // After a pause, a picture captured before the repeats' last tick (delivered late by a
            // stalled capture thread): it is new content, shown on the tick after the repeats,
            // and the grid goes on from there, so the pictures held back with it are stale.
            lastTickNs += periodNs
            settled = 1
            return .admit(Int64(lastTickNs.rounded()))
        }
        guard hasTick, !pause, x * periodNs >= -maxLagNs, x <= pausePeriods + 2 else {
            // The first picture, a pause, or a clock jump: the grid starts here.
            return anchor(pts)
        }
        let ticks: Double
        if thinning {
            if x < 1 - marginFraction { return .skip }
            // A late picture (the source skipped ticks) takes its nearest tick.
            ticks = max(1, x.rounded())
        } else {
            if x < 1 - toleranceFraction { return .skip }
            ticks = max(1, (x - toleranceFraction).rounded(.up))
        }
        let tick = lastTickNs + ticks * periodNs
        // Outside Int64 (a hostile clock): the grid restarts on the picture.
        guard abs(tick) < 9.2e18 else { return anchor(pts) }
        settled += 1
        let gain = thinning ? phaseGain : settled <= settleFrames ? 1 / Double(settled) : followGain
        let limit = periodNs * maxShiftFraction
        lastTickNs = tick + min(limit, max(-limit, gain * (t - tick)))
        return .admit(Int64(tick.rounded()))
    }

    private mutating func anchor(_ pts: Int64) -> Decision {
        hasTick = true
        lastTickNs = Double(pts)
        settled = 1
        return .admit(pts)
    }
}
