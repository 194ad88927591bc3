import Testing
@testable import BroadcastKit

/// A video encoder that only records the bitrates it is asked for.
final class BitrateRecordingEncoder: VideoEncoder, @unchecked Sendable {
    let settings: VideoEncoderSettings
    private(set) var requested: [Int] = []
    private let record = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
    var decoderConfigurationRecord: UnsafeRawBufferPointer { UnsafeRawBufferPointer(record) }
    init(kbps: Int) { settings = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: kbps) }
    deinit { record.deallocate() }
    func encode(_ picture: I420Frame, timestampMs: Int64, forceKeyframe: Bool, emit: (EncodedPacket) -> Void) -> Bool { true }
    func flush(emit: (EncodedPacket) -> Void) {}
    func requestBitrate(kbps: Int) { requested.append(kbps) }
}

/// The controller's contract (its doc comment): once a second, a backlog over `backlogMs` drops
/// the video target to 85% of the measured send rate less audio, never below the floor
/// (target / 8, at least 150); after `calmSeconds` of a near-empty queue it climbs, +25% a second
/// well below the remembered ceiling, +10% every other second near it, never above the target.
@Suite(.timeLimit(.minutes(2))) struct BitrateControllerTests {
    let target = 2500, audio = 128

    func controller(_ destinations: [Destination] = []) -> (BitrateController, BitrateRecordingEncoder, BroadcastStats) {
        let enc = BitrateRecordingEncoder(kbps: target)
        let stats = BroadcastStats()
        let c = BitrateController(encoder: enc, destinations: destinations, follows: .primary, targetKbps: target,
                                  audioKbps: audio, stats: stats)
        return (c, enc, stats)
    }

    @Test func backlogStepsDownTo85PercentOfTheSendRateLessAudio() {
        let (c, enc, stats) = controller()
        #expect(c.floorKbps == max(150, target / 8))
        c.adapt(sentKbps: 1200, backlogMs: 500)
        let want = Int(0.85 * 1200) - audio
        #expect(c.currentKbps == want)
        #expect(enc.requested == [want], "the encoder is asked for the new rate")
        #expect(stats.snapshot().targetVideoKbps == want, "and the stats show it")
        // A backlog of exactly backlogMs is not congestion; 100..backlogMs holds the rate.
        c.adapt(sentKbps: 500, backlogMs: c.backlogMs)
        c.adapt(sentKbps: 500, backlogMs: 150)
        #expect(c.currentKbps == want)
        // A cut of less than 5% is not worth an encoder reconfiguration.
        c.adapt(sentKbps: Int(Double(want + audio) / 0.85) - 10, backlogMs: 1000)
        #expect(c.currentKbps == want && enc.requested.count == 1)
    }

    @Test func neverBelowTheFloorEvenWhenNothingGetsThrough() {
        let (c, enc, _) = controller()
        for sent in [0, 10, 100, 0] { c.adapt(sentKbps: sent, backlogMs: 5000) }
        #expect(c.currentKbps == c.floorKbps)
        #expect(enc.requested.allSatisfy { $0 >= c.floorKbps })
        #expect(enc.requested.first == c.floorKbps && enc.requested.count == 1, "no reconfiguration at the floor: \(enc.requested)")
    }

    @Test func calmQueueProbesBackUpToTheTargetAndNoFurther() {
        let (c, enc, _) = controller()
        c.adapt(sentKbps: 1200, backlogMs: 800)     // the link carried 1200 kbit/s, ceiling ~1072 video
        let low = c.currentKbps
        let ceiling = 1200 - audio
        // The first calm second only counts; the climb starts with the second.
        c.adapt(sentKbps: 1200, backlogMs: 0)
        #expect(c.currentKbps == low)
        var rates = [low]
        var changes: [(second: Int, before: Int, after: Int)] = []
        for second in 2...60 {
            let before = c.currentKbps
            c.adapt(sentKbps: before + audio, backlogMs: 0)
            if c.currentKbps != before { changes.append((second, before, c.currentKbps)) }
            rates.append(c.currentKbps)
            #expect(c.currentKbps >= before, "calm never lowers the rate")
            #expect(c.currentKbps <= target, "never above the configured target")
            // Well below the ceiling: at most +25% (+50) a second.
            if before * 10 < ceiling * 9 {
                #expect(c.currentKbps <= before * 125 / 100 + 50)
            }
        }
        #expect(c.currentKbps == target, "back at the target after a minute of calm: \(rates)")
        // Near the remembered ceiling (90%..125% of it) it probes in steps of at most +10% (+10),
        // on alternate seconds only.
        let near = changes.filter { $0.before * 10 >= ceiling * 9 && $0.before * 4 <= ceiling * 5 }
        #expect(near.count >= 2, "the climb passes the ceiling by probing: \(rates)")
        for p in near { #expect(p.after <= p.before * 110 / 100 + 10, "probe step \(p.before) -> \(p.after)") }
        for (a, b) in zip(near, near.dropFirst()) { #expect(b.second - a.second >= 2, "probes at seconds \(near.map(\.second))") }
        // At the target nothing more is asked of the encoder.
        let asked = enc.requested.count
        for _ in 0..<5 { c.adapt(sentKbps: target + audio, backlogMs: 0) }
        #expect(enc.requested.count == asked)
    }

    @Test func withoutARememberedCeilingTheClimbIsFast() {
        let (c, _, _) = controller()
        c.adapt(sentKbps: 0, backlogMs: 2000)       // down to the floor; ceiling at the floor
        // 21 calm-or-busy seconds after the last congestion the ceiling is forgotten.
        for _ in 0..<21 { c.adapt(sentKbps: 0, backlogMs: 200) }
        #expect(c.currentKbps == c.floorKbps, "a mid-size backlog holds the rate")
        c.adapt(sentKbps: 0, backlogMs: 0)
        var before = c.currentKbps
        c.adapt(sentKbps: 0, backlogMs: 0)
        #expect(c.currentKbps == min(target, before * 125 / 100 + 50), "+25% (+50) a second with no ceiling")
        before = c.currentKbps
        c.adapt(sentKbps: 0, backlogMs: 0)
        #expect(c.currentKbps == min(target, before * 125 / 100 + 50))
    }

    /// The once-a-second tick reads the followed destination's queue and byte count: a destination
    /// whose queue holds a second of video and that sent nothing is congested to the floor.
    @Test func tickReadsTheDestinationsQueue() {
        let stats = BroadcastStats()
        let d = Destination(sink: DiscardSink(), policy: CongestionPolicy(dropPFramesAfterMs: 10_000, dropAllVideoAfterMs: 20_000),
                            isPrimary: true, stats: stats)
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 1)
        body.initializeMemory(as: UInt8.self, repeating: 0x17)
        defer { body.deallocate() }
        for ts in stride(from: 0, through: 1000, by: 100) {
            _ = d.queue.push(FLVTag(type: .video, timestampMs: UInt32(ts), body: UnsafeRawBufferPointer(body), isKeyframe: true))
        }
        #expect(d.queue.queuedDurationMs >= 900)
        let (c, enc, _) = controller([d])
        c.tick(nowNs: 1_000_000_000)                // the first tick only takes the reference
        #expect(enc.requested.isEmpty)
        c.tick(nowNs: 2_000_000_000)
        #expect(enc.requested == [c.floorKbps])
    }
}
