import BroadcastKit
import Glibc

/// Checks for `--ca-file PATH`: done at parse time so a typo is a usage error (exit 2), not a
/// TLS refusal after connecting.
enum TLSOptions {
    /// Returns `path` when it is a readable regular file that contains a PEM certificate. Opened
    /// non-blocking and checked on the descriptor, so a FIFO put there cannot hang the start.
    static func validateCAFile(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw UsageError("--ca-file \(path): \(SystemError.describe())") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw UsageError("--ca-file \(path): not a regular file")
        }
        // A CA bundle is small; the first 1 MB is plenty to find a PEM marker.
        let capacity = 1 << 20
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: capacity + 1)
        defer { buffer.deallocate() }
        var count = 0
        while count < capacity {
            let n = read(fd, buffer + count, capacity - count)
            if n > 0 { count += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw UsageError("--ca-file \(path): read failed: \(SystemError.describe())") }
            break
        }
        buffer[count] = 0
        guard strstr(buffer, "-----BEGIN CERTIFICATE-----") != nil else {
            throw UsageError("--ca-file \(path): no PEM certificate (-----BEGIN CERTIFICATE-----) found")
        }
        return path
    }
}
