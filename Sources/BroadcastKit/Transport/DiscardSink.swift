/// A sink that accepts every tag and keeps nothing: the end of the line for benchmarks.
public final class DiscardSink: TagSink, @unchecked Sendable {
    public private(set) var tags = 0
    public private(set) var bytes = 0
    public init() {}
    public var displayName: String { "discard" }
    public func open() throws {}
    public func write(_ tag: FLVTag) throws {
        tags += 1
        bytes += tag.body.count
    }
    public func close() {}
}
