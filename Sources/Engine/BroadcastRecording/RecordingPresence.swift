import Glibc
import BroadcastCore
import BroadcastPipeline

/// Notices a recording that vanished while being written: its file unlinked, or its directory
/// removed with it. The descriptor still takes writes, so nothing fails on its own and the run
/// would end "fine" with the recording gone; at most once a second the writer asks the kernel
/// how many names the open file still has (`fstat`'s `st_nlink`), and 0 means none.
struct RecordingPresence {
    private var nextCheckNs: Int64 = 0
    /// How often a file sink looks.
    static let intervalNs: Int64 = 1_000_000_000

    init() {}

    /// True when the file behind `fd` has no name left (checked at most once per interval).
    mutating func vanished(fd: Int32, nowNs: Int64 = MediaTime.now()) -> Bool {
        guard fd >= 0, nowNs >= nextCheckNs else { return false }
        nextCheckNs = nowNs + Self.intervalNs
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return st.st_nlink == 0
    }

    /// The one line for it (the path is the user's own, not a secret).
    static func failure(_ path: String, bytes: Int) -> TransportError {
        .fileError("\(path): the recording was deleted while being written (the file unlinked or its directory "
                   + "removed) after \(bytes) bytes; the recording is lost")
    }
}
