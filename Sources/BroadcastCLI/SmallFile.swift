#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// One bounded read of a small settings file (a key file, the config file): opened without
/// blocking (a FIFO must not hang the start), refused unless it is a regular file, and never more
/// than `maxBytes` read, even when the file grew after `fstat`. Callers word the refusals.
enum SmallFile {
    enum Failure: Error {
        /// `open` failed with this errno.
        case open(Int32)
        /// `fstat` failed with this errno.
        case stat(Int32)
        case notRegular
        case tooLarge
        /// `read` failed with this errno.
        case read(Int32)
    }

    static func read(_ path: String, maxBytes: Int) throws(Failure) -> ArraySlice<UInt8> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw .open(errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .stat(errno) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        guard st.st_size <= maxBytes else { throw .tooLarge }
        // One byte more than allowed, so a file that grew since fstat is still caught.
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if n > 0 { count += n; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            throw .read(errno)
        }
        guard count <= maxBytes else { throw .tooLarge }
        return bytes[0..<count]
    }
}
