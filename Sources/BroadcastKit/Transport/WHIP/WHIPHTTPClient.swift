import Glibc

/// The WHIP signalling requests: one HTTP/1.1 request per connection (`Connection: close`), over
/// TCP or the verified GnuTLS session rtmps:// uses (`RTMPSocket`, `TLSVerifier`).
///
/// The response is read into a bounded buffer (`maxResponseBytes`): an endpoint that sends more is
/// an error, never growth.
package struct WHIPHTTPClient {
    package struct Response {
        package var status: Int
        package var location: String?
        package var body: String
    }

    /// Headers plus an SDP answer (a few kB); anything larger is refused.
    package static let maxResponseBytes = 64 << 10

    package let timeoutSeconds: Int
    package let caFile: String?

    package init(timeoutSeconds: Int, caFile: String?) {
        self.timeoutSeconds = timeoutSeconds
        self.caFile = caFile
    }

    /// Sends `method` to `url` with the bearer `token` (none when empty) and `body`.
    /// `onSocket` sees the descriptor while the request runs (so a stop can shut it down).
    package func request(_ method: String, _ url: WHIPURL, token: String, contentType: String?, body: String,
                         displayName: String, onSocket: (Int32) -> Void = { _ in }) throws(TransportError) -> Response {
        let socket = try RTMPSocket.connect(host: url.host, port: url.port, timeoutSeconds: timeoutSeconds,
                                            displayName: displayName)
        onSocket(socket.fd)
        defer {
            onSocket(-1)
            socket.close()
        }
        if url.isTLS {
            let verifier = try TLSVerifier(extraCAFile: caFile)
            try socket.startTLS(verifier: verifier, host: url.host, timeoutMs: timeoutSeconds * 1000, displayName: displayName)
        }
        let hostHeader = (url.host.contains(":") ? "[\(url.host)]" : url.host)
            + ((url.isTLS && url.port == 443) || (!url.isTLS && url.port == 80) ? "" : ":\(url.port)")
        var head = "\(method) \(url.target) HTTP/1.1\r\nHost: \(hostHeader)\r\nConnection: close\r\n"
            + "User-Agent: broadcast\r\nContent-Length: \(body.utf8.count)\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if !token.isEmpty { head += "Authorization: Bearer \(token)\r\n" }
        head += "\r\n"
        var whole = Array((head + body).utf8)
        let timeoutMs = Int32(timeoutSeconds * 1000)
        let sendError: String? = whole.withUnsafeBytes { b -> String? in
            do { try socket.send(b.baseAddress!, count: b.count, timeoutMs: timeoutMs) } catch { return "\(error)" }
            return nil
        }
        // The request held the token: overwrite it.
        for i in whole.indices { whole[i] = 0 }
        if let sendError { throw .connectFailed("\(displayName): sending the \(method) request failed: \(sendError)") }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.maxResponseBytes, alignment: 1)
        defer { buffer.deallocate() }
        var used = 0
        var expected: Int?
        while true {
            if let expected, used >= expected { break }
            guard used < buffer.count else {
                throw .connectFailed("\(displayName): the WHIP endpoint's response exceeds \(Self.maxResponseBytes) bytes")
            }
            let n: Int
            do {
                n = try socket.receive(into: buffer.baseAddress! + used, capacity: buffer.count - used, timeoutMs: timeoutMs)
            } catch .closed {
                break
            } catch {
                throw .connectFailed("\(displayName): reading the \(method) response failed: \(error)")
            }
            if n == 0 { throw .connectFailed("\(displayName): no response to \(method) within \(timeoutSeconds) s") }
            used += n
            if expected == nil, let end = Self.headerEnd(UnsafeRawBufferPointer(rebasing: buffer[..<used])) {
                let headers = String(decoding: buffer[..<end], as: UTF8.self)
                if let length = Self.header("content-length", in: headers).flatMap({ Int($0) }) {
                    guard length >= 0, end + 4 + length <= buffer.count else {
                        throw .connectFailed("\(displayName): the WHIP endpoint's response exceeds \(Self.maxResponseBytes) bytes")
                    }
                    expected = end + 4 + length
                }
            }
        }
        let raw = UnsafeRawBufferPointer(rebasing: buffer[..<used])
        guard let end = Self.headerEnd(raw) else { throw .connectFailed("\(displayName): a malformed HTTP response to \(method)") }
        let headers = String(decoding: raw[..<end], as: UTF8.self)
        let statusLine = headers.prefix { !$0.isNewline }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...599).contains(status) else {
            throw .connectFailed("\(displayName): a malformed HTTP status line in the response to \(method)")
        }
        let bodyEnd = expected.map { min($0, used) } ?? used
        let text = String(decoding: raw[(end + 4)..<bodyEnd], as: UTF8.self)
        return Response(status: status, location: Self.header("location", in: headers), body: text)
    }

    private static func headerEnd(_ b: UnsafeRawBufferPointer) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }

    /// The first header `name` (lower case), trimmed.
    package static func header(_ name: String, in headers: String) -> String? {
        for line in headers.split(whereSeparator: \.isNewline).dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name {
                return String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            }
        }
        return nil
    }
}
