import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("WHIP URLs", .timeLimit(.minutes(1)))
struct WHIPURLTests {
    @Test func parsesAndRedacts() throws {
        let u = try WHIPURL(parsing: "https://ingest.example/whip/live?token=abc")
        #expect(u.isTLS && u.host == "ingest.example" && u.port == 443 && u.target == "/whip/live?token=abc")
        #expect(u.redacted == "https://ingest.example:443/whip/live?****", "a query may hold a secret")
        let local = try WHIPURL(parsing: "http://127.0.0.1:8889/whip")
        #expect(!local.isTLS && local.port == 8889 && local.redacted == "http://127.0.0.1:8889/whip")
        #expect(try WHIPURL(parsing: "http://[::1]:9/x").host == "::1")
        #expect(WHIPURL.isWHIP("HTTPS://x") && !WHIPURL.isWHIP("rtmp://x") && !WHIPURL.isWHIP("srt://x:1"))
    }

    @Test(arguments: ["http://", "http://h:0/x", "http://h:99999/", "https://user:pw@h/x", "http://h/a b", "ftp://h/",
                      "http://evil\r\nX-Injected: 1/whip", "http://a\r\nX-Injected:1/w", "http://h x/whip", "http://h%0d%0a/whip", "http://[::1\n]:9/x"])
    func refusesBadURLs(_ text: String) {
        #expect(throws: TransportError.self) { try WHIPURL(parsing: text) }
    }

    @Test func resolvesLocation() throws {
        let u = try WHIPURL(parsing: "http://h:8080/whip/live")
        #expect(u.resource("/whip/resource/1")?.target == "/whip/resource/1")
        #expect(u.resource("res/1")?.target == "/whip/res/1")
        let abs = u.resource("http://H:8080/r/9")
        #expect(abs?.host == "H" && abs?.isTLS == false && abs?.target == "/r/9")
        // The DELETE carries the bearer token: never to another host, port or scheme.
        #expect(u.resource("https://other:443/r/9") == nil)
        #expect(u.resource("http://other:8080/r/9") == nil)
        #expect(u.resource("http://h:8081/r/9") == nil)
        let tls = try WHIPURL(parsing: "https://h/whip")
        #expect(tls.resource("http://h:443/r") == nil, "no downgrade from https to http")
        #expect(u.resource("/a b") == nil)
    }
}
