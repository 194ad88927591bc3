#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Once a second: one `StatsReport` JSON object per line into `--stats-json`, and the live status
/// line on a terminal.
final class StatsReporter {
    private var fd: Int32 = -1
    private let statusLine: Bool
    private var previous: StatsSnapshot?
    private let startNs: Int64
    private var lastLineLength = 0

    init(jsonPath: String?, statusLine: Bool) throws {
        self.statusLine = statusLine
        startNs = MediaTime.now()
        if let path = jsonPath {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw UsageError("--stats-json \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    func report(_ s: StatsSnapshot, state: String, latency: (p50: Double, p99: Double)? = nil,
                destinations: [DestinationStats] = [], downtimeSeconds: Double = 0) {
        let r = StatsReport(s, previous: previous, startNs: startNs, state: state, latencyMs: latency,
                            destinations: destinations, downtimeSeconds: downtimeSeconds)
        previous = s
        let t = r.timeSeconds, fps = r.fps, kbps = r.kbps, rss = r.rssBytes
        if fd >= 0 {
            var line = r.json + "\n"
            line.withUTF8 { b in _ = write(fd, b.baseAddress, b.count) }
        }
        if statusLine {
            let mm = Int(t) / 60, ss = Int(t) % 60
            var line = "\r[\(mm < 10 ? "0" : "")\(mm):\(ss < 10 ? "0" : "")\(ss)] \(state) \(fixed(fps, 1)) fps "
                + "\(Int(kbps)) kbps  drops \(s.totalDrops)  queue \(s.queueMs) ms  rss \(fixed(Double(rss) / 1048576, 1)) MB"
            // With several destinations, each one's state, rate, queue and drops, in order (#1 is the primary).
            if destinations.count > 1 {
                for (i, d) in destinations.enumerated() {
                    line += "  #\(i + 1) \(d.state) \(Int(d.kbps))k q\(d.queueMs)ms d\(d.drops)"
                }
            }
            let pad = max(0, lastLineLength - line.count)
            lastLineLength = line.count
            line += String(repeating: " ", count: pad)
            line.withUTF8 { b in _ = write(2, b.baseAddress, b.count) }
        }
    }

    /// Ends the status line so later messages start on a fresh line.
    func endStatusLine() {
        if statusLine && lastLineLength > 0 { _ = write(2, "\n", 1) }
    }
}
