import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("STUN messages", .timeLimit(.minutes(1)))
struct STUNMessageTests {
    @Test func crc32MatchesTheStandardCheckValue() {
        let bytes = Array("123456789".utf8)
        #expect(bytes.withUnsafeBytes { STUNCRC32.checksum($0) } == 0xCBF4_3926)
    }

    @Test func requestRoundTripsWithIntegrityAndFingerprint() throws {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 4)
        defer { out.deallocate() }
        let tx: [UInt8] = Array(1...12)
        let n = STUNMessage.writeRequest(into: out, transaction: tx, username: "remote:local", password: "secretpassword1234",
                                         priority: 0x6E00_FFFF, tieBreaker: 42, nominate: true)
        let msg = UnsafeRawBufferPointer(rebasing: out[0..<n])
        #expect(n % 4 == 0 && Int(msg.loadBE16(2)) == n - 20)
        let p = try #require(STUNMessage.parse(msg))
        #expect(p.type == STUNMessage.bindingRequest)
        #expect(p.username == "remote:local")
        #expect(Array(p.transaction) == tx)
        #expect(STUNMessage.integrityValid(msg, p, password: "secretpassword1234"))
        #expect(!STUNMessage.integrityValid(msg, p, password: "wrong"))
        // FINGERPRINT: CRC-32 of everything before it, XOR 0x5354554e.
        let crc = STUNCRC32.checksum(UnsafeRawBufferPointer(rebasing: msg[0..<(n - 8)])) ^ 0x5354_554E
        #expect(msg.loadBE16(n - 8) == 0x8028 && msg.loadBE32(n - 4) == crc)
        // One flipped byte and the integrity check fails.
        out[24] ^= 1
        let q = try #require(STUNMessage.parse(UnsafeRawBufferPointer(rebasing: out[0..<n])))
        #expect(!STUNMessage.integrityValid(UnsafeRawBufferPointer(rebasing: out[0..<n]), q, password: "secretpassword1234"))
    }

    @Test func hostileLengthsAreRefused() {
        var m = [UInt8](repeating: 0, count: 28)
        m[0] = 0; m[1] = 1; m[3] = 8
        m[4] = 0x21; m[5] = 0x12; m[6] = 0xA4; m[7] = 0x42
        m[20] = 0; m[21] = 6; m[22] = 0xFF; m[23] = 0xFF  // USERNAME claiming 65535 bytes
        #expect(m.withUnsafeBytes { STUNMessage.parse($0) } == nil)
        m[3] = 200  // message length past the datagram
        #expect(m.withUnsafeBytes { STUNMessage.parse($0) } == nil)
    }
}
