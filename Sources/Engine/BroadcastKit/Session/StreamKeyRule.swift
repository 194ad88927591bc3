import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// The one rule for a stream key, whatever front end it came through (the CLI's `--key`,
/// `--key-file`, `$STREAM_KEY` or a URL's path; the C ABI's `bk_config_add_destination`; Python;
/// GStreamer's `stream-key`): every front end reports a refusal in these words.
///
/// A key is the last path element of an RTMP ingest URL (and an SRT stream id or a WHIP bearer
/// token when one is given): it holds no `/` (it would move the split between application and
/// stream: nginx published `a/b` under another name), no `#` (a URL fragment), no whitespace or
/// control characters, and at most `maxBytes` bytes. `?`, `&` and `=` are allowed: some services'
/// keys carry query parameters. A refusal names the character class, never the key.
public enum StreamKeyRule {
    /// Longest key accepted, in bytes (real keys are tens of bytes; RTMP's publish command must
    /// still fit its 4 KB buffer with the URL).
    public static let maxBytes = 1024

    /// Why `key` is refused, or nil when it is a usable key. The empty key is refused here; the
    /// destinations that may go without one (SRT, WHIP) do not ask.
    public static func refusal(_ key: String) -> String? { refusal(utf8: key.utf8) }

    /// `refusal(_:)` over the key's UTF-8 bytes (the C ABI checks the key where it holds it, in
    /// memory it wipes). Every refused character is ASCII, and no byte of a multi-byte UTF-8
    /// sequence is below 0x80, so a byte scan finds exactly what a scan of the characters would.
    public static func refusal<Bytes: Collection<UInt8>>(utf8 key: Bytes) -> String? {
        if key.isEmpty { return "the stream key is empty" }
        if key.count > maxBytes { return "the stream key is longer than \(maxBytes) bytes" }
        for b in key {
            let what: String
            switch b {
            case 0x2F: what = "'/'"
            case 0x23: what = "'#'"
            case 0x20, 0x09: what = "whitespace"
            case _ where b < 0x20 || b == 0x7F: what = "a control character"
            default: continue
            }
            return "the stream key contains \(what); a key has no '/', '#', whitespace or control characters"
        }
        return nil
    }

    /// Throws `.configuration` with `refusal(key)`.
    public static func check(_ key: String) throws(BroadcastError) {
        if let why = refusal(key) { throw .configuration(why) }
    }
}
