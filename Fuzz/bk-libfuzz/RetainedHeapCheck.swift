/// The oracle every target shares: what one input leaves allocated after its parser returned.
/// Each input builds its parser state and drops it, so the sum of (after - before) over the
/// inputs is what the parsers retained: a leak grows it with every input, while the runtime's
/// caches (type metadata on a first-taken path) stop growing after warm-up. libFuzzer's own
/// allocations (corpus, mutations) happen between inputs and are not counted.
struct RetainedHeapCheck {
    /// Inputs before the count starts (metadata instantiated on first use).
    static let warmUpInputs = 2_000
    /// Retained bytes allowed over the rest of the run, whatever its length.
    static let limit = 256 << 10
    private(set) var inputs = 0
    private(set) var retained = 0

    mutating func measure(_ body: () -> Void) -> Int {
        let before = HeapBytes.inUse
        body()
        let after = HeapBytes.inUse
        inputs += 1
        if inputs > Self.warmUpInputs { retained += after - before }
        return retained
    }
}
