import BroadcastCore

/// Offset bookkeeping for a FIFO of variable-sized allocations in one fixed byte region.
///
/// Allocations are freed oldest-first. Each allocation is contiguous: when the tail is too
/// short, the allocator wraps to offset 0 and leaves the tail unused until the reader passes it.
/// It never grows, so a full ring is back-pressure, not reallocation.
///
/// Because it restarts at offset 0 whenever it empties, a region it manages is written only as
/// deep as the queue ever got: its owners touch the whole region at init, so the pages the plan
/// counts are resident from the start and a congestion episode cannot add resident memory later
/// (the send queue, the interleaver's staging, the audio lanes).
struct RingAllocator: Sendable {
    let capacity: Int
    private var start = 0
    private var end = 0
    private var tailEnd = 0
    private var wrapped = false
    private(set) var liveCount = 0

    init(capacity: Int) { self.capacity = capacity }

    /// Bytes held by live allocations (excluding a skipped tail).
    var usedBytes: Int {
        liveCount == 0 ? 0 : (wrapped ? (tailEnd - start) + end : end - start)
    }

    /// Returns the offset of `n` contiguous bytes, or nil when they do not fit.
    mutating func allocate(_ n: Int) -> Int? {
        if liveCount == 0 {
            start = 0; end = 0; wrapped = false
        }
        if !wrapped {
            if capacity - end >= n {
                let o = end
                end += n
                liveCount += 1
                return o
            }
            if start >= n {
                wrapped = true
                tailEnd = end
                end = n
                liveCount += 1
                return 0
            }
            return nil
        }
        if start - end >= n {
            let o = end
            end += n
            liveCount += 1
            return o
        }
        return nil
    }

    /// Frees the oldest allocation, which starts at `offset` and holds `n` bytes.
    mutating func freeOldest(offset: Int, count n: Int) {
        liveCount -= 1
        if liveCount == 0 {
            start = 0; end = 0; wrapped = false
            return
        }
        start = offset + n
        if wrapped && start >= tailEnd {
            wrapped = false
            start = 0
        }
    }

    mutating func reset() {
        start = 0; end = 0; wrapped = false; liveCount = 0
    }
}
