import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// What a receiver report says arrived, over the span it covers: the rate the path carried then,
/// from the packets' own send times and sizes, never a loss fraction applied to a later rate.
@Suite(.timeLimit(.minutes(1))) struct RTPDeliveryMeterTests {
    /// 200 video packets of 1000 bytes, 5 ms apart from `start` (1.6 Mbit/s of video), an audio
    /// packet of 160 bytes every 20 ms (64 kbit/s).
    static func send(_ m: RTPDeliveryMeter, from first: UInt16, count: Int = 200, startNs: Int64) {
        for i in 0..<count {
            let t = startNs + Int64(i) * 5_000_000
            if i % 4 == 0 { m.audioSent(bytes: 160) }
            m.videoSent(sequence: first &+ UInt16(i), bytes: 1000, nowNs: t)
        }
    }

    @Test func measuresWhatArrivedOverTheReportsSpan() {
        let m = RTPDeliveryMeter()
        Self.send(m, from: 100, startNs: 1_000_000_000)
        #expect(m.take(highest: 100, cumulativeLost: 3) == nil, "the first report only marks the start")
        // Packets 101...299 left over 995 ms: 199 000 bytes of video and 49 audio packets, 40 of the
        // 199 lost: 80% of 1 651 kbit/s, taken over the span.
        let kbps = m.take(highest: 299, cumulativeLost: 43)
        let expected = Double(199 * 1000 + 49 * 160) * 8 * (159.0 / 199.0) / 0.995 / 1000
        #expect(kbps == Int(expected), "\(kbps ?? -1) vs \(expected)")
        #expect(kbps! > 1300 && kbps! < 1350)
    }

    @Test func nothingLostIsWhatWasSent() {
        let m = RTPDeliveryMeter()
        Self.send(m, from: 65_500, startNs: 0)  // across the 16-bit wrap
        _ = m.take(highest: 65_500, cumulativeLost: 0)
        let kbps = m.take(highest: 65_500 &+ 199, cumulativeLost: 0)
        #expect(kbps == Int(Double(199 * 1000 + 49 * 160) * 8 / 0.995 / 1000))
    }

    @Test func repairsNeverRaiseTheRatePastWhatLeft() {
        let m = RTPDeliveryMeter()
        Self.send(m, from: 0, startNs: 0)
        _ = m.take(highest: 0, cumulativeLost: 50)
        // Duplicated repairs made the cumulative loss go down: never more than all of it arrived.
        #expect(m.take(highest: 199, cumulativeLost: 10) == Int(Double(199 * 1000 + 49 * 160) * 8 / 0.995 / 1000))
    }

    @Test func aBackwardShortOrForgottenSpanMeasuresNothing() {
        let m = RTPDeliveryMeter()
        Self.send(m, from: 0, startNs: 0)
        _ = m.take(highest: 150, cumulativeLost: 0)
        #expect(m.take(highest: 120, cumulativeLost: 0) == nil, "a report older than the previous one")
        #expect(m.take(highest: 160, cumulativeLost: 0) == nil, "50 ms is a burst, not a rate")
        #expect(m.take(highest: 199, cumulativeLost: 0) == nil, "195 ms: still too short")
        // The next span is measured from the last report taken (160), not from the short ones' start.
        Self.send(m, from: 200, startNs: 1_000_000_000)
        #expect(m.take(highest: 260, cumulativeLost: 0) != nil)
        // More packets than the ring holds since the last report: nothing to measure against.
        Self.send(m, from: 261, count: RTPDeliveryMeter.capacity + 10, startNs: 2_000_000_000)
        #expect(m.take(highest: 261 &+ UInt16(RTPDeliveryMeter.capacity + 9), cumulativeLost: 0) == nil)
        // A sequence number never sent (a hostile report) measures nothing either.
        let fresh = RTPDeliveryMeter()
        Self.send(fresh, from: 0, startNs: 0)
        _ = fresh.take(highest: 0, cumulativeLost: 0)
        #expect(fresh.take(highest: 1000, cumulativeLost: 0) == nil)
        fresh.reset()
        #expect(fresh.take(highest: 199, cumulativeLost: 0) == nil, "a new session starts without a previous report")
    }

    /// A NACK repeated for one packet is answered once per `resendGuardNs`: aiortc lists every
    /// missing packet at each new gap, and answering each made the loss feed itself.
    @Test func aPacketIsResentOncePerGuard() {
        let h = RTPPacketHistory()
        let bytes = [UInt8](repeating: 7, count: 100)
        bytes.withUnsafeBytes { h.store(sequence: 42, $0) }
        let g = RTPPacketHistory.resendGuardNs
        #expect(h.claimResend(sequence: 42, nowNs: 1_000))
        #expect(!h.claimResend(sequence: 42, nowNs: 1_000 + g - 1))
        #expect(h.claimResend(sequence: 42, nowNs: 1_000 + g))
        bytes.withUnsafeBytes { h.store(sequence: 42 &+ UInt16(RTPPacketHistory.capacity), $0) }
        #expect(h.claimResend(sequence: 42 &+ UInt16(RTPPacketHistory.capacity), nowNs: 1_000 + g + 1),
                "a new packet in the slot starts unsent")
    }
}
