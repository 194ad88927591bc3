import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// One complete RTMP message as received from the server.
package struct RTMPMessage: Equatable, Sendable {
    package var type: UInt8
    package var messageStreamID: UInt32
    package var timestamp: UInt32
    package var payload: [UInt8]

    init(type: UInt8, messageStreamID: UInt32, timestamp: UInt32, payload: [UInt8]) {
        self.type = type
        self.messageStreamID = messageStreamID
        self.timestamp = timestamp
        self.payload = payload
    }
}

/// Why the server's chunk stream could not be read.
package enum RTMPProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A message longer than `RTMPChunkReader.maxMessageLength`.
    case messageTooLarge(Int)
    /// Set Chunk Size with 0 or a value above 2^31-1... or a short body.
    case badChunkSize(UInt32)
    /// More distinct chunk streams than `RTMPChunkReader.maxChunkStreams`.
    case tooManyChunkStreams(Int)
    /// Unfinished messages announcing more than `RTMPChunkReader.maxReassemblyBytes` together.
    case tooMuchReassembly(Int)
    /// More unread bytes appended than `RTMPChunkReader.inputCapacity` holds.
    case inputOverflow(Int)

    package var description: String {
        switch self {
        case .messageTooLarge(let n): return "server message of \(n) bytes is too large"
        case .badChunkSize(let n): return "invalid chunk size \(n)"
        case .tooManyChunkStreams(let n): return "server opened more than \(n) chunk streams"
        case .tooMuchReassembly(let n): return "server's unfinished messages announce more than \(n) bytes"
        case .inputOverflow(let n): return "more than \(n) unread bytes from the server"
        }
    }
}

/// Reassembles the server's chunk stream (RTMP 1.0 spec §5.3) into messages, in fixed memory.
///
/// Bytes go in with `append` as they arrive, in any split; `next()` returns each complete
/// message once. Set Chunk Size (type 1) and Abort (type 2) change how the following chunks are
/// read, so the reader applies them itself (and still returns them).
///
/// Every outside byte has a bounded cost: at most `maxChunkStreams` chunk streams, each message
/// at most `maxMessageLength`, and the unfinished messages together at most
/// `maxReassemblyBytes`, reserved in one arena allocated at `init` (`plannedBytes` is the memory
/// plan's line). Past any bound `next()` throws: a protocol error, never growth. A server sends
/// a publisher only small messages (acknowledgements, pings, status), so the bounds cost nothing
/// to an honest one. Only a completed message's payload is a fresh array.
package final class RTMPChunkReader {
    /// Distinct chunk streams per connection (a publisher's server uses 2-6).
    static let maxChunkStreams = 64
    /// The largest server message we accept (ours are commands and control messages).
    static let maxMessageLength = 64 << 10
    /// Bytes all unfinished messages may announce together: two of the largest (an honest server
    /// interleaves at most a status reply with a control message).
    static let maxReassemblyBytes = 128 << 10
    /// Unread input: one chunk's header and payload (at most a whole message) plus one receive.
    static let inputCapacity = maxMessageLength + (16 << 10)
    /// What a reader holds resident, for `MemoryPlan`: its arena, its input and its stream table.
    package static let plannedBytes = maxReassemblyBytes + inputCapacity + maxMessageLength
        + maxChunkStreams * MemoryLayout<StreamState>.stride

    /// What the last header on one chunk stream said, and where its message is being reassembled.
    struct StreamState {
        var chunkStreamID: UInt32 = 0
        var timestamp: UInt32 = 0
        /// The delta of the last type-1/2 header, reused by a type-3 header that starts a message.
        var delta: UInt32 = 0
        var length = 0
        var type: UInt8 = 0
        var messageStreamID: UInt32 = 0
        var extended = false
        /// A message is being reassembled at `offset` in the arena, `filled` bytes so far.
        var open = false
        var offset = 0
        var filled = 0
    }

    /// Payload bytes per incoming chunk (128 until the server's Set Chunk Size).
    private(set) var chunkSize = 128
    /// Every byte appended so far (for Acknowledgement sequence numbers).
    private(set) var totalBytes: UInt64 = 0
    private let input: UnsafeMutablePointer<UInt8>
    private var readIndex = 0
    private var inputCount = 0
    private var overflowed = false
    private let arena: UnsafeMutableRawPointer
    /// Bytes reserved by open messages, and the first free byte past the highest one.
    private var reserved = 0
    private var arenaTop = 0
    private let streams: UnsafeMutablePointer<StreamState>
    private var streamCount = 0
    /// The last completed message's bytes, reused for the next: a caller that lets the message go
    /// before asking for the next one (every caller here) makes no allocation per message (the
    /// server's acknowledgements arrive every few seconds for the life of the stream).
    private var delivered: [UInt8] = []

    package init() {
        delivered.reserveCapacity(Self.maxMessageLength)
        input = .allocate(capacity: Self.inputCapacity)
        arena = .allocate(byteCount: Self.maxReassemblyBytes, alignment: 16)
        streams = .allocate(capacity: Self.maxChunkStreams)
        streams.initialize(repeating: StreamState(), count: Self.maxChunkStreams)
    }

    deinit {
        input.deallocate()
        arena.deallocate()
        streams.deinitialize(count: Self.maxChunkStreams)
        streams.deallocate()
    }

    /// Forgets the connection (a new one starts at chunk size 128); keeps the memory.
    func reset() {
        chunkSize = 128
        totalBytes = 0
        readIndex = 0
        inputCount = 0
        overflowed = false
        reserved = 0
        arenaTop = 0
        streamCount = 0
    }

    /// Adds received bytes. Past `inputCapacity` unread bytes the reader is broken: `next()` throws.
    package func append(_ bytes: UnsafeRawBufferPointer) {
        totalBytes &+= UInt64(bytes.count)
        if overflowed || bytes.isEmpty { return }
        if readIndex > 0 {
            let unread = inputCount - readIndex
            if unread > 0 { input.update(from: input + readIndex, count: unread) }
            inputCount = unread
            readIndex = 0
        }
        guard bytes.count <= Self.inputCapacity - inputCount, let base = bytes.baseAddress else {
            overflowed = true
            return
        }
        (input + inputCount).update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        inputCount += bytes.count
    }

    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete message, or nil until more bytes arrive.
    package func next() throws(RTMPProtocolError) -> RTMPMessage? {
        if overflowed { throw .inputOverflow(Self.inputCapacity) }
        while let message = try readChunk() {
            if let message { return message }
        }
        return nil
    }

    private func index(of csid: UInt32) -> Int? {
        for i in 0..<streamCount where streams[i].chunkStreamID == csid { return i }
        return nil
    }

    /// Reads one chunk. nil: not enough bytes yet; .some(nil): a chunk that did not finish a message.
    private func readChunk() throws(RTMPProtocolError) -> RTMPMessage?? {
        var at = readIndex
        let available = inputCount
        let input = self.input
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

        let known = index(of: csid)
        // A compressed header (type 1/2/3) on a chunk stream not seen before reads as if the
        // fields it leaves out were zero (message stream 0, time 0), as ffmpeg reads it: some
        // servers (pyrtmp) answer connect that way. The stream still takes a slot, and its
        // message the same bounds, as a type-0 one would.
        var state = known.map { streams[$0] } ?? StreamState(chunkStreamID: csid)
        // A new header while a message is unfinished: the server gave that message up.
        let startsMessage = fmt != 3 || !state.open

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

        let piece = min(chunkSize, state.length - (startsMessage ? 0 : state.filled))
        guard need(piece) else { return nil }

        // The whole chunk is here: check the bounds, then commit.
        let slot: Int
        if let known {
            slot = known
        } else {
            guard streamCount < Self.maxChunkStreams else { throw .tooManyChunkStreams(Self.maxChunkStreams) }
            slot = streamCount
        }
        if startsMessage {
            if state.open { release(&state) }
            guard state.length <= Self.maxReassemblyBytes - reserved else { throw .tooMuchReassembly(Self.maxReassemblyBytes) }
            if known == nil { streamCount += 1 }
            switch fmt {
            case 0: state.timestamp = field; state.delta = 0
            case 1, 2: state.delta = field; state.timestamp &+= field
            default: state.timestamp &+= state.delta
            }
            state.offset = reserve(state.length)
            state.filled = 0
            state.open = true
        }
        (arena + state.offset + state.filled).copyMemory(from: input + at, byteCount: piece)
        state.filled += piece
        at += piece
        readIndex = at

        guard state.filled >= state.length else {
            streams[slot] = state
            return .some(nil)
        }
        delivered.removeAll(keepingCapacity: true)
        delivered.append(contentsOf: UnsafeRawBufferPointer(start: arena + state.offset, count: state.length))
        let message = RTMPMessage(type: state.type, messageStreamID: state.messageStreamID, timestamp: state.timestamp,
                                  payload: delivered)
        release(&state)
        streams[slot] = state
        try applyControl(message)
        return .some(message)
    }

    /// `count` contiguous arena bytes (the caller checked they fit in `maxReassemblyBytes`);
    /// open messages are moved down when the free bytes are not contiguous.
    private func reserve(_ count: Int) -> Int {
        if arenaTop + count > Self.maxReassemblyBytes { compact() }
        let offset = arenaTop
        arenaTop += count
        reserved += count
        return offset
    }

    private func release(_ state: inout StreamState) {
        guard state.open else { return }
        state.open = false
        reserved -= state.length
        if reserved == 0 { arenaTop = 0 } else if state.offset + state.length == arenaTop { arenaTop = state.offset }
    }

    /// Moves every open message to the start of the arena, lowest offset first.
    private func compact() {
        var top = 0
        while true {
            var pick = -1
            for i in 0..<streamCount where streams[i].open && streams[i].offset >= top
                && (pick < 0 || streams[i].offset < streams[pick].offset) {
                pick = i
            }
            guard pick >= 0 else { break }
            if streams[pick].offset != top {
                (arena + top).copyMemory(from: arena + streams[pick].offset, byteCount: streams[pick].filled)
                streams[pick].offset = top
            }
            top += streams[pick].length
        }
        arenaTop = top
    }

    /// Set Chunk Size and Abort change the reading of later chunks.
    private func applyControl(_ message: RTMPMessage) throws(RTMPProtocolError) {
        guard message.messageStreamID == 0 || message.type <= 2 else { return }
        switch message.type {
        case RTMPMessageType.setChunkSize:
            guard message.payload.count >= 4 else { throw .badChunkSize(0) }
            let size = Self.be32(message.payload, 0) & 0x7FFF_FFFF
            guard size >= 1 else { throw .badChunkSize(size) }
            chunkSize = Int(size)
        case RTMPMessageType.abort:
            guard message.payload.count >= 4, let i = index(of: Self.be32(message.payload, 0)) else { return }
            release(&streams[i])
        default:
            break
        }
    }

    static func be32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}
