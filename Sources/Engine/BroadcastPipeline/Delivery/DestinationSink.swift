import BroadcastCore

/// A destination's endpoint, whatever it writes: a network publisher (RTMP, SRT, WHIP), a
/// recording (FLV, MP4), or a sink the embedding application supplies.
///
/// All calls come from that destination's single sender thread. The small surface is the whole
/// contract: what the sink is (`capabilities`), what it holds (`memoryPlanLines`), and the calls
/// of its life. How it takes the stream is its refinement: a `PacketSink` takes the encoded packets
/// and muxes its own wire format (every built-in destination); a `TagSink` (`BroadcastFLV`, what an
/// embedder implements) takes FLV tags, through `FLVTagSinkAdapter`. A network link that reports
/// on itself also conforms to `LinkFeedback`.
public protocol DestinationSink: AnyObject {
    /// Human-readable destination with secrets redacted (safe for logs).
    var displayName: String { get }
    /// What this sink is, as the stats name it ("rtmp", "srt", "flv", "mp4", "discard", "custom").
    var kind: TagSinkKind { get }
    /// How the pipeline feeds it; read once, when its destination is built.
    var capabilities: DestinationCapabilities { get }
    /// What the sink holds beyond its send queue, as lines of the memory plan (read once, before
    /// the plan is made). Lines with the same key add up across destinations, except a `once`
    /// line (library pages), counted once per process. Empty by default.
    var memoryPlanLines: [MemoryPlan.Line] { get }
    /// Connects or opens.
    func open() throws(TransportError)
    /// Flushes and closes; safe to call twice.
    func close()
    /// Called from another thread when a stop deadline passed while a write may still be
    /// blocked (a stalled link): make that write fail now. Must be async-safe with writing.
    func abortPendingIO()
}

/// A destination that muxes its own wire format from the encoded packets: RTMP and the FLV file
/// frame them as FLV tags, SRT as MPEG-TS, WHIP as RTP, the MP4 recorder as fragments; an embedder's
/// `TagSink` through `FLVTagSinkAdapter`. What a `Destination` writes to.
package protocol PacketSink: DestinationSink {
    /// Writes one packet (its payload valid only during the call); throws when the destination failed.
    func write(_ packet: EncodedPacket) throws(TransportError)
}

/// The kind of a destination's sink, as its line in the stats names it.
public enum TagSinkKind: String, Sendable {
    case rtmp, srt, whip, flv, mp4, discard
    /// A sink the embedding application supplied.
    case custom
}

extension DestinationSink {
    public var kind: TagSinkKind { .custom }
    public var capabilities: DestinationCapabilities { .recording }
    public var memoryPlanLines: [MemoryPlan.Line] { [] }
    public func abortPendingIO() {}
}

/// A sink that stands for another (`FLVTagSinkAdapter`): the destination looks for the optional
/// conformances (`LinkFeedback`, `KeyframeRequesting`, `ClosingSink`, …) on `adapted`.
package protocol AdaptingSink: AnyObject {
    /// The sink this one stands for.
    var adapted: AnyObject { get }
}
