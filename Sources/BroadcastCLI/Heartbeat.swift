#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// `--heartbeat PATH`: a file whose modification time the run bumps once a second while the
/// stream makes progress (bytes or frames moved since the last beat) or is reconnecting, so a
/// liveness probe can tell a hung process from a live one without a shell, a port or a growing
/// log: `broadcast --check-heartbeat PATH --max-age S` (see `HeartbeatCheck`). The file never
/// grows; it holds one line with the time of the last beat.
///
/// The path is checked before the stream connects; the file is opened once, by `OutputFile` (a regular file or a new
/// name, never through a link, never a FIFO), and rewritten in place through that descriptor: no
/// path is looked up again while the run lasts, so nothing swapped in later is written. Each beat
/// is one fixed-width line written at offset 0 in one call, so a reader sees the old line or the
/// new one, never a mix of lengths.
final class Heartbeat {
    private var fd: Int32
    private let path: String
    private var lastProgress = -1

    init(path: String) throws(UsageError) {
        self.path = path
        do {
            fd = try OutputFile.open(path, existing: .replace)
        } catch {
            throw UsageError("--heartbeat \(error)")
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Bumps the file when the stream moved since the last call, or while it reconnects.
    func beat(_ s: StatsSnapshot, state: String) {
        let progress = s.bytesSent &+ s.videoFramesIn &+ s.audioFramesSent
        guard fd >= 0, progress != lastProgress || state == "reconnecting" else { return }
        lastProgress = progress
        var line = "\(Double(s.monotonicNs) / 1e9)"
        line += String(repeating: " ", count: max(0, 31 - line.utf8.count)) + "\n"
        if case .failed(let code) = OutputLine.write(fd, line, at: 0) {
            say("warning: --heartbeat \(path): write failed: \(SystemError.describe(code)); the heartbeat stops")
            close(fd)
            fd = -1
            return
        }
        _ = futimens(fd, nil)   // the write alone may not move mtime on every filesystem
    }
}

/// `broadcast --check-heartbeat PATH [--max-age S]`: exit 0 if PATH was bumped within S seconds
/// (default 10), else one line and exit 1 (`ExitCode.unhealthy`). It reads one `stat`, so as a Kubernetes exec probe it
/// costs a few MB for a few milliseconds inside the pod's limit.
enum HeartbeatCheck {
    static func run(path: String, maxAge: Double) -> ExitCode {
        var st = stat()
        guard stat(path, &st) == 0 else {
            say("heartbeat \(path): \(SystemError.describe(errno))")
            return .unhealthy
        }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let age = Double(now.tv_sec - st.st_mtim.tv_sec) + Double(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9
        guard age <= maxAge else {
            say("heartbeat \(path) is \(fixed(age, 1)) s old (max \(fixed(maxAge, 1)) s): the stream is not making progress")
            return .unhealthy
        }
        return .success
    }
}
