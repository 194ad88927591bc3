import Synchronization

/// What the endpoint's receiver reports (and REMB) say about our video track: written by the `bk-whip-rx`
/// thread, read by the bitrate controller's tick. Made once per publisher, so neither side holds
/// the other's per-connection objects.
package final class WHIPReceiverReports: Sendable {
    /// Report blocks about the video SSRC so far.
    package let count = Atomic<Int>(0)
    /// The latest block's fraction lost, in 1/256.
    package let fractionLost = Atomic<Int>(0)
    /// The latest REMB about the video SSRC in bit/s, and when it arrived (CLOCK_MONOTONIC ns; 0: none yet).
    package let estimateBps = Atomic<Int>(0)
    package let estimateAtNs = Atomic<Int64>(0)
    /// REMB packets taken (stats, tests).
    package let estimates = Atomic<Int>(0)

    package init() {}

    /// A new connection: nothing reported yet.
    package func reset() {
        fractionLost.store(0, ordering: .relaxed)
        estimateAtNs.store(0, ordering: .relaxed)
        count.store(0, ordering: .releasing)
    }

    /// An estimate older than this is stale: the receiver stopped sending them (or the path died).
    package static let estimateLifetimeNs: Int64 = 5_000_000_000

    /// The latest estimate in kbit/s, nil before the first REMB and when none arrived for 5 s.
    package func estimateKbps(nowNs: Int64) -> Int? {
        let at = estimateAtNs.load(ordering: .acquiring)
        guard at != 0, nowNs - at <= Self.estimateLifetimeNs else { return nil }
        return estimateBps.load(ordering: .relaxed) / 1000
    }

    /// A REMB arrived at `nowNs`.
    package func noteEstimate(bitsPerSecond: UInt64, nowNs: Int64) {
        estimateBps.store(Int(min(bitsPerSecond, UInt64(Int.max))), ordering: .relaxed)
        estimateAtNs.store(max(1, nowNs), ordering: .releasing)
        estimates.add(1, ordering: .relaxed)
    }
}
