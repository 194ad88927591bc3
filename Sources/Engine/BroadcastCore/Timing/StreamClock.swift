import Synchronization

/// The session timeline: zero at the first accepted buffer of any lane.
///
/// All lanes share one origin, so a mic that starts 700 ms late lands 700 ms into the stream
/// rather than at zero (the misalignment HaishinKit users see when each track starts at zero).
package final class StreamClock: Sendable {
    private let origin = Atomic<Int64>(Int64.min)
    /// CLOCK_MONOTONIC when the origin was fixed: a source's PTS need not be on that clock (an
    /// embedder's own timestamps), so wall-clock pacing measures from here, never from `origin`.
    private let originArrival = Atomic<Int64>(Int64.min)

    package init() {}

    /// Timeline nanoseconds for a capture PTS; the first call fixes the origin.
    /// `arrivalNs`: CLOCK_MONOTONIC of the buffer's arrival (now, when not given).
    package func timelineNs(_ pts: Int64, arrivalNs: Int64? = nil) -> Int64 {
        var o = origin.load(ordering: .acquiring)
        if o == Int64.min {
            let (exchanged, original) = origin.compareExchange(expected: Int64.min, desired: pts, ordering: .acquiringAndReleasing)
            o = exchanged ? pts : original
            if exchanged { originArrival.store(arrivalNs ?? MediaTime.now(), ordering: .releasing) }
        }
        let (d, overflow) = pts.subtractingReportingOverflow(o)
        return overflow ? (pts < o ? Int64.min / 2 : Int64.max / 2) : d
    }

    /// Timeline milliseconds for a capture PTS, never negative.
    package func timelineMs(_ pts: Int64) -> Int64 {
        max(0, MediaTime.millis(timelineNs(pts)))
    }

    /// CLOCK_MONOTONIC when the first buffer was accepted, or nil before it (the mixer paces the
    /// silence of a session without any audio source from it).
    package var originArrivalNs: Int64? {
        let o = originArrival.load(ordering: .acquiring)
        return o == Int64.min ? nil : o
    }
}
