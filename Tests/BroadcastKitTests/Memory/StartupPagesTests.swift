#if canImport(Glibc)
import Glibc
#endif
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

@Suite(.timeLimit(.minutes(5)), .serialized) struct StartupPagesTests {
    /// The test runner has touched megabytes of its own code and libraries: releasing them
    /// shrinks RssFile, and the process keeps running the code it needs afterwards (relocated
    /// data is left alone, or the calls below would crash).
    @Test func releasesCleanFilePagesAndKeepsRunning() throws {
        let before = ProcessMemory.fileBytes()
        let released = try #require(ProcessTuning.releaseStartupPages())
        let after = ProcessMemory.fileBytes()
        #expect(released > 1 << 20, "released \(released) bytes")
        #expect(before > 0 && after > 0 && after < before - (512 << 10), "RssFile \(before) -> \(after) bytes")
        // Code and data from the binary, the Swift runtime and libc after the release.
        var cfg = BroadcastConfiguration.default
        cfg.destinations = [.discard]
        let plan = try BroadcastSession(configuration: cfg).prepare()
        #expect(plan.totalBytes > 0)
        // The session's code was released with the rest: building the pipeline faults it back,
        // and the plan counts that as its own measured line.
        #expect(plan.sessionCodeBytes > 0, "session code \(plan.sessionCodeBytes) bytes")
        #expect(plan.lines.contains { $0.key == "session_code" && $0.bytes == plan.sessionCodeBytes })
        #expect(String(describing: plan).contains("total"))
    }

    /// The switch is an environment variable; PATH stands in for a set one (setenv would race
    /// with other suites reading the environment).
    @Test func offWhenTheSwitchIsSet() {
        #expect(ProcessTuning.releaseStartupPages(unlessSet: "PATH") == nil)
    }
}
