import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// Where a destination takes packets is its capability: `.encoded` at once, each track in its own
/// order; `.interleaved` after the interleaver's merge. One entry point feeds both.
@Suite(.timeLimit(.minutes(1))) struct PacketStageTests {
    final class Log: @unchecked Sendable {
        var seen: [(stage: PacketStage, type: TrackKind, ms: Int64)] = []
    }

    @Test func theInterleaverDeliversTheEncodedStageAtOnceOnlyWhenAsked() {
        for asked in [false, true] {
            let log = Log()
            let il = Interleaver(hasVideo: true, hasAudio: true, videoBytes: 1 << 16, stats: BroadcastStats(),
                                 deliversEncoded: asked) { p, stage in log.seen.append((stage, p.track, p.timestampMs)) }
            il.submit(type: .video, timestampMs: 0, isKeyframe: true, bodySize: 10, nowNs: 0) { _ in }
            il.submit(type: .video, timestampMs: 33, isKeyframe: false, bodySize: 10, nowNs: 0) { _ in }
            // Audio has not come: nothing is released in order yet, but the encoded stage has both.
            #expect(log.seen.filter { $0.stage == .interleaved }.isEmpty)
            #expect(log.seen.filter { $0.stage == .encoded }.map(\.ms) == (asked ? [0, 33] : []))
            il.submit(type: .audio, timestampMs: -20, isKeyframe: false, bodySize: 10, nowNs: 0, isPriming: true) { _ in }
            il.submit(type: .audio, timestampMs: 40, isKeyframe: false, bodySize: 10, nowNs: 0) { _ in }
            il.drain(nowNs: 0)
            // The priming packet first, at 0 (`InterleaverPrimingTests`), then the stream in order.
            #expect(log.seen.filter { $0.stage == .interleaved }.map(\.type) == [.audio, .video, .video, .audio])
            #expect(log.seen.filter { $0.stage == .interleaved }.map(\.ms) == [0, 0, 33, 40])
            // Priming never goes out at the encoded stage.
            #expect(log.seen.filter { $0.stage == .encoded }.map(\.ms) == (asked ? [0, 33, 40] : []))
        }
    }

    final class Counting: PacketSink, @unchecked Sendable {
        let stage: PacketStage
        var timestamps: [UInt32] = []
        init(_ stage: PacketStage) { self.stage = stage }
        var displayName: String { "\(stage)" }
        var capabilities: DestinationCapabilities { DestinationCapabilities(isNetworkPublisher: true, stage: stage) }
        func open() throws(TransportError) {}
        func write(_ packet: EncodedPacket) throws(TransportError) { timestamps.append(UInt32(packet.timestampMs)) }
        func close() {}
    }

    @Test func eachDestinationTakesOnlyItsStage() throws {
        let stats = BroadcastStats()
        let inOrder = Counting(.interleaved), atOnce = Counting(.encoded)
        let set = DestinationSet([Destination(sink: inOrder, policy: .default, isPrimary: true, stats: stats),
                                  Destination(sink: atOnce, policy: .default, isPrimary: false, stats: stats)])
        #expect(set.takesEncodedStage)
        for d in set.all { try d.open() }
        let payload: [UInt8] = [1, 2, 3]
        payload.withUnsafeBytes { b in
            set.push(EncodedPacket(codec: .aac, data: b, timestampMs: 5, isKeyframe: false), at: .encoded)
            set.push(EncodedPacket(codec: .aac, data: b, timestampMs: 7, isKeyframe: false), at: .interleaved)
        }
        for d in set.all { d.finish(deadlineNs: MediaTime.now() + 2_000_000_000) }
        #expect(atOnce.timestamps == [5])
        #expect(inOrder.timestamps == [7])
        #expect(!DestinationSet([Destination(sink: Counting(.interleaved), policy: .default, isPrimary: true,
                                             stats: stats)]).takesEncodedStage)
    }

    @Test func tracksUnorderedIsTheEncodedStage() {
        #expect(DestinationCapabilities(tracksUnordered: true).stage == .encoded)
        #expect(DestinationCapabilities(tracksUnordered: false) == DestinationCapabilities())
        var c = DestinationCapabilities()
        c.tracksUnordered = true
        #expect(c.stage == .encoded && c.tracksUnordered)
    }
}
