import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// Issue 22, defect 4: a recording whose end did not reach the disk (its last flush, sync or
/// close failed) is a lost destination, and the run's only output being lost fails the run.
@Suite(.timeLimit(.minutes(1))) struct ClosingSinkTests {
    /// A file-like sink whose `close` fails, as `MP4FileSink` does when the last GOP hits ENOSPC.
    final class FailingCloseSink: PacketSink, ClosingSink, @unchecked Sendable {
        var displayName: String { "/tmp/a.mp4" }
        private(set) var closeFailure: TransportError?
        var failOnClose = true
        func open() throws(TransportError) {}
        func write(_ packet: EncodedPacket) throws(TransportError) {}
        func close() {
            if failOnClose { closeFailure = .fileError("/tmp/a.mp4: write failed after 100 bytes, file kept valid: No space left on device (errno 28)") }
        }
    }

    @Test func aFailedCloseFailsTheDestinationAndTheRun() throws {
        let sink = FailingCloseSink()
        let d = Destination(sink: sink, policy: CongestionPolicy(), isPrimary: true, stats: BroadcastStats())
        try d.open()
        d.finish(deadlineNs: MediaTime.now() + 500_000_000)
        #expect(d.state == .failed)
        #expect(d.error == sink.closeFailure)
        var failure: BroadcastError?
        var events: [BroadcastEvent] = []
        DestinationSet([d]).reportNewFailures(onEvent: { events.append($0) }, onFailure: { failure = $0 })
        #expect(failure?.exitCode == 4, "the only output lost its end: exit 4")
        #expect(events.count == 1)
    }

    @Test func aCleanCloseIsAClosedDestination() throws {
        let sink = FailingCloseSink()
        sink.failOnClose = false
        let d = Destination(sink: sink, policy: CongestionPolicy(), isPrimary: true, stats: BroadcastStats())
        try d.open()
        d.finish(deadlineNs: MediaTime.now() + 500_000_000)
        #expect(d.state == .closed)
        #expect(d.error == nil)
    }
}
