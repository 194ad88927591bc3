#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A stop that wakes every blocking wait of an operation that can be given up: a connect, a TLS
/// or RTMP handshake, an HTTP request, a reconnect's back-off. A wait polls `wakeFD` beside its
/// own descriptor, so it returns the moment the flag is set, without polling slices.
///
/// `set()` is async-signal-safe (an atomic store and a one-byte `write` to a self-pipe): a signal
/// handler calls it.
///
/// Waits that belong to the stop itself (the last drain, RTMP's FCUnpublish, WHIP's DELETE)
/// do not wake on it: they have their own short deadlines inside the stop's 2 s.
package final class StopFlag: Sendable {
    /// The process's stop: the CLI's signals and the control socket's `stop` set it, and the end
    /// of the run (`--duration`, a failure, the end of input), so a reconnect in progress gives up.
    package static let process = StopFlag()

    private let requested = Atomic<Bool>(false)
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

    /// True once `set()` was called.
    package var isSet: Bool { requested.load(ordering: .acquiring) }
}
