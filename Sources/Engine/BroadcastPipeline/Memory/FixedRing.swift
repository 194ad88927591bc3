import BroadcastCore

/// A first-in, first-out queue of plain values in storage allocated once, at init.
///
/// Every bounded queue in the pipeline (lane hand-offs, interleaver staging, send queues) keeps
/// its entries in one of these: a full ring refuses the append, and the caller turns that into
/// a counted drop. It never grows, and no operation after init allocates.
/// Not thread-safe: each owner guards it with its own lock.
package struct FixedRing<Element: BitwiseCopyable>: ~Copyable {
    /// The most elements it holds.
    package let capacity: Int
    private let storage: UnsafeMutablePointer<Element>
    private var head = 0
    /// Elements held now.
    package private(set) var count = 0

    package init(capacity: Int) {
        precondition(capacity > 0, "a ring needs room for at least one element")
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        // Touched now: the ring's slots advance through all of its storage, so its pages would
        // otherwise become resident over the first lap (a 4096-entry send queue: about a minute)
        // and show as growth in a long run's memory.
        UnsafeMutableRawPointer(storage).initializeMemory(as: UInt8.self, repeating: 0,
                                                          count: capacity * MemoryLayout<Element>.stride)
    }

    deinit { storage.deallocate() }

    package var isEmpty: Bool { count == 0 }
    package var isFull: Bool { count == capacity }

    /// Bytes allocated at init, for the memory plan.
    package var reservedBytes: Int { capacity * MemoryLayout<Element>.stride }

    /// Adds `element` at the back; false (nothing stored) when the ring is full.
    @discardableResult
    package mutating func append(_ element: Element) -> Bool {
        guard count < capacity else { return false }
        (storage + slot(count)).initialize(to: element)
        count += 1
        return true
    }

    /// The oldest element.
    package var first: Element? { count > 0 ? storage[head] : nil }

    /// The newest element.
    package var last: Element? { count > 0 ? storage[slot(count - 1)] : nil }

    /// The element `offset` places after the oldest (0 is the oldest).
    package subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "ring offset out of range")
        return storage[slot(offset)]
    }

    /// Removes and returns the oldest element.
    @discardableResult
    package mutating func removeFirst() -> Element? {
        guard count > 0 else { return nil }
        let e = storage[head]
        head = head + 1 == capacity ? 0 : head + 1
        count -= 1
        return e
    }

    package mutating func removeAll() {
        head = 0
        count = 0
    }

    @inline(__always)
    private func slot(_ offset: Int) -> Int {
        let i = head + offset
        return i >= capacity ? i - capacity : i
    }
}
