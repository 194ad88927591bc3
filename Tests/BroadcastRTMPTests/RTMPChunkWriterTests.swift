import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// Byte vectors worked out by hand from RTMP 1.0 spec §5.3 (chunk format).
@Suite(.timeLimit(.minutes(2)))
struct RTMPChunkWriterTests {
    /// Encodes one message and returns its bytes.
    static func encode(_ writer: inout RTMPChunkWriter, csid: UInt8 = 4, type: UInt8 = 9, stream: UInt32 = 1,
                       timestamp: UInt32, payload: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: RTMPChunkWriter.maxEncodedSize(payloadCount: payload.count,
                                                                                 chunkSize: writer.chunkSize))
        let n = out.withUnsafeMutableBytes { dst in
            payload.withUnsafeBytes { src in
                writer.encode(chunkStreamID: csid, messageType: type, messageStreamID: stream, timestamp: timestamp,
                              payload: src, into: dst)
            }
        }
        return Array(out.prefix(n ?? 0))
    }

    @Test func firstMessageIsType0ThenType1WithDelta() {
        var w = RTMPChunkWriter()
        // fmt 0, csid 4 | timestamp 1000 | length 3 | type 9 | stream 1 (little-endian) | payload
        #expect(Self.encode(&w, timestamp: 1000, payload: [0xAA, 0xBB, 0xCC])
                == hex("04 0003E8 000003 09 01000000 AABBCC"))
        // Same chunk stream and message stream, later: fmt 1 (0x40 | 4) with the delta 40.
        #expect(Self.encode(&w, timestamp: 1040, payload: [0x11, 0x22]) == hex("44 000028 000002 09 1122"))
        // Another chunk stream starts with its own type-0 header.
        #expect(Self.encode(&w, csid: 5, type: 8, timestamp: 1041, payload: [0x01])
                == hex("05 000411 000001 08 01000000 01"))
    }

    @Test func backwardsTimestampOrOtherMessageStreamIsType0() {
        var w = RTMPChunkWriter()
        _ = Self.encode(&w, timestamp: 500, payload: [1])
        #expect(Self.encode(&w, timestamp: 400, payload: [2]) == hex("04 000190 000001 09 01000000 02"))
        #expect(Self.encode(&w, stream: 2, timestamp: 400, payload: [3]) == hex("04 000190 000001 09 02000000 03"))
        // reset() forgets every header.
        w.reset()
        #expect(Self.encode(&w, stream: 2, timestamp: 401, payload: [4]) == hex("04 000191 000001 09 02000000 04"))
    }

    @Test func splitsAt4096WithType3Continuations() {
        var w = RTMPChunkWriter()
        w.setChunkSize(4096)
        let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes = Self.encode(&w, timestamp: 0, payload: payload)
        // 12-byte type-0 header, 4096, C4, 4096, C4, 1808.
        #expect(bytes.count == 12 + 4096 + 1 + 4096 + 1 + 1808)
        #expect(Array(bytes.prefix(12)) == hex("04 000000 002710 09 01000000"))
        #expect(bytes[12 + 4096] == 0xC4)
        #expect(bytes[12 + 4096 + 1 + 4096] == 0xC4)
        var joined = Array(bytes[12..<12 + 4096])
        joined += bytes[12 + 4097..<12 + 4097 + 4096]
        joined += bytes[(12 + 4097 + 4097)...]
        #expect(joined == payload)
        // Exactly one chunk's worth needs no continuation header.
        let exact = Self.encode(&w, timestamp: 1, payload: [UInt8](repeating: 9, count: 4096))
        #expect(exact.count == 8 + 4096)
        #expect(Array(exact.prefix(8)) == hex("44 000001 001000 09"))
    }

    @Test func extendedTimestampInHeaderAndEveryContinuation() {
        var w = RTMPChunkWriter() // 128-byte chunks
        let payload = [UInt8](repeating: 0x5A, count: 200)
        let bytes = Self.encode(&w, timestamp: 0x0100_0000, payload: payload)
        // 0xFFFFFF in the header, then the 4-byte extended timestamp; after C4 again.
        #expect(Array(bytes.prefix(16)) == hex("04 FFFFFF 0000C8 09 01000000 01000000"))
        #expect(Array(bytes[16 + 128..<16 + 128 + 5]) == hex("C4 01000000"))
        #expect(bytes.count == 16 + 128 + 5 + 72)
        // 0xFFFFFF itself is already extended.
        var v = RTMPChunkWriter()
        #expect(Self.encode(&v, timestamp: 0xFF_FFFF, payload: [7]) == hex("04 FFFFFF 000001 09 01000000 00FFFFFF 07"))
        // A delta of 0xFFFFFF or more goes extended in a type-1 header.
        #expect(Self.encode(&v, timestamp: 0x0200_0004, payload: [8]) == hex("44 FFFFFF 000001 09 01000005 08"))
        // Below the marker: back to a plain 3-byte delta.
        #expect(Self.encode(&v, timestamp: 0x0200_0005, payload: [9]) == hex("44 000001 000001 09 09"))
    }

    @Test func refusesWhatDoesNotFit() {
        var w = RTMPChunkWriter()
        var small = [UInt8](repeating: 0, count: 8)
        let n = small.withUnsafeMutableBytes { dst in
            [UInt8](repeating: 1, count: 4).withUnsafeBytes {
                w.encode(chunkStreamID: 4, messageType: 9, messageStreamID: 1, timestamp: 0, payload: $0, into: dst)
            }
        }
        #expect(n == nil)
        // Nothing was recorded: the next message still gets a type-0 header.
        #expect(Self.encode(&w, timestamp: 5, payload: [1]).first == 0x04)
    }

    @Test func emptyPayloadIsOneHeader() {
        var w = RTMPChunkWriter()
        #expect(Self.encode(&w, timestamp: 0, payload: []) == hex("04 000000 000000 09 01000000"))
    }
}
