import BroadcastCore
import BroadcastPipeline

/// A sink that takes the stream as FLV tags: what an embedding application implements to receive
/// it (`BroadcastConfiguration.Destination.custom`). Each tag's body is framed in place in the
/// send queue (no copy) and valid only during `write`. Its destination reaches it through
/// `FLVTagSinkAdapter`.
public protocol TagSink: DestinationSink {
    /// Writes one tag; throws when the destination failed.
    func write(_ tag: FLVTag) throws(TransportError)
}
