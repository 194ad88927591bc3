/// Places one audio lane's buffers on the session timeline, in 48 kHz sample positions.
///
/// Position comes from the running sample count, anchored to the first buffer's PTS. The
/// capture PTS of later buffers is only a measurement: its disagreement with the sample count
/// is low-pass filtered (jitter averages out) and corrected by slewing the write position a few
/// samples at a time (sample insertion or drop, at most `maxSlewPPM`). A jump larger than
/// `reanchorThreshold` (a pause, a device restart) re-anchors at once. Error never accumulates,
/// because every correction is measured against the capture clock.
package struct AudioClock: Sendable {
    package static let rate: Int64 = 48_000
    /// 100 ms: larger disagreements are real discontinuities, not jitter or drift.
    var reanchorThreshold: Int64 = 4_800
    /// Filtered errors under 1 ms are left alone.
    var deadband: Double = 48
    /// Fastest correction: 2000 ppm, inaudible on speech and tones.
    var maxSlewPPM: Double = 2_000
    /// Weight of each new measurement in the error filter (~100-buffer time constant).
    var alpha: Double = 0.01

    /// After (re)anchoring on one jittery capture time, the next buffers are averaged quickly
    /// (running mean, faster slew) so the anchor's own error is gone within about a second.
    var settlingBuffers = 48
    var settlingSlewPPM: Double = 10_000
    private var sinceAnchor = 0
    private var anchored = false
    private var nextPosition: Int64 = 0
    private var filteredError: Double = 0
    private var slewCarry: Double = 0
    private(set) var reanchors = 0
    private(set) var insertedFrames: Int64 = 0
    private(set) var droppedFrames: Int64 = 0

    package init() {}

    /// Returns where a buffer of `frames` samples captured at `timelineNs` goes.
    package mutating func place(timelineNs: Int64, frames: Int) -> Int64 {
        // Split so that hours-long timelines (or absurd PTS) cannot overflow.
        let measured = timelineNs / MediaTime.nanosPerSecond * AudioClock.rate
            + timelineNs % MediaTime.nanosPerSecond * AudioClock.rate / MediaTime.nanosPerSecond
        if !anchored {
            anchored = true
            nextPosition = measured
            sinceAnchor = 0
        } else {
            let err = measured - nextPosition
            if err > reanchorThreshold || err < -reanchorThreshold {
                nextPosition = measured
                filteredError = 0
                slewCarry = 0
                sinceAnchor = 0
                reanchors += 1
            } else {
                sinceAnchor += 1
                let settling = sinceAnchor <= settlingBuffers
                let weight = settling ? max(alpha, 1 / Double(sinceAnchor + 1)) : alpha
                filteredError += weight * (Double(err) - filteredError)
                if filteredError > deadband || filteredError < -deadband {
                    let limit = Double(frames) * (settling ? settlingSlewPPM : maxSlewPPM) / 1_000_000
                    slewCarry += max(-limit, min(limit, filteredError))
                    let step = Int64(slewCarry)
                    if step != 0 {
                        slewCarry -= Double(step)
                        nextPosition += step
                        filteredError -= Double(step)
                        if step > 0 { insertedFrames += step } else { droppedFrames -= step }
                    }
                }
            }
        }
        let at = nextPosition
        nextPosition += Int64(frames)
        return at
    }
}
