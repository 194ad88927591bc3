import BroadcastCore

/// A network transport's own view of its link, where it has one (SRT's `srt_bstats`); RTMP over
/// TCP has none beyond what the destination measures itself.
public struct TransportLinkStats: Sendable, Equatable {
    public var rttMs: Double
    /// The transport's estimate of the link capacity.
    public var bandwidthMbps: Double
    /// What it sends, retransmissions included.
    public var sendRateMbps: Double
    public var packetsSent: Int
    /// Packets the receiver reported lost (most are then retransmitted).
    public var packetsLost: Int
    public var packetsRetransmitted: Int
    /// Packets dropped by the sender because they could no longer arrive in time.
    public var packetsDropped: Int
    /// Time span of the data sent but not yet acknowledged.
    public var sendBufferMs: Int

    public init(rttMs: Double, bandwidthMbps: Double, sendRateMbps: Double, packetsSent: Int, packetsLost: Int,
                packetsRetransmitted: Int, packetsDropped: Int, sendBufferMs: Int) {
        self.rttMs = rttMs
        self.bandwidthMbps = bandwidthMbps
        self.sendRateMbps = sendRateMbps
        self.packetsSent = packetsSent
        self.packetsLost = packetsLost
        self.packetsRetransmitted = packetsRetransmitted
        self.packetsDropped = packetsDropped
        self.sendBufferMs = sendBufferMs
    }
}
