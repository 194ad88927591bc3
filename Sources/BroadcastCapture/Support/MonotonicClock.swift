#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// CLOCK_MONOTONIC in nanoseconds, the clock every live source stamps its buffers with.
enum MonotonicClock {
    @inline(__always)
    static func now() -> Int64 { MediaTime.now() }

    @inline(__always)
    static func timespec(_ ns: Int64) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    }

    /// `ticks * den / num` seconds in nanoseconds, exact and without Int64 overflow for any
    /// realistic tick count (a frame index at a rate of num/den frames per second, or a
    /// sample index with den = 1).
    @inline(__always)
    static func nanos(ticks: Int64, num: Int64, den: Int64) -> Int64 {
        let scaled = ticks * den
        let seconds = scaled / num
        let remainder = scaled % num
        return seconds * 1_000_000_000 + remainder * 1_000_000_000 / num
    }
}
