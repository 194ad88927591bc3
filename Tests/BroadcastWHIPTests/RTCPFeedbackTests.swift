import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("WHIP RTCP feedback walk", .timeLimit(.minutes(1)))
struct RTCPFeedbackTests {
    static let video: UInt32 = 0x1122_3344

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// An RR from `sender` with one block per (ssrc, fraction, cumulative lost, highest).
    static func rr(_ blocks: [(UInt32, UInt8, Int32, UInt32)]) -> [UInt8] {
        var p: [UInt8] = [0x80 | UInt8(blocks.count), 201, 0, UInt8(1 + 6 * blocks.count)] + be32(0xAAAA_AAAA)
        for (ssrc, fraction, lost, highest) in blocks {
            let l = UInt32(bitPattern: lost) & 0xFF_FFFF
            p += be32(ssrc) + [fraction, UInt8(l >> 16), UInt8(l >> 8 & 0xFF), UInt8(l & 0xFF)] + be32(highest)
            p += be32(0) + be32(0) + be32(0)  // jitter, LSR, DLSR
        }
        return p
    }

    static func walk(_ bytes: [UInt8]) -> [RTCPFeedback.Item] {
        var items: [RTCPFeedback.Item] = []
        bytes.withUnsafeBytes { RTCPFeedback.walk($0, videoSSRC: video) { items.append($0) } }
        return items
    }

    @Test func aCompoundPacketGivesEachItemInOrder() {
        let pli: [UInt8] = [0x81, 206, 0, 2] + Self.be32(0xAAAA_AAAA) + Self.be32(Self.video)
        // NACK of 1000 and, through the mask, 1001 and 1003.
        let nack: [UInt8] = [0x81, 205, 0, 3] + Self.be32(0xAAAA_AAAA) + Self.be32(Self.video) + [0x03, 0xE8, 0x00, 0x05]
        let items = Self.walk(Self.rr([(0x5555, 9, 7, 0x0001_2345), (Self.video, 26, -2, 0x0002_1000)]) + pli + nack)
        #expect(items == [.reportBlock(fractionLost: 26, highest: 0x1000, cumulativeLost: -2), .keyframeRequest,
                          .nack(sequence: 1000), .nack(sequence: 1001), .nack(sequence: 1003)],
                "the other SSRC's block is skipped; the 24-bit loss keeps its sign; 16 bits of the highest")
    }

    @Test func aLengthPastThePacketEndsTheWalk() {
        var rr = Self.rr([(Self.video, 1, 1, 1)])
        let whole = Self.walk(rr)
        rr[3] = 200  // says 804 bytes
        #expect(whole.count == 1)
        #expect(Self.walk(rr).isEmpty)
        #expect(Self.walk(Array(Self.rr([(Self.video, 1, 1, 1)]).prefix(20))).isEmpty, "a block cut short is not read")
    }

    @Test func aNACKSequenceWrapsAround() {
        let nack: [UInt8] = [0x81, 205, 0, 3] + Self.be32(1) + Self.be32(Self.video) + [0xFF, 0xFF, 0x00, 0x01]
        #expect(Self.walk(nack) == [.nack(sequence: 0xFFFF), .nack(sequence: 0)])
    }
}
