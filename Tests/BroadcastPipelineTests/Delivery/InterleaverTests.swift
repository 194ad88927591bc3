import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct InterleaverTests {
    @Test func randomizedArrivalsComeOutNonDecreasing() {
        var rng = SplitMixRandom(seed: 42)
        let log = TagLog()
        let stats = BroadcastStats()
        let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 20, stats: stats) { t, _ in
            log.tags.append((t.track, UInt32(t.timestampMs)))
        }
        var now: Int64 = 0
        var vts: Int64 = 0, ats: Int64 = 0
        for _ in 0..<5000 {
            now += Int64.random(in: 0...20_000_000, using: &rng)
            // Audio runs up to 100 ms behind video: inside the 150 ms wait.
            if Bool.random(using: &rng) {
                vts += 33
                il.submit(type: .video, timestampMs: vts, isKeyframe: false, bodySize: 50, nowNs: now) { _ in }
            } else if ats + 100 < vts || Bool.random(using: &rng) {
                ats += 21
                il.submit(type: .audio, timestampMs: ats, isKeyframe: false, bodySize: 10, nowNs: now) { _ in }
            }
            il.poll(nowNs: now)
        }
        il.drain(nowNs: now)
        var last: UInt32 = 0
        for (_, ts) in log.tags {
            #expect(ts >= last)
            last = ts
        }
        #expect(log.tags.count > 4000)
    }

    @Test func loneTrackWaitsAtMost150ms() {
        let log = TagLog()
        let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 20, stats: BroadcastStats()) { t, _ in
            log.tags.append((t.track, UInt32(t.timestampMs)))
        }
        il.submit(type: .video, timestampMs: 0, isKeyframe: true, bodySize: 10, nowNs: 0) { _ in }
        il.poll(nowNs: 149_000_000)
        #expect(log.tags.isEmpty)
        il.poll(nowNs: 150_000_000)
        #expect(log.tags.count == 1)
    }
}
