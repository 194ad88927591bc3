/// One second of what a TCP transport's kernel saw of its path (from `TCPLinkInfo`), for the
/// bitrate controller: what the peer acknowledged, how much the path's queues added to the RTT,
/// the kernel's delivery-rate sample, and the peer's advertised window and its change.
package struct PathSample: Sendable, Equatable {
    /// What the peer acknowledged over the second, kbit/s (audio included).
    package var ackedKbps: Int
    /// Milliseconds the path's queues add to the RTT (smoothed RTT over the lowest seen).
    package var queueingMs: Int
    /// The kernel's delivery-rate sample, kbit/s, when it measured the path (the sender kept
    /// the path full, not app-limited); nil otherwise.
    package var deliveryKbps: Int?
    /// The window the peer advertises at the end of the second, bytes (nil: the kernel does not say).
    package var peerWindowBytes: Int?
    /// How much that window grew over the second, kbit/s (negative: it shrank; 0 when unknown).
    /// What the far end's reader consumed is what it acknowledged plus this: a peer whose buffers
    /// hold seconds acknowledges everything while its reader falls behind.
    package var windowGrowthKbps: Int

    package init(ackedKbps: Int, queueingMs: Int, deliveryKbps: Int?, peerWindowBytes: Int? = nil,
                 windowGrowthKbps: Int = 0) {
        self.ackedKbps = ackedKbps
        self.queueingMs = queueingMs
        self.deliveryKbps = deliveryKbps
        self.peerWindowBytes = peerWindowBytes
        self.windowGrowthKbps = windowGrowthKbps
    }

    /// The second between two TCP_INFO readings `seconds` apart; nil when they are not of one
    /// connection (a reconnect restarts the counters).
    package init?(from a: TCPLinkInfo, to b: TCPLinkInfo, seconds: Double) {
        guard seconds > 0, b.bytesAcked >= a.bytesAcked else { return nil }
        ackedKbps = Int(Double(b.bytesAcked - a.bytesAcked) * 8 / 1000 / seconds)
        queueingMs = b.queueingMs
        deliveryKbps = b.deliveryRateAppLimited || b.deliveryRateBytesPerSecond == 0
            ? nil : Int(min(b.deliveryRateBytesPerSecond, UInt64(Int32.max)) * 8 / 1000)
        peerWindowBytes = b.peerWindowBytes.map { Int($0) }
        if let w0 = a.peerWindowBytes, let w1 = b.peerWindowBytes {
            windowGrowthKbps = Int(Double(Int(w1) - Int(w0)) * 8 / 1000 / seconds)
        } else {
            windowGrowthKbps = 0
        }
    }
}
