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

/// The session's seams (issue 25): the event handler is fixed before start, and the version
/// lives in one place.
@Suite(.timeLimit(.minutes(2))) struct SessionSeamsTests {
    private static func configuration() -> BroadcastConfiguration {
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 300, preset: "ultrafast",
                                         threads: 1, slicedThreads: false)
        cfg.destinations = [.discard]
        cfg.memoryBudgetBytes = 0
        cfg.adaptiveBitrate = false
        return cfg
    }

    @Test func eventHandlerSetBeforeStartHearsTheRun() throws {
        let session = BroadcastSession(configuration: Self.configuration())
        let heard = SeamEventLog()
        session.onEvent = { heard.add($0) }
        try session.start()
        session.finish()
        #expect(heard.started && heard.finished)
    }

    /// Session threads read the handler without a lock: setting it once they run would be a data
    /// race, so it is a precondition failure (in a child process: an exit test).
    @Test func settingTheEventHandlerAfterStartIsRefused() async {
        await #expect(processExitsWith: .failure) {
            let session = BroadcastSession(configuration: SessionSeamsTests.configuration())
            try? session.start()
            session.onEvent = { _ in }
        }
    }

    @Test func versionIsBuiltFromOneNumber() {
        #expect(BuildVersion.description.hasPrefix(BuildVersion.number + " ("))
        #expect(BuildVersion.number.split(separator: ".").count == 3)
    }
}

private final class SeamEventLog: @unchecked Sendable {
    private let lock = ConditionLock()
    private var events: [String] = []
    func add(_ e: BroadcastEvent) { lock.withLock { events.append("\(e)") } }
    var started: Bool { lock.withLock { events.contains { $0.hasPrefix("started") } } }
    var finished: Bool { lock.withLock { events.contains { $0 == "finished" } } }
}
