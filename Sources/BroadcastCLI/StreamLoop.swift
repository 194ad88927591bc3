#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit

/// The live part of a run: a 100 ms tick for signals, duration, end of input and failures,
/// stats once a second, then a clean finish and the final report.
struct StreamLoop {
    let session: BroadcastSession
    let sources: [CaptureSource]
    let reporter: StatsReporter
    let heartbeat: Heartbeat?
    let duration: Double?
    let quiet: Bool
    /// The hidden test-only crash trigger (`BROADCAST_TEST_FAULT`), nil in normal runs.
    var testFault: TestFault? = nil

    /// How long the other inputs may run on once one input reached its end.
    static let endOfInputGraceNs: Int64 = 200_000_000

    /// Runs until a stop condition; returns the exit code.
    func run() -> ExitCode {
        let startNs = MediaTime.now()
        // Sources stop themselves at the duration; the slack lets them flush before a forced stop.
        let limitNs: Int64? = duration.map { startNs + Int64($0 * 1e9) + 3_000_000_000 }
        var nextReport = startNs + 1_000_000_000
        var exitCode = ExitCode.success
        var exitMessage: String?
        var replayRequests = ReplaySignal.count
        var endGraceNs: Int64?
        while true {
            var ts = timespec(tv_sec: 0, tv_nsec: 100_000_000)
            nanosleep(&ts, nil)
            let now = MediaTime.now()
            if Signals.stopRequested { break }
            if ReplaySignal.count != replayRequests {
                replayRequests = ReplaySignal.count
                ReplaySignal.save(session, quiet: quiet)
            }
            if let f = session.failure { exitCode = ExitCode(rawValue: f.exitCode) ?? .streaming; exitMessage = f.description; break }
            // A source that ended with an error ends the run at once, even while others still
            // deliver (a PipeWire node that went away mid-stream: exit 4 naming it, rather than
            // streaming on without its video or audio). A source that simply ended (a Y4M or PCM
            // input at its end, or whose writer died) ends the run too: the end of input is the
            // end of the stream, never padded with repeated pictures or the other input alone.
            let ended = sources.filter { $0.waitUntilFinished(timeoutNanoseconds: 0) }
            if let e = ended.compactMap({ $0.error }).first {
                exitCode = e.kind == .badInput ? .usage : .streaming
                exitMessage = e.message
                break
            }
            // Inputs of one length end together, within a buffer of each other (a Y4M input ends at
            // its last frame's start, a PCM input at its last buffer's end): the others get a short
            // grace to reach their own end, so neither loses its last moments to the poll's timing.
            if !ended.isEmpty {
                if ended.count == sources.count { break }
                let deadline = endGraceNs ?? now + StreamLoop.endOfInputGraceNs
                endGraceNs = deadline
                if now >= deadline { break }
            }
            if let l = limitNs, now >= l { break }
            if now >= nextReport {
                nextReport += 1_000_000_000
                let snap = session.stats.snapshot()
                reporter.report(snap, state: session.statusText, latency: session.videoLatencyMs,
                                destinations: session.destinationStats, downtimeSeconds: session.downtimeSeconds)
                heartbeat?.beat(snap, state: session.statusText)
                testFault?.fireIfDue(nowNs: now, startNs: startNs, videoFramesSent: snap.videoFramesSent)
            }
        }
        // Whatever ended the loop (a signal, --duration, a failure, the end of input), a reconnect
        // still in progress (a connect, a handshake, its back-off) gives up now; the last drain
        // and the goodbyes are not woken by it (their own deadlines keep the stop within 2 s).
        StopFlag.process.set()
        for source in sources { source.stop() }
        session.finish()
        let finalStats = session.stats.snapshot()
        let finalDestinations = session.destinationStats
        reporter.report(finalStats, state: "finished", latency: session.videoLatencyMs,
                        destinations: finalDestinations, downtimeSeconds: session.downtimeSeconds)
        reporter.endStatusLine()
        sayRepeatedCounts()
        if exitCode == .success, let f = session.failure {
            exitCode = ExitCode(rawValue: f.exitCode) ?? .streaming
            exitMessage = f.description
        }
        if let m = exitMessage { say(exitCode == .success ? m : "error: \(m)") }
        if !quiet {
            let s = session.stats.snapshot()
            say("finished: \(s.videoFramesSent) video frames, \(s.audioFramesSent) audio frames, \(s.bytesSent) bytes sent, "
                + "\(s.totalDrops) dropped, \(s.reconnects) reconnects, "
                + "peak RSS \(fixed(Double(ProcessMemory.peakResidentBytes()) / 1048576, 1)) MB")
            // One line per destination when there are several, or when one was ever down.
            if finalDestinations.count > 1 || finalDestinations.contains(where: { $0.downtimeSeconds > 0 || $0.reconnects > 0 }) {
                for d in finalDestinations {
                    say("  \(d.name): \(d.state), \(d.bytesSent) bytes, \(d.drops) dropped, \(d.reconnects) reconnects, "
                        + "down \(fixed(d.downtimeSeconds, 1)) s")
                }
            }
        }
        return exitCode
    }
}
