#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import Synchronization

/// SIGUSR1 requests a replay clip. The handler only counts (an atomic add is async-signal-safe);
/// the stream loop notices the count change and asks the session to save.
let replaySignals = Atomic<Int>(0)

enum ReplaySignal {
    /// Where a SIGUSR1 save is announced to subscribers, with `--control`.
    nonisolated(unsafe) static var control: ControlServer?

    static func install() {
        var sa = sigaction()
        sa.__sigaction_handler.sa_handler = { _ in _ = replaySignals.add(1, ordering: .relaxed) }
        sigemptyset(&sa.sa_mask)
        sa.sa_flags = SA_RESTART
        sigaction(SIGUSR1, &sa, nil)
    }

    /// Requests counted so far.
    static var count: Int { replaySignals.load(ordering: .relaxed) }

    /// Formats a saved clip's line and control event once, unsent, so their code is resident
    /// before the first clip (see `BroadcastSession.rehearseReplaySave`).
    static func rehearseAnnouncement() {
        let clip = ReplayClip(path: "/rehearsal.mp4", durationSeconds: 30, bytes: 1)
        let line = "replay: saved \(clip.path) (\(fixed(clip.durationSeconds, 1)) s, \(clip.bytes) bytes)"
            + "{\"event\":\"replay-saved\",\(ControlServer.clipJSON(clip))}"
        rehearsed.store(line.utf8.count, ordering: .relaxed)
    }
    private static let rehearsed = Atomic<Int>(0)

    /// Starts a save for a SIGUSR1 (or says why there is nothing to save). Failures are printed
    /// by the session's warning event; success here.
    static func save(_ session: BroadcastSession, quiet: Bool) {
        guard session.configuration.replay.seconds > 0 else {
            say("warning: SIGUSR1 ignored: no replay buffer (use --replay-seconds N)")
            return
        }
        let control = control
        session.saveReplay { result in
            if case .success(let clip) = result {
                control?.publish("{\"event\":\"replay-saved\",\(ControlServer.clipJSON(clip))}")
                if !quiet { say("replay: saved \(clip.path) (\(fixed(clip.durationSeconds, 1)) s, \(clip.bytes) bytes)") }
            }
        }
    }
}

/// `--replay-seconds` / `--replay-dir` checks made before anything starts.
enum ReplayOptionsCheck {
    /// The clip directory must exist and be writable.
    static func check(_ o: CommandLineOptions) throws(ConfigurationError) {
        guard let dir = o.replayDirectory else { return }
        guard o.replaySeconds != nil else {
            throw ConfigurationError(.usage, "--replay-dir needs --replay-seconds N")
        }
        var st = stat()
        guard stat(dir, &st) == 0 else {
            throw ConfigurationError(.usage, "--replay-dir \(dir): \(SystemError.describe())")
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw ConfigurationError(.usage, "--replay-dir \(dir): not a directory")
        }
        guard access(dir, W_OK | X_OK) == 0 else {
            throw ConfigurationError(.usage, "--replay-dir \(dir): not writable: \(SystemError.describe())")
        }
    }

    /// The session's replay settings from the options.
    static func settings(_ o: CommandLineOptions) -> ReplaySettings {
        ReplaySettings(seconds: o.replaySeconds ?? 0, directory: o.replayDirectory ?? ".")
    }
}
