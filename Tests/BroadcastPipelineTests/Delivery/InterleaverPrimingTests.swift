import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// AAC priming packets (stamped before 0) pass the interleaver first, flagged, at timestamp 0, and
/// never count as late or move the stream's time.
@Suite(.timeLimit(.minutes(1))) struct InterleaverPrimingTests {
    final class Log: @unchecked Sendable {
        var tags: [(type: TrackKind, ts: UInt32, priming: Bool)] = []
    }

    @Test func primingGoesFirstFlaggedAndUnclamped() {
        let log = Log()
        let stats = BroadcastStats()
        let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 16, stats: stats) { t, _ in
            log.tags.append((t.track, UInt32(t.timestampMs), t.isPriming))
        }
        il.submit(type: .video, timestampMs: 0, isKeyframe: true, bodySize: 20, nowNs: 0) { _ in }
        il.submit(type: .audio, timestampMs: -34, isKeyframe: false, bodySize: 10, nowNs: 0, isPriming: true) { _ in }
        il.submit(type: .audio, timestampMs: -12, isKeyframe: false, bodySize: 10, nowNs: 0, isPriming: true) { _ in }
        il.submit(type: .audio, timestampMs: 9, isKeyframe: false, bodySize: 10, nowNs: 0) { _ in }
        il.submit(type: .video, timestampMs: 33, isKeyframe: false, bodySize: 20, nowNs: 0) { _ in }
        il.drain(nowNs: 0)
        #expect(log.tags.map(\.type) == [.audio, .audio, .video, .audio, .video])
        #expect(log.tags.map(\.ts) == [0, 0, 0, 9, 33])
        #expect(log.tags.map(\.priming) == [true, true, false, false, false])
        #expect(stats.snapshot().lateTagsClamped == 0)
    }

    @Test func onlySinksThatTakePrimingGetIt() {
        final class Sink: PacketSink, @unchecked Sendable {
            let takes: Bool
            var priming = 0, timed = 0
            init(takes: Bool) { self.takes = takes }
            var displayName: String { "test" }
            var capabilities: DestinationCapabilities { DestinationCapabilities(takesPriming: takes) }
            func open() throws(TransportError) {}
            func write(_ packet: EncodedPacket) throws(TransportError) { if packet.isPriming { priming += 1 } else { timed += 1 } }
            func close() {}
        }
        let flv = Sink(takes: false), mp4 = Sink(takes: true)
        let stats = BroadcastStats()
        let policy = CongestionPolicy()
        let set = DestinationSet([Destination(sink: flv, policy: policy, isPrimary: true, stats: stats),
                                  Destination(sink: mp4, policy: policy, isPrimary: false, stats: stats)])
        for d in set.all { try? d.open() }
        let body: [UInt8] = [0xAF, 1, 0x21]
        body.withUnsafeBytes { b in
            set.push(EncodedPacket.of(.audio, timestampMs: 0, data: b, isPriming: true), at: .interleaved)
            set.push(EncodedPacket.of(.audio, timestampMs: 9, data: b), at: .interleaved)
        }
        for d in set.all { d.finish(deadlineNs: MediaTime.now() + 2_000_000_000) }
        #expect((flv.priming, flv.timed) == (0, 1))
        #expect((mp4.priming, mp4.timed) == (1, 1))
    }
}
