#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Once a second: one `StatsReport` JSON object per line into `--stats-json`, and the live status
/// line on a terminal.
///
/// The file is opened by `OutputFile` (a regular file or a new name, never through a link; an
/// existing file of ours is rewritten from the start). `-` or `/dev/stdout` is standard output:
/// a pipe there is written non-blocking, so a reader that stops reading costs dropped lines
/// (said once), never a stalled run or stop. A failed write is said once and ends the file.
final class StatsReporter {
    private var fd: Int32 = -1
    private let path: String?
    private var restoreFlags: Int32?
    private var droppedLines = 0
    private let statusLine: Bool
    private var previous: StatsSnapshot?
    private let startNs: Int64
    private var lastLineLength = 0
    /// The JSON line and the status line, each built in storage made once.
    private let jsonLine = ReportBuffer(capacity: 64 << 10)
    private let status = ReportBuffer(capacity: 4 << 10)

    init(jsonPath: String?, statusLine: Bool) throws {
        self.statusLine = statusLine
        path = jsonPath
        startNs = MediaTime.now()
        guard let path = jsonPath else { return }
        if OutputPathCheck.isStandardOutput(path) {
            fd = 1
            var st = stat()
            let flags = fcntl(1, F_GETFL)
            if fstat(1, &st) == 0, flags >= 0, st.st_mode & S_IFMT == S_IFIFO || st.st_mode & S_IFMT == S_IFSOCK {
                restoreFlags = flags
                _ = fcntl(1, F_SETFL, flags | O_NONBLOCK)
            }
            return
        }
        do {
            fd = try OutputFile.open(path, existing: .replace)
        } catch {
            throw UsageError("--stats-json \(error)")
        }
    }

    deinit {
        if let f = restoreFlags { _ = fcntl(1, F_SETFL, f) }
        if fd > 2 { close(fd) }
    }

    private func writeJSON(_ line: String) {
        var text = line
        text.withUTF8 { writeJSON(bytes: UnsafeRawBufferPointer($0)) }
    }

    private func writeJSON(bytes: UnsafeRawBufferPointer) {
        guard fd >= 0, let path else { return }
        switch OutputLine.write(fd, bytes: bytes) {
        case .written: break
        case .noRoom:
            droppedLines += 1
            if droppedLines == 1 { say("warning: --stats-json \(path): the reader is not keeping up; lines are dropped") }
        case .failed(let code):
            say("warning: --stats-json \(path): write failed: \(SystemError.describe(code)); no more stats are written")
            if fd > 2 { close(fd) }
            fd = -1
        }
    }

    func report(_ s: StatsSnapshot, state: String, latency: (p50: Double, p99: Double)? = nil,
                destinations: [DestinationStats] = [], downtimeSeconds: Double = 0) {
        let r = StatsReport(s, previous: previous, startNs: startNs, state: state, latencyMs: latency,
                            destinations: destinations, downtimeSeconds: downtimeSeconds)
        previous = s
        let t = r.timeSeconds, fps = r.fps, kbps = r.kbps, rss = r.rssBytes
        // Both lines are built in buffers made once: a report allocates nothing (tools/allocshim
        // counts the whole process in test_memory.py). A line past the buffer falls back to Strings.
        if fd >= 0 {
            jsonLine.clear()
            r.write(into: jsonLine)
            jsonLine.append(byte: 10)
            if jsonLine.overflowed {
                writeJSON(r.json + "\n")
            } else {
                writeJSON(bytes: UnsafeRawBufferPointer(start: jsonLine.bytes.baseAddress, count: jsonLine.count))
            }
        }
        if statusLine {
            let b = status
            b.clear()
            let mm = Int(t) / 60, ss = Int(t) % 60
            b.append("\r[")
            if mm < 10 { b.append("0") }
            b.append(mm); b.append(":")
            if ss < 10 { b.append("0") }
            b.append(ss); b.append("] "); b.append(state); b.append(" ")
            b.append(fps, decimals: 1); b.append(" fps "); b.append(Int(kbps)); b.append(" kbps  drops ")
            b.append(s.totalDrops); b.append("  queue "); b.append(s.queueMs); b.append(" ms  rss ")
            b.append(Double(rss) / 1048576, decimals: 1); b.append(" MB")
            // With several destinations, each one's state, rate, queue and drops, in order (#1 is the primary).
            if destinations.count > 1 {
                for (i, d) in destinations.enumerated() {
                    b.append("  #"); b.append(i + 1); b.append(" "); b.append(d.state); b.append(" ")
                    b.append(Int(d.kbps)); b.append("k q"); b.append(d.queueMs); b.append("ms d"); b.append(d.drops)
                }
            }
            let length = b.count
            b.pad(to: lastLineLength)
            lastLineLength = length
            _ = write(2, b.bytes.baseAddress, b.count)
        }
    }

    /// Ends the status line so later messages start on a fresh line.
    func endStatusLine() {
        if statusLine && lastLineLength > 0 { _ = write(2, "\n", 1) }
    }
}
