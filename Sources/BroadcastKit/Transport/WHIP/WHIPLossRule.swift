/// Google congestion control's loss rule, applied once per NEW receiver report about our video:
/// under 2% lost the loss-based estimate may rise (the bitrate controller's calm probes), 2-10%
/// holds it, over 10% cuts it by half the loss (estimate × (1 − 0.5·loss)). The cut reaches the
/// controller as undelivered bytes: half the reported share of the bytes sent since the previous
/// report. A report already applied is not applied again, however often the controller asks.
package struct WHIPLossRule: Sendable {
    /// Fractions lost (in 1/256) at or below this are "under 2%": 4/256 = 1.6%, 5/256 = 2.0%.
    package static let calmBelow = 5
    /// Fractions lost (in 1/256) above this are "over 10%": 26/256 = 10.2%.
    package static let cutAbove = 25

    /// Receiver reports applied so far (`WHIPReceiverReports.count` when last applied).
    package private(set) var reportsUsed = 0
    /// RTP payload bytes sent when the last report was applied.
    private var bytesAtReport: Int
    /// Bytes charged as lost so far (monotonic; the controller subtracts the growth).
    package private(set) var undelivered = 0

    package init(bytesSent: Int) { bytesAtReport = bytesSent }

    /// A new connection: its reports count from zero; what was charged stays charged.
    package mutating func restart(bytesSent: Int) {
        reportsUsed = 0
        bytesAtReport = bytesSent
    }

    /// Applies the latest report if it is new; returns the bytes charged as lost so far.
    /// `reports`: report blocks received on this connection; `fraction`: the latest one's, in 1/256.
    package mutating func apply(reports: Int, fraction: Int, bytesSent: Int) -> Int {
        guard reports > reportsUsed else { return undelivered }
        reportsUsed = reports
        let sent = max(0, bytesSent - bytesAtReport)
        bytesAtReport = bytesSent
        if fraction > Self.cutAbove { undelivered += sent * fraction / 512 }
        return undelivered
    }
}
