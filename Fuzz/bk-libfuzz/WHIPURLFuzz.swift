import BroadcastKit

/// A `--url https://…` WHIP endpoint through WHIPURL, then an endpoint's `Location` through
/// `resource(_:)`. Oracles: an accepted URL has a host of host characters only (it becomes the
/// Host header: no header injection), a port in 1...65535, a target that starts with "/" and is
/// printable ASCII, and a `redacted` form without the query; a refusal carries no control
/// characters and is one of the parser's fixed messages (nothing of the URL quoted); a resolved Location keeps the scheme, host and port (the DELETE
/// carries the bearer token) and a printable target.
enum WHIPURLFuzz {
    static let fixedRefusals: Set<String> = [
        "a WHIP URL starts with https:// or http://",
        "a WHIP URL takes no user:password (the token is $STREAM_KEY)",
        "WHIP URL: unclosed [ in the host",
        "WHIP URL: bad port",
        "WHIP URL: no host",
        "WHIP URL: the host may hold only letters, digits, '-', '.' and '_'",
        "WHIP URL: the path must be printable ASCII without spaces",
    ]

    /// "host:port" as the redacted form writes it (IPv6 in brackets).
    static func authorityLength(_ u: WHIPURL) -> Int {
        (u.host.contains(":") ? u.host.count + 2 : u.host.count) + 1 + String(u.port).count
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        // The input is "URL\nLOCATION": both halves come from outside.
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let url = String(parts[0]), location = parts.count > 1 ? String(parts[1]) : "/whip/resource/1"
        let query = url.firstIndex(of: "?").map { String(url[url.index(after: $0)...]) } ?? ""
        do {
            let u = try WHIPURL(parsing: url)
            let hostOK = !u.host.isEmpty && u.host.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                    || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A
            }
            guard hostOK, (1...65535).contains(u.port), u.target.hasPrefix("/"),
                  u.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                FuzzTarget.fail("whip-url", "accepted \(url.debugDescription) with unusable parts")
            }
            // The redacted form is scheme://host:port, the path, and "?****" for any query.
            let path = u.target.prefix { $0 != "?" }
            let tail = String(path) + (u.target.count > path.count ? "?****" : "")
            if !u.redacted.hasSuffix(tail) || u.redacted.count != (u.isTLS ? 8 : 7) + authorityLength(u) + tail.count {
                FuzzTarget.fail("whip-url", "redacted form of \(url.debugDescription) is \(u.redacted.debugDescription)")
            }
            if let r = u.resource(location) {
                guard r.isTLS == u.isTLS, r.host.lowercased() == u.host.lowercased(), r.port == u.port,
                      r.target.hasPrefix("/"), r.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    FuzzTarget.fail("whip-url", "Location \(location.debugDescription) of \(url.debugDescription) leaves the endpoint")
                }
            }
        } catch {
            let message = "\(error)"
            if message.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                FuzzTarget.fail("whip-url", "the refusal of \(url.debugDescription) carries control characters")
            }
            // Every refusal is made of fixed words: nothing of the URL (a secret in its query or
            // path) is quoted.
            guard case .connectFailed(let m)? = error as? TransportError, fixedRefusals.contains(m) else {
                FuzzTarget.fail("whip-url", "the refusal of \(url.debugDescription) is not a fixed message: \(message.debugDescription)")
            }
        }
    }
}
