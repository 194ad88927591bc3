import Testing
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// Issue 39: one rule for keys and URLs in the library, in the CLI's words, whatever the front end.
@Suite(.timeLimit(.minutes(1))) struct StreamKeyRuleTests {
    static let slash = "the stream key contains '/'; a key has no '/', '#', whitespace or control characters"

    @Test func theRuleNamesTheCharacterClassNeverTheKey() {
        #expect(StreamKeyRule.refusal("sk_live_123?bandwidthtest=true&x=1") == nil)
        #expect(StreamKeyRule.refusal("clé") == nil)
        #expect(StreamKeyRule.refusal("a/b") == Self.slash)
        #expect(StreamKeyRule.refusal("a#b")?.hasPrefix("the stream key contains '#'") == true)
        #expect(StreamKeyRule.refusal("a b")?.hasPrefix("the stream key contains whitespace") == true)
        #expect(StreamKeyRule.refusal("a\tb")?.hasPrefix("the stream key contains whitespace") == true)
        #expect(StreamKeyRule.refusal("a\u{1B}[2J")?.hasPrefix("the stream key contains a control character") == true)
        #expect(StreamKeyRule.refusal("a\u{7F}")?.hasPrefix("the stream key contains a control character") == true)
        #expect(StreamKeyRule.refusal("") == "the stream key is empty")
        #expect(StreamKeyRule.refusal(String(repeating: "k", count: StreamKeyRule.maxBytes)) == nil)
        #expect(StreamKeyRule.refusal(String(repeating: "k", count: StreamKeyRule.maxBytes + 1))
                == "the stream key is longer than 1024 bytes")
        // The byte form (the C ABI's) answers as the String form, multi-byte characters included.
        for key in ["a/b", "é#", "ok", "x\u{0}y", "€ €", ""] {
            #expect(StreamKeyRule.refusal(utf8: Array(key.utf8)) == StreamKeyRule.refusal(key))
        }
        #expect(throws: BroadcastError.configuration(Self.slash)) { try StreamKeyRule.check("a/b") }
    }

    @Test func destinationsAreCheckedByScheme() {
        func refusal(_ url: String, _ key: String) -> String? {
            do { try DestinationValidator.check(url: url, keyUTF8: key.utf8); return nil } catch { return error.description }
        }
        #expect(refusal("rtmp://127.0.0.1/live", "a/b") == Self.slash)
        #expect(refusal("rtmps://h.example/app", "a/b") == Self.slash)
        #expect(refusal("srt://127.0.0.1:9000", "a/b") == Self.slash)
        #expect(refusal("rtmp://127.0.0.1/live", "good") == nil)
        // With a key given, a path after the application is an application instance (as the CLI).
        #expect(refusal("rtmp://127.0.0.1/live/inst/x", "good") == nil)
        // Without one, the URL's last path element is the key and obeys the rule.
        #expect(refusal("rtmp://127.0.0.1/live/a/b", "") == "the key in the URL's path: " + Self.slash)
        #expect(refusal("rtmp://127.0.0.1/live/sk", "") == nil)
        // SRT and WHIP go without a key; a WHIP bearer token may hold '/' but no control character.
        #expect(refusal("srt://127.0.0.1:9000", "") == nil)
        #expect(refusal("https://whip.example/endpoint", "") == nil)
        #expect(refusal("https://whip.example/endpoint", "tok/en+=") == nil)
        #expect(refusal("https://whip.example/endpoint", "tok\r\nX-Evil: 1") == "the bearer token contains a control character")
        // The URL's own errors keep their words.
        #expect(refusal("ftp://h/app", "k")?.isEmpty == false)
        #expect(refusal("srt://h:9000/path", "")?.hasPrefix("SRT URL takes no path") == true)
    }

    /// A Swift embedder meets the same refusal at validate()/prepare(), before anything opens.
    @Test func configurationValidateRefusesTheKey() {
        var c = BroadcastConfiguration.default
        c.destinations = [.network(url: "rtmp://127.0.0.1/live", streamKey: "a/b")]
        #expect(throws: BroadcastError.configuration(Self.slash)) { try c.validate() }
        let session = BroadcastSession(configuration: c)
        #expect(throws: BroadcastError.configuration(Self.slash)) { try session.prepare() }
        c.destinations = [.network(url: "rtmp://127.0.0.1/live", streamKey: "ab")]
        #expect(throws: Never.self) { try c.validate() }
    }
}
