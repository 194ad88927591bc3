import Testing
@testable import BroadcastKit

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
}
