import BroadcastCore
import BroadcastPipeline

/// The one rule every transport follows when a server moves the stream (an E-RTMP reconnect
/// request's `tcUrl`, a WHIP endpoint's 307/308 `Location`): **never leave TLS.** A move from
/// `rtmps://` to `rtmp://`, or from `https://` to `http://`, would carry the stream key or the
/// bearer token in clear, so it is refused: the caller says so in one line and stays on (or
/// reconnects to) the URL it had. Staying on TLS, staying plain, or going from plain to TLS is
/// allowed.
package enum TLSDowngradeRule {
    /// True when a move from a TLS URL (`fromTLS`) to `toTLS` keeps the stream where it was or
    /// better: everything except TLS → plain.
    package static func allows(fromTLS: Bool, toTLS: Bool) -> Bool { toTLS || !fromTLS }

    /// The line a refused move is reported with (`what`: "a reconnect request", "a redirect";
    /// `then`: what the caller does instead).
    package static func refusal(_ displayName: String, what: String, to target: String,
                                then: String = "reconnecting to the original URL") -> String {
        "\(displayName): refused \(what) to \(target): it would leave TLS and carry the stream key in clear; \(then)"
    }
}
