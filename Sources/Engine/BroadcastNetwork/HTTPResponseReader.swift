import BroadcastCore
import BroadcastPipeline

/// Reads one HTTP/1.1 response (RFC 9112) as its bytes arrive, into memory fixed at `capacity`:
/// the status line, the header fields, then a body framed by `Content-Length`, by
/// `Transfer-Encoding: chunked`, or by the connection's close. Every framing counts against the
/// same cap, so an endpoint that sends more than `capacity` is an error, never growth.
///
/// Incremental: each `feed` scans only the new bytes (a peer sending one byte at a time costs
/// linear work, not quadratic). Pure: no I/O, fuzzed as `whip-http`.
package struct HTTPResponseReader {
    /// Why a response cannot be read.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// More than `capacity` bytes of head or body.
        case tooLarge(Int)
        /// Broke HTTP/1.1's framing; the words say where.
        case malformed(String)
        /// The connection ended before the response did.
        case truncated

        package var description: String {
            switch self {
            case .tooLarge(let cap): return "the response exceeds \(cap) bytes"
            case .malformed(let why): return "a malformed HTTP response (\(why))"
            case .truncated: return "the connection closed before the response was complete"
            }
        }
    }

    /// A whole response.
    package struct Response: Equatable {
        package var status: Int
        package var location: String?
        var contentType: String?
        package var body: [UInt8]
    }

    private enum Framing { case length(Int), chunked, untilClose, none }
    private enum ChunkState { case size, data(Int), dataEnd, trailer }

    let capacity: Int
    /// The head as it arrives (up to the blank line), then left alone.
    private var head: [UInt8] = []
    private var headDone = false
    private var status = 0
    private var location: String?
    private var contentType: String?
    private var framing = Framing.none
    private var body: [UInt8] = []
    private var chunk = ChunkState.size
    /// The chunk-size or trailer line being read.
    private var line: [UInt8] = []
    private var done = false

    /// The longest chunk-size or trailer line accepted.
    static let maxLineBytes = 1024

    /// `capacity`: the most bytes of head, and separately of body, held.
    package init(capacity: Int) {
        self.capacity = max(64, capacity)
        head.reserveCapacity(min(self.capacity, 4096))
    }

    /// The response once complete (after a `feed` returned true, or `finish` at EOF).
    package var response: Response? {
        guard done else { return nil }
        return Response(status: status, location: location, contentType: contentType, body: body)
    }

    /// Takes the next bytes; true once the response is complete (bytes after it are ignored).
    package mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> Bool {
        var i = 0
        while i < bytes.count && !done {
            if !headDone {
                guard head.count < capacity else { throw .tooLarge(capacity) }
                head.append(bytes[i])
                i += 1
                let n = head.count
                if n >= 4 && head[n - 4] == 13 && head[n - 3] == 10 && head[n - 2] == 13 && head[n - 1] == 10 {
                    try parseHead()
                }
                continue
            }
            i = try feedBody(bytes, from: i)
        }
        return done
    }

    /// The connection closed: completes a close-delimited body, else a response cut short throws.
    package mutating func finish() throws(Failure) -> Response {
        if !done, headDone, case .untilClose = framing { done = true }
        guard let r = response else { throw .truncated }
        return r
    }

    // MARK: - Head

    private mutating func parseHead() throws(Failure) {
        headDone = true
        let text = String(decoding: head[..<(head.count - 4)], as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        guard let statusLine = lines.next() else { throw .malformed("no status line") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
              parts[1].count == 3, let code = Int(parts[1]), (100...599).contains(code) else {
            throw .malformed("status line")
        }
        if (100...199).contains(code) && code != 101 {
            // An interim response (100 Continue, 103 Early Hints): its fields are dropped and the
            // final response follows on the same connection (RFC 9110 §15.2).
            head.removeAll(keepingCapacity: true)
            headDone = false
            return
        }
        status = code
        var length: Int?
        var chunked = false
        while let l = lines.next() {
            guard let colon = l.firstIndex(of: ":"), colon != l.startIndex else { throw .malformed("header line") }
            let name = l[..<colon]
            // No whitespace between a field name and its colon (RFC 9112 §5.1).
            guard !name.contains(where: { $0 == " " || $0 == "\t" }) else { throw .malformed("header name") }
            let value = String(l[l.index(after: colon)...]).trimmingSpaces
            switch name.lowercased() {
            case "content-length":
                guard !value.isEmpty, value.count <= 18, value.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(value) else {
                    throw .malformed("Content-Length")
                }
                if let length, length != n { throw .malformed("two different Content-Lengths") }
                length = n
            case "transfer-encoding":
                // Only chunked is ever sent by an endpoint we read; anything else cannot be framed.
                guard value.lowercased() == "chunked" else { throw .malformed("Transfer-Encoding \(value.prefix(32))") }
                chunked = true
            case "location": if location == nil { location = value }
            case "content-type": if contentType == nil { contentType = value }
            default: break
            }
        }
        if status == 101 || status == 204 || status == 304 {
            framing = .none
            done = true
        } else if chunked {
            // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3).
            framing = .chunked
        } else if let length {
            guard length <= capacity else { throw .tooLarge(capacity) }
            framing = .length(length)
            body.reserveCapacity(length)
            if length == 0 { done = true }
        } else {
            framing = .untilClose
        }
    }

    // MARK: - Body

    /// Consumes body bytes from `start`; returns where it stopped.
    private mutating func feedBody(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        switch framing {
        case .none:
            done = true
            return bytes.count
        case .length(let total):
            let take = min(total - body.count, bytes.count - start)
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + take)]))
            if body.count == total { done = true }
            return start + take
        case .untilClose:
            let take = bytes.count - start
            guard body.count + take <= capacity else { throw .tooLarge(capacity) }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
            return bytes.count
        case .chunked:
            return try feedChunked(bytes, from: start)
        }
    }

    private mutating func feedChunked(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        var i = start
        while i < bytes.count && !done {
            switch chunk {
            case .data(let left):
                let take = min(left, bytes.count - i)
                guard body.count + take <= capacity else { throw .tooLarge(capacity) }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                chunk = left == take ? .dataEnd : .data(left - take)
            case .size, .dataEnd, .trailer:
                let b = bytes[i]
                i += 1
                guard line.count < Self.maxLineBytes else { throw .malformed("chunk line too long") }
                line.append(b)
                guard line.count >= 2, line[line.count - 2] == 13, b == 10 else { continue }
                let content = line[..<(line.count - 2)]
                line.removeAll(keepingCapacity: true)
                try endOfLine(content)
            }
        }
        return i
    }

    /// One CRLF-terminated line of chunk framing.
    private mutating func endOfLine(_ content: ArraySlice<UInt8>) throws(Failure) {
        switch chunk {
        case .dataEnd:
            guard content.isEmpty else { throw .malformed("chunk data longer than its size") }
            chunk = .size
        case .size:
            // chunk-size [; extensions]: hex digits, at most 8 of them (the cap is far smaller).
            let digits = content.prefix { $0 != 59 && $0 != 32 && $0 != 9 }
            guard !digits.isEmpty, digits.count <= 8 else { throw .malformed("chunk size") }
            var size = 0
            for d in digits {
                guard let v = Self.hexValue(d) else { throw .malformed("chunk size") }
                size = size << 4 | v
            }
            if size == 0 {
                chunk = .trailer
            } else {
                guard body.count + size <= capacity else { throw .tooLarge(capacity) }
                chunk = .data(size)
            }
        case .trailer:
            // Trailer fields are read and dropped; the empty line ends the message.
            if content.isEmpty { done = true }
        case .data:
            break
        }
    }

    private static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 48...57: return Int(b - 48)
        case 65...70: return Int(b - 55)
        case 97...102: return Int(b - 87)
        default: return nil
        }
    }
}

private extension String {
    /// Without leading and trailing spaces and tabs (optional whitespace around a field value).
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(scalars[first...last])
    }
}
