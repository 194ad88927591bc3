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

/// Collects every video tag's time and keyframe flag.
final class VideoTagLog: TagSink, @unchecked Sendable {
    private let lock = ConditionLock()
    private var times: [UInt32] = []
    private var keys: [UInt32] = []
    var displayName: String { "video-log" }
    func open() throws(TransportError) {}
    func write(_ tag: FLVTag) throws(TransportError) {
        guard tag.type == .video, !tag.isHeader else { return }
        lock.withLock {
            times.append(tag.timestampMs)
            if tag.isKeyframe { keys.append(tag.timestampMs) }
        }
    }
    func close() {}
    var snapshot: (times: [UInt32], keys: [UInt32]) { lock.withLock { (times, keys) } }
}

/// A constant output frame rate from a source that sends a picture only when it changes.
@Suite(.serialized, .timeLimit(.minutes(1))) struct FrameRepeatTests {
    func session(fps: Int, keyframeSeconds: Int = 2) throws -> (BroadcastSession, VideoTagLog) {
        let log = VideoTagLog()
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: fps, bitrateKbps: 500,
                                         keyframeIntervalSeconds: keyframeSeconds, preset: "ultrafast")
        cfg.hasAudio = false
        cfg.destinations = [.custom(log)]
        cfg.memoryBudgetBytes = 0
        cfg.adaptiveBitrate = false
        let s = BroadcastSession(configuration: cfg)
        try s.start()
        return (s, log)
    }

    /// One picture, then 2.5 s of nothing (a still damage-driven screen): the lane encodes the
    /// picture again at 30 fps, on a grid with no holes, with a keyframe every 2 s.
    @Test func stillSourceIsRepeatedAtTheFrameRate() throws {
        let (s, log) = try session(fps: 30, keyframeSeconds: 2)
        let frames = NoiseFrames()
        #expect(s.process(.video(frames.frame(0, pts: MediaTime.now())), type: .video) == .accepted)
        usleep(2_500_000)
        s.finish()
        let (times, keys) = log.snapshot
        let stats = s.stats.snapshot()
        // 2.5 s at 30 fps is 75 frames; the first repeat waits its grace period (3 frames).
        #expect(times.count >= 69, "\(times.count) video tags in 2.5 s of a still source")
        #expect(stats.videoFramesIn == 1)
        #expect(stats.videoFramesRepeated == times.count - 1)
        #expect(stats.videoFramesEncoded == 1)
        let gaps = zip(times, times.dropFirst()).map { Int($1) - Int($0) }
        #expect(gaps.allSatisfy { $0 == 33 || $0 == 34 }, "gaps \(Set(gaps).sorted())")
        #expect(keys.count >= 2, "keyframes at \(keys)")
        for (a, b) in zip(keys, keys.dropFirst()) { #expect(b - a <= 2_050, "keyframes at \(keys)") }
    }

    /// Pictures every 250 ms at 30 fps output: repeats fill between them, and the pictures keep
    /// the grid (output spacing stays one frame; no picture lands before a repeat's time).
    @Test func picturesBetweenRepeatsKeepTheGrid() throws {
        let (s, log) = try session(fps: 30)
        let frames = NoiseFrames()
        let t0 = MediaTime.now()
        for i in 0..<8 {
            let due = t0 + Int64(i) * 250_000_000
            while MediaTime.now() < due { usleep(1_000) }
            #expect(s.process(.video(frames.frame(i, pts: MediaTime.now())), type: .video) == .accepted)
        }
        usleep(100_000)
        s.finish()
        let times = log.snapshot.times
        let stats = s.stats.snapshot()
        #expect(stats.videoFramesIn == 8)
        #expect(stats.videoFramesEncoded + stats.videoFramesRepeated == times.count)
        // 1.75 s + 100 ms at 30 fps.
        #expect(times.count >= 50, "\(times.count) tags")
        let gaps = zip(times, times.dropFirst()).map { Int($1) - Int($0) }
        #expect(gaps.allSatisfy { $0 > 0 }, "gaps \(gaps)")
        // The exact grid is the smoother's (VideoTimestampSmootherRepeatTests); here the lane's
        // thread makes the repeats on time: without them every gap is 250 ms. A lane thread
        // starved on a loaded machine may make one late, so a few longer gaps are allowed.
        #expect(gaps.filter { $0 <= 67 }.count >= gaps.count - 2, "gaps \(gaps)")
    }

    /// The end of the input is the end of the stream: after `endOfInput(.video)` the last picture
    /// is not repeated, however long the finish takes (the CLI notices an ended source up to
    /// 100 ms later; before, repeats filled that time past the input's last picture).
    @Test func noRepeatAfterTheEndOfInput() throws {
        let (s, log) = try session(fps: 30)
        let frames = NoiseFrames()
        let t0 = MediaTime.now()
        for i in 0..<10 {
            let due = t0 + Int64(i) * 33_333_333
            while MediaTime.now() < due { usleep(1_000) }
            _ = s.process(.video(frames.frame(i, pts: due)), type: .video)
        }
        s.endOfInput(.video)
        usleep(400_000)      // 12 frame periods: a still source would have had about 10 repeats
        s.finish()
        let stats = s.stats.snapshot()
        #expect(stats.videoFramesRepeated == 0)
        #expect(stats.videoFramesIn == 10)
        #expect(log.snapshot.times.count == stats.videoFramesEncoded)
    }

    /// A steady source is never repeated.
    @Test func steadySourceIsNotRepeated() throws {
        let (s, log) = try session(fps: 30)
        let frames = NoiseFrames()
        let t0 = MediaTime.now()
        for i in 0..<45 {
            let due = t0 + Int64(i) * 33_333_333
            while MediaTime.now() < due { usleep(1_000) }
            _ = s.process(.video(frames.frame(i, pts: due)), type: .video)
        }
        s.finish()
        let stats = s.stats.snapshot()
        #expect(stats.videoFramesRepeated == 0)
        #expect(log.snapshot.times.count == stats.videoFramesEncoded)
    }
}

/// The pool keeps the last encoded picture pinned in its slot for repeats.
@Suite(.timeLimit(.minutes(1))) struct FramePoolLastPictureTests {
    @Test func lastPictureIsPinnedAndTakenBackWhenNeeded() {
        let pool = FramePool(width: 64, height: 64, capacity: 2)
        let a = pool.acquire()!, b = pool.acquire()!
        #expect(pool.acquire() == nil)
        pool.retainAsLast(a)                  // a encoded: pinned
        #expect(pool.hasLast)
        #expect(pool.inUse == 1, "a pinned picture a new one may take counts as free")
        #expect(pool.borrowLast() == a)       // a repeat reads it
        #expect(pool.acquire() == nil, "a picture being repeated is not taken")
        pool.returnLast()
        #expect(pool.acquire() == a, "no free slot: the pinned picture's slot is taken back")
        #expect(!pool.hasLast)
        #expect(pool.borrowLast() == nil)
        pool.retainAsLast(b)
        pool.retainAsLast(a)                  // the previous last (b) is freed
        #expect(pool.acquire() == b)
        pool.releaseLast()
        #expect(pool.inUse == 1)
    }

    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)")) func pinningDoesNotAllocate() {
        let pool = FramePool(width: 64, height: 64, capacity: 2)
        var smoother = VideoTimestampSmoother(fps: 30)
        _ = smoother.smooth(1_000_000_000)
        let before = AllocationCounter.thisThread()
        for _ in 0..<1_000 {
            let s = pool.acquire()!
            pool.retainAsLast(s)
            if let l = pool.borrowLast() { _ = pool.frame(l); pool.returnLast() }
            _ = smoother.repeatSlot()
        }
        pool.releaseLast()
        #expect(AllocationCounter.thisThread() - before == 0)
    }
}

/// An encoder that encodes nothing and notes, at each call, how many heap allocations its
/// thread (the lane's `bk-video`) has made: the repeat path between two calls must make none.
final class AllocationNotingEncoder: VideoEncoder, @unchecked Sendable {
    let settings = VideoEncoderSettings(width: 64, height: 64, fps: 30, bitrateKbps: 100, preset: "ultrafast")
    let record = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 16)
    var decoderConfigurationRecord: UnsafeRawBufferPointer { UnsafeRawBufferPointer(record) }
    let counts = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
    let lock = ConditionLock()
    var calls = 0
    func encode(_ picture: I420Frame, timestampMs: Int64, forceKeyframe: Bool,
                emit: (EncodedPacket) -> Void) -> Bool {
        let n = AllocationCounter.thisThread()
        lock.withLock {
            if calls < 256 { counts[calls] = n }
            calls += 1
        }
        return true
    }
    func flush(emit: (EncodedPacket) -> Void) {}
    func requestBitrate(kbps: Int) {}
    deinit { counts.deallocate(); record.deallocate() }
}

@Suite(.timeLimit(.minutes(1))) struct FrameRepeatAllocationTests {
    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)")) func repeatsDoNotAllocate() throws {
        let enc = AllocationNotingEncoder()
        let clock = StreamClock()
        let lane = VideoLane(encoder: enc, pendingFrames: 2, stats: BroadcastStats(), clock: clock) { _, _ in }
        try lane.start()
        let frames = NoiseFrames()
        let frame = frames.frame(0, pts: MediaTime.now())
        _ = lane.process(frame) { clock.timelineMs($0) }
        usleep(1_500_000)
        lane.finish()
        let calls = enc.lock.withLock { enc.calls }
        #expect(calls >= 35, "\(calls) encodes in 1.5 s of a still source")
        // From the 5th repeat on (the first ones may fault in lazily made state).
        let steady = (5..<min(calls, 256)).map { enc.counts[$0] - enc.counts[$0 - 1] }
        #expect(steady.allSatisfy { $0 == 0 }, "allocations between repeats: \(steady)")
    }
}
