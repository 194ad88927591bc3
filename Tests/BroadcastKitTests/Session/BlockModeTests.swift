import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// A custom sink that keeps every tag's type and timestamp, and takes `delayUs` per media tag: a
/// sink slower than the producer.
final class SlowTagLog: TagSink, @unchecked Sendable {
    let delayUs: UInt32
    private let log = Mutex<[(FLVTagType, UInt32)]>([])
    init(delayUs: UInt32) { self.delayUs = delayUs }
    var displayName: String { "slow-log" }
    func open() throws(TransportError) {}
    func write(_ tag: FLVTag) throws(TransportError) {
        if tag.isHeader || tag.type == .scriptData { return }
        if delayUs > 0 { usleep(delayUs) }
        log.withLock { $0.append((tag.type, tag.timestampMs)) }
    }
    func close() {}
    var tags: [(FLVTagType, UInt32)] { log.withLock { $0 } }
}

/// A sink for a real-time transport (as live SRT): keeps each media tag's timestamp and when it
/// was written.
final class RealTimeLog: TagSink, @unchecked Sendable {
    private let log = Mutex<[(ms: UInt32, atNs: Int64)]>([])
    var displayName: String { "real-time-log" }
    var capabilities: DestinationCapabilities { DestinationCapabilities(needsRealTimeInput: true) }
    func open() throws(TransportError) {}
    func write(_ tag: FLVTag) throws(TransportError) {
        if tag.isHeader { return }
        log.withLock { $0.append((tag.timestampMs, MediaTime.now())) }
    }
    func close() {}
    var writes: [(ms: UInt32, atNs: Int64)] { log.withLock { $0 } }
}

/// Timestamps a sender thread took, in order.
final class Received: Sendable {
    let values = Mutex<[UInt32]>([])
}

/// Block mode (`Backpressure.block`): the producer is the clock, so nothing after the lanes drops a
/// tag or moves a timestamp, whatever the wall clock does (a pause of the producer) and however
/// slow a sink is (it slows the producer instead).
@Suite(.timeLimit(.minutes(3))) struct BlockModeStageTests {
    @Test func interleaverHoldsALoneTrackThroughAPauseAndClampsNothing() {
        let log = TagLog()
        let stats = BroadcastStats()
        let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 20, stagingWaitNs: 50_000_000,
                             stats: stats) { t, _ in log.tags.append((t.track, UInt32(t.timestampMs))) }
        il.submit(type: .video, timestampMs: 1000, isKeyframe: true, bodySize: 10, nowNs: 0) { _ in }
        // 40 s of wall clock with no audio: the producer paused; nothing is released by time.
        il.poll(nowNs: 40_000_000_000)
        #expect(log.tags.isEmpty)
        // The audio of that instant comes after the pause, earlier in media time than the video.
        il.submit(type: .audio, timestampMs: 990, isKeyframe: false, bodySize: 10, nowNs: 40_000_000_000) { _ in }
        il.submit(type: .audio, timestampMs: 1011, isKeyframe: false, bodySize: 10, nowNs: 40_000_000_000) { _ in }
        il.drain(nowNs: 40_000_000_000)
        #expect(log.tags.map(\.1) == [990, 1000, 1011])
        #expect(stats.snapshot().lateTagsClamped == 0)
    }

    @Test func liveInterleaverStillReleasesByTheWallClock() {
        // The same arrivals in live mode: the video goes after 150 ms, the late audio is clamped.
        let log = TagLog()
        let stats = BroadcastStats()
        let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 20, stats: stats) { t, _ in
            log.tags.append((t.track, UInt32(t.timestampMs)))
        }
        il.submit(type: .video, timestampMs: 1000, isKeyframe: true, bodySize: 10, nowNs: 0) { _ in }
        il.poll(nowNs: 40_000_000_000)
        il.submit(type: .audio, timestampMs: 990, isKeyframe: false, bodySize: 10, nowNs: 40_000_000_000) { _ in }
        il.drain(nowNs: 40_000_000_000)
        #expect(log.tags.map(\.1) == [1000, 1000])
        #expect(stats.snapshot().lateTagsClamped == 1)
    }

    @Test func fullStagingWaitsForTheOtherTrackThenForALateOneNoMore() throws {
        let log = TagLog()
        let stats = BroadcastStats()
        // 64 video entries of staging; a 200 ms wait for audio.
        let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 20, stagingWaitNs: 200_000_000,
                             stats: stats) { t, _ in log.tags.append((t.track, UInt32(t.timestampMs))) }
        for i in 0..<64 {
            il.submit(type: .video, timestampMs: Int64(i) * 33, isKeyframe: i == 0, bodySize: 10, nowNs: 0) { _ in }
        }
        // The 65th waits for audio, which another lane delivers 50 ms later: released in order.
        let audioLane = WorkerThread(name: "test-audio")
        try audioLane.start {
            usleep(50_000)
            for j in 0..<200 {
                il.submit(type: .audio, timestampMs: Int64(j) * 21, isKeyframe: false, bodySize: 10, nowNs: 0) { _ in }
            }
        }
        let start = MediaTime.now()
        il.submit(type: .video, timestampMs: 64 * 33, isKeyframe: false, bodySize: 10, nowNs: 0) { _ in }
        let waited = MediaTime.now() - start
        audioLane.join()
        il.drain(nowNs: 0)
        #expect(waited >= 40_000_000, "the full staging waited for the audio lane")
        #expect(waited < 200_000_000, "and went on when it came, not at the deadline")
        var last: UInt32 = 0
        for (_, ts) in log.tags { #expect(ts >= last); last = ts }
        #expect(log.tags.count == 65 + 200)
        #expect(stats.snapshot().lateTagsClamped == 0)
        #expect(stats.snapshot().totalDrops == 0)

        // A track that stopped: the wait ends at its deadline once, then lone heads go at once.
        let log2 = TagLog()
        let il2 = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 20, stagingWaitNs: 100_000_000,
                              stats: BroadcastStats()) { t, _ in log2.tags.append((t.track, UInt32(t.timestampMs))) }
        let t0 = MediaTime.now()
        for i in 0..<200 {
            il2.submit(type: .video, timestampMs: Int64(i) * 33, isKeyframe: i == 0, bodySize: 10, nowNs: 0) { _ in }
        }
        let took = MediaTime.now() - t0
        #expect(took >= 100_000_000 && took < 1_000_000_000, "one wait for the silent track, not one per frame")
        #expect(log2.tags.count == 200)
    }

    /// A producer's pause: the mixer keeps its audio as given, mixes no wall-clock silence into the
    /// pause, and discards nothing of what comes after it.
    @Test func mixerFollowsTheProducerNotTheWallClock() {
        for producerIsClock in [true, false] {
            let c = MixCollector()
            let m = AudioMixer(frameSize: 1024) { p, pos in c.positions.append(pos); c.firstSample.append(p[0]) }
            m.producerIsClock = producerIsClock
            let b = Array(repeating: Float(0.25), count: 1600 * 2)
            var pos: Int64 = 0
            var now: Int64 = 1_000_000_000
            for _ in 0..<30 {
                b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: now) }
                pos += 1600
                now += 1_000_000
            }
            // The producer pauses for 3 s of wall clock; the housekeeper polls through it.
            for _ in 0..<150 { now += 20_000_000; m.poll(nowNs: now) }
            for _ in 0..<30 {
                b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: now) }
                pos += 1600
                now += 1_000_000
            }
            m.flush()
            let emitted = c.positions.count * 1024
            if producerIsClock {
                for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
                #expect(emitted >= Int(pos) && emitted < Int(pos) + 1024, "every sample once, nothing added")
                #expect(m.silenceFrames == 0 && m.lateFramesDiscarded == 0)
                #expect(c.firstSample.allSatisfy { $0 == 0.25 })
            } else {
                // Live: the pause is filled with silence in step with the wall clock (and what the
                // producer sent after it is late): what block mode must not do.
                #expect(m.silenceFrames > 0 || m.lateFramesDiscarded > 0)
            }
        }
    }

    /// Two sources on two lane threads, one 1.5 s (past its 0.68 s ring) ahead of the other: the
    /// faster one waits for the slower, so nothing of either is discarded or mixed out as silence.
    @Test func mixerHoldsAFasterSourceBackForTheSlowerOne() throws {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { p, pos in c.positions.append(pos); c.firstSample.append(p[0]) }
        m.producerIsClock = true
        m.blockWaitNs = 2_000_000_000
        let total: Int64 = 72_000   // 1.5 s
        let b = Array(repeating: Float(0.5), count: 480 * 2)
        b.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: 0, nowNs: 0) }
        let app = WorkerThread(name: "test-app")
        try app.start {
            let b = Array(repeating: Float(0.25), count: 480 * 2)
            var pos: Int64 = 0
            while pos < total {
                b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: 0) }
                pos += 480
            }
        }
        usleep(100_000)   // the app lane is a ring ahead and waits; then the mic lane catches up
        var pos: Int64 = 480
        while pos < total {
            b.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: pos, nowNs: 0) }
            pos += 480
        }
        app.join()
        m.flush()
        #expect(m.lateFramesDiscarded == 0 && m.silenceFrames == 0)
        #expect(c.positions.count * 1024 >= Int(total))
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
        // Both sources in every frame but the padded last one.
        #expect(c.firstSample.dropLast().allSatisfy { $0 == 0.75 })
    }

    @Test func fullSendQueueWaitsForTheSenderWhileLiveAndDropsWhenDown() throws {
        let stats = BroadcastStats()
        let q = SendQueue(policy: CongestionPolicy(maxBytes: 4096).byteCapOnly, stats: stats, blockWaitNs: 2_000_000_000)
        q.setHoldsProducer(true)
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { body.deallocate() }
        body.initializeMemory(as: UInt8.self, repeating: 0x27)
        let tag = { (ts: UInt32) in EncodedPacket.of(.video, timestampMs: Int64(ts), data: UnsafeRawBufferPointer(body), isKeyframe: ts == 0) }
        // A sender 5 ms per tag, 40 tags through a queue of 4: every push waits, none drops.
        let received = Received()
        let sender = WorkerThread(name: "test-sender")
        try sender.start {
            while received.values.withLock({ $0.count }) < 40 {
                _ = q.withNext(deadlineNs: MediaTime.now() + 1_000_000_000) { t in
                    usleep(5_000)
                    received.values.withLock { $0.append(UInt32(t.timestampMs)) }
                }
            }
        }
        for i in 0..<40 { #expect(q.push(tag(UInt32(i * 33))) == nil) }
        sender.join()
        #expect(received.values.withLock { $0 } == (0..<40).map { UInt32($0 * 33) })
        #expect(stats.snapshot().totalDrops == 0)
        // The destination went down: a full queue drops at once (counted), it does not wait.
        for i in 0..<4 { _ = q.push(tag(UInt32(2000 + i))) }
        q.setHoldsProducer(false)
        let t0 = MediaTime.now()
        #expect(q.push(tag(3000)) == .queueFull)
        #expect(MediaTime.now() - t0 < 100_000_000)
    }
}

/// Block mode into a real-time transport: the destination paces its sends to media time.
@Suite(.timeLimit(.minutes(3))) struct BlockModePacingTests {
    @Test func realTimeSinkGetsEachTagAtItsMediaTimeAndALateOneIsNotCaughtUp() throws {
        let sink = RealTimeLog()
        let d = Destination(sink: FLVTagSinkAdapter(sink), policy: CongestionPolicy(maxBytes: 1 << 20).byteCapOnly, isPrimary: false,
                            stats: BroadcastStats(), blockWaitNs: 2_000_000_000)
        try d.open()
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 1)
        defer { body.deallocate() }
        body.initializeMemory(as: UInt8.self, repeating: 0x27)
        let tag = { (ms: UInt32) in EncodedPacket.of(.video, timestampMs: Int64(ms), data: UnsafeRawBufferPointer(body), isKeyframe: true) }
        // Half a second of media handed over at once: it goes out over half a second.
        for ms in stride(from: UInt32(0), through: 500, by: 100) { _ = d.queue.push(tag(ms)) }
        while sink.writes.count < 6 { usleep(10_000) }
        // The producer pauses 1.5 s, longer than the catch-up bound: the next tags are late, and
        // go out at their own pace from now, not in a burst to make up the pause.
        usleep(1_500_000)
        for ms in [UInt32(600), 700, 800] { _ = d.queue.push(tag(ms)) }
        d.finish(deadlineNs: MediaTime.now() + 5_000_000_000)
        let w = sink.writes
        #expect(w.map(\.ms) == [0, 100, 200, 300, 400, 500, 600, 700, 800])
        // Lower bounds only (a loaded machine is late, never early); 2 ms for the first write's
        // own time after its anchor.
        for i in 1..<6 {
            #expect(w[i].atNs - w[0].atNs >= Int64(w[i].ms) * 1_000_000 - 2_000_000, "tag \(w[i].ms) ms sent early")
        }
        #expect(w[7].atNs - w[6].atNs >= 98_000_000, "the late tags went out in a burst")
        #expect(w[8].atNs - w[6].atNs >= 198_000_000, "the late tags went out in a burst")
    }
}

/// A whole session in block mode: a producer faster than real time, with a pause, into a sink 50
/// times slower than the encoder: every frame and every audio sample reaches the sink, on the
/// timestamps the producer gave.
@Suite(.timeLimit(.minutes(3)), .serialized) struct BlockModeSessionTests {
    @Test func slowSinkAndAPauseLoseNothingAndMoveNoTimestamp() throws {
        let sink = SlowTagLog(delayUs: 4_000)
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 800, preset: "ultrafast")
        cfg.destinations = [.custom(sink)]
        cfg.congestion = CongestionPolicy(maxBytes: 64 << 10)   // a few frames: the sink sets the pace
        cfg.memoryBudgetBytes = 0
        cfg.adaptiveBitrate = false
        cfg.backpressure = .block
        let session = BroadcastSession(configuration: cfg)
        try session.start()
        let frames = NoiseFrames()
        let audio = UnsafeMutableBufferPointer<Float>.allocate(capacity: 1600 * 2)
        audio.initialize(repeating: 0.1)
        defer { audio.deallocate() }
        let origin: Int64 = 7_000_000_000
        let n = 180
        for i in 0..<n {
            let pts = origin + Int64(i) * 1_000_000_000 / 30
            #expect(session.process(.video(frames.frame(i, pts: pts)), type: .video) == .accepted)
            let a = AudioBuffer(format: .f32, channels: 2, sampleRate: 48_000, frameCount: 1600,
                                data: UnsafeRawBufferPointer(audio), pts: pts)
            #expect(session.process(.audio(a), type: .appAudio) == .accepted)
            if i == n / 2 { usleep(1_500_000) }   // the producer pauses: a pause, not a gap
        }
        session.finish(timeoutNs: 500_000_000)
        let s = session.stats.snapshot()
        #expect(s.totalDrops == 0)
        #expect(s.lateTagsClamped == 0)
        let video = sink.tags.filter { $0.0 == .video }.map(\.1)
        let audioTs = sink.tags.filter { $0.0 == .audio }.map(\.1)
        #expect(video.count == n)
        // The producer's times, to the millisecond the timeline keeps.
        #expect(video == (0..<n).map { UInt32(MediaTime.millis(Int64($0) * 1_000_000_000 / 30)) })
        // 180 x 1600 samples in AAC frames of 1024, contiguous, 21.33 ms apart; a tag stamped T
        // plays [T, T + 1024 samples): the last one reaches the producer's last sample (the last
        // frame padded, and the encoder's delay flushed after it), the first starts within a frame.
        #expect(audioTs.count >= n * 1600 / 1024)
        #expect(Int(audioTs.first ?? 99) < 1024 * 1000 / 48_000)
        #expect(Int(audioTs.last ?? 0) * 48 + 1024 >= n * 1600)
        for (a, b) in zip(audioTs, audioTs.dropFirst()) { #expect(b - a == 21 || b - a == 22) }
    }
}
