import CGnuTLSShim
import Glibc
import BroadcastCore
import BroadcastPipeline

/// The outcome of checking a server certificate chain.
struct TLSVerification: Sendable, Equatable {
    /// GnuTLS `gnutls_certificate_status_t` bits; 0 means trusted and matching the host.
    let status: UInt32
    /// Why the chain was refused, in words ("" when trusted).
    let reason: String

    var isTrusted: Bool { status == 0 }
}

/// Verifies RTMPS servers: the certificate chain against the system trust store (plus an
/// optional extra CA file) and the certificate against the host name from the URL.
///
/// `RTMPPublisher` speaks RTMP itself; for `rtmps://` it asks `handshake` to run the TLS client
/// handshake on the freshly connected socket (with SNI) and to verify the peer chain before
/// a single RTMP byte is written. Only a verified session comes back (as a `TLSSession`), so a
/// refused server never sees the RTMP handshake, let alone the `publish` command that carries
/// the stream key.
///
/// GnuTLS is not linked: the first `TLSVerifier` loads it through `CGnuTLSShim` (dlopen), so a
/// plain `rtmp://` process never maps it. Without the library, `init` throws one clear line.
///
/// The trust list is loaded once (about 140 system CAs) and reused for every reconnect.
/// Not thread-safe: used from one destination's sender thread.
package final class TLSVerifier: @unchecked Sendable {
    /// The extra CA file, if any (not a secret: it may appear in messages).
    let extraCAFile: String?
    /// CAs loaded (system + extra file).
    let trustedCACount: Int
    private var trustList: gnutls_x509_trust_list_t?
    /// Empty client credentials: GnuTLS needs some for a certificate handshake; the
    /// verification is done against `trustList` by `verify`.
    private var credentials: gnutls_certificate_credentials_t?

    static let maxChainLength = 16
    static let serverAuthPurposeOID = "1.3.6.1.5.5.7.3.1"

    /// Loads GnuTLS (once per process), the system trust store and, when given, the PEM CAs in
    /// `extraCAFile`. Throws `TransportError.tlsRejected` when GnuTLS cannot be loaded, the extra
    /// file holds no usable CA, or no trust anchor at all could be loaded.
    package init(extraCAFile: String? = nil) throws(TransportError) {
        self.extraCAFile = extraCAFile
        guard bk_gnutls_load() != 0 else {
            throw TransportError.tlsRejected(String(cString: bk_gnutls_load_error()))
        }
        var list: gnutls_x509_trust_list_t?
        guard bk_gnutls_x509_trust_list_init(&list, 0) == 0, let list else {
            throw TransportError.tlsRejected("cannot create a certificate trust list")
        }
        var count = 0
        let system = bk_gnutls_x509_trust_list_add_system_trust(list, 0, 0)
        if system > 0 { count += Int(system) }
        if let extraCAFile {
            let added = bk_gnutls_x509_trust_list_add_trust_file(list, extraCAFile, nil, GNUTLS_X509_FMT_PEM, 0, 0)
            if added <= 0 {
                bk_gnutls_x509_trust_list_deinit(list, 1)
                let why = added < 0 ? String(cString: bk_gnutls_strerror(added)) : "no certificate found"
                throw TransportError.tlsRejected("cannot load CA file \(extraCAFile): \(why)")
            }
            count += Int(added)
        }
        if count == 0 {
            bk_gnutls_x509_trust_list_deinit(list, 1)
            throw TransportError.tlsRejected("no trusted CA certificates (system store empty and no --ca-file)")
        }
        var creds: gnutls_certificate_credentials_t?
        guard bk_gnutls_certificate_allocate_credentials(&creds) == 0 else {
            bk_gnutls_x509_trust_list_deinit(list, 1)
            throw TransportError.tlsRejected("cannot allocate TLS credentials")
        }
        trustList = list
        credentials = creds
        trustedCACount = count
    }

    deinit {
        if let credentials { bk_gnutls_certificate_free_credentials(credentials) }
        if let trustList { bk_gnutls_x509_trust_list_deinit(trustList, 1) }
    }

    /// Runs the TLS client handshake on the connected non-blocking socket `fd` and verifies the
    /// server for `host`. Returns the verified session (it ends and frees itself on `close`).
    ///
    /// Each time GnuTLS would block, `wait` is called with whether it waits to write (else to
    /// read): the caller's wait carries the operation's deadline and stop, so a peer that sends
    /// a record header and then one byte a second cannot hold the handshake past them.
    ///
    /// - Throws: `TransportError.connectFailed` when the handshake itself fails (a network
    ///   fault, the deadline, a stop), `TransportError.tlsRejected` when the certificate is not
    ///   trusted for `host`. `displayName` (already redacted) prefixes the messages.
    func handshake(fd: Int32, host: String, timeoutMs: Int, displayName: String,
                           wait: (_ wantsWrite: Bool) throws(TCPSocket.Failure) -> Void) throws(TransportError) -> TLSSession {
        var maybeSession: gnutls_session_t?
        // GNUTLS_NO_SIGNAL: writes use MSG_NOSIGNAL, so a peer that hung up gives an error, not SIGPIPE.
        guard bk_gnutls_init(&maybeSession, UInt32(GNUTLS_CLIENT) | UInt32(GNUTLS_NO_SIGNAL) | UInt32(GNUTLS_NONBLOCK)) == 0,
              let session = maybeSession else {
            throw TransportError.connectFailed("\(displayName): cannot create a TLS session")
        }
        var ok = false
        defer { if !ok { bk_gnutls_deinit(session) } }
        _ = bk_gnutls_set_default_priority(session)
        _ = bk_gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, UnsafeMutableRawPointer(credentials))
        if !Self.isIPLiteral(host) {
            // SNI: ingests behind shared front ends pick the certificate by name.
            _ = host.withCString { bk_gnutls_server_name_set(session, GNUTLS_NAME_DNS, $0, strlen($0)) }
        }
        bk_gnutls_transport_set_int2(session, fd, fd)
        bk_gnutls_handshake_set_timeout(session, UInt32(max(1, timeoutMs)))
        while true {
            let rc = bk_gnutls_handshake(session)
            if rc == 0 { break }
            if rc == GNUTLS_E_INTERRUPTED { continue }
            if rc == GNUTLS_E_AGAIN {
                do { try wait(bk_gnutls_record_get_direction(session) == 1) } catch {
                    let why: String
                    switch error {
                    case .stopped: why = "the run stopped during the TLS handshake"
                    case .deadlinePassed, .timedOut: why = "TLS handshake not done within \(max(1, timeoutMs / 1000)) s"
                    case .closed: why = "TLS handshake failed: connection closed by the server"
                    case .failed(let text): why = "TLS handshake failed: \(text)"
                    }
                    throw TransportError.connectFailed("\(displayName): \(why)")
                }
                continue
            }
            let why = rc == GNUTLS_E_TIMEDOUT ? "timed out" : String(cString: bk_gnutls_strerror(rc))
            throw TransportError.connectFailed("\(displayName): TLS handshake failed: \(why)")
        }
        guard bk_gnutls_certificate_type_get(session) == GNUTLS_CRT_X509 else {
            throw TransportError.tlsRejected("\(displayName): certificate refused (server did not send an X.509 certificate)")
        }
        var count: UInt32 = 0
        guard let peers = bk_gnutls_certificate_get_peers(session, &count), count > 0 else {
            throw TransportError.tlsRejected("\(displayName): certificate refused (server sent no certificate)")
        }
        let result = verify(chain: UnsafeBufferPointer(start: peers, count: Int(count)), format: GNUTLS_X509_FMT_DER, host: host)
        guard result.isTrusted else {
            throw TransportError.tlsRejected("\(displayName): certificate refused for host \(host) (\(result.reason))")
        }
        ok = true
        return TLSSession(session: session)
    }

    /// Verifies a server certificate chain (leaf first, DER bytes) for `host`.
    func verify(derChain: [[UInt8]], host: String) -> TLSVerification {
        var datums = [gnutls_datum_t]()
        datums.reserveCapacity(derChain.count)
        let copies = derChain.map { der -> UnsafeMutableBufferPointer<UInt8> in
            let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, der.count))
            _ = copy.initialize(from: der)
            return copy
        }
        defer { copies.forEach { $0.deallocate() } }
        for (copy, der) in zip(copies, derChain) {
            datums.append(gnutls_datum_t(data: copy.baseAddress, size: UInt32(der.count)))
        }
        return datums.withUnsafeBufferPointer { verify(chain: $0, format: GNUTLS_X509_FMT_DER, host: host) }
    }

    /// Verifies a PEM bundle (leaf first) for `host`; for tools and tests.
    func verify(pemChain: String, host: String) -> TLSVerification {
        var bytes = Array(pemChain.utf8)
        return bytes.withUnsafeMutableBufferPointer { buf in
            var datum = gnutls_datum_t(data: buf.baseAddress, size: UInt32(buf.count))
            return withUnsafePointer(to: &datum) {
                verify(chain: UnsafeBufferPointer(start: $0, count: 1), format: GNUTLS_X509_FMT_PEM, host: host)
            }
        }
    }

    /// The one verification path: import the certificates, check the chain against the trust
    /// list, the host name (DNS name or IP address SAN) and the TLS server purpose.
    private func verify(chain: UnsafeBufferPointer<gnutls_datum_t>, format: gnutls_x509_crt_fmt_t, host: String) -> TLSVerification {
        guard let trustList else { return TLSVerification(status: UInt32(GNUTLS_CERT_INVALID.rawValue), reason: "no trust list") }
        var certs = [gnutls_x509_crt_t?](repeating: nil, count: Self.maxChainLength)
        var imported = 0
        defer { for i in 0..<imported { bk_gnutls_x509_crt_deinit(certs[i]) } }
        for datum in chain {
            if format == GNUTLS_X509_FMT_PEM {
                var max = UInt32(Self.maxChainLength - imported)
                let rc = withUnsafePointer(to: datum) { d in
                    certs.withUnsafeMutableBufferPointer { bk_gnutls_x509_crt_list_import($0.baseAddress! + imported, &max, d, format, 0) }
                }
                if rc < 0 { return Self.unreadable(rc) }
                imported += Int(rc)
            } else {
                guard imported < Self.maxChainLength else { break }
                var crt: gnutls_x509_crt_t?
                guard bk_gnutls_x509_crt_init(&crt) == 0 else { return Self.unreadable(GNUTLS_E_MEMORY_ERROR) }
                let rc = withUnsafePointer(to: datum) { bk_gnutls_x509_crt_import(crt, $0, format) }
                if rc < 0 { bk_gnutls_x509_crt_deinit(crt); return Self.unreadable(rc) }
                certs[imported] = crt
                imported += 1
            }
        }
        guard imported > 0 else { return TLSVerification(status: UInt32(GNUTLS_CERT_INVALID.rawValue), reason: "no certificate") }

        var status: UInt32 = 0
        let rc: Int32 = host.withCString { hostC in
            Self.serverAuthPurposeOID.withCString { oidC in
                var data = [
                    gnutls_typed_vdata_st(type: GNUTLS_DT_DNS_HOSTNAME,
                                          data: UnsafeMutableRawPointer(mutating: hostC).assumingMemoryBound(to: UInt8.self), size: 0),
                    gnutls_typed_vdata_st(type: GNUTLS_DT_KEY_PURPOSE_OID,
                                          data: UnsafeMutableRawPointer(mutating: oidC).assumingMemoryBound(to: UInt8.self), size: 0),
                ]
                return certs.withUnsafeMutableBufferPointer { list in
                    bk_gnutls_x509_trust_list_verify_crt2(trustList, list.baseAddress, UInt32(imported),
                                                       &data, UInt32(data.count), 0, &status, nil)
                }
            }
        }
        if rc < 0 { return Self.unreadable(rc) }
        return TLSVerification(status: status, reason: Self.describe(status))
    }

    private static func unreadable(_ rc: Int32) -> TLSVerification {
        TLSVerification(status: UInt32(GNUTLS_CERT_INVALID.rawValue),
                        reason: "certificate could not be read: \(String(cString: bk_gnutls_strerror(rc)))")
    }

    /// Plain words for the status bits, most useful first.
    static func describe(_ status: UInt32) -> String {
        if status == 0 { return "" }
        let words: [(gnutls_certificate_status_t, String)] = [
            (GNUTLS_CERT_SIGNER_NOT_FOUND, "issuer not trusted: self-signed or unknown CA; use --ca-file to trust it"),
            (GNUTLS_CERT_UNEXPECTED_OWNER, "certificate is for a different host name"),
            (GNUTLS_CERT_EXPIRED, "certificate expired"),
            (GNUTLS_CERT_NOT_ACTIVATED, "certificate not yet valid"),
            (GNUTLS_CERT_REVOKED, "certificate revoked"),
            (GNUTLS_CERT_SIGNATURE_FAILURE, "bad signature"),
            (GNUTLS_CERT_INSECURE_ALGORITHM, "insecure signature algorithm"),
            (GNUTLS_CERT_PURPOSE_MISMATCH, "certificate not meant for TLS servers"),
            (GNUTLS_CERT_SIGNER_NOT_CA, "issuer is not a CA"),
            (GNUTLS_CERT_SIGNER_CONSTRAINTS_FAILURE, "issuer constraints violated"),
        ]
        let found = words.filter { status & $0.0.rawValue != 0 }.map(\.1)
        return found.isEmpty ? "certificate not trusted (status 0x\(String(status, radix: 16)))" : found.joined(separator: "; ")
    }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
