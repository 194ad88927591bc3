import Synchronization

/// What the endpoint's receiver reports say about our video track: written by the `bk-whip-rx`
/// thread, read by the bitrate controller's tick. Made once per publisher, so neither side holds
/// the other's per-connection objects.
package final class WHIPReceiverReports: Sendable {
    /// Report blocks about the video SSRC so far.
    package let count = Atomic<Int>(0)
    /// The latest block's fraction lost, in 1/256.
    package let fractionLost = Atomic<Int>(0)

    package init() {}

    /// A new connection: nothing reported yet.
    package func reset() {
        fractionLost.store(0, ordering: .relaxed)
        count.store(0, ordering: .releasing)
    }
}
