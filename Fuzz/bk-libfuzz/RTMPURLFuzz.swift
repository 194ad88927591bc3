import BroadcastKit

/// A `--url` value through RTMPURL. The input up to its first NUL byte is the URL; what follows
/// is a separate `--key` (RTMPURL(url:streamKey:)). Oracles on every accepted URL:
/// - its parts are usable: host and app not empty, port in 1...65535, no "/" in the host or app;
/// - round trip: parsing `fullURL` gives the same URL back;
/// - `redacted` and `tcUrl` never hold the key (`redacted` also hides a query: `?****`).
enum RTMPURLFuzz {
    static func run(_ data: UnsafeRawBufferPointer) {
        let nul = data.firstIndex(of: 0) ?? data.count
        let url = String(decoding: UnsafeRawBufferPointer(rebasing: data[..<nul]), as: UTF8.self)
        if let parsed = try? RTMPURL(parsing: url) {
            check(parsed, from: url)
            guard let again = try? RTMPURL(parsing: parsed.fullURL), again == parsed else {
                FuzzTarget.fail("rtmp-url", "fullURL of \(url.debugDescription) did not parse back to the same URL")
            }
        }
        if nul < data.count {
            let key = String(decoding: UnsafeRawBufferPointer(rebasing: data[(nul + 1)...]), as: UTF8.self)
            if let withKey = try? RTMPURL(url: url, streamKey: key) {
                if !key.isEmpty && withKey.streamKey != key {
                    FuzzTarget.fail("rtmp-url", "--key was not used as the key for \(url.debugDescription)")
                }
                checkHidden(withKey, from: url)
            }
        }
    }

    static func check(_ u: RTMPURL, from url: String) {
        // "/" checked per scalar: a "/" followed by a combining mark is one Character that is not "/".
        guard !u.host.isEmpty, !u.app.isEmpty, !u.app.unicodeScalars.contains("/"), !u.host.unicodeScalars.contains("/"),
              (1...65535).contains(u.port) else {
            FuzzTarget.fail("rtmp-url", "accepted \(url.debugDescription) with host \(u.host.debugDescription) port \(u.port) app \(u.app.debugDescription)")
        }
        checkHidden(u, from: url)
    }

    /// The key is what follows the app in `fullURL`; the redacted form and tcUrl must end before it.
    /// (Compared as UTF-8: a key that starts with a combining mark joins the "/" into one Character.)
    static func checkHidden(_ u: RTMPURL, from url: String) {
        guard u.streamKey != nil else { return }
        // A query in the app is shown as "?****" (everything after the first "?" hidden).
        if !u.fullURL.utf8.starts(with: (u.tcUrl + "/").utf8)
            || !u.redacted.utf8.elementsEqual((RTMPURL.redactingQuery(u.tcUrl) + "/****").utf8) {
            FuzzTarget.fail("rtmp-url", "redacted or tcUrl of \(url.debugDescription) may show the key")
        }
    }
}
