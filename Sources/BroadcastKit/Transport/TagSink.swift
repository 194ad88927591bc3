/// Where a destination's sender thread writes tags: an RTMP publisher or an FLV file.
///
/// All calls come from that destination's single sender thread.
public protocol TagSink: AnyObject {
    /// Human-readable destination with secrets redacted (safe for logs).
    var displayName: String { get }
    /// What this sink is, as the stats name it ("rtmp", "srt", "flv", "mp4", "discard", "custom").
    var kind: TagSinkKind { get }
    /// Connects or opens.
    func open() throws(TransportError)
    /// Writes one tag; throws when the destination failed.
    func write(_ tag: FLVTag) throws(TransportError)
    /// Flushes and closes; safe to call twice.
    func close()
    /// Called from another thread when a stop deadline passed while `write` may still be
    /// blocked (a stalled link): make that write fail now. Must be async-safe with `write`.
    func abortPendingIO()
    /// A network publisher: it reconnects after a lost connection, and its measured throughput
    /// drives the bitrate controller. Files and custom sinks are not (default false).
    var isNetworkPublisher: Bool { get }
    /// The server asked for a reconnect (E-RTMP v2 ReconnectRequest): the destination closes and
    /// reopens at the next video keyframe, so the new session starts decodable (default false).
    var reconnectRequested: Bool { get }
    /// The transport's own link statistics, when it keeps any (SRT); nil by default.
    var linkStats: TransportLinkStats? { get }
    /// Media time waiting inside the transport itself (beyond the destination's send queue), as
    /// congestion backlog for the bitrate controller; 0 by default.
    var transportBacklogMs: Int { get }
    /// Bytes handed to the transport that did not reach the peer: those not acknowledged yet
    /// (TCP's send queue, SRT's send buffer) plus, cumulatively, those it discarded (SRT drops
    /// what is too late). The bitrate controller subtracts their growth from what was handed
    /// over, so it sees what the link delivered, not what buffers swallowed; 0 by default.
    var undeliveredBytes: Int { get }
    /// Takes each track's tags as soon as they are encoded, without the interleaver's wait for the
    /// other track (WHIP: RTP streams are timed per track); default false.
    var tracksUnordered: Bool { get }
    /// The receiver's own estimate of the bitrate the path carries (WebRTC REMB), in kbit/s for
    /// all media, when the peer sends one; the bitrate controller keeps its ceiling under it. nil
    /// by default.
    var peerEstimatedKbps: Int? { get }
    /// The rate the peer reports receiving, all media, in kbit/s, measured over the span its
    /// latest report covers (WebRTC receiver reports): what the path carried, when the transport
    /// learns it from the receiver rather than from its own buffers. The bitrate controller takes
    /// it as the carried rate while congested. nil by default.
    var deliveredKbps: Int? { get }
    /// Takes the AAC priming packets (`FLVTag.isPriming`), stamped before time 0, which a format
    /// with an edit list keeps so that the stream's first samples decode whole. FLV, RTMP, TS and
    /// RTP cannot carry a time before 0: default false, and they never see them.
    var takesPriming: Bool { get }
    /// Carries a real-time stream only (live SRT: libsrt stamps each packet as it is handed over
    /// and drops on the sender what waits past the latency). In block mode, where the producer is
    /// the clock and may run far ahead of real time, the destination paces its sends to media
    /// time, so the producer slows to real time. Default false.
    var needsRealTimeInput: Bool { get }
}

/// The kind of a destination's sink, as its line in the stats names it.
public enum TagSinkKind: String, Sendable {
    case rtmp, srt, whip, flv, mp4, discard
    /// A sink the embedding application supplied.
    case custom
}

extension TagSink {
    public var kind: TagSinkKind { .custom }
    public func abortPendingIO() {}
    public var isNetworkPublisher: Bool { false }
    public var reconnectRequested: Bool { false }
    public var linkStats: TransportLinkStats? { nil }
    public var transportBacklogMs: Int { 0 }
    public var undeliveredBytes: Int { 0 }
    public var tracksUnordered: Bool { false }
    public var peerEstimatedKbps: Int? { nil }
    public var deliveredKbps: Int? { nil }
    public var takesPriming: Bool { false }
    public var needsRealTimeInput: Bool { false }
}

/// Transport failures, each mapped to a CLI exit code.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// TCP connect or RTMP handshake failed (exit 3 at start, reconnect while streaming).
    case connectFailed(String)
    /// The server refused the stream key or app (exit 3, never retried).
    case publishRejected(String)
    /// TLS verification failed (exit 3).
    case tlsRejected(String)
    /// The server still holds a publisher for this stream name (`NetStream.Publish.BadName`). At
    /// start it fails the start (exit 3); after a lost connection it is our own old session, which
    /// the server drops when it times out, so reconnecting retries it instead of giving up.
    case streamNameInUse(String)
    /// A write failed after publishing started.
    case writeFailed(String)
    /// The connection failed after publishing started: the server closed it, ended the stream,
    /// or broke the protocol (reconnect while streaming, exit 4).
    case connectionLost(String)
    /// A file could not be opened or written.
    case fileError(String)

    /// The server (or its certificate) said no: retrying would only repeat it.
    public var isRefusal: Bool {
        switch self {
        case .publishRejected, .tlsRejected: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .connectFailed(let s): return "could not connect: \(s)"
        case .publishRejected(let s): return "stream key or app rejected by server: \(s)"
        case .tlsRejected(let s): return "TLS verification failed: \(s)"
        case .streamNameInUse(let s): return "the server is still publishing this stream name (an old session?): \(s)"
        case .writeFailed(let s): return "write failed: \(s)"
        case .connectionLost(let s): return "connection lost: \(s)"
        case .fileError(let s): return "file error: \(s)"
        }
    }
}
