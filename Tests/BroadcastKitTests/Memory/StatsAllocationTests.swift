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

/// Issue 23: the once-a-second stats path and the drop counters allocate nothing (counted on the
/// calling thread by tools/allocshim, which scripts/test preloads).
@Suite(.timeLimit(.minutes(1))) struct StatsAllocationTests {
    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)"))
    func countingDropsWhileASnapshotIsHeldDoesNotAllocate() {
        let stats = BroadcastStats()
        stats.countDrop(.encoderBusy)
        let held = stats.snapshot()   // what a reporter keeps as `previous`
        let before = AllocationCounter.thisThread()
        for _ in 0..<100 { stats.countDrop(.encoderBusy); stats.countDrop(.queueFull, 2) }
        let allocations = AllocationCounter.thisThread() - before
        #expect(allocations == 0)
        #expect(held.drops(.encoderBusy) == 1)
        let now = stats.snapshot()
        #expect(now.drops(.encoderBusy) == 101 && now.drops(.queueFull) == 200 && now.totalDrops == 301)
    }

    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)"))
    func statsReportIntoItsBufferDoesNotAllocate() {
        let stats = BroadcastStats()
        stats.countDrop(.malformed, 3)
        let buffer = ReportBuffer(capacity: 16 << 10)
        let destinations = [DestinationStats(name: "rtmp://host/app/****", kind: "rtmp", state: "live", kbps: 2500.5,
                                             bytesSent: 123, queueBytes: 4, queueMs: 5, drops: 6, reconnects: 7,
                                             downtimeSeconds: 0.25)]
        var previous: StatsSnapshot? = nil
        _ = ProcessMemory.sample()   // its buffer is made on first use
        // One report first: the process's one-time statics (the drop-reason table) are made on the
        // first report of the run, whichever test makes it; steady state is what is counted.
        StatsReport(stats.snapshot(), previous: nil, startNs: 0, state: "live", latencyMs: (12.5, 40),
                    destinations: destinations, downtimeSeconds: 1.5).write(into: buffer)
        let before = AllocationCounter.thisThread()
        for _ in 0..<50 {
            let snap = stats.snapshot()
            let report = StatsReport(snap, previous: previous, startNs: 0, state: "live", latencyMs: (12.5, 40),
                                     destinations: destinations, downtimeSeconds: 1.5)
            previous = snap
            buffer.clear()
            report.write(into: buffer)
        }
        let allocations = AllocationCounter.thisThread() - before
        #expect(allocations == 0)
        #expect(!buffer.overflowed)
    }

    @Test func bufferedJSONMatchesTheStringForm() throws {
        let stats = BroadcastStats()
        stats.countDrop(.congestionPFrame, 4)
        let d = DestinationStats(name: "a \"quoted\"\nname\u{1}", kind: "file", state: "closed", kbps: -0.04,
                                 bytesSent: 1, queueBytes: 2, queueMs: 3, drops: 4, reconnects: 5, downtimeSeconds: 12.345)
        let report = StatsReport(stats.snapshot(), previous: nil, startNs: 0, state: "finished", latencyMs: nil,
                                 destinations: [d, d], downtimeSeconds: 0)
        let text = report.json
        #expect(text.hasPrefix("{\"time_s\":") && text.hasSuffix("}]}"))
        #expect(text.contains("\"congestion_p_frame\":4,") && text.contains("\"total_drops\":4,"))
        #expect(text.contains("\"name\":\"a \\\"quoted\\\"\\nname\\u0001\""))
        #expect(text.contains("\"kbps\":0.0,") && text.contains("\"downtime_s\":12.3}"))
        #expect(text.contains("\"latency_p50_ms\":null"))
        // The same digits as fixed(_:_:), the String formatter other reports use.
        let b = ReportBuffer(capacity: 64)
        for v in [0.0, 1.5, -2.25, 123.456, 0.05, -0.004, Double.nan] {
            b.clear(); b.append(v, decimals: 2)
            #expect(b.string == fixed(v, 2), "\(v)")
        }
        b.clear(); b.append(Int.min); b.append(" "); b.append(0); b.append(" "); b.append(907)
        #expect(b.string == "\(Int.min) 0 907")
        // It never grows: past its capacity the text is cut and said so.
        let small = ReportBuffer(capacity: 8)
        small.append("0123456789")
        #expect(small.count == 8 && small.overflowed)
    }
}
