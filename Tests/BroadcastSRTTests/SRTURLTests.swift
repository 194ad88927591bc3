import Testing
@testable import BroadcastSRT
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("SRT URLs", .timeLimit(.minutes(1)))
struct SRTURLTests {
    @Test func parsesHostPortAndParameters() throws {
        let u = try SRTURL(parsing: "srt://ingest.example:9000?streamid=live%2Fabc&latency=300&passphrase=0123456789ab&mode=caller")
        #expect(u.host == "ingest.example" && u.port == 9000)
        #expect(u.streamID == "live/abc")
        #expect(u.latencyMs == 300)
        #expect(u.passphrase == "0123456789ab")
        #expect(u.redacted == "srt://ingest.example:9000?****", "the query (stream id, passphrase) never shows")
        let v6 = try SRTURL(parsing: "srt://[::1]:7001")
        #expect(v6.host == "::1" && v6.port == 7001 && v6.latencyMs == SRTURL.defaultLatencyMs)
        #expect(v6.redacted == "srt://[::1]:7001")
        #expect(try SRTURL(parsing: "srt://h:1/?streamid=x").streamID == "x")
    }

    @Test(arguments: [
        ("srt://host", SRTURLError.missingPort),
        ("srt://:9000", .missingHost),
        ("srt://h:0", .invalidPort("0")),
        ("srt://h:70000", .invalidPort("70000")),
        ("srt://h:1/live/key", .pathNotSupported),
        ("srt://h:1?foo=1", .unknownParameter),
        ("srt://h:1?sk_typed_here", .invalidParameter("a query parameter", "needs a value (NAME=VALUE)")),
        ("srt://h:1?latency=5", .invalidParameter("latency", "must be 20 to 8000 ms")),
        ("srt://h:1?passphrase=short", .invalidParameter("passphrase", "must be 10 to 79 characters")),
        ("srt://h:1?mode=listener", .invalidParameter("mode", "must be caller (broadcast connects to a listening receiver)")),
        ("srt://h:1?streamid=%zz", .invalidParameter("streamid", "is not valid percent-encoded UTF-8")),
        ("srt://h:1?streamid=a%0Ab", .invalidParameter("streamid", "is not valid percent-encoded UTF-8")),
        ("rtmp://h/live", .notSRT),
        ("srt://[ssphrase=0123&pbke::1]:9000", .invalidParameter("host", "in brackets must be an IPv6 address")),
        ("srt://[example.com]:9000", .invalidParameter("host", "in brackets must be an IPv6 address")),
    ])
    func refusesBadURLs(url: String, expected: SRTURLError) {
        #expect(throws: expected) { try SRTURL(parsing: url) }
    }

    @Test func errorsNeverEchoTheQuery() {
        let secret = "sk_secret_0123456789"
        for url in ["srt://h:1?streamid=\(secret)&x=\(secret)", "srt://h:1?passphrase=\(secret)&latency=1",
                    "srt://h:1?passphrase&\(secret)", "srt://h:1?\(secret)=1", "srt://h:\(secret)"] {
            do { _ = try SRTURL(parsing: url); Issue.record("accepted \(url)") } catch {
                #expect(!"\(error)".contains(secret))
            }
        }
    }

    /// Found by `scripts/fuzz --target srt-url`: outside bytes in a refusal are never raw control
    /// characters, and no query text (a secret typed in the wrong place) is repeated.
    @Test func refusalsQuoteNoControlBytesAndNoQuery() {
        for url in ["srt://.a:\u{FFFD}id=\u{01}\u{00}K@9693?streamid=x", "srt://[::1]:9000?passphrase&0246913578abcdef"] {
            do { _ = try SRTURL(parsing: url); Issue.record("accepted \(url.debugDescription)") } catch {
                let m = "\(error)"
                #expect(!m.unicodeScalars.contains { $0.value < 0x20 }, "\(m.debugDescription)")
                #expect(!m.contains("0246913578abcdef"))
            }
        }
    }

    @Test func buffersFitTheLatencyWindowAndHaveAFloor() {
        let b = SRTBuffers(latencyMs: 120, maxBitrateKbps: 4000)
        #expect(b.sendBufferBytes == 4000 * 125 * 1120 / 1000 * 5 / 4)
        #expect(SRTBuffers(latencyMs: 120, maxBitrateKbps: 100).sendBufferBytes == 256 << 10)
        #expect(b.plannedBytes > b.sendBufferBytes + b.receiveBufferBytes)
    }
}
