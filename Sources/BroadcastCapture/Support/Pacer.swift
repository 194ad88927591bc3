#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Sleeps a lane until absolute CLOCK_MONOTONIC deadlines, so that pacing never drifts
/// (each deadline is computed from the start time, not from the previous wake-up).
///
/// With `realtime == false` it never sleeps: the source runs as fast as the sink takes
/// buffers (benchmarks, tests).
struct Pacer: Sendable {
    let realtime: Bool

    /// Longest single sleep, so a stop request is noticed within this many nanoseconds.
    private static let maxSleep: Int64 = 50_000_000

    /// Waits until `deadline`. Returns false if the group was asked to stop meanwhile.
    func wait(until deadline: Int64, group: LaneGroup) -> Bool {
        guard realtime else { return !group.isStopping }
        while true {
            if group.isStopping { return false }
            let now = MediaTime.now()
            if now >= deadline { return true }
            var ts = MediaTime.timespec(min(deadline, now + Pacer.maxSleep))
            _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
        }
    }
}
