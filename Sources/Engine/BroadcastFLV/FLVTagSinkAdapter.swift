import BroadcastCore
import BroadcastPipeline

/// An embedder's `TagSink` as a destination: each packet framed as an FLV tag in its own headroom
/// (`EncodedPacket.withFLVTag`, no copy), everything else passed through. The destination finds
/// the sink's optional conformances (`LinkFeedback`, `KeyframeRequesting`, …) on `adapted`.
package final class FLVTagSinkAdapter: PacketSink, AdaptingSink, @unchecked Sendable {
    private let sink: any TagSink

    package init(_ sink: any TagSink) { self.sink = sink }

    package var adapted: AnyObject { sink }
    package var displayName: String { sink.displayName }
    package var kind: TagSinkKind { sink.kind }
    package var capabilities: DestinationCapabilities { sink.capabilities }
    package var memoryPlanLines: [MemoryPlan.Line] { sink.memoryPlanLines }
    package func open() throws(TransportError) { try sink.open() }
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        try packet.withFLVTag { (tag) throws(TransportError) in try sink.write(tag) }
    }
    package func close() { sink.close() }
    package func abortPendingIO() { sink.abortPendingIO() }
}
