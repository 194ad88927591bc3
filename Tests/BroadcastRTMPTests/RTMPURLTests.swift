import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct RTMPURLTests {
    @Test func parsesAppWithoutKey() throws {
        let u = try RTMPURL(parsing: "rtmp://live.example.com/app")
        #expect(u.scheme == .rtmp)
        #expect(u.host == "live.example.com")
        #expect(u.port == 1935)
        #expect(u.app == "app")
        #expect(u.streamKey == nil)
        #expect(u.redacted == "rtmp://live.example.com/app")
        #expect(u.fullURL == "rtmp://live.example.com/app")
    }

    @Test func parsesKeyInPathAndRedactsIt() throws {
        let u = try RTMPURL(parsing: "rtmps://ingest.example.com:4443/live2/abc-SECRET?backup=1")
        #expect(u.scheme == .rtmps)
        #expect(u.port == 4443)
        #expect(u.app == "live2")
        #expect(u.streamKey == "abc-SECRET?backup=1")
        #expect(u.redacted == "rtmps://ingest.example.com:4443/live2/****")
        #expect(u.fullURL == "rtmps://ingest.example.com:4443/live2/abc-SECRET?backup=1")
    }

    @Test func rtmpsDefaultsTo443() throws {
        let u = try RTMPURL(parsing: "RTMPS://live-api-s.example.com/rtmp/")
        #expect(u.port == 443)
        #expect(!u.hasExplicitPort)
        #expect(u.app == "rtmp")
        #expect(u.streamKey == nil)
    }

    @Test func joinsBaseAndKey() throws {
        let u = try RTMPURL(url: "rtmp://h/live/", streamKey: "k-SECRET")
        #expect(u.app == "live")
        #expect(u.fullURL == "rtmp://h/live/k-SECRET")
        #expect(u.redacted == "rtmp://h/live/****")
        let instance = try RTMPURL(url: "rtmp://h:1936/app/inst", streamKey: "k")
        #expect(instance.app == "app/inst")
        #expect(instance.fullURL == "rtmp://h:1936/app/inst/k")
        let keyInURL = try RTMPURL(url: "rtmp://h/live/k2", streamKey: "")
        #expect(keyInURL.streamKey == "k2")
    }

    @Test func parsesIPv6Literal() throws {
        let u = try RTMPURL(parsing: "rtmp://[::1]:19350/live/x")
        #expect(u.host == "::1")
        #expect(u.port == 19350)
        #expect(u.redacted == "rtmp://[::1]:19350/live/****")
    }

    @Test(arguments: [
        ("", RTMPURLError.empty),
        ("http://host/live/SECRET", .unsupportedScheme("http")),
        ("host/live/SECRET", .unsupportedScheme("host/liv")),
        ("rtmp:///live/SECRET", .missingHost),
        ("rtmp://host", .missingApp),
        ("rtmp://host/", .missingApp),
        ("rtmp://host:99999/live/SECRET", .invalidPort("99999")),
        ("rtmp://host:abc/live/SECRET", .invalidPort("abc")),
        ("rtmp://user:pw@host/live/SECRET", .credentialsNotSupported),
    ])
    func rejectsBadURLs(url: String, expected: RTMPURLError) {
        do {
            _ = try RTMPURL(parsing: url)
            Issue.record("accepted \(url)")
        } catch {
            #expect(error == expected)
            #expect(!error.description.contains("SECRET"))
            #expect(!error.description.isEmpty)
        }
    }
}
