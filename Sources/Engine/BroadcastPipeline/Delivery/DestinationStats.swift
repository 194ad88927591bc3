import BroadcastCore

/// One destination's line in a stats report: its state, send rate, queue and drops.
///
/// `name` is the destination's display name with secrets redacted: a stats report never holds a key.
public struct DestinationStats: Sendable, Equatable {
    /// Redacted URL, or the recording's path.
    public var name: String
    /// "rtmp", "srt", "file", "discard" or "custom".
    public var kind: String
    /// "connecting", "live", "reconnecting", "failed" (lost for good), "closed" (finished), or
    /// "lost" (the run ended while it was reconnecting).
    public var state: String
    /// Send rate over the last second.
    public var kbps: Double
    /// Body bytes the sink accepted since the start.
    public var bytesSent: Int
    public var queueBytes: Int
    /// Media time between the oldest and newest queued tags.
    public var queueMs: Int
    /// Tags this destination's queue dropped (congestion policy or byte cap).
    public var drops: Int
    /// Successful reconnects.
    public var reconnects: Int
    /// Seconds not delivering since it first went live (outages, and a loss until the end).
    public var downtimeSeconds: Double
    /// The transport's own view of the link (SRT), or nil.
    public var link: TransportLinkStats?
    /// The receiver's own estimate of the path in kbit/s (WHIP: REMB), or nil.
    public var peerEstimateKbps: Int?

    public init(name: String, kind: String, state: String, kbps: Double, bytesSent: Int, queueBytes: Int,
                queueMs: Int, drops: Int, reconnects: Int, downtimeSeconds: Double, link: TransportLinkStats? = nil,
                peerEstimateKbps: Int? = nil) {
        self.link = link
        self.peerEstimateKbps = peerEstimateKbps
        self.name = name
        self.kind = kind
        self.state = state
        self.kbps = kbps
        self.bytesSent = bytesSent
        self.queueBytes = queueBytes
        self.queueMs = queueMs
        self.drops = drops
        self.reconnects = reconnects
        self.downtimeSeconds = downtimeSeconds
    }
}
