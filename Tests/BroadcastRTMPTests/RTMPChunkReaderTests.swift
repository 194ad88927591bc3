import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// The server side of the chunk stream: byte vectors from RTMP 1.0 spec §5.3 and §5.4.
@Suite(.timeLimit(.minutes(2)))
struct RTMPChunkReaderTests {
    /// Appends `bytes` in pieces of `step` and collects every message.
    static func read(_ bytes: [UInt8], step: Int, into reader: inout RTMPChunkReader) throws -> [RTMPMessage] {
        var messages: [RTMPMessage] = []
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + step)
            reader.append(Array(bytes[at..<end]))
            at = end
            while let m = try reader.next() { messages.append(m) }
        }
        return messages
    }

    @Test(arguments: [1, 3, 7, 1000])
    func setChunkSizeThenASplitMessage(step: Int) throws {
        let payload = (0..<40).map { UInt8($0) }
        // Set Chunk Size 16: csid 2, type 1, stream 0, 4-byte body.
        var bytes = hex("02 000000 000004 01 00000000 00000010")
        // A 40-byte command on csid 3 in 16-byte chunks: type-0 header, then two type-3 headers.
        bytes += hex("03 0003E8 000028 14 00000000") + payload[0..<16]
        bytes += hex("C3") + payload[16..<32]
        bytes += hex("C3") + payload[32..<40]
        // A type-1 header: delta 10, 2 bytes, type 20.
        bytes += hex("43 00000A 000002 14 AABB")
        // A type-3 header starting a new message reuses length, type and delta.
        bytes += hex("C3 CCDD")
        var reader = RTMPChunkReader()
        let messages = try Self.read(bytes, step: step, into: &reader)
        #expect(reader.chunkSize == 16)
        #expect(reader.totalBytes == UInt64(bytes.count))
        #expect(messages.count == 4)
        #expect(messages[0] == RTMPMessage(type: 1, messageStreamID: 0, timestamp: 0, payload: hex("00000010")))
        #expect(messages[1] == RTMPMessage(type: 20, messageStreamID: 0, timestamp: 1000, payload: payload))
        #expect(messages[2] == RTMPMessage(type: 20, messageStreamID: 0, timestamp: 1010, payload: hex("AABB")))
        #expect(messages[3] == RTMPMessage(type: 20, messageStreamID: 0, timestamp: 1020, payload: hex("CCDD")))
    }

    @Test func defaultChunkSizeIs128() throws {
        let payload = [UInt8](repeating: 0x42, count: 130)
        let bytes = hex("04 000000 000082 12 01000000") + payload[0..<128] + hex("C4") + payload[128...]
        var reader = RTMPChunkReader()
        let messages = try Self.read(bytes, step: bytes.count, into: &reader)
        #expect(messages == [RTMPMessage(type: 18, messageStreamID: 1, timestamp: 0, payload: payload)])
    }

    @Test func extendedTimestampAndLongerBasicHeaders() throws {
        // Extended timestamp 0x01000000 on a type-0 header; basic header form 0 (csid 64 + 6 = 70).
        var bytes = hex("00 06 FFFFFF 000001 14 00000000 01000000 99")
        // Form 1 (two bytes, little-endian after 64): csid 64 + 0x01 + 0x01 * 256 = 321.
        bytes += hex("01 01 01 000005 000001 14 00000000 77")
        var reader = RTMPChunkReader()
        let messages = try Self.read(bytes, step: 2, into: &reader)
        #expect(messages.map(\.timestamp) == [0x0100_0000, 5])
        #expect(messages.map(\.payload) == [[0x99], [0x77]])
    }

    @Test func abortDropsTheUnfinishedMessage() throws {
        var bytes = hex("02 000000 000004 01 00000000 00000004") // chunk size 4
        bytes += hex("03 000000 000008 14 00000000 01020304")      // first half of 8 bytes
        bytes += hex("02 000000 000004 02 00000000 00000003")      // Abort csid 3
        bytes += hex("03 000000 000002 14 00000000 0506")          // a fresh message
        var reader = RTMPChunkReader()
        let messages = try Self.read(bytes, step: 5, into: &reader)
        #expect(messages.map(\.type) == [1, 2, 20])
        #expect(messages.last?.payload == hex("0506"))
    }

    /// A compressed header on a chunk stream not seen before: the fields it leaves out are zero
    /// (message stream 0, time 0), as ffmpeg reads it (pyrtmp answers connect this way).
    @Test func compressedHeaderOnANewChunkStreamReadsAsZeros() throws {
        var bytes = hex("43 000010 000002 14 0506")               // type 1 on csid 3, never introduced
        bytes += hex("84 000007")                                  // type 2 on csid 4: length 0 -> empty
        bytes += hex("C5")                                          // type 3 on csid 5: an empty message
        var reader = RTMPChunkReader()
        let messages = try Self.read(bytes, step: 1, into: &reader)
        #expect(messages.first == RTMPMessage(type: 20, messageStreamID: 0, timestamp: 16, payload: hex("0506")))
        // Type 2 and 3 on new streams: length 0 and type 0 from the zeros, so empty messages.
        #expect(messages.count == 3)
        #expect(messages.dropFirst().allSatisfy { $0.payload.isEmpty && $0.messageStreamID == 0 && $0.type == 0 })
        #expect(messages[1].timestamp == 7)
    }

    @Test func compressedHeadersStillCountAgainstTheChunkStreamBound() {
        let reader = RTMPChunkReader()
        var bytes: [UInt8] = []
        for i in 0..<(RTMPChunkReader.maxChunkStreams + 1) { bytes += [0x41, UInt8(i & 0xFF), UInt8(i >> 8)] + hex("000000 000000 14") }
        reader.append(bytes)
        #expect(throws: RTMPProtocolError.tooManyChunkStreams(RTMPChunkReader.maxChunkStreams)) {
            while try reader.next() != nil {}
        }
    }

    @Test func hostileInputIsAnError() {
        let big = RTMPChunkReader()
        big.append(hex("03 000000 FFFFFF 14 00000000"))
        #expect(throws: RTMPProtocolError.messageTooLarge(0xFF_FFFF)) { _ = try big.next() }
        let zero = RTMPChunkReader()
        zero.append(hex("02 000000 000004 01 00000000 80000000"))
        #expect(throws: RTMPProtocolError.badChunkSize(0)) { _ = try zero.next() }
    }

    /// What the writer produces, the reader reads back (both sides of §5.3).
    @Test func readsWhatTheWriterWrites() throws {
        var writer = RTMPChunkWriter()
        writer.setChunkSize(100)
        let reader = RTMPChunkReader()
        reader.append(hex("02 000000 000004 01 00000000 00000064"))
        _ = try reader.next()
        let stamps: [UInt32] = [0, 33, 66, 20, 0x0100_0000, 0x0100_0021, 0x0300_0000]
        var expected: [RTMPMessage] = []
        for (i, ts) in stamps.enumerated() {
            let payload = (0..<(50 + i * 97)).map { UInt8(truncatingIfNeeded: $0 ^ i) }
            reader.append(RTMPChunkWriterTests.encode(&writer, timestamp: ts, payload: payload))
            expected.append(RTMPMessage(type: 9, messageStreamID: 1, timestamp: ts, payload: payload))
        }
        var got: [RTMPMessage] = []
        while let m = try reader.next() { got.append(m) }
        #expect(got == expected)
    }
}
