import Testing
@testable import BroadcastKit

/// Each case fails on the old rule, which charged three quarters of the latest fraction against
/// the bytes sent since the previous call, every call, whatever the fraction.
@Suite("WHIP loss rule (Google congestion control)", .timeLimit(.minutes(1)))
struct WHIPLossRuleTests {
    @Test func overTenPercentCutsByHalfTheLoss() {
        var r = WHIPLossRule(bytesSent: 0)
        // 64/256 = 25% lost of 100 000 bytes: estimate × (1 − 0.125) → 12 500 bytes charged (old: 18 750).
        #expect(r.apply(reports: 1, fraction: 64, bytesSent: 100_000) == 12_500)
        // 26/256 (10.2%) is over the line: 51 200 · 26 / 512 = 2 600 more.
        #expect(r.apply(reports: 2, fraction: 26, bytesSent: 151_200) == 15_100)
    }

    @Test func twoToTenPercentHolds() {
        var r = WHIPLossRule(bytesSent: 0)
        for (n, f) in [5, 13, 25].enumerated() {  // 2.0%, 5.1%, 9.8%: no cut (old: a share of each)
            #expect(r.apply(reports: n + 1, fraction: f, bytesSent: (n + 1) * 100_000) == 0, "fraction \(f)/256")
        }
        #expect(r.reportsUsed == 3)
    }

    @Test func underTwoPercentChargesNothing() {
        var r = WHIPLossRule(bytesSent: 0)
        #expect(r.apply(reports: 1, fraction: 4, bytesSent: 1_000_000) == 0, "1.6% lost: the estimate may rise")
        #expect(r.apply(reports: 2, fraction: 0, bytesSent: 2_000_000) == 0)
    }

    @Test func aReportIsUsedOnce() {
        var r = WHIPLossRule(bytesSent: 0)
        #expect(r.apply(reports: 1, fraction: 128, bytesSent: 100_000) == 25_000)
        // The controller asks every second; no new report came, so nothing more (old: charged again).
        #expect(r.apply(reports: 1, fraction: 128, bytesSent: 200_000) == 25_000)
        #expect(r.apply(reports: 1, fraction: 128, bytesSent: 300_000) == 25_000)
        // The next report covers every byte since the one before: 200 000 · 128 / 512.
        #expect(r.apply(reports: 2, fraction: 128, bytesSent: 300_000) == 75_000)
    }

    @Test func aNewConnectionCountsItsReportsFromZero() {
        var r = WHIPLossRule(bytesSent: 0)
        #expect(r.apply(reports: 3, fraction: 128, bytesSent: 100_000) == 25_000)
        r.restart(bytesSent: 500_000)
        #expect(r.apply(reports: 1, fraction: 128, bytesSent: 600_000) == 50_000, "only bytes since the restart")
    }
}
