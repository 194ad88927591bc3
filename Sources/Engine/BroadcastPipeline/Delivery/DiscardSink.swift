import BroadcastCore

/// A sink that accepts every tag and keeps nothing: the end of the line for benchmarks.
package final class DiscardSink: TagSink, @unchecked Sendable {
    private(set) var tags = 0
    private(set) var bytes = 0
    package init() {}
    package var kind: TagSinkKind { .discard }
    package var displayName: String { "discard" }
    package func open() throws(TransportError) {}
    package func write(_ tag: FLVTag) throws(TransportError) {
        tags += 1
        bytes += tag.body.count
    }
    package func close() {}
}
