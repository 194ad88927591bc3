#if canImport(Glibc)
import Glibc
#endif

/// Checks that an output file (`--stats-json`, `--record`) can be written, before anything
/// connects: a typo in a path is a usage error (exit 2), not a failure after the stream went live.
enum OutputPathCheck {
    /// Throws when `path` is a directory, or cannot be written, or cannot be created in its
    /// directory. Truncates nothing; a file that did not exist is created and removed again.
    static func check(_ path: String, option: String) throws(UsageError) {
        func refuse(_ reason: String) -> UsageError { UsageError("\(option) \(path): \(reason)") }
        guard !path.isEmpty else { throw UsageError("\(option) needs a non-empty path") }
        var st = stat()
        if stat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR { throw refuse("is a directory") }
            if access(path, W_OK) != 0 { throw refuse("not writable: \(String(cString: strerror(errno)))") }
            return
        }
        guard errno == ENOENT else { throw refuse(String(cString: strerror(errno))) }
        let dir = RecordSpaceCheck.directory(of: path)
        guard stat(dir, &st) == 0 else { throw refuse("directory \(dir): \(String(cString: strerror(errno)))") }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw refuse("\(dir) is not a directory") }
        if access(dir, W_OK | X_OK) != 0 {
            throw refuse("cannot create it in \(dir): \(String(cString: strerror(errno)))")
        }
        // access() answers yes to root everywhere except read-only mounts; /proc, /sys and
        // similar still refuse the create. Create it exclusively and remove it again.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw refuse("cannot create it in \(dir): \(String(cString: strerror(errno)))") }
        close(fd)
        unlink(path)
    }
}
