import BroadcastCore

/// What a `TagByteRing` keeps per tag: where its body is in the byte region, plus the owner's
/// own fields (timestamps, flags). Each owner keeps its own compact layout.
package protocol TagByteRingEntry: BitwiseCopyable {
    /// Where the body starts in the ring's byte region.
    var offset: Int { get }
    /// The body's bytes.
    var byteCount: Int { get }
}

/// Tag bodies staged first-in, first-out in one byte region allocated at init, with one entry
/// per tag: the storage, the `RingAllocator` and the `FixedRing` of entries that the send
/// queue, the interleaver's staging and the replay ring each used to assemble on their own.
///
/// It never grows and allocates nothing after init: a full ring refuses the append and the
/// owner turns that into a counted drop (or, for the replay ring, an eviction). The whole region
/// is touched at init, so the pages the plan counts are resident from the start (see
/// `RingAllocator`). Not thread-safe: each owner guards it with its own lock.
package struct TagByteRing<Entry: TagByteRingEntry>: ~Copyable {
    private let storage: UnsafeMutableRawBufferPointer
    private var bytes: RingAllocator
    private var entries: FixedRing<Entry>

    /// A ring of `byteCapacity` body bytes and at most `entryCapacity` tags.
    package init(bytes byteCapacity: Int, entries entryCapacity: Int) {
        storage = .allocate(byteCount: byteCapacity, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        bytes = RingAllocator(capacity: byteCapacity)
        entries = FixedRing(capacity: entryCapacity)
    }

    deinit { storage.deallocate() }

    /// Body bytes the region holds.
    package var byteCapacity: Int { bytes.capacity }
    /// Bytes allocated at init (region and entries), for the memory plan.
    package var reservedBytes: Int { bytes.capacity + entries.reservedBytes }
    /// Body bytes held now.
    package var usedBytes: Int { bytes.usedBytes }
    package var count: Int { entries.count }
    package var isEmpty: Bool { entries.isEmpty }
    package var isFull: Bool { entries.isFull }
    /// The oldest entry.
    package var first: Entry? { entries.first }
    /// The newest entry.
    package var last: Entry? { entries.last }
    /// The entry `i` places after the oldest.
    package subscript(i: Int) -> Entry { entries[i] }

    /// Reserves `size` contiguous body bytes and appends the entry `make(offset)` describes;
    /// returns where to write the body, or nil (nothing changed) when the entries or the bytes
    /// are full.
    package mutating func append(size: Int, _ make: (Int) -> Entry) -> UnsafeMutableRawBufferPointer? {
        guard !entries.isFull, let o = bytes.allocate(size) else { return nil }
        entries.append(make(o))
        return UnsafeMutableRawBufferPointer(start: storage.baseAddress! + o, count: size)
    }

    /// Removes the oldest entry and frees its bytes.
    @discardableResult
    package mutating func removeFirst() -> Entry? {
        guard let e = entries.removeFirst() else { return nil }
        bytes.freeOldest(offset: e.offset, count: e.byteCount)
        return e
    }

    /// Empties the ring.
    package mutating func removeAll() {
        entries.removeAll()
        bytes.reset()
    }

    /// An entry's body, in place (valid until that entry is removed).
    package func body(_ e: Entry) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.baseAddress! + e.offset, count: e.byteCount)
    }
}
