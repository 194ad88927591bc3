import Glibc
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The WHIP signalling requests: one HTTP/1.1 request per connection (`Connection: close`), over
/// TCP or the verified GnuTLS session rtmps:// uses (`TCPSocket`, `TLSVerifier`).
///
/// The response is read into a bounded buffer (`maxResponseBytes`): an endpoint that sends more is
/// an error, never growth.
struct WHIPHTTPClient {
    struct Response {
        var status: Int
        var location: String?
        var body: String
    }

    /// Headers plus an SDP answer (a few kB); anything larger is refused.
    static let maxResponseBytes = 64 << 10
    /// Redirects (307/308) followed for one request, at most.
    static let maxRedirects = 3

    let timeoutSeconds: Int
    let caFile: String?
    /// What wakes a request's waits (the process's stop unless a caller gives its own).
    var stop: StopFlag? = .process

    init(timeoutSeconds: Int, caFile: String?) {
        self.timeoutSeconds = timeoutSeconds
        self.caFile = caFile
    }

    /// Sends `method` to `url` with the bearer `token` (none when empty) and `body`, and reads the
    /// whole response, all within `deadline` (default: `timeoutSeconds` from now): connect, TLS,
    /// the request and every byte of the response share it, so an endpoint that answers one byte
    /// a second cannot stretch it. `wakesOnStop`: the waits also end at the stop (false for the
    /// requests a stop itself makes, the DELETE). `onSocket` sees the descriptor while the request
    /// runs (so a stop can shut it down).
    func request(_ method: String, _ url: WHIPURL, token: String, contentType: String?, body: String,
                         displayName: String, deadline: Deadline? = nil, wakesOnStop: Bool = true,
                         onSocket: (Int32) -> Void = { _ in }) throws(TransportError) -> Response {
        let operation = TCPSocket.Operation(deadline: deadline ?? .after(seconds: timeoutSeconds),
                                             stop: wakesOnStop ? stop : nil)
        let seconds = max(1, Int((operation.deadline.ns - MediaTime.now() + 999_999_999) / 1_000_000_000))
        func failure(_ error: TCPSocket.Failure, _ doing: String) -> TransportError {
            switch error {
            case .stopped: return .connectFailed("\(displayName): the run stopped while \(doing)")
            case .deadlinePassed, .timedOut:
                return .connectFailed("\(displayName): \(method) not answered in full within \(seconds) s (\(doing))")
            case .closed: return .connectFailed("\(displayName): the endpoint closed the connection while \(doing)")
            case .failed(let why): return .connectFailed("\(displayName): \(doing) failed: \(why)")
            }
        }
        let socket = try TCPSocket.connect(host: url.host, port: url.port, timeoutSeconds: timeoutSeconds,
                                            operation: operation, displayName: displayName)
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
        let sendError: TCPSocket.Failure? = whole.withUnsafeBytes { b -> TCPSocket.Failure? in
            do throws(TCPSocket.Failure) { try socket.send(b.baseAddress!, count: b.count, timeoutMs: timeoutMs) } catch {
                return error
            }
            return nil
        }
        // The request held the token: overwrite it.
        for i in whole.indices { whole[i] = 0 }
        if let sendError { throw failure(sendError, "sending the \(method) request") }
        var reader = HTTPResponseReader(capacity: Self.maxResponseBytes)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 1)
        defer { buffer.deallocate() }
        var response: HTTPResponseReader.Response?
        while response == nil {
            let n: Int
            do throws(TCPSocket.Failure) {
                n = try socket.receive(into: buffer.baseAddress!, capacity: buffer.count, timeoutMs: timeoutMs)
            } catch .closed {
                do throws(HTTPResponseReader.Failure) { response = try reader.finish() } catch {
                    throw .connectFailed("\(displayName): the response to \(method): \(error)")
                }
                break
            } catch {
                throw failure(error, "reading the \(method) response")
            }
            if n == 0 { throw failure(.timedOut, "reading the \(method) response") }
            do throws(HTTPResponseReader.Failure) {
                if try reader.feed(UnsafeRawBufferPointer(rebasing: buffer[..<n])) { response = reader.response }
            } catch {
                throw .connectFailed("\(displayName): the response to \(method): \(error)")
            }
        }
        guard let response else { throw .connectFailed("\(displayName): no response to \(method)") }
        return Response(status: response.status, location: response.location,
                        body: String(decoding: response.body, as: UTF8.self))
    }

    /// `request`, following 307/308 (RFC 9725 lets an endpoint redirect the POST) at most
    /// `maxRedirects` times, each to the same scheme or up to TLS (`TLSDowngradeRule`), all
    /// within the one deadline. Returns the last response and the URL that gave it.
    func requestFollowingRedirects(_ method: String, _ url: WHIPURL, token: String, contentType: String?,
                                           body: String, displayName: String, deadline: Deadline? = nil,
                                           onSocket: (Int32) -> Void = { _ in }) throws(TransportError) -> (Response, WHIPURL) {
        let whole = deadline ?? .after(seconds: timeoutSeconds)
        var target = url
        var hops = 0
        while true {
            let r = try request(method, target, token: token, contentType: contentType, body: body,
                                displayName: displayName, deadline: whole, onSocket: onSocket)
            guard r.status == 307 || r.status == 308 else { return (r, target) }
            guard hops < Self.maxRedirects else {
                throw .connectFailed("\(displayName): the WHIP endpoint redirected more than \(Self.maxRedirects) times")
            }
            guard let location = r.location, let next = target.redirect(location) else {
                throw .connectFailed("\(displayName): the WHIP endpoint answered HTTP \(r.status) without a usable Location")
            }
            guard TLSDowngradeRule.allows(fromTLS: target.isTLS, toTLS: next.isTLS) else {
                throw .tlsRejected(TLSDowngradeRule.refusal(displayName, what: "a redirect", to: next.redacted,
                                                            then: "not followed"))
            }
            hops += 1
            target = next
        }
    }

    /// The first header `name` (lower case), trimmed.
    static func header(_ name: String, in headers: String) -> String? {
        for line in headers.split(whereSeparator: \.isNewline).dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name {
                return String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            }
        }
        return nil
    }
}
