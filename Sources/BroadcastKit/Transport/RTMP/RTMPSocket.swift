import Glibc

/// The publisher's connection: a TCP socket, optionally carrying a verified TLS session.
///
/// Connect has a real deadline (the OS default is minutes). After the optional TLS handshake the
/// descriptor is non-blocking and every wait is an explicit `poll` with a timeout, so a stalled
/// link surfaces as a timeout instead of a hung thread, a drain never blocks, and a `shutdown`
/// from another thread (`abortPendingIO`) wakes any wait at once. Plain writes use
/// `MSG_NOSIGNAL` (TLS sessions are made with `GNUTLS_NO_SIGNAL`): a peer that hung up gives
/// EPIPE, never SIGPIPE.
///
/// Used from one thread, except `shutdownNow()`.
package final class RTMPSocket {
    /// Why an I/O call failed.
    package enum Failure: Error, Equatable {
        /// The peer closed or reset the connection.
        case closed
        /// No progress within the timeout.
        case timedOut
        case failed(String)
    }

    /// SO_SNDBUF (the kernel doubles it): ~128 KB in flight, about 0.4 s at 2.5 Mbit/s.
    package static let sendBufferBytes: Int32 = 64 << 10

    package let fd: Int32
    private var tls: TLSSession?

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit { close() }

    /// Opens a TCP connection to `host:port` within `timeoutSeconds`, trying each address.
    /// Throws `connectFailed` with `displayName` (already redacted) and the reason.
    package static func connect(host: String, port: Int, timeoutSeconds: Int,
                                displayName: String) throws(TransportError) -> RTMPSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(host, String(port), &hints, &list)
        if rc != 0 {
            throw .connectFailed("\(displayName): cannot resolve host: \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastReason = "no address"
        var entry = list
        while let ai = entry {
            entry = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family,
                            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastReason = SystemError.describe(); continue }
            if let reason = finishConnect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen, timeoutSeconds) {
                lastReason = reason
                _ = Glibc.close(fd)
                continue
            }
            configure(fd, timeoutSeconds: timeoutSeconds)
            return RTMPSocket(fd: fd)
        }
        throw .connectFailed("\(displayName): \(lastReason)")
    }

    /// Runs the verified TLS handshake (blocking, bounded by `timeoutMs`) and from then on
    /// carries every byte through it.
    package func startTLS(verifier: TLSVerifier, host: String, timeoutMs: Int, displayName: String) throws(TransportError) {
        setNonBlocking(false)
        defer { setNonBlocking(true) }
        tls = try verifier.handshake(fd: fd, host: host, timeoutMs: timeoutMs, displayName: displayName)
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
                do { try wait(for: Int16(POLLIN), timeoutMs: timeoutMs) } catch .timedOut { return 0 }
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
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let queuedAtStart = queuedBytes()
        var waitedMs: Int32 = 0
        while true {
            let slice = min(1000, max(1, timeoutMs - waitedMs))
            let ready = poll(&pfd, 1, slice)
            if ready > 0 { return }
            if ready < 0 {
                if errno == EINTR { continue }
                throw .failed(SystemError.describe())
            }
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

    private func wait(for events: Int16, timeoutMs: Int32) throws(Failure) {
        var pfd = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let ready = poll(&pfd, 1, timeoutMs)
            if ready > 0 { return }
            if ready == 0 { throw .timedOut }
            if errno != EINTR { throw .failed(SystemError.describe()) }
        }
    }

    private static func outcome(errno code: Int32) -> TLSSession.Outcome {
        switch code {
        case EAGAIN, EWOULDBLOCK, EINTR: return .wouldBlock
        case EPIPE, ECONNRESET: return .closed
        default: return .failed(SystemError.describe(code))
        }
    }

    private func setNonBlocking(_ on: Bool) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    /// Returns nil on success, else the reason.
    private static func finishConnect(_ fd: Int32, _ addr: UnsafeMutablePointer<sockaddr>?, _ len: socklen_t,
                                      _ timeoutSeconds: Int) -> String? {
        if Glibc.connect(fd, addr, len) == 0 { return nil }
        guard errno == EINPROGRESS else { return SystemError.describe() }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pfd, 1, Int32(timeoutSeconds * 1000))
        if ready == 0 { return "connect timed out after \(timeoutSeconds) s" }
        if ready < 0 { return SystemError.describe() }
        var soError: Int32 = 0
        var soLen = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen) != 0 { return SystemError.describe() }
        if soError != 0 { return SystemError.describe(soError) }
        return nil
    }

    /// Timeouts for the blocking TLS handshake (receive = connect timeout, send = at least 10 s),
    /// no Nagle delay, and a small send buffer.
    private static func configure(_ fd: Int32, timeoutSeconds: Int) {
        var rcv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, socklen_t(MemoryLayout<timeval>.size))
        var snd = timeval(tv_sec: max(10, timeoutSeconds * 2), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A small kernel send buffer: otherwise Linux lets it grow to ~4 MB, a slow link hides
        // there for seconds, and the send queue's drop policy and bitrate adaptation never see it.
        var sndbuf: Int32 = sendBufferBytes
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, socklen_t(MemoryLayout<Int32>.size))
    }
}
