/// One second of what a TCP transport's kernel saw of its path (from `TCPLinkInfo`), for the
/// bitrate controller: what the peer acknowledged, how much the path's queues added to the RTT,
/// and the kernel's delivery-rate sample.
package struct PathSample: Sendable, Equatable {
    /// What the peer acknowledged over the second, kbit/s (audio included).
    package var ackedKbps: Int
    /// Milliseconds the path's queues add to the RTT (smoothed RTT over the lowest seen).
    package var queueingMs: Int
    /// The kernel's delivery-rate sample, kbit/s, when it measured the path (the sender kept
    /// the path full, not app-limited); nil otherwise.
    package var deliveryKbps: Int?

    package init(ackedKbps: Int, queueingMs: Int, deliveryKbps: Int?) {
        self.ackedKbps = ackedKbps
        self.queueingMs = queueingMs
        self.deliveryKbps = deliveryKbps
    }

    /// The second between two TCP_INFO readings `seconds` apart; nil when they are not of one
    /// connection (a reconnect restarts the counters).
    package init?(from a: TCPLinkInfo, to b: TCPLinkInfo, seconds: Double) {
        guard seconds > 0, b.bytesAcked >= a.bytesAcked else { return nil }
        ackedKbps = Int(Double(b.bytesAcked - a.bytesAcked) * 8 / 1000 / seconds)
        queueingMs = b.queueingMs
        deliveryKbps = b.deliveryRateAppLimited || b.deliveryRateBytesPerSecond == 0
            ? nil : Int(min(b.deliveryRateBytesPerSecond, UInt64(Int32.max)) * 8 / 1000)
    }
}
