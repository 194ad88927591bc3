import BroadcastCore


/// Capture-to-socket latency of video frames: fixed 0.1 ms buckets up to 5 s (plus overflow),
/// so recording a sample never allocates and percentiles need no stored samples.
package final class LatencyHistogram: Sendable {
    static let bucketNs: Int64 = 100_000
    static let bucketCount = 50_000
    private let buckets: Locked<[UInt32]>

    init() { buckets = Locked([UInt32](repeating: 0, count: LatencyHistogram.bucketCount + 1)) }

    func record(_ ns: Int64) {
        let i = Int(min(max(0, ns / LatencyHistogram.bucketNs), Int64(LatencyHistogram.bucketCount)))
        buckets.withLock { $0[i] &+= 1 }
    }

    /// The latency (ms) below which `fraction` of the samples fall, or nil without samples.
    package func percentileMs(_ fraction: Double) -> Double? {
        buckets.withLock { b in
            let total = b.reduce(0) { $0 + Int($1) }
            guard total > 0 else { return nil }
            let target = Int((Double(total) * fraction).rounded(.up))
            var seen = 0
            for (i, n) in b.enumerated() {
                seen += Int(n)
                if seen >= max(1, target) { return Double(Int64(i + 1) * LatencyHistogram.bucketNs) / 1e6 }
            }
            return Double(Int64(b.count) * LatencyHistogram.bucketNs) / 1e6
        }
    }

    var count: Int { buckets.withLock { $0.reduce(0) { $0 + Int($1) } } }
}
