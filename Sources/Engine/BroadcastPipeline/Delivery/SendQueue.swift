import Synchronization
import BroadcastCore

/// A bounded FIFO of encoded packets between the interleaver and one destination's sender thread.
///
/// Payloads live in one preallocated byte ring, each with `EncodedPacket.framingHeadroom` bytes in
/// front (where an FLV-framing sink writes its tag-body prefix in place), and their times and
/// flags in a fixed entry ring, so the queue never allocates after init and can never exceed its
/// byte cap. Admission applies the
/// congestion policy: a dropped video frame always starts a drop-until-keyframe run, so no
/// P-frame is ever sent without its references.
///
/// In block mode (`blockWaitNs` set, `Backpressure.block`) a push into a full queue waits for the
/// sender while the destination delivers (`holdsProducer`): the encoder's thread, and through its
/// lane the producer, is slowed to the sink's pace. Only a sink that takes nothing for
/// `blockWaitNs`, or a destination that went down, makes it a counted drop.
package final class SendQueue: @unchecked Sendable {
    private struct Entry: TagByteRingEntry {
        /// Where the headroom starts; the payload follows it.
        var offset: Int
        var length: Int
        var timestampMs: Int64
        var captureNs: Int64
        var compositionOffsetMs: Int32
        var codec: PacketCodec
        var isKeyframe: Bool
        var isConfig: Bool
        var isPriming: Bool
        var byteCount: Int { EncodedPacket.framingHeadroom + length }

        init(_ p: EncodedPacket, at offset: Int) {
            self.offset = offset
            length = p.data.count
            timestampMs = p.timestampMs
            captureNs = p.captureNs
            compositionOffsetMs = p.compositionOffsetMs
            codec = p.codec
            isKeyframe = p.isKeyframe
            isConfig = p.isConfig
            isPriming = p.isPriming
        }
    }

    let policy: CongestionPolicy
    private var entries: TagByteRing<Entry>
    private var droppingVideoUntilKeyframe = false
    private var closed = false
    /// The sender is inside `withNext`'s body, reading the head entry in place.
    private var consuming = false
    /// `removeAll` arrived while consuming: purge when the body returns, not under its feet.
    private var purgeRequested = false
    private let cond = ConditionLock()
    private let stats: BroadcastStats?
    private let dropped = Atomic<Int>(0)
    /// Block mode: how long a push waits for room (nil: never waits).
    private let blockWaitNs: Int64?
    /// Block mode: the destination is live, so a push into a full queue waits (guarded by `cond`).
    private var holdsProducer = false

    /// Called (outside the lock) when admission starts dropping video: the session asks the encoder for an IDR.
    package var onKeyframeNeeded: (@Sendable () -> Void)?

    package init(policy: CongestionPolicy, maxEntries: Int = 4096, stats: BroadcastStats? = nil,
                 blockWaitNs: Int64? = nil) {
        self.policy = policy
        self.blockWaitNs = blockWaitNs
        // Touched at init, all of it (TagByteRing): the ring restarts at offset 0 whenever it
        // empties, so an untouched ring's pages became resident only as deep as congestion ever
        // filled it, and stayed (the 45-min soak grew 0.47 MB of anon during a throttle, in steps).
        // The plan counts the whole cap, so holding it from the start makes VmHWM match the plan.
        entries = TagByteRing(bytes: policy.maxBytes, entries: maxEntries)
        self.stats = stats
    }

    /// Bytes preallocated by this queue, for the memory plan.
    package var reservedBytes: Int { entries.reservedBytes }

    /// Packets this queue refused (every reason), for the per-destination stats.
    var droppedTags: Int { dropped.load(ordering: .relaxed) }

    /// Queued body bytes right now.
    package var queuedBytes: Int { cond.withLock { entries.usedBytes } }

    /// Media time between the oldest and newest queued packets.
    package var queuedDurationMs: Int { cond.withLock { durationLocked() } }

    private func durationLocked() -> Int {
        guard entries.count > 1, let first = entries.first?.timestampMs, let last = entries.last?.timestampMs else {
            return 0
        }
        return last >= first ? Int(last - first) : 0
    }

    /// Admits `packet` (copying its payload) or drops it by policy; returns the drop reason, or nil when queued.
    @discardableResult
    package func push(_ packet: EncodedPacket) -> DropReason? {
        let size = EncodedPacket.framingHeadroom + packet.data.count
        var needKeyframe = false
        let result: DropReason? = cond.withLock {
            if closed { return .queueFull }
            if packet.track == .video && !packet.isConfig {
                let queued = durationLocked()
                if packet.isKeyframe {
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
            var room = entries.append(size: size) { Entry(packet, at: $0) }
            if room == nil, let wait = blockWaitNs {
                // Block mode: wait for the sender to make room while the sink delivers.
                let deadline = MediaTime.now() + wait
                while room == nil && holdsProducer && !closed && MediaTime.now() < deadline {
                    cond.wait(untilNs: deadline)
                    room = entries.append(size: size) { Entry(packet, at: $0) }
                }
            }
            guard let space = room else {
                if packet.track == .video {
                    droppingVideoUntilKeyframe = true
                    needKeyframe = true
                }
                return .queueFull
            }
            if packet.data.count > 0 {
                (space.baseAddress! + EncodedPacket.framingHeadroom).copyMemory(from: packet.data.baseAddress!,
                                                                            byteCount: packet.data.count)
            }
            cond.broadcast()
            return nil
        }
        if let r = result {
            stats?.countDrop(r)
            dropped.add(1, ordering: .relaxed)
        }
        if needKeyframe { onKeyframeNeeded?() }
        return result
    }

    /// Blocks until a packet is available (or the deadline passes / the queue is closed), then calls
    /// `body` with it while it stays in the ring (no copy; its headroom is the sender's to write),
    /// and removes it afterwards. Returns false on timeout or when closed and drained.
    package func withNext(deadlineNs: Int64, _ body: (EncodedPacket) -> Void) -> Bool {
        cond.lock()
        while entries.isEmpty {
            if closed { cond.unlock(); return false }
            if MediaTime.now() >= deadlineNs { cond.unlock(); return false }
            cond.wait(untilNs: deadlineNs)
        }
        let e = entries.first!
        consuming = true
        cond.unlock()
        let region = entries.body(e)
        body(EncodedPacket(codec: e.codec, data: UnsafeRawBufferPointer(rebasing: region[EncodedPacket.framingHeadroom...]),
                           timestampMs: e.timestampMs, compositionOffsetMs: e.compositionOffsetMs,
                           isKeyframe: e.isKeyframe, isConfig: e.isConfig, isPriming: e.isPriming,
                           captureNs: e.captureNs, headroom: EncodedPacket.framingHeadroom))
        cond.withLock {
            consuming = false
            if purgeRequested {
                purgeRequested = false
                entries.removeAll()
            } else {
                entries.removeFirst()
            }
            cond.broadcast()
        }
        return true
    }

    /// Block mode: whether a push into a full queue waits (the destination is live) or drops at
    /// once (it is reconnecting, failed or closed); a push waiting now is woken to see it.
    package func setHoldsProducer(_ holds: Bool) {
        cond.withLock {
            holdsProducer = holds && blockWaitNs != nil
            cond.broadcast()
        }
    }

    /// Drops everything queued (used when a destination is abandoned).
    func removeAll() {
        cond.withLock {
            if consuming {
                purgeRequested = true
            } else {
                entries.removeAll()
            }
            cond.broadcast()
        }
    }

    /// Wakes the sender; `withNext` returns false once the queue is empty.
    func close() {
        cond.withLock {
            closed = true
            cond.broadcast()
        }
    }

    /// Waits until the queue is empty or the deadline passes; true when drained.
    func waitUntilDrained(deadlineNs: Int64) -> Bool {
        cond.withLock {
            while !entries.isEmpty {
                if MediaTime.now() >= deadlineNs { return false }
                cond.wait(untilNs: deadlineNs)
            }
            return true
        }
    }
}
