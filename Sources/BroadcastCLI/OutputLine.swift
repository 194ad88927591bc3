#if canImport(Glibc)
import Glibc
#endif

/// Writes one line to a CLI output (`--stats-json`, the heartbeat) without ever waiting for a
/// reader: regular files take it whole; a pipe on standard output is non-blocking, so a line it
/// has no room for is dropped (and counted by the caller) rather than stalling the run or a stop.
enum OutputLine {
    enum Outcome { case written, noRoom, failed(Int32) }

    static func write(_ fd: Int32, _ line: String, at offset: Int? = nil) -> Outcome {
        var text = line
        return text.withUTF8 { write(fd, bytes: UnsafeRawBufferPointer($0), at: offset) }
    }

    /// The same for a line already in memory (the stats line's buffer made once: no allocation).
    static func write(_ fd: Int32, bytes b: UnsafeRawBufferPointer, at offset: Int? = nil) -> Outcome {
        do {
            var done = 0
            while done < b.count {
                let n = offset.map { pwrite(fd, b.baseAddress! + done, b.count - done, off_t($0 + done)) }
                    ?? Glibc.write(fd, b.baseAddress! + done, b.count - done)
                if n > 0 { done += n; continue }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    // Half a line in a pipe would break the JSON-lines framing: finish it with a
                    // bounded wait (poll, 200 ms at most), else report no room.
                    if done == 0 { return .noRoom }
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    if poll(&p, 1, 200) > 0 { continue }
                    return .noRoom
                }
                return .failed(n == 0 ? EIO : errno)
            }
            return .written
        }
    }
}
