/// Removes capture-time jitter from video PTS by snapping frames onto a frame grid that
/// follows the source's real rate.
///
/// Audio positions come from the sample count, so they are smooth; raw video PTS carry the
/// capture thread's scheduling jitter (±15 ms is common), which would otherwise reach the
/// stream unchanged and show up as A/V offset. The grid is a second-order tracking loop
/// (phase and period), so a capture clock running a few hundred ppm fast is followed without
/// building up error, and each output is a smoothed grid point instead of the noisy PTS.
///
/// The grid only takes over after `lockFrames` consecutive regular frames (one slot apart and
/// within `toleranceFraction` of a period of their slot; a frame that arrives early by more
/// than half a period still takes the next slot, never the previous one). Before that, and after anything that
/// is not a regular frame (a pause, a jump, variable-rate input), PTS pass through unchanged
/// and the grid re-anchors on them: a discontinuity is never smoothed over. A few dropped
/// frames (up to `maxDroppedFrames`) keep the lock.
///
/// Repeated pictures (the video lane encodes the last one again when the source sends nothing
/// new within a frame, see `VideoLane`) take the grid's next slots through `repeatSlot`: the
/// grid continues through them with no loop update, and they count as regular frames, so a
/// still screen locks the grid like a steady source. The first picture after repeats takes the
/// nearest slot after them (never a discontinuity; while settling too, so a damage-driven
/// source stays on one grid); on a locked grid, after more than `maxDroppedFrames` repeats its
/// phase is checked over the next frames as after a bridged pause.
///
/// A value type with no allocation: the video lane keeps one under its convert lock.
package struct VideoTimestampSmoother: Sendable {
    /// Nominal frame period in ns.
    let nominalPeriodNs: Double
    /// A frame further than this fraction of a period from its grid slot is a discontinuity.
    /// Above one half, so ±15 ms of jitter at 30 fps plus the grid's own error still snaps.
    var toleranceFraction: Double = 0.6
    /// Consecutive regular frames needed before PTS are snapped (the phase is their mean).
    /// Half a second at 30 fps: variable-rate input practically never looks regular that long.
    var lockFrames = 15
    /// Missing frames in a row that still count as the same grid (capture drops).
    var maxDroppedFrames = 3
    /// Loop gains: phase (fraction of each error applied, ~50-frame time constant) and period
    /// (overdamped; small, so ±15 ms of jitter moves the period by well under 100 ppm).
    var phaseGain = 0.02
    var periodGain = 0.02 * 0.02 / 8
    /// The tracked rate stays within this of nominal (a wrong --fps is not "drift").
    var maxRatePPM = 5_000.0
    /// Longest pause bridged on the extended grid; longer ones re-anchor at once.
    var maxBridgeNs: Double = 60e9
    /// Frames after a bridged pause whose mean phase decides whether the grid held.
    var verifyFrames = 15
    /// Mean phase error (fraction of a period) beyond which a bridged grid is re-anchored.
    var verifyToleranceFraction = 0.15
    /// Outputs moved by at least this much are counted in `corrections`.
    var correctionThresholdNs: Int64 = 1_000_000

    private var anchored = false
    private var locked = false
    /// The grid's last slot: integer ns plus a fractional carry, so absolute CLOCK_MONOTONIC
    /// values keep sub-ns precision for hours.
    private var slotNs: Int64 = 0
    private var slotFraction: Double = 0
    private var periodNs: Double
    private var regularRun = 0
    /// Frames still to check after a bridged pause, and their summed phase error.
    private var verifyLeft = 0
    private var verifySum: Double = 0
    private var lastOutput: Int64 = Int64.min
    /// Repeats since the last real picture.
    private var repeatRun = 0

    /// Frames whose PTS was moved by at least `correctionThresholdNs`.
    private(set) var corrections = 0
    /// Discontinuities after which the grid restarted from the raw PTS.
    private(set) var reanchors = 0

    package init(fps: Int) {
        nominalPeriodNs = 1e9 / Double(max(1, fps))
        periodNs = nominalPeriodNs
    }

    /// The tracked frame period in ns (nominal until the grid has locked and learned).
    var trackedPeriodNs: Double { periodNs }
    /// True while PTS are being snapped to the grid.
    var isLocked: Bool { locked }

    /// The PTS of a repeated picture `slots` frame periods after the last output (1 unless the
    /// encoder fell behind): the grid extended, not moved. Nil before the first real frame.
    package mutating func repeatSlot(slots: Int = 1) -> Int64? {
        // No repeat at the far end of the timestamp range (hostile or wrapped PTS): the next slot
        // would not fit in Int64.
        guard anchored, slots > 0, slotNs < Int64.max - Int64((Double(slots) + 2) * periodNs) else { return nil }
        advance(by: Double(slots) * periodNs)
        if !locked {
            regularRun += slots
            if regularRun >= lockFrames { locked = true }
        }
        repeatRun += slots
        let value = slotNs &+ Int64(slotFraction.rounded())
        return emit(value, raw: value)
    }

    /// Returns the PTS to use for a frame captured at `pts` (ns, any monotonic clock).
    /// Outputs are strictly increasing when inputs are.
    package mutating func smooth(_ pts: Int64) -> Int64 {
        guard anchored else {
            anchored = true
            anchor(pts)
            return emit(pts, raw: pts)
        }
        let d = Double(pts &- slotNs) - slotFraction
        let repeats = repeatRun
        repeatRun = 0
        if repeats > 0 {
            // After repeats: the nearest slot after the last repeat (a picture whose own slot a
            // repeat already took, being late, takes the next one). Settling or locked alike, so
            // a damage-driven source (pictures at any phase, repeats between) stays on one grid.
            let k = max(1, (d / periodNs).rounded())
            if k <= Double(maxDroppedFrames + 1) {
                advance(by: k * periodNs)
                if !locked {
                    regularRun += 1
                    if regularRun >= lockFrames { locked = true }
                } else if repeats > maxDroppedFrames && verifyLeft == 0 {
                    // A still spell: the source may come back on another phase; check it as
                    // after a bridged pause.
                    verifyLeft = verifyFrames
                    verifySum = d - k * periodNs
                }
                return emit(slotNs + Int64(slotFraction.rounded()), raw: pts)
            }
        }
        // Slots since the last one: the fewest that put the frame within tolerance, so a late
        // frame is not mistaken for a drop; an early frame still takes the next slot.
        let k = max(1, ((d - periodNs * toleranceFraction) / periodNs).rounded(.up))
        let e = d - k * periodNs
        let onGrid = d > 0 && abs(e) <= periodNs * toleranceFraction
        if locked {
            if d > 0 && k > Double(maxDroppedFrames + 1) && d <= maxBridgeNs && verifyLeft == 0 {
                // A pause: continue the grid, on probation.
                let slots = (d / periodNs).rounded()
                advance(by: slots * periodNs)
                verifyLeft = verifyFrames
                verifySum = d - slots * periodNs
                return emit(slotNs + Int64(slotFraction.rounded()), raw: pts)
            }
            guard onGrid && k <= Double(maxDroppedFrames + 1) else {
                // A jump, a long pause or a change of rate: follow the source from here.
                locked = false
                verifyLeft = 0
                reanchors += 1
                anchor(pts)
                return emit(pts, raw: pts)
            }
            if verifyLeft > 0 {
                // On probation: hold the extended grid (no loop update) and average the phase.
                advance(by: k * periodNs)
                verifySum += e
                verifyLeft -= 1
                if verifyLeft == 0 {
                    // The mean phase since the pause is the best estimate either way; a large
                    // one means the source came back on another phase.
                    let mean = verifySum / Double(verifyFrames + 1)
                    advance(by: mean)
                    if abs(mean) > periodNs * verifyToleranceFraction { reanchors += 1 }
                }
                return emit(slotNs + Int64(slotFraction.rounded()), raw: pts)
            }
            advance(by: k * periodNs + phaseGain * e)
            let limit = nominalPeriodNs * maxRatePPM / 1e6
            periodNs = min(nominalPeriodNs + limit, max(nominalPeriodNs - limit, periodNs + periodGain * e / k))
            return emit(slotNs + Int64(slotFraction.rounded()), raw: pts)
        }
        guard onGrid && k == 1 else {
            anchor(pts)
            return emit(pts, raw: pts)
        }
        // Settling: the slot is the running mean of the phase seen since the anchor, so the
        // lock starts from the average of `lockFrames` PTS, not from one jittered value.
        regularRun += 1
        advance(by: periodNs + e / Double(regularRun + 1))
        if regularRun >= lockFrames {
            locked = true
            return emit(slotNs + Int64(slotFraction.rounded()), raw: pts)
        }
        return emit(pts, raw: pts)
    }

    private mutating func anchor(_ pts: Int64) {
        slotNs = pts
        slotFraction = 0
        regularRun = 0
    }

    /// Moves the slot forward, keeping its integer part exact.
    private mutating func advance(by ns: Double) {
        slotFraction += ns
        let whole = slotFraction.rounded(.down)
        slotNs &+= Int64(whole)
        slotFraction -= whole
    }

    private mutating func emit(_ value: Int64, raw: Int64) -> Int64 {
        // Never repeat or go back, whatever the grid says.
        // Saturating: PTS at the ends of Int64 (the fuzzer's, a wrapped source clock) must not trap.
        let out = lastOutput == Int64.min ? value : max(value, lastOutput == Int64.max ? Int64.max : lastOutput + 1)
        lastOutput = out
        let (diff, overflow) = out.subtractingReportingOverflow(raw)
        if overflow || diff.magnitude >= UInt64(correctionThresholdNs) { corrections += 1 }
        return out
    }
}
