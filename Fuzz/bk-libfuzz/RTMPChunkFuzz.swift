import BroadcastKit

/// The server->client byte stream after the handshake, read as RTMPPublisher reads it: bytes go
/// into RTMPChunkReader in pieces, every complete message comes out, command messages (type 20,
/// and 17 without its format byte) are decoded with AMF0Reader into RTMPCommand.Reply.
///
/// The first input byte picks the piece size (1...64 bytes; 0 = all at once). Oracles:
/// - split-invariance: the same bytes fed whole give the same messages and the same error;
/// - bounded memory: while the reader is alive it holds at most `heapBound(inputBytes)` of heap
///   beyond what it held empty (a hostile length must not make it reserve what was never sent).
///
/// Uses RTMPChunkReader's init/append/next, RTMPMessage, RTMPProtocolError (Equatable),
/// RTMPMessageType and RTMPCommand.Reply(payload:) (struct or class reader alike).
enum RTMPChunkFuzz {
    /// What one read produced: a digest of each message (header, payload and decoded reply),
    /// so the outcome itself holds 8 bytes a message, and the error that ended it.
    struct Outcome: Equatable {
        var digests: [Int] = []
        var error: RTMPProtocolError?
    }

    /// Heap the reader may hold for `n` input bytes: a constant plus a small multiple of what
    /// arrived (per-stream bookkeeping of a few dozen bytes for each 2-byte chunk header).
    static func heapBound(_ n: Int) -> Int { (256 << 10) + 64 * n }

    static func run(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let bytes = UnsafeRawBufferPointer(rebasing: data.dropFirst())
        let piece = Int(first) % 65
        let split = read(bytes, piece: piece == 0 ? max(1, bytes.count) : piece, checkHeap: true)
        if piece != 0 {
            let whole = read(bytes, piece: max(1, bytes.count), checkHeap: false)
            if split != whole {
                FuzzTarget.fail("rtmp-chunk", "fed in \(piece)-byte pieces: \(split.digests.count) messages, error \(String(describing: split.error)); "
                                + "fed whole: \(whole.digests.count) messages, error \(String(describing: whole.error))")
            }
        }
    }

    static func read(_ bytes: UnsafeRawBufferPointer, piece: Int, checkHeap: Bool) -> Outcome {
        var out = Outcome()
        var reader = RTMPChunkReader()
        // Measured from the empty reader: memory it reserves up front is its planned, fixed cost.
        let base = HeapBytes.inUse
        var at = 0
        feeding: while at < bytes.count {
            let n = min(piece, bytes.count - at)
            reader.append(UnsafeRawBufferPointer(rebasing: bytes[at..<at + n]))
            at += n
            while true {
                let message: RTMPMessage?
                do { message = try reader.next() } catch { out.error = error; break feeding }
                guard let message else { break }
                out.digests.append(digest(message))
            }
            if checkHeap {
                // The digests are ours, not the reader's: count only what it keeps.
                let held = HeapBytes.inUse - base - out.digests.capacity * 8 - 64
                if held > heapBound(at) {
                    FuzzTarget.fail("rtmp-chunk", "the reader holds \(held) heap bytes after \(at) input bytes (bound \(heapBound(at)))")
                }
            }
        }
        return out
    }

    static func digest(_ message: RTMPMessage) -> Int {
        var h = Hasher()
        h.combine(message.type)
        h.combine(message.messageStreamID)
        h.combine(message.timestamp)
        h.combine(message.payload)
        if let reply = decode(message) { h.combine(String(describing: reply)) }
        return h.finalize()
    }

    /// What RTMPPublisher.handleIncoming decodes.
    static func decode(_ message: RTMPMessage) -> RTMPCommand.Reply? {
        let p = message.payload
        switch message.type {
        case RTMPMessageType.commandAMF0:
            let reply = RTMPCommand.Reply(payload: p)
            _ = reply?.code
            _ = reply?.level
            return reply
        case 17 where !p.isEmpty:
            return RTMPCommand.Reply(payload: Array(p.dropFirst()))
        default:
            return nil
        }
    }
}
