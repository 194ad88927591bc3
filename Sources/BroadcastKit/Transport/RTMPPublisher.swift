import CRTMP
import CGnuTLS
import Glibc
import Synchronization

/// librtmp's log output is process-global: send it to /dev/null once, before the first
/// connection, so nothing (least of all the stream key in its URL dumps) reaches stderr.
private let librtmpLoggingSilenced: Bool = {
    RTMP_LogSetLevel(RTMP_LOGCRIT)
    if let devNull = fopen("/dev/null", "w") { RTMP_LogSetOutput(devNull) }
    return true
}()

/// librtmp writes with plain send(): a peer that hangs up would raise SIGPIPE and kill the
/// process. If nobody installed a SIGPIPE handler, ignore it so the write fails with EPIPE.
private let brokenPipeSignalIgnored: Bool = {
    var current = sigaction()
    _ = sigaction(SIGPIPE, nil, &current)
    if current.__sigaction_handler.sa_handler == nil { _ = signal(SIGPIPE, SIG_IGN) }
    return true
}()

/// A `TagSink` that publishes FLV tags to an RTMP/RTMPS server through librtmp.
///
/// `open` connects (TCP with a real connect timeout; for `rtmps://` a verified TLS session,
/// see below; then the RTMP handshake), publishes, and raises the outgoing chunk size to 4096. `write` copies each tag body into one
/// preallocated packet buffer (with librtmp's header headroom) and sends it as one RTMP
/// message with an absolute timestamp. About once a second it drains whatever the server
/// sent (acks, pings, status) without blocking.
///
/// RTMPS: Debian's librtmp does its own GnuTLS handshake and verifies nothing, so it would hand
/// the key to any man in the middle. The publisher takes the TLS layer over instead of checking
/// after the fact: right after the TCP connect, `TLSVerifier` runs the handshake (with SNI),
/// verifies the chain against the system trust store plus `caFile`, and the host name; only a
/// verified session is installed as librtmp's `m_sb.sb_ssl` (librtmp then reads/writes through
/// it and deinits it in RTMP_Close), with the SSL feature bit cleared so RTMP_Connect1 does not
/// start a second, unverified handshake. A refused server gets no RTMP byte at all.
///
/// `open`/`write`/`close` come from the destination's single sender thread; `bytesSent` and
/// `lastWriteMonotonicNs` may be read from any thread.
package final class RTMPPublisher: TagSink, @unchecked Sendable {
    /// The destination with the key replaced by "****".
    package let displayName: String
    package var isNetworkPublisher: Bool { true }
    package let connectTimeoutSeconds: Int
    /// Tag body bytes handed to the socket since `open`.
    package var bytesSent: Int { sent.load(ordering: .relaxed) }
    /// CLOCK_MONOTONIC nanoseconds when the last byte of the last tag was written (0 before any).
    package var lastWriteMonotonicNs: UInt64 { lastWrite.load(ordering: .relaxed) }

    /// Outgoing RTMP chunk size after publishing starts (librtmp's default is 128).
    package static let outChunkSize: Int32 = 4096
    static let headroom = Int(RTMP_MAX_HEADER_SIZE)
    static let initialPacketCapacity = 512 << 10
    /// Chunk stream ids. librtmp uses 2 for protocol control and 3 for its commands
    /// (connect/publish/FCUnpublish/deleteStream). Script data shares 4 with video, as
    /// librtmp's own RTMP_Write does for all media, keeping it off the command stream whose
    /// header-compression state librtmp manages itself.
    static let controlChannel: Int32 = 0x02
    static let videoChannel: Int32 = 0x04
    static let audioChannel: Int32 = 0x05
    static let scriptChannel: Int32 = 0x04
    static let drainIntervalNs: UInt64 = 1_000_000_000
    /// SO_SNDBUF (the kernel doubles it): ~128 KB in flight, about 0.4 s at 2.5 Mbit/s.
    static let socketSendBufferBytes: Int32 = 64 << 10
    /// How long `open` watches the connection after NetStream.Publish.Start: nginx-rtmp's
    /// access rules (and some ingests for a bad key) confirm the publish, then hang up.
    package var rejectionGraceMilliseconds = 250
    /// Extra PEM CA file trusted for `rtmps://` besides the system store (not a secret).
    package let caFile: String?
    /// Loaded on the first `rtmps` open and kept for reconnects.
    private var tlsVerifier: TLSVerifier?
    private var usesTLS = false

    private let url: RTMPURL?
    private let urlError: RTMPURLError?
    private var rtmp: UnsafeMutablePointer<RTMP>?
    /// The connected socket, readable from the thread that stops the session.
    private let socketForAbort = Atomic<Int32>(-1)
    /// The URL handed to RTMP_SetupURL: librtmp keeps pointers into it until RTMP_Close.
    private var urlCString: UnsafeMutablePointer<CChar>?
    private var urlCStringLength = 0
    private var packetBuffer: UnsafeMutableRawPointer
    private var packetCapacity: Int
    private var lastDrainNs: UInt64 = 0
    private let sent = Atomic<Int>(0)
    private let lastWrite = Atomic<UInt64>(0)

    /// - Parameters:
    ///   - url: `rtmp://host[:port]/app[/key]` or `rtmps://...`.
    ///   - streamKey: appended after the URL's path; empty when `url` already holds the key.
    ///   - connectTimeoutSeconds: TCP connect timeout, TLS handshake timeout and socket receive timeout.
    ///   - caFile: for `rtmps://`, a PEM file of extra CAs to trust besides the system store.
    ///
    /// A malformed URL is reported by `open()` as `connectFailed` with a redaction-safe reason;
    /// an untrusted RTMPS server or an unusable `caFile` as `tlsRejected`.
    package init(url: String, streamKey: String, connectTimeoutSeconds: Int = 5, caFile: String? = nil) {
        self.caFile = caFile
        do {
            let parsed = try RTMPURL(url: url, streamKey: streamKey)
            self.url = parsed
            self.urlError = nil
            self.displayName = parsed.redacted
        } catch {
            self.url = nil
            self.urlError = error
            self.displayName = "rtmp (invalid URL)"
        }
        self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        packetCapacity = Self.initialPacketCapacity
        packetBuffer = .allocate(byteCount: packetCapacity, alignment: 16)
    }

    deinit {
        close()
        packetBuffer.deallocate()
    }

    package func open() throws {
        close()
        _ = librtmpLoggingSilenced
        _ = brokenPipeSignalIgnored
        guard let url else {
            throw TransportError.connectFailed(urlError?.description ?? "invalid RTMP URL")
        }
        sent.store(0, ordering: .relaxed)
        lastWrite.store(0, ordering: .relaxed)

        guard let r = RTMP_Alloc() else { throw TransportError.connectFailed("\(displayName): out of memory") }
        rtmp = r
        RTMP_Init(r)
        let full = url.fullURL
        let length = full.utf8.count
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: length + 1)
        full.withCString { copy.initialize(from: $0, count: length + 1) }
        urlCString = copy
        urlCStringLength = length + 1
        if RTMP_SetupURL(r, copy) == 0 {
            close()
            throw TransportError.connectFailed("\(displayName): librtmp could not parse the URL")
        }
        RTMP_EnableWrite(r)
        r.pointee.Link.timeout = Int32(connectTimeoutSeconds)

        let fd: Int32
        do { fd = try connectSocket(host: url.host, port: url.port) } catch {
            close()
            throw error
        }
        r.pointee.m_sb.sb_socket = fd
        r.pointee.m_bSendCounter = 1
        // From here a stop can cut a handshake that crawls over a stalled link.
        socketForAbort.store(fd, ordering: .releasing)
        if url.scheme == .rtmps {
            do { try startVerifiedTLS(r, fd: fd, host: url.host) } catch {
                close()
                throw error
            }
        }
        if RTMP_Connect1(r, nil) == 0 {
            close()
            throw TransportError.connectFailed("\(displayName): RTMP handshake or connect command failed")
        }
        if RTMP_ConnectStream(r, 0) == 0 || RTMP_IsConnected(r) == 0 {
            // A refusal is the server hanging up or librtmp closing on an error status; a socket
            // that is still open just never answered in time (a stalled link): a network fault.
            let stillOpen = RTMP_IsConnected(r) != 0 && Self.peerStillOpen(RTMP_Socket(r))
            close()
            if stillOpen {
                throw TransportError.connectFailed("\(displayName): no reply to publish within \(connectTimeoutSeconds) s")
            }
            throw TransportError.publishRejected("\(displayName): server refused publish or closed the connection")
        }
        try confirmPublishSurvives(r)
        try sendSetChunkSize(r)
        lastDrainNs = UInt64(MediaTime.now())
    }

    package func write(_ tag: FLVTag) throws {
        guard let r = rtmp, RTMP_IsConnected(r) != 0 else {
            throw TransportError.writeFailed("\(displayName): not connected")
        }
        let size = tag.body.count
        if size + Self.headroom > packetCapacity { grow(to: size + Self.headroom) }
        let body = packetBuffer + Self.headroom
        if let source = tag.body.baseAddress, size > 0 { body.copyMemory(from: source, byteCount: size) }

        var packet = RTMPPacket()
        packet.m_headerType = UInt8(RTMP_PACKET_SIZE_LARGE)
        packet.m_packetType = tag.type.rawValue // FLV tag types equal RTMP message types 8/9/18
        packet.m_hasAbsTimestamp = 1
        switch tag.type {
        case .video: packet.m_nChannel = Self.videoChannel
        case .audio: packet.m_nChannel = Self.audioChannel
        case .scriptData: packet.m_nChannel = Self.scriptChannel
        }
        packet.m_nTimeStamp = tag.timestampMs
        packet.m_nInfoField2 = r.pointee.m_stream_id
        packet.m_nBodySize = UInt32(size)
        packet.m_body = body.assumingMemoryBound(to: CChar.self)
        if RTMP_SendPacket(r, &packet, 0) == 0 {
            let reason = SystemError.describe()
            throw TransportError.writeFailed("\(displayName): send failed: \(reason)")
        }
        let now = UInt64(MediaTime.now())
        sent.add(size, ordering: .relaxed)
        lastWrite.store(now, ordering: .relaxed)
        if now &- lastDrainNs >= Self.drainIntervalNs {
            lastDrainNs = now
            try drainIncoming(r)
        }
    }

    /// Shuts the socket down so a write blocked on a stalled link returns at once (the stop
    /// deadline has passed). The fd itself stays open until `close()` on the sender thread.
    package func abortPendingIO() {
        let fd = socketForAbort.load(ordering: .acquiring)
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    package func close() {
        socketForAbort.store(-1, ordering: .releasing)
        if let r = rtmp {
            if usesTLS && r.pointee.m_sb.sb_socket >= 0 {
                // librtmp ends TLS with gnutls_bye(SHUT_RDWR), which waits for the server's
                // close_notify: bound that wait so a stop stays within its 2 s.
                var rcv = timeval(tv_sec: 0, tv_usec: 300_000)
                _ = setsockopt(r.pointee.m_sb.sb_socket, SOL_SOCKET, SO_RCVTIMEO, &rcv, socklen_t(MemoryLayout<timeval>.size))
            }
            RTMP_Close(r) // sends FCUnpublish + deleteStream when publishing
            RTMP_Free(r)
            rtmp = nil
            usesTLS = false
        }
        if let copy = urlCString {
            // It holds the stream key: wipe before returning it to malloc.
            memset(copy, 0, urlCStringLength)
            copy.deallocate()
            urlCString = nil
            urlCStringLength = 0
        }
    }

    // MARK: - Internals

    /// TCP connect with a deadline (librtmp's own connect blocks for the OS default, minutes).
    private func connectSocket(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(host, String(port), &hints, &list)
        if rc != 0 {
            throw TransportError.connectFailed("\(displayName): cannot resolve host: \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastReason = "no address"
        var entry = list
        while let ai = entry {
            entry = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family,
                            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastReason = SystemError.describe(); continue }
            if let reason = finishConnect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) {
                lastReason = reason
                _ = Glibc.close(fd)
                continue
            }
            configure(fd)
            return fd
        }
        throw TransportError.connectFailed("\(displayName): \(lastReason)")
    }

    /// Runs and verifies the TLS handshake, then gives the session to librtmp (see the type's doc).
    private func startVerifiedTLS(_ r: UnsafeMutablePointer<RTMP>, fd: Int32, host: String) throws(TransportError) {
        let verifier: TLSVerifier
        if let existing = tlsVerifier { verifier = existing } else {
            verifier = try TLSVerifier(extraCAFile: caFile)
            tlsVerifier = verifier
        }
        let session = try verifier.handshake(fd: fd, host: host, timeoutMs: connectTimeoutSeconds * 1000,
                                             displayName: displayName)
        r.pointee.m_sb.sb_ssl = UnsafeMutableRawPointer(session)
        r.pointee.Link.protocol &= ~Int32(RTMP_FEATURE_SSL)
        usesTLS = true
    }

    /// Returns nil on success, else the reason.
    private func finishConnect(_ fd: Int32, _ addr: UnsafeMutablePointer<sockaddr>?, _ len: socklen_t) -> String? {
        if Glibc.connect(fd, addr, len) == 0 { return nil }
        guard errno == EINPROGRESS else { return SystemError.describe() }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pfd, 1, Int32(connectTimeoutSeconds * 1000))
        if ready == 0 { return "connect timed out after \(connectTimeoutSeconds) s" }
        if ready < 0 { return SystemError.describe() }
        var soError: Int32 = 0
        var soLen = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen) != 0 { return SystemError.describe() }
        if soError != 0 { return SystemError.describe(soError) }
        return nil
    }

    /// Back to blocking with timeouts: receive = connect timeout (as librtmp does), send = at
    /// least 10 s so a dead link surfaces as a write failure instead of a hung sender thread.
    private func configure(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        var rcv = timeval(tv_sec: connectTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, socklen_t(MemoryLayout<timeval>.size))
        var snd = timeval(tv_sec: max(10, connectTimeoutSeconds * 2), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A small kernel send buffer: otherwise Linux lets it grow to ~4 MB, a slow link hides
        // there for seconds, and the send queue's drop policy and bitrate adaptation never see it.
        var sndbuf: Int32 = Self.socketSendBufferBytes
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Reads server messages for `rejectionGraceMilliseconds`; a hang-up in that window
    /// means the publish was refused after all.
    private func confirmPublishSurvives(_ r: UnsafeMutablePointer<RTMP>) throws {
        let deadline = UInt64(MediaTime.now()) + UInt64(max(0, rejectionGraceMilliseconds)) * 1_000_000
        while true {
            let now = UInt64(MediaTime.now())
            if now >= deadline { return }
            if r.pointee.m_sb.sb_size <= 0 {
                var pfd = pollfd(fd: RTMP_Socket(r), events: Int16(POLLIN), revents: 0)
                let waitMs = Int32((deadline - now) / 1_000_000) + 1
                if poll(&pfd, 1, waitMs) <= 0 { continue }
            }
            var packet = RTMPPacket()
            let ok = RTMP_ReadPacket(r, &packet) != 0
            if ok && packet.m_nBytesRead == packet.m_nBodySize && packet.m_body != nil {
                _ = RTMP_ClientPacket(r, &packet)
                RTMPPacket_Free(&packet)
            }
            if !ok || RTMP_IsConnected(r) == 0 {
                close()
                throw TransportError.publishRejected("\(displayName): server closed the connection right after publish")
            }
        }
    }

    /// True when the peer has not closed `fd` (no EOF pending, no error).
    private static func peerStillOpen(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n > 0 { return true }
        if n == 0 { return false }
        return errno == EAGAIN || errno == EWOULDBLOCK
    }

    /// Protocol control message 1 (Set Chunk Size), then switch librtmp's writer to it.
    private func sendSetChunkSize(_ r: UnsafeMutablePointer<RTMP>) throws {
        let body = packetBuffer + Self.headroom
        let size = UInt32(Self.outChunkSize)
        body.storeBytes(of: size.bigEndian, as: UInt32.self)
        var packet = RTMPPacket()
        packet.m_headerType = UInt8(RTMP_PACKET_SIZE_LARGE)
        packet.m_packetType = UInt8(RTMP_PACKET_TYPE_CHUNK_SIZE)
        packet.m_nChannel = Self.controlChannel
        packet.m_nInfoField2 = 0
        packet.m_nBodySize = 4
        packet.m_body = body.assumingMemoryBound(to: CChar.self)
        if RTMP_SendPacket(r, &packet, 0) == 0 {
            let reason = SystemError.describe()
            close()
            throw TransportError.writeFailed("\(displayName): sending chunk size failed: \(reason)")
        }
        r.pointee.m_outChunkSize = Self.outChunkSize
    }

    /// Handles whatever the server sent, without blocking: acks, pings, bandwidth, status.
    private func drainIncoming(_ r: UnsafeMutablePointer<RTMP>) throws {
        var pfd = pollfd(fd: RTMP_Socket(r), events: Int16(POLLIN), revents: 0)
        var rounds = 0
        while rounds < 64 && (r.pointee.m_sb.sb_size > 0 || poll(&pfd, 1, 0) > 0) {
            rounds += 1
            var packet = RTMPPacket()
            if RTMP_ReadPacket(r, &packet) == 0 {
                throw TransportError.writeFailed("\(displayName): server closed the connection")
            }
            if packet.m_nBytesRead == packet.m_nBodySize && packet.m_body != nil {
                _ = RTMP_ClientPacket(r, &packet)
                RTMPPacket_Free(&packet)
            }
            if RTMP_IsConnected(r) == 0 {
                throw TransportError.writeFailed("\(displayName): server ended the stream")
            }
            pfd.revents = 0
        }
    }

    private func grow(to needed: Int) {
        let capacity = max(needed, packetCapacity * 2)
        packetBuffer.deallocate()
        packetBuffer = .allocate(byteCount: capacity, alignment: 16)
        packetCapacity = capacity
    }
}
