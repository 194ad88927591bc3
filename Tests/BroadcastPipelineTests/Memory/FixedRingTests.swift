import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct FixedRingTests {
    struct Item: Equatable, BitwiseCopyable {
        var id: Int
        var stamp: Int64
    }

    @Test func keepsFIFOOrderAcrossWraparound() {
        var ring = FixedRing<Item>(capacity: 3)
        var next = 0, expected = 0
        // 3 in, 2 out, repeated: head and tail wrap many times.
        for _ in 0..<100 {
            while ring.append(Item(id: next, stamp: Int64(next) * 10)) { next += 1 }
            #expect(ring.count == 3 && ring.isFull)
            #expect(ring.first?.id == expected && ring.last?.id == next - 1)
            #expect(ring[1].id == expected + 1)
            for _ in 0..<2 {
                let item = ring.removeFirst()
                #expect(item == Item(id: expected, stamp: Int64(expected) * 10))
                expected += 1
            }
        }
        #expect(ring.count == 1)
    }

    @Test func fullRingRefusesWithoutChangingContents() {
        var ring = FixedRing<Int>(capacity: 2)
        let a = ring.append(1), b = ring.append(2), c = ring.append(3)
        #expect(a && b && !c)
        #expect(ring.count == 2 && ring.first == 1 && ring.last == 2)
        ring.removeAll()
        let removed = ring.removeFirst()
        #expect(ring.isEmpty && ring.first == nil && removed == nil)
        let d = ring.append(4)
        #expect(d && ring.first == 4)
    }

    @Test func reservedBytesIsTheFixedCapacity() {
        let ring = FixedRing<Item>(capacity: 64)
        #expect(ring.reservedBytes == 64 * MemoryLayout<Item>.stride)
    }

    /// A million appends and removals make no heap allocation on this thread.
    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)"))
    func steadyStateAllocatesNothing() {
        var ring = FixedRing<Item>(capacity: 256)
        // Warm-up: the first use of a generic type in a debug build instantiates its metadata
        // (a few allocations, once); steady state is what follows.
        ring.append(Item(id: -1, stamp: 0))
        ring.removeFirst()
        let before = AllocationCounter.thisThread()
        for i in 0..<1_000_000 {
            if !ring.append(Item(id: i, stamp: 0)) {
                ring.removeFirst()
                ring.append(Item(id: i, stamp: 0))
            }
            if i % 3 == 0 { ring.removeFirst() }
        }
        let allocations = AllocationCounter.thisThread() - before
        #expect(allocations == 0, "\(allocations) allocations in a million appends")
        #expect(ring.count <= ring.capacity)
    }
}
