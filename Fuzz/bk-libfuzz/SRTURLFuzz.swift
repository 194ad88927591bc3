import BroadcastKit

/// A `--url srt://…` value through SRTURL. Oracles on every accepted URL: host not empty, port in
/// 1...65535, latency and passphrase within their ranges, and `redacted` is the authority and at
/// most "?****", nothing of the query (where the stream id and passphrase travel). A refusal quotes no query text: only a bad
/// port quotes the authority, every other message is made of fixed words.
enum SRTURLFuzz {
    static func run(_ data: UnsafeRawBufferPointer) {
        let url = String(decoding: data, as: UTF8.self)
        let query = url.firstIndex(of: "?").map { String(url[url.index(after: $0)...]) } ?? ""
        let authority = url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url
        do {
            let u = try SRTURL(parsing: url)
            guard !u.host.isEmpty, (1...65535).contains(u.port), SRTURL.latencyRange.contains(u.latencyMs),
                  u.passphrase.map({ SRTURL.passphraseLengths.contains($0.count) }) ?? true else {
                FuzzTarget.fail("srt-url", "accepted \(url.debugDescription) with unusable parts")
            }
            // The redacted form is the authority (host and port as parsed) and at most "?****":
            // nothing of the query, where the stream id and passphrase travel. (A search for each
            // secret in it also matched text that is not the query's: the stream id "e:7001?"
            // in "srt://iample:7001?****".)
            let head = "srt://" + (u.host.contains(":") ? "[\(u.host)]" : u.host) + ":\(u.port)"
            if u.redacted != head && u.redacted != head + "?****" {
                FuzzTarget.fail("srt-url", "redacted form of \(url.debugDescription) shows more than its authority")
            }
            if u.hasQuery != !query.isEmpty && !(url.hasSuffix("?")) {
                FuzzTarget.fail("srt-url", "query of \(url.debugDescription) not accounted for")
            }
        } catch {
            let message = "\(error)"
            if message.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                FuzzTarget.fail("srt-url", "the refusal of \(url.debugDescription) carries control characters")
            }
            // Only a bad port quotes outside text (the authority, not secret); every other refusal is
            // made of fixed words, so no query text (a secret typed in the wrong place) can show.
            switch error as? SRTURLError {
            case .invalidParameter(let name, _)?:
                if !(SRTURL.knownNames.contains(name) || name == "a query parameter" || name == "host") {
                    FuzzTarget.fail("srt-url", "the refusal of \(url.debugDescription) names \(name.debugDescription)")
                }
            case .some: break
            case nil: FuzzTarget.fail("srt-url", "refused \(url.debugDescription) with an unexpected error type")
            }
        }
    }
}
