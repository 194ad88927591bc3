import BroadcastCore

/// A fixed set of output-sized I420 pictures: the video lane's encoder input.
///
/// Allocated once at start and never grown. When every slot is in use the producer gets a
/// counted `encoder_busy` drop, which is the video lane's back-pressure.
///
/// The last encoded picture stays in its slot, pinned as "last", so the lane can encode it
/// again when the source sends nothing new (a still screen): no copy, and no extra slot, since
/// `acquire()` takes the pinned slot back when no other is free (a new picture replaces it
/// anyway). Only while a repeat is being encoded ("borrowed") is it out of reach.
package final class FramePool: @unchecked Sendable {
    let width: Int
    let height: Int
    let capacity: Int
    private let storage: UnsafeMutableRawBufferPointer
    private let frameBytes: Int
    /// Letterbox rectangle last painted into each slot; borders are repainted only when it changes.
    private var painted: [LetterboxGeometry?]
    private var free: [Int]
    private var freeCount: Int
    /// The slot pinned as the last encoded picture, or -1.
    private var last = -1
    /// True while the encoder reads `last` for a repeat.
    private var lastBorrowed = false
    private let lock = ConditionLock()

    package init(width: Int, height: Int, capacity: Int) {
        self.width = width
        self.height = height
        self.capacity = capacity
        frameBytes = (I420Frame.byteCount(width: width, height: height) + 63) & ~63
        storage = .allocate(byteCount: frameBytes * capacity, alignment: 64)
        painted = Array(repeating: nil, count: capacity)
        free = Array(0..<capacity)
        freeCount = capacity
        for i in 0..<capacity { FrameConverter.fillBlack(frame(i)) }
    }

    deinit { storage.deallocate() }

    /// Bytes a pool of `capacity` frames of this size holds.
    package static func byteCount(width: Int, height: Int, capacity: Int) -> Int {
        ((I420Frame.byteCount(width: width, height: height) + 63) & ~63) * capacity
    }

    /// Bytes this pool holds, for the memory plan.
    var byteCount: Int { frameBytes * capacity }

    /// The picture in slot `index`.
    package func frame(_ index: Int) -> I420Frame {
        let base = storage.baseAddress!.assumingMemoryBound(to: UInt8.self) + index * frameBytes
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        return I420Frame(width: width, height: height, y: base, u: base + width * height,
                         v: base + width * height + cw * ch, strideY: width, strideUV: cw)
    }

    /// Takes a free slot, else the pinned last picture's (unless a repeat is reading it), or nil.
    package func acquire() -> Int? {
        lock.withLock {
            guard freeCount > 0 else {
                guard last >= 0 && !lastBorrowed else { return nil }
                defer { last = -1 }
                return last
            }
            freeCount -= 1
            return free[freeCount]
        }
    }

    /// Pins `index` (an encoded picture) as the last one instead of freeing it; the previous
    /// last slot is freed.
    package func retainAsLast(_ index: Int) {
        lock.withLock {
            if last >= 0 {
                free[freeCount] = last
                freeCount += 1
            }
            last = index
            lastBorrowed = false
        }
    }

    /// The last picture's slot, held for a repeat until `returnLast()`; nil when there is none.
    package func borrowLast() -> Int? {
        lock.withLock {
            guard last >= 0 && !lastBorrowed else { return nil }
            lastBorrowed = true
            return last
        }
    }

    /// Ends a repeat's hold on the last picture.
    package func returnLast() {
        lock.withLock { lastBorrowed = false }
    }

    /// Frees the pinned last picture (the lane has stopped).
    package func releaseLast() {
        lock.withLock {
            guard last >= 0 else { return }
            free[freeCount] = last
            freeCount += 1
            last = -1
            lastBorrowed = false
        }
    }

    /// True when a last picture is pinned (a repeat is possible).
    package var hasLast: Bool { lock.withLock { last >= 0 } }

    /// Returns a slot taken with `acquire()`.
    func release(_ index: Int) {
        lock.withLock {
            free[freeCount] = index
            freeCount += 1
        }
    }

    /// Slots in use right now; a pinned last picture that `acquire()` may take counts as free.
    package var inUse: Int { lock.withLock { capacity - freeCount - (last >= 0 && !lastBorrowed ? 1 : 0) } }

    /// Records the rectangle painted into `slot`; returns true when its borders must be repainted.
    func needsBorderRepaint(slot: Int, geometry: LetterboxGeometry) -> Bool {
        let full = geometry.width == width && geometry.height == height
        if painted[slot] == geometry { return false }
        let wasFull = painted[slot].map { $0.width == width && $0.height == height } ?? true
        painted[slot] = geometry
        return !(full && wasFull)
    }
}
