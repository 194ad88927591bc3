import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("WHIP REMB, abs-send-time and consent", .timeLimit(.minutes(1)))
struct WHIPCongestionTests {
    /// A REMB of 1 000 000 bit/s for SSRC 0x12345678, worked out by hand: the mantissa must fit in
    /// 18 bits, so 1 000 000 = 250 000 << 2; 250 000 = 0x3D090, exponent 2 → 0x0B 0xD0 0x90.
    static let remb: [UInt8] = [0x8F, 206, 0x00, 0x05, 0x11, 0x11, 0x11, 0x11, 0, 0, 0, 0,
                                0x52, 0x45, 0x4D, 0x42, 0x01, 0x0B, 0xD0, 0x90, 0x12, 0x34, 0x56, 0x78]

    static func parse(_ bytes: [UInt8], _ ssrc: UInt32? = 0x1234_5678) -> UInt64? {
        bytes.withUnsafeBytes { RTCPREMB.bitsPerSecond($0, listing: ssrc) }
    }

    @Test func parsesAKnownREMB() {
        #expect(Self.parse(Self.remb) == 1_000_000)
        #expect(Self.parse(Self.remb, nil) == 1_000_000)
        var big = Self.remb
        big[17] = 0x0F; big[18] = 0xFF; big[19] = 0xFF  // exponent 3, mantissa 0x3FFFF
        #expect(Self.parse(big) == 0x3FFFF << 3)
    }

    @Test func refusesTruncatedAndForeignPackets() {
        #expect(Self.parse(Self.remb, 0xDEAD_BEEF) == nil, "an estimate for another stream")
        for n in 0..<Self.remb.count { #expect(Self.parse(Array(Self.remb[0..<n])) == nil, "truncated to \(n)") }
        var longer = Self.remb
        longer[3] = 0x06  // length says 28 bytes, 24 given
        #expect(Self.parse(longer) == nil)
        var many = Self.remb
        many[16] = 200  // 200 SSRCs in a 24-byte packet
        #expect(Self.parse(many) == nil)
        var name = Self.remb
        name[15] = 0x58  // "REMX"
        #expect(Self.parse(name) == nil)
        var pli = Self.remb
        pli[0] = 0x81
        #expect(Self.parse(pli) == nil)
        var rtpfb = Self.remb
        rtpfb[1] = 205
        #expect(Self.parse(rtpfb) == nil)
        var huge = Self.remb
        huge[17] = 0xFF; huge[18] = 0xFF; huge[19] = 0xFF  // exponent 63: saturates, no trap
        #expect(Self.parse(huge) == UInt64.max)
        huge[17] = 0xFC; huge[18] = 0; huge[19] = 0  // exponent 63, mantissa 0
        #expect(Self.parse(huge) == 0)
        var garbage = [UInt8](repeating: 0, count: 64)
        for seed in 0..<2000 {
            var x = UInt32(truncatingIfNeeded: seed &* 2_654_435_761)
            for i in garbage.indices { x = x &* 1_103_515_245 &+ 12345; garbage[i] = UInt8(truncatingIfNeeded: x >> 16) }
            garbage[0] = 0x8F; garbage[1] = 206
            garbage[12] = 0x52; garbage[13] = 0x45; garbage[14] = 0x4D; garbage[15] = 0x42
            for n in [20, 24, 33, 64] { _ = Self.parse(Array(garbage[0..<n]), nil) }
        }
    }

    @Test func absSendTimeIsSixPointEighteenSeconds() {
        #expect(AbsSendTime.encode(ns: 1_500_000_000) == 0x06_0000)
        #expect(AbsSendTime.encode(ns: 250_000_000) == 0x01_0000)
        #expect(AbsSendTime.encode(ns: 1) == 0)
        #expect(AbsSendTime.encode(ns: 63_999_999_999) == 0xFF_FFFF)
        #expect(AbsSendTime.encode(ns: 64_000_000_000) == 0, "wraps every 64 s")
        #expect(AbsSendTime.encode(ns: 65_500_000_000) == 0x06_0000)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 20, alignment: 4)
        defer { out.deallocate() }
        AbsSendTime.write(out, id: 3, ns: 1_500_000_000)
        #expect(Array(out[12..<20]) == [0xBE, 0xDE, 0x00, 0x01, 0x32, 0x06, 0x00, 0x00])
        AbsSendTime.update(out, ns: 250_000_000)
        #expect(Array(out[12..<20]) == [0xBE, 0xDE, 0x00, 0x01, 0x32, 0x01, 0x00, 0x00])
    }

    @Test func offerAndAnswerNegotiateAbsSendTime() throws {
        let o = SDPOffer(iceUfrag: "U", icePwd: "P", fingerprint: SDPAnswerTests.fp, candidates: [("192.0.2.1", 4000)],
                         audioSSRC: 1, videoSSRC: 2, sessionID: 7).text
        #expect(o.contains("a=rtcp-fb:96 goog-remb\r\n"))
        #expect(o.contains("a=extmap:3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n"))
        let head = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=ice-ufrag:uf\r\na=ice-pwd:pw\r\n"
            + "a=fingerprint:sha-256 \(SDPAnswerTests.fp)\r\na=candidate:1 1 udp 100 10.0.0.1 5000 typ host\r\n"
            + "a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n"
        let video = "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\n"
        #expect(try SDPAnswer(parsing: head + video).absSendTimeID == nil, "only the video section counts")
        #expect(try SDPAnswer(parsing: head + video
            + "a=extmap:4/sendrecv http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n").absSendTimeID == 4)
        #expect(try SDPAnswer(parsing: head + video
            + "a=extmap:15 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n").absSendTimeID == nil)
    }

    @Test func estimateIsNilUntilTheFirstAndAfterFiveQuietSeconds() {
        let r = WHIPReceiverReports()
        #expect(r.estimateKbps(nowNs: 10_000_000_000) == nil)
        r.noteEstimate(bitsPerSecond: 1_234_567, nowNs: 10_000_000_000)
        #expect(r.estimateKbps(nowNs: 10_000_000_000) == 1234)
        #expect(r.estimateKbps(nowNs: 15_000_000_000) == 1234)
        #expect(r.estimateKbps(nowNs: 15_000_000_001) == nil)
        r.noteEstimate(bitsPerSecond: UInt64.max, nowNs: 20_000_000_000)
        #expect(r.estimateKbps(nowNs: 20_000_000_000) == Int.max / 1000)
        r.reset()
        #expect(r.estimateKbps(nowNs: 20_000_000_000) == nil, "a new connection starts without one")
    }

    /// Steps the consent machine every 100 ms from `from` to `to`; answers each check 50 ms later
    /// while `answering(now)`. Returns when it expired, or nil.
    static func run(_ c: inout ICEConsent, from: Int64, to: Int64, answering: (Int64) -> Bool) -> Int64? {
        var pendingAnswer: Int64?
        var now = from
        while now <= to {
            if let a = pendingAnswer, now >= a { c.answered(nowNs: a); pendingAnswer = nil }
            switch c.step(nowNs: now) {
            case .expired: return now
            case .check: if answering(now) { pendingAnswer = now + 50_000_000 }
            case .wait: break
            }
            now += 100_000_000
        }
        return nil
    }

    @Test func consentExpiresThirtySecondsAfterTheLastAnswer() {
        let s: Int64 = 1_000_000_000
        var silent = ICEConsent(grantedAtNs: 0)
        let expired = Self.run(&silent, from: 0, to: 100 * s) { _ in false }
        #expect(expired.map { $0 > 30 * s && $0 <= 35 * s } == true, "expired at \(String(describing: expired))")

        var answered = ICEConsent(grantedAtNs: 0)
        #expect(Self.run(&answered, from: 0, to: 300 * s) { _ in true } == nil, "answers keep it alive")

        var stops = ICEConsent(grantedAtNs: 0)
        let late = Self.run(&stops, from: 0, to: 300 * s) { $0 < 60 * s }
        #expect(late.map { $0 > 85 * s && $0 <= 95 * s } == true, "answers stopped near 57 s; expired at \(String(describing: late))")

        var checks = ICEConsent(grantedAtNs: 0)
        var sent: [Int64] = []
        for t in stride(from: Int64(0), through: 13 * s, by: Int(s / 10)) where checks.step(nowNs: t) == .check { sent.append(t) }
        #expect(sent == [2 * s, 7 * s, 12 * s], "a check 2 s after the pair was chosen, then every 5 s")
    }
}
