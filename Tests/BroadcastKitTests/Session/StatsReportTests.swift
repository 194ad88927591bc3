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

@Suite(.timeLimit(.minutes(2))) struct StatsReportTests {
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
        let a = StatsReport(first, previous: nil, startNs: 0, state: "live", latencyMs: nil, memory: .init(residentBytes: 1, peakResidentBytes: 2))
        #expect(a.fps == 30 && a.kbps == 2500)
        let b = StatsReport(second, previous: first, startNs: 0, state: "live", latencyMs: (12.34, 56.78), memory: .init(residentBytes: 1, peakResidentBytes: 2))
        #expect(b.timeSeconds == 3 && b.fps == 30 && b.kbps == 5000)
        #expect(b.json.contains("\"time_s\":3.000,\"state\":\"live\""))
        #expect(b.json.contains("\"fps\":30.00,\"kbps\":5000.0"))
        #expect(b.json.contains("\"latency_p50_ms\":12.3,\"latency_p99_ms\":56.8,"))
        #expect(a.json.contains("\"latency_p50_ms\":null"))
        for r in DropReason.allCases { #expect(a.json.contains("\"\(r.rawValue)\":0")) }
    }

    /// Each destination is one object in order, its name escaped; downtime is at the top and per destination.
    @Test func destinationsAndDowntime() {
        let d = [DestinationStats(name: "rtmp://h/live/****", kind: "rtmp", state: "live", kbps: 2512.34, bytesSent: 10,
                                  queueBytes: 20, queueMs: 30, drops: 4, reconnects: 1, downtimeSeconds: 2.26),
                 DestinationStats(name: "/tmp/a \"b\".flv", kind: "file", state: "closed", kbps: 0, bytesSent: 10,
                                  queueBytes: 0, queueMs: 0, drops: 0, reconnects: 0, downtimeSeconds: 0)]
        let r = StatsReport(StatsSnapshot(), previous: nil, startNs: 0, state: "live", latencyMs: nil,
                            destinations: d, downtimeSeconds: 2.26, memory: .init(residentBytes: 1, peakResidentBytes: 2))
        #expect(r.json.hasSuffix("\"downtime_s\":2.3,\"destinations\":["
            + "{\"name\":\"rtmp://h/live/****\",\"kind\":\"rtmp\",\"state\":\"live\",\"kbps\":2512.3,\"bytes_sent\":10,"
            + "\"queue_bytes\":20,\"queue_ms\":30,\"drops\":4,\"reconnects\":1,\"downtime_s\":2.3},"
            + "{\"name\":\"/tmp/a \\\"b\\\".flv\",\"kind\":\"file\",\"state\":\"closed\",\"kbps\":0.0,\"bytes_sent\":10,"
            + "\"queue_bytes\":0,\"queue_ms\":0,\"drops\":0,\"reconnects\":0,\"downtime_s\":0.0}]}"))
        #expect(JSONString.quoted("a\u{1}\n") == "\"a\\u0001\\n\"")
    }

    @Test func fixedDecimals() {
        #expect(fixed(2.5, 1) == "2.5")
        #expect(fixed(-0.04, 1) == "0.0")
        #expect(fixed(-1.25, 2) == "-1.25")
        #expect(fixed(7, 0) == "7")
        #expect(fixed(.nan, 2) == "0")
    }
}
