import BroadcastCore

/// One second of what a TCP transport's kernel saw of its path (from `TCPLinkInfo`), for the
/// bitrate controller: what the peer acknowledged, how much the path's queues added to the RTT,
/// how much the peer holds unread, and the kernel's delivery-rate sample.
struct PathSample: Sendable, Equatable {
    /// What the peer acknowledged over the second, kbit/s (audio included); less what it took
    /// into its unread bytes, when the kernel reports its window: what its reader took.
    var ackedKbps: Int
    /// Milliseconds the path's queues add to the RTT (smoothed RTT over the lowest seen).
    var queueingMs: Int
    /// The kernel's delivery-rate sample, kbit/s, when it measured the path (the sender kept
    /// the path full, not app-limited); nil otherwise.
    var deliveryKbps: Int?
    /// Milliseconds of media the peer holds acknowledged but unread (`PeerReadBacklog`, beyond a
    /// few segments), at the current rate: a queue before the reader, as the path's is before
    /// the link. 0 when the kernel does not report the window.
    var peerUnreadMs: Int

    init(ackedKbps: Int, queueingMs: Int, deliveryKbps: Int?, peerUnreadMs: Int = 0) {
        self.ackedKbps = ackedKbps
        self.queueingMs = queueingMs
        self.deliveryKbps = deliveryKbps
        self.peerUnreadMs = peerUnreadMs
    }

    /// Milliseconds queued between us and the peer's reader: the path's queues and the peer's
    /// unread bytes.
    var queueMs: Int { queueingMs + peerUnreadMs }

    /// The queue is at the peer: its unread bytes, not the path's queues. The kernel's
    /// delivery-rate sample then measures the path to the peer, not the reader.
    var queueAtPeer: Bool { peerUnreadMs > queueingMs }

    /// The second between two TCP_INFO readings `seconds` apart; nil when they are not of one
    /// connection (a reconnect restarts the counters).
    init?(from a: TCPLinkInfo, to b: TCPLinkInfo, seconds: Double) {
        guard seconds > 0, b.bytesAcked >= a.bytesAcked else { return nil }
        ackedKbps = Int(Double(b.bytesAcked - a.bytesAcked) * 8 / 1000 / seconds)
        peerUnreadMs = 0
        queueingMs = b.queueingMs
        deliveryKbps = b.deliveryKbps
    }
}
