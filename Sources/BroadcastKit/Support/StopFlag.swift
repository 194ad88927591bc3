#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A stop that wakes every blocking wait of an operation that can be given up: a connect, a TLS
/// or RTMP handshake, an HTTP request, a reconnect's back-off. A wait polls `wakeFD` beside its
/// own descriptor, so it returns the moment the flag is set, without polling slices.
///
/// `set()` is async-signal-safe (an atomic store and a `write` to an eventfd): a signal handler
/// calls it. `stop(atNs:)` arms a stop at a monotonic time (`--duration`), which waits treat as
/// part of their deadline.
///
/// Waits that belong to the stop itself (the last drain, RTMP's FCUnpublish, WHIP's DELETE)
/// do not wake on it: they have their own short deadlines inside the stop's 2 s.
package final class StopFlag: Sendable {
    /// The process's stop: the CLI's signals, `--duration` and the control socket's `stop` set it.
    package static let process = StopFlag()

    private let requested = Atomic<Bool>(false)
    private let atNs = Atomic<Int64>(.max)
    /// The self-pipe's read end: readable once the flag is set (never read back: it stays readable).
    package let wakeFD: Int32
    private let writeFD: Int32

    package init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        } else {
            fds = [-1, -1]
        }
        wakeFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        if wakeFD >= 0 { _ = close(wakeFD) }
        if writeFD >= 0 { _ = close(writeFD) }
    }

    /// Requests the stop now. Async-signal-safe.
    package func set() {
        requested.store(true, ordering: .releasing)
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
    }

    /// Arms a stop at CLOCK_MONOTONIC `ns` (the earlier of this and any armed before wins).
    package func stop(atNs ns: Int64) {
        var current = atNs.load(ordering: .acquiring)
        while ns < current {
            let (exchanged, original) = atNs.compareExchange(expected: current, desired: ns, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
    }

    /// True once `set()` was called or the armed time has come.
    package var isSet: Bool {
        requested.load(ordering: .acquiring) || MediaTime.now() >= atNs.load(ordering: .acquiring)
    }

    /// True when `set()` was called (a signal or a `stop` command), not only the armed time.
    package var wasRequested: Bool { requested.load(ordering: .acquiring) }

    /// The armed stop as a deadline (`.never` when none): a wait ends there at the latest.
    package var deadline: Deadline { Deadline(ns: atNs.load(ordering: .acquiring)) }
}
