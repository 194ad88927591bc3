import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("H.264 RTP packetizer", .timeLimit(.minutes(1)))
struct H264RTPPacketizerTests {
    @Test func smallNALIsOnePacket() {
        let nal: [UInt8] = [0x65, 1, 2, 3]
        var got: [(Int, Bool, [UInt8])] = []
        nal.withUnsafeBytes { b in
            H264RTPPacketizer.packetize(b, maxPayload: 100, lastOfAccessUnit: true) { got.append(($0.headerCount, $0.marker, Array($0.payload))) }
        }
        #expect(got.count == 1 && got[0].0 == 0 && got[0].1 && got[0].2 == nal)
    }

    @Test func largeNALIsSplitIntoFUA() {
        var nal: [UInt8] = [0x65]
        nal += (0..<2500).map { UInt8(truncatingIfNeeded: $0) }
        var frags: [H264RTPPacketizer.Fragment] = []
        var rebuilt: [UInt8] = []
        nal.withUnsafeBytes { b in
            H264RTPPacketizer.packetize(b, maxPayload: 1000, lastOfAccessUnit: true) { f in
                frags.append(f)
                rebuilt += Array(f.payload)
            }
            #expect(frags.count == 3)
            for (i, f) in frags.enumerated() {
                #expect(f.headerCount == 2 && f.header.0 == (0x65 & 0xE0) | 28)
                #expect((f.header.1 & 0x80 != 0) == (i == 0), "start bit on the first fragment only")
                #expect((f.header.1 & 0x40 != 0) == (i == 2), "end bit on the last only")
                #expect(f.header.1 & 0x1F == 5 && f.marker == (i == 2))
                #expect(f.payload.count + 2 <= 1000)
            }
        }
        #expect(rebuilt == Array(nal.dropFirst()), "the fragments carry the NAL after its header byte, in order")
    }

    @Test func avccWalkStopsAtAnOverlongLength() {
        let good: [UInt8] = [0, 0, 0, 2, 0x09, 0x10, 0, 0, 0, 3, 0x65, 1, 2]
        var n = 0, lastSeen = false
        let whole = good.withUnsafeBytes { H264RTPPacketizer.forEachNAL($0) { _, last in n += 1; lastSeen = last } }
        #expect(whole && n == 2 && lastSeen)
        let bad: [UInt8] = [0, 0, 0, 2, 0x09, 0x10, 0, 0, 0x10, 0, 0x65]
        n = 0
        let whole2 = bad.withUnsafeBytes { H264RTPPacketizer.forEachNAL($0) { _, _ in n += 1 } }
        #expect(!whole2 && n == 1)
    }
}
