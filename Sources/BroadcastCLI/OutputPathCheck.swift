#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Checks the CLI's output files (`--record`, `--stats-json`, `--heartbeat`) before anything
/// connects, under `OutputFile`'s rules: a new name in a writable directory, or an existing
/// regular file of this user's with one link, which the run rewrites. A link, a FIFO, a device,
/// a directory is refused with one line and exit 2; so is a typo in a directory.
enum OutputPathCheck {
    /// `--stats-json -` and `--stats-json /dev/stdout` mean this process's standard output.
    static func isStandardOutput(_ path: String) -> Bool { path == "-" || path == "/dev/stdout" }

    /// Throws naming `option` and `path`. Truncates nothing.
    static func check(_ path: String, option: String) throws(UsageError) {
        guard !path.isEmpty else { throw UsageError("\(option) needs a non-empty path") }
        do {
            try OutputFile.check(path, existing: .replace)
        } catch {
            throw UsageError("\(option) \(error)")
        }
    }
}
