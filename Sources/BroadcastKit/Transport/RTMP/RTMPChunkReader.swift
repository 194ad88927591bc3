/// One complete RTMP message as received from the server.
package struct RTMPMessage: Equatable, Sendable {
    package var type: UInt8
    package var messageStreamID: UInt32
    package var timestamp: UInt32
    package var payload: [UInt8]

    package init(type: UInt8, messageStreamID: UInt32, timestamp: UInt32, payload: [UInt8]) {
        self.type = type
        self.messageStreamID = messageStreamID
        self.timestamp = timestamp
        self.payload = payload
    }
}

/// Why the server's chunk stream could not be read.
package enum RTMPProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A chunk of type 1/2/3 on a chunk stream that never had a type-0 header.
    case missingHeader(chunkStreamID: UInt32)
    /// A message longer than `RTMPChunkReader.maxMessageLength`.
    case messageTooLarge(Int)
    /// Set Chunk Size with 0 or a value above 2^31-1... or a short body.
    case badChunkSize(UInt32)

    package var description: String {
        switch self {
        case .missingHeader(let id): return "chunk on stream \(id) without a message header"
        case .messageTooLarge(let n): return "server message of \(n) bytes is too large"
        case .badChunkSize(let n): return "invalid chunk size \(n)"
        }
    }
}

/// Reassembles the server's chunk stream (RTMP 1.0 spec §5.3) into messages.
///
/// Bytes go in with `append` as they arrive, in any split; `next()` returns each complete
/// message once. Set Chunk Size (type 1) and Abort (type 2) change how the following chunks are
/// read, so the reader applies them itself (and still returns them). A server sends only a few
/// small messages (acknowledgements, pings, status), so this side may allocate; a message may
/// not exceed `maxMessageLength`, so a hostile length cannot make us reserve megabytes.
package struct RTMPChunkReader {
    /// The largest server message we accept (ours are commands and control messages).
    package static let maxMessageLength = 1 << 20

    /// What the last header on one chunk stream said, and the message being reassembled there.
    struct StreamState {
        var timestamp: UInt32 = 0
        /// The delta of the last type-1/2 header, reused by a type-3 header that starts a message.
        var delta: UInt32 = 0
        var length = 0
        var type: UInt8 = 0
        var messageStreamID: UInt32 = 0
        var extended = false
        var partial: [UInt8] = []
    }

    /// Payload bytes per incoming chunk (128 until the server's Set Chunk Size).
    package private(set) var chunkSize = 128
    /// Every byte appended so far (for Acknowledgement sequence numbers).
    package private(set) var totalBytes: UInt64 = 0
    private var input: [UInt8] = []
    private var readIndex = 0
    private var streams: [UInt32: StreamState] = [:]

    package init() {}

    /// Adds received bytes.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readIndex > 0 {
            input.removeFirst(readIndex) // in place: the capacity stays
            readIndex = 0
        }
        input.append(contentsOf: bytes)
        totalBytes &+= UInt64(bytes.count)
    }

    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete message, or nil until more bytes arrive.
    package mutating func next() throws(RTMPProtocolError) -> RTMPMessage? {
        while let message = try readChunk() {
            if let message { return message }
        }
        return nil
    }

    /// Reads one chunk. nil: not enough bytes yet; .some(nil): a chunk that did not finish a message.
    private mutating func readChunk() throws(RTMPProtocolError) -> RTMPMessage?? {
        var at = readIndex
        let available = input.count
        func need(_ n: Int) -> Bool { available - at >= n }
        func be(_ width: Int) -> UInt32 {
            var v: UInt32 = 0
            for i in 0..<width { v = v << 8 | UInt32(input[at + i]) }
            at += width
            return v
        }

        // Basic header: fmt (2 bits) + chunk stream id in 1, 2 or 3 bytes (§5.3.1.1).
        guard need(1) else { return nil }
        let first = input[at]
        at += 1
        let fmt = first >> 6
        var csid = UInt32(first & 0x3F)
        if csid == 0 {
            guard need(1) else { return nil }
            csid = 64 + UInt32(input[at]); at += 1
        } else if csid == 1 {
            guard need(2) else { return nil }
            csid = 64 + UInt32(input[at]) + UInt32(input[at + 1]) * 256; at += 2
        }

        let known = streams[csid]
        guard fmt == 0 || known != nil else { throw .missingHeader(chunkStreamID: csid) }
        var state = known ?? StreamState()
        // A new header while a message is unfinished: the server gave that message up.
        let startsMessage = fmt != 3 || state.partial.isEmpty

        // Message header (§5.3.1.2): 11, 7, 3 or 0 bytes, then maybe the extended timestamp.
        let headerSize = fmt == 0 ? 11 : fmt == 1 ? 7 : fmt == 2 ? 3 : 0
        guard need(headerSize) else { return nil }
        var field: UInt32 = 0
        if fmt <= 2 {
            field = be(3)
            state.extended = field == RTMPChunkWriter.extendedTimestampMarker
        }
        if fmt <= 1 {
            state.length = Int(be(3))
            state.type = input[at]; at += 1
        }
        if fmt == 0 {
            state.messageStreamID = UInt32(input[at]) | UInt32(input[at + 1]) << 8
                | UInt32(input[at + 2]) << 16 | UInt32(input[at + 3]) << 24
            at += 4
        }
        if state.extended {
            guard need(4) else { return nil }
            let value = be(4)
            if fmt <= 2 { field = value } // on a type-3 continuation it only repeats the header's
        }
        guard state.length <= Self.maxMessageLength else { throw .messageTooLarge(state.length) }

        let piece = min(chunkSize, state.length - (startsMessage ? 0 : state.partial.count))
        guard need(piece) else { return nil }

        // The whole chunk is here: commit.
        if startsMessage {
            switch fmt {
            case 0: state.timestamp = field; state.delta = 0
            case 1, 2: state.delta = field; state.timestamp &+= field
            default: state.timestamp &+= state.delta
            }
            // Grown as chunks arrive, never reserved from the announced length: a server that
            // announces 1 MB and sends 1 byte on each of many chunk streams must not make us hold
            // megabytes per stream.
            state.partial.removeAll(keepingCapacity: true)
        }
        state.partial.append(contentsOf: input[at..<at + piece])
        at += piece
        readIndex = at

        guard state.partial.count >= state.length else {
            streams[csid] = state
            return .some(nil)
        }
        let message = RTMPMessage(type: state.type, messageStreamID: state.messageStreamID,
                                  timestamp: state.timestamp, payload: state.partial)
        state.partial = []
        streams[csid] = state
        try applyControl(message)
        return .some(message)
    }

    /// Set Chunk Size and Abort change the reading of later chunks.
    private mutating func applyControl(_ message: RTMPMessage) throws(RTMPProtocolError) {
        guard message.messageStreamID == 0 || message.type <= 2 else { return }
        switch message.type {
        case RTMPMessageType.setChunkSize:
            guard message.payload.count >= 4 else { throw .badChunkSize(0) }
            let size = Self.be32(message.payload, 0) & 0x7FFF_FFFF
            guard size >= 1 else { throw .badChunkSize(size) }
            chunkSize = Int(size)
        case RTMPMessageType.abort:
            guard message.payload.count >= 4 else { return }
            streams[Self.be32(message.payload, 0)]?.partial = []
        default:
            break
        }
    }

    package static func be32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}
