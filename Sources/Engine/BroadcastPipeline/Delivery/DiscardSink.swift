import BroadcastCore

/// A sink that accepts every packet and keeps nothing: the end of the line for benchmarks.
package final class DiscardSink: PacketSink, @unchecked Sendable {
    private(set) var packets = 0
    private(set) var bytes = 0
    package init() {}
    package var kind: TagSinkKind { .discard }
    package var displayName: String { "discard" }
    package func open() throws(TransportError) {}
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        packets += 1
        bytes += packet.data.count
    }
    package func close() {}
}
