import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct RingAllocatorTests {
    @Test func fifoWrapsAndNeverOverlaps() {
        var r = RingAllocator(capacity: 100)
        var live: [(Int, Int)] = []
        var rng = SystemRandomNumberGenerator()
        var maxUsed = 0
        for _ in 0..<10_000 {
            if Bool.random(using: &rng) || live.isEmpty {
                let n = Int.random(in: 1...40, using: &rng)
                if let o = r.allocate(n) {
                    #expect(o >= 0 && o + n <= 100)
                    for (lo, ln) in live { #expect(o + n <= lo || lo + ln <= o, "overlap") }
                    live.append((o, n))
                }
            } else {
                let (o, n) = live.removeFirst()
                r.freeOldest(offset: o, count: n)
            }
            maxUsed = max(maxUsed, r.usedBytes)
            #expect(r.usedBytes <= 100)
            #expect(r.liveCount == live.count)
        }
        #expect(maxUsed > 50)
    }

    @Test func fullRingRefuses() {
        var r = RingAllocator(capacity: 10)
        #expect(r.allocate(6) == 0)
        #expect(r.allocate(6) == nil)
        #expect(r.allocate(4) == 6)
        #expect(r.allocate(1) == nil)
        r.freeOldest(offset: 0, count: 6)
        #expect(r.allocate(6) == 0)
    }
}
