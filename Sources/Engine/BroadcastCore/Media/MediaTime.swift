#if canImport(Glibc)
import Glibc
#endif

/// Nanosecond timestamps on a source clock; live sources use CLOCK_MONOTONIC.
public enum MediaTime {
    public static let nanosPerSecond: Int64 = 1_000_000_000

    /// The current CLOCK_MONOTONIC time in nanoseconds.
    @inline(__always)
    public static func now() -> Int64 {
        var ts = Glibc.timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * nanosPerSecond + Int64(ts.tv_nsec)
    }

    /// `ticks` of a `num/den` Hz clock (frames at a frame rate, samples at a sample rate) in
    /// nanoseconds, split so long streams neither overflow nor accumulate rounding.
    @inline(__always)
    public static func nanoseconds(ticks: Int64, num: Int64, den: Int64) -> Int64 {
        let scaled = ticks * den
        return scaled / num * nanosPerSecond + scaled % num * nanosPerSecond / num
    }

    /// An absolute CLOCK_MONOTONIC deadline for clock_nanosleep / pthread_cond_timedwait.
    @inline(__always)
    public static func timespec(_ ns: Int64) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(ns / nanosPerSecond), tv_nsec: Int(ns % nanosPerSecond))
    }

    /// Converts nanoseconds to whole milliseconds, rounding to nearest.
    @inline(__always)
    public static func millis(_ ns: Int64) -> Int64 {
        ns >= 0 ? ns / 1_000_000 + (ns % 1_000_000 >= 500_000 ? 1 : 0)
            : -((ns == Int64.min ? Int64.max : -ns) / 1_000_000)
    }
}
