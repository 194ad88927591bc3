import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// The printed plan must not contradict its own verdict: the headroom is kept on top of the total.
@Suite(.timeLimit(.minutes(2))) struct MemoryPlanTests {
    static let mib = 1 << 20

    func plan(totalMiB: Int, budgetMiB: Int) -> MemoryPlan {
        MemoryPlan(budgetBytes: budgetMiB * Self.mib, baselineBytes: totalMiB * Self.mib, videoEncoderBytes: 0,
                   audioEncoderBytes: 0, framePoolBytes: 0, audioBytes: 0, stagingBytes: 0, queueBytes: 0)
    }

    func totalLine(_ p: MemoryPlan) -> Substring {
        p.description.split(separator: "\n").first { $0.hasPrefix("  total") }!
    }

    @Test func totalUnderTheBudgetButOverWithTheHeadroomSaysByHowMuch() {
        // 49 MiB of 50: the 4% headroom (2 MiB) makes it 51 MiB, 1 MiB over.
        let p = plan(totalMiB: 49, budgetMiB: 50)
        #expect(!p.fits)
        let line = totalLine(p)
        #expect(line.contains("49.0 MB of 50.0 MB budget"), "\(line)")
        #expect(line.contains("51.0 MB with the headroom: over by 1.0 MB"), "\(line)")
    }

    @Test func fittingPlanShowsTheTotalWithTheHeadroom() {
        let p = plan(totalMiB: 40, budgetMiB: 50)
        #expect(p.fits)
        let line = totalLine(p)
        #expect(line.contains("(42.0 MB with the headroom)"), "\(line)")
        #expect(!line.contains("over by"))
    }

    /// The session-code line counts in the total and the verdict, and is rendered in both forms.
    @Test func sessionCodeIsALineOfTheTotal() {
        var p = plan(totalMiB: 46, budgetMiB: 50)
        #expect(p.fits)
        p.sessionCodeBytes = 3 * Self.mib
        #expect(p.totalBytes == 49 * Self.mib)
        #expect(!p.fits)
        #expect(p.description.contains("session code (measured)"))
        #expect(p.json.contains("\"key\":\"session_code\""))
        p.sessionCodeBytes = 0
        #expect(!p.lines.contains { $0.key == "session_code" })
    }

    @Test func unlimitedBudgetHasNoHeadroomClause() {
        let p = plan(totalMiB: 40, budgetMiB: 0)
        #expect(p.fits)
        #expect(!totalLine(p).contains("headroom"))
    }

    /// Issue 41: the plan is a list of named lines, each stage's own, rendered as before: the
    /// fixed parts in order, then the destinations' lines, then the replay ring; every part is
    /// in the total, and the text and the JSON show the same lines.
    @Test func thePlanIsAListOfNamedLines() {
        var p = plan(totalMiB: 4, budgetMiB: 50)
        p.queueBytes = 2 * Self.mib
        p.destinationLines = [MemoryPlan.Line(key: "rtmp_readers", label: "RTMP readers", bytes: 300_000)]
        p.replaySeconds = 30
        p.replayBytes = 5 * Self.mib
        p.destinationLines = [MemoryPlan.Line(key: "srt_buffers", label: "SRT buffers", bytes: 400_000),
                              MemoryPlan.Line(key: "relay", label: "relay", bytes: 0)]
        #expect(p.parts.map(\.key) == MemoryPlan.Part.allCases.map(\.rawValue) + ["srt_buffers", "relay", "replay_ring"])
        #expect(p.totalBytes == 4 * Self.mib + 2 * Self.mib + 400_000 + 5 * Self.mib)
        // A zero session-code line, a destination line at 0 are not shown; the ring names its seconds.
        let shown = p.lines.map(\.key)
        #expect(!shown.contains("session_code") && !shown.contains("relay") && shown.last == "replay_ring")
        #expect(p.lines.last?.label == "replay ring (30 s)")
        #expect(p.description.contains("SRT buffers") && !p.description.contains("RTMP readers"))
        for line in p.lines { #expect(p.json.contains("{\"key\":\"\(line.key)\"")) }
        p.budgetScope = .session
        #expect(p.lines.first?.key == "x264_at_open", "a session-scoped plan shows no runtime baseline")
    }
}
