import Glibc
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// ICE as the controlling agent over one UDP socket (RFC 8445, host candidates only): our
/// candidates are this host's IPv4 addresses on the socket's port; checks go to the endpoint's UDP
/// IPv4 candidates in priority order, the first pair that answers is nominated (USE-CANDIDATE), and
/// the endpoint's own checks (and its consent checks later, RFC 7675) are answered for the whole
/// session. The same socket then carries DTLS, SRTP and SRTCP (RFC 7983 demultiplexing).
final class ICEAgent {
    let fd: Int32
    let port: UInt16
    let localUfrag: String
    let localPwd: String
    private var remoteUfrag = ""
    private var remotePwd = ""
    private let tieBreaker = UInt64.random(in: 0...UInt64.max)
    /// The nominated pair's remote address.
    private(set) var peer = sockaddr_in()
    private(set) var connected = false
    /// Binding requests answered, and consent responses received (stats, tests).
    private(set) var requestsAnswered = 0
    private(set) var consentResponses = 0
    private var consent = ICEConsent(grantedAtNs: 0)
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 4)
    private var consentTransaction = [UInt8](repeating: 0, count: 12)

    init() throws(TransportError) {
        let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw .connectFailed("WHIP: UDP socket: \(SystemError.describe())") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Bool in
                bind(s, p, len) == 0 && getsockname(s, p, &len) == 0
            }
        }
        guard bound else {
            let why = SystemError.describe()
            _ = Glibc.close(s)
            throw .connectFailed("WHIP: UDP bind: \(why)")
        }
        fd = s
        port = UInt16(bigEndian: addr.sin_port)
        localUfrag = Self.token(8)
        localPwd = Self.token(24)
    }

    deinit {
        _ = Glibc.close(fd)
        scratch.deallocate()
    }

    /// This host's IPv4 addresses (loopback only when there is no other).
    static func hostAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return ["127.0.0.1"] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var p = list
        while let i = p {
            p = i.pointee.ifa_next
            guard let a = i.pointee.ifa_addr, a.pointee.sa_family == sa_family_t(AF_INET),
                  i.pointee.ifa_flags & UInt32(IFF_UP) != 0,
                  i.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            let text = a.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Self.text($0.pointee) }
            if !out.contains(text) { out.append(text) }
        }
        return out.isEmpty ? ["127.0.0.1"] : out
    }

    /// Checks the endpoint's candidates and nominates the first pair that answers, within `timeoutMs`.
    /// Datagrams that are not STUN are dropped (nothing else is expected before DTLS).
    func connect(answer: SDPAnswer, timeoutMs: Int, aborted: () -> Bool) throws(TransportError) {
        remoteUfrag = answer.iceUfrag
        remotePwd = answer.icePwd
        var targets: [sockaddr_in] = []
        for c in answer.candidates {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = UInt16(c.port).bigEndian
            guard inet_pton(AF_INET, c.address, &a.sin_addr) == 1 else { continue }
            targets.append(a)
        }
        guard !targets.isEmpty else { throw .connectFailed("WHIP: the answer has no IPv4 UDP candidate") }
        let transactions = targets.map { _ in Self.transaction() }
        var nominated: Int?
        var nominateTransaction = Self.transaction()
        let start = Self.nowNs()
        var nextSend: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 4)
        defer { buffer.deallocate() }
        while Self.nowNs() - start < Int64(timeoutMs) * 1_000_000 {
            if aborted() { throw .connectFailed("WHIP: stopped while connecting") }
            let now = Self.nowNs()
            if now >= nextSend {
                // RFC 8445 pacing is per check; a handful of candidates at 100 ms is far below it.
                if let n = nominated {
                    sendRequest(to: targets[n], transaction: nominateTransaction, nominate: true)
                } else {
                    for (i, t) in targets.enumerated() { sendRequest(to: t, transaction: transactions[i], nominate: false) }
                }
                nextSend = now + 100_000_000
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 20) > 0 else { continue }
            while true {
                var from = sockaddr_in()
                var fromLen = socklen_t(MemoryLayout<sockaddr_in>.size)
                let n = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, buffer.baseAddress, buffer.count, 0, $0, &fromLen) }
                }
                guard n > 0 else { break }
                let packet = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                guard let msg = STUNMessage.parse(packet) else { continue }
                if msg.type == STUNMessage.bindingRequest {
                    answerRequest(packet, msg, from: from)
                } else if msg.type == STUNMessage.bindingSuccess,
                          STUNMessage.integrityValid(packet, msg, password: remotePwd) {
                    if let n = nominated {
                        if Self.same(msg.transaction, nominateTransaction) {
                            peer = targets[n]
                            connected = true
                            consent = ICEConsent(grantedAtNs: Self.nowNs())
                            return
                        }
                    } else if let i = transactions.firstIndex(where: { Self.same(msg.transaction, $0) }) {
                        nominated = i
                        nominateTransaction = Self.transaction()
                        nextSend = 0
                    }
                }
            }
        }
        throw .connectFailed("WHIP: ICE: no candidate of the endpoint answered within \(timeoutMs) ms")
    }

    /// Handles a STUN datagram that arrived while streaming: answers the endpoint's checks and notes
    /// consent responses. Returns false when `packet` is not STUN.
    func handle(_ packet: UnsafeRawBufferPointer, from: sockaddr_in, nowNs: Int64 = ICEAgent.nowNs()) -> Bool {
        guard let msg = STUNMessage.parse(packet) else { return false }
        if msg.type == STUNMessage.bindingRequest {
            answerRequest(packet, msg, from: from)
        } else if msg.type == STUNMessage.bindingSuccess, Self.same(msg.transaction, consentTransaction),
                  STUNMessage.integrityValid(packet, msg, password: remotePwd) {
            consentResponses += 1
            consent.answered(nowNs: nowNs)
        }
        return true
    }

    /// RFC 7675 (`ICEConsent`): sends the consent check that is due at `nowNs`; false once
    /// consent has expired (no check answered for 30 s).
    func keepConsent(nowNs: Int64) -> Bool {
        guard connected else { return true }
        switch consent.step(nowNs: nowNs) {
        case .wait: return true
        case .expired: return false
        case .check:
            consentTransaction = Self.transaction()
            sendRequest(to: peer, transaction: consentTransaction, nominate: false)
            return true
        }
    }

    /// Sends `bytes` to the nominated pair. False when the kernel refused (a full buffer drops it).
    func send(_ bytes: UnsafeRawPointer, count: Int) -> Bool {
        var p = peer
        let n = withUnsafePointer(to: &p) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return n == count
    }

    private func answerRequest(_ packet: UnsafeRawBufferPointer, _ msg: STUNMessage.Parsed, from: sockaddr_in) {
        // USERNAME is "our ufrag:their ufrag"; the request is signed with our password.
        guard let user = msg.username, user.hasPrefix(localUfrag + ":"),
              STUNMessage.integrityValid(packet, msg, password: localPwd) else { return }
        let n = STUNMessage.writeSuccess(into: scratch, transaction: msg.transaction,
                                         ipv4: UInt32(bigEndian: from.sin_addr.s_addr), port: UInt16(bigEndian: from.sin_port),
                                         password: localPwd)
        var to = from
        _ = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, scratch.baseAddress, n, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        requestsAnswered += 1
    }

    private func sendRequest(to target: sockaddr_in, transaction: [UInt8], nominate: Bool) {
        // Peer-reflexive type preference 110 (RFC 8445 §7.1.1).
        let priority = UInt32((110 << 24) | (65535 << 8) | 255)
        let n = STUNMessage.writeRequest(into: scratch, transaction: transaction, username: remoteUfrag + ":" + localUfrag,
                                         password: remotePwd, priority: priority, tieBreaker: tieBreaker, nominate: nominate)
        var to = target
        _ = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, scratch.baseAddress, n, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    private static func same(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0 == $1 }
    }

    private static func transaction() -> [UInt8] { (0..<12).map { _ in UInt8.random(in: 0...255) } }

    /// ICE ufrag/pwd characters (RFC 8839 ice-char: ALPHA / DIGIT / "+" / "/").
    private static func token(_ n: Int) -> String {
        let chars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<n).map { _ in chars[Int.random(in: 0..<chars.count)] })
    }

    static func text(_ a: sockaddr_in) -> String {
        let v = UInt32(bigEndian: a.sin_addr.s_addr)
        return "\(v >> 24).\((v >> 16) & 255).\((v >> 8) & 255).\(v & 255)"
    }

    static func nowNs() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}
