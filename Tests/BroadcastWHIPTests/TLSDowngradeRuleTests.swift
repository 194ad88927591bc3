import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(1))) struct TLSDowngradeRuleTests {
    @Test func onlyLeavingTLSIsRefused() {
        #expect(TLSDowngradeRule.allows(fromTLS: true, toTLS: true))
        #expect(TLSDowngradeRule.allows(fromTLS: false, toTLS: false))
        #expect(TLSDowngradeRule.allows(fromTLS: false, toTLS: true))
        #expect(!TLSDowngradeRule.allows(fromTLS: true, toTLS: false))
    }

    @Test func redirectTargetsResolve() throws {
        let base = try WHIPURL(parsing: "https://a.example/whip/live?k=1")
        #expect(base.redirect("/other")?.target == "/other")
        #expect(base.redirect("moved")?.target == "/whip/moved")
        let absolute = try #require(base.redirect("http://b.example:8080/w"))
        #expect(!absolute.isTLS && absolute.host == "b.example" && absolute.port == 8080)
        #expect(!TLSDowngradeRule.allows(fromTLS: base.isTLS, toTLS: absolute.isTLS))
        #expect(base.redirect("//evil.example/x") == nil)
        #expect(base.redirect("/with space") == nil)
    }

    @Test func theRefusalNamesNoKey() {
        let line = TLSDowngradeRule.refusal("rtmps://h/app/****", what: "the server's reconnect request", to: "rtmp://h/app/****")
        #expect(line.contains("leave TLS"))
        #expect(line.contains("rtmp://h/app/****"))
    }
}
