#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// `--heartbeat PATH`: a file whose modification time the run bumps once a second while the
/// stream makes progress (bytes or frames moved since the last beat) or is reconnecting, so a
/// liveness probe can tell a hung process from a live one without a shell, a port or a growing
/// log: `broadcast --check-heartbeat PATH --max-age S` (see `HeartbeatCheck`). The file never
/// grows; it holds one line with the time of the last beat.
final class Heartbeat {
    private let fd: Int32
    private var lastProgress = -1

    init(path: String) throws(UsageError) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw UsageError("--heartbeat \(path): \(SystemError.describe(errno))") }
    }

    deinit { close(fd) }

    /// Bumps the file when the stream moved since the last call, or while it reconnects.
    func beat(_ s: StatsSnapshot, state: String) {
        let progress = s.bytesSent &+ s.videoFramesIn &+ s.audioFramesSent
        guard progress != lastProgress || state == "reconnecting" else { return }
        lastProgress = progress
        var line = "\(Double(s.monotonicNs) / 1e9)\n"
        line.withUTF8 { b in _ = pwrite(fd, b.baseAddress, b.count, 0) }
        _ = ftruncate(fd, off_t(line.utf8.count))
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
