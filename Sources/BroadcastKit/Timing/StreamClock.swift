import Synchronization

/// The session timeline: zero at the first accepted buffer of any lane.
///
/// All lanes share one origin, so a mic that starts 700 ms late lands 700 ms into the stream
/// rather than at zero (the misalignment HaishinKit users see when each track starts at zero).
package final class StreamClock: Sendable {
    private let origin = Atomic<Int64>(Int64.min)

    package init() {}

    /// Timeline nanoseconds for a capture PTS; the first call fixes the origin.
    package func timelineNs(_ pts: Int64) -> Int64 {
        var o = origin.load(ordering: .acquiring)
        if o == Int64.min {
            let (exchanged, original) = origin.compareExchange(expected: Int64.min, desired: pts, ordering: .acquiringAndReleasing)
            o = exchanged ? pts : original
        }
        let (d, overflow) = pts.subtractingReportingOverflow(o)
        return overflow ? (pts < o ? Int64.min / 2 : Int64.max / 2) : d
    }

    /// Timeline milliseconds for a capture PTS, never negative.
    package func timelineMs(_ pts: Int64) -> Int64 {
        max(0, MediaTime.millis(timelineNs(pts)))
    }

    /// The origin in source-clock nanoseconds, or nil before the first buffer (the mixer starts
    /// silence from it when no audio source delivers).
    package var originNs: Int64? {
        let o = origin.load(ordering: .acquiring)
        return o == Int64.min ? nil : o
    }
}
