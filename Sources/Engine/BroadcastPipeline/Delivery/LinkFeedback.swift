import BroadcastCore

/// What a network link reports about itself while it runs, beside its send queue: read by its
/// sender thread (a server's reconnect request) and by the bitrate controller and the stats
/// (backlog, undelivered bytes, the receiver's figures). A sink that has any of these conforms;
/// `Destination` looks for the conformance once, when it is built. Every member has a neutral
/// default, so a link implements only what its protocol can tell.
public protocol LinkFeedback: AnyObject {
    /// The server asked for a reconnect (E-RTMP v2 ReconnectRequest): the destination closes and
    /// reopens at the next video keyframe, so the new session starts decodable.
    var reconnectRequested: Bool { get }
    /// The line the destination says when it honours that request, in place of its usual one
    /// (nil: the usual one); e.g. a request that would have left TLS, refused, so the reconnect
    /// goes to the current URL.
    var reconnectWarning: String? { get }
    /// The transport's own link statistics, when it keeps any (SRT, WHIP).
    var linkStats: TransportLinkStats? { get }
    /// Media time waiting inside the transport itself (beyond the destination's send queue), as
    /// congestion backlog for the bitrate controller.
    var transportBacklogMs: Int { get }
    /// Bytes handed to the transport that did not reach the peer: those not acknowledged yet
    /// (TCP's send queue, SRT's send buffer) plus, cumulatively, those it discarded (SRT drops
    /// what is too late). The bitrate controller subtracts their growth from what was handed
    /// over, so it sees what the link delivered, not what buffers swallowed.
    var undeliveredBytes: Int { get }
    /// The receiver's own estimate of the bitrate the path carries (WebRTC REMB), in kbit/s for
    /// all media, when the peer sends one; the bitrate controller keeps its ceiling under it.
    var peerEstimatedKbps: Int? { get }
    /// The rate the peer reports receiving, all media, in kbit/s, over the span its latest report
    /// covers (WebRTC receiver reports): what the path carried, learnt from the receiver rather
    /// than from our own buffers. The bitrate controller takes it as the carried rate while congested.
    var deliveredKbps: Int? { get }
}

extension LinkFeedback {
    public var reconnectRequested: Bool { false }
    public var reconnectWarning: String? { nil }
    public var linkStats: TransportLinkStats? { nil }
    public var transportBacklogMs: Int { 0 }
    public var undeliveredBytes: Int { 0 }
    public var peerEstimatedKbps: Int? { nil }
    public var deliveredKbps: Int? { nil }
}

/// A link over TCP whose kernel tells the bitrate controller about the path (RTMP): what sits in
/// the socket's send buffer, and `TCP_INFO` once a second. Package-only: `TCPLinkInfo` is a
/// reading of this package's socket layer.
package protocol TCPPathFeedback: LinkFeedback {
    /// Bytes handed to the socket that the peer has not acknowledged yet. Any thread.
    var unsentBytes: Int { get }
    /// The kernel's view of the path (`TCP_INFO`); nil when unavailable. Any thread.
    var linkInfo: TCPLinkInfo? { get }
}
