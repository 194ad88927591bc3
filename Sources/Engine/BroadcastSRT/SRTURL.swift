import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Why an SRT URL could not be used. Messages never contain the stream id or the passphrase.
package enum SRTURLError: Error, Sendable, Equatable, CustomStringConvertible {
    case notSRT
    case missingHost
    case missingPort
    case invalidPort(String)
    case pathNotSupported
    /// Unknown names are not repeated: the query may hold a secret typed in the wrong place.
    case unknownParameter
    case invalidParameter(String, String)

    package var description: String {
        switch self {
        case .notSRT: return "not an srt:// URL"
        case .missingHost: return "SRT URL has no host (srt://HOST:PORT)"
        case .missingPort: return "SRT URL has no port (srt://HOST:PORT; SRT has no default port)"
        case .invalidPort(let p): return "SRT URL has an invalid port '\(p)'"
        case .pathNotSupported: return "SRT URL takes no path: put the stream id in ?streamid= (or let the stream key fill it)"
        case .unknownParameter:
            return "SRT URL: an unknown parameter in its query (expected streamid, passphrase, latency, pbkeylen or mode=caller)"
        case .invalidParameter(let n, let why): return "SRT URL: \(n) \(why)"
        }
    }
}

/// A parsed `srt://host:port[?streamid=…&passphrase=…&latency=MS&pbkeylen=N&mode=caller]`.
///
/// We always call (caller mode); the receiver listens. `redacted` is the only form that may
/// appear in messages: the query, which carries the stream id and passphrase, becomes `?****`.
package struct SRTURL: Sendable, Equatable {
    package var host: String
    package var port: Int
    var streamID: String?
    package var passphrase: String?
    /// Receiver and sender latency (TSBPD), ms.
    package var latencyMs: Int
    package var hasQuery: Bool

    /// libsrt's default: enough for loopback and LAN; a lossy long path wants 4 x RTT or more.
    static let defaultLatencyMs = 120
    package static let latencyRange = 20...8000
    /// libsrt refuses passphrases outside 10...79 characters.
    package static let passphraseLengths = 10...79

    /// A placeholder that connects nowhere (port 0).
    init(invalid: Void) {
        host = ""; port = 0; latencyMs = Self.defaultLatencyMs; hasQuery = false
    }

    package static func isSRT(_ url: String) -> Bool { url.lowercased().hasPrefix("srt://") }

    package init(parsing url: String) throws(SRTURLError) {
        guard Self.isSRT(url) else { throw .notSRT }
        let rest = url.dropFirst(6)
        let queryStart = rest.firstIndex(of: "?")
        let authority = queryStart.map { rest[..<$0] } ?? rest[...]
        if authority.contains("/") {
            // Allow a single trailing slash (srt://host:port/?streamid=…), nothing more.
            if authority.firstIndex(of: "/") != authority.index(before: authority.endIndex) { throw .pathNotSupported }
        }
        let hostPort = authority.hasSuffix("/") ? authority.dropLast() : authority
        var hostPart: Substring, portText: Substring
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw .missingHost }
            hostPart = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            // Brackets hold an IPv6 address: hex digits, ':' and '.' (an embedded IPv4), nothing else.
            guard hostPart.contains(":"), hostPart.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || $0 == ":" || $0 == "." })
            else { throw .invalidParameter("host", "in brackets must be an IPv6 address") }
            let after = hostPort[hostPort.index(after: close)...]
            guard after.hasPrefix(":") else { throw .missingPort }
            portText = after.dropFirst()
        } else {
            guard let colon = hostPort.lastIndex(of: ":") else {
                if hostPort.isEmpty { throw .missingHost }
                throw .missingPort
            }
            hostPart = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
        }
        if hostPart.isEmpty { throw .missingHost }
        if hostPart.contains("@") { throw .invalidParameter("host", "must not carry user:password@") }
        guard let port = Int(portText), port > 0, port <= 65535 else { throw .invalidPort(Self.printable(portText.prefix(16))) }
        host = String(hostPart)
        self.port = port
        latencyMs = Self.defaultLatencyMs
        hasQuery = false
        guard let q = queryStart else { return }
        hasQuery = true
        for pair in rest[rest.index(after: q)...].split(separator: "&", omittingEmptySubsequences: true) {
            let name = pair.prefix { $0 != "=" }
            guard name.count < pair.count else { throw .invalidParameter("a query parameter", "needs a value (NAME=VALUE)") }
            let raw = pair.dropFirst(name.count + 1)
            guard let value = Self.percentDecoded(raw) else {
                throw .invalidParameter(Self.knownNames.contains(String(name)) ? String(name) : "a query parameter",
                                        "is not valid percent-encoded UTF-8")
            }
            switch name {
            case "streamid":
                guard !value.isEmpty, value.utf8.count <= 512 else { throw .invalidParameter("streamid", "must be 1 to 512 bytes") }
                streamID = value
            case "passphrase":
                guard Self.passphraseLengths.contains(value.count) else {
                    throw .invalidParameter("passphrase", "must be 10 to 79 characters")
                }
                passphrase = value
            case "latency":
                guard let ms = Int(value), Self.latencyRange.contains(ms) else {
                    throw .invalidParameter("latency", "must be \(Self.latencyRange.lowerBound) to \(Self.latencyRange.upperBound) ms")
                }
                latencyMs = ms
            case "pbkeylen":
                guard ["16", "24", "32"].contains(value) else { throw .invalidParameter("pbkeylen", "must be 16, 24 or 32") }
            case "mode":
                guard value == "caller" else {
                    throw .invalidParameter("mode", "must be caller (broadcast connects to a listening receiver)")
                }
            default:
                throw .unknownParameter
            }
        }
    }

    /// The URL with its query (stream id, passphrase) hidden: safe for every message.
    package var redacted: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "srt://\(h):\(port)" + (hasQuery ? "?****" : "")
    }

    package static let knownNames: Set<String> = ["streamid", "passphrase", "latency", "pbkeylen", "mode"]

    /// Outside text quoted in a message: control characters shown as '?', never written raw.
    static func printable(_ s: Substring) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }

    private static func percentDecoded(_ s: Substring) -> String? {
        var bytes: [UInt8] = []
        var it = s.utf8.makeIterator()
        while let c = it.next() {
            if c == UInt8(ascii: "%") {
                guard let h = it.next(), let l = it.next(), let hv = hex(h), let lv = hex(l) else { return nil }
                bytes.append(hv << 4 | lv)
            } else {
                bytes.append(c)
            }
        }
        guard let out = String(validating: bytes, as: UTF8.self), !out.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            return nil
        }
        return out
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
