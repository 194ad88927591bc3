import Testing
@testable import BroadcastKit

@Suite struct StatsReportTests {
    /// Rates come from the interval since the previous report, the first one from the start;
    /// every drop reason is a key, and a missing latency is null, not a number.
    @Test func ratesOverTheIntervalAndEveryKey() {
        var first = StatsSnapshot()
        first.monotonicNs = 1_000_000_000
        first.videoFramesSent = 30
        first.bytesSent = 312_500
        var second = first
        second.monotonicNs = 3_000_000_000
        second.videoFramesSent = 90
        second.bytesSent = 1_562_500
        let a = StatsReport(first, previous: nil, startNs: 0, state: "live", latencyMs: nil, rssBytes: 1, peakRssBytes: 2)
        #expect(a.fps == 30 && a.kbps == 2500)
        let b = StatsReport(second, previous: first, startNs: 0, state: "live", latencyMs: (12.34, 56.78), rssBytes: 1, peakRssBytes: 2)
        #expect(b.timeSeconds == 3 && b.fps == 30 && b.kbps == 5000)
        #expect(b.json.contains("\"time_s\":3.000,\"state\":\"live\""))
        #expect(b.json.contains("\"fps\":30.00,\"kbps\":5000.0"))
        #expect(b.json.contains("\"latency_p50_ms\":12.3,\"latency_p99_ms\":56.8}"))
        #expect(a.json.contains("\"latency_p50_ms\":null"))
        for r in DropReason.allCases { #expect(a.json.contains("\"\(r.rawValue)\":0")) }
    }

    @Test func fixedDecimals() {
        #expect(fixed(2.5, 1) == "2.5")
        #expect(fixed(-0.04, 1) == "0.0")
        #expect(fixed(-1.25, 2) == "-1.25")
        #expect(fixed(7, 0) == "7")
        #expect(fixed(.nan, 2) == "0")
    }
}
