import CGnuTLSShim
import BroadcastCore
import BroadcastPipeline

/// The record layer of a verified TLS session (GnuTLS, reached through `CGnuTLSShim`).
///
/// Made by `TLSVerifier.handshake` only, so an unverified session never carries a byte of RTMP.
/// The socket is non-blocking once streaming: `send`/`receive` report "would block" and the
/// caller polls, exactly as for a plain socket.
final class TLSSession {
    /// What a record call returned, in the caller's terms.
    enum Outcome: Equatable {
        /// Bytes sent or received (never 0 for a receive: that is `.closed`).
        case bytes(Int)
        case wouldBlock
        /// The peer closed the connection (close_notify, EOF or reset).
        case closed
        case failed(String)
    }

    private var session: gnutls_session_t?

    init(session: gnutls_session_t) {
        self.session = session
    }

    deinit { close() }

    func send(_ bytes: UnsafeRawPointer, count: Int) -> Outcome {
        guard let session else { return .closed }
        while true {
            // After GNUTLS_E_AGAIN the same call is repeated with the same data, as GnuTLS asks.
            let rc = bk_gnutls_record_send(session, bytes, count)
            if rc >= 0 { return .bytes(rc) }
            if rc == GNUTLS_E_INTERRUPTED { continue }
            return Self.outcome(Int32(rc))
        }
    }

    func receive(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Outcome {
        guard let session else { return .closed }
        while true {
            let rc = bk_gnutls_record_recv(session, buffer, capacity)
            if rc > 0 { return .bytes(rc) }
            if rc == 0 { return .closed }
            if rc == GNUTLS_E_INTERRUPTED { continue }
            return Self.outcome(Int32(rc))
        }
    }

    /// Sends our close_notify without waiting for the server's (a stop stays within its deadline),
    /// then frees the session. Safe to call twice.
    func close() {
        guard let session else { return }
        _ = bk_gnutls_bye(session, GNUTLS_SHUT_WR)
        bk_gnutls_deinit(session)
        self.session = nil
    }

    private static func outcome(_ rc: Int32) -> Outcome {
        switch rc {
        case GNUTLS_E_AGAIN: return .wouldBlock
        case GNUTLS_E_PREMATURE_TERMINATION, GNUTLS_E_PUSH_ERROR, GNUTLS_E_PULL_ERROR: return .closed
        default: return .failed(String(cString: bk_gnutls_strerror(rc)))
        }
    }
}
