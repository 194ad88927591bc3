#if canImport(Glibc)
import Glibc
#endif

/// Why an output file was refused or could not be written; one line naming the path.
package struct OutputFileError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The path as given.
    var path: String
    /// Why, without the path.
    var reason: String

    package init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    package var description: String { "\(path): \(reason)" }
}

/// The one way the project opens a file it writes: recordings, replay clips, `--stats-json`,
/// `--heartbeat`. The rules, whoever runs us (root included) and whatever another local user
/// planted in a shared directory:
///
/// - never through a symbolic link (`O_NOFOLLOW`, and `lstat` before anything is opened);
/// - never onto anything but a regular file: a FIFO, a device, a socket or a directory at the
///   path is refused before it is opened, so no `open` can block on a FIFO or touch a device;
///   the descriptor is checked again (`fstat`, same inode as the `lstat`), so a swap in between
///   is refused too, and opens use `O_NONBLOCK`, so even then nothing waits for a reader;
/// - an existing regular file is reused only when the caller allows it, and only when this user
///   owns it and it has no other hard link (a link to someone else's file is not ours to truncate);
/// - a file that appears complete under its final name (a replay clip) is written to a
///   temporary created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, random suffix), then renamed
///   with `RENAME_NOREPLACE`: an existing name is an error naming it, never replaced.
package enum OutputFile {
    /// What an existing file at the path means.
    package enum Existing: Sendable {
        /// Truncate and rewrite it (a regular file of ours with one link only).
        case replace
        /// Refuse it: the path must be new.
        case refuse
    }

    /// Checks `path` without leaving a trace: a new name in a directory where this process can
    /// create it, or (with `.replace`) an existing regular file it may rewrite. Nothing is
    /// truncated; a probe file is created exclusively and removed again.
    package static func check(_ path: String, existing: Existing) throws(OutputFileError) {
        guard !path.isEmpty else { throw OutputFileError(path, "the path is empty") }
        if let st = try lstatIfPresent(path) {
            try refuseUnsafe(path, st, existing: existing)
            let fd = Glibc.open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw OutputFileError(path, "cannot be written: \(SystemError.describe())") }
            Glibc.close(fd)
            return
        }
        let dir = directory(of: path)
        var d = stat()
        guard stat(dir, &d) == 0 else { throw OutputFileError(path, "directory \(dir): \(SystemError.describe())") }
        guard d.st_mode & S_IFMT == S_IFDIR else { throw OutputFileError(path, "\(dir) is not a directory") }
        // access() says yes to root everywhere but read-only mounts, and /proc or /sys still
        // refuse the create: create it exclusively (never through a link) and remove it again.
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OutputFileError(path, "cannot create it in \(dir): \(SystemError.describe())") }
        Glibc.close(fd)
        unlink(path)
    }

    /// Opens `path` for writing under the rules above and returns the descriptor (close-on-exec,
    /// non-blocking, positioned at 0). A replaced file is truncated only after it was checked.
    package static func open(_ path: String, existing: Existing, mode: mode_t = 0o644) throws(OutputFileError) -> Int32 {
        guard !path.isEmpty else { throw OutputFileError(path, "the path is empty") }
        // Two rounds: a name that appears or goes between the lstat and the open is looked at again.
        for _ in 0..<2 {
            guard let before = try lstatIfPresent(path) else {
                let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode)
                if fd >= 0 { return fd }
                if errno == EEXIST { continue }
                throw OutputFileError(path, "cannot create it: \(SystemError.describe())")
            }
            try refuseUnsafe(path, before, existing: existing)
            let fd = Glibc.open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if fd < 0 {
                if errno == ENOENT { continue }
                throw OutputFileError(path, errno == ELOOP ? "is a symbolic link (never written through)"
                                      : "cannot be written: \(SystemError.describe())")
            }
            var after = stat()
            guard fstat(fd, &after) == 0, after.st_dev == before.st_dev, after.st_ino == before.st_ino else {
                Glibc.close(fd)
                throw OutputFileError(path, "changed while it was being opened; refused")
            }
            do throws(OutputFileError) {
                try refuseUnsafe(path, after, existing: existing)
            } catch {
                Glibc.close(fd)
                throw error
            }
            guard ftruncate(fd, 0) == 0 else {
                let reason = SystemError.describe()
                Glibc.close(fd)
                throw OutputFileError(path, "cannot be truncated: \(reason)")
            }
            return fd
        }
        throw OutputFileError(path, "keeps changing while it is being opened; refused")
    }

    /// Creates a temporary file next to `path` (`PATH.<random>.part`) exclusively, never through
    /// a link, and returns its descriptor and name.
    package static func createTemporary(beside path: String, mode: mode_t = 0o644) throws(OutputFileError)
        -> (fd: Int32, path: String) {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<8 {
            let bits: UInt64 = random.next()
            let suffix = String(bits & 0xFFFF_FFFF_FFFF, radix: 16)
            let temporary = "\(path).\(suffix).part"
            let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode)
            if fd >= 0 { return (fd, temporary) }
            if errno != EEXIST { throw OutputFileError(path, "cannot create \(temporary): \(SystemError.describe())") }
        }
        throw OutputFileError(path, "cannot create a temporary file beside it: every name tried exists")
    }

    /// Gives the complete `temporary` its final name `path`, never replacing what is there
    /// (`renameat2(RENAME_NOREPLACE)`, or `link` + `unlink` on a filesystem without it). On
    /// failure the temporary stays; the caller removes it.
    package static func publish(_ temporary: String, as path: String) throws(OutputFileError) {
        if let rename = renameNoReplace {
            if rename(AT_FDCWD, temporary, AT_FDCWD, path, 1 /* RENAME_NOREPLACE */) == 0 { return }
            if errno == EEXIST { throw exists(path) }
            guard errno == EINVAL || errno == ENOSYS else {
                throw OutputFileError(path, "renaming \(temporary) failed: \(SystemError.describe())")
            }
        }
        // link() fails on an existing name as atomically as the rename would.
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { throw exists(path) }
            throw OutputFileError(path, "renaming \(temporary) failed: \(SystemError.describe())")
        }
        unlink(temporary)
    }

    /// True when something (even a dangling link) is at `path`.
    package static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The directory holding `path` ("." for a bare file name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    // MARK: - Internals

    private static func exists(_ path: String) -> OutputFileError {
        OutputFileError(path, "already exists (never replaced): remove it or choose another name")
    }

    /// `lstat`, nil when nothing is there; other errors (a missing directory, EACCES) are refusals.
    private static func lstatIfPresent(_ path: String) throws(OutputFileError) -> stat? {
        var st = stat()
        if lstat(path, &st) == 0 { return st }
        if errno == ENOENT {
            // A missing directory is the clearer message.
            let dir = directory(of: path)
            var d = stat()
            if stat(dir, &d) != 0 { throw OutputFileError(path, "directory \(dir): \(SystemError.describe())") }
            return nil
        }
        throw OutputFileError(path, SystemError.describe())
    }

    /// Refuses what the rules forbid at an existing path.
    private static func refuseUnsafe(_ path: String, _ st: stat, existing: Existing) throws(OutputFileError) {
        let type = st.st_mode & S_IFMT
        if type == S_IFLNK { throw OutputFileError(path, "is a symbolic link (never written through)") }
        if type != S_IFREG {
            throw OutputFileError(path, "is \(kind(type)), not a regular file (only a regular file or a new name is written)")
        }
        if existing == .refuse { throw exists(path) }
        if st.st_uid != geteuid() {
            throw OutputFileError(path, "is owned by uid \(st.st_uid), not by this user (uid \(geteuid())); "
                                  + "remove it or choose another name")
        }
        if st.st_nlink > 1 {
            throw OutputFileError(path, "has \(st.st_nlink) hard links; it is not rewritten (remove it or choose another name)")
        }
    }

    private static func kind(_ type: mode_t) -> String {
        switch type {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }

    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32

    /// glibc's renameat2 (2.28+), looked up once: the Glibc module does not export it.
    private static let renameNoReplace: RenameAt2? = {
        guard let symbol = dlsym(nil, "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: RenameAt2.self)
    }()
}
