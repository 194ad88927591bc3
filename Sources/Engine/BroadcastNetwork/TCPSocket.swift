import Glibc
import BroadcastCore
import BroadcastPipeline

/// The publisher's connection: a TCP socket, optionally carrying a verified TLS session.
///
/// Connect has a real deadline (the OS default is minutes). The descriptor is non-blocking from
/// the start (the TLS handshake too) and every wait is an explicit `poll` with a timeout, so a stalled
/// link surfaces as a timeout instead of a hung thread, a drain never blocks, and a `shutdown`
/// from another thread (`abortPendingIO`) wakes any wait at once. Plain writes use
/// `MSG_NOSIGNAL` (TLS sessions are made with `GNUTLS_NO_SIGNAL`): a peer that hung up gives
/// EPIPE, never SIGPIPE.
///
/// An operation that must end by a time (an RTMP open, an HTTP request) sets `operation`: every
/// wait is then bounded by what is left of that one deadline, however the peer paces its bytes,
/// and wakes at once when the operation's `StopFlag` is set (its self-pipe is polled beside the
/// socket).
///
/// Used from one thread, except `shutdownNow()`.
package final class TCPSocket {
    /// Why an I/O call failed.
    package enum Failure: Error, Equatable {
        /// The peer closed or reset the connection.
        case closed
        /// No progress within the timeout.
        case timedOut
        /// The whole operation's deadline passed (however the peer paced its bytes).
        case deadlinePassed
        /// The operation's stop flag was set (a signal, a `stop` command, the end of the run).
        case stopped
        case failed(String)
    }

    /// The operation in progress: its deadline, and the stop that wakes its waits.
    package struct Operation {
        package var deadline: Deadline
        var stop: StopFlag?

        package init(deadline: Deadline, stop: StopFlag?) {
            self.deadline = deadline
            self.stop = stop
        }

        /// No bound beyond each call's own timeout (streaming writes: progress-based).
        package static let unbounded = Operation(deadline: .never, stop: nil)

        /// The failure for a wait that reached the deadline (or was woken by the stop).
        var expiry: Failure {
            if let stop, stop.isSet { return .stopped }
            return .deadlinePassed
        }
    }

    /// Bounds every wait until it is set back to `.unbounded`.
    package var operation = Operation.unbounded

    /// SO_SNDBUF (the kernel doubles it): ~128 KB in flight, about 0.4 s at 2.5 Mbit/s.
    static let sendBufferBytes: Int32 = 64 << 10

    package let fd: Int32
    private var tls: TLSSession?
    /// The socket and the stop's self-pipe, polled together (made once).
    private let pollSet = UnsafeMutablePointer<pollfd>.allocate(capacity: 2)

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        close()
        pollSet.deallocate()
    }

    /// Opens a TCP connection to `host:port` within `timeoutSeconds` and within `operation`
    /// (its deadline, its stop), trying each address. Throws `connectFailed` with `displayName`
    /// (already redacted) and the reason. The returned socket carries `operation`.
    package static func connect(host: String, port: Int, timeoutSeconds: Int, operation: Operation = .unbounded,
                                displayName: String) throws(TransportError) -> TCPSocket {
        if let stop = operation.stop, stop.isSet { throw .connectFailed("\(displayName): the run stopped before connecting") }
        // Resolved within the connect's own bound and woken by the stop (a DNS server that never
        // answers holds only an abandoned lookup, not the caller).
        let limit = operation.deadline.earliest(.after(seconds: timeoutSeconds))
        let addresses: [HostResolver.Address]
        do {
            addresses = try HostResolver.resolve(host: host, port: port, socketType: Int32(SOCK_STREAM.rawValue),
                                                 deadline: limit, stop: operation.stop)
        } catch {
            throw .connectFailed("\(displayName): \(Self.resolveFailure(error, timeoutSeconds: timeoutSeconds))")
        }
        var lastReason = "no address"
        for address in addresses {
            let fd = socket(address.family,
                            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastReason = SystemError.describe(); continue }
            let limit = operation.deadline.earliest(.after(seconds: timeoutSeconds))
            if let reason = address.withSockaddr({ finishConnect(fd, $0, $1, timeoutSeconds, limit, operation.stop) }) {
                lastReason = reason
                _ = Glibc.close(fd)
                if let stop = operation.stop, stop.isSet { break }
                if operation.deadline.hasPassed { break }
                continue
            }
            configure(fd)
            let socket = TCPSocket(fd: fd)
            socket.operation = operation
            return socket
        }
        throw .connectFailed("\(displayName): \(lastReason)")
    }

    /// The line for a resolution that gave no address.
    package static func resolveFailure(_ failure: HostResolver.Failure, timeoutSeconds: Int) -> String {
        switch failure {
        case .failed(let why): return "cannot resolve host: \(why)"
        case .stopped: return "the run stopped while resolving the host"
        case .deadlinePassed: return "cannot resolve host: no answer within \(timeoutSeconds) s"
        case .busy: return "cannot resolve host: \(HostResolver.maxOutstanding) lookups are still in progress"
        }
    }

    /// Wraps a connected stream descriptor (tests: one end of a socketpair), made non-blocking.
    static func adopt(fd: Int32) throws(TransportError) -> TCPSocket {
        guard fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else {
            throw .connectFailed("cannot make descriptor \(fd) non-blocking")
        }
        return TCPSocket(fd: fd)
    }

    /// Runs the verified TLS handshake (non-blocking, bounded by `timeoutMs` and by `operation`,
    /// woken by its stop) and from then on carries every byte through it.
    package func startTLS(verifier: TLSVerifier, host: String, timeoutMs: Int, displayName: String) throws(TransportError) {
        let callDeadline = Deadline.after(milliseconds: timeoutMs)
        tls = try verifier.handshake(fd: fd, host: host, timeoutMs: timeoutMs, displayName: displayName) {
            (wantsWrite) throws(Failure) in
            try wait(for: Int16(wantsWrite ? POLLOUT : POLLIN), until: callDeadline)
        }
    }

    /// Sends all `count` bytes; waits at most `timeoutMs` each time the socket makes no progress.
    package func send(_ bytes: UnsafeRawPointer, count: Int, timeoutMs: Int32) throws(Failure) {
        var done = 0
        while done < count {
            let outcome: TLSSession.Outcome
            if let tls {
                outcome = tls.send(bytes + done, count: count - done)
            } else {
                let n = Glibc.send(fd, bytes + done, count - done, Int32(MSG_NOSIGNAL))
                outcome = n >= 0 ? .bytes(n) : Self.outcome(errno: errno)
            }
            switch outcome {
            case .bytes(let n): done += n
            case .wouldBlock: try waitWritable(timeoutMs: timeoutMs)
            case .closed: throw .closed
            case .failed(let reason): throw .failed(reason)
            }
        }
    }

    /// Receives up to `capacity` bytes, waiting at most `timeoutMs` (0: not at all) for the
    /// first. Returns 0 when nothing arrived in time; throws `.closed` at EOF.
    package func receive(into buffer: UnsafeMutableRawPointer, capacity: Int, timeoutMs: Int32) throws(Failure) -> Int {
        while true {
            let outcome: TLSSession.Outcome
            if let tls {
                outcome = tls.receive(into: buffer, capacity: capacity)
            } else {
                let n = recv(fd, buffer, capacity, 0)
                outcome = n > 0 ? .bytes(n) : n == 0 ? .closed : Self.outcome(errno: errno)
            }
            switch outcome {
            case .bytes(let n): return n
            case .closed: throw .closed
            case .failed(let reason): throw .failed(reason)
            case .wouldBlock:
                if timeoutMs <= 0 { return 0 }
                do { try wait(for: Int16(POLLIN), until: .after(milliseconds: Int(timeoutMs))) } catch .timedOut { return 0 }
                // Readable (or hung up): the next round reads the data or the EOF.
            }
        }
    }

    /// True when the peer has not closed the connection (no EOF pending, no error).
    package var peerStillOpen: Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n > 0 { return true }
        if n == 0 { return false }
        return errno == EAGAIN || errno == EWOULDBLOCK
    }

    /// Bytes in `fd`'s kernel send queue not yet acknowledged by the peer (0 when unknown). Any
    /// thread: a descriptor closed meanwhile only gives an error, read as 0.
    package static func unsentBytes(_ fd: Int32) -> Int {
        guard fd >= 0 else { return 0 }
        var queued: Int32 = 0
        return ioctl(fd, UInt(TIOCOUTQ), &queued) == 0 ? max(0, Int(queued)) : 0
    }

    /// Makes every pending and later I/O on this socket fail at once. Any thread.
    package static func shutdownNow(_ fd: Int32) {
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Ends TLS (without waiting for the server) and closes the descriptor. Safe to call twice.
    ///
    /// `abortive` resets the connection (SO_LINGER 0: an RST, the unsent bytes discarded) instead
    /// of queueing a FIN behind them. On a link that passes small packets but not full segments
    /// a FIN never arrives, and the server keeps the old session ("already publishing"); the
    /// one-packet RST gets through as soon as anything does.
    package func close(abortive: Bool = false) {
        if abortive && !closed {
            var l = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        } else {
            tls?.close()
        }
        tls = nil
        if !closed {
            _ = Glibc.close(fd)
            closed = true
        }
    }

    private var closed = false

    // MARK: - Internals

    /// Waits until the kernel takes more bytes. A link that drains however slowly is not dead:
    /// POLLOUT only comes once a third of the send buffer is free, which at a few kbit/s takes
    /// minutes, so every second the queue in the kernel is checked and any shrinking counts as
    /// progress (as a blocking send with SO_SNDTIMEO would return its partial count). Only
    /// `timeoutMs` without a byte leaving is `.timedOut`.
    private func waitWritable(timeoutMs: Int32) throws(Failure) {
        let queuedAtStart = queuedBytes()
        var waitedMs: Int32 = 0
        while true {
            let slice = min(1000, max(1, timeoutMs - waitedMs))
            do { try wait(for: Int16(POLLOUT), until: .after(milliseconds: Int(slice))); return } catch .timedOut {}
            if queuedBytes() < queuedAtStart { return }
            waitedMs += slice
            if waitedMs >= timeoutMs { throw .timedOut }
        }
    }

    /// Bytes in the kernel's send queue not yet acknowledged by the peer (SIOCOUTQ).
    private func queuedBytes() -> Int32 {
        var queued: Int32 = 0
        return ioctl(fd, UInt(TIOCOUTQ), &queued) == 0 ? queued : Int32.max
    }

    /// Waits for `events` until `callDeadline` (`.timedOut`), the operation's deadline
    /// (`.deadlinePassed`) or its stop (`.stopped`), whichever comes first.
    private func wait(for events: Int16, until callDeadline: Deadline) throws(Failure) {
        let op = operation
        let wakeFD = op.stop?.wakeFD ?? -1
        while true {
            if let stop = op.stop, stop.isSet { throw .stopped }
            let limit = op.deadline
            if limit.hasPassed { throw op.expiry }
            if callDeadline.hasPassed { throw .timedOut }
            pollSet[0] = pollfd(fd: fd, events: events, revents: 0)
            // A negative descriptor is skipped by poll.
            pollSet[1] = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(pollSet, 2, limit.earliest(callDeadline).remainingMs())
            if ready < 0 {
                if errno == EINTR { continue }
                throw .failed(SystemError.describe())
            }
            if pollSet[0].revents != 0 { return }
            // Woken by the stop, or a timeout: the top of the loop says which.
        }
    }

    private static func outcome(errno code: Int32) -> TLSSession.Outcome {
        switch code {
        case EAGAIN, EWOULDBLOCK, EINTR: return .wouldBlock
        case EPIPE, ECONNRESET: return .closed
        default: return .failed(SystemError.describe(code))
        }
    }

    /// Returns nil on success, else the reason. Waits until `limit`, woken by `stop`.
    private static func finishConnect(_ fd: Int32, _ addr: UnsafePointer<sockaddr>, _ len: socklen_t,
                                      _ timeoutSeconds: Int, _ limit: Deadline, _ stop: StopFlag?) -> String? {
        if Glibc.connect(fd, addr, len) == 0 { return nil }
        guard errno == EINPROGRESS else { return SystemError.describe() }
        var pfds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0),
                    pollfd(fd: stop?.wakeFD ?? -1, events: Int16(POLLIN), revents: 0)]
        while true {
            if let stop, stop.isSet { return "the run stopped while connecting" }
            if limit.hasPassed { return "connect timed out after \(timeoutSeconds) s" }
            let ready = poll(&pfds, 2, limit.remainingMs())
            if ready < 0 {
                if errno == EINTR { continue }
                return SystemError.describe()
            }
            if pfds[0].revents != 0 { break }
        }
        var soError: Int32 = 0
        var soLen = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen) != 0 { return SystemError.describe() }
        if soError != 0 { return SystemError.describe(soError) }
        return nil
    }

    /// No Nagle delay, and a small send buffer. (Every wait is a poll with a deadline: no
    /// SO_RCVTIMEO/SO_SNDTIMEO, the descriptor never blocks.)
    private static func configure(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A small kernel send buffer: otherwise Linux lets it grow to ~4 MB, a slow link hides
        // there for seconds, and the send queue's drop policy and bitrate adaptation never see it.
        var sndbuf: Int32 = sendBufferBytes
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, socklen_t(MemoryLayout<Int32>.size))
    }
}
