import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// Pushes a tag with a body of `size` bytes.
private func push(_ q: SendQueue, _ type: TrackKind, ts: UInt32, key: Bool = false, size: Int = 100) -> DropReason? {
    let body = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
    defer { body.deallocate() }
    body.initializeMemory(as: UInt8.self, repeating: key ? 0x17 : 0x27)
    return q.push(EncodedPacket.of(type, timestampMs: Int64(ts), data: UnsafeRawBufferPointer(body), isKeyframe: key))
}

@Suite(.timeLimit(.minutes(2))) struct SendQueueTests {
    @Test func stalledTransportNeverExceedsByteCap() {
        let policy = CongestionPolicy(dropPFramesAfterMs: 700, dropAllVideoAfterMs: 900, maxBytes: 64 << 10)
        let stats = BroadcastStats()
        let q = SendQueue(policy: policy, stats: stats)
        // Nobody drains: 60 s of 30 fps video + 47 audio tags/s.
        var ts: UInt32 = 0
        for i in 0..<1800 {
            _ = push(q, .video, ts: ts, key: i % 60 == 0, size: 2000)
            _ = push(q, .audio, ts: ts, size: 300)
            ts += 33
            #expect(q.queuedBytes <= policy.maxBytes)
        }
        let s = stats.snapshot()
        #expect(s.drops(.queueFull) > 0)
        #expect(s.drops(.congestionPFrame) + s.drops(.congestionUntilIDR) > 0)
    }

    @Test func afterCongestionFirstVideoSentIsKeyframe() {
        let policy = CongestionPolicy(dropPFramesAfterMs: 700, dropAllVideoAfterMs: 900, maxBytes: 8 << 20)
        let q = SendQueue(policy: policy)
        var ts: UInt32 = 0
        // No reader for 2 s (congestion), then a fast reader that drains before every push.
        var admitted: [(Bool, UInt32)] = []
        for i in 0..<120 {
            if i >= 45 { while q.withNext(deadlineNs: 0, { _ in }) {} }
            let key = i % 30 == 0
            if push(q, .video, ts: ts, key: key) == nil { admitted.append((key, ts)) }
            _ = push(q, .audio, ts: ts)
            ts += 33
        }
        // Every run of admitted video must begin with a keyframe after any gap.
        var sawDrop = false
        var prevTs: UInt32? = nil
        for (key, t) in admitted {
            if let p = prevTs, t - p > 40 { sawDrop = true; #expect(key, "video resumed at \(t) without a keyframe") }
            prevTs = t
        }
        #expect(sawDrop)
    }

    @Test func audioIsNotDroppedBeforeByteCap() {
        let policy = CongestionPolicy(dropPFramesAfterMs: 700, dropAllVideoAfterMs: 900, maxBytes: 1 << 20)
        let stats = BroadcastStats()
        let q = SendQueue(policy: policy, stats: stats)
        var ts: UInt32 = 0
        var audioDrops = 0
        for i in 0..<200 {
            _ = push(q, .video, ts: ts, key: i == 0, size: 1000)
            if push(q, .audio, ts: ts, size: 200) != nil { audioDrops += 1 }
            ts += 33
        }
        // 200 x 1.2 KB < 1 MB: congestion dropped video but never audio.
        #expect(audioDrops == 0)
        #expect(stats.snapshot().drops(.congestionPFrame) > 0)
    }

    @Test func fifoOrderAndContents() {
        let q = SendQueue(policy: CongestionPolicy(maxBytes: 4096))
        for i in 0..<10 { #expect(push(q, .audio, ts: UInt32(i), size: 300) == nil) }
        var seen: [UInt32] = []
        while q.withNext(deadlineNs: MediaTime.now(), { seen.append(UInt32($0.timestampMs)) }) {}
        #expect(seen == Array(0..<10))
        #expect(q.queuedBytes == 0)
    }
}

@Suite(.timeLimit(.minutes(2))) struct SendQueuePurgeTests {
    /// removeAll while the sender is inside withNext (a write blocked on a stalled link) must not
    /// corrupt the count: the sender's pop afterwards leaves an empty, usable queue.
    @Test func removeAllDuringConsumeLeavesConsistentQueue() async {
        let q = SendQueue(policy: CongestionPolicy(maxBytes: 4096))
        for i in 0..<5 { #expect(push(q, .audio, ts: UInt32(i), size: 100) == nil) }
        let got = q.withNext(deadlineNs: MediaTime.now()) { _ in q.removeAll() }
        #expect(got)
        #expect(q.queuedBytes == 0)
        q.close()
        #expect(!q.withNext(deadlineNs: MediaTime.now() + 1_000_000) { _ in })
    }
}
