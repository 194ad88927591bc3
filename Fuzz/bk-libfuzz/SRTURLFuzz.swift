import BroadcastKit

/// A `--url srt://…` value through SRTURL. Oracles on every accepted URL: host not empty, port in
/// 1...65535, latency and passphrase within their ranges, and `redacted` shows nothing of the
/// query (where the stream id and passphrase travel). On a refusal, the message never repeats a
/// query value.
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
            for secret in [u.streamID, u.passphrase].compactMap({ $0 }) where secret.count >= 4 {
                if u.redacted.contains(secret) && !authority.contains(secret) { FuzzTarget.fail("srt-url", "redacted form of \(url.debugDescription) shows a secret") }
            }
            if u.hasQuery != !query.isEmpty && !(url.hasSuffix("?")) {
                FuzzTarget.fail("srt-url", "query of \(url.debugDescription) not accounted for")
            }
        } catch {
            let message = "\(error)"
            if message.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                FuzzTarget.fail("srt-url", "the refusal of \(url.debugDescription) carries control characters")
            }
            for pair in query.split(separator: "&") {
                let value = pair.split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
                // A value that is part of the message's own fixed words ("mode=caller") proves nothing.
                if value.count >= 8 && message.contains(value) && !authority.contains(value) && !SRTURLError.unknownParameter.description.contains(value) {
                    FuzzTarget.fail("srt-url", "the refusal of \(url.debugDescription) repeats a query value")
                }
            }
        }
    }
}
