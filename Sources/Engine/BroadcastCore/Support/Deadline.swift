/// The end of one whole operation on the monotonic clock (CLOCK_MONOTONIC, `MediaTime.now()`).
///
/// A timeout per read restarts with every byte, so a peer that trickles one byte inside each
/// window holds the caller for ever; a deadline is fixed when the operation starts and every
/// read, write and wait of that operation is bounded by what is left of it.
package struct Deadline: Sendable, Equatable {
    /// CLOCK_MONOTONIC nanoseconds; `Int64.max` for none.
    package let ns: Int64

    package init(ns: Int64) { self.ns = ns }

    /// No deadline.
    package static let never = Deadline(ns: .max)

    /// `milliseconds` from now.
    package static func after(milliseconds: Int) -> Deadline {
        Deadline(ns: MediaTime.now() + Int64(max(0, milliseconds)) * 1_000_000)
    }

    /// `seconds` from now.
    package static func after(seconds: Int) -> Deadline { after(milliseconds: seconds * 1000) }

    package var hasPassed: Bool { ns != .max && MediaTime.now() >= ns }

    /// Milliseconds left, rounded up (a wait of 0 ms would spin), at least 0, at most `cap`.
    package func remainingMs(cap: Int32 = .max) -> Int32 {
        if ns == .max { return cap }
        let left = ns - MediaTime.now()
        if left <= 0 { return 0 }
        return Int32(clamping: min(Int64(cap), (left + 999_999) / 1_000_000))
    }

    /// The earlier of the two.
    package func earliest(_ other: Deadline) -> Deadline { ns <= other.ns ? self : other }
}
