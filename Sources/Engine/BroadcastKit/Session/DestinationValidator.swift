import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// The one check of a network destination's URL and key, before anything opens: the CLI, the C
/// ABI (`bk_config_add_destination`, at once), and `BroadcastConfiguration.validate()` (every
/// Swift embedder, and Python and GStreamer through the C ABI) call it, so a refusal reads the same
/// wherever it came from. Messages never hold the key (the URL's query is not shown either).
package enum DestinationValidator {
    /// What kind of network destination a URL names, by its scheme (`DestinationSettings.network`).
    enum Kind: Sendable, Equatable { case rtmp, srt, whip }

    static func kind(of url: String) -> Kind {
        WHIPURL.isWHIP(url) ? .whip : SRTURL.isSRT(url) ? .srt : .rtmp
    }

    /// Checks `url` for its scheme and the key (`keyUTF8`, empty: none given) by `StreamKeyRule`.
    ///
    /// RTMP(S): a key given, or else a key in the URL's path, obeys the rule (the key is the last
    /// path element: `a/b` would publish under another name). SRT: a key given fills the stream id
    /// and obeys the rule. WHIP: the key is a bearer token, not a path element; `/` and `#` are
    /// legal there, so only a token the HTTP header cannot carry is refused. The key is read as
    /// bytes, so a caller holding it in wipeable memory never has to make it a `String`.
    package static func check<Key: Collection<UInt8>>(url: String, keyUTF8: Key) throws(BroadcastError) {
        switch kind(of: url) {
        case .whip:
            do { _ = try WHIPURL(parsing: url) } catch { throw .configuration("\(error)") }
            if keyUTF8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
                throw .configuration("the bearer token contains a control character")
            }
        case .srt:
            do { _ = try SRTURL(parsing: url) } catch { throw .configuration("\(error)") }
            if !keyUTF8.isEmpty, let why = StreamKeyRule.refusal(utf8: keyUTF8) { throw .configuration(why) }
        case .rtmp:
            let parsed: RTMPURL
            do { parsed = try RTMPURL(parsing: url) } catch { throw .configuration("\(error)") }
            if !keyUTF8.isEmpty {
                if let why = StreamKeyRule.refusal(utf8: keyUTF8) { throw .configuration(why) }
            } else if let inPath = parsed.streamKey, let why = StreamKeyRule.refusal(inPath) {
                throw .configuration("the key in the URL's path: " + why)
            }
        }
    }

    /// Every network destination of `cfg`, and what they need of the rest of it: a WHIP
    /// destination Opus audio, an SRT passphrase 10 to 79 characters.
    static func check(_ cfg: BroadcastConfiguration) throws(BroadcastError) {
        for d in cfg.destinations {
            switch d {
            case .rtmp(let url, let key):
                try check(url: url, keyUTF8: key.utf8)
            case .srt(let url, let key, let passphrase):
                try check(url: url, keyUTF8: key.utf8)
                if let p = passphrase, !SRTURL.passphraseLengths.contains(p.count) {
                    throw .configuration("SRT passphrase must be 10 to 79 characters")
                }
            case .whip(let url, let token):
                try check(url: url, keyUTF8: token.utf8)
                if cfg.hasAudio && cfg.audio.codec != .opus {
                    throw .configuration("a WHIP destination needs Opus audio: AAC cannot be sent over WebRTC")
                }
            case .file, .discard, .custom:
                continue
            }
        }
    }
}
