import CDTLSShim
import CSRTPShim
import Glibc
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// DTLS-SRTP keying (RFC 5764) through `CDTLSShim` (GnuTLS) and the SRTP contexts through
/// `CSRTPShim` (libsrtp2): made with a fresh self-signed ECDSA certificate, handshaken once ICE
/// has a pair, the peer's certificate checked against the answer's `a=fingerprint`.
final class DTLSSRTPTransport {
    private let dtls: OpaquePointer
    /// Our certificate's SHA-256 fingerprint, for the offer.
    let fingerprint: String
    private var outbound: OpaquePointer?
    private var inbound: OpaquePointer?

    /// The text a C shim wrote into `buffer`, up to its NUL (or the whole buffer without one).
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    init() throws(TransportError) {
        guard bk_srtp_load() == 1 else { throw .connectFailed(String(cString: bk_srtp_load_error())) }
        var fp = [CChar](repeating: 0, count: Int(BK_DTLS_FINGERPRINT_LEN))
        var error = [CChar](repeating: 0, count: 256)
        guard let d = bk_dtls_create(&fp, &error, error.count) else {
            throw .connectFailed("WHIP: \(Self.text(error))")
        }
        dtls = d
        fingerprint = Self.text(fp)
    }

    deinit {
        if let outbound { bk_srtp_destroy(outbound) }
        if let inbound { bk_srtp_destroy(inbound) }
        bk_dtls_destroy(dtls)
    }

    /// Runs the handshake over `ice`'s socket (STUN that arrives meanwhile goes to `ice`), checks the
    /// fingerprint and makes the SRTP contexts. Every wait is bounded by `deadline` (the connect
    /// operation's) and wakes at once when `stop` is set (its self-pipe is polled beside the socket).
    func handshake(ice: ICEAgent, asClient: Bool, expectedFingerprint: String, deadline: Deadline, stop: StopFlag?,
                           displayName: String) throws(TransportError) {
        var error = [CChar](repeating: 0, count: 256)
        var peer = ice.peer
        let context = Unmanaged.passUnretained(ice).toOpaque()
        let stopFD = stop?.wakeFD ?? -1
        let rc = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bk_dtls_handshake(dtls, asClient ? 1 : 0, ice.fd, p, socklen_t(MemoryLayout<sockaddr_in>.size), stopFD, deadline.ns,
                                  { ctx, data, len, from, _ in
                                      guard let ctx, let data, let from, len > 0 else { return }
                                      let agent = Unmanaged<ICEAgent>.fromOpaque(ctx).takeUnretainedValue()
                                      let addr = from.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                                      _ = agent.handle(UnsafeRawBufferPointer(start: data, count: Int(len)), from: addr)
                                  }, context, &error, error.count)
            }
        }
        switch rc {
        case 0: break
        case -2: throw .connectFailed("\(displayName): the run stopped during the DTLS handshake")
        case -3: throw .connectFailed("\(displayName): DTLS handshake not done within the connect deadline")
        default: throw .connectFailed("\(displayName): \(Self.text(error))")
        }
        var got = [CChar](repeating: 0, count: Int(BK_DTLS_FINGERPRINT_LEN))
        guard bk_dtls_peer_fingerprint(dtls, &got) == 0 else {
            throw .publishRejected("\(displayName): the endpoint sent no DTLS certificate")
        }
        guard Self.text(got) == expectedFingerprint else {
            throw .tlsRejected("\(displayName): the endpoint's DTLS certificate does not match the fingerprint in its answer")
        }
        var local = [UInt8](repeating: 0, count: 30), remote = [UInt8](repeating: 0, count: 30)
        guard bk_dtls_srtp_keys(dtls, asClient ? 1 : 0, &local, &remote) == 0 else {
            throw .connectFailed("\(displayName): DTLS negotiated no SRTP profile (use_srtp)")
        }
        outbound = bk_srtp_create(local, 1)
        inbound = bk_srtp_create(remote, 0)
        for i in 0..<30 { local[i] = 0; remote[i] = 0 }
        guard outbound != nil, inbound != nil else { throw .connectFailed("\(displayName): SRTP context creation failed") }
    }

    /// A DTLS datagram after the handshake (the endpoint resending its flight: ours was lost).
    func feed(_ datagram: UnsafeRawBufferPointer) {
        guard let base = datagram.baseAddress else { return }
        bk_dtls_feed(dtls, base.assumingMemoryBound(to: UInt8.self), Int32(datagram.count))
    }

    /// Protects an RTP packet in place (the buffer has `BK_SRTP_MAX_TRAILER` bytes of room). Returns the new length or nil.
    func protectRTP(_ packet: UnsafeMutableRawPointer, count: Int) -> Int? {
        guard let outbound else { return nil }
        var n = Int32(count)
        return bk_srtp_protect(outbound, packet, &n) == 0 ? Int(n) : nil
    }

    func protectRTCP(_ packet: UnsafeMutableRawPointer, count: Int) -> Int? {
        guard let outbound else { return nil }
        var n = Int32(count)
        return bk_srtp_protect_rtcp(outbound, packet, &n) == 0 ? Int(n) : nil
    }

    /// Authenticates and decrypts an SRTCP packet in place; nil when it does not authenticate.
    func unprotectRTCP(_ packet: UnsafeMutableRawPointer, count: Int) -> Int? {
        guard let inbound else { return nil }
        var n = Int32(count)
        return bk_srtp_unprotect_rtcp(inbound, packet, &n) == 0 ? Int(n) : nil
    }
}
