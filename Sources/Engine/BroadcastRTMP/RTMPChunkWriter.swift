import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Splits outgoing RTMP messages into chunks (RTMP 1.0 spec §5.3) in a caller's buffer.
///
/// Per chunk stream it remembers the last message header, and picks the smallest header the
/// spec allows for the next message: type 0 (11 bytes, absolute timestamp) for the first message
/// on a chunk stream, a different message stream id or a timestamp that went backwards; type 1
/// (7 bytes: timestamp delta, length, type id) otherwise. Continuation chunks of a message get a
/// type-3 header (basic header only). A timestamp or delta of 0xFFFFFF or more is sent as
/// 0xFFFFFF plus a 4-byte extended timestamp, repeated after every type-3 header of that message
/// (as nginx-rtmp, FFmpeg and OBS read it).
///
/// Never allocates after `init`: the state of chunk stream ids 2...63 (one-byte basic headers,
/// the only ones we send) lives in a fixed array.
struct RTMPChunkWriter {
    /// The header we last sent on one chunk stream.
    struct StreamState {
        var used = false
        var messageStreamID: UInt32 = 0
        var timestamp: UInt32 = 0
    }

    /// Chunk stream ids with a one-byte basic header.
    static let chunkStreamIDs: ClosedRange<UInt8> = 2...63
    /// Timestamps at or above this go to the extended timestamp field.
    static let extendedTimestampMarker: UInt32 = 0xFF_FFFF
    /// Largest message a 3-byte length field can describe.
    static let maxMessageLength = 0xFF_FFFF

    /// Payload bytes per chunk (128 until we announce another size with Set Chunk Size).
    private(set) var chunkSize: Int = 128
    private var streams: [StreamState]

    init() {
        streams = [StreamState](repeating: StreamState(), count: Int(Self.chunkStreamIDs.upperBound) + 1)
    }

    /// Forgets every header (a new connection starts from type-0 headers and 128-byte chunks).
    mutating func reset() {
        chunkSize = 128
        for i in streams.indices { streams[i] = StreamState() }
    }

    /// Uses `size` for the messages encoded from now on. Call right after encoding the Set
    /// Chunk Size message that announces it (that message itself goes out in the old size).
    mutating func setChunkSize(_ size: Int) {
        precondition(size >= 1 && size <= 0x7FFF_FFFF, "RTMP chunk size out of range")
        chunkSize = size
    }

    /// Upper bound of the encoded size of a `payloadCount`-byte message at `chunkSize`.
    static func maxEncodedSize(payloadCount: Int, chunkSize: Int) -> Int {
        let chunks = max(1, (payloadCount + chunkSize - 1) / chunkSize)
        return payloadCount + 1 + 11 + 4 + (chunks - 1) * (1 + 4)
    }

    /// Encodes one message into `out` and returns the byte count, or nil (nothing recorded)
    /// when the message is too long for RTMP or `out` is too small.
    mutating func encode(chunkStreamID csid: UInt8, messageType: UInt8, messageStreamID: UInt32,
                                 timestamp: UInt32, payload: UnsafeRawBufferPointer,
                                 into out: UnsafeMutableRawBufferPointer) -> Int? {
        precondition(Self.chunkStreamIDs.contains(csid), "chunk stream id must be 2...63")
        let length = payload.count
        guard length <= Self.maxMessageLength,
              out.count >= Self.maxEncodedSize(payloadCount: length, chunkSize: chunkSize),
              let base = out.baseAddress else { return nil }
        let previous = streams[Int(csid)]
        let absolute = !previous.used || previous.messageStreamID != messageStreamID || timestamp < previous.timestamp
        let field = absolute ? timestamp : timestamp &- previous.timestamp
        let extended = field >= Self.extendedTimestampMarker

        var w = ByteCursor(base: base)
        w.put((absolute ? 0x00 : 0x40) | csid)
        w.put24(extended ? Self.extendedTimestampMarker : field)
        w.put24(UInt32(length))
        w.put(messageType)
        if absolute { w.put32LE(messageStreamID) } // the one little-endian field (§5.3.1.2.1)
        if extended { w.put32(field) }

        var sent = 0
        while true {
            let piece = min(chunkSize, length - sent)
            if piece > 0, let source = payload.baseAddress {
                w.copy(source + sent, count: piece)
                sent += piece
            }
            if sent >= length { break }
            w.put(0xC0 | csid)
            if extended { w.put32(field) }
        }
        streams[Int(csid)] = StreamState(used: true, messageStreamID: messageStreamID, timestamp: timestamp)
        return w.offset
    }
}
