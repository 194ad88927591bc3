import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Why an RTMP URL could not be used. Messages never contain the stream key.
package enum RTMPURLError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case unsupportedScheme(String)
    case missingHost
    case invalidPort(String)
    case missingApp
    case credentialsNotSupported
    case tooLong(Int)
    /// An IPv6 address (a host with ':') written without brackets.
    case ipv6WithoutBrackets
    /// Brackets around something that is not an IPv6 address (no ':', or another '[').
    case invalidIPv6

    package var description: String {
        switch self {
        case .empty: return "RTMP URL is empty"
        case .unsupportedScheme(let s): return "unsupported URL scheme '\(s)' (expected rtmp:// or rtmps://)"
        case .missingHost: return "RTMP URL has no host"
        case .invalidPort(let p): return "RTMP URL has an invalid port '\(p)'"
        case .missingApp: return "RTMP URL has no application path (e.g. rtmp://host/live)"
        case .credentialsNotSupported: return "user:password@ in RTMP URLs is not supported"
        case .tooLong(let n): return "RTMP URL is \(n) bytes long; at most \(RTMPURL.maxLength) are accepted"
        case .ipv6WithoutBrackets: return "RTMP URL host has ':' (an IPv6 address goes in brackets: rtmp://[::1]/live)"
        case .invalidIPv6: return "RTMP URL has brackets around something that is not an IPv6 address"
        }
    }
}

/// A parsed `rtmp://host[:port]/app[/streamKey]` or `rtmps://...` URL.
///
/// The first path segment is the application; anything after it is the stream key.
/// `redacted` is the only form that may appear in messages.
package struct RTMPURL: Sendable, Equatable {
    enum Scheme: String, Sendable {
        case rtmp, rtmps
        var defaultPort: Int { self == .rtmp ? 1935 : 443 }
    }

    var scheme: Scheme
    package var host: String
    /// Explicit or default port (1935 for rtmp, 443 for rtmps).
    package var port: Int
    var hasExplicitPort: Bool
    package var app: String
    /// The stream key, or `nil` when the URL ends at the application.
    package var streamKey: String?

    /// Parses `url`. Throws `RTMPURLError` with a message that does not echo the key.
    /// Longest URL accepted, in bytes: connect and publish must fit RTMP's 4 KB command buffer.
    package static let maxLength = 2048

    package init(parsing url: String) throws(RTMPURLError) {
        if url.isEmpty { throw .empty }
        if url.utf8.count > Self.maxLength { throw .tooLong(url.utf8.count) }
        guard let schemeEnd = url.firstRange(of: "://") else { throw .unsupportedScheme(String(url.prefix(8))) }
        let schemeText = String(url[..<schemeEnd.lowerBound]).lowercased()
        guard let scheme = Scheme(rawValue: schemeText) else { throw .unsupportedScheme(schemeText) }
        self.scheme = scheme

        // Split on Unicode scalars, not Characters: a "/" or ":" followed by a combining mark is one
        // Character that equals neither, and would move the key into the host or the app.
        let rest = url.unicodeScalars[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        let path = rest[authority.endIndex...]
        if authority.contains("@") { throw .credentialsNotSupported }

        var hostPart = authority
        var portText: Substring.UnicodeScalarView? = nil
        if authority.first == "[" {
            // IPv6 literal: [addr] or [addr]:port
            guard let close = authority.firstIndex(of: "]") else { throw .missingHost }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            // Only an IPv6 literal goes in brackets ("[[x]" would print back as "[x" and not parse).
            if !hostPart.contains(":") || hostPart.contains("[") { throw .invalidIPv6 }
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw .invalidPort(Self.redactingQuery(String(Substring(after)))) }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
            // "rtmp://::1/live" would otherwise connect to host ":" on port 1.
            if hostPart.contains(":") { throw .ipv6WithoutBrackets }
        }
        if hostPart.isEmpty { throw .missingHost }
        self.host = String(Substring(hostPart))
        if let portText {
            let text = String(Substring(portText))
            guard let p = Int(text), p > 0, p <= 65535 else { throw .invalidPort(Self.redactingQuery(text)) }
            self.port = p
            self.hasExplicitPort = true
        } else {
            self.port = scheme.defaultPort
            self.hasExplicitPort = false
        }

        let segments = path.drop { $0 == "/" }
        let appPart = segments.prefix { $0 != "/" }
        if appPart.isEmpty { throw .missingApp }
        self.app = String(Substring(appPart))
        let keyPart = segments[appPart.endIndex...].drop { $0 == "/" }
        self.streamKey = keyPart.isEmpty ? nil : String(Substring(keyPart))
    }

    /// Parses `url` and, when `streamKey` is not empty, uses it as the key. A path after the
    /// application in `url` is then kept as part of the application (app instance).
    package init(url: String, streamKey: String) throws(RTMPURLError) {
        try self.init(parsing: url)
        if !streamKey.isEmpty {
            if let existing = self.streamKey { app += "/" + existing }
            self.streamKey = streamKey
        }
    }

    private var base: String {
        let hostText = host.unicodeScalars.contains(":") ? "[\(host)]" : host
        let portText = hasExplicitPort ? ":\(port)" : ""
        return "\(scheme.rawValue)://\(hostText)\(portText)/\(app)"
    }

    /// The connect command's `tcUrl`: the URL up to the application, never the key.
    package var tcUrl: String { base }

    /// The complete URL including the key. Never log it.
    package var fullURL: String {
        guard let streamKey else { return base }
        return base + "/" + streamKey
    }

    /// The URL with the key replaced by "****" and a query string (`?token=...`, which may be a
    /// credential) by "?****": the only form safe for messages, stats and logs.
    package var redacted: String {
        let shown = Self.redactingQuery(base)
        return streamKey == nil ? shown : shown + "/****"
    }

    /// The application with a query string replaced by "?****", for messages.
    var redactedApp: String { Self.redactingQuery(app) }

    /// `text` with everything after its first "?" replaced by "****".
    package static func redactingQuery(_ text: String) -> String {
        guard let q = text.firstIndex(of: "?") else { return text }
        return text[...q] + "****"
    }
}
