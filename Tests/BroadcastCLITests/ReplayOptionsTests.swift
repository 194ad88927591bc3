#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit
import Testing
@testable import BroadcastCLI

/// `--replay-seconds` and `--replay-dir`: parsing, checks, and what they set.
@Suite(.timeLimit(.minutes(2))) struct ReplayOptionsTests {
    private func build(_ args: [String]) throws -> Result<BuiltConfiguration, ConfigurationError> {
        let b = ConfigurationBuilder(environment: [:], makeSources: { _ in
            SourceFactory.Made(sources: [], hasVideo: true, hasAudio: true, note: nil)
        }, cgroupLimit: nil)
        return b.build(try CommandLineOptions.parse(args))
    }

    @Test func secondsOutsideTheRangeAreUsageErrors() {
        for v in ["0", "-3", "3601", "ten"] {
            #expect(throws: UsageError.self) { try CommandLineOptions.parse(["--replay-seconds", v]) }
        }
        #expect((try? CommandLineOptions.parse(["--replay-seconds", "30"]))?.replaySeconds == 30)
    }

    @Test func replayAloneNeedsNoDestinationAndSetsTheSettings() throws {
        let c = try build(["--no-publish", "--replay-seconds", "12", "--replay-dir", "/tmp"]).get().configuration
        #expect(c.replay == ReplaySettings(seconds: 12, directory: "/tmp"))
        #expect(c.destinations.count == 1)
        if case .discard = c.destinations[0] {} else { Issue.record("expected the discard destination") }
    }

    @Test func replayDirectoryMustBeAWritableDirectory() throws {
        let missing = try build(["--no-publish", "--replay-seconds", "5", "--replay-dir", "/nonexistent-bk/x"])
        guard case .failure(let e) = missing else { Issue.record("accepted a missing directory"); return }
        #expect(e.message.hasPrefix("--replay-dir /nonexistent-bk/x: No such file or directory"))
        guard case .failure(let f) = try build(["--no-publish", "--replay-seconds", "5", "--replay-dir", "/etc/hostname"]) else {
            Issue.record("accepted a file"); return
        }
        #expect(f.message == "--replay-dir /etc/hostname: not a directory")
        guard case .failure(let g) = try build(["--no-publish", "--record", "/tmp/x.flv", "--replay-dir", "/tmp"]) else {
            Issue.record("accepted --replay-dir alone"); return
        }
        #expect(g.message == "--replay-dir needs --replay-seconds N")
    }
}
