import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Consent freshness (RFC 7675) for the selected pair, on a clock the caller passes in: a binding
/// request every `checkIntervalNs` (the first `firstCheckNs` after the pair was chosen), and consent
/// is lost once no request has been answered for `expiryNs`. Lost consent is a lost connection: the
/// sender reconnects (a new POST) as after any other loss.
struct ICEConsent {
    enum Step: Equatable { case wait, check, expired }

    static let firstCheckNs: Int64 = 2_000_000_000
    static let checkIntervalNs: Int64 = 5_000_000_000
    static let expiryNs: Int64 = 30_000_000_000

    private(set) var lastAnsweredNs: Int64
    private var nextCheckNs: Int64

    /// Consent is granted by the check that chose the pair, at `nowNs`.
    init(grantedAtNs nowNs: Int64) {
        lastAnsweredNs = nowNs
        nextCheckNs = nowNs + Self.firstCheckNs
    }

    /// What is due at `nowNs`: nothing, a check to send (scheduled past this one), or expiry.
    mutating func step(nowNs: Int64) -> Step {
        guard nowNs >= nextCheckNs else { return .wait }
        if nowNs - lastAnsweredNs > Self.expiryNs { return .expired }
        nextCheckNs = nowNs + Self.checkIntervalNs
        return .check
    }

    /// A check of ours was answered (integrity verified) at `nowNs`.
    mutating func answered(nowNs: Int64) {
        lastAnsweredNs = max(lastAnsweredNs, nowNs)
    }
}
