import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// What the endpoint's receiver reports (and REMB) say about our video track: written by the `bk-whip-rx`
/// thread, read by the bitrate controller's tick. Made once per publisher, so neither side holds
/// the other's per-connection objects.
final class WHIPReceiverReports: Sendable {
    /// Report blocks about the video SSRC so far.
    let count = Atomic<Int>(0)
    /// The latest block's fraction lost, in 1/256.
    let fractionLost = Atomic<Int>(0)
    /// The latest REMB about the video SSRC in bit/s, and when it arrived (CLOCK_MONOTONIC ns; 0: none yet).
    let estimateBps = Atomic<Int>(0)
    let estimateAtNs = Atomic<Int64>(0)
    /// REMB packets taken (stats, tests).
    let estimates = Atomic<Int>(0)
    /// The latest block's highest sequence number received (its low 16 bits) and cumulative loss:
    /// the sender thread's `RTPDeliveryMeter` takes each new one.
    struct Block: Sendable {
        var highest: UInt16 = 0
        var cumulativeLost = 0
    }
    let latestBlock = Locked(Block())
    /// The rate the path carried over the latest measured report span (`RTPDeliveryMeter`), kbit/s
    /// with audio, and when it was measured (CLOCK_MONOTONIC ns; 0: none yet).
    private let delivered = Atomic<Int>(0)
    private let deliveredAtNs = Atomic<Int64>(0)

    init() {}

    /// A new connection: nothing reported yet.
    func reset() {
        fractionLost.store(0, ordering: .relaxed)
        estimateAtNs.store(0, ordering: .relaxed)
        deliveredAtNs.store(0, ordering: .relaxed)
        latestBlock.withLock { $0 = Block() }
        count.store(0, ordering: .releasing)
    }

    /// An estimate older than this is stale: the receiver stopped sending them (or the path died).
    static let estimateLifetimeNs: Int64 = 5_000_000_000

    /// The latest estimate in kbit/s, nil before the first REMB and when none arrived for 5 s.
    func estimateKbps(nowNs: Int64) -> Int? {
        let at = estimateAtNs.load(ordering: .acquiring)
        guard at != 0, nowNs - at <= Self.estimateLifetimeNs else { return nil }
        return estimateBps.load(ordering: .relaxed) / 1000
    }

    /// A REMB arrived at `nowNs`.
    func noteEstimate(bitsPerSecond: UInt64, nowNs: Int64) {
        estimateBps.store(Int(min(bitsPerSecond, UInt64(Int.max))), ordering: .relaxed)
        estimateAtNs.store(max(1, nowNs), ordering: .releasing)
        estimates.add(1, ordering: .relaxed)
    }

    /// A report block about our video arrived (the `bk-whip-rx` thread).
    func noteBlock(fractionLost fraction: Int, highest: UInt16, cumulativeLost: Int) {
        fractionLost.store(fraction, ordering: .relaxed)
        latestBlock.withLock { $0 = Block(highest: highest, cumulativeLost: cumulativeLost) }
        count.add(1, ordering: .releasing)
    }

    /// A measurement older than this describes a path that may have changed since.
    static let deliveredLifetimeNs: Int64 = 3_000_000_000

    /// The sender thread measured the rate the path carried (`RTPDeliveryMeter.take`).
    func noteDelivered(kbps: Int, nowNs: Int64) {
        delivered.store(kbps, ordering: .relaxed)
        deliveredAtNs.store(max(1, nowNs), ordering: .releasing)
    }

    /// The latest measured rate in kbit/s, nil before the first and when none was measured for 3 s.
    func deliveredKbps(nowNs: Int64) -> Int? {
        let at = deliveredAtNs.load(ordering: .acquiring)
        guard at != 0, nowNs - at <= Self.deliveredLifetimeNs else { return nil }
        return delivered.load(ordering: .relaxed)
    }
}
