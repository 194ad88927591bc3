import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// A WHIP endpoint URL (RFC 9725): `https://host[:port]/path[?query]`, or `http://` (loopback, tests).
///
/// The bearer token is never part of it (it is `$STREAM_KEY`); a query may still carry a secret,
/// so `redacted` shows it as `?****`.
package struct WHIPURL: Sendable, Equatable {
    package var isTLS: Bool
    package var host: String
    package var port: Int
    /// Path and query, as sent in the request line (at least "/").
    package var target: String

    package static func isWHIP(_ url: String) -> Bool {
        let lower = url.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    package init(parsing text: String) throws(TransportError) {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            isTLS = true
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            isTLS = false
            rest = text.dropFirst(7)
        } else {
            throw .connectFailed("a WHIP URL starts with https:// or http://")
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var t = String(rest.dropFirst(authority.count))
        if t.isEmpty || t.first == "?" { t = "/" + t }
        target = t
        guard !authority.contains("@") else { throw .connectFailed("a WHIP URL takes no user:password (the token is $STREAM_KEY)") }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .connectFailed("WHIP URL: unclosed [ in the host") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = isTLS ? 443 : 80
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { throw .connectFailed("WHIP URL: bad port") }
                port = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else {
                throw .connectFailed("WHIP URL: bad port")
            }
            port = p
        } else {
            host = String(authority)
            port = isTLS ? 443 : 80
        }
        guard !host.isEmpty else { throw .connectFailed("WHIP URL: no host") }
        // The host goes into the request's Host header: letters, digits, '-', '.', '_' (and ':'
        // in brackets) only, so no header can be injected through it.
        guard host.utf8.allSatisfy({ Self.hostByte($0, bracketed: authority.hasPrefix("[")) }) else {
            throw .connectFailed("WHIP URL: the host may hold only letters, digits, '-', '.' and '_'")
        }
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw .connectFailed("WHIP URL: the path must be printable ASCII without spaces")
        }
    }

    /// An unusable URL (a parse failure already reported before assembly).
    init(invalid: ()) {
        isTLS = false
        host = ""
        port = 0
        target = "/"
    }

    /// For logs and stats: the query, which may hold a secret, as `?****`.
    package var redacted: String {
        let path = target.prefix { $0 != "?" }
        let query = target.count > path.count ? "?****" : ""
        let h = host.contains(":") ? "[\(host)]" : host
        return (isTLS ? "https://" : "http://") + h + ":\(port)" + path + query
    }

    private static func hostByte(_ b: UInt8, bracketed: Bool) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        case UInt8(ascii: ":"):
            return bracketed
        default:
            return false
        }
    }

    /// The URL of a resource the endpoint named in `Location` (absolute, or a path on this host).
    /// An absolute one must keep the endpoint's scheme, host and port: the DELETE carries the
    /// bearer token, which must go nowhere else (and never from https to http).
    package func resource(_ location: String) -> WHIPURL? {
        if WHIPURL.isWHIP(location) {
            guard let r = try? WHIPURL(parsing: location), r.isTLS == isTLS, r.host.lowercased() == host.lowercased(),
                  r.port == port else { return nil }
            return r
        }
        var r = self
        if location.hasPrefix("/") {
            r.target = location
        } else {
            let base = target.prefix { $0 != "?" }
            let dir = base.lastIndex(of: "/").map { base[...$0] } ?? "/"
            r.target = String(dir) + location
        }
        guard r.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return r
    }

    /// Where a 307/308 `Location` points: absolute (any host; the scheme is checked by
    /// `TLSDowngradeRule`), or a path on this endpoint. nil when unusable.
    func redirect(_ location: String) -> WHIPURL? {
        if WHIPURL.isWHIP(location) { return try? WHIPURL(parsing: location) }
        guard !location.hasPrefix("//") else { return nil }
        var r = self
        if location.hasPrefix("/") {
            r.target = location
        } else {
            let base = target.prefix { $0 != "?" }
            let dir = base.lastIndex(of: "/").map { base[...$0] } ?? "/"
            r.target = String(dir) + location
        }
        guard r.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return r
    }
}
