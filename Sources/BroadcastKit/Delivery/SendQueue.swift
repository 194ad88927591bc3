/// A bounded FIFO of FLV tags between the muxer and one destination's sender thread.
///
/// Tag bodies live in one preallocated byte ring and metadata in a fixed entry ring, so the
/// queue never allocates after init and can never exceed its byte cap. Admission applies the
/// congestion policy: a dropped video frame always starts a drop-until-keyframe run, so no
/// P-frame is ever sent without its references.
public final class SendQueue: @unchecked Sendable {
    private struct Entry {
        var offset: Int
        var length: Int
        var timestampMs: UInt32
        var type: FLVTagType
        var isKeyframe: Bool
        var isHeader: Bool
        var captureNs: Int64
    }

    public let policy: CongestionPolicy
    private let ring: UnsafeMutableRawBufferPointer
    private var entries: UnsafeMutableBufferPointer<Entry>
    private var head = 0          // oldest entry index
    private var count = 0
    private var bytes: RingAllocator
    private var droppingVideoUntilKeyframe = false
    private var closed = false
    /// The sender is inside `withNext`'s body, reading the head entry in place.
    private var consuming = false
    /// `removeAll` arrived while consuming: purge when the body returns, not under its feet.
    private var purgeRequested = false
    private let cond = ConditionLock()
    private let stats: BroadcastStats?

    /// Called (outside the lock) when admission starts dropping video: the session asks the encoder for an IDR.
    public var onKeyframeNeeded: (@Sendable () -> Void)?

    public init(policy: CongestionPolicy, maxEntries: Int = 4096, stats: BroadcastStats? = nil) {
        self.policy = policy
        ring = .allocate(byteCount: policy.maxBytes, alignment: 16)
        bytes = RingAllocator(capacity: policy.maxBytes)
        entries = .allocate(capacity: maxEntries)
        self.stats = stats
    }

    deinit {
        ring.deallocate()
        entries.deallocate()
    }

    /// Bytes preallocated by this queue, for the memory plan.
    public var reservedBytes: Int { policy.maxBytes + entries.count * MemoryLayout<Entry>.stride }

    /// Queued body bytes right now.
    public var queuedBytes: Int { cond.withLock { bytes.usedBytes } }

    /// Media time between the oldest and newest queued tags.
    public var queuedDurationMs: Int { cond.withLock { durationLocked() } }

    private func durationLocked() -> Int {
        guard count > 1 else { return 0 }
        let first = entries[head].timestampMs
        let last = entries[(head + count - 1) % entries.count].timestampMs
        return last >= first ? Int(last - first) : 0
    }

    /// Admits `tag` (copying its body) or drops it by policy; returns the drop reason, or nil when queued.
    @discardableResult
    public func push(_ tag: FLVTag) -> DropReason? {
        var needKeyframe = false
        let result: DropReason? = cond.withLock {
            if closed { return .queueFull }
            if tag.type == .video && !tag.isHeader {
                let queued = durationLocked()
                if tag.isKeyframe {
                    if queued > policy.dropAllVideoAfterMs {
                        droppingVideoUntilKeyframe = true
                        needKeyframe = true
                        return .congestionUntilIDR
                    }
                    droppingVideoUntilKeyframe = false
                } else if droppingVideoUntilKeyframe {
                    return queued > policy.dropAllVideoAfterMs ? .congestionUntilIDR : .congestionPFrame
                } else if queued > policy.dropPFramesAfterMs {
                    droppingVideoUntilKeyframe = true
                    needKeyframe = true
                    return queued > policy.dropAllVideoAfterMs ? .congestionUntilIDR : .congestionPFrame
                }
            }
            guard count < entries.count, let offset = bytes.allocate(tag.body.count) else {
                if tag.type == .video {
                    droppingVideoUntilKeyframe = true
                    needKeyframe = true
                }
                return .queueFull
            }
            if tag.body.count > 0 {
                (ring.baseAddress! + offset).copyMemory(from: tag.body.baseAddress!, byteCount: tag.body.count)
            }
            entries[(head + count) % entries.count] = Entry(offset: offset, length: tag.body.count,
                                                           timestampMs: tag.timestampMs, type: tag.type,
                                                           isKeyframe: tag.isKeyframe, isHeader: tag.isHeader,
                                                           captureNs: tag.captureNs)
            count += 1
            cond.broadcast()
            return nil
        }
        if let r = result { stats?.countDrop(r) }
        if needKeyframe { onKeyframeNeeded?() }
        return result
    }

    /// Blocks until a tag is available (or the deadline passes / the queue is closed), then calls
    /// `body` with it while it stays in the ring (no copy), and removes it afterwards.
    /// Returns false on timeout or when closed and drained.
    public func withNext(deadlineNs: Int64, _ body: (FLVTag) -> Void) -> Bool {
        cond.lock()
        while count == 0 {
            if closed { cond.unlock(); return false }
            if MediaTime.now() >= deadlineNs { cond.unlock(); return false }
            cond.wait(untilNs: deadlineNs)
        }
        let e = entries[head]
        consuming = true
        cond.unlock()
        let tag = FLVTag(type: e.type, timestampMs: e.timestampMs,
                         body: UnsafeRawBufferPointer(start: ring.baseAddress! + e.offset, count: e.length),
                         isKeyframe: e.isKeyframe, isHeader: e.isHeader, captureNs: e.captureNs)
        body(tag)
        cond.withLock {
            consuming = false
            if purgeRequested {
                purgeRequested = false
                head = 0; count = 0; bytes.reset()
            } else {
                bytes.freeOldest(offset: e.offset, count: e.length)
                head = (head + 1) % entries.count
                count -= 1
            }
            cond.broadcast()
        }
        return true
    }

    /// Drops everything queued (used when a destination is abandoned).
    public func removeAll() {
        cond.withLock {
            if consuming {
                purgeRequested = true
            } else {
                head = 0; count = 0; bytes.reset()
            }
            cond.broadcast()
        }
    }

    /// Wakes the sender; `withNext` returns false once the queue is empty.
    public func close() {
        cond.withLock {
            closed = true
            cond.broadcast()
        }
    }

    /// Waits until the queue is empty or the deadline passes; true when drained.
    public func waitUntilDrained(deadlineNs: Int64) -> Bool {
        cond.withLock {
            while count > 0 {
                if MediaTime.now() >= deadlineNs { return false }
                cond.wait(untilNs: deadlineNs)
            }
            return true
        }
    }
}
